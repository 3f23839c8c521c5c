"""Why judge answers failed, counted by kind, and when a run should give up early.

A failure is stored as its reason text (``judgment.error``, ``answer_judgment.error``);
its kind is read back from that text by :func:`failure_kind`, the one place that knows
the wording of every reason the client and the runner write (and of the reasons older
raglabel versions wrote, so files made by them count the same way). The kinds are what
a person debugging a run needs first: the endpoint's HTTP status, a reply that is not
JSON, JSON of the wrong shape, a grade out of range, a final-score reply without its
score line, a timeout, a connection that failed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from raglabel.judge.prompt_header import FINAL_SCORE, JSON

# The kinds of a reply that arrived but could not be used (the model's doing).
EMPTY: Final = "empty reply"
NOT_JSON: Final = "not JSON"
WRONG_SHAPE: Final = "wrong shape"
OUT_OF_RANGE: Final = "out of range"
# A final-score prompt's reply (see prompt_header.py) without its "##final score: N" line.
NO_FINAL_SCORE: Final = "no final score"
REPLY_KINDS: Final = (EMPTY, NOT_JSON, WRONG_SHAPE, OUT_OF_RANGE, NO_FINAL_SCORE)
# The kinds of a request that brought no reply to read (the endpoint's or the network's).
TIMEOUT: Final = "timeout"
CANNOT_CONNECT: Final = "cannot connect"
DROPPED: Final = "connection dropped"
BODY_NOT_JSON: Final = "response not JSON"
NO_MESSAGE: Final = "no message in the response"
TOO_LARGE: Final = "response too large"
NOT_SENT: Final = "request not sent"
UNEXPECTED: Final = "unexpected error"

#: How the runner words a reply that was still unusable after the repair request.
AFTER_REPAIR: Final = "after one repair"
#: What a run with this many answers back, all failed the same way and none graded,
#: stops on (see ``early_stop``): enough to rule out one odd pair, few enough that a
#: misconfigured endpoint or prompt costs five calls, not the whole run.
EARLY_STOP_AFTER: Final = 5
#: Characters of a reply (or of the server's own words) shown beside each kind.
EXCERPT_CHARS: Final = 100
REPAIR_SEPARATOR: Final = "\n\n--- repair ---\n\n"

_HTTP = re.compile(r"HTTP (\d{3})\b")
# The client's own wording (client.py), first words first.
_CLIENT_PREFIXES: Final = (
    ("timed out", TIMEOUT),
    ("cannot connect", CANNOT_CONNECT),
    ("connection dropped", DROPPED),
    ("the server sent a body that is not JSON", BODY_NOT_JSON),
    ("the server's JSON has no choices", NO_MESSAGE),
    ("the reply is over", TOO_LARGE),
    ("the request could not be sent", NOT_SENT),
    ("unexpected error", UNEXPECTED),
)
# Older raglabel wrote every unusable reply as "unusable reply after one repair: <problem>".
_LEGACY_REPAIR = "unusable reply after one repair: "


def reply_failure(kind: str, problem: str) -> str:
    """The stored reason of a slot whose reply was still unusable after the repair."""
    return f"{kind} {AFTER_REPAIR}: {problem}"


def failure_kind(error: str) -> str:
    """The kind of a stored failure reason: one of the kinds above, ``HTTP <status>``,
    or (for a reason no raglabel wrote) its first words."""
    found = _HTTP.match(error)
    if found is not None:
        return f"HTTP {found.group(1)}"
    for kind in REPLY_KINDS:
        if error.startswith(f"{kind} {AFTER_REPAIR}"):
            return kind
    if error.startswith(_LEGACY_REPAIR):
        return _legacy_reply_kind(error[len(_LEGACY_REPAIR) :])
    for prefix, kind in _CLIENT_PREFIXES:
        if error.startswith(prefix):
            return kind
    return error.split(":", 1)[0].split(" (", 1)[0][:60]


def _legacy_reply_kind(problem: str) -> str:
    if problem.startswith("the reply was empty"):
        return EMPTY
    if problem.startswith("it is not valid JSON"):
        return NOT_JSON
    if "is outside 1..5" in problem:
        return OUT_OF_RANGE
    return WRONG_SHAPE


def excerpt(error: str, raw: str | None) -> str:
    """A short sample of what went wrong: for an unusable reply, the last reply read
    (the one that failed); else the reason itself, which holds the server's own words."""
    text = error
    if raw is not None and failure_kind(error) in REPLY_KINDS:
        text = raw.rsplit(REPAIR_SEPARATOR, 1)[-1]
        if not text.strip():
            return "(an empty reply)"
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3] + "..."


