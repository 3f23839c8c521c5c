"""Which passage each retrieved context is, when its id may only number a sample's chunks.

The one home of the rule that answer files and samples JSONL both follow. A context id
is taken as a passage id only where the format says ids name passages (scope
``"global"``), and only while the id keeps one text: an id that comes with two
different texts (in two samples, or unlike the text its passage already has, a span of
it aside) is a numbering, not a name, and the contexts carrying it whose text is not
its passage's are matched by their text. A sample in which that happens numbers its
chunks, so all of its contexts are matched by their text (the id preferred where its
passage holds that text): a sample's contexts are never half by id and half by text.
Where ids are local to a sample (scope ``"local"``), every context is matched so.
Whenever an id arrives with two texts, a warning gives the counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal, Protocol

from raglabel.formats.text import content_id, normalize_passage

#: What a context id names. "global": a passage, the same one in every sample (raglabel's
#: own ids; ragas' retrieved_context_ids; a samples file's retrieved ids). "local": a
#: chunk within its own sample only (RAGChecker's doc_id). None: the format has none.
IdScope = Literal["global", "local"] | None

#: A context as read: its id and its text, either possibly missing (never both).
Carried = tuple[str | None, str | None]

How = Literal["id", "exact", "span", "new"]


class Passages(Protocol):
    """The passages contexts are matched to: a project's (``PassageIndex``), or only
    those of the file being read (:class:`FileTexts`)."""

    counts: Counter[How]

    def match(self, text: str, prefer: Iterable[str] = ()) -> tuple[str, How]: ...

    def remember(self, ext_id: str, text: str) -> None: ...

    def known_text(self, ext_id: str) -> str | None: ...

    def note_id(self, count: int = 1) -> None: ...


class FileTexts:
    """The passages a file names by itself, with no project: a text equal (after
    normalisation) to one stored earlier is that passage, any other text is new.

    ``PassageIndex`` extends this with a project's passages, so a file evaluated on its
    own and the same file imported into an empty project key every context alike."""

    def __init__(self) -> None:
        self._added: dict[str, str] = {}  # normalised text -> passage id, this file's
        self._remembered: dict[str, str] = {}  # passage id -> its first normalised text
        # Passages remembered but not normalised yet: normalising is most of the cost of
        # a large file, and a file whose every passage has an id never needs it.
        self._pending: list[tuple[str, str]] = []
        self.counts: Counter[How] = Counter()

    def match(self, text: str, prefer: Iterable[str] = ()) -> tuple[str, How]:
        """The passage id this text is, and how it was found; new text gets a new id.
        (``prefer`` orders candidates among a project's passages; a file has none.)"""
        self._flush()
        norm = normalize_passage(text)
        hit = self._added.get(norm)
        if hit is not None:
            return self._count(hit, "exact")
        new_id = content_id(text)
        self._added[norm] = new_id
        return self._count(new_id, "new")

    def remember(self, ext_id: str, text: str) -> None:
        """A passage stored under its own id: later text equal to it is that passage."""
        self._pending.append((ext_id, text))

    def known_text(self, ext_id: str) -> str | None:
        """The normalised text first stored under ``ext_id``; None when there is none."""
        self._flush()
        return self._remembered.get(ext_id)

    def _flush(self) -> None:
        """Store the remembered passages, in the order they came."""
        pending, self._pending = self._pending, []
        for ext_id, text in pending:
            self._store(ext_id, normalize_passage(text))

    def _store(self, ext_id: str, norm: str) -> None:
        if norm:
            self._remembered.setdefault(ext_id, norm)
            self._added.setdefault(norm, ext_id)

    def note_id(self, count: int = 1) -> None:
        """Count passages named by id, so the counts cover every context."""
        if count:
            self.counts["id"] += count

    def _count(self, ext_id: str, how: How) -> tuple[str, How]:
        self.counts[how] += 1
        return ext_id, how


class ContextIds:
    """The passage of every context of one file's samples (see the module's rule)."""

    def __init__(
        self,
        samples: Iterable[Sequence[Carried]],
        scope: IdScope,
        passages: Passages,
        noun: str = "context",  # what the warning calls a context
    ) -> None:
        self._noun = noun
        self._passages = passages
        self._local = scope == "local"
        texts: dict[str, set[str]] = {}  # id -> the texts it came with, as written
        carried: Counter[str] = Counter()
        for contexts in samples:
            for ident, text in contexts:
                if ident is not None and text:
                    texts.setdefault(ident, set()).add(text)
                    carried[ident] += 1
        self.clashing: dict[str, int] = {}  # id -> how many contexts carry it
        for ident, written in texts.items():
            # Chunks of one passage may differ: each a span of the text it has is no clash.
            known = None if self._local else passages.known_text(ident)
            if not known and len(written) == 1:
                continue  # one text and nothing to compare it with: spare normalising it
            norms = {normalize_passage(text) for text in written}
            if any(norm not in known for norm in norms) if known else len(norms) > 1:
                self.clashing[ident] = carried[ident]
        # (id, text) pairs already given to ``passages.remember``: a file repeats them.
        self._remembered: set[tuple[str, str]] = set()
        self.rekeyed = 0  # contexts matched by text because their own id clashed
        self.siblings = 0  # contexts matched by text because their sample numbers its chunks

    def sample(self, contexts: Sequence[Carried], prefer: Sequence[str] = ()) -> list[str]:
        """The passage id of each context of one sample, in order. ``prefer`` lists the
        passages to try first when matching text (the sample's gold passages)."""
        passages = self._passages
        numbered = self._local or (
            bool(self.clashing) and any(self._renumbered(ident, text) for ident, text in contexts)
        )
        keys: list[str] = []
        named = 0
        for ident, text in contexts:
            if ident is None:
                assert text is not None
                keys.append(passages.match(text, prefer=prefer)[0])
            elif numbered and text:
                if not self._local:
                    if self._renumbered(ident, text):
                        self.rekeyed += 1
                    else:
                        self.siblings += 1
                keys.append(passages.match(text, prefer=[ident, *prefer])[0])
            else:
                named += 1
                if text and (ident, text) not in self._remembered:
                    self._remembered.add((ident, text))
                    passages.remember(ident, text)
                keys.append(ident)
        passages.note_id(named)
        return keys

    def _renumbered(self, ident: str | None, text: str | None) -> bool:
        """Whether this context's id clashes and its text is not the id's passage's."""
        if ident is None or ident not in self.clashing or not text:
            return False
        known = self._passages.known_text(ident)
        norm = normalize_passage(text)
        return not (known and norm and norm in known)

    def warnings(self, what: str, fmt: str, followed: str = "") -> list[str]:
        """One line when some id came with two texts: how many ids, which, and how many
        contexts were matched by text. ``what`` names the file or system, ``fmt`` its
        format; ``followed`` says what else went with the contexts (a sample's gold)."""
        if not self.clashing:
            return []
        shown = ", ".join(repr(ident) for ident in list(self.clashing)[:3])
        more = ", ..." if len(self.clashing) > 3 else ""
        count = len(self.clashing)
        contexts = sum(self.clashing.values())
        noun = self._noun
        head = (
            f"{what}: {count} {noun} id{'s' if count > 1 else ''}"
            f" ({shown}{more}) came with different texts"
        )
        if self._local:
            return [
                f"{head} in different samples; {fmt}'s ids number the contexts of one"
                f" sample only, so all {contexts} {noun}s carrying them were matched by"
                f" their text, not by id{followed}"
            ]
        line = (
            f"{head} (in different samples, or unlike the text their passage has);"
            f" {self.rekeyed} of their {contexts} {noun}s, whose text is not the named"
            " passage's, were matched by their text, not by id"
        )
        if self.siblings:
            other = noun if self.siblings == 1 else f"{noun}s"
            line += (
                f", and so were the {self.siblings} other {other} of the same samples"
                " (a sample whose ids number its chunks is matched by text throughout)"
            )
        return [line + followed]
