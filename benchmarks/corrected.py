"""Coverage and width of the judge-corrected estimate on LLMJudge's public label sets.

    python benchmarks/corrected.py [--data DIR] [--models A,B] [--drawn 10,15]
                                   [--draws 2000] [--seed 2029]

The LLMJudge challenge published people's labels (NIST's TREC DL 2023 judgments) of
4,423 (query, passage) pairs over 25 queries, and its benchmark repository the labels of
30-odd LLM judges on the very same pairs. Neither holds the retrieval runs the pairs were
pooled from, so the runs here are synthetic (seeded): each of ``RUNS`` ranks every
query's labelled passages by ``quality * people's label + noise``.

For each model's label set, each run's per-query nDCG@10 and P@10 are computed by
``raglabel.evaluate`` on people's labels (h) and on the model's (f), and so are the
per-query paired differences of ``DIFFERENCES``. Then, for each number n of ``--drawn``,
``--draws`` times: n of the 25 queries are drawn uniformly without replacement (the same
draws for every model), and :func:`raglabel.metrics.judge_corrected.judge_corrected`
gives the corrected interval (the judge on all 25 queries, people on the n drawn) and the
human-only one (people on the n drawn). Reported per model and metric: how often each
covers the truth, the people's mean over all 25 queries (so coverage is of that finite
population's mean, not of some larger universe of queries), the corrected interval's mean
width over the human-only one's, the judge's per-query correlation with people, and the
judge-only bias (the mean on the model's labels less the truth). Classic
prediction-powered inference (the judge's weight fixed at 1) stands beside it.

The data are read from clones of the two repositories under ``--data`` (work trees or
bare clones; see benchmarks/README.md for how to fetch them); nothing is downloaded here.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    HERE,
    machine,
    make_parser,
    markdown_table,
    parse,
    print_goals,
    utc_stamp,
    versions,
    write_results,
)
from numpy.typing import NDArray

import raglabel
from raglabel.metrics.judge_corrected import MIN_DRAWN, judge_corrected

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Labels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

CHALLENGE = "LLMJudge"
SUBMISSIONS = "LLMJudge-benchmark"
HUMANS_PATH = "data/llmjudge_test_qrel_idx.txt"
SCORES_PATH = "submissions/scores"
#: Where ``--data`` looks first, then this workspace's mirror of public repositories.
DEFAULT_DATA = (HERE / "data" / "llmjudge", Path("/work/.mirror"))
#: The challenge's label scale; a model's label outside it is left out (and counted).
SCALE = range(0, 4)

SEED = 2029
#: name: (quality, noise), as tests/data/llmjudge/make_runs.py: how strongly the run
#: follows people's labels, and how noisily. Ordered best first.
RUNS = {
    "strong": (1.0, 0.8),
    "middle": (1.0, 1.0),
    "fair": (1.0, 1.4),
    "weak": (0.5, 1.6),
}
#: Paired differences (run, baseline): a close call and a wide one.
DIFFERENCES = (("strong", "middle"), ("middle", "weak"))
METRICS = ("ndcg@10", "precision@10")
SHOWN = {"ndcg@10": "nDCG@10", "precision@10": "P@10"}


class DataError(Exception):
    """The label files are missing or not what the benchmark expects."""


# -- the data --------------------------------------------------------------------------


@dataclass(frozen=True)
class Clone:
    """A clone of a repository: a work tree, or a bare git directory read with git."""

    path: Path
    bare: bool

    def read(self, inside: str) -> str:
        if not self.bare:
            return (self.path / inside).read_text(encoding="utf-8")
        done = subprocess.run(
            ["git", "--git-dir", str(self.path), "show", f"HEAD:{inside}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise DataError(f"{self.path}: no {inside} at HEAD ({done.stderr.strip()})")
        return done.stdout

    def names(self, folder: str) -> list[str]:
        if not self.bare:
            return sorted(p.name for p in (self.path / folder).iterdir() if p.is_file())
        done = subprocess.run(
            ["git", "--git-dir", str(self.path), "ls-tree", "--name-only", f"HEAD:{folder}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise DataError(f"{self.path}: no folder {folder} at HEAD ({done.stderr.strip()})")
        return sorted(done.stdout.split())

    def commit(self) -> str | None:
        """HEAD's commit, or None for a folder that is no git clone."""
        if not self.bare and not (self.path / ".git").exists():
            return None
        git = ["git", "--git-dir", str(self.path)] if self.bare else ["git", "-C", str(self.path)]
        done = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else None


