"""Each strategy of the TREC reader (numpy columns, polars, polars in blocks of
queries) gives, on the same bytes, what the exact line reader read and ranked by the
plain rule (tests/trec_oracle.py) gives: labels, fingerprint, arrays and warnings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import trec_oracle
from examples import examples
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from raglabel.formats.maps import GradeMap
from raglabel.formats.trec.align import Alignment, NotInBlocks
from raglabel.formats.trec.arrays import align_qrels, read_run_table
from raglabel.formats.trec.blocks import QueryTooLargeError
from raglabel.formats.trec.frames import read_qrels, read_run, read_run_blocks
from raglabel.formats.trec.rows import read_qrels_exactly, read_run_exactly
from raglabel.formats.trec.table import RunTable
from raglabel.metrics.run import RankedRun

ids = st.sampled_from(["a", "b", "B", "c", "d10", "d9", "\u00e9", "z#1", "\u4e2d"])
queries = st.sampled_from(["q1", "q2", "q10", "Q3"])
# White space the quick parsers do not take: each file holding one goes to the exact
# reader, which splits on it as trec_eval does.
ODD_SEPARATORS = ["\t", "  ", " \t ", "\x0b", "\u00a0"]


@st.composite
def trec_inputs(draw: st.DrawFn) -> tuple[str, str]:
    judged = draw(
        st.dictionaries(st.tuples(queries, ids), st.integers(-2, 3), min_size=1, max_size=25)
    )
    qrels = "".join(f"{q} 0 {d} {label}\n" for (q, d), label in judged.items())
    entries = draw(
        st.lists(
            # One-decimal scores make ties common; repeats and unknown queries occur, and
            # scores that tie only as 32-bit floats.
            st.tuples(
                queries | st.just("unknown"),
                ids,
                st.integers(0, 5).map(lambda x: x / 10)
                | st.sampled_from([0.1 + 1e-12, 1e-9, -0.0, -0.5, -0.1 - 1e-12]),
            ),
            min_size=1,
            max_size=40,
        )
    )
    # Grouped by query and sorted by score (as runs are written), or in no order at all.
    if draw(st.booleans()):
        entries.sort(key=lambda e: (e[0], -e[2]))
    run = "".join(f"{q} Q0 {d} {i} {s!r} t\n" for i, (q, d, s) in enumerate(entries))
    if draw(st.booleans()):
        # A file only the exact reader takes: a comment, a blank line, odd white space,
        # carriage returns.
        odd = draw(st.sampled_from(ODD_SEPARATORS))
        run = draw(st.sampled_from(["# a comment\n", "", "\n"])) + run.replace(
            " t\n", odd + "t\n", 1
        )
        if draw(st.booleans()):
            run = run.replace("\n", "\r\n")
    if draw(st.booleans()):
        qrels = qrels.replace(" 0 ", draw(st.sampled_from(ODD_SEPARATORS)) + "0 ", 1)
    return qrels, run


def _same_arrays(ranked: RankedRun, expected: trec_oracle.Ranked) -> None:
    assert ranked.offsets.tolist() == expected.offsets()
    assert ranked.grades.tolist() == expected.flat()


@examples(150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inputs=trec_inputs(), marks=st.tuples(st.booleans(), st.booleans()))
def test_every_strategy_equals_the_exact_reader(
    tmp_path: Path, inputs: tuple[str, str], marks: tuple[bool, bool]
) -> None:
    qrels_text, run_text = inputs
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    # A byte order mark at a file's start is read as nothing: every strategy, the exact
    # reader among them, reads the file as the same text without it.
    qrels_path.write_text("\ufeff" * marks[0] + qrels_text, encoding="utf-8")
    run_path.write_text("\ufeff" * marks[1] + run_text, encoding="utf-8")
    plain_qrels, plain_run = tmp_path / "plain-qrels", tmp_path / "plain-run"
    plain_qrels.write_text(qrels_text, encoding="utf-8")
    plain_run.write_text(run_text, encoding="utf-8")

    exact_qrels = read_qrels_exactly(plain_qrels, GradeMap())
    assert read_qrels_exactly(qrels_path, GradeMap()) == exact_qrels
    labels = dict(
        zip(zip(exact_qrels.qids, exact_qrels.docids, strict=True), exact_qrels.grades, strict=True)
    )
    exact_run = read_run_exactly(plain_run)
    assert read_run_exactly(run_path) == exact_run
    expected = trec_oracle.rank(labels, "r", exact_run.qids, exact_run.docids, exact_run.scores)
    fingerprint = trec_oracle.fingerprint(exact_qrels.qids, exact_qrels.docids, exact_qrels.grades)
    counts = np.zeros((len(expected.query_ids), 6), dtype=np.int64)
    for (qid, _), grade in labels.items():
        counts[expected.query_ids.index(qid), grade] += 1

    arrays = align_qrels(qrels_path, None)
    columnar = Alignment.from_qrels(read_qrels(qrels_path))
    for aligned in (arrays, columnar):
        assert list(aligned.labels.query_ids) == expected.query_ids
        np.testing.assert_array_equal(aligned.labels.counts, counts)
        assert aligned.fingerprint() == fingerprint

    _same_arrays(arrays.run("r", read_run_table(run_path)), expected)
    assert arrays.warnings == expected.warnings
    _same_arrays(columnar.run("r", read_run(run_path)), expected)
    # polars names the repeats in its own order: the counts agree, the examples may not.
    assert [w.split("(")[0] for w in columnar.warnings] == [
        w.split("(")[0] for w in expected.warnings
    ]

    blocks = Alignment.from_qrels(read_qrels(qrels_path))
    try:
        in_blocks = blocks.run_in_blocks("r", read_run_blocks(run_path, 96))
    except (NotInBlocks, QueryTooLargeError):
        return  # refused: the file is read whole, as above
    _same_arrays(in_blocks, expected)
    assert blocks.warnings == expected.warnings


def test_ranking_without_scores_keeps_each_querys_list_order(tmp_path: Path) -> None:
    # Samples and a project's stored rankings come in rank order: only queries move,
    # repeats drop after their first place, and ``contains`` follows its rows.
    from raglabel.formats.trec.arrays import ArrayAlignment
    from raglabel.formats.trec.rows import QrelsRows
    from raglabel.formats.trec.table import as_text

    align = ArrayAlignment.from_rows(QrelsRows(["q2", "q1", "q1"], ["b", "a", "c"], [5, 3, 4]))
    qids = ["q2", "q2", "q1", "q1", "q1", "x"]
    docids = ["z", "b", "c", "a", "c", "a"]
    contains = np.array([False, True, True, False, False, True])
    ranked = align.run("s", RunTable(as_text(qids), as_text(docids), None, contains), {"q2": 7})
    assert ranked.offsets.tolist() == [0, 2, 4]
    assert ranked.grades.tolist() == [4, 3, 0, 5]
    assert ranked.contains is not None and ranked.contains.tolist() == [True, False, False, True]
    assert ranked.k_override is not None and ranked.k_override.tolist() == [0, 7]
    expected = trec_oracle.rank(
        {("q2", "b"): 5, ("q1", "a"): 3, ("q1", "c"): 4}, "s", qids, docids, None
    )
    assert align.warnings == expected.warnings
    assert ranked.grades.tolist() == expected.flat()


def test_no_labels_leave_every_query_unknown() -> None:
    from raglabel.formats.trec.arrays import ArrayAlignment
    from raglabel.formats.trec.rows import QrelsRows
    from raglabel.formats.trec.table import as_text

    align = ArrayAlignment.from_rows(QrelsRows([], [], []))
    assert align.labels.n_queries == 0
    assert align.fingerprint() == trec_oracle.fingerprint([], [], [])
    ranked = align.run("s", RunTable(as_text(["q1", "q2"]), as_text(["a", "b"]), None))
    assert ranked.offsets.tolist() == [0]
    assert align.warnings == trec_oracle.rank({}, "s", ["q1", "q2"], ["a", "b"], None).warnings


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
