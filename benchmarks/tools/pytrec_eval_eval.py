"""pytrec_eval baseline: load a qrels and a run from disk, print mean metrics as JSON.

python benchmarks/tools/pytrec_eval_eval.py QRELS RUN
"""

from __future__ import annotations

import json
import sys

import pytrec_eval

# trec_eval's measure names -> the names the benchmark compares under.
MEASURES = {"ndcg_cut_10": "ndcg@10", "recall_100": "recall@100", "recip_rank": "mrr"}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    qrels_path, run_path = argv
    with open(qrels_path) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(run_path) as handle:
        run = pytrec_eval.parse_run(handle)
    # relevance_level=2 is raglabel's default relevance threshold (TREC label 2 = grade 4);
    # it governs recall and recip_rank. ndcg_cut uses the raw labels as gains regardless.
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "recall.100", "recip_rank"}, relevance_level=2
    )
    per_query = evaluator.evaluate(run)
    n = len(per_query)
    means = {
        name: sum(values[measure] for values in per_query.values()) / n if n else 0.0
        for measure, name in MEASURES.items()
    }
    json.dump({"tool": "pytrec_eval", "queries": n, "mean": means}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