def find_clone(data: Path, name: str, marker: str) -> Clone | None:
    """The clone of llm4eval/NAME under ``data``: NAME, NAME.git, or the mirror's
    llm4eval+NAME/repo; a work tree has ``marker`` on disk, a bare clone a HEAD file."""
    for candidate in (data / name, data / f"{name}.git", data / f"llm4eval+{name}" / "repo"):
        if (candidate / marker).exists():
            return Clone(candidate, bare=False)
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return Clone(candidate, bare=True)
    return None


def fetch_hint(data: Path) -> str:
    return (
        f"clone the two repositories first (this benchmark does not download):\n"
        f"  git clone --bare https://github.com/llm4eval/{CHALLENGE} {data}/{CHALLENGE}.git\n"
        f"  git clone --bare https://github.com/llm4eval/{SUBMISSIONS}"
        f" {data}/{SUBMISSIONS}.git\n"
        f"or pass --data DIR where DIR holds them"
    )


def parse_labels(text: str, source: str) -> tuple[Labels, list[str]]:
    """``qid 0 docid label`` lines as {qid: {docid: label}}, and what was left out.

    A label outside the 0-3 scale is left out, and said (as ``source:line``): a model
    that wrote 5 or 10 meant something, but not a grade of this scale. A line that is
    not four fields with an integer label, or a pair given twice, is an error.
    """
    labels: Labels = {}
    dropped: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        where = f"{source}:{number}"
        if len(fields) != 4:
            raise DataError(f"{where}: expected 'qid 0 docid label', got {line!r}")
        qid, _, docid, raw = fields
        try:
            label = int(raw)
        except ValueError:
            raise DataError(f"{where}: label {raw!r} is not an integer") from None
        if docid in labels.get(qid, {}):
            raise DataError(f"{where}: query {qid} passage {docid} is labelled twice")
        if label not in SCALE:
            dropped.append(f"{where} (label {label})")
            continue
        labels.setdefault(qid, {})[docid] = label
    return labels, dropped


def same_pairs(humans: Labels, model: Labels, dropped: int, source: str) -> None:
    """The model labelled exactly people's pairs (less the ones it left off the scale)."""
    for qid, docs in model.items():
        extra = docs.keys() - humans.get(qid, {}).keys()
        if extra:
            raise DataError(f"{source}: query {qid} passage {min(extra)} has no people's label")
    count = sum(map(len, model.values()))
    expected = sum(map(len, humans.values()))
    if count + dropped != expected:
        raise DataError(f"{source}: {count + dropped} pairs, people labelled {expected}")


@dataclass(frozen=True)
class LabelSets:
    humans: Labels
    models: dict[str, Labels]
    dropped: dict[str, list[str]]
    commits: dict[str, str | None]


def load(data: Path, only: Sequence[str] | None) -> LabelSets:
    """People's labels and every model's (or the ``only`` ones), checked to pair up."""
    challenge = find_clone(data, CHALLENGE, HUMANS_PATH)
    submissions = find_clone(data, SUBMISSIONS, SCORES_PATH)
    missing = [n for n, c in ((CHALLENGE, challenge), (SUBMISSIONS, submissions)) if c is None]
    if challenge is None or submissions is None:
        raise DataError(f"no clone of {' or '.join(missing)} under {data}; {fetch_hint(data)}")
    humans, off_scale = parse_labels(challenge.read(HUMANS_PATH), f"{CHALLENGE}/{HUMANS_PATH}")
    if off_scale:
        raise DataError(f"people's labels off the 0-3 scale: {', '.join(off_scale[:3])}")
    files = {
        n.removesuffix(".txt"): n for n in submissions.names(SCORES_PATH) if n.endswith(".txt")
    }
    chosen = list(files) if only is None else list(only)
    unknown = [m for m in chosen if m not in files]
    if unknown:
        raise DataError(
            f"--models: no submission {', '.join(unknown)}; there are: {', '.join(files)}"
        )
    models: dict[str, Labels] = {}
    dropped: dict[str, list[str]] = {}
    for name in chosen:
        inside = f"{SCORES_PATH}/{files[name]}"
        source = f"{SUBMISSIONS}/{inside}"
        models[name], dropped[name] = parse_labels(submissions.read(inside), source)
        same_pairs(humans, models[name], len(dropped[name]), source)
    return LabelSets(
        humans,
        models,
        dropped,
        {CHALLENGE: challenge.commit(), SUBMISSIONS: submissions.commit()},
    )


