"""The shortcuts of the columnar reader against the slow, obvious computation they
replace: the repeat check by blocks, tie-only reordering, cut runs located by offsets,
chunked columns joined by numpy, and the CLI reading the first run ahead."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pytest
import trec_oracle
from examples import examples
from hypothesis import given
from hypothesis import strategies as st

from raglabel.formats.trec import arrays
from raglabel.formats.trec.align import Alignment, as_numpy
from raglabel.formats.trec.frames import read_qrels, read_run
from raglabel.formats.trec.keys import distinct_in_blocks
from raglabel.formats.trec.ranking import block_starts, ranking_order
from raglabel.metrics.labels import counts_from_grades
from raglabel.metrics.run import RankedRun

if TYPE_CHECKING:
    from cli_helpers import Cli


def _repeats_within_queries(qidx: np.ndarray, keys: np.ndarray) -> bool:
    pairs = list(zip(qidx.tolist(), keys.tolist(), strict=True))
    return len(set(pairs)) < len(pairs)


@st.composite
def keyed_rows(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Query indexes (grouped or not) and keys, with repeats and low-half collisions."""
    # At most 8 x 7 low halves meet, below the 64 that make the check give up.
    lengths = draw(st.lists(st.integers(1, 8), min_size=1, max_size=8))
    qidx = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    if draw(st.booleans()):
        qidx = qidx[np.random.default_rng(draw(st.integers(0, 99))).permutation(qidx.size)]
    # Few distinct low halves, many high halves: low bits meet often, keys rarely.
    low = np.array(draw(st.lists(st.integers(0, 5), min_size=qidx.size, max_size=qidx.size)))
    high = np.array(
        draw(st.lists(st.integers(0, 3), min_size=qidx.size, max_size=qidx.size)), np.uint64
    )
    keys = (high << np.uint64(32)) | low.astype(np.uint64)
    return qidx, keys


@examples(300)
@given(keyed_rows())
def test_distinct_in_blocks_never_misses_a_repeat(rows: tuple[np.ndarray, np.ndarray]) -> None:
    qidx, keys = rows
    starts = block_starts(qidx)
    sure = distinct_in_blocks(keys, starts, qidx)
    if _repeats_within_queries(qidx, keys):
        assert not sure
    heads = qidx[starts]
    grouped = np.unique(heads).size == heads.size
    lengths = np.diff(starts, append=qidx.size)
    if (
        grouped
        and not _repeats_within_queries(qidx, keys)
        and lengths.max() * starts.size <= 2 * qidx.size
    ):
        assert sure  # (colliding low halves are few here, so they are compared, not given up)


def test_distinct_in_blocks_on_unequal_blocks() -> None:
    # Padding counts 0, 1, 2, ... along a row; a real key equal to a pad is no repeat.
    qidx = np.array([0, 0, 0, 1, 1, 2], np.int32)
    keys = np.array([7, 1, 2, 0, 1, 9], np.uint64)
    assert distinct_in_blocks(keys, block_starts(qidx), qidx)
    keys[4] = 0
    assert not distinct_in_blocks(keys, block_starts(qidx), qidx)


@examples(200)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3), st.sampled_from(["a", "b", "B", "c", "\u00e9"]), st.integers(0, 3)
        ),
        min_size=2,
        max_size=30,
    ),
    st.booleans(),
)
def test_ranking_moves_equal_a_full_sort(rows: list[tuple[int, str, int]], grouped: bool) -> None:
    if grouped:
        rows.sort(key=lambda r: (r[0], -r[2]))
    qidx = np.array([r[0] for r in rows], np.int32)
    docid = pl.Series([r[1] for r in rows])
    score = np.array([r[2] / 10 for r in rows])
    full = (
        pl.DataFrame({"_q": qidx, "_s": score, "_d": docid})
        .select(pl.arg_sort_by(["_q", "_s", "_d"], descending=[False, True, True]))
        .to_series()
        .to_numpy()
    )
    moves = ranking_order(qidx, block_starts(qidx), score, docid)
    if moves is None:
        order = np.arange(qidx.size)
    else:
        order = moves.permutation(qidx.size)
        values = np.arange(qidx.size) * 3
        np.testing.assert_array_equal(moves.apply(values), values[order])
        np.testing.assert_array_equal(moves.queries(qidx), qidx[order])
    # Whole query blocks are put in query order later (assemble), so compare each query's
    # rows; rows that tie on query, score and id may come in any order.
    order = order[np.argsort(qidx[order], kind="stable")]

    def listed(rows: np.ndarray) -> list[tuple[int, float, str]]:
        return list(
            zip(
                qidx[rows].tolist(), score[rows].tolist(), docid.gather(rows).to_list(), strict=True
            )
        )

    assert listed(order) == listed(full)


