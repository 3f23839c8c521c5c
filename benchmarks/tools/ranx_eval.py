"""ranx comparison: load a qrels and a run from disk, print mean metrics as JSON.

    python benchmarks/tools/ranx_eval.py QRELS RUN

How ranx's conventions line up with trec_eval's (and so with raglabel's defaults):

* ranx filters judgments per metric by a relevance level (``metric-lN``, default 1) and
  uses the raw label as gain. ``ndcg@10`` at the default level 1 therefore keeps labels
  >= 1 with gain = label, the same as trec_eval's ndcg_cut.10 (which gives labels <= 0 no
  gain whatever relevance_level says). Plain ``recall@100`` and ``mrr`` would count label
  1 as relevant, so they are asked for at level 2 (``-l2``) to match relevance_level=2.
* ranx's ``ndcg`` is the Järvelin formulation (gain = label), as trec_eval's; ranx's
  ``ndcg_burges`` (2^label - 1) would not match.
* Tied scores: trec_eval (and raglabel) order ties by docid, descending; ranx sorts by
  score with an unstable sort and ignores docids, so with ties at a cutoff or above the
  first relevant passage ranx's values can differ slightly from the other two.
* ranx evaluates the union of queries and requires qrels and run to hold the same query
  ids; the generated data has every query in both.
"""

from __future__ import annotations

import json
import sys

from ranx import Qrels, Run, evaluate  # type: ignore[import-untyped]

METRICS = {"ndcg@10": "ndcg@10", "recall@100-l2": "recall@100", "mrr-l2": "mrr"}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    qrels_path, run_path = argv
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    scores = evaluate(qrels, run, list(METRICS))
    means = {name: float(scores[metric]) for metric, name in METRICS.items()}
    json.dump({"tool": "ranx", "queries": len(run), "mean": means}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
