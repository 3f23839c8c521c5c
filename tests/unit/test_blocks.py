"""Large runs read in blocks of whole queries: the same run as read whole, or refused."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pytest
import trec_oracle
from examples import examples
from hypothesis import given
from hypothesis import strategies as st

from raglabel.cli import eval_inputs
from raglabel.cli.main import build_parser, parse_args
from raglabel.errors import InputError
from raglabel.formats.maps import GradeMap
from raglabel.formats.trec import align, arrays, blocks, keys, large
from raglabel.formats.trec import frames as trec
from raglabel.formats.trec.align import NOT_GROUPED, Alignment, NotInBlocks
from raglabel.formats.trec.blocks import QueryTooLargeError, query_blocks
from raglabel.formats.trec.frames import (
    _repeated_pairs,
    read_qrels,
    read_run,
    read_run_block,
    read_run_blocks,
)
from raglabel.formats.trec.rows import read_qrels_exactly, read_run_exactly

if TYPE_CHECKING:
    from collections.abc import Callable

    from cli_helpers import Cli


def run_lines(seed: int, queries: int, depth: int, *, grouped: bool = True) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for q in range(queries):
        for r in range(rng.randint(1, depth)):
            # Scores with 1 decimal tie often; docids repeat across queries.
            score = round(rng.uniform(0, 3), 1)
            lines.append(f"q{q} Q0 d{rng.randint(0, 40)} {r + 1} {score} tag")
    if not grouped:
        rng.shuffle(lines)
    return lines


@examples(200)
@given(st.integers(0, 10_000), st.integers(1, 30), st.integers(48, 400), st.booleans())
def test_blocks_hold_whole_queries_and_nothing_is_lost(
    tmp_path_factory: pytest.TempPathFactory, seed: int, queries: int, size: int, newline: bool
) -> None:
    lines = run_lines(seed, queries, 6)
    text = "\n".join(lines) + ("\n" if newline else "")
    path = tmp_path_factory.mktemp("blocks") / "run.txt"
    path.write_text(text)
    try:
        parts = list(query_blocks(path, size))
    except QueryTooLargeError:
        # Only one query's complete lines (and part of the next line) filled the buffer.
        longest = max(
            sum(len(line) + 1 for line in lines if line.split()[0] == f"q{q}")
            for q in range(queries)
        )
        assert longest + max(len(line) + 1 for line in lines) >= size
        return
    assert b"".join(parts) == text.encode()
    owners: dict[str, int] = {}
    for number, part in enumerate(parts):
        for line in part.decode().splitlines():
            assert owners.setdefault(line.split()[0], number) == number


def test_a_query_larger_than_a_block_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("\n".join(f"q1 Q0 d{i} {i} 1.0 t" for i in range(50)) + "\n")
    with pytest.raises(QueryTooLargeError):
        list(query_blocks(path, 64))


def qrels_file(tmp_path: Path, queries: int) -> Path:
    rng = random.Random(7)
    path = tmp_path / "qrels.txt"
    lines = [
        f"q{q} 0 d{d} {rng.choice([0, 1, 2, 3])}"
        for q in range(queries)
        for d in rng.sample(range(41), 12)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("slices", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_a_grouped_run_in_blocks_equals_the_run_read_whole(
    tmp_path: Path, seed: int, slices: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not slices:  # every part joined entry by entry, as when it is many short slices
        monkeypatch.setattr(align, "_MAX_SLICES", 0)
    rng = random.Random(seed)
    # No passage twice in a query: a repeat warns, and warnings refuse blocks (below).
    lines, score = [], 100.0
    for q in range(25):
        for d in rng.sample(range(41), rng.randint(1, 30)):
            score -= rng.choice([0.0, 0.1])
            lines.append(f"q{q} Q0 d{d} 1 {score:.1f} t")
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    alignment = Alignment.from_qrels(read_qrels(qrels_file(tmp_path, 25)))
    whole = alignment.run("r", read_run(run))
    parts = read_run_blocks(run, block_bytes=1024)
    ranked = alignment.run_in_blocks("r", parts)
    np.testing.assert_array_equal(ranked.offsets, whole.offsets)
    np.testing.assert_array_equal(ranked.grades, whole.grades)
    assert alignment.warnings == []


def test_an_ungrouped_run_is_refused_as_such(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines(3, 20, 8, grouped=False)) + "\n")
    alignment = Alignment.from_qrels(read_qrels(qrels_file(tmp_path, 20)))
    with pytest.raises(NotInBlocks, match=NOT_GROUPED):
        alignment.run_in_blocks("r", read_run_blocks(run, block_bytes=200))


@pytest.mark.parametrize(
    "line", ["q11 Q0 d3 1 1.0 t", "q1 Q0 d1 1 nan t", "q1\tQ0 d1 1 1.0 t", "# comment"]
)
def test_a_block_that_warns_or_needs_the_exact_reader_is_refused(tmp_path: Path, line: str) -> None:
    lines = [f"q{q} Q0 d{d} {d + 1} {9 - d}.0 t" for q in range(20) for d in range(8)]
    lines[90:90] = [line]
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    alignment = Alignment.from_qrels(read_qrels(qrels_file(tmp_path, 20)))
    with pytest.raises(NotInBlocks):
        alignment.run_in_blocks("r", read_run_blocks(run, block_bytes=200))
    assert alignment.warnings == []


def test_queries_the_labels_lack_make_one_warning_as_the_whole_file_does(
    tmp_path: Path,
) -> None:
    # Runs often rank queries nobody labelled; that alone must not cost the blocks.
    lines = [f"q{q} Q0 d{d} {d + 1} {9 - d}.0 t" for q in range(30) for d in range(8)]
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    labelled = Alignment.from_qrels(read_qrels(qrels_file(tmp_path, 20)))  # q0..q19
    whole = labelled.run("r", read_run(run))
    expected = list(labelled.warnings)
    labelled.warnings.clear()
    ranked = labelled.run_in_blocks("r", read_run_blocks(run, block_bytes=300))
    np.testing.assert_array_equal(ranked.offsets, whole.offsets)
    np.testing.assert_array_equal(ranked.grades, whole.grades)
    assert labelled.warnings == expected and "10 queries not in the labels" in expected[0]


@pytest.mark.parametrize("grouped", [True, False])
def test_eval_reads_a_large_run_in_blocks_with_the_same_report(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grouped: bool
) -> None:
    lines = [
        f"q{q} Q0 d{d} {r + 1} {30 - r}.{q % 3} t"
        for q in range(30)
        for r, d in enumerate(random.Random(q).sample(range(41), 25))
    ]
    if not grouped:
        lines = lines[1:] + lines[:1]  # the first query's top line comes last
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    qrels = qrels_file(tmp_path, 30)
    args = ["eval", "--qrels", qrels, "--run", run, "--reader", "polars", "--format", "json"]
    args += ["--per-query"]
    shared: list[bool] = []
    monkeypatch.setattr(eval_inputs, "share_malloc_arenas", lambda: shared.append(True))
    code, whole, _ = cli(*args)
    assert code == 0
    assert shared == []  # a small run leaves malloc alone
    # Blocks of 2 KB: the 30-query run (about 24 KB) is now "large".
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 2048)
    code, streamed, err = cli(*args)
    assert code == 0
    # Called in a process of others' (the Python API's way), malloc is left alone too;
    # only the eval command as its own process caps the arenas.
    assert shared == []
    parsed = parse_args(build_parser("eval"), [str(a) for a in args])
    parsed.own_process = True
    eval_inputs.load_inputs(parsed)
    assert shared == [True]
    whole_doc, streamed_doc = json.loads(whole), json.loads(streamed)
    if grouped:
        assert streamed_doc == whole_doc
        assert err == ""
    else:
        assert streamed_doc["runs"] == whole_doc["runs"]
        assert NOT_GROUPED in err and "read whole" in err


@examples(200)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("xyz")), max_size=12))
def test_repeated_pairs_are_found_as_polars_finds_them(pairs: list[tuple[str, str]]) -> None:
    frame = pl.DataFrame(
        {"qid": [q for q, _ in pairs], "docid": [d for _, d in pairs]},
        schema={"qid": pl.String, "docid": pl.String},
    )
    expected = frame.select(pl.struct("qid", "docid").is_duplicated()).to_series()
    assert _repeated_pairs(frame).to_list() == expected.to_list()


def test_a_query_the_labels_lack_met_again_in_a_later_block_is_not_grouped(
    tmp_path: Path,
) -> None:
    lines = [f"q{q} Q0 d{d} {d + 1} {9 - d}.0 t" for q in range(20) for d in range(8)]
    lines = ["zz Q0 d1 1 1.0 t", *lines, "zz Q0 d2 2 0.5 t"]
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    alignment = Alignment.from_qrels(read_qrels(qrels_file(tmp_path, 20)))
    with pytest.raises(NotInBlocks, match=NOT_GROUPED):
        alignment.run_in_blocks("r", read_run_blocks(run, block_bytes=300))
    assert alignment.warnings == []


@pytest.mark.parametrize(
    "line",
    [
        "q1 Q0 dx 9 0.5 t",
        "q1 Q0 dx 9 0.5",  # short: the exact reader names it
        "q1 Q0 dx 9 0.5 t ",  # trailing space: an empty seventh field, ignored
        "q1 Q0 dx 9 0.5 t extra",
        "q1  Q0 dx 9 0.5 t",
        " q1 Q0 dx 9 0.5 t",
        "",
        "q1 Q0 dx 1.5 0.5 t",  # a rank no reader uses
        "q1 Q0 dx one 0.5 t",
        "q1 Q0 dx 9 x t",
        "q1 Q0 dx 9 nan t",
        "q1\tQ0 dx 9 0.5 t",
        "# a comment of six fields",
        "#short comment",
    ],
)
@pytest.mark.parametrize("last_newline", [True, False])
def test_a_block_reads_as_the_exact_reader_does_or_is_refused(
    tmp_path: Path, line: str, last_newline: bool
) -> None:
    # A block's parse checks the fields it does not keep from its bytes; whatever it
    # takes must be what the exact reader reads, and it takes all the file reader takes.
    lines = [f"q{q} Q0 d{d} {d + 1} {9 - d}.5 t" for q in range(3) for d in range(4)]
    lines[5:5] = [line]
    data = ("\n".join(lines) + ("\n" if last_newline else "")).encode()
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    block, whole = read_run_block(data), read_run_block(path)
    try:
        rows = read_run_exactly(path)
    except InputError:
        rows = None
    if whole is not None:
        assert block is not None
    if block is not None:
        assert rows is not None
        assert block["qid"].cast(pl.String).to_list() == rows.qids
        assert block["docid"].to_list() == rows.docids
        assert block["score"].to_list() == rows.scores


@pytest.mark.parametrize("window", [16, 40, 1 << 20])
@pytest.mark.parametrize(
    "bad",
    [
        None,
        "q1 Q0 dx 9 0.5",
        "q1 Q0 dx 9 0.5 t x",
        "q1 Q0 dx 9 0.5 t\r",
        "q1 Q0  dx 9 0.5 t",
        " q1 Q0 dx 9 0.5 t",
        "",
        "q1 Q0 dx\t9 0.5 t",
        "q1 Q0 dx\x1f9 0.5 t",
        "q1 Q0 d\u00a0x 9 0.5 t",
    ],
)
@pytest.mark.parametrize("at", [0, 7, 11])
def test_plain_blocks_are_six_nonempty_fields_a_line_in_every_window(
    monkeypatch: pytest.MonkeyPatch, window: int, bad: str | None, at: int
) -> None:
    # The check goes a window of whole lines at a time: a bad line is found whichever
    # window it falls in, and a line longer than the window is left to the full check.
    monkeypatch.setattr(trec, "_SCAN_BYTES", window)
    lines = [f"q{q} Q0 d{d} {d + 1} {9 - d}.5 t" for q in range(3) for d in range(4)]
    if bad is not None:
        lines[at:at] = [bad]
    data = ("\n".join(lines) + "\n").encode()
    fits = window > max(len(line) for line in lines)
    assert trec._plain_block(data, 6) is (bad is None and fits)
    if bad is None:
        # Refused by the byte check only for its window: read all the same.
        frame = read_run_block(data)
        assert frame is not None
        assert frame["docid"].to_list() == [line.split()[2] for line in lines]


def test_sharing_malloc_arenas_is_harmless_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks.share_malloc_arenas()  # glibc here: the real call
    import ctypes

    def no_c_library(name: object) -> object:
        raise TypeError("argument of type 'NoneType' is not iterable")  # as on Windows

    monkeypatch.setattr(ctypes, "CDLL", no_c_library)
    blocks.share_malloc_arenas()
    monkeypatch.setattr(blocks.sys, "platform", "win32")
    blocks.share_malloc_arenas()


@pytest.mark.parametrize("first", ["fits", "too large", "refused"])
def test_eval_starts_the_first_block_early_and_reports_as_read_whole(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    # The first block is read and parsed while the labels load; whatever becomes of it
    # (a query larger than a block, a line the quick reader refuses), the report is the
    # one the run read whole gives.
    depth = {"fits": 25, "too large": 200, "refused": 25}[first]
    lines = [
        f"q{q} Q0 d{d} {r + 1} {300 - r}.{q % 3} t"
        for q in range(30)
        for r, d in enumerate(random.Random(q).sample(range(400), depth if q == 0 else 25))
    ]
    if first == "refused":
        lines[3] = lines[3].replace(" ", "\t", 1)
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    args = ["eval", "--qrels", qrels_file(tmp_path, 30), "--run", run, "--reader", "polars"]
    args += ["--format", "json", "--per-query"]
    code, whole, _ = cli(*args)
    assert code == 0
    started: list[Path] = []
    early = large.EarlyBlocks

    class Watched(early):  # type: ignore[misc, valid-type]
        def __init__(self, path: Path, *, start: bool = True) -> None:
            if start:
                started.append(path)
            super().__init__(path, start=start)

    monkeypatch.setattr(large, "EarlyBlocks", Watched)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 2048)
    read_whole: list[Path] = []
    reader = large.read_run

    def whole_read(path: Path, *more: object, **options: object) -> pl.DataFrame:
        read_whole.append(path)
        return reader(path, *more, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(large, "read_run", whole_read)
    code, streamed, _ = cli(*args)
    assert code == 0
    assert started == [run]
    # Scored in blocks when the first one fits, else read whole.
    assert read_whole == ([] if first == "fits" else [run])
    assert json.loads(streamed)["runs"] == json.loads(whole)["runs"]


def small_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> Path:
    """A run of 40 queries x 20 read in blocks of 4 KB: several blocks."""
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines(seed, 40, 20)) + "\n")
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 4096)
    return run


def test_early_blocks_let_go_of_each_block_once_the_caller_moved_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import weakref

    early = large.EarlyBlocks(small_blocks_run(tmp_path, monkeypatch, 7))
    alive: list[weakref.ref[pl.DataFrame]] = []
    held: list[bool] = []
    for frame in early:
        assert frame is not None
        alive.append(weakref.ref(frame))
        del frame
        gc.collect()
        if len(alive) == 3:
            # While the third block is read, the first (which the thread took) is gone
            # like the second.
            held = [ref() is not None for ref in alive]
            break
    early.close()
    assert held == [False, False, True]


def test_closing_after_an_interrupted_wait_lets_the_thread_finish_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    run = small_blocks_run(tmp_path, monkeypatch, 3)
    going = threading.Event()
    first_block = large.first_block

    def slow(frames: object) -> object:
        going.wait(5)  # held until the interrupt below has happened
        return first_block(frames)  # type: ignore[arg-type]

    monkeypatch.setattr(large, "first_block", slow)
    early = large.EarlyBlocks(run)
    assert early._first is not None

    def interrupted(timeout: float | None = None) -> object:
        threading.Timer(0.2, going.set).start()  # the thread goes on after the interrupt
        raise KeyboardInterrupt

    early._first.result = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        next(iter(early))
    # The reader is closed once the thread is done with it: closing it under the
    # thread's feet raised "generator already executing" in place of the interrupt.
    early.close()
    assert going.is_set()


def test_early_blocks_are_the_reader_s_blocks(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines(5, 40, 20)) + "\n")
    early = large.EarlyBlocks(run)
    # The reader's own default block size applies; a file of one block is one frame.
    frames = list(early)
    early.close()
    whole = [frame for frame in read_run_blocks(run) if frame is not None]
    assert len(frames) == len(whole) == 1
    assert frames[0] is not None and frames[0].equals(whole[0])
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    nothing = large.EarlyBlocks(empty)
    assert list(nothing) == []
    nothing.close()


@examples(100)
@given(st.integers(0, 2**32 - 1), st.integers(0, 3000), st.integers(0, 3000))
def test_the_grades_filter_marks_every_label_key_and_reads_bits_as_packed(
    seed: int, n_labels: int, n_rows: int
) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2**64, n_labels, dtype=np.uint64, endpoint=False)
    rows = np.concatenate([rng.integers(0, 2**64, n_rows, dtype=np.uint64), labels])
    marks = keys.key_filter(labels)
    # The reference: the bit at each key's low bits, unpacked one key at a time.
    bits = np.unpackbits(marks, bitorder="little")
    expected = [bool(bits[int(key) % bits.size]) for key in rows]
    found = keys.in_filter(marks, rows)
    assert found.tolist() == expected
    assert found[n_rows:].all()  # a label's own key always passes


def _graded_alike(tmp_path: Path, seed: int, change: Callable[[], None]) -> None:
    """A run of 20 queries graded before and after ``change`` (a patch of ``align``)
    comes out the same, with some passages graded."""
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines(seed, 20, 30)) + "\n")
    qrels = read_qrels(qrels_file(tmp_path, 20))
    expected = Alignment.from_qrels(qrels).run("r", read_run(run))
    change()
    changed = Alignment.from_qrels(qrels).run("r", read_run(run))
    np.testing.assert_array_equal(changed.offsets, expected.offsets)
    np.testing.assert_array_equal(changed.grades, expected.grades)
    assert int(np.count_nonzero(expected.grades)) > 0


@pytest.mark.parametrize("seed", range(4))
def test_labels_whose_keys_collide_are_graded_by_their_passage_ids(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pair_keys = align._pair_keys

    def colliding(qidx: np.ndarray, docids: pl.Series) -> np.ndarray:
        # Every label of a query on one of four keys: most searches meet another
        # label's key first, in whatever order the sort left them.
        keys: np.ndarray = pair_keys(qidx, docids) & np.uint64(3)
        return keys

    _graded_alike(tmp_path, seed, lambda: monkeypatch.setattr(align, "_pair_keys", colliding))


@examples(200)
@given(
    st.lists(
        st.tuples(
            st.text(st.characters(exclude_categories=("Cs",)), max_size=4), st.integers(8, 16)
        ),
        max_size=40,
    ),
    st.booleans(),
)
def test_query_ids_index_as_polars_sorts_and_joins_them(
    runs: list[tuple[str, int]], shuffled: bool
) -> None:
    # Runs of equal ids (the grouped labels the quick path is for), or the same rows
    # shuffled (polars' own path); ids of any characters, ordered as UTF-8 bytes.
    rows = [qid for qid, length in runs for _ in range(length)]
    if shuffled:
        random.Random(len(rows)).shuffle(rows)
    qids = pl.Series(rows, dtype=pl.String)
    expected_ids = qids.unique().sort()
    ordered, qidx = align._query_index(qids)
    assert ordered == expected_ids.to_list()
    assert qidx.tolist() == align._index_of(qids, expected_ids).tolist()


@pytest.mark.parametrize("seed", range(3))
def test_rows_are_filtered_in_chunks_as_in_one_go(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A project's stored run is graded whole; its rows go through the filter a chunk at
    # a time (here 7 rows, so chunks end mid-query and the last one is short).
    _graded_alike(tmp_path, seed, lambda: monkeypatch.setattr(keys, "_FILTER_ROWS", 7))


@pytest.mark.parametrize(
    "shortcut", ["as built", "keys collide", "graded on a thread", "filtered in chunks"]
)
@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_the_array_alignment_shortcuts_rank_and_grade_as_trec_eval(
    tmp_path: Path, seed: int, grouped: bool, shortcut: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The labels' filter, the repeat check by blocks and grading beside ranking, each
    # forced onto a small run with repeated passages, tied scores and unknown queries,
    # against trec_eval's rule written plainly.
    if shortcut == "keys collide":
        pair_keys = keys.pair_keys

        def colliding(qidx: np.ndarray, docids: np.ndarray) -> np.ndarray:
            # Four keys per query: the filter passes every row, searches meet other
            # labels first, and every query's block seems to hold repeats.
            keys: np.ndarray = pair_keys(qidx, docids) & np.uint64(3)
            return keys

        # Both the labels' index and the run's rows key their pairs through it.
        monkeypatch.setattr(keys, "pair_keys", colliding)
        monkeypatch.setattr(arrays, "pair_keys", colliding)
    elif shortcut == "graded on a thread":
        monkeypatch.setattr(arrays, "_THREAD_ROWS", 1)
    elif shortcut == "filtered in chunks":
        monkeypatch.setattr(keys, "_FILTER_ROWS", 7)
    run = tmp_path / "run.txt"
    lines = run_lines(seed, 24, 30, grouped=grouped)
    run.write_text("\n".join(lines) + "\n")
    qrels = qrels_file(tmp_path, 20)  # queries q20 to q23 are not in the labels
    alignment = arrays.align_qrels(qrels, None)
    ranked = alignment.run("r", arrays.read_run_table(run))
    exact = read_qrels_exactly(qrels, GradeMap())
    labels = dict(zip(zip(exact.qids, exact.docids, strict=True), exact.grades, strict=True))
    fields = [line.split() for line in lines]
    expected = trec_oracle.rank(
        labels, "r", [f[0] for f in fields], [f[2] for f in fields], [float(f[4]) for f in fields]
    )
    assert ranked.offsets.tolist() == expected.offsets()
    assert ranked.grades.tolist() == expected.flat()
    assert alignment.warnings == expected.warnings
    assert int(np.count_nonzero(ranked.grades)) > 0