# -- runs and per-query metrics --------------------------------------------------------


def make_runs(humans: Labels, seed: int = SEED) -> dict[str, Run]:
    """The synthetic runs: every labelled pair scored ``quality * label + noise``.

    Scores are rounded to 4 decimals, as a run file would hold them.
    """
    rng = np.random.default_rng(seed)
    pairs = [(qid, docid, label) for qid, docs in humans.items() for docid, label in docs.items()]
    labels = np.array([label for *_, label in pairs], dtype=np.float64)
    runs: dict[str, Run] = {}
    for name, (quality, noise) in RUNS.items():
        scores = np.round(quality * labels + rng.normal(0.0, noise, size=len(pairs)), 4)
        run: Run = {}
        for (qid, docid, _), score in zip(pairs, scores.tolist(), strict=True):
            run.setdefault(qid, {})[docid] = score
        runs[name] = run
    return runs


def per_query(labels: Labels, runs: Mapping[str, Run], queries: Sequence[str]) -> FloatArray:
    """Each run's metrics per query on ``labels``: shape (queries, runs, metrics), NaN
    where a metric is undefined (no relevant passage among the labels)."""
    with warnings.catch_warnings():
        # The grade-map note on P@10's pass mark: the conventions are stated once, in
        # the README, not once per label set.
        warnings.simplefilter("ignore", raglabel.RaglabelWarning)
        report = raglabel.evaluate(labels, dict(runs), metrics=",".join(METRICS), k=10)
    found = report.per_query
    out = np.full((len(queries), len(runs), len(METRICS)), np.nan)
    for r, run in enumerate(runs):
        values = found[run]
        for q, qid in enumerate(queries):
            for m, metric in enumerate(METRICS):
                value = values.get(qid, {}).get(metric)
                if value is not None:
                    out[q, r, m] = value
    return out


@dataclass(frozen=True)
class Columns:
    """Per-query values as columns: every (run, metric), then every (difference, metric)."""

    values: FloatArray
    """Shape (queries, columns)."""
    names: list[tuple[str, str]]
    """(run or "A - B", metric) per column."""
    is_difference: NDArray[np.bool_]


def columns(values: FloatArray, runs: Sequence[str]) -> Columns:
    """The runs' columns and the paired differences' (NaN where either run's is)."""
    parts = [values[:, r, m] for r in range(len(runs)) for m in range(len(METRICS))]
    names = [(run, metric) for run in runs for metric in METRICS]
    for run, baseline in DIFFERENCES:
        a, b = runs.index(run), runs.index(baseline)
        parts += [values[:, a, m] - values[:, b, m] for m in range(len(METRICS))]
        names += [(f"{run} - {baseline}", metric) for metric in METRICS]
    flags = np.array([" - " in name for name, _ in names])
    return Columns(np.stack(parts, axis=1), names, flags)


# -- resampling ------------------------------------------------------------------------


def draw_queries(population: int, n: int, draws: int, seed: int) -> IntArray:
    """``draws`` rows of n query indices, each a uniform draw without replacement (the
    first n of a uniformly random permutation)."""
    rng = np.random.default_rng([seed, n])
    order: IntArray = np.argsort(rng.random((draws, population)), axis=1)[:, :n]
    return order.astype(np.int64)


@dataclass(frozen=True)
class Intervals:
    """Per draw and column: shape (draws, columns)."""

    covered: NDArray[np.bool_]
    width: FloatArray
    lam: FloatArray


