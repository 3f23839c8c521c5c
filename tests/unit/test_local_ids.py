"""Ids that only number one sample's (or one file's) items are never merged across them.

A retrieved id of a samples file that arrives with two texts numbers its samples' chunks:
``eval --samples`` on the file and ``import --samples`` then ``eval DB`` key those
passages alike (by text, gold following) and both say so. A question id that names
another question than the project's query of that id (RAGChecker numbers each file's
questions from 0) does not put a run under the wrong question.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli_helpers import Cli

EXAMPLES = Path(__file__).parents[1] / "data" / "answer_examples"
RAGCHECKER = EXAMPLES / "ragchecker_checking_inputs.json"

ALPHA = "alpha text about one"
GAMMA = "gamma text about two"


def _write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _samples(tmp_path: Path) -> Path:
    """Two samples numbering their chunks from "0": one id, two texts."""
    return _write_jsonl(
        tmp_path / "samples.jsonl",
        [
            {
                "id": "a",
                "input": {"question": "What is one?"},
                "expected_output": ["0"],
                "actual_output": {"retrieved": [{"id": "0", "text": ALPHA}]},
                "expected_answer": "alpha",
            },
            {
                "id": "b",
                "input": {"question": "What is two?"},
                "expected_output": ["0"],
                "actual_output": {
                    "retrieved": [{"id": "1", "text": "filler"}, {"id": "0", "text": GAMMA}]
                },
                "expected_answer": "gamma",
            },
        ],
    )


def _per_query(out: str) -> dict[str, dict[str, float]]:
    runs = json.loads(out)["runs"]
    (run,) = runs.values()
    per_query: dict[str, dict[str, float]] = run["per_query"]
    return per_query


def _rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _ranking_texts(db: Path, run: str) -> dict[str, list[str]]:
    """Each query's ranking in the run, as passage texts, by the query's own text."""
    texts = dict(_rows(db, "SELECT ext_id, text FROM passage"))
    out: dict[str, list[str]] = {}
    for question, ids in _rows(
        db,
        "SELECT q.text, r.passage_ids FROM ranking r JOIN run ON run.id = r.run_id"
        " JOIN query q ON q.id = r.query_id WHERE run.name = ?",
        run,
    ):
        out[question] = [texts[pid] for pid in bytes(ids).decode().split("\n")]
    return out


METRICS = ["--metrics", "containment@5,recall@2,ndcg@2,mrr", "--per-query", "--format", "json"]


def test_a_samples_file_and_its_import_agree_when_an_id_comes_with_two_texts(
    tmp_path: Path, cli: Cli
) -> None:
    path = _samples(tmp_path)
    code, out, err = cli("eval", "--samples", path, *METRICS)
    assert code == 0, err
    alone = _per_query(out)
    # Sample b's own chunk "0" holds its answer and is its gold passage.
    b = {name: round(value, 4) for name, value in alone["b"].items()}
    assert b == {"containment@5": 1.0, "recall@2": 1.0, "ndcg@2": 0.6309, "mrr": 0.5}
    warning = "1 retrieved passage id ('0') came with different texts"
    assert warning in err
    assert "2 expected_output entries naming such an id went with their sample's passage" in err

    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, out, err = cli("import", db, "--samples", path)
    assert code == 0, err
    assert warning in err
    assert "retrieved passages matched by: 3 new" in out
    code, out, err = cli("eval", db, *METRICS)
    assert code == 0, err
    assert _per_query(out) == alone
    # Sample b's ranking shows b's own text, not the text a gave "0" first.
    assert _ranking_texts(db, "samples") == {
        "What is one?": [ALPHA],
        "What is two?": ["filler", GAMMA],
    }


def test_samples_ids_that_keep_one_text_stay_passage_ids(tmp_path: Path, cli: Cli) -> None:
    # A retrieved id is a passage's name across samples while it keeps one text.
    path = _write_jsonl(
        tmp_path / "samples.jsonl",
        [
            {
                "id": qid,
                "input": {"question": f"question {qid}?"},
                "expected_output": ["d1"],
                "actual_output": {"retrieved": [{"id": "d1", "text": ALPHA}, {"text": GAMMA}]},
            }
            for qid in ("a", "b")
        ],
    )
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, out, err = cli("import", db, "--samples", path)
    assert code == 0, err
    assert "came with different texts" not in err
    assert "retrieved passages matched by: 1 exact, 2 id, 1 new" in out
    assert _rows(db, "SELECT text FROM passage WHERE ext_id = 'd1'") == [(ALPHA,)]


def test_a_samples_id_unlike_its_project_passage_is_matched_by_text(
    tmp_path: Path, cli: Cli
) -> None:
    db = tmp_path / "p.db"
    passages = _write_jsonl(tmp_path / "passages.jsonl", [{"id": "0", "text": ALPHA}])
    assert cli("init", db)[0] == 0
    assert cli("import", db, "--passages", passages)[0] == 0
    path = _samples(tmp_path)
    code, _, err = cli("import", db, "--samples", path)
    assert code == 0, err
    # Only b's "0" disagrees with the project's passage "0"; a's is that passage.
    assert "1 of their 2 retrieved passages, whose text is not the named passage's" in err
    assert _ranking_texts(db, "samples") == {
        "What is one?": [ALPHA],
        "What is two?": ["filler", GAMMA],
    }
    gold = _rows(
        db,
        "SELECT q.ext_id, p.text FROM candidate c JOIN query q ON q.id = c.query_id"
        " JOIN passage p ON p.id = c.passage_id ORDER BY q.ext_id, p.text",
    )
    assert ("b", GAMMA) in gold and ("b", ALPHA) not in gold


# -- question ids ------------------------------------------------------------------------


def _other_ragchecker(tmp_path: Path) -> Path:
    """RAGChecker's example with the same query ids and other questions and chunks."""
    doc = json.loads(RAGCHECKER.read_text(encoding="utf-8"))
    other = [
        ("Who painted the Mona Lisa?", "Leonardo da Vinci painted the Mona Lisa."),
        ("Where is the Louvre?", "The Louvre is a museum in Paris."),
    ]
    for result, (question, chunk) in zip(doc["results"], other, strict=True):
        result["query"] = question
        result["retrieved_context"] = [{"doc_id": "000", "text": chunk}]
    path = tmp_path / "art.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def test_ragcheckers_query_ids_of_another_file_name_other_questions(
    tmp_path: Path, cli: Cli
) -> None:
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, out, err = cli("import", db, "--answers", f"rivers={RAGCHECKER}")
    assert code == 0, err
    assert "questions matched: 2 added as new queries" in out
    code, out, err = cli("import", db, "--answers", f"art={_other_ragchecker(tmp_path)}")
    assert code == 0, err
    assert "questions matched: 2 added as new queries" in out
    assert (
        "answers of 'art': 2 query ids name another question than the project's query of"
        " that id (line 3: query_id '0' is 'Who painted the Mona Lisa?' here, \"What's the"
        " longest river in the world?\" in the project); RAGChecker's query_id numbers the"
        " questions of one file only"
    ) in err
    # Every sample sits under a query of its own question, and so does its run's ranking.
    samples = _rows(
        db,
        "SELECT s.question, q.text FROM answer_sample s JOIN query q ON q.id = s.query_id",
    )
    assert len(samples) == 4 and all(mine == theirs for mine, theirs in samples)
    assert _ranking_texts(db, "art") == {
        "Who painted the Mona Lisa?": ["Leonardo da Vinci painted the Mona Lisa."],
        "Where is the Louvre?": ["The Louvre is a museum in Paris."],
    }
    # The first file's questions keep their ids.
    assert _rows(db, "SELECT ext_id FROM query WHERE text LIKE '%river%'") == [("0",)]


