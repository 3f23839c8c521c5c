"""Which processes start numpy's BLAS threads (raglabel/cli/blas.py): none for a command
that multiplies no matrices and is its process's own, as the console script runs it;
a caller's process (``main(argv)``) and a setting of the user's are left alone. eval's
own rule, by its arguments, is in test_eval_process.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import start_serving
from test_serve_sessions import PATIENCE, app_pids, open_tab

from raglabel.cli.blas import PLAIN_COMMANDS
from raglabel.cli.main import COMMANDS

#: Prints the setting and the process's thread count as it exits (after the command).
REPORT_AT_EXIT = (
    "import atexit, os, sys\n"
    "def report():\n"
    "    status = open('/proc/self/status').read() if os.path.exists('/proc/self/status')"
    " else 'Threads: 0'\n"
    "    threads = status.split('Threads:')[1].split()[0]\n"
    "    print('blas', os.environ.get('OPENBLAS_NUM_THREADS'), threads,"
    " 'numpy' in sys.modules)\n"
    "atexit.register(report)\n"
    "import raglabel.cli.main as cli\n"
)


def _without_setting(**extra: str) -> dict[str, str]:
    child = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    child.update(extra)
    return child


def _export_reports(
    db: Path, tmp_path: Path, *, own: bool, env: dict[str, str]
) -> tuple[str, str, str]:
    argv = ["export", str(db), "--qrels", str(tmp_path / "qrels.txt")]
    call = f"sys.argv = ['raglabel', *{argv!r}]; cli.main()\n" if own else f"cli.main({argv!r})\n"
    out = subprocess.run(
        [sys.executable, "-c", REPORT_AT_EXIT + call],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert (tmp_path / "qrels.txt").stat().st_size > 0
    _, setting, threads, numpy_loaded = out.stdout.splitlines()[-1].split()
    assert numpy_loaded == "True"  # or the test would say nothing about its threads
    return setting, threads, numpy_loaded


def test_every_plain_command_is_a_command() -> None:
    commands = {name for names in COMMANDS.values() for name in names}
    assert commands >= PLAIN_COMMANDS


def test_export_as_its_own_process_loads_numpy_with_one_blas_thread(
    demo_db: Path, tmp_path: Path
) -> None:
    setting, threads, _ = _export_reports(demo_db, tmp_path, own=True, env=_without_setting())
    assert setting == "1"
    if sys.platform == "linux":
        assert threads == "1"  # set before numpy loaded, so OpenBLAS started none


def test_export_called_from_python_leaves_the_blas_threads(demo_db: Path, tmp_path: Path) -> None:
    setting, _, _ = _export_reports(demo_db, tmp_path, own=False, env=_without_setting())
    assert setting == "None"


def test_export_leaves_a_blas_setting_of_the_users(demo_db: Path, tmp_path: Path) -> None:
    env = _without_setting(OPENBLAS_NUM_THREADS="2")
    setting, _, _ = _export_reports(demo_db, tmp_path, own=True, env=env)
    assert setting == "2"


@pytest.mark.skipif(sys.platform != "linux", reason="reads the app's environment from /proc")
async def test_a_served_tabs_app_starts_with_one_blas_thread(demo_db: Path) -> None:
    # Ten tabs' apps share the host's cores: none of them starts threads that would spin.
    process, url = start_serving(demo_db, env=_without_setting())
    client = None
    try:
        client = await open_tab(demo_db, url, "alice")
        (app,) = app_pids(process.pid)
        environ = Path(f"/proc/{app}/environ").read_bytes().split(b"\0")
        assert b"OPENBLAS_NUM_THREADS=1" in environ
    finally:
        if client is not None:
            await client.close()
        process.terminate()
        process.wait(PATIENCE)
