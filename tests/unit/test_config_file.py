"""``--config FILE``: the metric conventions in a TOML file, checked value by value, with
errors at their line; options on the command line win over it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cli_helpers import Cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def eval_with(cli: Cli, config: Path, *extra: str) -> tuple[int, str, str]:
    """``raglabel eval`` of the demo's bm25 run with ``--config config``."""
    run = f"bm25={FIXTURES / 'runs' / 'bm25.run'}"
    args = ["eval", "--qrels", FIXTURES / "qrels.txt", "--run", run, "--config", config]
    return cli(*args, *extra)


def eval_config(cli: Cli, config: Path, *extra: str) -> dict[str, object]:
    code, out, err = eval_with(cli, config, "--format", "json", *extra)
    assert code == 0, err
    report: dict[str, object] = json.loads(out)["config"]
    return report


def test_file_sets_conventions_and_options_win(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "raglabel.toml"
    config.write_text(
        "# project conventions\n[metrics]\nalpha = 0.5\ncap3 = 0.2\n"
        "base_utilities = { 5 = 1.0, 4 = 0.4, 3 = 0.1, 2 = 0.0, 1 = 0.0 }\n"
    )
    found = eval_config(cli, config)
    assert found["alpha"] == 0.5 and found["cap3"] == 0.2
    assert found["base_utilities"] == {"5": 1.0, "4": 0.4, "3": 0.1, "2": 0.0, "1": 0.0}
    assert eval_config(cli, config, "--alpha", "2")["alpha"] == 2.0


@pytest.mark.parametrize(
    ("body", "where", "words"),
    [
        (b"[metrics]\nalpha = -1\n", ":2:", "alpha: Input should be greater than or equal to 0"),
        (b"[metrics]\n\nbogus = 1\n", ":3:", "bogus: Extra inputs are not permitted"),
        (b"[metrics]\nalpha = \n", ":2:", "is not valid TOML"),
        (b"[other]\nx = 1\n", ":1:", "unknown table or setting 'other'"),
        (b"metrics = 3\n", ":1:", "metrics must be a table"),
        (b"[metrics]\nalpha = 1\x00\n", ":2:", "contains a NUL byte"),
        (b"[metrics]\n# caf\xe9\n", ":2:", "is not UTF-8 text"),
        (b'metrics = { alpha = "x" }\n', ":1:", "alpha: Input should be a valid number"),
        (b"[other]\n\n[metrics]\n", ":1:", "unknown table or setting 'other'"),
        (b'metrics.alpha = "inf"\n', ":1:", "alpha: Input should be a finite number"),
        (
            b"[metrics]\nharm_threshold = 2\ngain_map = { 5 = 3 }\n",
            ":3:",
            "gain_map: Value error, needs exactly the grades 1-5",
        ),
    ],
)
def test_bad_files_name_file_and_line(
    tmp_path: Path, cli: Cli, body: bytes, where: str, words: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_bytes(body)
    code, _, err = eval_with(cli, config)
    assert code == 2
    assert f"{config}{where} " in err and words in err, err


def test_missing_file(tmp_path: Path, cli: Cli) -> None:
    code, _, err = eval_with(cli, tmp_path / "nope.toml")
    assert code == 2 and "nope.toml: no such config file" in err
