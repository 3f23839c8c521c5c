"""Answer files as their own tools write them (tests/data/answer_examples/, see its
NOTICE.md): every sample keeps its own contexts, and every question's run ranks its own
passages, whether the format's context ids name passages or only number a sample's chunks;
seed 003's ``ctx_rank_prec`` request imports with its golden answer and its ranks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from raglabel.storage.answer_items import answer_items

if TYPE_CHECKING:
    from cli_helpers import Cli

EXAMPLES = Path(__file__).parents[1] / "data" / "answer_examples"
RAGCHECKER = EXAMPLES / "ragchecker_checking_inputs.json"
SEED_003 = EXAMPLES / "seed003_ctx_rank_prec_request.json"


def _ragchecker_texts() -> list[list[str]]:
    results = json.loads(RAGCHECKER.read_text(encoding="utf-8"))["results"]
    return [[c["text"] for c in r["retrieved_context"]] for r in results]


def _deepeval_texts() -> list[list[str]]:
    items = json.loads((EXAMPLES / "deepeval_goldens.json").read_text(encoding="utf-8"))
    return [item["retrieval_context"] for item in items]


def _ragas_texts() -> list[list[str]]:
    lines = (EXAMPLES / "ragas_eval_dataset.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["retrieved_contexts"] for line in lines]


#: (file, the format raglabel names, each sample's context texts in file order).
OWN_EXAMPLES = {
    "RAGChecker": (RAGCHECKER, _ragchecker_texts()),
    "DeepEval": (EXAMPLES / "deepeval_goldens.json", _deepeval_texts()),
    "ragas v2": (EXAMPLES / "ragas_eval_dataset.jsonl", _ragas_texts()),
}


def _rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _contexts_by_text(db: Path) -> list[list[str]]:
    """Each sample's contexts as the texts of the passages they were matched to."""
    samples = [row[0] for row in _rows(db, "SELECT id FROM answer_sample ORDER BY line, id")]
    return [
        [
            text
            for (text,) in _rows(
                db,
                "SELECT p.text FROM answer_context c JOIN passage p ON p.id = c.passage_id"
                " WHERE c.sample_id = ? ORDER BY c.position",
                sample,
            )
        ]
        for sample in samples
    ]


def _run_by_text(db: Path, run: str) -> list[list[str]]:
    """Each answered query's ranking in the run, as passage texts, in the samples' order."""
    texts = dict(_rows(db, "SELECT ext_id, text FROM passage"))
    out = []
    for (query,) in _rows(db, "SELECT query_id FROM answer_sample ORDER BY line, id"):
        (ids,) = _rows(
            db,
            "SELECT r.passage_ids FROM ranking r JOIN run ON run.id = r.run_id"
            " WHERE run.name = ? AND r.query_id = ?",
            run,
            query,
        )[0]
        out.append([texts[pid] for pid in bytes(ids).decode().split("\n")])
    return out


def _import(cli: Cli, tmp_path: Path, *answers: str) -> tuple[Path, str, str]:
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    args: list[str | Path] = ["import", db]
    for spec in answers:
        args += ["--answers", spec]
    code, out, err = cli(*args)
    assert code == 0, err
    return db, out, err


@pytest.mark.parametrize("fmt", list(OWN_EXAMPLES))
def test_each_formats_own_example_keeps_every_samples_contexts(
    fmt: str, tmp_path: Path, cli: Cli
) -> None:
    path, expected = OWN_EXAMPLES[fmt]
    db, out, _ = _import(cli, tmp_path, f"sys={path}")
    assert f"answers of 'sys': {fmt} format, {len(expected)} samples" in out
    assert _contexts_by_text(db) == expected
    # The run of the system ranks each question's own passages, in the file's order.
    assert _run_by_text(db, "sys") == [list(dict.fromkeys(texts)) for texts in expected]


def test_ragcheckers_ids_numbered_in_each_sample_are_not_passage_ids(
    tmp_path: Path, cli: Cli
) -> None:
    # Both samples of RAGChecker's example number their chunks from "000": the Congo
    # flag question must not rank the Nile passages that came first under those ids.
    db, _, err = _import(cli, tmp_path, f"sys={RAGCHECKER}")
    assert "3 context ids ('000', '001', '002') came with different texts" in err
    assert "so all 6 contexts carrying them were matched by their text" in err
    assert _rows(db, "SELECT count(*) FROM passage WHERE ext_id IN ('000', '001', '002')") == [(0,)]
    congo = _run_by_text(db, "sys")[1]
    assert all("Nile" not in text for text in congo)


