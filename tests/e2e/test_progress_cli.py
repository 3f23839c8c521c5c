"""``raglabel progress`` as a child process (issue 30, section 2), on a project where three
annotators graded overlapping assigned queries (tests/progress_project.py, built through
storage functions): the JSON is the spec's document with every figure as computed from
the grades given; it reads while a writer holds the lock, and a project in a read-only
folder without writing a byte; a bad --depth is refused with exit 2; and the commands of
docs/guide/team.md's Progress section run as written."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cli_helpers import child, other_user
from docs_pages import examples
from progress_project import DEPTH, assert_close, build_team, expected

from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project


@pytest.fixture(scope="module")
def team_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_team(tmp_path_factory.mktemp("team") / "team.db").db


def test_the_json_is_the_spec_document_with_the_figures_of_the_grades_given(
    tmp_path: Path,
) -> None:
    team = build_team(tmp_path / "team.db")
    done = child("progress", team.db, "--depth", str(DEPTH), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    document = json.loads(done.stdout)
    # The shape docs/guide/team.md gives (the team spec's), key for key.
    assert set(document) == {"annotators", "queries", "to_adjudicate"}
    for figures in document["annotators"].values():
        assert set(figures) == {
            "assigned", "done", "grades", "grades_per_hour", "median_active_s", "alpha_with",
        }  # fmt: skip
    for counts in document["queries"].values():
        assert set(counts) == {"assigned", "done"}
    assert_close(document, expected(team))


def test_it_reads_while_a_writer_holds_the_lock(team_db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    with Project.open(team_db) as project:
        project.backup_to(copy)
    before = json.loads(child("progress", copy, "--format", "json").stdout)
    with Project.open(copy) as writer:
        # A grade mid-save holds the write lock: the read neither waits nor fails, and
        # sees the file as last committed.
        with pytest.raises(RollbackError), writer.write():
            writer.conn.execute("DELETE FROM current_grade")
            during = child("progress", copy, "--format", "json")
            assert during.returncode == 0, during.stderr
            assert json.loads(during.stdout) == before
            raise RollbackError
        record(writer, GradeEvent(query="q26", passage="kb-0047", annotator="carol", grade=4))
    after = json.loads(child("progress", copy, "--format", "json").stdout)
    assert after["annotators"]["carol"]["grades"] == before["annotators"]["carol"]["grades"] + 1


class RollbackError(Exception):
    """Leaves a write block without committing it."""


@pytest.mark.parametrize("depth", ["0", "x"])
def test_a_bad_depth_is_refused_with_exit_2(team_db: Path, depth: str) -> None:
    done = child("progress", team_db, "--depth", depth)
    assert done.returncode == 2
    assert done.stdout == "" and "--depth" in done.stderr


def test_a_project_in_a_read_only_folder_is_read_and_left_as_it_was(team_db: Path) -> None:
    # As test_read_only.py makes it honest: run as root, the command runs as ``nobody``,
    # whom the permission bits bind (skipped where that cannot be done, never faked).
    prefix = other_user()
    base = Path(tempfile.mkdtemp(prefix="raglabel-progress-ro-"))  # nobody can enter it
    folder = base / "ro"
    try:
        base.chmod(0o755)
        folder.mkdir()
        db = folder / "team.db"
        with Project.open(team_db) as project:
            project.backup_to(db)  # a whole file, no -wal beside it
        want = json.loads(child("progress", db, "--format", "json").stdout)
        for leftover in folder.glob("team.db-*"):
            leftover.unlink()
        db.chmod(0o444)
        folder.chmod(0o555)
        before = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in folder.iterdir()}
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "raglabel", "progress", str(db), "--format", "json"],
            capture_output=True,
            text=True,
            check=False,
            cwd=tempfile.gettempdir(),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == want
        assert f"raglabel progress: warning: {db} is read as it stands" in done.stderr
        after = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in folder.iterdir()}
        assert after == before
    finally:
        folder.chmod(0o755)
        shutil.rmtree(base)


def test_the_guide_s_progress_commands_run_as_written(tmp_path: Path) -> None:
    here = "tests/e2e/test_progress_cli.py"
    [commands] = examples("guide/team.md", here, "bash")
    [printed] = examples("guide/team.md", here, "text")
    team = build_team(tmp_path / "team.db")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    outputs = []
    for line in commands.splitlines():
        done = subprocess.run(
            shlex.split(line), capture_output=True, text=True, cwd=tmp_path, env=env, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        outputs.append(done.stdout)
    assert outputs[0] == printed
    assert_close(json.loads(outputs[1]), expected(team))
