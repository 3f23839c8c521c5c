"""Every option of the project commands against absurd input: numbers that do not fit,
zero or negative where that means nothing, NaN and infinities, a folder where a file is
wanted, a missing file, an output nobody can write. Each is a usage error (exit 2) that
names the option, before anything is read or written; never a traceback, a hang or a
half-written file. Also: no option swallows the positional DB, and every ``--help``
shows each option's default."""

from __future__ import annotations

import argparse
import functools
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from raglabel.cli.main import build_parser, parse_args

if TYPE_CHECKING:
    from cli_helpers import Cli

URL = "http://127.0.0.1:9/v1"  # never reached: every case here stops before a request
JUDGE = ("--base-url", URL, "--model", "m", "--dry-run")
HUGE = str(10**30)
PAST_INT64 = str(2**63)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a small project (texts, one run, one grade) and its input files."""
    from raglabel.cli.main import main

    folder = tmp_path_factory.mktemp("base")
    (folder / "q.tsv").write_text("q1\thow do tidal turbines work\n")
    (folder / "p.jsonl").write_text(
        '{"id": "d1", "text": "Tidal turbines turn with the current."}\n'
        '{"id": "d2", "text": "Wind is not tide."}\n'
    )
    (folder / "a.run").write_text("q1 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\n")
    (folder / "qrels.txt").write_text("q1 0 d1 1\n")
    db = folder / "p.db"
    assert main(["init", str(db)]) == 0
    args = ["import", str(db), "--queries", str(folder / "q.tsv")]
    args += ["--passages", str(folder / "p.jsonl"), "--run", f"a={folder / 'a.run'}"]
    assert main([*args, "--qrels", str(folder / "qrels.txt")]) == 0
    return folder


@pytest.fixture
def work(base: Path, tmp_path: Path) -> Path:
    for item in base.iterdir():
        if item.is_file():
            shutil.copy(item, tmp_path / item.name)
    (tmp_path / "folder").mkdir()
    return tmp_path


def refused(
    cli: Cli, work: Path, checksum: Callable[[Path], str], args: list[str], *needles: str
) -> str:
    """Runs ``raglabel ARGS`` (``{w}`` stands for the work folder) and checks that it was
    refused with exit 2, naming ``needles``, changing nothing in the folder."""
    before = sorted(p.name for p in work.iterdir())
    project = checksum(work / "p.db")
    code, out, err = cli(*(a.replace("{w}", str(work)) for a in args))
    assert code == 2, (out, err)
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    assert sorted(p.name for p in work.iterdir()) == before
    assert checksum(work / "p.db") == project
    return err


# -- numbers ---------------------------------------------------------------------------

TOO_BIG = [
    ("judge", "--repeat", str(10**9)),
    ("judge", "--concurrency", str(10**9)),
    ("judge", "--max-attempts", str(10**9)),
    ("judge", "--max-tokens", HUGE),
    ("judge", "--depth", PAST_INT64),
    ("judge", "--limit", HUGE),
    ("judge", "--timeout", "1e300"),
    ("judge", "--rpm", "1e300"),
    ("judge", "--temperature", "3"),
    ("import", "--depth", PAST_INT64),
    ("import", "--depth", HUGE),
]
ZERO_OR_NEGATIVE = [
    ("judge", "--repeat", "0"),
    ("judge", "--repeat", "-1"),
    ("judge", "--concurrency", "0"),
    ("judge", "--max-attempts", "0"),
    ("judge", "--max-tokens", "0"),
    ("judge", "--depth", "0"),
    ("judge", "--limit", "-5"),
    ("judge", "--timeout", "0"),
    ("judge", "--timeout", "-1"),
    ("judge", "--rpm", "0"),
    ("judge", "--rpm", "1e-300"),
    ("judge", "--temperature", "-0.5"),
    ("import", "--depth", "0"),
    ("import", "--depth", "-3"),
]
NOT_FINITE = [
    (command, option, value)
    for command, option in (
        ("judge", "--timeout"),
        ("judge", "--rpm"),
        ("judge", "--temperature"),
    )
    for value in ("nan", "inf", "-inf")
]
NOT_A_NUMBER = [
    ("judge", "--repeat", "three"),
    ("judge", "--concurrency", "1e3"),
    ("judge", "--timeout", "soon"),
    ("import", "--depth", "2.5"),
    # Past Python's own limit on the digits int() reads.
    pytest.param("import", "--depth", "9" * 5000, id="import---depth-5000-digits"),
]


def _number_argv(command: str, option: str, value: str) -> list[str]:
    if command == "judge":
        return ["judge", "{w}/p.db", *JUDGE, f"{option}={value}"]
    return ["import", "{w}/p.db", "--run", "b={w}/a.run", f"{option}={value}"]


@pytest.mark.parametrize(("command", "option", "value"), TOO_BIG)
def test_numbers_past_the_cap(
    cli: Cli,
    work: Path,
    checksum: Callable[[Path], str],
    *,
    command: str,
    option: str,
    value: str,
) -> None:
    err = refused(cli, work, checksum, _number_argv(command, option, value), option)
    assert "at most" in err or "to " in err


@pytest.mark.parametrize(("command", "option", "value"), ZERO_OR_NEGATIVE)
def test_zero_and_negative_numbers(
    cli: Cli,
    work: Path,
    checksum: Callable[[Path], str],
    *,
    command: str,
    option: str,
    value: str,
) -> None:
    refused(cli, work, checksum, _number_argv(command, option, value), option)


@pytest.mark.parametrize(("command", "option", "value"), NOT_FINITE)
def test_nan_and_infinity(
    cli: Cli,
    work: Path,
    checksum: Callable[[Path], str],
    *,
    command: str,
    option: str,
    value: str,
) -> None:
    refused(cli, work, checksum, _number_argv(command, option, value), option, "finite")


@pytest.mark.parametrize(("command", "option", "value"), NOT_A_NUMBER)
def test_words_where_a_number_goes(
    cli: Cli,
    work: Path,
    checksum: Callable[[Path], str],
    *,
    command: str,
    option: str,
    value: str,
) -> None:
    refused(cli, work, checksum, _number_argv(command, option, value), option)


def test_an_ensemble_past_the_answer_cap_is_refused_before_planning(
    cli: Cli, work: Path, checksum: Callable[[Path], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from raglabel.cli import judge_cmd

    monkeypatch.setattr(judge_cmd, "MAX_ANSWERS", 3)
    args = ["judge", "{w}/p.db", *JUDGE, "--model", "m2", "--repeat", "2", "--include-graded"]
    refused(cli, work, checksum, args, "2 pairs x 2 model(s) x 2 repeat(s) = 8 answers")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["judge", "{w}/p.db", *JUDGE, "--model", " "], "--model"),
        (["import", "{w}/p.db", "--qrels", "{w}/qrels.txt", "--annotator", " "], "--annotator"),
        (["export", "{w}/p.db", "--qrels", "{w}/out.txt", "--annotator", ""], "--annotator"),
        (["import", "{w}/p.db", "--beir", "{w}/folder", "--split", "../../etc"], "--split"),
    ],
)
def test_empty_names_and_paths_posing_as_names(
    cli: Cli, work: Path, checksum: Callable[[Path], str], args: list[str], needle: str
) -> None:
    refused(cli, work, checksum, args, needle)


# -- files -----------------------------------------------------------------------------

FOLDER_FOR_A_FILE = [
    (["import", "{w}/p.db", "--queries", "{w}/folder"], "--queries"),
    (["import", "{w}/p.db", "--passages", "{w}/folder"], "--passages"),
    (["import", "{w}/p.db", "--qrels", "{w}/folder"], "--qrels"),
    (["import", "{w}/p.db", "--labels", "{w}/folder"], "--labels"),
    (["import", "{w}/p.db", "--run", "x={w}/folder"], "--run"),
    (["import", "{w}/p.db", "--samples", "{w}/folder"], "--samples"),
    (["import", "{w}/folder", "--run", "{w}/a.run"], "DB"),
    (["export", "{w}/p.db", "--qrels", "{w}/folder"], "--qrels"),
    (["export", "{w}/p.db", "--jsonl", "{w}/folder"], "--jsonl"),
    (["export", "{w}/p.db", "--csv", "{w}/folder"], "--csv"),
    (["export", "{w}/folder", "--csv", "{w}/out.csv"], "DB"),
    (["judge", "{w}/folder", *JUDGE], "DB"),
    (["judge", "{w}/p.db", *JUDGE, "--prompt", "{w}/folder"], "prompt"),
    (["init", "{w}/folder"], "DB"),
    (["backup", "{w}/folder", "{w}/copy.db"], "DB"),
    (["backup", "{w}/p.db", "{w}/folder"], "COPY"),
]


@pytest.mark.parametrize(("args", "option"), FOLDER_FOR_A_FILE)
def test_a_folder_where_a_file_goes(
    cli: Cli, work: Path, checksum: Callable[[Path], str], args: list[str], option: str
) -> None:
    refused(cli, work, checksum, args, option, "is a folder")


MISSING = [
    (["import", "{w}/p.db", "--queries", "{w}/nope.tsv"], "--queries"),
    (["import", "{w}/p.db", "--passages", "{w}/nope.jsonl"], "--passages"),
    (["import", "{w}/p.db", "--qrels", "{w}/nope.txt"], "--qrels"),
    (["import", "{w}/p.db", "--labels", "{w}/nope.jsonl"], "--labels"),
    (["import", "{w}/p.db", "--run", "x={w}/nope.run"], "--run"),
    (["import", "{w}/p.db", "--samples", "{w}/nope.jsonl"], "--samples"),
    (["import", "{w}/p.db", "--beir", "{w}/nope"], "nope"),
    (["import", "{w}/nope.db", "--run", "{w}/a.run"], "no such project file"),
    (["export", "{w}/nope.db", "--csv", "{w}/out.csv"], "no such project file"),
    (["judge", "{w}/nope.db", *JUDGE], "no such project file"),
    (["judge", "{w}/p.db", *JUDGE, "--prompt", "{w}/nope.txt"], "no such prompt file"),
    (["backup", "{w}/nope.db", "{w}/copy.db"], "no such project file"),
]


@pytest.mark.parametrize(("args", "needle"), MISSING)
def test_a_missing_file(
    cli: Cli, work: Path, checksum: Callable[[Path], str], args: list[str], needle: str
) -> None:
    refused(cli, work, checksum, args, needle)


UNWRITABLE = [
    # A path through a file can be written by nobody, root included.
    (["export", "{w}/p.db", "--qrels", "{w}/a.run/out.txt"], "--qrels", "is a file"),
    (["export", "{w}/p.db", "--jsonl", "{w}/nope/out.jsonl"], "--jsonl", "does not exist"),
    (["export", "{w}/p.db", "--csv", "{w}/a.run/out.csv"], "--csv", "is a file"),
    (["init", "{w}/a.run/new.db"], "DB", "is a file"),
    (["init", "{w}/nope/new.db"], "DB", "does not exist"),
    (["backup", "{w}/p.db", "{w}/a.run/copy.db"], "COPY", "is a file"),
    (["backup", "{w}/p.db", "{w}/nope/copy.db"], "COPY", "does not exist"),
    # Writing over the project itself (or its WAL) would destroy it.
    (["export", "{w}/p.db", "--qrels", "{w}/p.db"], "--qrels", "is the project file"),
    (["export", "{w}/p.db", "--jsonl", "{w}/./p.db"], "--jsonl", "is the project file"),
    (["export", "{w}/p.db", "--csv", "{w}/p.db-wal"], "--csv", "is the project file"),
]


@pytest.mark.parametrize(("args", "option", "why"), UNWRITABLE)
def test_an_output_that_cannot_be_written(
    cli: Cli,
    work: Path,
    checksum: Callable[[Path], str],
    *,
    args: list[str],
    option: str,
    why: str,
) -> None:
    refused(cli, work, checksum, args, option, why)


def test_init_where_sqlite_cannot_create_leaves_nothing(tmp_path: Path, cli: Cli) -> None:
    target = Path("/proc/raglabel-test.db")  # a folder no one may create files in
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc")
    code, _, err = cli("init", target)
    assert code == 2 and "cannot create the project file" in err and "Traceback" not in err
    assert not target.exists()


# -- a positional after an option's list -----------------------------------------------


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """raglabel's whole parser, built once for this module: parsing leaves a parser as it
    was, and building it (every command's options) costs 5 ms, twice per case below."""
    return build_parser()


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _value_for(action: argparse.Action, work: Path) -> str:
    """A value the option accepts."""
    if action.choices:
        return str(next(iter(action.choices)))
    for candidate in ("1", "5", str(work / "a.run"), str(work / "out.txt")):
        try:
            if action.type is not None and callable(action.type):
                action.type(candidate)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        return candidate
    raise AssertionError(f"no value found for {action.option_strings}")


REQUIRED = {
    "judge": ["--base-url", URL, "--model", "m"],
    "export": ["--qrels", "OUT"],
    "backup": ["COPY"],
    "report": ["-o", "OUT"],
    "audit": ["--sample", "1"],
    "assign": ["--list"],
}


def _db_cases() -> list[tuple[str, str]]:
    cases = []
    for name, sub in _subcommands().items():
        if not any(a.dest == "db" for a in sub._actions):
            continue
        for action in sub._actions:
            if action.option_strings and action.nargs != 0 and action.dest != "help":
                cases.append((name, action.option_strings[-1]))
    return cases


@pytest.mark.parametrize(("command", "option"), _db_cases())
def test_no_option_swallows_the_project_file(work: Path, command: str, option: str) -> None:
    parser = _parser()
    sub = _subcommands()[command]
    action = next(a for a in sub._actions if option in a.option_strings)
    db = str(work / "p.db")
    extra = [
        str(work / "out.txt") if w == "OUT" else str(work / "copy.db") if w == "COPY" else w
        for w in REQUIRED.get(command, [])
    ]
    if command == "export" and option in ("--qrels", "--jsonl", "--csv", "--answer-grades"):
        extra = []
    if command == "report" and option == "--output":
        extra = []
    if command == "assign" and option == "--annotators":
        extra = []
    args = parse_args(parser, [command, option, _value_for(action, work), db, *extra])
    assert args.db == db


def test_import_takes_the_project_after_several_runs(work: Path, cli: Cli) -> None:
    runs = [f"b={work / 'a.run'}", f"c={work / 'a.run'}"]
    code, out, err = cli("import", "--run", *runs, work / "p.db")
    assert code == 0, err
    assert "runs: 2" in out


def test_import_without_a_project_after_the_runs_says_so(work: Path, cli: Cli) -> None:
    code, _, err = cli("import", "--run", work / "a.run", work / "qrels.txt")
    assert code == 2 and "DB is missing" in err and "qrels.txt" in err


# -- help ------------------------------------------------------------------------------


def _shown_default(action: argparse.Action) -> bool:
    """Whether the option has a default worth showing: flags, empty lists and None
    have none."""
    default = action.default
    return (
        bool(action.option_strings)
        and action.nargs != 0
        and default not in (None, argparse.SUPPRESS)
        and default != []
    )


def _spelled(value: object) -> list[str]:
    if isinstance(value, float):
        return [f"{value:g}", str(value)]
    return [str(value)]


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_help_shows_the_defaults(cli: Cli, command: str) -> None:
    code, out, err = cli(command, "--help")
    assert code == 0, err
    assert "%%" not in out and "%(" not in out
    flat = " ".join(out.split())
    sub = _subcommands()[command]
    formatter = sub._get_formatter()
    missing = []
    for action in sub._actions:
        if not _shown_default(action):
            continue
        text = " ".join(formatter._expand_help(action).split()) if action.help else ""
        shown = any(f"(default: {v}" in text for v in _spelled(action.default))
        if not (shown and text in flat):
            missing.append(f"{action.option_strings[0]} (default {action.default!r}): {text!r}")
    assert not missing


def test_top_level_help_lists_every_command(cli: Cli) -> None:
    code, out, _ = cli("--help")
    assert code == 0 and "%%" not in out
    for command in _subcommands():
        assert re.search(rf"\b{command}\b", out)


@pytest.mark.parametrize("command", ["label", "serve"])
def test_the_app_commands_default_to_the_apps_own_cutoffs(command: str) -> None:
    # One home for the cutoffs the app cycles through: the commands that start it spell
    # the session's tuple, so changing it changes their default and their --help alike.
    from raglabel.cli.options import cutoffs_option
    from raglabel.session.cutoffs import DEFAULT_CUTOFFS

    args = parse_args(build_parser(command), [command, "project.db"])
    assert tuple(cutoffs_option(args.k)) == DEFAULT_CUTOFFS
