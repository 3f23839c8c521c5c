"""Matching retrieved text to known passages: normalisation, the index, and an import.

A RAG system's log often carries the chunk text it retrieved and no stable passage id.
The import must map each chunk to the corpus passage it is (equal text, or a span cut
out of it), or else give it an id derived from its text that stays the same for the
same text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raglabel.formats.text import content_id, normalize_passage
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.matching import MIN_SPAN_CHARS, PassageIndex
from raglabel.storage.project import Project
from raglabel.storage.runs import ranked_ids

RESET = (
    "To reset your password, open Settings, choose Security and click Reset password. "
    "A link is emailed to you and stays valid for one hour."
)
BILLING = (
    "Billing happens on the first of each month. Invoices are emailed to the account "
    "owner as PDF files."
)
SHARED = "Export your data as CSV from the Account page under Privacy."
EXPORT_A = f"{SHARED} Exports older than a week are deleted automatically."
EXPORT_B = f"Legacy plans work the same way. {SHARED} Contact support for a JSON export."
CORPUS = [
    ("d-reset", RESET),
    ("d-bill", BILLING),
    ("d-export-a", EXPORT_A),
    ("d-export-b", EXPORT_B),
]
UNKNOWN = "Our offices are closed on public holidays, but the status page is always up to date."


# -- normalisation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello   World", "hello world"),
        ("  leading and trailing \n", "leading and trailing"),
        ("tabs\tand\r\nnew\nlines", "tabs and new lines"),
        # NFKC folds compatibility forms; casefold goes further than lower().
        ("\uff28\uff45\uff4c\uff4c\uff4f", "hello"),
        ("caf\u0065\u0301 and caf\u00e9", "caf\u00e9 and caf\u00e9"),
        ("Stra\u00dfe", "strasse"),
        ("non\u00a0breaking", "non breaking"),
        ("\ufb01le", "file"),
        # A leading date line (and blank lines before it) is the chunker's, not the text's.
        ("Date: 2024-05-01\nThe body.", "the body."),
        ("\n\n  DATE : yesterday\ndate:today\nThe body.", "the body."),
        # A date line later on is part of the text.
        ("The body.\nDate: 2024-05-01", "the body. date: 2024-05-01"),
        ("Dated: 2024-05-01", "dated: 2024-05-01"),
        # Chat speaker labels go at the start of any line, not mid-line.
        (
            "user: How do I reset it?\nassistant: Open Settings.",
            "how do i reset it? open settings.",
        ),
        ("USER :  shouting\n  Assistant:calm", "shouting calm"),
        ("Date: x\nuser: hi", "hi"),
        ("the user: field", "the user: field"),
        ("a\x00b", "a b"),
        ("Date: only a date", ""),
        ("", ""),
    ],
)
def test_normalize_passage(text: str, expected: str) -> None:
    assert normalize_passage(text) == expected


def test_content_id_is_stable_under_normalisation() -> None:
    ident = content_id("Export your data as CSV.")
    assert ident.startswith("text:")
    assert len(ident) == len("text:") + 16
    int(ident.removeprefix("text:"), 16)
    for variant in (
        "export your data as csv.",
        "  EXPORT   your data\nas CSV. ",
        "Date: 2024-01-01\nassistant: Export your data as CSV.",
        "\uff25xport your data as CSV.",
    ):
        assert content_id(variant) == ident
    assert content_id("Export your data as JSON.") != ident


# -- the index -------------------------------------------------------------------------


def _norm_slice(text: str, length: int) -> str:
    """A span of ``text``'s normalised form exactly ``length`` characters long.

    Its ends are not spaces, so normalising it again leaves it as long as asked.
    """
    norm = normalize_passage(text)
    for start in range(len(norm) - length + 1):
        piece = norm[start : start + length]
        if piece[0] != " " and piece[-1] != " ":
            return piece
    raise AssertionError("no such slice")


@pytest.fixture
def index() -> PassageIndex:
    return PassageIndex(CORPUS)


@pytest.mark.parametrize(
    "chunk",
    [
        RESET,
        RESET.upper(),
        "  " + RESET.replace(" ", "  \n ") + "\n",
        f"Date: 2024-05-01T10:00:00Z\n{RESET}",
        f"assistant: {RESET}",
        RESET.replace("To", "\uff34\uff4f", 1),
    ],
    ids=["same", "upper", "spacing", "date-line", "speaker", "fullwidth"],
)
def test_exact_match_after_folding(index: PassageIndex, chunk: str) -> None:
    assert index.match(chunk) == ("d-reset", "exact")


def test_a_contained_span_matches_its_passage(index: PassageIndex) -> None:
    chunk = "open Settings, choose Security and click Reset password."
    assert len(normalize_passage(chunk)) >= MIN_SPAN_CHARS
    assert index.match(chunk) == ("d-reset", "span")
    # Spans are compared folded too, and may come from the end of the last passage.
    assert index.match("INVOICES are emailed to the account\nowner as PDF files.") == (
        "d-bill",
        "span",
    )
    assert index.match("Contact support for a JSON export.  ") == (
        content_id("Contact support for a JSON export."),
        "new",
    )


def test_span_length_threshold(index: PassageIndex) -> None:
    long_enough = _norm_slice(BILLING, MIN_SPAN_CHARS)
    too_short = _norm_slice(BILLING, MIN_SPAN_CHARS - 1)
    assert index.match(long_enough) == ("d-bill", "span")
    # A few words occur in too many passages to say which one was retrieved.
    assert index.match(too_short) == (content_id(too_short), "new")
    assert index.match("the first of each month") == (content_id("the first of each month"), "new")


def test_a_span_never_straddles_two_passages(index: PassageIndex) -> None:
    # The end of one passage run into the start of the next is no passage's text.
    straddle = normalize_passage(RESET)[-30:] + " " + normalize_passage(BILLING)[:30]
    assert index.match(straddle) == (content_id(straddle), "new")


def test_prefer_picks_the_gold_passage_for_a_shared_span(index: PassageIndex) -> None:
    assert len(normalize_passage(SHARED)) >= MIN_SPAN_CHARS
    # Without a preference the first passage in the corpus that holds it wins...
    assert index.match(SHARED) == ("d-export-a", "span")
    # ...with one, the passage the labels name.
    assert index.match(SHARED, prefer=["d-export-b"]) == ("d-export-b", "span")
    assert index.match(SHARED, prefer=["d-export-a"]) == ("d-export-a", "span")
    # A preferred passage that does not hold the span, or is unknown, changes nothing.
    assert index.match(SHARED, prefer=["d-bill", "nope"]) == ("d-export-a", "span")
    assert index.match(SHARED, prefer=["d-bill", "d-export-b"]) == ("d-export-b", "span")


def test_prefer_picks_the_gold_passage_among_exact_duplicates() -> None:
    # Corpora hold duplicate passages; a chunk equal to both is the one the labels name.
    index = PassageIndex([("dup-1", BILLING), ("dup-2", BILLING.upper())])
    assert index.match(BILLING) == ("dup-1", "exact")
    assert index.match(BILLING, prefer=["dup-2"]) == ("dup-2", "exact")
    assert index.match(BILLING, prefer=["d-reset", "dup-1"]) == ("dup-1", "exact")
    # A preferred passage the index does not hold is never the answer, not even for a
    # chunk that normalises to nothing (as its missing text does).
    assert index.match("Date: 2024-01-01", prefer=["unknown"]) == (content_id(""), "new")
    assert index.match("Date: 2024-01-02", prefer=["unknown"]) == (content_id(""), "exact")


def test_unmatched_text_gets_a_stable_new_id(index: PassageIndex) -> None:
    ident, how = index.match(UNKNOWN)
    assert (ident, how) == (content_id(UNKNOWN), "new")
    # The same text again, however formatted, is now that passage.
    assert index.match(f"Date: 2024-01-01\n  {UNKNOWN.upper()}") == (ident, "exact")
    # And a fresh index gives the same text the same id.
    assert PassageIndex(CORPUS).match(UNKNOWN) == (ident, "new")


def test_counts(index: PassageIndex) -> None:
    index.match(RESET)
    index.match(BILLING)
    index.match(SHARED)
    index.match(UNKNOWN)
    index.match(UNKNOWN)
    index.match("too short to place")
    index.note_id()
    index.note_id()
    assert dict(index.counts) == {"exact": 3, "span": 1, "new": 2, "id": 2}


def test_passages_without_text_are_not_indexed() -> None:
    index = PassageIndex([("blank", "   "), ("date-only", "Date: 2024-01-01"), *CORPUS])
    assert index.match(RESET) == ("d-reset", "exact")
    assert index.match("Date: 2024-01-01") == (content_id(""), "new")
    assert index.match(SHARED) == ("d-export-a", "span")


def test_earlier_passage_wins_an_exact_tie_without_preference() -> None:
    index = PassageIndex([("first", RESET), ("second", f"Date: 2020-01-01\n{RESET}")])
    assert index.match(RESET) == ("first", "exact")


# -- import ----------------------------------------------------------------------------


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    passages = _jsonl(
        tmp_path / "passages.jsonl",
        [{"id": ident, "text": text} for ident, text in CORPUS],
    )
    samples = _jsonl(
        tmp_path / "samples.jsonl",
        [
            {
                "id": "q1",
                "input": {"question": "How do I reset my password?"},
                "expected_output": ["d-reset"],
                "actual_output": {
                    "retrieved": [
                        {"text": f"Date: 2024-05-01\n{RESET.upper()}"},
                        {"text": "Invoices are emailed to the account owner as PDF files."},
                        {"text": SHARED},
                        {"text": UNKNOWN},
                    ]
                },
            },
            {
                "id": "q2",
                "input": {"question": "How do I export my data?"},
                "expected_output": {"d-export-b": 4},
                "actual_output": {
                    "retrieved": [
                        {"text": f"user: {SHARED}"},
                        {"text": f"  {UNKNOWN}  "},
                        {"id": "d-bill"},
                        # The same passage again, by text: ranked once, where first seen.
                        {"text": BILLING},
                    ]
                },
            },
        ],
    )
    return passages, samples


def _passages(project: Project) -> dict[str, str | None]:
    return dict(project.conn.execute("SELECT ext_id, text FROM passage"))


def test_import_matches_retrieved_text(inputs: tuple[Path, Path]) -> None:
    passages, samples = inputs
    new_id = content_id(UNKNOWN)
    with Project.memory() as project:
        summary = run_import(project, ImportRequest(passages=passages, samples=("rag", samples)))
        assert dict(summary.matched) == {"exact": 3, "span": 3, "new": 1, "id": 1}
        assert summary.counts["samples"] == 2
        assert summary.counts["passages added"] == len(CORPUS)

        stored = dict(ranked_ids(project.conn, "rag"))
        assert stored == {
            "q1": ["d-reset", "d-bill", "d-export-a", new_id],
            "q2": ["d-export-b", new_id, "d-bill"],
        }

        texts = _passages(project)
        # Known passages keep their corpus text; the chunk that matched nothing became
        # a passage holding the text as retrieved.
        assert texts == {**dict(CORPUS), new_id: UNKNOWN}

        grades = project.conn.execute(
            "SELECT q.ext_id, p.ext_id, c.grade FROM current_grade c"
            " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
            " ORDER BY 1"
        ).fetchall()
        assert grades == [("q1", "d-reset", 5), ("q2", "d-export-b", 4)]


def test_reimport_gives_the_same_ids(inputs: tuple[Path, Path]) -> None:
    passages, samples = inputs
    with Project.memory() as project:
        run_import(project, ImportRequest(passages=passages, samples=("rag", samples)))
        first = dict(ranked_ids(project.conn, "rag"))
        again = run_import(project, ImportRequest(samples=("rag", samples), replace=True))
        # The text-only passage is in the project now, so it matches exactly.
        assert dict(again.matched) == {"exact": 4, "span": 3, "id": 1}
        assert dict(ranked_ids(project.conn, "rag")) == first
        assert len(_passages(project)) == len(CORPUS) + 1


def test_import_without_a_corpus_keeps_every_chunk(inputs: tuple[Path, Path]) -> None:
    _, samples = inputs
    with Project.memory() as project:
        summary = run_import(project, ImportRequest(samples=("rag", samples)))
        # With nothing to match against, every distinct text is a passage of its own;
        # a span of a chunk seen earlier is not matched to it (only corpus passages are).
        assert dict(summary.matched) == {"new": 5, "exact": 2, "id": 1}
        stored = dict(ranked_ids(project.conn, "rag"))
        assert stored["q1"][0] == content_id(RESET)
        assert stored["q2"][0] == content_id(SHARED)
        assert stored["q2"][1] == stored["q1"][3] == content_id(UNKNOWN)
