"""Answer files of every format: recognised, matched to queries and passages, stored, and
turned into a run; bad input refused with its line and nothing written; answer grades
round-trip through export and import."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli

Q1 = "How do I reset my password?"
Q2 = "Can I export my data?"
D1 = "To reset your password, open Settings and choose Reset."
D3 = "Export your data as CSV from the Account page."
NEW = "Exports are limited to ten thousand rows per file."

#: Each tool's own layout: two samples, the first on a known query, the second matched by
#: text; contexts by id where the format has ids, else by content.
FILES: dict[str, tuple[str, str]] = {
    "raglabel": (
        "jsonl",
        "\n".join(
            json.dumps(line)
            for line in (
                {
                    "query_id": "q1",
                    "question": Q1,
                    "answer": "Open Settings and choose Reset.",
                    "contexts": [{"id": "d1", "text": D1}, D3],
                    "reference": ["Settings", "Reset"],
                    "ranks": [1, 0],
                    "metadata": {"model": "m1"},
                },
                {"question": Q2.upper(), "answer": "", "contexts": [NEW], "reference": "CSV"},
            )
        ),
    ),
    "ragas v2": (
        "jsonl",
        "\n".join(
            json.dumps(line)
            for line in (
                {
                    "user_input": Q1,
                    "response": "Open Settings and choose Reset.",
                    "retrieved_contexts": [D1, D3],
                    "retrieved_context_ids": ["d1", "d3"],
                    "reference": "Use Settings > Reset.",
                },
                {"user_input": Q2, "response": "As CSV.", "retrieved_contexts": [NEW]},
            )
        ),
    ),
    "ragas v1": (
        "json",
        json.dumps(
            [
                {
                    "question": Q1,
                    "answer": "Open Settings and choose Reset.",
                    "contexts": [D1, D3],
                    "ground_truths": ["Settings", "Reset"],
                },
                {"question": Q2, "answer": "As CSV.", "contexts": [NEW], "ground_truth": "CSV"},
            ],
            indent=2,
        ),
    ),
    "DeepEval": (
        "jsonl",
        "\n".join(
            json.dumps(line)
            for line in (
                {
                    "input": Q1,
                    "actual_output": "Open Settings and choose Reset.",
                    "retrieval_context": [D1, D3],
                    "expected_output": "Settings, then Reset.",
                    "context": ["unused"],
                },
                {"input": Q2, "actual_output": "As CSV.", "retrieval_context": [NEW]},
            )
        ),
    ),
    "RAGChecker": (
        "json",
        json.dumps(
            {
                "results": [
                    {
                        "query_id": "q1",
                        "query": Q1,
                        "gt_answer": "Settings, then Reset.",
                        "response": "Open Settings and choose Reset.",
                        "retrieved_context": [
                            {"doc_id": "d1", "text": D1},
                            {"doc_id": "d3", "text": D3},
                        ],
                    },
                    {
                        "query_id": "new-q",
                        "query": Q2,
                        "gt_answer": "CSV",
                        "response": "As CSV.",
                        "retrieved_context": [{"doc_id": "n1", "text": NEW}],
                    },
                ]
            },
            indent=2,
        ),
    ),
}


def make_project(db: Path) -> Path:
    """``db``, an empty project (the empty_project fixture), with two queries and two
    passages."""
    with Project.open(db) as project, project.write():
        project.conn.executemany(
            "INSERT INTO query (ext_id, text) VALUES (?, ?)", [("q1", Q1), ("q2", Q2)]
        )
        project.conn.executemany(
            "INSERT INTO passage (ext_id, text) VALUES (?, ?)", [("d1", D1), ("d3", D3)]
        )
    return db


def write(tmp_path: Path, fmt: str) -> Path:
    ext, text = FILES[fmt]
    path = tmp_path / f"{fmt.replace(' ', '_')}.{ext}"
    path.write_text(text + "\n", encoding="utf-8")
    return path


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


SAMPLES = (
    "SELECT s.sample_id, q.ext_id, s.answer, s.reference, s.metadata FROM answer_sample s"
    " JOIN query q ON q.id = s.query_id ORDER BY s.line"
)
CONTEXTS = (
    "SELECT s.sample_id, c.position, p.ext_id, c.rank FROM answer_context c"
    " JOIN answer_sample s ON s.id = c.sample_id JOIN passage p ON p.id = c.passage_id"
    " ORDER BY s.line, c.position"
)


@pytest.mark.parametrize("fmt", list(FILES))
def test_every_format_is_recognised_matched_and_becomes_a_run(
    fmt: str, tmp_path: Path, cli: Cli, empty_project: Path
) -> None:
    db = make_project(empty_project)
    code, out, err = cli("import", db, "--answers", f"sys={write(tmp_path, fmt)}")
    assert code == 0, err
    assert f"answers of 'sys': {fmt} format, 2 samples" in out
    samples = rows(db, SAMPLES)
    # RAGChecker's "new-q" is not a query of the project: its text matches q2.
    assert [s[1] for s in samples] == ["q1", "q2"]
    assert samples[0][0] == "q1" and samples[0][2] == "Open Settings and choose Reset."
    contexts = rows(db, CONTEXTS)
    assert [c[2] for c in contexts[:2]] == ["d1", "d3"]
    assert rows(db, "SELECT format FROM answer_system") == [(fmt,)]
    code, out, err = cli("eval", db, "--format", "json", "--per-query")
    assert code == 0, err
    assert "sys" in json.loads(out)["runs"]
    ranked = rows(
        db,
        "SELECT passage_ids FROM ranking r JOIN query q ON q.id = r.query_id WHERE q.ext_id = 'q1'",
    )
    expected = b"d3\nd1" if fmt == "raglabel" else b"d1\nd3"  # raglabel's ranks reorder
    assert ranked == [(expected,)]


def test_raglabel_fields_stored_and_empty_answer_is_missing(
    tmp_path: Path, cli: Cli, empty_project: Path
) -> None:
    db = make_project(empty_project)
    code, _, err = cli("import", db, "--answers", f"sys={write(tmp_path, 'raglabel')}")
    assert code == 0, err
    first, second = rows(db, SAMPLES)
    assert json.loads(first[3]) == ["Settings", "Reset"]
    assert json.loads(first[4]) == {"model": "m1"}
    assert second[1] == "q2"  # matched by normalised text (upper case in the file)
    assert second[2] is None  # an empty answer is stored as missing
    assert rows(db, CONTEXTS)[:2] == [("q1", 0, "d1", 1), ("q1", 1, "d3", 0)]
    new = rows(db, CONTEXTS)[2][2]
    assert new.startswith("text:")
    assert rows(db, f"SELECT text FROM passage WHERE ext_id = '{new}'") == [(NEW,)]


def test_matching_by_id_text_and_new(tmp_path: Path, cli: Cli, empty_project: Path) -> None:
    db = make_project(empty_project)
    path = tmp_path / "a.jsonl"
    lines = [
        # An id whose question agrees with the project's (normalised) is matched by id.
        {"query_id": "q2", "question": f" {Q2.upper()}", "answer": "a", "contexts": [D3]},
        {"question": f"  {Q1.lower()} ", "answer": "b", "contexts": []},
        {"question": "Brand new question?", "answer": "c"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, err = cli("import", db, "--answers", f"s={path}")
    assert code == 0, err
    assert "1 by id, 1 added as new queries, 1 by text" in out
    got = rows(db, SAMPLES)
    assert [g[1] for g in got[:2]] == ["q2", "q1"]
    assert got[2][1].startswith("text:")
    assert rows(db, f"SELECT text FROM query WHERE ext_id = '{got[2][1]}'") == [
        ("Brand new question?",)
    ]
    assert rows(db, CONTEXTS) == [("q2", 0, "d3", None)]  # matched by content


def test_reimport_replaces_the_systems_samples(
    tmp_path: Path, cli: Cli, empty_project: Path
) -> None:
    db = make_project(empty_project)
    assert cli("import", db, "--answers", f"sys={write(tmp_path, 'DeepEval')}")[0] == 0
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"input": Q1, "actual_output": "New.", "retrieval_context": [D3]}))
    code, out, err = cli("import", db, "--answers", f"sys={one}")
    assert code == 0, err
    assert "replaced the 2 samples imported before" in out
    assert [r[2] for r in rows(db, SAMPLES)] == ["New."]
    assert rows(db, "SELECT count(*) FROM answer_context") == [(1,)]
    assert rows(db, "SELECT name, queries FROM run") == [("sys", 1)]


def test_a_run_of_the_same_name_is_not_overwritten(
    tmp_path: Path, cli: Cli, empty_project: Path
) -> None:
    db = make_project(empty_project)
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    assert cli("import", db, "--run", f"sys={run}")[0] == 0
    code, _, err = cli("import", db, "--answers", f"sys={write(tmp_path, 'DeepEval')}")
    assert code == 2 and "is not an answer system" in err


def _grades(tmp_path: Path, db: Path, cli: Cli, lines: list[dict[str, Any]]) -> tuple[int, str]:
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, _, err = cli("import", db, "--answer-grades", path)
    return code, err


GRADE = {
    "system": "sys",
    "sample_id": "q1",
    "criterion": "faithfulness",
    "grade": 4,
    "annotator": "alice",
}


def test_answer_grades_round_trip(tmp_path: Path, cli: Cli, empty_project: Path) -> None:
    db = make_project(empty_project)
    assert cli("import", db, "--answers", f"sys={write(tmp_path, 'raglabel')}")[0] == 0
    fresh = tmp_path / "fresh.db"
    shutil.copyfile(db, fresh)
    lines = [
        GRADE | {"grade": 2},
        GRADE | {"unsupported": [[0, 4], [10, 20]]},
        GRADE | {"criterion": "answer_relevancy", "grade": 5, "annotator": "bob"},
        GRADE | {"sample_id": "q2", "criterion": "context_recall", "grade": 1},
    ]
    code, err = _grades(tmp_path, db, cli, lines)
    assert code == 0, err
    out = tmp_path / "out.jsonl"
    code, stdout, err = cli("export", db, "--answer-grades", out)
    assert code == 0, err
    assert "wrote 3 answer grades" in stdout
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    stamps = [line.pop("graded_at") for line in exported]
    assert GRADE | {"unsupported": [[0, 4], [10, 20]]} in exported
    assert all(datetime.fromisoformat(stamp).tzinfo is not None for stamp in stamps)
    assert cli("import", fresh, "--answer-grades", out)[0] == 0
    again = tmp_path / "again.jsonl"
    assert cli("export", fresh, "--answer-grades", again)[0] == 0
    assert again.read_text() == out.read_text()  # the times too: each kept as given
    # The same grades again, into either project, add no event: each already stands.
    for project in (db, fresh):
        before = sqlite3.connect(project).execute("SELECT count(*) FROM answer_event").fetchone()
        code, stdout, err = cli("import", project, "--answer-grades", out)
        assert code == 0, err
        assert "answer grades already standing: 3" in stdout
        after = sqlite3.connect(project).execute("SELECT count(*) FROM answer_event").fetchone()
        assert after == before
    # A line whose grade differs from the standing one is a new grade.
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps(exported[0] | {"grade": 1 + exported[0]["grade"] % 5}) + "\n")
    code, stdout, err = cli("import", db, "--answer-grades", changed)
    assert code == 0, err
    assert "already standing" not in stdout


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"system": "nope"}, "no answer system 'nope'"),
        ({"sample_id": "zz"}, "has no sample 'zz'"),
        ({"criterion": "style"}, "field criterion"),
        ({"grade": 6}, "field grade"),
        ({"unsupported": [[0, 999]]}, "ends past the answer"),
        ({"unsupported": [[5, 2]]}, "empty or reversed"),
        ({"sample_id": "q2", "unsupported": [[0, 1]]}, "ends past the answer (0 characters)"),
        ({"graded_at": "yesterday"}, "graded_at 'yesterday' is not an ISO 8601 time"),
        ({"graded_at": "2026-11-28T10:00:00"}, "has no time zone"),
    ],
)
def test_bad_answer_grades_write_nothing(
    tmp_path: Path, cli: Cli, empty_project: Path, change: dict[str, Any], message: str
) -> None:
    db = make_project(empty_project)
    assert cli("import", db, "--answers", f"sys={write(tmp_path, 'raglabel')}")[0] == 0
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    code, err = _grades(tmp_path, db, cli, [GRADE, GRADE | change])
    assert code == 2
    assert "g.jsonl:2: " in err and message in err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


#: (problem, line 2 of the file as bytes, expected message) per format.
def _bad_lines(fmt: str) -> list[tuple[str, bytes, str]]:
    good = json.loads(FILES[fmt][1].splitlines()[0]) if FILES[fmt][0] == "jsonl" else None
    layouts = {
        "raglabel": ("question", "answer", "contexts"),
        "ragas v2": ("user_input", "response", "retrieved_contexts"),
        "ragas v1": ("question", "answer", "contexts"),
        "DeepEval": ("input", "actual_output", "retrieval_context"),
        "RAGChecker": ("query", "response", "retrieved_context"),
    }
    q, a, c = layouts[fmt]
    base: dict[str, Any] = good or {q: Q1, a: "x", c: [D1]}
    base = {k: v for k, v in base.items() if k not in ("ranks", "retrieved_context_ids")}

    def line(**fields: Any) -> bytes:
        return json.dumps(base | fields).encode()

    without_q = {k: v for k, v in base.items() if k != q}
    without_a = {k: v for k, v in base.items() if k != a}
    without_q.pop("query_id", None)
    return [
        ("malformed JSON", b'{"' + q.encode() + b'": "x", ', "not valid JSON"),
        ("no known format", b'{"foo": 1, "bar": 2}', "no known answer format"),
        ("not an object", b"[1, 2]", "not an answer sample"),
        ("missing question", json.dumps(without_q).encode(), "missing the question"),
        ("missing answer", json.dumps(without_a).encode(), "missing the answer"),
        ("contexts not a list", line(**{c: "one string"}), f"field {c}: must be a list"),
        ("repeated id", line(id="same"), "sample id 'same' already used on line 1"),
        ("NUL byte", line(**{a: "x"}).replace(b'"x"', b'"x\x00"'), "contains a NUL byte"),
        ("bad UTF-8", line(**{a: "x"}).replace(b'"x"', b'"\xff"'), "is not valid UTF-8"),
        ("ranks wrong length", line(ranks=[0, 1, 2, 3, 4]), "field ranks"),
        ("100 MB line", b'{"' + q.encode() + b'": "' + b"x" * (17 << 20) + b'"}', "MiB long"),
    ]


CASES = [(fmt, *case) for fmt in FILES for case in _bad_lines(fmt)]


@pytest.mark.parametrize(
    ("fmt", "problem", "bad", "message"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_bad_answer_lines_write_nothing(  # noqa: PLR0917 (parametrised)
    fmt: str, problem: str, bad: bytes, message: str, tmp_path: Path, cli: Cli, empty_project: Path
) -> None:
    db = make_project(empty_project)
    layouts = {"ragas v2": "user_input", "DeepEval": "input", "RAGChecker": "query"}
    q = layouts.get(fmt, "question")
    first = {q: Q2, "id": "same", **({"query_id": "q2"} if fmt == "RAGChecker" else {})}
    first |= {
        {"raglabel": "answer", "ragas v1": "answer", "DeepEval": "actual_output"}.get(
            fmt, "response"
        ): "ok"
    }
    if problem == "repeated id":
        del first["id"]
        first["id"] = "same"
    else:
        del first["id"]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(first).encode() + b"\n" + bad + b"\n")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    code, _, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 2, err
    assert f"bad.jsonl:2: {message}" in err or (
        problem in ("NUL byte", "bad UTF-8", "100 MB line", "malformed JSON")
        and "bad.jsonl:2:" in err
        and message in err
    ), err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_a_file_mixing_formats_is_refused(tmp_path: Path, cli: Cli, empty_project: Path) -> None:
    db = make_project(empty_project)
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        json.dumps({"user_input": Q1, "response": "a"})
        + "\n"
        + json.dumps({"input": Q1, "actual_output": "a"})
        + "\n"
    )
    code, _, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 2
    assert "mixed.jsonl:2: this sample is DeepEval but line 1 is ragas v2" in err


def test_bad_json_document_names_the_line(tmp_path: Path, cli: Cli, empty_project: Path) -> None:
    db = make_project(empty_project)
    path = tmp_path / "doc.json"
    path.write_text('[\n {"question": "a", "answer": "b"},\n {"question": 1, "answer": "b"}\n]\n')
    code, _, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 2
    assert "doc.json:3: field question: must be a string" in err


def test_upgraded_v4_file_takes_answers(tmp_path: Path, cli: Cli) -> None:
    db = tmp_path / "v4.db"
    shutil.copyfile(Path(__file__).parents[1] / "data" / "project-v4.db", db)
    code, _, err = cli("import", db, "--answers", f"sys={write(tmp_path, 'ragas v1')}")
    assert code == 0, err
    assert rows(db, "SELECT count(*) FROM answer_sample") == [(2,)]
    assert rows(db, SAMPLES)[0][1] == "q1"  # the v4 file's own query, matched by text


def test_contexts_named_by_id_match_text_of_a_later_file_in_the_same_import(
    tmp_path: Path, cli: Cli
) -> None:
    # Two systems in one command: the first names its contexts by id, the second gives
    # the same texts only; they are the same passages, as in two separate imports.
    db = tmp_path / "one.db"
    assert cli("init", db)[0] == 0
    named = tmp_path / "named.jsonl"
    named.write_text(
        json.dumps(
            {
                "user_input": Q1,
                "response": "Open Settings.",
                "retrieved_contexts": [NEW, D3],
                "retrieved_context_ids": ["w1", "w2"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    plain = tmp_path / "plain.json"
    plain.write_text(
        json.dumps([{"question": Q1, "answer": "Settings.", "contexts": [D3, NEW]}]),
        encoding="utf-8",
    )
    code, out, err = cli("import", db, "--answers", f"a={named}", "--answers", f"b={plain}")
    assert code == 0, err
    assert rows(db, "SELECT ext_id FROM passage ORDER BY ext_id") == [("w1",), ("w2",)]
    assert "added as new queries" in out + err