def _as_ragas(tmp_path: Path) -> Path:
    """RAGChecker's example in ragas' v2 layout, its doc_ids as retrieved_context_ids."""
    results = json.loads(RAGCHECKER.read_text(encoding="utf-8"))["results"]
    path = tmp_path / "ragas.jsonl"
    lines = [
        {
            "user_input": r["query"],
            "response": r["response"],
            "retrieved_contexts": [c["text"] for c in r["retrieved_context"]],
            "retrieved_context_ids": [c["doc_id"] for c in r["retrieved_context"]],
            "reference": r["gt_answer"],
        }
        for r in results
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_ragas_ids_that_come_with_two_texts_are_keyed_by_text_with_a_warning(
    tmp_path: Path, cli: Cli
) -> None:
    db, out, err = _import(cli, tmp_path, f"sys={_as_ragas(tmp_path)}")
    assert "3 context ids ('000', '001', '002') came with different texts" in err
    assert "6 of their 6 contexts" in err
    assert _contexts_by_text(db) == _ragchecker_texts()
    assert _run_by_text(db, "sys") == _ragchecker_texts()
    # "003" keeps one text, but its sample numbers its chunks ("000" to "002" clash):
    # the sample's contexts are matched one way, all by text, and the warning says so.
    assert "and so were the 1 other context of the same samples" in err
    assert "retrieved passages matched by: 7 new" in out
    assert _rows(db, "SELECT ext_id FROM passage WHERE ext_id NOT LIKE 'text:%'") == []


def test_ragas_ids_that_keep_their_passages_text_stay_passage_ids(tmp_path: Path, cli: Cli) -> None:
    whole = "The Nile flows north through eleven countries into the Mediterranean Sea."
    db = tmp_path / "p.db"
    passages = tmp_path / "passages.jsonl"
    passages.write_text(json.dumps({"id": "nile", "text": whole}) + "\n", encoding="utf-8")
    assert cli("init", db)[0] == 0
    assert cli("import", db, "--passages", passages)[0] == 0
    path = tmp_path / "ragas.jsonl"
    lines = [
        # Two chunks of the same passage under its id, in two samples: not a clash.
        {
            "user_input": "Where does the Nile flow?",
            "response": "North.",
            "retrieved_contexts": ["The Nile flows north through eleven countries"],
            "retrieved_context_ids": ["nile"],
        },
        {
            "user_input": "Where does the Nile end?",
            "response": "In the Mediterranean.",
            "retrieved_contexts": ["into the Mediterranean Sea.", "Unrelated text."],
            "retrieved_context_ids": ["nile", "x"],
        },
        {
            "user_input": "Anything else?",
            "response": "No.",
            "retrieved_contexts": ["Unrelated text."],
            "retrieved_context_ids": ["x"],
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, _, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 0, err
    assert "came with different texts" not in err
    got = _rows(
        db,
        "SELECT p.ext_id FROM answer_context c JOIN passage p ON p.id = c.passage_id"
        " JOIN answer_sample s ON s.id = c.sample_id ORDER BY s.line, c.position",
    )
    assert got == [("nile",), ("nile",), ("x",), ("x",)]


def test_an_id_whose_text_is_not_its_passages_is_matched_by_text(tmp_path: Path, cli: Cli) -> None:
    db = tmp_path / "p.db"
    passages = tmp_path / "passages.jsonl"
    passages.write_text(
        json.dumps({"id": "p1", "text": "The Amazon drains the largest basin on Earth."}) + "\n",
        encoding="utf-8",
    )
    assert cli("init", db)[0] == 0
    assert cli("import", db, "--passages", passages)[0] == 0
    path = tmp_path / "answers.jsonl"
    line = {"question": "Flag?", "answer": "Blue.", "contexts": [{"id": "p1", "text": "Blue."}]}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    code, _, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 0, err
    assert "1 context id ('p1') came with different texts" in err
    (passage,) = _rows(
        db, "SELECT p.ext_id FROM answer_context c JOIN passage p ON p.id = c.passage_id"
    )
    assert passage[0].startswith("text:")


def test_a_ragchecker_context_without_text_is_refused(tmp_path: Path, cli: Cli) -> None:
    doc = json.loads(RAGCHECKER.read_text(encoding="utf-8"))
    del doc["results"][1]["retrieved_context"][2]["text"]
    path = tmp_path / "rc.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--answers", f"sys={path}")
    assert code == 2
    line = next(
        i for i, text in enumerate(path.read_text().splitlines(), 1) if '"query_id": "1"' in text
    )
    assert f"rc.json:{line - 1}: field retrieved_context.2.text: a RAGChecker context needs" in err


# -- seed 003: the ctx_rank_prec request ------------------------------------------------

LAPTOP = json.loads(SEED_003.read_text(encoding="utf-8"))["evaluations"][0]["data"][0]


def test_seed_003s_request_imports_with_its_golden_answer_and_ranks(
    tmp_path: Path, cli: Cli
) -> None:
    db, out, err = _import(cli, tmp_path, f"laptop={SEED_003}")
    assert "answers of 'laptop': Aegis format, 1 samples" in out
    # raglabel chose what stands for the question, so the import says so.
    assert "golden answer is its question as well as its reference" in err
    golden = LAPTOP["golden_answer"]
    ((question, answer, reference),) = _rows(
        db, "SELECT question, answer, reference FROM answer_sample"
    )
    # The golden answer is the reference, and the only text there is for the question.
    assert (question, answer, json.loads(reference)) == (golden, None, golden)
    assert _rows(db, "SELECT text FROM query") == [(golden,)]
    ranks = [r for (r,) in _rows(db, "SELECT rank FROM answer_context ORDER BY position")]
    assert ranks == [1, 0, 2, 3, 4]  # the metric's metric_args.ranks
    chunks = LAPTOP["context"]
    assert _run_by_text(db, "laptop") == [[chunks[1], chunks[0], *chunks[2:]]]
    conn = sqlite3.connect(db)
    try:
        (item,) = answer_items(conn)
    finally:
        conn.close()
    assert item.reference == golden and item.answer == ""
    assert [chunk.text for chunk in item.contexts] == chunks


def _request_rows(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return path


def test_one_string_context_and_row_ranks_with_ties(tmp_path: Path, cli: Cli) -> None:
    rows: list[dict[str, Any]] = [
        {"golden_answer": "Paris is the capital.", "context": "Paris is the capital of France."},
        {
            "golden_answer": "Water is H2O.",
            "context": ["Ice floats.", "Water is H2O.", "Steam is hot."],
            "metric_args": {"ranks": [2.5, 0, 0]},  # ties: the earlier chunk first
        },
    ]
    db, out, _ = _import(cli, tmp_path, f"s={_request_rows(tmp_path, rows)}")
    assert "Aegis format, 2 samples" in out
    assert _contexts_by_text(db) == [["Paris is the capital of France."], rows[1]["context"]]
    assert _run_by_text(db, "s") == [
        ["Paris is the capital of France."],
        ["Water is H2O.", "Steam is hot.", "Ice floats."],
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metric_args": {"ranks": [0, 1]}}, "field metric_args.ranks: must be one number per"),
        ({"metric_args": {"ranks": [0, "1", 2]}}, "field metric_args.ranks: must be one number"),
        ({"metric_args": [0, 1, 2]}, "field metric_args: must be an object, not a list"),
        ({"context": 3}, "field context: must be a list, not a number"),
    ],
)
def test_bad_request_rows_name_their_line(
    tmp_path: Path, cli: Cli, change: dict[str, Any], message: str
) -> None:
    rows = [{"golden_answer": "a", "context": ["x", "y", "z"]}]
    rows.append(rows[0] | change)
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--answers", f"s={_request_rows(tmp_path, rows)}")
    assert code == 2
    starts = [i for i, text in enumerate(path_lines(tmp_path / "rows.json"), 1) if text == "  {"]
    assert f"rows.json:{starts[1]}: {message}" in err, err


def path_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_the_metrics_ranks_must_fit_every_row(tmp_path: Path, cli: Cli) -> None:
    payload = json.loads(SEED_003.read_text(encoding="utf-8"))
    payload["evaluations"][0]["data"].append({"golden_answer": "b", "context": ["one", "two"]})
    path = tmp_path / "request.json"
    path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    lines = path.read_text().splitlines()
    metric = next(i for i, text in enumerate(lines, 1) if '"metric": "ctx_rank_prec"' in text) - 1
    row = next(i for i, text in enumerate(lines, 1) if '"golden_answer": "b"' in text) - 1
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--answers", f"s={path}")
    assert code == 2
    assert (
        f"request.json:{row}: field metric_args.ranks of the ctx_rank_prec metric on line"
        f" {metric}: must be one number per chunk, and row evaluations.0.data.1 (line {row})"
        " has 2 chunks"
    ) in err


def test_a_request_on_one_line_names_the_row_whose_chunks_do_not_fit(
    tmp_path: Path, cli: Cli
) -> None:
    # Seed 003's request as a client sends it, on one line: the line alone names no row.
    payload = json.loads(SEED_003.read_text(encoding="utf-8"))
    payload["evaluations"][0]["data"].append({"golden_answer": "b", "context": "one chunk"})
    path = tmp_path / "request.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--answers", f"s={path}")
    assert code == 2
    assert (
        "request.json:1: field metric_args.ranks of the ctx_rank_prec metric on line 1: must be"
        " one number per chunk, and row evaluations.0.data.1 (line 1) has 1 chunk\n"
    ) in err
