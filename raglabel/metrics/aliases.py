"""The names other evaluation tools give raglabel's measures, and what they mean there.

People type the names of the tool they know: trec_eval's ``P_5`` and ``map_cut_100``,
ir_measures' ``nDCG@10`` and ``RR``, ranx's ``map@100``, ``hit_rate@10`` and
``ndcg_burges@10``. Each is read as the measure it means in that tool; where the same
spelling means something else elsewhere, or the tool reports more than raglabel computes,
:mod:`raglabel.analysis.metric_notes` says which one was computed.

The names are written once, in each measure's record of :mod:`raglabel.metrics.table`;
this module turns them into the lookups the name reader needs.
"""

from __future__ import annotations

from raglabel.metrics.table import METRICS, TOOLS


def _aliases() -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """Every tool's spellings that are not raglabel's own names, split into names
    without a cutoff and names that take one, each -> (raglabel's base, its tools)."""
    plain: dict[str, tuple[str, list[str]]] = {}
    cut: dict[str, tuple[str, list[str]]] = {}
    for metric in METRICS:
        by_tool = zip(TOOLS, (metric.trec_eval, metric.ir_measures, metric.ranx), strict=True)
        for tool, spelt in by_tool:
            for written in spelt:
                lowered = written.lower()
                takes_cut = lowered.endswith(("@k", "_k"))
                stem = lowered[:-2] if takes_cut else lowered
                if stem == metric.name:
                    continue  # raglabel's own name: read as it is
                into = cut if takes_cut else plain
                base, tools = into.setdefault(stem, (metric.name, []))
                if base != metric.name:
                    raise ValueError(
                        f"{written!r} ({tool}) is listed for both {base} and {metric.name}"
                    )
                if tool not in tools:
                    tools.append(tool)

    def said(found: dict[str, tuple[str, list[str]]]) -> dict[str, tuple[str, str]]:
        return {name: (base, " and ".join(tools)) for name, (base, tools) in found.items()}

    return said(plain), said(cut)


#: Lower case, name -> (raglabel's base, the tools that use it): ``PLAIN`` holds the
#: names without a cutoff (``map``), ``CUT`` those that take one (``P_5``, ``P.5``, ``P@5``).
PLAIN, CUT = _aliases()


def tools_of(alias: str, cut: str | None) -> list[str]:
    """The tools that spell a measure ``alias`` (lower case, without the cutoff)."""
    table = PLAIN if cut is None and alias in PLAIN else CUT
    spelled = table.get(alias, ("", "trec_eval"))[1]  # recall_100: trec_eval's own
    return spelled.split(" and ")


#: Names that, without a cutoff, stand in their tool for a list of cutoffs (trec_eval's
#: ``P`` is P_5 to P_1000) or for the whole ranking (ranx's ``hit_rate``): raglabel
#: computes them at the ``-k`` cutoffs instead, and says so. Name -> what the tool means.
FAMILIES: dict[str, str] = {name: note for m in METRICS for name, note in m.families}

#: Words people write for a measure, for suggestions only: a word -> raglabel's base.
#: An unknown name is matched against these by meaning first, then by spelling.
SYNONYMS: dict[str, str] = {word: m.name for m in METRICS for word in m.words}
