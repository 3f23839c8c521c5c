"""``agree``'s "suggestions accepted as they were: A of N": N counts only the grades that
could have taken a suggestion when they were given (in the app, with the judge's own
suggestion already there), not imported suggestions nor those made after the grade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raglabel.cli.main import main
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project
from raglabel.storage.ratings import load_ratings

BEFORE, GRADED, AFTER = (
    "2026-01-01T00:00:00.000+00:00",
    "2026-06-01T00:00:00.000+00:00",
    "2026-12-01T00:00:00.000+00:00",
)
# Per passage: where the grade came from, whether it took the suggestion, and the
# suggestion's source and time.
CASES = {
    "p1": ("app", None, "judge", BEFORE),  # seen: counts
    "p2": ("app", None, "judge", AFTER),  # came after the grade
    "p3": ("app", None, "imported", BEFORE),  # another judge's labels, imported
    "p4": ("qrels:nist", None, "judge", BEFORE),  # an imported grade
    "p5": ("app", True, "judge", BEFORE),  # seen and taken
}


def _project(tmp_path: Path) -> Path:
    (tmp_path / "q.tsv").write_text("q1\twhat stops a tidal turbine\n", encoding="utf-8")
    (tmp_path / "p.tsv").write_text("".join(f"{p}\ttext of {p}\n" for p in CASES))
    db = tmp_path / "a.db"
    assert main(["init", str(db)]) == 0
    argv = ["import", str(db), "--queries", str(tmp_path / "q.tsv")]
    assert main([*argv, "--passages", str(tmp_path / "p.tsv")]) == 0
    with Project.open(db) as project:
        for pid, (origin, accepted, _, _) in CASES.items():
            event = GradeEvent(
                query="q1",
                passage=pid,
                annotator="a",
                grade=3,
                origin=origin,
                graded_at=GRADED,
                accepted_suggestion=accepted,
            )
            record(project, event)
        with project.write():
            project.conn.execute(
                "INSERT INTO judgment_import (model, file, sha256, format, labels, imported_at)"
                " VALUES ('other', 'o.qrels', 'x', 'qrels', 1, ?)",
                (BEFORE,),
            )
            for pid, (_, _, source, created) in CASES.items():
                project.conn.execute(
                    "INSERT INTO suggestion (query_id, passage_id, model, grade, created_at,"
                    " source, import_id) VALUES (1, (SELECT id FROM passage WHERE ext_id = ?),"
                    " ?, 3, ?, ?, ?)",
                    (
                        pid,
                        "m" if source == "judge" else "other",
                        created,
                        source,
                        1 if source == "imported" else None,
                    ),
                )
    return db


def test_only_suggestions_that_could_be_seen_count(tmp_path: Path) -> None:
    with Project.open(_project(tmp_path)) as project:
        ratings = load_ratings(project.conn)
    assert (ratings.accepted, ratings.with_suggestion) == (1, 2)


def test_agree_says_what_it_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _project(tmp_path)
    capsys.readouterr()
    assert main(["agree", str(db), "--metrics", "none", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["accepted"], data["offered"], data["accepted_share"]) == (1, 2, 0.5)
    assert main(["agree", str(db), "--metrics", "none"]) == 0
    assert (
        "suggestions accepted as they were: 1 of 2 grades given in the app while a judge's"
        " suggestion was there to take (50%)" in " ".join(capsys.readouterr().out.split())
    )
