"""What ``raglabel eval`` does to its process when it is the process's own command:
settings that only a whole process may make, and only when nothing else shares it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _inputs(tmp_path: Path) -> list[str]:
    (tmp_path / "q").write_text("q1 0 a 3\nq1 0 b 0\nq2 0 c 1\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.4 t\nq2 Q0 c 1 0.9 t\n")
    return ["eval", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r")]


def _blas_after(argv: list[str], *, own: bool, env: dict[str, str] | None = None) -> list[str]:
    """OPENBLAS_NUM_THREADS and the process's thread count once eval has run, from a
    child that runs ``main`` as the console script does (``own``) or with arguments."""
    report = (
        "import os, sys; import raglabel.cli.main as cli\n"
        "def report(code=0):\n"
        "    status = open('/proc/self/status').read() if os.path.exists('/proc/self/status')"
        " else 'Threads: 0'\n"
        "    threads = status.split('Threads:')[1].split()[0]\n"
        "    print('blas', os.environ.get('OPENBLAS_NUM_THREADS'), threads)\n"
        "cli._exit_now = report\n"
    )
    call = f"sys.argv = ['raglabel', *{argv!r}]; cli.main()\n" if own else f"cli.main({argv!r})\n"
    code = report + call + ("" if own else "report()\n")
    child = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    child.update(env or {})
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=child
    )
    return [line for line in out.stdout.splitlines() if line.startswith("blas")][-1].split()


def test_plain_eval_loads_numpy_with_one_blas_thread(tmp_path: Path) -> None:
    # Its means multiply no matrices: the threads OpenBLAS starts would only spin.
    _, setting, threads = _blas_after(_inputs(tmp_path), own=True)
    assert setting == "1"
    if sys.platform == "linux":
        assert threads == "1"  # set before numpy loaded, so OpenBLAS started none


@pytest.mark.parametrize("extra", [["--ci"], ["--compare"]])
def test_resampling_eval_keeps_the_blas_threads(tmp_path: Path, extra: list[str]) -> None:
    # The bootstrap and the randomization tests multiply matrices.
    _, setting, _ = _blas_after([*_inputs(tmp_path), *extra, "--resamples", "10"], own=True)
    assert setting == "None"


def test_eval_leaves_a_blas_setting_of_the_users(tmp_path: Path) -> None:
    _, setting, _ = _blas_after(_inputs(tmp_path), own=True, env={"OPENBLAS_NUM_THREADS": "2"})
    assert setting == "2"


def test_eval_called_from_python_leaves_the_blas_threads(tmp_path: Path) -> None:
    # main(argv) shares its process with its caller, whose numpy may want the threads.
    _, setting, _ = _blas_after(_inputs(tmp_path), own=False)
    assert setting == "None"


def test_eval_pauses_the_collector_before_building_its_parser(tmp_path: Path) -> None:
    # Importing eval's module and building its parser ran collections too; from Python
    # code (main(argv)) the caller's collector is left running throughout.
    argv = _inputs(tmp_path)
    code = (
        "import gc, sys; import raglabel.cli.main as cli\n"
        "build = cli.build_parser\n"
        "def spy(command=None):\n"
        "    print('building', gc.isenabled())\n"
        "    return build(command)\n"
        "cli.build_parser = spy\n"
        "cli._exit_now = lambda code: None\n"
        f"cli.main({argv!r})\n"
        f"sys.argv = ['raglabel', *{argv!r}]; cli.main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    states = [line for line in out.stdout.splitlines() if line.startswith("building")]
    assert states == ["building True", "building False"]