def test_a_global_query_id_with_another_question_is_matched_by_text_with_a_warning(
    tmp_path: Path, cli: Cli
) -> None:
    db = tmp_path / "p.db"
    queries = _write_jsonl(
        tmp_path / "queries.jsonl",
        [{"id": "q1", "text": "What is one?"}, {"id": "q2", "text": "What is two?"}],
    )
    assert cli("init", db)[0] == 0
    assert cli("import", db, "--queries", queries)[0] == 0
    answers = _write_jsonl(
        tmp_path / "answers.jsonl",
        [
            # q1 names "What is one?" in the project: this sample is about two.
            {"query_id": "q1", "question": "what is TWO?", "answer": "2", "contexts": [GAMMA]},
            # No question: the id is all there is, and it is trusted.
            {"query_id": "q1", "question": None, "answer": "1", "contexts": [ALPHA]},
        ],
    )
    code, out, err = cli("import", db, "--answers", f"sys={answers}")
    assert code == 0, err
    assert "questions matched: 1 by id, 1 by text" in out
    assert (
        "answers of 'sys': 1 query id names another question than the project's query of that"
        " id (line 1: query_id 'q1' is 'what is TWO?' here, 'What is one?' in the project);"
        " an id that names two questions cannot say which one is meant"
    ) in err
    got = _rows(
        db,
        "SELECT s.line, q.ext_id FROM answer_sample s JOIN query q ON q.id = s.query_id"
        " ORDER BY s.line",
    )
    assert got == [(1, "q2"), (2, "q1")]
