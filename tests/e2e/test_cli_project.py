"""``raglabel init``, ``import`` and ``export`` end to end on real project files.

What matters to a user: a project file is never clobbered, an import lands whole or not
at all, and labels survive export -> import -> export with nothing lost. Most commands
run in-process through ``main`` (a subprocess costs ~0.3 s); a few go through
``python -m raglabel`` so the real entry point and exit codes are covered too.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from cli_helpers import child

import raglabel.cli.main as cli_main
from raglabel.cli.main import build_parser, main
from raglabel.storage.grades import GradeEvent, record, undo_last
from raglabel.storage.project import APPLICATION_ID, Project

if TYPE_CHECKING:
    from cli_helpers import Cli

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
RUN_NAMES = ("bm25", "dense", "dense_rerank", "hybrid")
RUNS = {name: DEMO / "runs" / f"{name}.run" for name in RUN_NAMES}


# -- helpers ---------------------------------------------------------------------------


def ok(cli: Cli, *args: str | Path) -> str:
    code, out, err = cli(*args)
    assert code == 0, err
    return out


def snapshot(db: Path) -> list[str]:
    """Every table's content and the header pragmas: what 'unchanged' means for a project."""
    conn = sqlite3.connect(db)
    try:
        pragmas = [
            f"{name}={conn.execute(f'PRAGMA {name}').fetchone()[0]}"
            for name in ("application_id", "user_version")
        ]
        return pragmas + list(conn.iterdump())
    finally:
        conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def query(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def scalar(db: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    return query(db, sql, params)[0][0]


def current_grades(db: Path) -> set[tuple[str, str, str, int]]:
    return set(
        query(
            db,
            "SELECT q.ext_id, p.ext_id, a.name, c.grade FROM current_grade c"
            " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
            " JOIN annotator a ON a.id = c.annotator_id",
        )
    )


def qrels_lines(path: Path) -> list[str]:
    """Data lines with whitespace normalised, sorted like ``export --qrels`` sorts them."""
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [" ".join(fields) for fields in sorted(rows, key=lambda f: (f[0], f[2], int(f[3])))]


def trec_top(path: Path, depth: int) -> dict[tuple[str, str], int]:
    """(qid, docid) -> rank within each query's top ``depth``, in trec_eval order."""
    per_query: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text().splitlines():
        qid, _, docid, _, score, *_ = line.split()
        per_query.setdefault(qid, []).append((float(score), docid))
    top = {}
    for qid, entries in per_query.items():
        for rank, (_, docid) in enumerate(sorted(entries, reverse=True)[:depth], start=1):
            top[(qid, docid)] = rank
    return top


# -- shared projects (built once, copied per test) --------------------------------------


@pytest.fixture(scope="module")
def corpus_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty project holding the demo queries and passages."""
    db = tmp_path_factory.mktemp("master") / "corpus.db"
    assert main(["init", str(db)]) == 0
    args = ["import", str(db), "--queries", str(DEMO / "queries.jsonl")]
    assert main([*args, "--passages", str(DEMO / "passages.jsonl")]) == 0
    return db


@pytest.fixture(scope="module")
def labelled_master(tmp_path_factory: pytest.TempPathFactory, corpus_master: Path) -> Path:
    """The corpus plus the demo qrels (annotator alice) and all four runs."""
    db = tmp_path_factory.mktemp("master") / "labelled.db"
    shutil.copyfile(corpus_master, db)
    runs = [f"{name}={path}" for name, path in RUNS.items()]
    args = ["import", str(db), "--qrels", str(DEMO / "qrels.txt"), "--annotator", "alice"]
    assert main([*args, "--run", *runs]) == 0
    return db


@pytest.fixture
def corpus_db(tmp_path: Path, corpus_master: Path) -> Path:
    db = tmp_path / "project.db"
    shutil.copyfile(corpus_master, db)
    return db


@pytest.fixture
def labelled_db(tmp_path: Path, labelled_master: Path) -> Path:
    db = tmp_path / "labelled.db"
    shutil.copyfile(labelled_master, db)
    return db


def assert_unchanged(db: Path, before: list[str], before_digest: str) -> None:
    assert snapshot(db) == before
    # Nothing was committed, so SQLite had nothing to write back either.
    assert digest(db) == before_digest


# -- init ------------------------------------------------------------------------------


def test_init_creates_an_empty_project(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    result = child("init", db)
    assert result.returncode == 0, result.stderr
    assert str(db) in result.stdout
    assert scalar(db, "PRAGMA application_id") == APPLICATION_ID
    for table in ("query", "passage", "event", "current_grade", "run", "ranking", "candidate"):
        assert scalar(db, f"SELECT count(*) FROM {table}") == 0


def test_init_never_overwrites(tmp_path: Path, cli: Cli) -> None:
    db = tmp_path / "p.db"
    ok(cli, "init", db)
    ok(cli, "import", db, "--queries", DEMO / "queries.jsonl")
    before = digest(db)
    code, out, err = cli("init", db)
    assert code == 2 and out == ""
    assert (
        err.strip()
        == f"raglabel init: error: {db}: already exists; raglabel init never overwrites a file"
    )
    assert digest(db) == before
    assert scalar(db, "SELECT count(*) FROM query") == 30
    # A file that is not a project is not touched either.
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me\n")
    code, _, err = cli("init", notes)
    assert code == 2 and str(notes) in err
    assert notes.read_text() == "keep me\n"


def test_init_missing_directory(tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "dir" / "p.db"
    result = child("init", db)
    assert result.returncode == 2
    assert f"raglabel init: error: argument DB: {db}: folder " in result.stderr
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr
    assert not db.parent.exists()


# -- import: what lands ----------------------------------------------------------------


def test_import_demo_corpus_qrels_and_runs(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert child("init", db).returncode == 0
    result = child(
        "import",
        db,
        "--queries",
        DEMO / "queries.jsonl",
        "--passages",
        DEMO / "passages.jsonl",
        "--qrels",
        DEMO / "qrels.txt",
        "--annotator",
        "alice",
        "--run",
        *(f"{name}={path}" for name, path in RUNS.items()),
        "--depth",
        "10",
    )
    assert result.returncode == 0, result.stderr
    lines = {name: len(path.read_text().splitlines()) for name, path in RUNS.items()}
    assert result.stdout.splitlines() == [
        f"imported into {db}: queries added: 30, passages added: 303, grades: 617, runs: 4, "
        f"run entries: {sum(lines.values())}"
    ]
    assert scalar(db, "SELECT count(*) FROM query") == 30
    assert scalar(db, "SELECT count(*) FROM passage") == 303
    assert scalar(db, "SELECT count(*) FROM event") == 617
    assert scalar(db, "SELECT count(*) FROM current_grade") == 617
    assert query(db, "SELECT name FROM annotator") == [("alice",)]
    # The grade distribution the demo README documents (default grade map).
    assert dict(query(db, "SELECT grade, count(*) FROM current_grade GROUP BY grade")) == {
        5: 43,
        4: 62,
        3: 152,
        2: 255,
        1: 105,
    }
    runs = {name: (q, e) for name, q, e in query(db, "SELECT name, queries, entries FROM run")}
    # dense_rerank has no line for q23.
    assert runs == {name: (29 if name == "dense_rerank" else 30, lines[name]) for name in RUN_NAMES}
    per_run = dict(
        query(db, "SELECT r.name, count(*) FROM ranking k JOIN run r ON r.id = k.run_id GROUP BY 1")
    )
    assert per_run == {name: runs[name][0] for name in RUN_NAMES}

    # Candidates: every judged pair, plus each run's top 10; best_rank is the best rank
    # among the runs whose top 10 holds the pair (none for pairs only the qrels name).
    judged = {(q, d) for q, _, d, _ in (line.split() for line in (DEMO / "qrels.txt").open())}
    best: dict[tuple[str, str], int] = {}
    for path in RUNS.values():
        for pair, rank in trec_top(path, 10).items():
            best[pair] = min(rank, best.get(pair, rank))
    stored = {
        (q, p): rank
        for q, p, rank in query(
            db,
            "SELECT q.ext_id, p.ext_id, c.best_rank FROM candidate c"
            " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id",
        )
    }
    assert set(stored) == judged | set(best)
    assert {pair: rank for pair, rank in stored.items() if rank is not None} == best

    title, metadata = query(db, "SELECT title, metadata FROM passage WHERE ext_id = 'kb-0002'")[0]
    assert title == "Deleted file retention by plan"
    assert json.loads(metadata)["source"] == "help-center"


def test_run_rankings_are_stored_in_trec_eval_order(
    corpus_db: Path, tmp_path: Path, cli: Cli
) -> None:
    # Shuffled lines, a score tie and an exponent score: the stored ranking must be
    # score descending, ties by docid descending, and the name the file's stem.
    run = tmp_path / "mine.run"
    run.write_text(
        "q01 Q0 kb-0047 3 1E-1 t\n"
        "q01 Q0 kb-0002 1 0.5 t\n"
        "q01 Q0 kb-0056 2 0.3 t\n"
        "q01 Q0 kb-0072 9 0.3 t extra fields are ignored\n"
        "# a comment line\n"
        "\n"
        "q02 Q0 kb-0110 1 2.5e0 t\n"
    )
    out = ok(cli, "import", corpus_db, "--run", run, "--depth", "2")
    assert "runs: 1, run entries: 5" in out
    stored = query(
        corpus_db,
        "SELECT q.ext_id, k.passage_ids FROM ranking k JOIN query q ON q.id = k.query_id"
        " JOIN run r ON r.id = k.run_id WHERE r.name = 'mine' ORDER BY 1",
    )
    assert [(q, bytes(blob).decode().split("\n")) for q, blob in stored] == [
        ("q01", ["kb-0002", "kb-0072", "kb-0056", "kb-0047"]),
        ("q02", ["kb-0110"]),
    ]
    # --depth 2: only the top two of each query became candidates.
    assert scalar(corpus_db, "SELECT count(*) FROM candidate") == 3


def test_depth_limits_candidates(corpus_db: Path, cli: Cli) -> None:
    ok(cli, "import", corpus_db, "--run", RUNS["bm25"], "--depth", "3")
    rows = query(corpus_db, "SELECT query_id, best_rank FROM candidate ORDER BY 1, 2")
    assert len(rows) == 30 * 3
    assert {rank for _, rank in rows} == {1, 2, 3}
    assert scalar(corpus_db, "SELECT name FROM run") == "bm25"  # named after the file's stem


def test_qrels_with_grade_map_and_default_annotator(
    corpus_db: Path, tmp_path: Path, cli: Cli
) -> None:
    qrels = tmp_path / "binary.qrels"
    qrels.write_text("q01 0 kb-0002 1\nq01 0 kb-0047 0\nq02 0 kb-0110 1\n")
    out = ok(cli, "import", corpus_db, "--qrels", qrels, "--grade-map", "0:2,1:5")
    assert out.strip() == f"imported into {corpus_db}: grades: 3"
    # Without --annotator, the grades belong to the label file's name.
    assert current_grades(corpus_db) == {
        ("q01", "kb-0002", "binary.qrels", 5),
        ("q01", "kb-0047", "binary.qrels", 2),
        ("q02", "kb-0110", "binary.qrels", 5),
    }
    assert query(corpus_db, "SELECT DISTINCT origin FROM event") == [("qrels:binary.qrels",)]


def test_requeued_queries_count_as_updated(corpus_db: Path, tmp_path: Path, cli: Cli) -> None:
    queries = tmp_path / "queries.tsv"
    queries.write_text("q01\tA reworded first question\nq99\tA brand new question\n")
    out = ok(cli, "import", corpus_db, "--queries", queries)
    assert out.strip() == f"imported into {corpus_db}: queries added: 1, queries updated: 1"
    assert scalar(corpus_db, "SELECT text FROM query WHERE ext_id = 'q01'") == (
        "A reworded first question"
    )
    assert scalar(corpus_db, "SELECT count(*) FROM query") == 31


def make_beir(root: Path) -> Path:
    folder = root / "tinybeir"
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Backups", "text": "Vault keeps deleted files 90 days."},
        {"_id": "d2", "title": "", "text": "Restore an older version.", "metadata": {"a": 1}},
        {"_id": 3, "title": "Only a title", "text": ""},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    queries = [
        {"_id": "b1", "text": "How long are deleted files kept?"},
        {"_id": "b2", "text": "?"},
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nb1\td1\t2\nb1\td2\t0\nb2\t3\t1\n"
    )
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nb2\td2\t3\n")
    return folder


def test_import_beir_folder(corpus_db: Path, tmp_path: Path, cli: Cli) -> None:
    folder = make_beir(tmp_path)
    out = ok(cli, "import", corpus_db, "--beir", folder)
    assert out.strip() == (
        f"imported into {corpus_db}: queries added: 2, passages added: 3, grades: 3"
    )
    assert current_grades(corpus_db) == {
        ("b1", "d1", "tinybeir/test", 4),
        ("b1", "d2", "tinybeir/test", 2),
        ("b2", "3", "tinybeir/test", 3),
    }
    rows = query(
        corpus_db,
        "SELECT ext_id, title, text, metadata FROM passage WHERE ext_id IN ('d1','d2','3')",
    )
    assert sorted(rows) == [
        ("3", "Only a title", "Only a title", None),  # no text: the title stands in
        ("d1", "Backups", "Vault keeps deleted files 90 days.", None),
        ("d2", None, "Restore an older version.", '{"a": 1}'),
    ]
    # Another split, another annotator name; --annotator overrides it.
    out = ok(cli, "import", corpus_db, "--beir", folder, "--split", "dev", "--annotator", "eve")
    assert "queries updated: 2, passages updated: 3, grades: 1" in out
    assert ("b2", "d2", "eve", 5) in current_grades(corpus_db)


def test_import_samples(tmp_path: Path, cli: Cli) -> None:
    db = tmp_path / "samples.db"
    ok(cli, "init", db)
    out = ok(cli, "import", db, "--samples", f"rag={DEMO / 'samples.jsonl'}", "--depth", "5")
    assert out.splitlines() == [
        f"imported into {db}: samples: 30, queries added: 30, grades: 617, runs: 1, "
        "run entries: 300",
        "retrieved passages matched by: 300 id",
    ]
    assert query(db, "SELECT name, queries, entries FROM run") == [("rag", 30, 300)]
    assert scalar(db, "SELECT count(*) FROM candidate WHERE best_rank IS NOT NULL") == 30 * 5
    # metadata.k pins q04, q12 and q22 to 5; 27 queries carry an expected answer.
    assert query(db, "SELECT ext_id FROM query WHERE k IS NOT NULL ORDER BY 1") == [
        ("q04",),
        ("q12",),
        ("q22",),
    ]
    assert scalar(db, "SELECT count(*) FROM query WHERE expected_answer IS NOT NULL") == 30
    # No corpus was imported: retrieved passages get their text from the samples,
    # gold-only passages stay without text.
    samples = [json.loads(line) for line in (DEMO / "samples.jsonl").open()]
    retrieved = {r["id"]: r["text"] for s in samples for r in s["actual_output"]["retrieved"]}
    texts = dict(query(db, "SELECT ext_id, text FROM passage WHERE text IS NOT NULL"))
    assert texts == retrieved
    # The hybrid run's top 10 as stored equals the samples' order.
    ranking = query(
        db,
        "SELECT k.passage_ids FROM ranking k JOIN query q ON q.id = k.query_id"
        " WHERE q.ext_id = 'q04'",
    )[0][0]
    q04 = next(s for s in samples if s["id"] == "q04")
    assert bytes(ranking).decode().split("\n") == [
        r["id"] for r in q04["actual_output"]["retrieved"]
    ]
    # A bare file name names the run after its stem.
    out = ok(cli, "import", db, "--samples", DEMO / "samples.jsonl", "--annotator", "gold")
    assert ("samples",) in query(db, "SELECT name FROM run")


def test_samples_text_is_matched_to_known_passages(
    corpus_db: Path, tmp_path: Path, cli: Cli
) -> None:
    texts = dict(query(corpus_db, "SELECT ext_id, text FROM passage WHERE ext_id LIKE 'kb-00%'"))
    span = texts["kb-0047"][10:200]
    samples = tmp_path / "chunks.jsonl"
    retrieved = [
        {"text": texts["kb-0002"]},  # the whole passage
        {"text": span},  # a chunk cut out of one
        {"text": "A passage this corpus has never seen, about tape drives."},
        {"id": "kb-0056"},
    ]
    sample = {
        "id": "q01",
        "input": {"question": "How long does Vault keep deleted files on the Business plan?"},
        "expected_output": ["kb-0002"],
        "actual_output": {"retrieved": retrieved},
    }
    samples.write_text(json.dumps(sample) + "\n")
    out = ok(cli, "import", corpus_db, "--samples", samples)
    assert out.splitlines()[-1] == ("retrieved passages matched by: 1 exact, 1 id, 1 new, 1 span")
    ids = bytes(scalar(corpus_db, "SELECT passage_ids FROM ranking")).decode().split("\n")
    assert ids[:2] == ["kb-0002", "kb-0047"] and ids[3] == "kb-0056"
    assert (
        scalar(corpus_db, "SELECT text FROM passage WHERE ext_id = ?", (ids[2],))
        == (retrieved[2]["text"])
    )
    assert scalar(corpus_db, "SELECT count(*) FROM passage") == 304


# -- import: one transaction -----------------------------------------------------------


def big_run(path: Path, lines: int, bad_line: int | None = None) -> None:
    """A canonical TREC run of ``lines`` lines over the demo ids; ``bad_line`` has 4 fields."""
    rows = []
    for i in range(1, lines + 1):
        qid = f"q{(i - 1) % 30 + 1:02d}"
        docid = f"gen-{i}"
        rows.append(f"{qid} Q0 {docid} {i} {1.0 - i / (lines + 1):.9f} big")
    if bad_line is not None:
        rows[bad_line - 1] = "q07 Q0 gen-bad 17"
    path.write_text("\n".join(rows) + "\n")


def test_bad_line_near_the_end_of_a_huge_run_changes_nothing(
    labelled_db: Path, tmp_path: Path, cli: Cli
) -> None:
    run = tmp_path / "huge.run"
    big_run(run, 200_000, bad_line=199_990)
    more = tmp_path / "more.qrels"
    more.write_text("q01 0 kb-0900 2\n")
    before, before_digest = snapshot(labelled_db), digest(labelled_db)
    code, out, err = cli(
        "import",
        labelled_db,
        "--qrels",
        more,
        "--run",
        f"good={RUNS['bm25']}",
        f"huge={run}",
    )
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"raglabel import: error: {run}:199990: expected 6 fields "
        "(qid Q0 docid rank score tag), found 4"
    )
    assert_unchanged(labelled_db, before, before_digest)


def test_failure_while_writing_rolls_back_everything(
    labelled_db: Path, tmp_path: Path, cli: Cli
) -> None:
    # Everything parses; the second run's name is taken, which is found only while
    # writing, after new queries, grades and a 200,000-line run were already written
    # inside the transaction.
    run = tmp_path / "huge.run"
    big_run(run, 200_000)
    queries = tmp_path / "new.tsv"
    queries.write_text("q31\tA new question\n")
    more = tmp_path / "more.qrels"
    more.write_text("q31 0 kb-0002 3\n")
    before, before_digest = snapshot(labelled_db), digest(labelled_db)
    code, _, err = cli(
        "import",
        labelled_db,
        "--queries",
        queries,
        "--qrels",
        more,
        "--run",
        f"huge={run}",
        f"dense={RUNS['bm25']}",
    )
    assert code == 2
    assert err.strip() == (
        f"raglabel import: error: {RUNS['bm25']}: a run named 'dense' is already in the "
        "project (name it differently, or give --replace to overwrite it)"
    )
    assert_unchanged(labelled_db, before, before_digest)


def test_samples_run_name_taken_rolls_back_its_queries(
    labelled_db: Path, tmp_path: Path, cli: Cli
) -> None:
    # The samples writer upserts queries (new texts, expected answers) before it stores
    # its run; the name clash must undo those too.
    before, before_digest = snapshot(labelled_db), digest(labelled_db)
    code, _, err = cli("import", labelled_db, "--samples", f"hybrid={DEMO / 'samples.jsonl'}")
    assert code == 2 and "a run named 'hybrid' is already in the project" in err
    assert_unchanged(labelled_db, before, before_digest)


def test_bad_label_in_the_middle_of_qrels_changes_nothing(
    labelled_db: Path, tmp_path: Path, cli: Cli
) -> None:
    lines = (DEMO / "qrels.txt").read_text().splitlines()
    lines[299] = lines[299].rsplit(" ", 1)[0] + " relevant"
    qrels = tmp_path / "broken.qrels"
    qrels.write_text("\n".join(lines) + "\n")
    before, before_digest = snapshot(labelled_db), digest(labelled_db)
    code, _, err = cli(
        "import", labelled_db, "--qrels", qrels, "--annotator", "bob", "--run", RUNS["bm25"]
    )
    assert code == 2
    assert err.strip() == (
        f"raglabel import: error: {qrels}:300: relevance 'relevant' is not an integer"
    )
    assert_unchanged(labelled_db, before, before_digest)


def test_second_file_bad_after_a_good_first_changes_nothing(
    corpus_db: Path, tmp_path: Path, cli: Cli
) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"id": f"n{i}", "text": f"new {i}"}) + "\n" for i in range(50))
    )
    passages = tmp_path / "passages.jsonl"
    rows = [json.dumps({"id": f"np{i}", "text": f"passage {i}"}) for i in range(400)]
    rows[216] = json.dumps({"id": "np216", "title": "no text"})
    passages.write_text("\n".join(rows) + "\n")
    before, before_digest = snapshot(corpus_db), digest(corpus_db)
    code, _, err = cli("import", corpus_db, "--queries", queries, "--passages", passages)
    assert code == 2
    assert err.strip() == f"raglabel import: error: {passages}:217: field text: Field required"
    assert_unchanged(corpus_db, before, before_digest)


def test_replace_swaps_a_run(labelled_db: Path, cli: Cli) -> None:
    before_grades = current_grades(labelled_db)
    ok(cli, "import", labelled_db, "--run", f"bm25={RUNS['dense_rerank']}", "--replace")
    runs = {
        name: (src, e)
        for name, src, e in query(labelled_db, "SELECT name, source, entries FROM run")
    }
    assert len(runs) == 4
    assert runs["bm25"] == (str(RUNS["dense_rerank"]), runs["dense_rerank"][1])
    same = query(
        labelled_db,
        "SELECT count(*) FROM ranking a JOIN ranking b USING (query_id)"
        " JOIN run ra ON ra.id = a.run_id JOIN run rb ON rb.id = b.run_id"
        " WHERE ra.name = 'bm25' AND rb.name = 'dense_rerank' AND a.passage_ids = b.passage_ids",
    )
    # 29 queries, all identical to dense_rerank's; the old bm25 rankings are gone.
    assert same == [(29,)]
    assert scalar(labelled_db, "SELECT count(*) FROM ranking") == 30 + 29 + 30 + 29
    assert current_grades(labelled_db) == before_grades


# -- export round trips ----------------------------------------------------------------


def test_qrels_round_trip_with_the_default_map(corpus_db: Path, tmp_path: Path, cli: Cli) -> None:
    original = tmp_path / "orig.qrels"
    # The demo qrels plus a label below -1: the default map makes it junk (grade 1),
    # which comes back as -1.
    original.write_text((DEMO / "qrels.txt").read_text() + "q30\t0\tkb-unjudged\t-3\n")
    ok(cli, "import", corpus_db, "--qrels", original)
    out_path = tmp_path / "out.qrels"
    out = ok(cli, "export", corpus_db, "--qrels", out_path)
    assert out.strip() == f"wrote 618 judged pairs to {out_path}"
    exported = out_path.read_text().splitlines()
    assert exported == sorted(exported, key=lambda s: (s.split()[0], s.split()[2]))
    expected = [*qrels_lines(DEMO / "qrels.txt"), "q30 0 kb-unjudged -1"]
    assert exported == sorted(expected, key=lambda s: (s.split()[0], s.split()[2]))


def test_qrels_round_trip_with_a_custom_map(corpus_db: Path, tmp_path: Path, cli: Cli) -> None:
    original = tmp_path / "three.qrels"
    original.write_text("q01 0 kb-0002 2\nq01 0 kb-0047 0\nq02 0 kb-0110 1\nq02 0 kb-0002 0\n")
    ok(cli, "import", corpus_db, "--qrels", original, "--grade-map", "0:1,1:3,2:5")
    same = tmp_path / "same.qrels"
    ok(cli, "export", corpus_db, "--qrels", same, "--grade-map", "0:1,1:3,2:5")
    assert same.read_text().splitlines() == qrels_lines(original)
    # The default map reads the same grades back as TREC labels: 1 -> -1, 3 -> 1, 5 -> 3.
    default = tmp_path / "default.qrels"
    ok(cli, "export", corpus_db, "--qrels", default)
    assert default.read_text().splitlines() == [
        "q01 0 kb-0002 3",
        "q01 0 kb-0047 -1",
        "q02 0 kb-0002 -1",
        "q02 0 kb-0110 1",
    ]


@pytest.mark.parametrize(
    ("grade_map", "message"),
    [
        (
            "0:2,1:2,2:4,3:5",
            "--grade-map: grade 2 comes from labels 0 and 1; to write qrels, each grade "
            "needs one label",
        ),
        (
            "1:3,2:4",
            "--grade-map (1:3,2:4) gives no label for grade 1, 2, 5; name one for every "
            "grade in the project",
        ),
    ],
)
def test_export_qrels_with_an_unusable_map_writes_nothing(
    labelled_db: Path,
    tmp_path: Path,
    cli: Cli,
    grade_map: str,
    message: str,
) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "qrels.txt"
    code, out, err = cli("export", labelled_db, "--qrels", target, "--grade-map", grade_map)
    assert (code, out) == (2, "")
    assert err.strip() == f"raglabel export: error: {message}"
    assert list(out_dir.iterdir()) == []
    # An existing file at the target is left as it was.
    target.write_text("previous\n")
    code, _, _ = cli("export", labelled_db, "--qrels", target, "--grade-map", grade_map)
    assert code == 2 and target.read_text() == "previous\n"
    assert [p.name for p in out_dir.iterdir()] == ["qrels.txt"]


def test_export_failing_mid_write_leaves_no_partial_file(
    labelled_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A failure after some lines were written (here: the database read breaks after
    # three records) must leave neither half a file nor the temporary file behind.
    from raglabel.storage import export

    real = export._records

    def broken(
        conn: sqlite3.Connection, history: bool, annotator: str | None = None
    ) -> Iterator[dict[str, Any]]:
        for i, item in enumerate(real(conn, history, annotator)):
            if i == 3:
                raise sqlite3.OperationalError("disk I/O error")
            yield item

    monkeypatch.setattr(export, "_records", broken)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "labels.csv").write_text("old\n")
    for flag, name in (("--jsonl", "labels.jsonl"), ("--csv", "labels.csv")):
        with pytest.raises(sqlite3.OperationalError):
            main(["export", str(labelled_db), flag, str(out_dir / name)])
    assert sorted(p.name for p in out_dir.iterdir()) == ["labels.csv"]
    assert (out_dir / "labels.csv").read_text() == "old\n"


def test_export_to_a_directory_fails_cleanly(labelled_db: Path, tmp_path: Path, cli: Cli) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    code, _, err = cli("export", labelled_db, "--jsonl", target)
    assert code == 2
    assert f"raglabel export: error: argument --jsonl: {target}: is a folder" in err
    assert list(target.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "adir",
        "labelled.db",
    ]


NOTE = 'blurry, see "screenshot"\nline two — é'


def make_history(db: Path) -> None:
    """Grades, re-grades, clears, undos, skips, flags and a judge grade on top of the qrels."""
    with Project.open(db) as project:

        def act(**fields: Any) -> None:
            record(project, GradeEvent(**fields))

        bob: dict[str, Any] = {"annotator": "bob", "origin": "app"}
        act(
            query="q01",
            passage="kb-0002",
            grade=4,
            shown_at="2026-01-02T03:04:05.000+00:00",
            active_ms=1500,
            **bob,
        )
        act(query="q01", passage="kb-0002", grade=5, accepted_suggestion=True, **bob)  # re-grade
        act(query="q01", passage="kb-0047", grade=2, accepted_suggestion=False, **bob)
        act(query="q01", passage="kb-0047", kind="clear", **bob)
        assert undo_last(project, "bob", origin="app") is not None  # the clear: back to 2
        act(query="q02", passage="kb-0002", kind="skip", note=NOTE, **bob)
        act(query="q02", passage="kb-0110", kind="flag", note="near-duplicate of kb-0756", **bob)
        act(query="q03", passage="kb-0002", grade=3, **bob)
        assert undo_last(project, "bob") is not None  # the grade: nothing stands for q03
        act(query="q04", passage="kb-0197", kind="clear", **bob)  # a clear with nothing to clear
        act(query="q01", passage="kb-0002", annotator="alice", grade=1, origin="app")
        assert undo_last(project, "alice") is not None  # alice's override of her qrels grade
        act(query="q01", passage="kb-0047", annotator="alice", kind="clear")  # her qrels grade
        act(
            query="q04",
            passage="kb-0197",
            annotator="judge",
            grade=4,
            source="judge",
            model="m-1",
        )


@pytest.fixture(scope="module")
def history_master(tmp_path_factory: pytest.TempPathFactory, corpus_master: Path) -> Path:
    db = tmp_path_factory.mktemp("master") / "history.db"
    shutil.copyfile(corpus_master, db)
    qrels = str(DEMO / "qrels.txt")
    assert main(["import", str(db), "--qrels", qrels, "--annotator", "alice"]) == 0
    make_history(db)
    return db


def test_history_fixture_has_every_kind(history_master: Path) -> None:
    # Guards the round trips below: they prove little if the log lacks these.
    kinds = dict(query(history_master, "SELECT kind, count(*) FROM event GROUP BY kind"))
    assert kinds == {"grade": 617 + 6, "clear": 3, "undo": 3, "skip": 1, "flag": 1}


@pytest.mark.parametrize("flag", ["--jsonl", "--csv"])
def test_history_round_trip(
    history_master: Path,
    corpus_db: Path,
    tmp_path: Path,
    cli: Cli,
    flag: str,
) -> None:
    suffix = flag.lstrip("-")
    first, second = tmp_path / f"first.{suffix}", tmp_path / f"second.{suffix}"
    out = ok(cli, "export", history_master, flag, first, "--history")
    events = scalar(history_master, "SELECT count(*) FROM event")
    assert out.strip() == f"wrote {events} events to {first}"
    out = ok(cli, "import", corpus_db, "--labels", first)
    assert f"label events: {events}" in out
    ok(cli, "export", corpus_db, flag, second, "--history")
    # A fresh project numbers the events as the source did, so nothing may differ.
    assert second.read_text() == first.read_text()
    assert current_grades(corpus_db) == current_grades(history_master)


def read_records(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".csv":
        return list(csv.DictReader(io.StringIO(path.read_text())))
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("flag", ["--jsonl", "--csv"])
def test_history_round_trip_renumbers_events(
    history_master: Path,
    corpus_db: Path,
    tmp_path: Path,
    cli: Cli,
    flag: str,
) -> None:
    # The target already has two events (a grade and its undo), so every imported
    # event id shifts by two, and so must every undo target.
    with Project.open(corpus_db) as project:
        record(project, GradeEvent(query="q09", passage="kb-0002", annotator="carol", grade=2))
        assert undo_last(project, "carol") is not None
    suffix = flag.lstrip("-")
    first, second = tmp_path / f"first.{suffix}", tmp_path / f"second.{suffix}"
    ok(cli, "export", history_master, flag, first, "--history")
    ok(cli, "import", corpus_db, "--labels", first)
    ok(cli, "export", corpus_db, flag, second, "--history")
    old, new = read_records(first), read_records(second)
    assert [r["annotator"] for r in new[:2]] == ["carol", "carol"]

    def shifted(rec: dict[str, Any]) -> dict[str, Any]:
        rec = dict(rec)
        for key in ("event", "target"):
            if rec.get(key) not in (None, ""):
                rec[key] = type(rec[key])(int(rec[key]) + 2)
        return rec

    assert new[2:] == [shifted(r) for r in old]
    assert any(r["kind"] == "undo" for r in old)  # the targets were really exercised
    carol = {("q09", "kb-0002", "carol")}
    assert {g for g in current_grades(corpus_db) if g[:3] not in carol} == current_grades(
        history_master
    )


@pytest.mark.parametrize("flag", ["--jsonl", "--csv"])
def test_current_grades_round_trip(
    history_master: Path,
    corpus_db: Path,
    tmp_path: Path,
    cli: Cli,
    flag: str,
) -> None:
    suffix = flag.lstrip("-")
    first, second = tmp_path / f"first.{suffix}", tmp_path / f"second.{suffix}"
    out = ok(cli, "export", history_master, flag, first)
    grades = current_grades(history_master)
    assert out.strip() == f"wrote {len(grades)} grades to {first}"
    ok(cli, "import", corpus_db, "--labels", first)
    assert current_grades(corpus_db) == grades
    ok(cli, "export", corpus_db, flag, second)
    assert second.read_text() == first.read_text()
    # The times, origin and accepted-suggestion flag travel with each grade.
    rec = next(
        r
        for r in read_records(second)
        if (r["query"], r["passage"], r["annotator"]) == ("q01", "kb-0002", "bob")
    )
    assert str(rec["accepted_suggestion"]) == "True" and rec["origin"] == "app"


def eval_means(cli: Cli, *args: str | Path) -> dict[str, Any]:
    out = ok(cli, "eval", *args, "--format", "json", "-k", "5,10")
    report = json.loads(out)
    return {"runs": report["runs"], "fingerprint": report["labels"]["fingerprint"]}


def test_eval_from_exported_qrels_and_from_the_project_matches_the_files(
    labelled_db: Path, tmp_path: Path, cli: Cli
) -> None:
    runs = [f"{name}={path}" for name, path in RUNS.items()]
    exported = tmp_path / "exported.qrels"
    ok(cli, "export", labelled_db, "--qrels", exported)
    original = eval_means(cli, "--qrels", DEMO / "qrels.txt", "--run", *runs, "--per-query")
    assert set(original["runs"]) == set(RUN_NAMES)
    assert eval_means(cli, "--qrels", exported, "--run", *runs, "--per-query") == original
    # The project's stored runs and grades give the same numbers as the files.
    assert eval_means(cli, labelled_db, "--per-query") == original


# -- help ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("init", ["DB"]),
        (
            "import",
            [
                *("--queries", "--passages", "--qrels", "--grade-map", "--annotator", "--run"),
                *("--beir", "--split", "--samples", "--labels", "--depth", "--replace"),
            ],
        ),
        ("export", ["--qrels", "--jsonl", "--csv", "--grade-map", "--history"]),
        ("eval", ["--qrels", "--run", "--format", "--grade-map", "--per-query"]),
    ],
)
def test_project_commands_have_help(cli: Cli, command: str, options: list[str]) -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert command in commands
    code, out, _ = cli(command, "--help")
    assert code == 0
    assert out.startswith(f"usage: raglabel {command}")
    for option in options:
        assert option in out


def test_help_via_the_console_entry_point() -> None:
    result = child("--help")
    assert result.returncode == 0
    for command in ("init", "import", "export", "eval", "label", "demo"):
        assert command in result.stdout


@pytest.mark.parametrize("flag", ["--jsonl", "--csv"])
def test_merging_a_copys_log_adds_only_what_was_done_on_the_copy(
    history_master: Path, tmp_path: Path, cli: Cli, flag: str
) -> None:
    # Two hosts served copies of one project; each copy's whole log comes back.
    main_db, copy = tmp_path / "main.db", tmp_path / "copy.db"
    shutil.copyfile(history_master, main_db)
    shutil.copyfile(history_master, copy)
    with Project.open(copy) as project:
        record(project, GradeEvent(query="q09", passage="kb-0002", annotator="dora", grade=2))
        assert undo_last(project, "dora") is not None
        record(project, GradeEvent(query="q09", passage="kb-0002", annotator="dora", grade=5))
    with Project.open(main_db) as project:
        record(project, GradeEvent(query="q08", passage="kb-0002", annotator="erin", grade=3))
    log = tmp_path / f"copy.{flag.lstrip('-')}"
    ok(cli, "export", copy, flag, log, "--history")
    before = scalar(main_db, "SELECT count(*) FROM event")
    out = ok(cli, "import", main_db, "--labels", log)
    assert "label events: 3" in out
    shared = scalar(history_master, "SELECT count(*) FROM event")
    assert f"label events already in the log: {shared}" in out
    assert scalar(main_db, "SELECT count(*) FROM event") == before + 3
    # dora's undo points at her own grade in this file, renumbered.
    undo_target = scalar(
        main_db,
        "SELECT e.grade FROM event u JOIN event e ON e.id = u.target"
        " JOIN annotator a ON a.id = u.annotator_id WHERE u.kind = 'undo' AND a.name = 'dora'",
    )
    assert undo_target == 2
    merged = current_grades(main_db)
    assert {row for row in merged if row[2] != "erin"} == current_grades(copy)
    # Importing the same log again changes nothing.
    out = ok(cli, "import", main_db, "--labels", log)
    assert f"label events already in the log: {shared + 3}" in out
    assert scalar(main_db, "SELECT count(*) FROM event") == before + 3


def test_every_command_module_is_listed_with_the_commands_it_registers() -> None:
    # main() imports only the module of the command it was given, so the list must be
    # whole: a command module missing from it would be unreachable.
    modules = {path.stem for path in Path(cli_main.__file__).parent.glob("*_cmd.py")}
    assert set(cli_main.COMMANDS) == modules
    for names in cli_main.COMMANDS.values():
        for name in names:
            parser = cli_main.build_parser(name)
            registered = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
            assert set(registered) == set(names)
    whole = cli_main.build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(whole) == [name for names in cli_main.COMMANDS.values() for name in names]


def test_a_command_imports_no_other_commands_module() -> None:
    # Shared option pieces live in cli/options.py and cli/arguments.py, so each command's
    # --help loads its own module only (assign once reached into serve's, progress into
    # audit's). Each command in a fresh process, so no other has loaded anything first.
    # report takes eval's inputs and conventions whole, from eval's own module.
    also = {"report_cmd": ["raglabel.cli.eval_cmd"]}
    for module, names in cli_main.COMMANDS.items():
        code = (
            "import sys; from raglabel.cli.main import main\n"
            f"try:\n    main([{names[0]!r}, '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.endswith('_cmd')))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        loaded = sorted([f"raglabel.cli.{module}", *also.get(module, [])])
        assert out.stdout.strip().splitlines()[-1] == str(loaded), module


def test_an_annotator_for_files_that_name_their_own_is_refused(
    tmp_path: Path, cli: Cli, labelled_db: Path
) -> None:
    # Each line of a label file names its annotator: --annotator there was ignored, and
    # a lead filing a copy's labels under another name saw them imported as they were.
    labels = tmp_path / "labels.jsonl"
    ok(cli, "export", labelled_db, "--jsonl", labels)
    before = digest(labelled_db)
    code, out, err = cli("import", labelled_db, "--labels", labels, "--annotator", "dave")
    assert code == 2 and out == ""
    assert "--annotator names whose --qrels, --beir or --samples labels they are" in err
    assert digest(labelled_db) == before


@pytest.mark.parametrize("target", ["--jsonl", "--csv"])
@pytest.mark.parametrize("history", [False, True])
def test_export_of_one_annotators_grades_as_jsonl_or_csv(
    tmp_path: Path, cli: Cli, labelled_db: Path, target: str, history: bool
) -> None:
    # --annotator was read for qrels alone: a JSONL of one person's grades held everyone's.
    extra = ["--history"] if history else []
    with Project.open(labelled_db) as project:
        record(project, GradeEvent(query="q01", passage="kb-0002", annotator="bob", grade=2))
    out = tmp_path / f"bob{target.replace('--', '.')}"
    ok(cli, "export", labelled_db, target, out, "--annotator", "bob", *extra)
    if target == "--jsonl":
        rows = [json.loads(line) for line in out.read_text().splitlines()]
    else:
        rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [(r["query"], r["passage"], r["annotator"], int(r["grade"])) for r in rows] == [
        ("q01", "kb-0002", "bob", 2)
    ]
    everyone = tmp_path / f"all{target.replace('--', '.')}"
    ok(cli, "export", labelled_db, target, everyone, *extra)
    assert len(everyone.read_text().splitlines()) > len(rows) + 100


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--jsonl", "--annotator", "bbo"], "--annotator 'bbo': nobody of that name graded"),
        (["--csv", "--annotator", "bbo"], "--annotator 'bbo': nobody of that name graded"),
        (["--jsonl", "--policy", "max"], "--policy goes with --qrels"),
        (["--csv", "--grade-map", "0:1"], "--grade-map goes with --qrels"),
        (["--jsonl", "--fill-with-judge"], "--fill-with-judge goes with --qrels"),
        (
            ["--jsonl", "--suggestions", "--annotator", "alice"],
            "--annotator goes with --qrels, --jsonl or --csv grades, not --suggestions",
        ),
        (["--answer-grades", "--annotator", "alice"], "not --answer-grades"),
    ],
)
def test_export_options_of_another_kind_of_file_are_refused(
    tmp_path: Path, cli: Cli, labelled_db: Path, words: list[str], message: str
) -> None:
    # Each was read for one kind of file and left unread beside another, without a word.
    target = tmp_path / "out"
    code, out, err = cli("export", labelled_db, words[0], target, *words[1:])
    assert code == 2 and out == "", err
    assert message in err
    assert not target.exists()


def test_labels_naming_what_the_project_lacks_say_what_they_added(
    tmp_path: Path, cli: Cli, labelled_db: Path
) -> None:
    # From a new lead's tryout: a query, a passage and a misspelt person of a label file
    # were added to the project without a word.
    labels = tmp_path / "labels.jsonl"
    ok(cli, "export", labelled_db, "--jsonl", labels)
    lines = [json.loads(line) for line in labels.read_text().splitlines()]
    known = lines[0]
    odd = [
        known | {"annotator": "alcie"},
        known | {"query": "q99", "passage": "kb-9999", "annotator": "alice"},
    ]
    labels.write_text("".join(json.dumps(line) + "\n" for line in odd))
    code, out, err = cli("import", labelled_db, "--labels", labels)
    assert code == 0, err
    first, *rest = out.splitlines()
    assert first == (
        f"imported into {labelled_db}: label events: 2, queries added: 1, passages added: 1"
    )
    assert rest == ["new annotators, created: alcie"]
    assert err == ""  # one new query of two: counted, not yet a warning
    # A file whose queries are mostly new to the project is most likely another's.
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(known | {"query": "x1", "passage": "kb-0002"}) + "\n")
    code, out, err = cli("import", labelled_db, "--labels", other)
    assert code == 0, err
    assert out.splitlines() == [f"imported into {labelled_db}: label events: 1, queries added: 1"]
    assert "the label file 'other.jsonl': 1 of its 1 queries are new to a project" in err
    assert "added without text ('x1')" in err
