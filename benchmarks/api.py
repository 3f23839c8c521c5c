"""The Python API against its peers, in one process: raglabel.evaluate on dicts, polars
and pandas frames beside pytrec_eval and ir_measures on the same data.

    python benchmarks/api.py [--repeat N] [--queries Q] [--docs D]

The data: Q queries (default 1,000) x D retrieved passages (default 100), so 100,000
run entries, with graded qrels (labels 0-3, 30 judged passages a query, some of them
not retrieved), generated from a fixed seed. Each run holds its passages best first,
as a retriever gives them; a second dict row holds the same entries in random order.

Each contender computes AP, nDCG@10, P@10 and RR for every query and their means:

- pytrec_eval: ``RelevanceEvaluator(qrels, measures).evaluate(run)``, the evaluator
  built inside the timing, as a notebook does for each new qrels.
- ir_measures: ``calc_aggregate([AP, nDCG@10, P@10, RR], qrels, run)`` on the dicts.
- raglabel: ``raglabel.evaluate(qrels, run, metrics=..., na="zero",
  relevance_threshold=3)`` (trec_eval's conventions: NA counts 0, label 1 and up is
  relevant), on dicts, on polars frames and on pandas frames: with the text type
  pandas picks (its ``str``, kept in Python objects, or in pyarrow when pyarrow is
  installed; the output says which), with ``object`` columns (pandas 2's default), and
  with ``string[pyarrow]`` columns when pyarrow is installed and pandas picks another.

All contenders run in this process, interleaved (round r times each in turn, the
order rotated each round), after one warm-up call each; the table gives the best and
the median of N rounds (default 15), the ratio of a contender's best to pytrec_eval's
best, and the median over rounds of the ratio of the two times in one round (paired:
a busy moment of a shared machine slows both). The goals are judged on the bests.
Before timing, the means of the four metrics are checked to agree across contenders.
"""

from __future__ import annotations

import gc
import importlib.util
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from common import add_repeat, machine, make_parser, markdown_table, parse, print_goals, versions

Table = dict[str, dict[str, Any]]

SEED = 27
LABELS = (0, 0, 0, 1, 1, 2, 3)
JUDGED = 30
RAGLABEL = "map,ndcg_cut_10,P_10,recip_rank"
PYTREC = {"map", "ndcg_cut.10", "P.10", "recip_rank"}
# The same four measures under each tool's name: raglabel's, pytrec_eval's, ir_measures'.
SAME = (("ap", "map", "AP"), ("ndcg@10", "ndcg_cut_10", "nDCG@10"))
SAME += (("precision@10", "P_10", "P@10"), ("mrr", "recip_rank", "RR"))