@examples(200)
@given(
    st.lists(st.lists(st.integers(0, 5), max_size=9), min_size=1, max_size=8),
    st.integers(0, 12),
)
def test_run_head_locate_and_counts_match_positions(lists: list[list[int]], k: int) -> None:
    run = RankedRun.from_lists("r", lists)
    head, qidx, rank = run.head(k)
    keep = run.positions < k
    entries = np.flatnonzero(keep)
    np.testing.assert_array_equal(qidx, run.qidx[keep])
    np.testing.assert_array_equal(rank, run.positions[keep])
    if head is None:
        assert keep.all()
    else:
        np.testing.assert_array_equal(head, entries)
    some = np.flatnonzero(run.grades % 2 == 1)
    q, pos = run.locate(some)
    np.testing.assert_array_equal(q, run.qidx[some])
    np.testing.assert_array_equal(pos, run.positions[some])
    np.testing.assert_array_equal(
        run.grade_counts(), counts_from_grades(run.n_queries, run.qidx, run.grades)
    )


def test_as_numpy_joins_chunks() -> None:
    parts = [pl.Series("x", [1.5, 2.5]), pl.Series("x", [3.5]), pl.Series("x", [4.5, 5.5])]
    series = pl.concat(parts, rechunk=False)
    assert series.n_chunks() == 3
    np.testing.assert_array_equal(as_numpy(series), series.to_numpy())
    with_null = pl.concat(
        [pl.Series("x", [1.0]), pl.Series("x", [None], dtype=pl.Float64)], rechunk=False
    )
    assert np.isnan(as_numpy(with_null)[1])


def test_string_and_categorical_run_frames_align_alike(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("q1 0 a 3\nq1 0 b 1\nq2 0 c 2\n")
    (tmp_path / "r").write_text(
        "q2 Q0 c 1 0.5 t\nq1 Q0 b 1 0.9 t\nq1 Q0 a 2 0.9 t\nq1 Q0 a 3 0.1 t\n"
    )
    align = Alignment.from_qrels(read_qrels(tmp_path / "q"))
    categorical = read_run(tmp_path / "r")
    strings = categorical.with_columns(pl.col("qid").cast(pl.String))
    a, b = align.run("a", categorical), align.run("b", strings)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.grades, b.grades)
    # q1: b before a (tied scores, larger id first), the repeated a dropped; then q2.
    assert a.grades.tolist() == [3, 5, 4]