@dataclass(frozen=True)
class Resampled:
    corrected: Intervals
    human_only: Intervals
    classic: Intervals
    """Prediction-powered inference with the judge's weight fixed at 1."""


def resample(
    f: FloatArray, h: FloatArray, drawn: IntArray, min_drawn: int = MIN_DRAWN
) -> Resampled:
    """The intervals of every draw (rows of ``drawn``) for every column at once.

    ``f`` and ``h``: shape (queries, columns), the judge's and people's per-query values.
    The draws go side by side as columns of one ``judge_corrected`` call: column
    ``d * k + j`` is column j under draw d, its population f[:, j] and its drawn pairs
    h[drawn[d], j] and f[drawn[d], j].
    """
    draws, n = drawn.shape
    k = f.shape[1]
    truth = np.nanmean(h, axis=0)
    population = np.tile(f, (1, draws))
    people = h[drawn].transpose(1, 0, 2).reshape(n, draws * k)
    judge = f[drawn].transpose(1, 0, 2).reshape(n, draws * k)
    tuned = judge_corrected(population, people, judge, min_drawn=min_drawn)
    fixed = judge_corrected(population, people, judge, lam=1.0, min_drawn=min_drawn)

    def intervals(low: FloatArray, high: FloatArray, lam: FloatArray) -> Intervals:
        low, high = low.reshape(draws, k), high.reshape(draws, k)
        covered = (low <= truth) & (truth <= high)
        return Intervals(covered, high - low, lam.reshape(draws, k))

    nan = np.full(draws * k, np.nan)
    return Resampled(
        intervals(tuned.corrected.low, tuned.corrected.high, tuned.lam),
        intervals(tuned.human_only.low, tuned.human_only.high, nan),
        intervals(fixed.corrected.low, fixed.corrected.high, fixed.lam),
    )


def correlation(f: FloatArray, h: FloatArray) -> FloatArray:
    """Pearson's r of each column of ``f`` with the same column of ``h``, over the
    queries where both are defined (NaN with fewer than 3, or a constant column)."""
    out = np.full(f.shape[1], np.nan)
    for j in range(f.shape[1]):
        ok = ~np.isnan(f[:, j]) & ~np.isnan(h[:, j])
        if ok.sum() < 3 or np.ptp(f[ok, j]) == 0.0 or np.ptp(h[ok, j]) == 0.0:
            continue
        out[j] = float(np.corrcoef(f[ok, j], h[ok, j])[0, 1])
    return out


@dataclass(frozen=True)
class ModelFigures:
    """One model's figures for one n: arrays over the columns of :class:`Columns`."""

    correlation: FloatArray
    bias: FloatArray
    """Judge-only mean (all queries) less people's mean (all queries)."""
    cover: FloatArray
    """Share of draws whose corrected interval covers people's all-queries mean."""
    human_cover: FloatArray
    classic_cover: FloatArray
    width_ratio: FloatArray
    """Mean corrected width over mean human-only width (draws where both exist)."""
    classic_width_ratio: FloatArray
    lam: FloatArray
    """Mean tuned weight of the judge over the draws."""
    failed: FloatArray
    """Share of draws with no corrected interval (too few defined pairs)."""


def figures(
    f: FloatArray, h: FloatArray, drawn: IntArray, min_drawn: int = MIN_DRAWN
) -> ModelFigures:
    """Everything reported of one model at one n, per column."""
    found = resample(f, h, drawn, min_drawn)
    both = ~np.isnan(found.corrected.width) & ~np.isnan(found.human_only.width)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column stays NaN

        def share(iv: Intervals) -> FloatArray:
            # Over the draws with an interval; one without is counted in ``failed``.
            covered: FloatArray = np.nanmean(
                np.where(np.isnan(iv.width), np.nan, iv.covered), axis=0
            )
            return covered

        def ratio(iv: Intervals) -> FloatArray:
            ok = both & ~np.isnan(iv.width)
            top = np.where(ok, iv.width, 0.0).sum(axis=0)
            bottom = np.where(ok, found.human_only.width, 0.0).sum(axis=0)
            return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)

        return ModelFigures(
            correlation=correlation(f, h),
            bias=np.nanmean(f, axis=0) - np.nanmean(h, axis=0),
            cover=share(found.corrected),
            human_cover=share(found.human_only),
            classic_cover=share(found.classic),
            width_ratio=ratio(found.corrected),
            classic_width_ratio=ratio(found.classic),
            lam=np.nanmean(found.corrected.lam, axis=0),
            failed=np.isnan(found.corrected.width).mean(axis=0),
        )


