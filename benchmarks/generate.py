"""Synthetic TREC qrels and runs for the benchmarks, reproducible from a fixed seed.

    python benchmarks/generate.py [--size NAME|all] [--force]

NAME is one of small, large, multi, grading, tiny, huge and bigproject (see SPECS).

Writes ``benchmarks/data/<size>/qrels.txt`` and one or more run files. A dataset whose
``stamp.json`` matches the current parameters is left alone, so calling this before every
benchmark is cheap.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import polars as pl
from common import HERE, add_size, chosen_sizes, make_parser
from numpy.typing import NDArray

# Bump whenever the data a given seed produces changes, so stale files are regenerated.
GENERATOR_VERSION = 3
SEED = 20240611

DATA_DIR = HERE / "data"

# Label shares of judged passages (-1..3): mostly 0/1 and few 3s, like real graded pools.
LABELS = np.array([-1, 0, 1, 2, 3], dtype=np.int64)
LABEL_P = np.array([0.03, 0.47, 0.31, 0.13, 0.06])
MIN_JUDGED, MAX_JUDGED = 20, 60
# Prime modulus of the docid scrambling; must exceed the largest slot number.
DOCID_MODULUS = 1_000_000_007
DOCID_MULTIPLIER = 747_796_405
DOCID_OFFSET = 91_382_323
# Mean gap between neighbouring scores: with 4 decimals about 1% of neighbours tie.
MEAN_SCORE_GAP = 0.005
ROWS_PER_WRITE = 1_000_000


@dataclass(frozen=True)
class Spec:
    name: str
    queries: int
    depth: int
    runs: int
    dataset: int  # part of the seed, so every dataset draws its own stream

    def run_names(self) -> list[str]:
        if self.runs == 1:
            return ["run"]
        return [f"run{i + 1:02d}" for i in range(self.runs)]

    def stamp(self) -> dict[str, Any]:
        return {"generator_version": GENERATOR_VERSION, "seed": SEED, **asdict(self)}


SPECS: dict[str, Spec] = {
    "small": Spec("small", queries=1_000, depth=100, runs=1, dataset=0),
    "large": Spec("large", queries=10_000, depth=1_000, runs=1, dataset=1),
    "multi": Spec("multi", queries=10_000, depth=100, runs=10, dataset=2),
    # The project a grading session works in (benchmarks/project.py records grades into it).
    "grading": Spec("grading", queries=1_000, depth=100, runs=10, dataset=3),
    # speed.py: the quick check's small end, and a run three times `large` over as many
    # queries (so as many labels): memory must not grow with the run.
    "tiny": Spec("tiny", queries=100, depth=100, runs=1, dataset=4),
    "huge": Spec("huge", queries=10_000, depth=3_000, runs=1, dataset=5),
    # speed.py's big project: the app over 100,000 queries x 100 candidates x 5 runs.
    "bigproject": Spec("bigproject", queries=100_000, depth=100, runs=5, dataset=6),
}


@dataclass(frozen=True)
class Dataset:
    spec: Spec
    directory: Path

    @property
    def qrels(self) -> Path:
        return self.directory / "qrels.txt"

    @property
    def runs(self) -> dict[str, Path]:
        return {name: self.directory / f"{name}.txt" for name in self.spec.run_names()}

    @property
    def stamp_file(self) -> Path:
        return self.directory / "stamp.json"


def dataset(name: str, data_dir: Path = DATA_DIR) -> Dataset:
    return Dataset(SPECS[name], data_dir / name)


def is_current(ds: Dataset) -> bool:
    try:
        stamp = json.loads(ds.stamp_file.read_text())
    except (OSError, ValueError):
        return False
    files = stamp.get("files", {}) if isinstance(stamp, dict) else {}
    if stamp.get("params") != ds.spec.stamp():
        return False
    # Sizes catch a file truncated or replaced after the stamp was written.
    for path in [ds.qrels, *ds.runs.values()]:
        if not path.is_file() or files.get(path.name) != path.stat().st_size:
            return False
    return True


def _docids(qids: NDArray[np.int64], slots: NDArray[np.int64], stride: int) -> NDArray[np.int64]:
    # An affine map modulo a prime is a bijection, so ids are unique per (query, slot)
    # while looking scattered over a corpus-sized id space like real passage ids.
    flat = qids * stride + slots
    return (flat * DOCID_MULTIPLIER + DOCID_OFFSET) % DOCID_MODULUS


def _gumbel(rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
    return -np.log(-np.log(rng.random(shape)))


@dataclass
class Judgments:
    counts: NDArray[np.int64]  # judged passages per query
    labels: NDArray[np.int64]  # (queries, MAX_JUDGED); columns past counts[q] unused
    valid: NDArray[np.bool_]


def _judgments(rng: np.random.Generator, queries: int) -> Judgments:
    counts = rng.integers(MIN_JUDGED, MAX_JUDGED + 1, size=queries)
    valid = np.arange(MAX_JUDGED)[None, :] < counts[:, None]
    labels = rng.choice(LABELS, size=(queries, MAX_JUDGED), p=LABEL_P)
    labels[~valid] = LABELS[0]
    # Every query needs a passage at the relevance level (2) or recall and MRR are undefined.
    unanswerable = (np.where(valid, labels, LABELS[0]).max(axis=1) < 2).nonzero()[0]
    column = rng.integers(0, counts[unanswerable])
    labels[unanswerable, column] = rng.choice([2, 3], size=unanswerable.size, p=[0.7, 0.3])
    return Judgments(counts=counts, labels=labels, valid=valid)


def _run_slots(
    rng: np.random.Generator, judged: Judgments, depth: int, run_index: int
) -> NDArray[np.int64]:
    """Slot number of the passage at each rank, shape (queries, depth).

    Slots below MAX_JUDGED are judged passages; the rest are passages nobody judged.
    """
    queries = judged.counts.size
    # Runs differ in recall of the judged pool and in how well they order it.
    coverage = rng.uniform(0.4, 0.9, size=queries)
    retrieved = np.minimum(rng.binomial(judged.counts, coverage), min(depth, MAX_JUDGED))
    skill = rng.uniform(0.4, 1.2)

    # Gumbel top-k picks judged passages without replacement, favouring higher labels.
    pick_keys = np.where(judged.valid, skill * judged.labels, -np.inf)
    pick_keys = pick_keys + _gumbel(rng, pick_keys.shape)
    picked = np.argsort(-pick_keys, axis=1)

    # Ranks for them, favouring the top of the list as real retrievers do; Gumbel top-k
    # again, so the first `retrieved` columns in key order are a proper weighted sample.
    width = min(depth, MAX_JUDGED)
    # Scale grows slower than depth: deep runs add mostly unjudged tail, not spread-out hits.
    rank_keys = -np.arange(depth, dtype=np.float64)[None, :] / (1.5 * np.sqrt(depth))
    rank_keys = rank_keys + _gumbel(rng, (queries, depth))
    candidates = np.argpartition(-rank_keys, width - 1, axis=1)[:, :width]
    by_key = np.argsort(-np.take_along_axis(rank_keys, candidates, axis=1), axis=1)
    candidates = np.take_along_axis(candidates, by_key, axis=1)
    used = np.arange(width)[None, :] < retrieved[:, None]
    ranks = np.sort(np.where(used, candidates, depth), axis=1)

    # Better-labelled passages take the better of the chosen ranks, blurred by noise.
    chosen = picked[:, :width]
    chosen_labels = np.take_along_axis(judged.labels, chosen, axis=1)
    order_keys = skill * chosen_labels + rng.normal(0.0, 1.0, size=chosen.shape)
    order_keys = np.where(used, order_keys, -np.inf)
    in_rank_order = np.take_along_axis(chosen, np.argsort(-order_keys, axis=1), axis=1)

    # Unjudged filler: each run gets its own block of slots, overlapping nobody else's.
    slots = MAX_JUDGED + run_index * depth + np.tile(np.arange(depth), (queries, 1))
    rows = np.broadcast_to(np.arange(queries)[:, None], used.shape)
    slots[rows[used], ranks[used]] = in_rank_order[used]
    return slots


def _scores(rng: np.random.Generator, queries: int, depth: int) -> NDArray[np.float64]:
    top = rng.uniform(15.0, 30.0, size=(queries, 1))
    gaps = rng.exponential(MEAN_SCORE_GAP, size=(queries, depth))
    gaps[:, 0] = 0.0
    # Rounded as engines print them: this is where the ties come from.
    return np.round(top - np.cumsum(gaps, axis=1), 4)


def _write_frame(handle: IO[bytes], frame: pl.DataFrame) -> None:
    frame.write_csv(
        handle,
        include_header=False,
        separator=" ",
        quote_style="never",
        float_precision=4,
    )


def _write_qrels(path: Path, judged: Judgments, stride: int) -> None:
    rows, cols = judged.valid.nonzero()
    docids = _docids(rows.astype(np.int64), cols.astype(np.int64), stride)
    frame = pl.DataFrame(
        {"qid": rows + 1, "docid": docids, "label": judged.labels[rows, cols]}
    ).select(
        pl.col("qid"),
        pl.lit("0").alias("iteration"),
        pl.format("D{}", pl.col("docid")).alias("docid"),
        pl.col("label"),
    )
    with _atomic(path) as handle:
        _write_frame(handle, frame)


def _write_run(
    path: Path,
    slots: NDArray[np.int64],
    scores: NDArray[np.float64],
    stride: int,
    tag: str,
) -> None:
    queries, depth = slots.shape
    per_write = max(1, ROWS_PER_WRITE // depth)
    with _atomic(path) as handle:
        for start in range(0, queries, per_write):
            stop = min(queries, start + per_write)
            qids = np.repeat(np.arange(start, stop, dtype=np.int64), depth)
            docids = _docids(qids, slots[start:stop].ravel(), stride)
            frame = pl.DataFrame(
                {
                    "qid": qids + 1,
                    "docid": docids,
                    "rank": np.tile(np.arange(1, depth + 1), stop - start),
                    "score": scores[start:stop].ravel(),
                }
            ).select(
                pl.col("qid"),
                pl.lit("Q0").alias("q0"),
                pl.format("D{}", pl.col("docid")).alias("docid"),
                pl.col("rank"),
                pl.col("score"),
                pl.lit(tag).alias("tag"),
            )
            _write_frame(handle, frame)


@contextmanager
def _atomic(path: Path) -> Iterator[IO[bytes]]:
    """Write to a temporary name and rename, so a killed run never leaves a half file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb", buffering=16 << 20) as handle:
            yield handle
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def generate(name: str, *, force: bool = False, data_dir: Path = DATA_DIR) -> Dataset:
    ds = dataset(name, data_dir)
    if not force and is_current(ds):
        return ds
    spec = ds.spec
    started = time.perf_counter()
    ds.directory.mkdir(parents=True, exist_ok=True)
    ds.stamp_file.unlink(missing_ok=True)
    rng = np.random.default_rng([SEED, spec.dataset])
    stride = MAX_JUDGED + spec.runs * spec.depth
    if spec.queries * stride >= DOCID_MODULUS:
        raise ValueError(f"{name}: too many slots for the docid modulus")

    judged = _judgments(rng, spec.queries)
    _write_qrels(ds.qrels, judged, stride)
    for index, (run_name, path) in enumerate(ds.runs.items()):
        slots = _run_slots(rng, judged, spec.depth, index)
        scores = _scores(rng, spec.queries, spec.depth)
        _write_run(path, slots, scores, stride, tag="bench" if spec.runs == 1 else run_name)

    files = {p.name: p.stat().st_size for p in [ds.qrels, *ds.runs.values()]}
    ds.stamp_file.write_text(json.dumps({"params": spec.stamp(), "files": files}, indent=2))
    total = sum(files.values()) / 2**20
    print(
        f"generated {name}: {len(files)} files, {total:.0f} MiB "
        f"in {time.perf_counter() - started:.1f}s -> {ds.directory}",
        file=sys.stderr,
    )
    return ds


def main(argv: list[str] | None = None) -> int:
    parser = make_parser(__doc__)
    add_size(parser, list(SPECS), "all")
    parser.add_argument("--force", action="store_true", help="regenerate even if current")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    names = chosen_sizes(args, list(SPECS))
    for name in names:
        ds = generate(name, force=args.force, data_dir=args.data_dir)
        print(ds.directory)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
