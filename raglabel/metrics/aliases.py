"""The names other evaluation tools give raglabel's measures, and what they mean there.

People type the names of the tool they know: trec_eval's ``P_5`` and ``map_cut_100``,
ir_measures' ``nDCG@10`` and ``RR``, ranx's ``map@100``, ``hit_rate@10`` and
``ndcg_burges@10``. Each is read as the measure it means in that tool; where the same
spelling means something else elsewhere, or the tool reports more than raglabel computes,
:mod:`raglabel.metrics.readings` says which one was computed.
"""

from __future__ import annotations

#: Names without a cutoff, lower case: name -> (raglabel's base, the tools that use it).
PLAIN: dict[str, tuple[str, str]] = {
    "map": ("ap", "trec_eval and ranx"),
    "recip_rank": ("mrr", "trec_eval"),
    "rr": ("mrr", "ir_measures"),
    "r-prec": ("rprec", "ir_measures"),
    "r-precision": ("rprec", "ranx"),
    "ndcg_burges": ("ndcg_exp", "ranx"),
}

#: Names that take a cutoff (``P_5``, ``P.5``, ``P@5``), lower case: name -> (raglabel's
#: base, the tools that use it).
CUT: dict[str, tuple[str, str]] = {
    "p": ("precision", "trec_eval and ir_measures"),
    "r": ("recall", "ir_measures"),
    "ndcg_cut": ("ndcg", "trec_eval"),
    "map_cut": ("ap", "trec_eval"),
    "map": ("ap", "ranx"),
    "success": ("hit", "trec_eval and ir_measures"),
    "hit_rate": ("hit", "ranx"),
    "rr": ("mrr", "ir_measures"),
    "recip_rank": ("mrr", "trec_eval"),  # uncut there; cut, it is RR@k
    "ndcg_burges": ("ndcg_exp", "ranx"),
}


def tools_of(alias: str, cut: str | None) -> list[str]:
    """The tools that spell a measure ``alias`` (lower case, without the cutoff)."""
    table = PLAIN if cut is None and alias in PLAIN else CUT
    spelled = table.get(alias, ("", "trec_eval"))[1]  # recall_100: trec_eval's own
    return spelled.split(" and ")


#: Names that, without a cutoff, stand in their tool for a list of cutoffs (trec_eval's
#: ``P`` is P_5 to P_1000) or for the whole ranking (ranx's ``hit_rate``): raglabel
#: computes them at the ``-k`` cutoffs instead, and says so. Name -> what the tool means.
FAMILIES: dict[str, str] = {
    "p": "trec_eval's P reports P_5, P_10, P_15, P_20, P_30, P_100, P_200, P_500 and P_1000",
    "success": "trec_eval's success reports success_1, success_5 and success_10",
    "ndcg_cut": "trec_eval's ndcg_cut reports ndcg_cut_5 to ndcg_cut_1000",
    "map_cut": "trec_eval's map_cut reports map_cut_5 to map_cut_1000",
    "hit_rate": "ranx's hit_rate without a cutoff looks at the whole ranking",
}

#: Words people write for a measure, for suggestions only: a word -> raglabel's base.
#: An unknown name is matched against these by meaning first, then by spelling.
SYNONYMS: dict[str, str] = {
    "average_precision": "ap",
    "mean_average_precision": "ap",
    "avg_precision": "ap",
    "reciprocal_rank": "mrr",
    "mean_reciprocal_rank": "mrr",
    "hits": "hit",
    "hitrate": "hit",
    "hit_ratio": "hit",
    "success_rate": "hit",
    "top_k_accuracy": "hit",
    "accuracy": "hit",
    "r_precision": "rprec",
    "rprecision": "rprec",
    "f1_score": "f1",
    "fscore": "f1",
    "f_score": "f1",
    "f_measure": "f1",
    "f": "f1",
    "prec": "precision",
    "rec": "recall",
    "dcg": "ndcg",
    "ndcg_exp": "ndcg_exp",
    "ndcg_exponential": "ndcg_exp",
    "exp_ndcg": "ndcg_exp",
    "mrr_cut": "mrr",
}
