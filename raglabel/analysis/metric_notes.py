"""Notes on how the metric names typed were read, where a name means something else in
the tool it comes from, or where that tool would get another number from the same files.

A name from trec_eval, ir_measures or ranx is computed as what it means there (see
:mod:`raglabel.metrics.aliases`); these notes say so wherever a reader could take the
number for something else: the name raglabel computed it under, the cutoffs a family
name was computed at, which labels count as relevant, and which gains nDCG used. They
go with the other warnings: on stderr before the numbers and into the report's
``warnings``.
"""

from __future__ import annotations

from collections.abc import Sequence

from raglabel.formats.maps import GradeMap
from raglabel.formats.option_words import OPTION_WORDS
from raglabel.metrics.aliases import FAMILIES, tools_of
from raglabel.metrics.config import GRADES, MetricConfig
from raglabel.metrics.evaluate import QueryStats
from raglabel.metrics.names import MetricKey, spelling

#: Measures that only ask whether a passage is relevant: the relevance threshold decides.
_BINARY = frozenset({"hit", "recall", "recall_all", "precision", "f1", "mrr", "ap", "rprec"})
_BINARY_NAMES = "hit, recall, F1, MRR, AP and R-precision"


def _items(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _key(base: str, cut: str | None) -> str:
    """The name a typed metric is reported under (``@k``: at each cutoff asked for)."""
    if cut is None or cut == "k":
        return base if cut is None else f"{base}@k"
    return MetricKey(base, int(cut)).name


def name_notes(text: str | None, cutoffs: list[int], *, cutoffs_given: bool) -> list[str]:
    """What each typed name was computed as, where the tool it comes from means something
    that differs (``ndcg_burges@10``), reports more (trec_eval's ``P``), or where the
    name's own meaning changed (``ndcg`` alone is uncut). ``text`` has been parsed
    already: every name in it is known."""
    notes: list[str] = []
    shown = ", ".join(str(k) for k in cutoffs)
    for item in _items(text):
        base, cut, alias = spelling(item)
        key = _key(base, cut)
        if alias == "ndcg_burges":
            notes.append(
                f"{item} is read as ranx's ndcg_burges: nDCG with exponential gain "
                "2^g - 1, g the gain map's gain of the grade (with the default maps, the "
                f"qrels label); computed as {key}"
            )
        elif alias == "map" and cut is not None:
            notes.append(
                f"{item} is read as ranx's map@{cut}, trec_eval's map_cut_{cut}: the "
                f"precision at each relevant passage of the top {cut}, summed and divided "
                f"by all the query's relevant passages (not by min(R, {cut})); computed "
                f"as {key}"
            )
        elif alias == "hit_rate" and cut is not None:
            notes.append(
                f"{item} is read as ranx's hit_rate@{cut}, trec_eval's success_{cut}: 1 if "
                f"the top {cut} holds a relevant passage, whose mean is the share of "
                f"queries with one; computed as {key}"
            )
        elif base == "judged" and item.startswith("Judged") and cut is not None:
            # The name is raglabel's own too, so only ir_measures' spelling tells which
            # the reader meant; the two divide by different counts.
            notes.append(
                f"{item} is read as raglabel's {key}: the share of the passages returned in "
                f"the top {cut} that have a label, over the passages returned; ir_measures' "
                f"Judged@{cut} divides by {cut} whatever was returned, so the two differ "
                f"where a run returned fewer than {cut}"
            )
        elif alias in FAMILIES and cut is None:
            notes.append(
                f"{item} without a cutoff is computed at the cutoffs asked for ({shown}) "
                f"as {base}; {FAMILIES[alias]}"
            )
        elif base == "ndcg" and cut is None and alias is None and cutoffs_given:
            notes.append(
                f"{item} without @k is nDCG over the whole ranking, as trec_eval's ndcg "
                f"and ir_measures' nDCG; nDCG at the cutoffs asked for is ndcg@k "
                f"(ndcg@{cutoffs[0]}{', ...' if len(cutoffs) > 1 else ''})"
            )
    return notes


#: How each tool is told which labels are relevant.
_TOLD = {"trec_eval": "trec_eval -l", "ir_measures": "ir_measures' rel", "ranx": "ranx's rel_lvl"}


def _peer_binary(text: str | None) -> tuple[list[str], list[str]]:
    """The names typed in another tool's spelling whose measure is binary, and the
    tools they come from."""
    typed: list[str] = []
    tools: dict[str, None] = {}
    for item in _items(text):
        base, cut, alias = spelling(item)
        if alias is not None and base in _BINARY:
            typed.append(item)
            tools.update(dict.fromkeys(tools_of(alias, cut)))
    return typed, list(tools)


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _reads_like_peers(grade_map: GradeMap, threshold: int) -> bool:
    """Whether the relevance threshold (a grade) makes exactly the labels of 1 and more
    relevant, as trec_eval, ir_measures and ranx do by default."""
    relevant = {label for label, grade in grade_map.mapping.items() if grade >= threshold}
    negative = grade_map.negative
    return relevant == {label for label in grade_map.mapping if label >= 1} and (
        negative is None or negative < threshold
    )


def relevance_notes(text: str | None, grade_map: GradeMap, stats: QueryStats, na: str) -> list[str]:
    """For binary measures named as another tool names them, on qrels: which labels are
    relevant here when the tool's default (label 1 or higher) would count others, and
    queries without a relevant passage, which that tool counts as 0 and raglabel, by
    default, leaves out of the mean."""
    typed, tools = _peer_binary(text)
    if not typed or not stats.relevant.any():
        return []  # with nothing relevant at all, the label warning says what to do
    names = ", ".join(typed)
    option = OPTION_WORDS.get()  # the command line's words, or the Python API's
    notes: list[str] = []
    threshold = stats.config.relevance_threshold
    relevant = sorted(label for label, grade in grade_map.mapping.items() if grade >= threshold)
    if not _reads_like_peers(grade_map, threshold):
        alike = next((g for g in GRADES if _reads_like_peers(grade_map, g)), None)
        labels = ", ".join(str(label) for label in relevant) or "none"
        fix = (
            f"{option('relevance-threshold', str(alike))} reads them so"
            if alike is not None
            else f"a {option('grade-map', None)} that sends label 1 and up to a grade at or "
            "above the threshold reads them so"
        )
        notes.append(
            f"{names}: relevant here means grade {threshold} or higher, which under the "
            f"grade map ({grade_map.describe()}) is label {labels}; {_listed(tools)} "
            f"{'counts' if len(tools) == 1 else 'count'} every label of 1 or higher as "
            f"relevant unless told ({', '.join(_TOLD[tool] for tool in tools)}): {fix}"
        )
    empty = int((stats.relevant == 0).sum())
    if empty and na == "skip":
        notes.append(
            f"{names}: {empty} of the {stats.labels.n_queries} queries have no relevant "
            f"passage, so {_BINARY_NAMES} are NA there and left out of the means; "
            f"{_listed(tools)} {'counts' if len(tools) == 1 else 'count'} them as 0 "
            f"({option('na', 'zero')} does)"
        )
    return notes


def _in_proportion(theirs: dict[int, float], ours: dict[int, float]) -> bool:
    """Whether ``ours`` is a positive multiple of ``theirs``, label by label: nDCG, a
    ratio, is then the same number. ``theirs`` holds a label of 1 or more: its largest
    value is at least 1."""
    scale = max(ours.values()) / max(theirs.values())
    return scale > 0 and all(
        abs(ours[label] - scale * theirs[label]) <= 1e-9 * max(1.0, ours[label]) for label in theirs
    )


def gain_notes(
    text: str | None, metrics: Sequence[MetricKey], grade_map: GradeMap, config: MetricConfig
) -> list[str]:
    """nDCG asked for by name on qrels whose labels' gains are not those of trec_eval,
    ir_measures and ranx (the label itself; 2^label - 1 for ranx's ndcg_burges) up to a
    common factor, which leaves nDCG as it is (binary 0 -> 0, 1 -> 3 does): their nDCG
    then differs from this one."""
    bases = {key.base for key in metrics}
    if text is None or not bases & {"ndcg", "ndcg_exp"}:
        return []
    gains = {
        label: config.gain_map[grade] for label, grade in grade_map.mapping.items() if label >= 0
    }
    if not any(label > 0 for label in gains):
        return []
    alike = True
    if "ndcg" in bases:
        alike = _in_proportion({label: float(label) for label in gains}, gains)
    if "ndcg_exp" in bases:
        exponential = {label: 2.0**gain - 1.0 for label, gain in gains.items()}
        alike = alike and _in_proportion({label: 2.0**label - 1.0 for label in gains}, exponential)
    if alike:
        return []
    shown = ", ".join(f"{label}->{gain:g}" for label, gain in sorted(gains.items()))
    return [
        f"nDCG's gains here come from the grade map and the gain map (label->gain: "
        f"{shown}); trec_eval, ir_measures and ranx use the label itself, so their nDCG "
        f"on these qrels differs. A {OPTION_WORDS.get()('gain-map', None)} giving each "
        "grade its label's value reads it as they do"
    ]