# -- the report ------------------------------------------------------------------------


def mean_over(values: FloatArray, chosen: NDArray[np.bool_]) -> float:
    picked = values[chosen]
    picked = picked[~np.isnan(picked)]
    return float(picked.mean()) if picked.size else math.nan


def percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f}"


def number(value: float, places: int = 2, sign: bool = False) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:+.{places}f}" if sign else f"{value:.{places}f}"


HEAD = [
    "model",
    "metric",
    "r means",
    "r diffs",
    "judge bias means",
    "judge bias diffs",
    "λ",
    "cover means %",
    "cover diffs %",
    "width means",
    "width diffs",
    "human-only cover means %",
    "human-only cover diffs %",
    "λ=1 cover means %",
    "λ=1 cover diffs %",
    "λ=1 width diffs",
]


def table_rows(name: str, cols: Columns, found: ModelFigures) -> list[list[str]]:
    """One row per metric: run-mean columns and difference columns averaged apart."""
    rows = []
    for metric in METRICS:
        of_metric = np.array([m == metric for _, m in cols.names])
        means, diffs = of_metric & ~cols.is_difference, of_metric & cols.is_difference
        rows.append(
            [
                name,
                SHOWN[metric],
                number(mean_over(found.correlation, means)),
                number(mean_over(found.correlation, diffs)),
                number(mean_over(found.bias, means), 3, sign=True),
                number(mean_over(found.bias, diffs), 3, sign=True),
                number(mean_over(found.lam, means)),
                percent(mean_over(found.cover, means)),
                percent(mean_over(found.cover, diffs)),
                number(mean_over(found.width_ratio, means)),
                number(mean_over(found.width_ratio, diffs)),
                percent(mean_over(found.human_cover, means)),
                percent(mean_over(found.human_cover, diffs)),
                percent(mean_over(found.classic_cover, means)),
                percent(mean_over(found.classic_cover, diffs)),
                number(mean_over(found.classic_width_ratio, diffs)),
            ]
        )
    return rows


def as_json(found: ModelFigures, cols: Columns) -> list[dict[str, Any]]:
    out = []
    for j, (column, metric) in enumerate(cols.names):
        row: dict[str, Any] = {"column": column, "metric": metric}
        for field in ModelFigures.__dataclass_fields__:
            value = float(getattr(found, field)[j])
            row[field] = None if math.isnan(value) else value
        out.append(row)
    return out


#: Issue 29's bars for its simulation tests, held here against real labels.
COVER_GOAL = 0.93
CORRELATED = 0.5


