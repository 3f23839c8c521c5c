"""The full-text index over passages: built on import, in step with a re-import, BM25."""

from __future__ import annotations

import json
from pathlib import Path

from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project
from raglabel.storage.search import match_expression, search_passages


def passages_file(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text(
        "".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in rows)
    )
    return path


def test_import_indexes_passages_and_a_reimport_replaces_their_text(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p.db") as project:
        first = passages_file(
            tmp_path / "a.jsonl",
            [
                ("p1", "Refunds", "Refunds take five days to reach your card."),
                ("p2", "Storage", "Extra storage costs two dollars per month."),
                ("p3", None, "Refunds for storage add-ons are prorated."),
            ],
        )
        run_import(project, ImportRequest(passages=first))
        conn = project.conn
        assert [h.passage for h in search_passages(conn, "refunds")][:1] in (["p1"], ["p3"])
        assert {h.passage for h in search_passages(conn, "refunds")} == {"p1", "p3"}
        # More of the words first; a title match weighs more.
        assert search_passages(conn, "storage refunds")[0].passage == "p3"
        assert "[Refunds]" in search_passages(conn, "refunds")[0].snippet
        second = passages_file(
            tmp_path / "b.jsonl", [("p1", "Refunds", "Chargebacks are handled by the bank.")]
        )
        run_import(project, ImportRequest(passages=second))
        assert {h.passage for h in search_passages(conn, "refunds card")} == {"p1", "p3"}
        assert [h.passage for h in search_passages(conn, "card")] == []
        assert [h.passage for h in search_passages(conn, "chargebacks")] == ["p1"]


def test_typed_words_never_read_as_operators() -> None:
    assert match_expression('NOT "a" OR near(') == '"NOT" OR "a" OR "OR" OR "near"'
    assert match_expression("encrypt* keys") == '"encrypt"* OR "keys"'
    assert match_expression("  ?! ") == ""
