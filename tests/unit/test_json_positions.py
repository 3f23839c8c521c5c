"""JSON errors name the line and column Python's own parser names, in its own words
(``file:line:col: not valid JSON (<json's message>)``), for answer files (JSON documents
and JSONL) and for every JSONL reader (samples, queries); a valid document is never
reported as broken JSON."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cli_helpers import Cli

RAGCHECKER = (
    Path(__file__).parents[1] / "data" / "answer_examples" / "ragchecker_checking_inputs.json"
)


def _json_says(text: str) -> json.JSONDecodeError:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    return caught.value


def _import_fails(cli: Cli, tmp_path: Path, *args: str | Path) -> str:
    db = tmp_path / "p.db"
    if not db.exists():
        assert cli("init", db)[0] == 0
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    code, _, err = cli("import", db, *args)
    assert code == 2, err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # nothing written
    return err


def test_a_truncated_ragchecker_file_is_reported_where_json_says(tmp_path: Path, cli: Cli) -> None:
    # RAGChecker's own example cut after its 19th line, as a copy that stopped early.
    lines = RAGCHECKER.read_text(encoding="utf-8").split("\n")
    text = "\n".join(lines[:19]) + "\n"
    path = tmp_path / "checking_inputs.json"
    path.write_text(text, encoding="utf-8")
    exc = _json_says(text)
    assert (exc.lineno, exc.colno, exc.msg) == (20, 1, "Expecting ',' delimiter")
    err = _import_fails(cli, tmp_path, "--answers", f"sys={path}")
    assert "checking_inputs.json:20:1: not valid JSON (Expecting ',' delimiter)" in err


@pytest.mark.parametrize(
    "cut",
    [
        # inside a string: json names where the string starts
        lambda text: text[: text.index("Congo flag") + 5],
        # a comma missing between two contexts
        lambda text: text.replace('"\n        },\n        {\n          "doc_id": "001"', '"}{"', 1),
        # a stray bracket after the document
        lambda text: text + "\n]\n",
    ],
    ids=["unterminated-string", "missing-comma", "extra-data"],
)
def test_broken_documents_are_reported_at_jsons_own_position(
    tmp_path: Path, cli: Cli, cut: object
) -> None:
    assert callable(cut)
    text = cut(RAGCHECKER.read_text(encoding="utf-8"))
    assert isinstance(text, str)
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    exc = _json_says(text)
    err = _import_fails(cli, tmp_path, "--answers", f"sys={path}")
    assert f"doc.json:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})" in err, err


def test_a_broken_list_of_samples_is_reported_where_json_says(tmp_path: Path, cli: Cli) -> None:
    text = '[\n  {"question": "a", "answer": "b"},\n  {"question": "c" "answer": "d"}\n]\n'
    path = tmp_path / "list.json"
    path.write_text(text, encoding="utf-8")
    err = _import_fails(cli, tmp_path, "--answers", f"sys={path}")
    assert "list.json:3:20: not valid JSON (Expecting ',' delimiter)" in err


def test_jsonl_errors_name_line_and_column(tmp_path: Path, cli: Cli) -> None:
    answers = tmp_path / "a.jsonl"
    answers.write_text(
        '{"question": "a", "answer": "b"}\n\n{"question": "c", "answer": tru}\n', encoding="utf-8"
    )
    err = _import_fails(cli, tmp_path, "--answers", f"sys={answers}")
    assert "a.jsonl:3:29: not valid JSON (Expecting value)" in err
    samples = tmp_path / "s.jsonl"
    good = {"id": "q1", "input": {"question": "?"}, "expected_output": [], "actual_output": []}
    samples.write_text(json.dumps(good) + '\n{"id": "q2", "input": }\n', encoding="utf-8")
    err = _import_fails(cli, tmp_path, "--samples", samples)
    assert "s.jsonl:2:23: not valid JSON (Expecting value)" in err
    # An error at the very end of a line stays on that line (not the next one).
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "text": "a"}\n{"id": "q2",\n', encoding="utf-8")
    err = _import_fails(cli, tmp_path, "--queries", queries)
    assert "q.jsonl:2:13: not valid JSON (Expecting property name enclosed in double quotes)" in err


def test_a_pretty_printed_sample_is_one_sample_not_broken_json(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"question": "a?", "answer": "b", "contexts": ["c"]}, indent=2))
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, out, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 0, err
    assert "raglabel format, 1 samples" in out


def test_results_that_are_not_a_list_name_their_line(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "r.json"
    path.write_text('{\n  "meta": 1,\n  "results": {"query": "a"}\n}\n', encoding="utf-8")
    err = _import_fails(cli, tmp_path, "--answers", f"sys={path}")
    assert "r.json:3: field results: must be a list" in err


def test_a_number_json_cannot_read_is_refused_at_its_line(tmp_path: Path, cli: Cli) -> None:
    # json.loads raises a plain ValueError (not a decode error) past 4300 digits.
    answers = tmp_path / "a.jsonl"
    digits = "7" * 5000
    answers.write_text(
        '{"question": "a", "answer": "b"}\n{"question": "c", "answer": "d", "id": '
        + digits
        + "}\n",
        encoding="utf-8",
    )
    err = _import_fails(cli, tmp_path, "--answers", f"sys={answers}")
    assert "a.jsonl:2: not valid JSON (Exceeds the limit (4300 digits)" in err


def test_a_jsonl_file_that_starts_with_a_byte_order_mark_reads_as_without_one(
    tmp_path: Path,
) -> None:
    from raglabel.formats.jsonl import objects

    path = tmp_path / "queries.jsonl"
    lines = '{"id": "q1", "text": "a"}\n{"id": "q2", "text": "b"}\n'
    # Notepad and Excel write UTF-8 with a mark in front; json.loads alone refuses it.
    path.write_bytes(b"\xef\xbb\xbf" + lines.encode("utf-8"))
    assert [value["id"] for _, value in objects(path)] == ["q1", "q2"]


def test_a_mark_anywhere_but_the_start_is_still_an_error(tmp_path: Path) -> None:
    from raglabel.errors import InputError
    from raglabel.formats.jsonl import objects

    path = tmp_path / "queries.jsonl"
    path.write_bytes(b'{"id": "q1", "text": "a"}\n\xef\xbb\xbf{"id": "q2", "text": "b"}\n')
    with pytest.raises(InputError, match=r"queries\.jsonl:2:1: not valid JSON"):
        list(objects(path))


def test_a_jsonl_file_whose_first_line_is_cut_is_reported_on_that_line(
    tmp_path: Path, cli: Cli
) -> None:
    path = tmp_path / "cut.jsonl"
    first = '{"question": "q one", "answer": "a", "contexts": ["c1"]'  # no closing brace
    path.write_text(first + '\n{"question": "q two", "answer": "b", "contexts": ["c2"]}\n')
    said = _json_says(first)
    err = _import_fails(cli, tmp_path, "--answers", f"sys={path}")
    assert f"cut.jsonl:1:{said.colno}: not valid JSON ({said.msg})" in err
