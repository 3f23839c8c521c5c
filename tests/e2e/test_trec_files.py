"""The TREC package's one entry for files: it picks the reader by size, the small one
never loads polars, and an evaluation's source is what it reads (that both readers
agree is tests/e2e/test_readers_agree.py's)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from raglabel.analysis import sources
from raglabel.formats.trec import files


def _write(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    qrels = tmp_path / "qrels.txt"
    run = tmp_path / "run.txt"
    qrels.write_text(
        "".join(f"q{q} 0 d{d} {rng.randrange(4)}\n" for q in range(12) for d in range(0, 30, 3))
    )
    # Scores to two decimals tie now and then; q99 is not in the labels.
    lines = [
        f"q{q} Q0 d{d} {r + 1} {rng.randrange(100) / 100} t"
        for q in [*range(12), 99]
        for r, d in enumerate(rng.sample(range(40), 20))
    ]
    run.write_text("\n".join(lines) + "\n")
    return qrels, run


def test_small_inputs_take_the_numpy_reader_and_large_ones_polars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels, run = _write(tmp_path, 1)
    assert files.open_files(qrels, None, [run]).kind == "python"
    monkeypatch.setattr(files, "SMALL_INPUT_BYTES", qrels.stat().st_size + run.stat().st_size - 1)
    assert files.open_files(qrels, None, [run]).kind == "polars"
    assert files.open_files(qrels, None, [run], reader="python").kind == "python"


def test_an_evaluation_source_is_the_package_s_reading(tmp_path: Path) -> None:
    qrels, run = _write(tmp_path, 5)
    source = sources.open_files(qrels, None, [run], "polars")
    assert (source.kind, source.source) == ("polars", "human")
    assert source.own_runs() == [] and source.answers() is None
    ranked = source.run_file("r", run)
    direct = files.open_files(qrels, None, [run], reader="polars").run("r", run)
    assert np.array_equal(ranked.grades, direct.grades)
    # The reader's warnings are the source's (the query the labels lack).
    assert len(source.warnings) == 1 and "q99" in source.warnings[0]


def test_the_numpy_reader_never_loads_polars(tmp_path: Path) -> None:
    # Its reason to be: for a few megabytes, importing polars costs more than the work.
    qrels, run = _write(tmp_path, 2)
    code = (
        "import sys; from pathlib import Path; from raglabel.formats.trec.files import open_files;"
        f"f = open_files(Path({str(qrels)!r}), None, [Path({str(run)!r})]);"
        f"f.run('r', Path({str(run)!r})); f.fingerprint();"
        "print(f.kind, 'polars' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["python", "False"]
