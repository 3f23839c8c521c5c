"""``raglabel label`` and ``raglabel demo``: the options handed to the app, and every refusal.

The app itself is replaced by a fake ``raglabel.tui.app`` module that records the
``AppOptions`` it is started with, so these tests need neither Textual nor a terminal.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from raglabel.cli.main import build_parser
from raglabel.metrics.config import MetricConfig
from raglabel.session.options import AppOptions
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No key file, annotator or terminal setting of the developer's leaks in."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for variable in ("RAGLABEL_KEYS", "RAGLABEL_ANNOTATOR", "USER"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("RAGLABEL_ALLOW_NO_TTY", "1")


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[AppOptions]:
    """The options of every app start, in order; the fake app exits with code 0."""
    calls: list[AppOptions] = []

    def run_app(options: AppOptions) -> int:
        calls.append(options)
        return 0

    fake = types.ModuleType("raglabel.tui.app")
    fake.__dict__["run_app"] = run_app
    monkeypatch.setitem(sys.modules, "raglabel.tui.app", fake)
    return calls


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "project.db"
    Project.create(path).close()
    return path


def label(cli: Cli, started: list[AppOptions], *args: str | Path) -> AppOptions:
    code, _, err = cli("label", *args)
    assert code == 0, err
    assert len(started) == 1
    return started.pop()


def refused(cli: Cli, started: list[AppOptions], *args: str | Path) -> str:
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert started == []
    return err


# -- raglabel label ----------------------------------------------------------------------


def test_defaults(cli: Cli, started: list[AppOptions], db: Path) -> None:
    assert label(cli, started, db) == AppOptions(
        project=db,
        annotator="annotator",
        keymap={},
        cutoffs=(5, 10, 20),
        blind=True,
        adjudicate=False,
        config=MetricConfig(),
        # No name given anywhere: the app is told to say so as it opens.
        notices=(
            "grading as 'annotator': $RAGLABEL_ANNOTATOR and $USER are empty (choose a name"
            " with --annotator NAME, or set $RAGLABEL_ANNOTATOR)",
        ),
    )


def test_annotator_from_option_and_environment(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("USER", "zoe")
    assert label(cli, started, db).annotator == "zoe"
    monkeypatch.setenv("RAGLABEL_ANNOTATOR", "alice")
    assert label(cli, started, db).annotator == "alice"
    assert label(cli, started, db, "--annotator", "bob").annotator == "bob"
    # A blank variable counts as unset.
    monkeypatch.setenv("RAGLABEL_ANNOTATOR", " ")
    assert label(cli, started, db).annotator == "zoe"


@pytest.mark.parametrize("name", ["", "  "])
def test_empty_annotator_is_refused(
    cli: Cli, started: list[AppOptions], db: Path, name: str
) -> None:
    err = refused(cli, started, "label", db, "--annotator", name)
    assert err == "raglabel label: error: --annotator must not be empty\n"


@pytest.mark.parametrize(
    ("text", "cutoffs"),
    [("10", (10,)), ("20,5", (20, 5)), ("5, 10,5,1", (5, 10, 1))],
)
def test_cutoffs_keep_their_order(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    text: str,
    cutoffs: tuple[int, ...],
) -> None:
    # The first is the K the app starts with, so the order given is kept.
    assert label(cli, started, db, "-k", text).cutoffs == cutoffs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5,x", "-k: 'x' is not an integer"),
        ("5,,10", "-k: '' is not an integer"),
        ("0", "-k: cutoffs must be at least 1, got 0"),
        ("10,-5", "-k: cutoffs must be at least 1, got -5"),
        ("2.5", "-k: '2.5' is not an integer"),
    ],
)
def test_bad_cutoffs(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    text: str,
    message: str,
) -> None:
    assert refused(cli, started, "label", db, "-k", text) == f"raglabel label: error: {message}\n"


def test_blind_and_adjudicate(cli: Cli, started: list[AppOptions], db: Path) -> None:
    everyone = label(cli, started, db, "--all-annotators")
    assert (everyone.blind, everyone.adjudicate) == (False, False)
    lead = label(cli, started, db, "--adjudicate", "--annotator", "lead")
    # Settling a disagreement takes seeing everyone's grades.
    assert (lead.blind, lead.adjudicate, lead.annotator) == (False, True, "lead")


def test_conventions(cli: Cli, started: list[AppOptions], db: Path) -> None:
    options = label(
        cli,
        started,
        db,
        *("--alpha", "0.5", "--cap4", "2", "--cap3", "0.5"),
        *("--harm-threshold", "1", "--relevance-threshold", "3"),
        *("--gain-map", "1:0,2:0,3:1,4:2,5:4"),
    )
    assert options.config == MetricConfig.from_fields(
        {
            "alpha": 0.5,
            "cap4": 2.0,
            "cap3": 0.5,
            "harm_threshold": 1,
            "relevance_threshold": 3,
            "gain_map": {1: 0.0, 2: 0.0, 3: 1.0, 4: 2.0, 5: 4.0},
        }
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "-1"], "--alpha: Input should be greater than or equal to 0"),
        # A grade option is checked as the command line is read: usage line, and the
        # wording of every whole-number option.
        (
            ["--harm-threshold", "6"],
            "argument --harm-threshold: must be a whole number from 1 to 5, got 6",
        ),
    ],
)
def test_bad_conventions(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    args: list[str],
    message: str,
) -> None:
    assert refused(cli, started, "label", db, *args).endswith(f"raglabel label: error: {message}\n")


def test_bad_gain_map(cli: Cli, started: list[AppOptions], db: Path) -> None:
    err = refused(cli, started, "label", db, "--gain-map", "nonsense")
    assert err.startswith("raglabel label: error: ") and "nonsense" in err


def test_key_file(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text('[keys]\nundo = "u,ctrl+z"\nfilter = ["/"]\n')
    assert label(cli, started, db, "--keys", keys).keymap == {
        "undo": "u,ctrl+z",
        "filter": "slash",
    }
    monkeypatch.setenv("RAGLABEL_KEYS", str(keys))
    assert label(cli, started, db).keymap == {"undo": "u,ctrl+z", "filter": "slash"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[keys]\nundoo = "z"\n', ":2: keys.undoo: unknown binding 'undoo'; valid ids: "),
        ('[keys]\nundo = "x"\n', ": key 'x' is bound to both 'clear' and 'undo'"),
        ("[keys\n", ":1: is not valid TOML: "),
    ],
)
def test_key_file_errors_name_the_file(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    text: str,
    message: str,
) -> None:
    keys = db.parent / "my keys.toml"
    keys.write_text(text)
    err = refused(cli, started, "label", db, "--keys", keys)
    assert err.startswith(f"raglabel label: error: {keys}{message}")


def test_missing_key_file(cli: Cli, started: list[AppOptions], db: Path, tmp_path: Path) -> None:
    err = refused(cli, started, "label", db, "--keys", tmp_path / "absent.toml")
    assert err == f"raglabel label: error: {tmp_path / 'absent.toml'}: no such key file\n"


def test_project_problems_stop_before_the_app(
    cli: Cli, started: list[AppOptions], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.db"
    err = refused(cli, started, "label", missing)
    assert err == (
        f"raglabel label: error: {missing}: no such project file (create one with raglabel init)\n"
    )
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, just text that is long enough to have a header\n" * 20)
    assert "is not a SQLite database" in refused(cli, started, "label", notes)


def test_newer_project_is_refused(cli: Cli, started: list[AppOptions], db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    assert "was written by a newer raglabel" in refused(cli, started, "label", db)


def test_the_apps_exit_code_is_the_commands(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys.modules["raglabel.tui.app"], "run_app", lambda options: 3)
    assert cli("label", db)[0] == 3


def test_no_terminal_is_refused(
    cli: Cli,
    started: list[AppOptions],
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAGLABEL_ALLOW_NO_TTY")
    # Under pytest neither stdin nor stdout is a terminal.
    err = refused(cli, started, "label", db)
    assert err == (
        "raglabel label: error: needs a terminal: stdin and stdout must both be one "
        "(set RAGLABEL_ALLOW_NO_TTY=1 to start anyway)\n"
    )
    monkeypatch.setenv("RAGLABEL_ALLOW_NO_TTY", "0")
    assert "needs a terminal" in refused(cli, started, "label", db)


def test_no_terminal_through_the_entry_point(db: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(db.parent)}
    result = subprocess.run(
        [sys.executable, "-m", "raglabel", "label", str(db)],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert result.returncode == 2
    assert "raglabel label: error: needs a terminal" in result.stderr


# -- raglabel demo -----------------------------------------------------------------------


def first_queries(count: int) -> list[str]:
    lines = (DEMO / "queries.jsonl").read_text().splitlines()
    return [json.loads(line)["id"] for line in lines if line.strip()][:count]


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_demo_builds_a_half_graded_project(
    cli: Cli, started: list[AppOptions], tmp_path: Path
) -> None:
    path = tmp_path / "demo.db"
    code, out, err = cli("demo", "--path", path, "--annotator", "dana", "-k", "10,5")
    assert code == 0, err
    assert out == ""
    [options] = started
    assert options == AppOptions(project=path, annotator="dana", cutoffs=(10, 5))
    assert f"your grades are in {path}" in err

    graded = first_queries(20)
    assert rows(path, "SELECT count(*) FROM query") == [(30,)]
    # The four retrieval runs, and the runs of the two answer systems' contexts.
    assert rows(path, "SELECT name FROM run ORDER BY name") == [
        ("bm25",),
        ("dense",),
        ("dense_rerank",),
        ("embellished",),
        ("grounded",),
        ("hybrid",),
    ]
    # Exactly the first 20 queries (in file order) carry grades, all of them dana's.
    assert sorted(
        q
        for (q,) in rows(
            path, "SELECT DISTINCT q.ext_id FROM current_grade c JOIN query q ON q.id = c.query_id"
        )
    ) == sorted(graded)
    assert rows(
        path,
        "SELECT DISTINCT a.name FROM current_grade c JOIN annotator a ON a.id = c.annotator_id",
    ) == [("dana",)]
    # Their grades are the qrels', through the default TREC map.
    expected = set()
    for line in (DEMO / "qrels.txt").read_text().splitlines():
        qid, _, pid, rel = line.split()
        if qid in graded:
            expected.add((qid, pid, int(rel) + 2 if int(rel) >= 0 else 1))
    assert (
        set(
            rows(
                path,
                "SELECT q.ext_id, p.ext_id, c.grade FROM current_grade c"
                " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id",
            )
        )
        == expected
    )
    # Every query has candidates to grade, and the graded ones have holes: pooled run
    # entries nobody judged.
    per_query = dict(
        rows(
            path,
            "SELECT q.ext_id, count(*) FROM candidate c JOIN query q"
            " ON q.id = c.query_id GROUP BY q.ext_id",
        )
    )
    assert len(per_query) == 30 and min(per_query.values()) >= 15
    holes = rows(
        path,
        "SELECT count(*) FROM candidate c WHERE NOT EXISTS (SELECT 1 FROM current_grade g"
        " WHERE g.query_id = c.query_id AND g.passage_id = c.passage_id)",
    )[0][0]
    assert holes > 0


def test_demo_in_a_fresh_temporary_directory(
    cli: Cli,
    started: list[AppOptions],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, _, err = cli("demo")
    assert code == 0, err
    [options] = started
    project = options.project
    assert project.parent.parent == tmp_path
    assert project.parent.name.startswith("raglabel-demo-")
    assert project.is_file()
    assert options.annotator == "annotator"
    # The path is printed before the app starts and again after it exits.
    lines = err.splitlines()
    assert lines[0].startswith(f"demo project: {project} (30 queries, 20 graded")
    assert lines[-1] == f"your grades are in {project}"


def test_demo_refuses_an_existing_file(cli: Cli, started: list[AppOptions], tmp_path: Path) -> None:
    path = tmp_path / "mine.db"
    path.write_text("keep me\n")
    err = refused(cli, started, "demo", "--path", path)
    assert err == (
        f"raglabel demo: error: {path}: already exists; raglabel demo builds a fresh project\n"
    )
    assert path.read_text() == "keep me\n"


def test_demo_without_a_terminal_leaves_nothing_behind(
    cli: Cli,
    started: list[AppOptions],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAGLABEL_ALLOW_NO_TTY")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert "needs a terminal" in refused(cli, started, "demo")
    assert "needs a terminal" in refused(cli, started, "demo", "--path", tmp_path / "d.db")
    assert list(scratch.iterdir()) == [] and not (tmp_path / "d.db").exists()


def test_demo_option_errors(cli: Cli, started: list[AppOptions], tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    assert refused(cli, started, "demo", "--path", path, "-k", "x").endswith(
        "-k: 'x' is not an integer\n"
    )
    keys = tmp_path / "keys.toml"
    keys.write_text('[keys]\nnope = "z"\n')
    assert f"{keys}:2: keys.nope: unknown binding" in refused(
        cli, started, "demo", "--path", path, "--keys", keys
    )
    assert not path.exists()


def test_missing_corpus_is_a_clear_error(
    cli: Cli,
    started: list[AppOptions],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from raglabel.storage import demo

    def no_package(name: str) -> Any:
        raise ModuleNotFoundError(name)

    empty = tmp_path / "fixtures" / "demo"
    empty.mkdir(parents=True)
    (empty / "queries.jsonl").write_text("")
    monkeypatch.setattr(demo, "files", no_package)
    monkeypatch.setattr(demo, "_checkout_corpus", lambda: empty)
    path = tmp_path / "d.db"
    err = refused(cli, started, "demo", "--path", path)
    assert err == (
        "raglabel demo: error: the demo corpus is missing from this installation "
        "(passages.jsonl, qrels.txt, answers/grounded.jsonl, answers/embellished.jsonl, "
        f"answers/grades.jsonl, runs/*.run not found in {empty}); reinstall raglabel\n"
    )
    assert not path.exists()


def test_a_failed_build_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from raglabel.storage import demo

    def broken(*args: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(demo, "run_import", broken)
    path = tmp_path / "d.db"
    with pytest.raises(OSError, match="disk full"):
        demo.build_demo(path, "me")
    assert list(tmp_path.iterdir()) == []


def test_demo_corpus_is_found() -> None:
    from raglabel.storage.demo import demo_corpus

    corpus = demo_corpus()
    assert corpus.joinpath("queries.jsonl").read_bytes() == (DEMO / "queries.jsonl").read_bytes()
    assert sorted(run.name for run in corpus.joinpath("runs").iterdir()) == [
        "bm25.run",
        "dense.run",
        "dense_rerank.run",
        "hybrid.run",
    ]


# -- help and imports --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (
            "label",
            [
                *("DB", "--annotator", "--keys", "-k", "--all-annotators", "--adjudicate"),
                *("--alpha", "--cap4", "--cap3", "--harm-threshold", "--relevance-threshold"),
                "--gain-map",
            ],
        ),
        ("demo", ["--path", "--annotator", "--keys", "-k"]),
    ],
)
def test_help(cli: Cli, command: str, options: list[str]) -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert command in commands
    code, out, _ = cli(command, "--help")
    assert code == 0
    assert out.startswith(f"usage: raglabel {command}")
    for option in options:
        assert option in out


def test_help_does_not_load_textual() -> None:
    code = (
        "import sys; from raglabel.cli.main import main\n"
        "try:\n    main(['label', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('textual' in sys.modules, 'pydantic' in sys.modules, file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stderr.strip() == "False False"
