"""A small project with the answers of two RAG systems, built through the CLI as a user
would, and judge answers about them written into the file: for the Answers view's tests
(and to try the view by hand: ``python tests/answers_project.py DB``)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from raglabel.cli.main import main
from raglabel.storage.answer_items import answer_items
from raglabel.storage.judgments import answer_text_key

QUERIES = [
    ("q1", "How do I reset my password?"),
    ("q2", "Can I export my data, and in which formats?"),
    ("q3", "How long are deleted files kept?"),
    ("q4", "Who can see a shared folder?"),  # no system answered it
]
PASSAGES = [
    ("d1", "Reset", "To reset your password, open Settings and choose Reset. A link is e-mailed."),
    ("d2", "Links", "The reset link expires after 24 hours; ask for a new one after that."),
    ("d3", "Export", "Export your data as CSV or JSON from the Account page."),
    ("d4", "Limits", "Exports are limited to 10,000 rows per file, e.g. for large projects."),
    ("d5", "Trash", "Deleted files stay in the trash for 30 days, then go for good."),
]
TEXT = {pid: text for pid, _, text in PASSAGES}

#: The careful system: every sentence is in its contexts.
ALPHA = [
    {
        "query_id": "q1",
        "question": QUERIES[0][1],
        "answer": "Open Settings and choose Reset. A reset link is e-mailed to you.\n"
        "The link expires after 24 hours.",
        "contexts": [{"id": "d1", "text": TEXT["d1"]}, {"id": "d2", "text": TEXT["d2"]}],
        "reference": ["Settings > Reset", "an e-mailed link", "the link lasts 24 hours"],
    },
    {
        "query_id": "q2",
        "question": QUERIES[1][1],
        "answer": "Yes: export as CSV or JSON from the Account page. Each file holds at most "
        "10,000 rows, e.g. split large projects.",
        "contexts": [{"id": "d3", "text": TEXT["d3"]}, {"id": "d4", "text": TEXT["d4"]}],
        "reference": "CSV or JSON, from the Account page, 10,000 rows per file.",
    },
    {
        "query_id": "q3",
        "question": QUERIES[2][1],
        "answer": "Deleted files stay in the trash for 30 days.",
        "contexts": [{"id": "d5", "text": TEXT["d5"]}],
    },
]
#: The inventive system: it adds details no context holds.
BETA = [
    {
        "query_id": "q1",
        "question": QUERIES[0][1],
        "answer": "Open Settings and choose Reset. You can also call support at 555-0100, "
        "open 24/7. The link lasts 3.5 days.",
        "contexts": [{"id": "d1", "text": TEXT["d1"]}],
        "reference": ["Settings > Reset", "an e-mailed link", "the link lasts 24 hours"],
    },
    {
        "query_id": "q2",
        "question": QUERIES[1][1],
        "answer": "Exports come as PDF, Excel or CSV. There is no limit on rows.",
        "contexts": [{"id": "d3", "text": TEXT["d3"]}],
        "reference": "CSV or JSON, from the Account page, 10,000 rows per file.",
    },
    {
        "query_id": "q3",
        "question": QUERIES[2][1],
        "answer": "Files are kept forever in the archive.",
        "contexts": [],
    },
]


def _jsonl(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def build(folder: Path, name: str = "answers.db") -> Path:
    """The project file: four queries, five passages, systems ``alpha`` and ``beta``."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / name
    queries = folder / "queries.tsv"
    queries.write_text("".join(f"{qid}\t{text}\n" for qid, text in QUERIES), encoding="utf-8")
    passages = _jsonl(
        folder / "passages.jsonl",
        [{"id": pid, "title": title, "text": text} for pid, title, text in PASSAGES],
    )
    alpha = _jsonl(folder / "alpha.jsonl", list(ALPHA))
    beta = _jsonl(folder / "beta.jsonl", list(BETA))
    for argv in (
        ["init", str(db)],
        ["import", str(db), "--queries", str(queries), "--passages", str(passages)],
        ["import", str(db), "--answers", f"alpha={alpha}", "--answers", f"beta={beta}"],
    ):
        code = main(argv)
        if code != 0:
            raise RuntimeError(f"raglabel {' '.join(argv)} exited {code}")
    return db


def add_judgments(db: Path, answers: list[tuple[str, str, str, str, int, int | None, str]]) -> None:
    """Judge answers ``(system, sample, criterion, model, repeat, grade, reason)``, about
    the texts as they are now; a grade of None is a failure with ``reason`` as its error."""
    conn = sqlite3.connect(db)
    try:
        items = {(i.system, i.sample_id): i for i in answer_items(conn)}
        with conn:
            conn.execute(
                "INSERT OR IGNORE INTO prompt (version, text, created_at)"
                " VALUES ('test', 'test', '2026-11-23')"
            )
            run = conn.execute(
                "INSERT INTO judge_run (endpoint, models, prompt_version, params, repeats,"
                " started_at, status, kind) VALUES ('http://127.0.0.1', '[]', 'test', '{}', 1,"
                " '2026-11-23', 'done', 'answers')"
            ).lastrowid
            for system, sample, criterion, model, repeat, grade, reason in answers:
                item = items[system, sample]
                conn.execute(
                    "INSERT INTO answer_judgment (run_id, system_id, sample_id, criterion,"
                    " model, repeat, cache_key, text_key, status, grade, reason, error,"
                    " attempts, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1,"
                    " '2026-11-23')",
                    (
                        run,
                        item.system_row,
                        sample,
                        criterion,
                        model,
                        repeat,
                        f"{system}/{sample}/{criterion}/{model}/{repeat}",
                        answer_text_key(item, criterion),
                        "ok" if grade is not None else "failed",
                        grade,
                        reason if grade is not None else None,
                        None if grade is not None else reason,
                    ),
                )
    finally:
        conn.close()


#: What the judge said about the test project: beta's q1 faithfulness by two models
#: and a repeat (lower median 2), a failure on alpha's q2 relevancy.
JUDGED = [
    ("alpha", "q1", "faithfulness", "m1", 0, 5, "every step is in the contexts"),
    ("alpha", "q1", "answer_relevancy", "m1", 0, 5, "answers the question"),
    ("beta", "q1", "faithfulness", "m1", 0, 2, "the phone number is invented"),
    ("beta", "q1", "faithfulness", "m1", 1, 3, "some details are invented"),
    ("beta", "q1", "faithfulness", "m2", 0, 1, "contradicts the contexts"),
    ("alpha", "q2", "answer_relevancy", "m1", 0, None, "reply was not JSON"),
]


if __name__ == "__main__":
    made = build(Path(sys.argv[1]).parent, Path(sys.argv[1]).name)
    add_judgments(made, JUDGED)
    print(made)
