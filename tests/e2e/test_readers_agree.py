"""The columnar (polars), array (numpy) and line (Python) readers are three
implementations of one contract; on any input they must produce the same arrays,
fingerprints and warnings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raglabel.formats.trec.align import Alignment
from raglabel.formats.trec.arrays import align_qrels, read_run_arrays
from raglabel.formats.trec.frames import read_qrels, read_run
from raglabel.formats.trec.rows import RowAlignment, read_qrels_rows, read_run_rows

ids = st.sampled_from(["a", "b", "B", "c", "d10", "d9", "\u00e9", "z#1", "\u4e2d"])
queries = st.sampled_from(["q1", "q2", "q10", "Q3"])


@st.composite
def trec_inputs(draw: st.DrawFn) -> tuple[str, str]:
    judged = draw(
        st.dictionaries(st.tuples(queries, ids), st.integers(-2, 3), min_size=1, max_size=25)
    )
    qrels = "".join(f"{q} 0 {d} {label}\n" for (q, d), label in judged.items())
    entries = draw(
        st.lists(
            # One-decimal scores make ties common; repeats and unknown queries occur.
            st.tuples(queries | st.just("unknown"), ids, st.integers(0, 5).map(lambda x: x / 10)),
            min_size=1,
            max_size=40,
        )
    )
    if draw(st.booleans()):
        entries.sort(key=lambda e: (e[0], -e[2]))
    run = "".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(entries))
    if draw(st.booleans()):
        # Now and then a file only the exact reader takes: a comment, a tab.
        run = draw(st.sampled_from(["# a comment\n", "", "\n"])) + run.replace(" t\n", "\tt\n", 1)
    return qrels, run


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(inputs=trec_inputs())
def test_polars_and_python_readers_agree(tmp_path: Path, inputs: tuple[str, str]) -> None:
    qrels_text, run_text = inputs
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text(qrels_text, encoding="utf-8")
    run_path.write_text(run_text, encoding="utf-8")

    columnar = Alignment.from_qrels(read_qrels(qrels_path))
    lines = RowAlignment.from_qrels(read_qrels_rows(qrels_path))
    assert columnar.labels.query_ids == lines.labels.query_ids
    np.testing.assert_array_equal(columnar.labels.counts, lines.labels.counts)
    assert columnar.fingerprint() == lines.fingerprint

    arrays = align_qrels(qrels_path, None)
    assert arrays.labels.query_ids == lines.labels.query_ids
    np.testing.assert_array_equal(arrays.labels.counts, lines.labels.counts)
    assert arrays.fingerprint() == lines.fingerprint

    a = columnar.run("r", read_run(run_path))
    b = lines.run("r", read_run_rows(run_path))
    c = arrays.run("r", *read_run_arrays(run_path))
    for other in (a, c):
        np.testing.assert_array_equal(other.offsets, b.offsets)
        np.testing.assert_array_equal(other.grades, b.grades)
    assert arrays.warnings == lines.warnings
    assert len(columnar.warnings) == len(lines.warnings)
    for mine, theirs in zip(columnar.warnings, lines.warnings, strict=True):
        assert mine.split("(")[0] == theirs.split("(")[0]


_BOTH_PATHS = """
import sys
import subprocess
import sys
from pathlib import Path
import numpy as np
import raglabel.analysis.sources as sources
from raglabel.storage.labels import LabelChoice

def stored(limit):
    sources.LARGE_RUN_ENTRIES = limit
    source = sources.ProjectSource(Path(sys.argv[1]), LabelChoice("median", None, False))
    return source.kind, source.own_runs()

columnar, rows = stored(0), stored(10**9)
for a, b in zip(columnar[1], rows[1], strict=True):
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.grades, b.grades)
print(sum(int((run.grades > 0).sum()) for run in rows[1]))
"""


def test_a_projects_runs_align_the_same_columnar_or_by_rows(tmp_path: Path) -> None:
    # Numeric query ids sort ("1", "10", "2") unlike the order they are stored in, which
    # once made the columnar path number them twice. A fresh process, because a
    # categorical series alive elsewhere in this one would hide that.
    from raglabel.cli.main import main

    qids = [str(q) for q in range(1, 25)]
    (tmp_path / "qrels").write_text(
        "".join(f"{q} 0 d{q}-{d} {d % 4}\n" for q in qids for d in range(6)), encoding="utf-8"
    )
    (tmp_path / "run").write_text(
        "".join(f"{q} Q0 d{q}-{d} {d} {10 - d} t\n" for q in qids for d in range(8)),
        encoding="utf-8",
    )
    db = tmp_path / "p.db"
    assert main(["init", str(db)]) == 0
    argv = ["import", str(db), "--qrels", str(tmp_path / "qrels"), "--annotator", "a"]
    assert main([*argv, "--run", f"r={tmp_path / 'run'}"]) == 0
    out = subprocess.run(
        [sys.executable, "-c", _BOTH_PATHS, str(db)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    # Every query's six labelled passages are in the run: 24 x 6 graded entries.
    assert int(out.stdout) == 24 * 6
