"""A retrieved chunk logged as the JSON string of its text (``json.dumps``: in quotes, with
``\\n``, ``\\"`` and ``\\uXXXX`` escapes) is its passage, for content matching everywhere
(seed 002's "JSON-escaped matching"): the index, answer files and samples files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from raglabel.formats.text import content_id, json_unescaped, normalize_passage
from raglabel.storage.matching import PassageIndex

if TYPE_CHECKING:
    from cli_helpers import Cli

POLICY = (
    'Refunds: "within 30 days" of delivery.\n'
    "Items must be unused; the café's gift cards are final sale.\n"
    "Contact support\\returns for a label."
)
OTHER = "Shipping takes three to five working days within the country."


@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_json_string_of_a_passage_normalises_as_the_passage(ascii_only: bool) -> None:
    escaped = json.dumps(POLICY, ensure_ascii=ascii_only)
    assert escaped.startswith('"') and "\\n" in escaped and '\\"' in escaped
    assert normalize_passage(escaped) == normalize_passage(POLICY)
    assert content_id(escaped) == content_id(POLICY)


@pytest.mark.parametrize(
    "text",
    [
        "C:\\new\\table is a path",  # backslashes in ordinary text stay
        '"Quoted" and "quoted again"',  # quotes at both ends, but not one JSON string
        '"not closed\\"',
        '"a raw\nline break"',  # JSON strings have no raw line breaks
    ],
)
def test_other_texts_are_left_as_they_are(text: str) -> None:
    assert json_unescaped(text) == text


def test_the_index_matches_escaped_chunks_exactly_and_as_spans() -> None:
    index = PassageIndex([("policy", POLICY), ("ship", OTHER)])
    assert index.match(json.dumps(POLICY)) == ("policy", "exact")
    span = "Items must be unused; the café's gift cards are final sale."
    assert index.match(json.dumps(span)) == ("policy", "span")
    assert index.match(f"  {json.dumps(OTHER)}\n") == ("ship", "exact")


def _project(cli: Cli, tmp_path: Path) -> Path:
    db = tmp_path / "p.db"
    passages = tmp_path / "passages.jsonl"
    passages.write_text(
        "".join(
            json.dumps({"id": pid, "text": text}) + "\n"
            for pid, text in (("policy", POLICY), ("ship", OTHER))
        ),
        encoding="utf-8",
    )
    assert cli("init", db)[0] == 0
    assert cli("import", db, "--passages", passages)[0] == 0
    return db


def _passages_of_run(db: Path, run: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        (blob,) = conn.execute(
            "SELECT r.passage_ids FROM ranking r JOIN run ON run.id = r.run_id WHERE run.name = ?",
            (run,),
        ).fetchone()
    finally:
        conn.close()
    return bytes(blob).decode().split("\n")


def test_an_answer_files_escaped_contexts_are_its_passages(tmp_path: Path, cli: Cli) -> None:
    db = _project(cli, tmp_path)
    path = tmp_path / "answers.jsonl"
    line = {
        "input": "Can I return a gift card?",
        "actual_output": "No, gift cards are final sale.",
        "retrieval_context": [json.dumps(OTHER), json.dumps(POLICY)],
    }
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    code, _, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 0, err
    assert _passages_of_run(db, "sys") == ["ship", "policy"]


def test_a_samples_files_escaped_texts_are_its_passages(tmp_path: Path, cli: Cli) -> None:
    db = _project(cli, tmp_path)
    path = tmp_path / "samples.jsonl"
    sample = {
        "id": "q1",
        "input": {"question": "Can I return a gift card?"},
        "expected_output": ["policy"],
        "actual_output": {"retrieved": [{"text": json.dumps(POLICY)}, {"text": OTHER}]},
    }
    path.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    code, _, err = cli("import", db, "--samples", f"rag={path}")
    assert code == 0, err
    assert _passages_of_run(db, "rag") == ["policy", "ship"]
