"""One line per metric saying what it measures under the conventions in force.

Reports print these beside their figures (``Harm@5: share of the top 5 graded 2 or
lower``), so that a reader never has to guess a threshold; the grading app can show the
same text for a :class:`MetricKey`.
"""

from __future__ import annotations

from raglabel.metrics.config import MetricConfig
from raglabel.metrics.names import MetricKey


def _top(k: int | None) -> str:
    return "the whole ranking" if k is None else f"the top {k}"


def definition(key: MetricKey, config: MetricConfig | None = None) -> str:
    """What ``key`` measures with ``config``'s thresholds, as ``name: text``."""
    cfg = config or MetricConfig()
    rel = cfg.relevance_threshold
    relevant = f"graded {rel} or higher" if rel < 5 else "graded 5"
    top = _top(key.k)
    k = "K" if key.k is None else str(key.k)
    texts = {
        "ra_nwg": f"rarity-weighted gain of {top} / the best possible over the labels",
        "proc": f"best rarity-weighted gain of the retrieval pool at {k} / the best possible",
        "pct_proc": f"RA-nWG@{k} / PROC@{k}: how much of its pool's best the run ranks on top",
        "n_recall_4plus": f"passages graded 4 or higher in {top} / min({k}, how many exist)",
        "n_recall_5": f"passages graded 5 in {top} / min({k}, how many exist)",
        "precision_4plus": f"share of {top} graded 4 or higher",
        "harm": f"share of {top} graded {cfg.harm_threshold} or lower",
        "judged": f"share of {top} that has a grade",
        "hit": f"1 if {top} holds a passage {relevant}",
        "recall": f"passages {relevant} in {top} / all passages {relevant}",
        "recall_all": f"1 if {top} holds every passage {relevant}",
        "precision": f"share of {top} {relevant}",
        "mrr": f"1 / rank of the first passage {relevant} in {top}",
        "ndcg": f"DCG of {top} / ideal DCG (linear gains of the gain map, log2 discount)",
        "ndcg_exp": f"DCG of {top} / ideal DCG with exponential gains 2^g - 1 of the gain "
        "map's g (ranx's ndcg_burges), log2 discount",
        "f1": f"harmonic mean of precision and recall of {top}: 2 x passages {relevant} "
        f"in {top} / ({k} + all passages {relevant})",
        "containment": f"1 if a passage of {top} contains the expected answer",
        "ap": f"average precision over {top}: mean precision at each passage {relevant}, "
        "over all of them",
        "rprec": f"share of the top R {relevant}, R the number of such passages",
        "bpref": f"trec_eval's bpref: passages {relevant} ranked above judged lower ones",
        "ctx_rank_prec": f"100 x DCG of {top} / DCG of the same passages sorted by grade",
        "ctx_rank_pass": f"1 if ctx_rank_prec@{k} reaches {cfg.ctx_threshold:g}",
    }
    text = texts.get(key.base, key.base)
    return f"{display_name(key)}: {text}"


_DISPLAY = {
    "ra_nwg": "RA-nWG",
    "proc": "PROC",
    "pct_proc": "%PROC",
    "n_recall_4plus": "N-Recall4+",
    "n_recall_5": "N-Recall5",
    "precision_4plus": "Precision4+",
    "harm": "Harm",
    "judged": "Judged",
    "hit": "hit",
    "recall": "recall",
    "recall_all": "recall_all",
    "precision": "precision",
    "mrr": "MRR",
    "ndcg": "nDCG",
    "ndcg_exp": "nDCG-exp",
    "f1": "F1",
    "containment": "containment",
    "ap": "AP",
    "rprec": "R-precision",
    "bpref": "bpref",
    "ctx_rank_prec": "ctx_rank_prec",
    "ctx_rank_pass": "ctx_rank_pass",
}


def display_name(key: MetricKey) -> str:
    """The name people write the metric under (``Harm@5``, ``nDCG@10``, ``MRR``)."""
    base = _DISPLAY.get(key.base, key.base)
    return base if key.k is None else f"{base}@{key.k}"


def definitions(keys: list[MetricKey], config: MetricConfig | None = None) -> list[str]:
    """One definition per base metric of ``keys`` (the first cutoff asked for stands for
    the others), in the order asked."""
    seen: dict[tuple[str, bool], MetricKey] = {}
    for key in keys:
        seen.setdefault((key.base, key.k is None), key)
    return [definition(key, config) for key in seen.values()]
