"""The suite's tiers (docs/tests.md) hold: every test file is in one, the unit tier stays in
its own process, each snapshot folder sits beside its test file, and the static checks are
steps of .ci/run before the suite rather than tests inside it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from docs_pages import ROOT

TESTS = ROOT / "tests"
TIERS = ("unit", "app", "e2e")
#: The tools .ci/run runs as steps; a test naming one as a string would run it again.
STATIC_TOOLS = {"ruff", "mypy"}

#: What takes a unit test out of its process or onto the clock: a child process, a browser,
#: a sleep. Modules by name, calls by their dotted spelling.
OUT_OF_PROCESS_MODULES = {"subprocess", "multiprocessing", "browser", "concurrent.futures"}
OUT_OF_PROCESS_CALLS = {
    "time.sleep",
    "os.kill",
    "os.fork",
    "child",
    "start_serving",
    "cli_helpers.child",
    "cli_helpers.start_serving",
}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def out_of_process(source: str) -> list[str]:
    """Each import or call of ``source`` that a unit test may not make, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        found += [
            f"{node.lineno}: import {name}" for name in names if name in OUT_OF_PROCESS_MODULES
        ]
        if isinstance(node, ast.Call):
            called = _dotted(node.func)
            if called in OUT_OF_PROCESS_CALLS:
                found.append(f"{node.lineno}: {called}()")
        if isinstance(node, ast.arg) and node.arg == "judge_argv":
            found.append(f"{node.lineno}: the judge_argv fixture (a child process)")
    return found


def test_every_test_file_is_in_a_tier() -> None:
    loose = sorted(path.name for path in TESTS.glob("test_*.py"))
    assert loose == [], f"move {loose} into tests/unit, tests/app or tests/e2e (docs/tests.md)"
    for tier in TIERS:
        assert any((TESTS / tier).rglob("test_*.py")), tier
        assert not (TESTS / tier / "__init__.py").exists(), "a tier is a folder, not a package"


def test_the_unit_tier_stays_in_its_process() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{where}"
        for path in sorted((TESTS / "unit").rglob("test_*.py"))
        for where in out_of_process(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "move these files to tests/e2e (or the call out):\n" + "\n".join(
        offenders
    )


def test_the_unit_check_sees_each_way_out() -> None:
    source = (
        "import subprocess\nfrom multiprocessing import Process\nimport time\n"
        "from cli_helpers import child\n"
        "def test_x(judge_argv):\n    time.sleep(1)\n    child('eval')\n    asyncio.sleep(0)\n"
    )
    assert out_of_process(source) == [
        "1: import subprocess",
        "2: import multiprocessing",
        "5: the judge_argv fixture (a child process)",
        "6: time.sleep()",
        "7: child()",
    ]


def test_each_snapshot_sits_beside_its_test_file() -> None:
    folders = sorted(TESTS.rglob("__snapshots__"))
    assert folders, "the app tier's SVG snapshots and the report's .ambr are somewhere"
    for folder in folders:
        for entry in folder.iterdir():
            test = folder.parent / f"{entry.name.removesuffix('.ambr')}.py"
            assert test.is_file(), f"{entry.relative_to(ROOT)} has no {test.relative_to(ROOT)}"


def test_the_static_checks_run_before_the_suite_not_inside_it() -> None:
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    suite = next(index for index, step in enumerate(steps) if "&& .venv/bin/pytest" in step)
    for check in (
        ".venv/bin/ruff check raglabel tests benchmarks",
        ".venv/bin/ruff format --check raglabel tests benchmarks",
        ".venv/bin/mypy",
        ".venv/bin/lint-imports --no-cache",
    ):
        assert check in steps[:suite], f".ci/run must run {check!r} before the suite"
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.name == "test_tiers.py":  # names them to look for them
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tools = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in STATIC_TOOLS
        }
        assert not tools, f"{path.relative_to(ROOT)} runs {sorted(tools)} inside pytest"


def test_the_files_kept_one_at_a_time_exist() -> None:
    # A file moved or renamed would silently leave the group and time itself in parallel.
    from conftest import ONE_AT_A_TIME

    missing = sorted(name for name in ONE_AT_A_TIME if not (TESTS / name).is_file())
    assert missing == [], f"tests/conftest.py's ONE_AT_A_TIME names {missing}"


def test_ci_skips_compiling_only_where_bytecode_is_kept() -> None:
    # An install with --no-compile leaves each module to be compiled when first imported;
    # with PYTHONDONTWRITEBYTECODE set, every process of the suite would compile it again.
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    unset = steps.index("unset PYTHONDONTWRITEBYTECODE")
    lazy = [i for i, step in enumerate(steps) if "pip install" in step and "--no-compile" in step]
    assert lazy, ".ci/run installs without compiling (docs/tests.md)"
    assert all(unset < i for i in lazy), "unset PYTHONDONTWRITEBYTECODE before those installs"
    assert not [step for step in steps if "PYTHONDONTWRITEBYTECODE=" in step]


def test_the_suite_keeps_its_bytecode() -> None:
    # tests/conftest.py turns the writing of bytecode back on, for raglabel and for
    # pytest's rewritten test modules, such as this one, before any of them is imported.
    assert not sys.dont_write_bytecode
    rewritten = type(__loader__).__name__ == "AssertionRewritingHook"  # not under --assert=plain
    if rewritten and sys.pycache_prefix is None:
        kept = Path(__file__).parent / "__pycache__"
        assert list(kept.glob(f"{Path(__file__).stem}.*-pytest-*.pyc")), kept