@dataclass
class Failures:
    """A run's failures so far: how many of each kind, and the first excerpt of each."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, error: str, raw: str | None) -> str:
        kind = failure_kind(error)
        self.counts[kind] += 1
        self.examples.setdefault(kind, excerpt(error, raw))
        return kind

    def __bool__(self) -> bool:
        return bool(self.counts)

    def brief(self) -> str:
        """``27 HTTP 501, 3 not JSON``: for a progress or status line."""
        return ", ".join(f"{count} {kind}" for kind, count in self.counts.most_common())

    def lines(self) -> list[str]:
        """One line per kind, most frequent first, each with its excerpt."""
        shown = []
        for kind, count in self.counts.most_common():
            # A reply is the model's own words; any other example is the reason written.
            what = "reply" if kind in REPLY_KINDS else "reason"
            shown.append(f"  {count} {kind}, e.g. {what}: {self.examples[kind]}")
        return shown


def early_stop(
    failures: Failures,
    ok: int,
    done: int,
    planned: int,
    *,
    reply: str = JSON,
    kept: bool = True,
) -> str | None:
    """Why a run should stop now, or None: the first ``EARLY_STOP_AFTER`` answers back
    all failed, the same way, none was graded, and more remain to ask. A run that
    failed like that would most likely fail every other slot the same way, paid for.

    The advice fits the run: ``reply`` is the reply shape its prompt asks for (JSON, or
    a final-score line, for which ``--json-mode`` is refused), and ``kept`` says whether
    its failed replies are stored, for ``raglabel export`` to show (a probe keeps none)."""
    if ok or done != EARLY_STOP_AFTER or done >= planned or len(failures.counts) != 1:
        return None
    ((kind, _),) = failures.counts.items()
    return (
        f"the first {done} answers all failed the same way ({kind}) and none was graded,"
        f" so the run stopped rather than ask for the rest (e.g. {failures.examples[kind]})."
        f" {_hint(kind, reply, kept)}"
    )


#: Where a run that stores its failures shows the replies that failed.
_SHOWN_BY_EXPORT: Final = (
    "; `raglabel export DB --jsonl F --suggestions --with-failures` shows its replies"
)


#: What each unusable reply to a final-score prompt means (NOT_JSON cannot happen there).
_FINAL_SCORE_WRONGS: Final = {
    EMPTY: "The model's replies are empty",
    WRONG_SHAPE: "The model's score line does not hold a whole number",
    OUT_OF_RANGE: "The model's final score is not a label of the prompt file's scale",
}


def _hint(kind: str, reply: str = JSON, kept: bool = True) -> str:
    shown = _SHOWN_BY_EXPORT if kept else ""
    if kind == NO_FINAL_SCORE:
        return (
            "The model does not end its reply with the line the prompt file asks for"
            " (##final score: N): reword the prompt's request for it, or try another"
            f" --model{shown}"
        )
    if kind in _FINAL_SCORE_WRONGS and reply == FINAL_SCORE:
        # Not --json-mode: it asks for a JSON object, which a final-score prompt refuses.
        return (
            f"{_FINAL_SCORE_WRONGS[kind]}: reword the prompt's request for the line"
            f" (##final score: N), or try another --model{shown}"
        )
    if kind in REPLY_KINDS:
        return (
            "The model does not answer in the shape asked: try --json-mode, another --model"
            f" or your own --prompt{shown}"
        )
    if kind.startswith("HTTP 4") or kind == "HTTP 501":  # 501: "not implemented" here
        supported = "--max-tokens" if reply == FINAL_SCORE else "--json-mode, --max-tokens"
        return (
            "The endpoint refuses these requests: check --base-url, --model and the options"
            f" it supports ({supported})"
        )
    if kind.startswith("HTTP "):
        return "The endpoint fails on these requests: check --base-url and --model, or try later"
    if kind == TIMEOUT:
        return "Raise --timeout or lower --concurrency"
    if kind in (CANNOT_CONNECT, DROPPED):
        return "Check that the server behind --base-url is up"
    if kind in (BODY_NOT_JSON, NO_MESSAGE):
        return "--base-url may not name a chat-completions endpoint"
    return "Fix that, then run the same command again"