def goals(every: Sequence[ModelFigures]) -> list[tuple[bool | None, str]]:
    """Issue 29's bars over every (model, column): coverage of at least 93%, and a
    corrected interval narrower than the human-only one wherever the judge's per-query
    values correlate with people's at 0.5 or more."""
    cover = np.concatenate([found.cover for found in every])
    strong = np.concatenate([found.correlation >= CORRELATED for found in every])
    ratio = np.concatenate([found.width_ratio for found in every])
    covering = int((cover >= COVER_GOAL).sum())
    # People's own interval on the same draws: where it falls short too, the shortfall
    # is the normal interval's at this n, not the judge's.
    human = np.concatenate([found.human_cover for found in every])
    human_covering = int((human >= COVER_GOAL).sum())
    narrower = int((ratio[strong] < 1.0).sum())
    return [
        (
            covering == cover.size,
            f"corrected intervals cover the truth >= {100 * COVER_GOAL:.0f}% of draws:"
            f" {covering} of {cover.size} (model, column) pairs (lowest"
            f" {100 * float(np.nanmin(cover)):.1f}%); human-only on the same draws:"
            f" {human_covering} of {human.size} (lowest {100 * float(np.nanmin(human)):.1f}%)",
        ),
        (
            None if not strong.any() else narrower == int(strong.sum()),
            f"narrower than human-only where the judge's per-query r >= {CORRELATED}:"
            f" {narrower} of {int(strong.sum())} (model, column) pairs",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = make_parser(__doc__)
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder holding clones of llm4eval/LLMJudge and llm4eval/LLMJudge-benchmark"
        " (default: benchmarks/data/llmjudge, else /work/.mirror)",
    )
    parser.add_argument(
        "--models", default=None, help="comma-separated submission names (default: all)"
    )
    parser.add_argument(
        "--drawn", default="10,15", help="numbers of drawn queries, comma-separated (default 10,15)"
    )
    parser.add_argument("--draws", type=int, default=2000, help="draws per n (default 2000)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"seed (default {SEED})")
    args = parse(parser, argv)
    data = args.data or next((d for d in DEFAULT_DATA if d.is_dir()), DEFAULT_DATA[0])
    try:
        drawn_sizes = [int(part) for part in args.drawn.split(",")]
    except ValueError:
        parser.error(f"--drawn: comma-separated whole numbers, got {args.drawn!r}")
    if args.draws < 1:
        parser.error("--draws must be at least 1")
    only = None if args.models is None else [m.strip() for m in args.models.split(",") if m.strip()]
    try:
        sets = load(data, only)
    except DataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    queries = sorted(sets.humans)
    for n in drawn_sizes:
        if not MIN_DRAWN <= n < len(queries):
            parser.error(f"--drawn: {n} is not between {MIN_DRAWN} and {len(queries) - 1}")

    runs = make_runs(sets.humans, args.seed)
    names = list(runs)
    people = columns(per_query(sets.humans, runs, queries), names)
    judged = {
        m: columns(per_query(labels, runs, queries), names) for m, labels in sets.models.items()
    }

    pairs = sum(map(len, sets.humans.values()))
    print(
        f"\n{len(sets.models)} model label sets, {len(queries)} queries, {pairs} pairs;"
        f" synthetic runs {', '.join(names)} (seed {args.seed});"
        f" differences {', '.join(f'{a} - {b}' for a, b in DIFFERENCES)}"
    )
    truth = np.nanmean(people.values, axis=0)
    print(
        "people's means over all queries (the truth every interval is to cover): "
        + "; ".join(
            f"{column} {SHOWN[metric]} {value:+.3f}"
            if " - " in column
            else f"{column} {SHOWN[metric]} {value:.3f}"
            for (column, metric), value in zip(people.names, truth.tolist(), strict=True)
        )
    )
    for name, lines in sets.dropped.items():
        if lines:
            print(f"{name}: {len(lines)} label(s) off the 0-3 scale left out: {', '.join(lines)}")

    results: dict[str, Any] = {}
    for n in drawn_sizes:
        drawn = draw_queries(len(queries), n, args.draws, args.seed)
        rows: list[list[str]] = []
        results[str(n)] = {}
        every: list[ModelFigures] = []
        for model in sorted(sets.models, key=str.lower):
            found = figures(judged[model].values, people.values, drawn)
            every.append(found)
            rows += table_rows(model, people, found)
            results[str(n)][model] = as_json(found, people)
        print(
            f"\n### {n} of {len(queries)} queries drawn, {args.draws} draws\n\n"
            f"Coverage is of people's mean over all {len(queries)} queries (a finite"
            f" population); widths are corrected over human-only (mean widths).\n"
        )
        print(markdown_table(HEAD, rows))
        print_goals(goals(every))

    report = {
        "drawn": drawn_sizes,
        "draws": args.draws,
        "seed": args.seed,
        "runs": RUNS,
        "differences": DIFFERENCES,
        "metrics": METRICS,
        "data": str(data),
        "commits": sets.commits,
        "dropped": sets.dropped,
        "truth": {f"{c} {m}": v for (c, m), v in zip(people.names, truth.tolist(), strict=True)},
        "models": results,
        "versions": versions(),
        "machine": machine(),
    }
    out = write_results(f"corrected-{utc_stamp(datetime.now(UTC))}", report)
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
