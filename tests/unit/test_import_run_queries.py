"""``import --run`` (and ``--qrels``) naming queries the project lacks: the summary counts
the queries and passages the import created, and a run whose queries are mostly new to a
project that has queries is a warning with examples, a case-only mismatch named so."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cli_helpers import Cli


def run_file(path: Path, qids: list[str], depth: int = 5) -> Path:
    lines = [
        f"{q} Q0 d-{q.lower()}-{r} {r} {10 - r} bm25" for q in qids for r in range(1, depth + 1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def count(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def project(tmp_path: Path, cli: Cli) -> Path:
    """Five queries with text, h1 to h5, and nothing else."""
    db = tmp_path / "p.db"
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"h{i}\tquestion number {i}\n" for i in range(1, 6)))
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--queries", queries)
    assert code == 0, err
    return db


def test_ids_that_differ_in_case_are_counted_and_named(
    project: Path, tmp_path: Path, cli: Cli
) -> None:
    run = run_file(tmp_path / "upper.run", [f"H{i}" for i in range(1, 6)])
    code, out, err = cli("import", project, "--run", run)
    assert code == 0, err
    assert out.strip() == (
        f"imported into {project}: runs: 1, run entries: 25, queries added: 5, passages added: 25"
    )
    assert "raglabel import: warning: run 'upper': 5 of its 5 queries are new" in err
    assert "a project that held 5" in err
    assert "added without text ('H1', 'H2', 'H3', ...), with 25 passages to grade" in err
    assert "ids differ from the project's only in case: H1 vs h1 (5 of the 5 new)" in err
    # The import still happened (a warning, not a refusal), as the summary says.
    assert count(project, "query") == 10
    assert count(project, "candidate") == 25


def test_one_id_in_other_case_is_named_even_when_most_are_known(
    project: Path, tmp_path: Path, cli: Cli
) -> None:
    # Four of five queries are the project's; the fifth is h5 spelled H5.
    run = run_file(tmp_path / "mixed.run", ["h1", "h2", "h3", "h4", "H5"])
    code, out, err = cli("import", project, "--run", run)
    assert code == 0, err
    assert "queries added: 1" in out
    assert "run 'mixed': 1 of its 5 queries are new" in err
    assert "ids differ from the project's only in case: H5 vs h5 (1 of the 1 new)" in err


def test_other_ids_are_named_without_a_case_remark(project: Path, tmp_path: Path, cli: Cli) -> None:
    run = run_file(tmp_path / "other.run", ["x1", "x2", "h1"])
    code, out, err = cli("import", project, "--run", run)
    assert code == 0, err
    assert "queries added: 2, passages added: 15" in out
    assert "run 'other': 2 of its 3 queries are new to a project that held 5" in err
    assert "('x1', 'x2')" in err
    assert "only in case" not in err


def test_a_run_over_the_projects_queries_says_nothing(
    project: Path, tmp_path: Path, cli: Cli
) -> None:
    # Two of five queries new is not most of them: counted, not warned about.
    run = run_file(tmp_path / "fine.run", ["h1", "h2", "h3", "n1", "n2"])
    code, out, err = cli("import", project, "--run", run)
    assert code == 0, err
    assert err == ""
    assert out.strip() == (
        f"imported into {project}: runs: 1, run entries: 25, queries added: 2, passages added: 25"
    )


def test_the_first_run_into_an_empty_project_says_nothing(tmp_path: Path, cli: Cli) -> None:
    db = tmp_path / "empty.db"
    assert cli("init", db)[0] == 0
    code, out, err = cli("import", db, "--run", run_file(tmp_path / "r.run", ["H1", "H2"]))
    assert code == 0, err
    assert err == ""
    assert "queries added: 2, passages added: 10" in out


def test_labels_for_queries_the_project_lacks_are_warned_of_too(
    project: Path, tmp_path: Path, cli: Cli
) -> None:
    qrels = tmp_path / "upper.qrels"
    qrels.write_text("H1 0 d1 1\nH2 0 d2 1\nH3 0 d3 0\n")
    code, out, err = cli("import", project, "--qrels", qrels, "--annotator", "ann")
    assert code == 0, err
    assert out.strip() == (
        f"imported into {project}: grades: 3, queries added: 3, passages added: 3"
    )
    assert "the labels of 'ann': 3 of its 3 queries are new to a project that held 5" in err
    assert "Label ids differ from the project's only in case: H1 vs h1" in err
    # Graded pairs are not holes: no "passages to grade" for labels.
    assert "to grade" not in err
