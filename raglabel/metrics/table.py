"""Every measure raglabel computes, one record each: the one place its facts are written.

A record holds raglabel's name for the measure, the group it belongs to, the names
trec_eval, ir_measures and ranx give it, the words people write for it, the name
reports and the app show, a shorter one for narrow screens, which way is better, the
largest value it takes, and the sentence that defines it. Everything else reads these
records: the name reader (:mod:`raglabel.metrics.names`, through
:mod:`raglabel.metrics.aliases`), the definitions printed beside figures
(:mod:`raglabel.metrics.definitions`), the app's column headers, the report's "lower is
better", and the range a judge-corrected interval is cut to. Table order is the order of
:data:`raglabel.metrics.names.KNOWN_METRICS`, which error messages list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raglabel.metrics.record import FrozenRecord

if TYPE_CHECKING:  # annotations only: no typing objects built at every eval's start-up
    from typing import Literal, TypeAlias

    Group: TypeAlias = Literal["set", "classic", "ranking", "trec", "peer"]
    Better: TypeAlias = Literal["higher", "lower"]
    #: Whether a measure exists without a cutoff: ``never`` (only at k); ``named``
    #: (named alone it is the measure over the whole ranking, as in trec_eval,
    #: ir_measures and ranx, but a group holds it at the ``-k`` cutoffs); ``grouped``
    #: (as ``named``, and a group adds the uncut form); ``only`` (it takes no cutoff).
    Uncut: TypeAlias = Literal["never", "named", "grouped", "only"]

#: The tools whose names raglabel reads, in the order their names are listed.
TOOLS = ("trec_eval", "ir_measures", "ranx")


# Hand-written, not a dataclass: the table is built at every eval's start-up, and a
# dataclass compiles its generated methods when its module is imported (see record.py).
class Metric(FrozenRecord):
    """One measure.

    ``trec_eval``, ``ir_measures`` and ``ranx`` hold each tool's own spellings of the
    measure, written as the tool writes them: a cutoff as ``_k`` (trec_eval's
    ``P_k``) or ``@k`` (``nDCG@k``), no cutoff for a measure over the whole ranking
    (``recip_rank@k``, which trec_eval has only uncut, is raglabel's reading of a cutoff
    on it). A spelling that is raglabel's own name in another case (ir_measures'
    ``AP``) is listed to say the tool has the measure; it is no alias. ``families``
    says, for a name taking a cutoff that its tool also accepts without one, what the
    tool means by it alone (raglabel computes it at the ``-k`` cutoffs instead).
    ``words`` are what people write for the measure, matched only to suggest a name.
    ``definition`` is a sentence with the fields ``top`` ("the top 5"), ``k``,
    ``relevant`` ("graded 3 or higher"), ``harm`` and ``ctx`` (the thresholds in force).
    ``highest`` is the largest value the measure takes (its values lie in [0, highest]):
    an interval around a mean is cut to that range.
    """

    __slots__ = (
        "better",
        "definition",
        "display",
        "families",
        "group",
        "highest",
        "ir_measures",
        "name",
        "ranked_list",
        "ranx",
        "short",
        "trec_eval",
        "uncut",
        "words",
    )

    name: str
    group: Group
    display: str
    short: str
    better: Better
    definition: str
    highest: float
    uncut: Uncut
    ranked_list: bool
    trec_eval: tuple[str, ...]
    ir_measures: tuple[str, ...]
    ranx: tuple[str, ...]
    families: tuple[tuple[str, str], ...]
    words: tuple[str, ...]

    def __init__(
        self,
        name: str,
        group: Group,
        *,
        display: str,
        short: str,
        better: Better = "higher",
        definition: str,
        highest: float = 1.0,
        uncut: Uncut = "never",
        ranked_list: bool = False,
        trec_eval: tuple[str, ...] = (),
        ir_measures: tuple[str, ...] = (),
        ranx: tuple[str, ...] = (),
        families: tuple[tuple[str, str], ...] = (),
        words: tuple[str, ...] = (),
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "name", name)
        setattr_(self, "group", group)
        setattr_(self, "display", display)
        setattr_(self, "short", short)
        setattr_(self, "better", better)
        setattr_(self, "definition", definition)
        setattr_(self, "highest", highest)
        setattr_(self, "uncut", uncut)
        setattr_(self, "ranked_list", ranked_list)
        setattr_(self, "trec_eval", trec_eval)
        setattr_(self, "ir_measures", ir_measures)
        setattr_(self, "ranx", ranx)
        setattr_(self, "families", families)
        setattr_(self, "words", words)

    def __repr__(self) -> str:
        return f"Metric({self.name!r}, {self.group!r}, display={self.display!r})"

    def spellings(self, tool: str) -> tuple[str, ...]:
        """How ``tool`` (one of :data:`TOOLS`) writes this measure; empty if it lacks it."""
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}; the tools are {', '.join(TOOLS)}")
        spelt: tuple[str, ...] = getattr(self, tool)
        return spelt


METRICS: tuple[Metric, ...] = (
    # -- raglabel's set-based measures (the metric spec) ----------------------------------
    Metric(
        "ra_nwg",
        "set",
        display="RA-nWG",
        short="RA-nWG",
        definition="rarity-weighted gain of {top} / the best possible over the labels",
    ),
    Metric(
        "proc",
        "set",
        display="PROC",
        short="PROC",
        definition="best rarity-weighted gain of the retrieval pool at {k} / the best possible",
    ),
    Metric(
        "pct_proc",
        "set",
        display="%PROC",
        short="%PROC",
        definition="RA-nWG@{k} / PROC@{k}: how much of its pool's best the run ranks on top",
    ),
    Metric(
        "n_recall_4plus",
        "set",
        display="N-Recall4+",
        short="NR4+",
        definition="passages graded 4 or higher in {top} / min({k}, how many exist)",
    ),
    Metric(
        "n_recall_5",
        "set",
        display="N-Recall5",
        short="NR5",
        definition="passages graded 5 in {top} / min({k}, how many exist)",
    ),
    Metric(
        "precision_4plus",
        "set",
        display="Precision4+",
        short="Prec4+",
        definition="share of {top} graded 4 or higher",
    ),
    Metric(
        "harm",
        "set",
        display="Harm",
        short="Harm",
        better="lower",  # the share of harmful passages on top
        definition="share of {top} graded {harm} or lower",
    ),
    Metric(
        "judged",
        "set",
        display="Judged",
        short="Judged",
        # ir_measures' Judged@k divides by k, raglabel's by the passages returned:
        # the notes on typed names say so (analysis.metric_notes).
        ir_measures=("Judged@k",),
        definition="share of {top} that has a grade",
    ),
    # -- the classic measures -------------------------------------------------------------
    Metric(
        "hit",
        "classic",
        display="hit",
        short="hit",
        ranked_list=True,
        trec_eval=("success_k",),
        ir_measures=("Success@k",),
        ranx=("hit_rate@k",),
        families=(
            ("success", "trec_eval's success reports success_1, success_5 and success_10"),
            ("hit_rate", "ranx's hit_rate without a cutoff looks at the whole ranking"),
        ),
        words=(
            "hits",
            "hitrate",
            "hit_ratio",
            "success_rate",
            "top_k_accuracy",
            "accuracy",
        ),
        definition="1 if {top} holds a passage {relevant}",
    ),
    Metric(
        "recall",
        "classic",
        display="recall",
        short="recall",
        ranked_list=True,
        trec_eval=("recall_k",),
        ir_measures=("R@k",),
        ranx=("recall@k",),
        words=("rec",),
        definition="passages {relevant} in {top} / all passages {relevant}",
    ),
    Metric(
        "recall_all",
        "classic",
        display="recall_all",
        short="rec_all",
        ranked_list=True,
        definition="1 if {top} holds every passage {relevant}",
    ),
    Metric(
        "precision",
        "classic",
        display="precision",
        short="prec",
        ranked_list=True,
        trec_eval=("P_k",),
        ir_measures=("P@k",),
        ranx=("precision@k",),
        families=(
            (
                "p",
                "trec_eval's P reports P_5, P_10, P_15, P_20, P_30, P_100, P_200, P_500 and P_1000",
            ),
        ),
        words=("prec",),
        definition="share of {top} {relevant}",
    ),
    Metric(
        "mrr",
        "classic",
        display="MRR",
        short="MRR",
        uncut="grouped",
        ranked_list=True,
        # trec_eval's recip_rank is uncut; raglabel reads recip_rank@k as RR@k.
        trec_eval=("recip_rank", "recip_rank@k"),
        ir_measures=("RR", "RR@k"),
        ranx=("mrr", "mrr@k"),
        words=("reciprocal_rank", "mean_reciprocal_rank", "mrr_cut"),
        definition="1 / rank of the first passage {relevant} in {top}",
    ),
    Metric(
        "ndcg",
        "classic",
        display="nDCG",
        short="nDCG",
        uncut="named",
        ranked_list=True,
        trec_eval=("ndcg", "ndcg_cut_k"),
        ir_measures=("nDCG", "nDCG@k"),
        ranx=("ndcg", "ndcg@k"),
        families=(("ndcg_cut", "trec_eval's ndcg_cut reports ndcg_cut_5 to ndcg_cut_1000"),),
        words=("dcg",),
        definition="DCG of {top} / ideal DCG (linear gains of the gain map, log2 discount)",
    ),
    Metric(
        "containment",
        "classic",
        display="containment",
        short="contain",
        definition="1 if a passage of {top} contains the expected answer",
    ),
    # -- rankings of a retrieved context --------------------------------------------------
    Metric(
        "ctx_rank_prec",
        "ranking",
        display="ctx_rank_prec",
        short="ctx_prec",
        definition="100 x DCG of {top} / DCG of the same passages sorted by grade",
        highest=100.0,
    ),
    Metric(
        "ctx_rank_pass",
        "ranking",
        display="ctx_rank_pass",
        short="ctx_pass",
        definition="1 if ctx_rank_prec@{k} reaches {ctx:g}",
    ),
    # -- trec_eval's ranked-list measures beside the classic ones -------------------------
    Metric(
        "ap",
        "trec",
        display="AP",
        short="AP",
        uncut="grouped",
        ranked_list=True,
        trec_eval=("map", "map_cut_k"),
        ir_measures=("AP", "AP@k"),
        ranx=("map", "map@k"),
        families=(("map_cut", "trec_eval's map_cut reports map_cut_5 to map_cut_1000"),),
        words=("average_precision", "mean_average_precision", "avg_precision"),
        definition="average precision over {top}: mean precision at each passage "
        "{relevant}, over all of them",
    ),
    Metric(
        "rprec",
        "trec",
        display="R-precision",
        short="R-prec",
        uncut="only",
        ranked_list=True,
        trec_eval=("Rprec",),
        ir_measures=("R-Prec",),
        ranx=("r-precision",),
        words=("r_precision", "rprecision"),
        definition="share of the top R {relevant}, R the number of such passages",
    ),
    Metric(
        "bpref",
        "trec",
        display="bpref",
        short="bpref",
        uncut="only",
        ranked_list=True,
        trec_eval=("bpref",),
        ir_measures=("Bpref",),
        ranx=("bpref",),
        definition="trec_eval's bpref: passages {relevant} ranked above judged lower ones",
    ),
    # -- measures other libraries report, computed when named (no group holds them) ------
    Metric(
        "f1",
        "peer",
        display="F1",
        short="F1",
        ranked_list=True,
        ranx=("f1@k",),
        words=("f1_score", "fscore", "f_score", "f_measure", "f"),
        definition="harmonic mean of precision and recall of {top}: 2 x passages {relevant} "
        "in {top} / ({k} + all passages {relevant})",
    ),
    Metric(
        "ndcg_exp",
        "peer",
        display="nDCG-exp",
        short="nDCG-exp",
        uncut="named",
        ranked_list=True,
        ranx=("ndcg_burges", "ndcg_burges@k"),
        words=("ndcg_exponential", "exp_ndcg"),
        definition="DCG of {top} / ideal DCG with exponential gains 2^g - 1 of the gain "
        "map's g (ranx's ndcg_burges), log2 discount",
    ),
)

#: Each record by its name.
BY_NAME: dict[str, Metric] = {metric.name: metric for metric in METRICS}


def metric(name: str) -> Metric:
    """The record of ``name`` (raglabel's base name, ``ndcg``); a KeyError naming the
    known ones for any other."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(
            f"no metric named {name!r} in the table; known: {', '.join(BY_NAME)}"
        ) from None


def names_in(group: Group) -> tuple[str, ...]:
    """The names of ``group``'s measures, in table order."""
    return tuple(m.name for m in METRICS if m.group == group)