def make_data(queries: int, docs: int) -> tuple[Table, Table, Table]:
    """Graded qrels, a run best first, and the same run in a random order."""
    rng = random.Random(SEED)
    qrels: Table = {}
    run: Table = {}
    shuffled: Table = {}
    for q in range(queries):
        qid = f"q{q}"
        pool = [f"doc{q}_{i}" for i in range(docs + docs // 5)]
        retrieved = rng.sample(pool, docs)
        scores = sorted((rng.random() * 20 for _ in retrieved), reverse=True)
        run[qid] = dict(zip(retrieved, scores, strict=True))
        qrels[qid] = {d: rng.choice(LABELS) for d in rng.sample(pool, JUDGED)}
        items = list(run[qid].items())
        rng.shuffle(items)
        shuffled[qid] = dict(items)
    return qrels, run, shuffled


def frames(module: Any, qrels: Table, run: Table, texts: Any = None) -> tuple[Any, Any]:
    """The dicts as two frames with ir_measures' column names (pandas: the ids' columns
    of type ``texts``, when given)."""
    q_rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    r_rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    if module.__name__ == "polars":
        return (
            module.DataFrame(q_rows, schema=["query_id", "doc_id", "relevance"], orient="row"),
            module.DataFrame(r_rows, schema=["query_id", "doc_id", "score"], orient="row"),
        )
    made = (
        module.DataFrame(q_rows, columns=["query_id", "doc_id", "relevance"]),
        module.DataFrame(r_rows, columns=["query_id", "doc_id", "score"]),
    )
    if texts is None:
        return made
    ids = {"query_id": texts, "doc_id": texts}
    return made[0].astype(ids), made[1].astype(ids)


def picked_by_pandas(pandas: Any) -> Any:
    """The type pandas gives a column of str (its ``storage`` says where it keeps them)."""
    return pandas.DataFrame({"id": ["q1"]})["id"].dtype


def pandas_texts(pandas: Any) -> dict[str, Any]:
    """The pandas contenders' names and the ids' column types they use (None: the type
    pandas picks)."""
    texts: dict[str, Any] = {"": None, ", object": object}
    picked = getattr(picked_by_pandas(pandas), "storage", None)
    if picked != "pyarrow" and importlib.util.find_spec("pyarrow") is not None:
        texts[", string[pyarrow]"] = "string[pyarrow]"
    return {f"raglabel.evaluate (pandas{name})": dtype for name, dtype in texts.items()}


def contenders(qrels: Table, run: Table, shuffled: Table) -> dict[str, Callable[[], Any]]:
    import ir_measures
    import pandas
    import polars
    import pytrec_eval

    import raglabel

    measures = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P @ 10, ir_measures.RR]
    pl_qrels, pl_run = frames(polars, qrels, run)

    def ours(labels: Any, ranked: Any) -> Callable[[], Any]:
        return lambda: raglabel.evaluate(
            labels, ranked, metrics=RAGLABEL, na="zero", relevance_threshold=3
        )

    work: dict[str, Callable[[], Any]] = {
        "pytrec_eval (dicts)": lambda: pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(run),
        "ir_measures (dicts)": lambda: ir_measures.calc_aggregate(measures, qrels, run),
        "raglabel.evaluate (dicts)": ours(qrels, run),
        "raglabel.evaluate (dicts, random order)": ours(qrels, shuffled),
        "raglabel.evaluate (polars)": ours(pl_qrels, pl_run),
    }
    for name, texts in pandas_texts(pandas).items():
        work[name] = ours(*frames(pandas, qrels, run, texts))
    return work


def check_agreement(results: dict[str, Any]) -> None:
    """The four means, contender by contender, equal pytrec_eval's (to 1e-9)."""
    per_query = results["pytrec_eval (dicts)"]
    aggregate = {str(k): v for k, v in results["ir_measures (dicts)"].items()}
    for ours, trec, measure in SAME:
        expected = statistics.fmean(values[trec] for values in per_query.values())
        got = {"ir_measures": aggregate[measure]}
        for name, value in results.items():
            if name.startswith("raglabel"):
                got[name] = value.means["run"][ours]
        for who, value in got.items():
            if abs(value - expected) > 1e-9:
                raise SystemExit(f"{who}: {ours} = {value}, pytrec_eval says {expected}")


def timed(work: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    names = list(work)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        # Each round starts with a different contender, so a slow moment of a shared
        # machine does not always fall on the same one.
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            start = time.perf_counter()
            work[name]()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = make_parser(__doc__)
    add_repeat(parser, "timed rounds of every contender (default 15)", default=15)
    parser.add_argument("--queries", type=int, default=1000, metavar="Q")
    parser.add_argument("--docs", type=int, default=100, metavar="D")
    args = parse(parser, argv)
    qrels, run, shuffled = make_data(args.queries, args.docs)
    work = contenders(qrels, run, shuffled)
    with warnings.catch_warnings():
        # raglabel says how it reads the trec_eval names (the conventions are given).
        warnings.simplefilter("ignore")
        check_agreement({name: call() for name, call in work.items()})  # and the warm-up
        seconds = timed(work, args.repeat)
    best = {name: min(times) for name, times in seconds.items()}
    base = best["pytrec_eval (dicts)"]
    paired = {
        name: statistics.median(
            t / b for t, b in zip(times, seconds["pytrec_eval (dicts)"], strict=True)
        )
        for name, times in seconds.items()
    }
    entries = sum(len(docs) for docs in run.values())
    print(
        f"{entries:,} run entries ({args.queries:,} queries x {args.docs} passages),"
        f" {sum(len(d) for d in qrels.values()):,} qrels; best and median of"
        f" {args.repeat} interleaved rounds, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    print(f"{versions('pytrec-eval-terrier', 'ir-measures', 'pandas', 'polars', 'pyarrow')}")
    print(f"{machine()}")
    import pandas

    picked = picked_by_pandas(pandas)
    where = getattr(picked, "storage", None)
    print(f"pandas picks {picked}{f' (kept in {where})' if where else ''} for a column of texts")
    print()
    rows = [
        [
            name,
            f"{best[name]:.4f}",
            f"{statistics.median(times):.4f}",
            f"{best[name] / base:.2f}x",
            f"{paired[name]:.2f}x",
        ]
        for name, times in seconds.items()
    ]
    header = ["contender", "best s", "median s", "best / best", "median of round ratios"]
    print(markdown_table(header, rows))
    ratio = {name: best[name] / base for name in best}

    def within(name: str, goal: float, what: str) -> tuple[bool, str]:
        return (
            ratio[name] <= goal,
            f"{what} <= {goal}x pytrec_eval: {ratio[name]:.2f}x"
            f" (median of round ratios {paired[name]:.2f}x)",
        )

    irm = best["ir_measures (dicts)"]
    goals = [
        within("raglabel.evaluate (dicts)", 1.5, "dicts"),
        (
            best["raglabel.evaluate (dicts)"] < irm,
            f"dicts faster than ir_measures: {best['raglabel.evaluate (dicts)']:.4f} s"
            f" vs {irm:.4f} s",
        ),
        within("raglabel.evaluate (polars)", 1.0, "polars"),
    ]
    goals += [
        within(name, 1.0, name.removeprefix("raglabel.evaluate (").removesuffix(")"))
        for name in best
        if name.startswith("raglabel.evaluate (pandas")
    ]
    print_goals(goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
