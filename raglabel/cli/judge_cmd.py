"""``raglabel judge``: LLM suggestions for candidate pairs over a chat-completions API."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.judge.prompt import Template
    from raglabel.judge.work import Tally
    from raglabel.storage.judgments import Plan

EXIT_INTERRUPTED = 130
#: Tokens a reply of one short sentence takes, for --dry-run's estimate.
REPLY_TOKENS = 40
CHARS_PER_TOKEN = 4


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "judge",
        help="pre-fill suggestions with an LLM judge (never counted as human grades)",
        description=(
            "Ask a model behind an OpenAI-compatible chat-completions endpoint to grade "
            "candidate passages 1-5. Answers are stored as suggestions beside human grades, "
            "never in their place. A second run sends only what is missing or failed."
        ),
    )
    parser.add_argument("db", metavar="DB", help="the project file")
    parser.add_argument(
        "--base-url", required=True, metavar="URL", help="e.g. http://localhost:11434/v1"
    )
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="NAME",
        help="the model to ask; repeat for an ensemble",
    )
    parser.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (default OPENAI_API_KEY); the key is "
        "never stored or printed",
    )
    pick = parser.add_argument_group("which pairs (default: every ungraded candidate)")
    pick.add_argument(
        "--query", action="append", default=[], metavar="QID", help="only this query; repeatable"
    )
    pick.add_argument("--depth", type=int, metavar="K", help="only candidates ranked <= K by a run")
    pick.add_argument(
        "--queue", action="store_true", help="in the labeling queue's order (with --limit)"
    )
    pick.add_argument("--limit", type=int, metavar="N", help="at most N pairs")
    pick.add_argument(
        "--include-graded",
        action="store_true",
        help="also pairs people graded, to measure the judge against them (raglabel agree)",
    )
    ask = parser.add_argument_group("how to ask")
    ask.add_argument(
        "--prompt", metavar="FILE", help="own prompt: {query} {passage} {fence} {title}"
    )
    ask.add_argument("--repeat", type=int, default=1, metavar="N", help="answers per pair (1)")
    ask.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (0)")
    ask.add_argument("--max-tokens", type=int, default=256, metavar="N", help="reply limit (256)")
    ask.add_argument(
        "--json-mode",
        action="store_true",
        help='send response_format {"type": "json_object"} (when the server supports it)',
    )
    load = parser.add_argument_group("load and faults")
    load.add_argument("--concurrency", type=int, default=8, metavar="N", help="requests at once")
    load.add_argument("--rpm", type=float, metavar="N", help="at most N requests per minute")
    load.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per request (60)")
    load.add_argument(
        "--max-attempts", type=int, default=6, metavar="N", help="tries per answer (6)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the calls and tokens it would take; send none"
    )
    parser.set_defaults(handler=run)


def _check(args: argparse.Namespace) -> None:
    for option, value, low in (
        ("--repeat", args.repeat, 1),
        ("--concurrency", args.concurrency, 1),
        ("--max-tokens", args.max_tokens, 1),
        ("--max-attempts", args.max_attempts, 1),
        ("--depth", args.depth, 1),
        ("--limit", args.limit, 1),
    ):
        if value is not None and value < low:
            raise UsageError(f"{option} must be at least {low}, got {value}")
    for option, number in (("--timeout", args.timeout), ("--rpm", args.rpm)):
        if number is not None and not number > 0:
            raise UsageError(f"{option} must be above 0, got {number:g}")
    if not 0 <= args.temperature <= 2:
        raise UsageError(f"--temperature must be within 0..2, got {args.temperature:g}")
    if len(set(args.model)) != len(args.model):
        raise UsageError("--model: a model is named twice")


def params_of(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"temperature": args.temperature, "max_tokens": args.max_tokens}
    if args.json_mode:
        params["response_format"] = {"type": "json_object"}
    return params


def run(args: argparse.Namespace) -> int:
    from raglabel.judge.backoff import RetryPolicy
    from raglabel.judge.client import endpoint_url, public_endpoint
    from raglabel.judge.prompt import Template
    from raglabel.judge.work import RunLimits
    from raglabel.session.judging import JudgeSetup, execute
    from raglabel.storage.judgments import Selection, Setting, plan, select_pairs
    from raglabel.storage.project import Project

    _check(args)
    template = Template.from_file(Path(args.prompt)) if args.prompt else Template.builtin()
    setting = Setting(public_endpoint(endpoint_url(args.base_url)), template, params_of(args))
    setup = JudgeSetup(setting, tuple(args.model), args.repeat, args.api_key_env, args.base_url)
    selection = Selection(
        tuple(args.query), args.depth, args.queue, args.limit, args.include_graded
    )
    with Project.open(args.db) as project:
        pairs = select_pairs(project.conn, selection)
        work = plan(project.conn, pairs, setting, args.model, args.repeat)
        if args.dry_run:
            print(describe_plan(work, template, args.model, args.repeat))
            return 0
        if not work.slots:
            print(f"nothing to ask: {describe_plan(work, template, args.model, args.repeat)}")
            return 0
        if setup.api_key() is None:
            print(
                f"raglabel judge: note: ${args.api_key_env} is not set; sending requests "
                "without an API key (fine for local servers)",
                file=sys.stderr,
            )
        bar = ProgressLine()
        limits = RunLimits(
            args.concurrency, args.rpm, RetryPolicy(attempts=args.max_attempts), args.timeout
        )
        try:
            finished = execute(project, work, setup, limits, on_progress=bar.update)
        finally:
            bar.close()
    print(summary(finished.tally, finished.status))
    if finished.status == "interrupted":
        return EXIT_INTERRUPTED
    return 1 if finished.tally.stopped or finished.tally.failed else 0


def describe_plan(work: Plan, template: Template, models: list[str], repeats: int) -> str:
    sizes = [
        len(template.render(p.query, p.passage, p.title)) for p in (s.pair for s in work.slots)
    ]
    prompt_tokens = sum(sizes) // CHARS_PER_TOKEN
    total = work.pairs * len(models) * repeats
    return (
        f"{len(work.slots)} requests to send for {work.pairs} pairs x {len(models)} model(s)"
        f" x {repeats} repeat(s) = {total} answers ({work.cached} already answered);"
        f" about {prompt_tokens:,} prompt tokens and"
        f" {len(work.slots) * REPLY_TOKENS:,} reply tokens, before any retry or repair"
    )


def summary(tally: Tally, status: str) -> str:
    head = {
        "done": "judge run finished",
        "stopped": "judge run stopped",
        "interrupted": "judge run interrupted; what finished is kept",
    }[status]
    lines = [
        f"{head}: {tally.ok} answers graded, {tally.failed} failed, {tally.cached} from cache,"
        f" {tally.retries} retries, {tally.repairs} repairs asked"
    ]
    if tally.stopped:
        lines.append(f"stopped because: {tally.stopped}")
    if tally.failed or status != "done":
        lines.append("run the same command again to ask only what is missing or failed")
    return "\n".join(lines)


class ProgressLine:
    """A one-line bar on a terminal; on a pipe or CI log, a plain line every 10 s."""

    PLAIN_EVERY_S = 10.0
    DRAW_EVERY_S = 0.1

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._last = 0.0
        self._drawn = False
        self._ended = False

    def update(self, tally: Tally) -> None:
        moment = time.monotonic()
        final = tally.done == tally.planned
        if self._ended or (
            not final
            and moment - self._last < (self.DRAW_EVERY_S if self.tty else self.PLAIN_EVERY_S)
        ):
            return
        self._ended = final
        self._last = moment
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + tally.bar() + " " + tally.describe())
            self._drawn = True
        elif tally.done:
            sys.stderr.write(f"raglabel judge: {tally.describe()}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self._drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