@pytest.fixture(scope="module")
def big_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Inputs just past the size where ``--reader auto`` picks polars (read only: made
    once per module, each random number drawn with the rest rather than one call each)."""
    folder = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(7)
    pairs = [(q, d) for q in range(50) for d in range(0, 400, 7)]
    grades = rng.integers(0, 4, size=len(pairs)).tolist()
    qrels = [f"q{q} 0 d{d} {g}" for (q, d), g in zip(pairs, grades, strict=True)]
    (folder / "qrels.txt").write_text("\n".join(qrels) + "\n")
    tenths = iter(rng.integers(0, 3, size=50 * 4000).tolist())
    lines = [
        f"q{q} Q0 d{d} {d + 1} {1000 - d + next(tenths) / 10:.1f} run"
        for q in range(50)
        for d in range(4000)
    ]
    (folder / "run.txt").write_text("\n".join(lines) + "\n")
    return {"qrels": folder / "qrels.txt", "run": folder / "run.txt"}


def test_polars_reader_agrees_with_python_reader(cli: Cli, big_files: dict[str, Path]) -> None:
    args = ["eval", "--qrels", big_files["qrels"], "--run", big_files["run"], "--format", "json"]
    reports = {}
    for reader in ("polars", "python"):
        code, out, err = cli(*args, "--reader", reader, "-k", "5,10", "--metrics", "all")
        assert code == 0, err
        reports[reader] = json.loads(out)
    for report in reports.values():
        report["config"].pop("reader")
    assert reports["polars"] == reports["python"]


def test_run_read_ahead_keeps_error_order(
    cli: Cli, big_files: dict[str, Path], tmp_path: Path
) -> None:
    bad_qrels = tmp_path / "bad.qrels"
    bad_qrels.write_text("q1 0 a 1\nq1 0 b x\n")
    code, _, err = cli(
        "eval", "--qrels", bad_qrels, "--run", big_files["run"], "--reader", "polars"
    )
    assert code == 2
    assert f"{bad_qrels}:2:" in err
    missing = tmp_path / "missing.run"
    code, _, err = cli(
        "eval", "--qrels", big_files["qrels"], "--run", missing, "--reader", "polars"
    )
    assert code == 2
    assert "no such file" in err


QRELS_LINE = st.tuples(
    st.sampled_from(["q1", "q2", "\u00e9q", "q 3", "#q"]),
    st.sampled_from(["0", "Q0"]),
    st.sampled_from(["d1", "d2", "d\u00fc", "d\t4"]),
    st.sampled_from(["0", "1", "3", "-1", "7", "01", "x"]),
)


@examples(300)
@given(st.lists(QRELS_LINE, min_size=1, max_size=8), st.booleans())
def test_qrels_rows_cut_by_numpy_equal_the_line_reader(
    tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[str, ...]], newline: bool
) -> None:
    from raglabel.errors import InputError
    from raglabel.formats.maps import GradeMap
    from raglabel.formats.trec.rows import read_qrels_exactly

    path = tmp_path_factory.mktemp("qrels") / "qrels.txt"
    path.write_text("\n".join(" ".join(line) for line in lines) + ("\n" if newline else ""))
    grade_map = GradeMap(mapping={0: 1, 1: 3, 3: 5}, negative=1)
    try:
        expected = read_qrels_exactly(path, grade_map)
    except InputError as exc:
        with pytest.raises(InputError) as caught:
            arrays.read_qrels_table(path, grade_map)
        assert str(caught.value) == str(exc)
    else:
        assert arrays.read_qrels_table(path, grade_map).rows() == expected


@pytest.mark.parametrize("size", [0, 3, 1 << 20, (1 << 20) + 1])
def test_the_fingerprint_digest_is_sha256_on_either_side_of_the_openssl_threshold(
    size: int,
) -> None:
    # Small label sets hash with the built-in module, large ones through hashlib.
    data = bytes(range(256)) * (size // 256) + b"q\td\t4\n"[: size % 256]
    assert arrays._sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_the_fingerprint_hashes_through_openssl_once_hashlib_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A process that imported hashlib (pandas and polars do) pays nothing more for
    # OpenSSL, which hashes faster than the built-in module at every size.
    used: list[str] = []

    def builtin(data: bytes) -> hashlib._Hash:
        used.append("builtin")
        return hashlib.sha256(data)

    monkeypatch.setattr(arrays, "_builtin_sha256", builtin)
    small = b"q\td\t1\n" * 10
    assert arrays._sha256_hex(small) == hashlib.sha256(small).hexdigest()
    assert used == []
    # Without hashlib loaded (a quick CLI eval), small inputs keep the built-in module.
    monkeypatch.delitem(sys.modules, "hashlib")
    assert arrays._sha256_hex(small) == hashlib.sha256(small).hexdigest()
    assert used == ["builtin"]


# Every character str.split() treats as white space, except the two separators polars
# reads: the exact reader splits at each, so the quick readers must hand the file over.
_SPLIT_SPACES = [chr(c) for c in range(0x110000) if chr(c).isspace() and chr(c) not in " \n"]


@pytest.mark.parametrize("odd", _SPLIT_SPACES, ids=lambda c: f"U+{ord(c):04X}")
def test_quick_readers_split_ids_where_the_exact_reader_does(tmp_path: Path, odd: str) -> None:
    from raglabel.errors import InputError
    from raglabel.formats.maps import GradeMap
    from raglabel.formats.trec.frames import read_qrels, read_run, read_run_block
    from raglabel.formats.trec.rows import read_qrels_exactly, read_run_exactly

    run = "".join(f"q{q} Q0 d{i}{odd}x {i} {10 - i}.5 t\n" for q in range(3) for i in range(5))
    run_path = tmp_path / "run"
    run_path.write_text(run, encoding="utf-8")
    exact = read_run_exactly(run_path)
    assert read_run(run_path)["docid"].to_list() == exact.docids
    block = read_run_block(run.encode("utf-8"))
    assert block is None or block["docid"].to_list() == exact.docids

    qrels = "".join(f"q{q} 0 d{i}{odd}x {i % 3}\n" for q in range(3) for i in range(5))
    qrels_path = tmp_path / "qrels"
    qrels_path.write_text(qrels, encoding="utf-8")
    # Split there, the line's relevance is "x": both readers must say so.
    with pytest.raises(InputError) as exact_error:
        read_qrels_exactly(qrels_path, GradeMap())
    with pytest.raises(InputError) as quick_error:
        read_qrels(qrels_path)
    assert str(quick_error.value) == str(exact_error.value)


def test_a_byte_order_mark_at_the_start_is_read_as_nothing_by_every_reader(
    tmp_path: Path,
) -> None:
    from raglabel.formats.maps import GradeMap
    from raglabel.formats.trec.frames import read_qrels, read_run, read_run_block
    from raglabel.formats.trec.rows import read_qrels_exactly, read_run_exactly

    bom = "\ufeff"
    run = bom + "".join(f"q{q} Q0 d{i} {i} {10 - i}.5 t\n" for q in range(3) for i in range(5))
    run_path = tmp_path / "run"
    run_path.write_text(run, encoding="utf-8")
    exact = read_run_exactly(run_path)
    assert exact.qids[0] == "q0"
    assert read_run(run_path)["qid"].cast(pl.String).to_list() == exact.qids
    # A block never starts with the file's mark (the blocks skip it): one that starts
    # with a mark holds it inside the file, where it is part of an id, which polars
    # would drop. The exact reader takes such a block.
    assert read_run_block(run.encode("utf-8")) is None

    qrels = bom + "".join(f"q{q} 0 d{i} {i % 3}\n" for q in range(3) for i in range(5))
    qrels_path = tmp_path / "qrels"
    qrels_path.write_text(qrels, encoding="utf-8")
    exact_qrels = read_qrels_exactly(qrels_path, GradeMap())
    assert exact_qrels.qids[0] == "q0"
    assert read_qrels(qrels_path)["qid"].cast(pl.String).to_list() == exact_qrels.qids


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.binary(min_size=1, max_size=20).filter(lambda b: b"\x00" not in b),
        ),
        max_size=30,
    )
)
def test_byte_order_words_sort_ids_as_their_bytes(rows: list[tuple[int, bytes]]) -> None:
    # The fingerprint's order: by query, then by id bytes (unsigned, a prefix first),
    # ids longer than a word included.
    qidx = np.array([q for q, _ in rows], dtype=np.int64)
    ids = np.array([d for _, d in rows], dtype=np.bytes_)
    order = np.lexsort((*arrays._byte_order_words(ids), qidx))
    assert [rows[i] for i in order] == sorted(rows)


@given(
    st.dictionaries(
        st.tuples(st.sampled_from(["q1", "q2", "q10"]), st.text("ab\u00e9\u4e2d", max_size=12)),
        st.integers(0, 3),
        min_size=1,
        max_size=25,
    )
)
def test_long_ids_fingerprint_as_the_line_reader_does(judged: dict[tuple[str, str], int]) -> None:
    with TemporaryDirectory() as folder:
        path = Path(folder) / "qrels"
        path.write_text(
            "".join(f"{q} 0 d{d} {label}\n" for (q, d), label in judged.items()), encoding="utf-8"
        )
        rows = arrays.read_qrels_table(path).rows()
        expected = trec_oracle.fingerprint(rows.qids, rows.docids, rows.grades)
        assert arrays.align_qrels(path, None).fingerprint() == expected


def test_a_pair_judged_twice_is_found_when_its_key_meets_another_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raglabel.errors import InputError
    from raglabel.formats.trec import keys

    def one_key(qidx: np.ndarray, docids: np.ndarray) -> np.ndarray:
        # Every pair on one key: the twin rows 1 and 3 are not neighbours once sorted.
        return np.zeros(docids.size, dtype=np.uint64)

    monkeypatch.setattr(keys, "pair_keys", one_key)
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 a 1\nq1 0 b 2\nq1 0 c 0\nq1 0 a 3\n")
    with pytest.raises(InputError, match="judged twice") as caught:
        arrays.read_qrels_table(path)
    assert caught.value.line == 4
    distinct = tmp_path / "distinct.txt"
    distinct.write_text("q1 0 a 1\nq1 0 b 2\nq2 0 a 0\n")
    assert len(arrays.read_qrels_table(distinct)) == 3
