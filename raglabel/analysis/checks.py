"""What an evaluation's inputs look like when they are probably not what the user meant:
the warnings (with the option that fixes them) printed before the numbers.

Each check is cheap: counts the aligned arrays already hold, or the first data line of
a file (a few kilobytes read), never a second pass over a large input.
"""

from __future__ import annotations

from pathlib import Path

from raglabel.formats.option_words import OPTION_WORDS
from raglabel.formats.trec.shape import first_data_line, is_number, run_given_as_qrels
from raglabel.metrics.evaluate import QueryStats
from raglabel.metrics.run import RankedRun

#: A run missing more than this share of the labeled queries gets a warning.
MISSING_SHARE = 0.5


def first_fields(path: Path) -> list[str] | None:
    """The fields of the first line that is neither blank nor a ``#`` comment."""
    line = first_data_line(path)
    return None if line is None else line[1]


def run_file_hint(path: Path) -> str | None:
    """Why a file given as a run may not be one, from its first line (None: looks fine)."""
    fields = first_fields(path)
    if not fields:
        return None
    if len(fields) >= 6 and is_number(fields[2]) and not is_number(fields[4]):
        return (
            f"{path}: the third column holds a number ({fields[2]}) and the fifth does not "
            f"({fields[4]}): are docid and score swapped? A run line is "
            "'qid Q0 docid rank score tag'"
        )
    if len(fields) >= 6 and not is_number(fields[4]) and is_number(fields[5]):
        return (
            f"{path}: the score seems to be in the sixth column ({fields[5]}); a run line is "
            "'qid Q0 docid rank score tag'"
        )
    return None


def qrels_file_hint(path: Path) -> str | None:
    """Why a file given as qrels may be a run instead (the qrels readers refuse such a
    file before reading it; this says so for any other caller)."""
    return run_given_as_qrels(path)


def label_warnings(stats: QueryStats, *, default_map: bool) -> list[str]:
    """No label reaches the relevance threshold: every binary metric would be NA."""
    counts = stats.labels.counts
    if counts.shape[0] == 0 or stats.relevant.any():
        return []
    option = OPTION_WORDS.get()
    threshold = stats.config.relevance_threshold
    used = [g for g in range(1, 6) if counts[:, g].any()]
    message = (
        f"no label reaches the relevance threshold (grade {threshold} or higher): hit, "
        "recall, MRR, AP, R-precision and bpref are NA and precision is 0 for every query"
    )
    if default_map and used and set(used) <= {2, 3}:
        message += (
            "; the labels are 0 and 1, which the default map reads as grades 2 and 3 "
            "(0->2, 1->3, 2->4, 3->5). Binary qrels want " + option("grade-map", "0:2,1:5")
        )
    else:
        highest = max(used, default=1)
        message += (
            f"; the highest grade is {highest}: try "
            f"{option('relevance-threshold', str(highest))} or a {option('grade-map', None)}"
            " that maps relevant labels to grade 4 or 5"
        )
    return [message]


def run_warnings(stats: QueryStats, run: RankedRun, path: Path | None) -> list[str]:
    """A run that shares no query with the labels, misses most of them, or whose
    passages carry no label at all (columns in the wrong order, other ids)."""
    n = stats.labels.n_queries
    if n == 0:
        return []
    covered = int((run.lengths > 0).sum())
    missing_labels = stats.labels.n_graded and not bool((run.grades > 0).any())
    # The file is read again only when something is wrong and its columns may say why.
    hint = None
    if path is not None and (covered == 0 or missing_labels):
        hint = run_file_hint(path)
    tail = f" ({hint})" if hint else ""
    if covered == 0:
        return [
            f"run {run.name!r} shares no query with the labels: every value is 0 or NA. "
            f"Its query ids must be the labels' (first column of both files){tail}"
        ]
    out: list[str] = []
    if n - covered > MISSING_SHARE * n:
        out.append(
            f"run {run.name!r} retrieves nothing for {n - covered} of the {n} labeled "
            "queries; they score 0 (trec_eval leaves them out of its means unless -c)"
        )
    if missing_labels:
        fields = first_fields(path) if path is not None and not hint else None
        if fields and len(fields) >= 6 and is_number(fields[2]) and not fields[2].isdigit():
            tail = f" (its third column holds {fields[2]}: are docid and score swapped?)"
        out.append(
            f"run {run.name!r}: none of its {run.grades.size} entries has a label. Check "
            "the column order (qid Q0 docid rank score tag) and that run and labels use the "
            f"same passage ids{tail}"
        )
    return out


#: Cutoffs up to this are ordinary whatever the runs' depth (P@20 of a 10-deep rerank).
ORDINARY_CUTOFF = 1000


def depth_notes(cutoffs: list[int], runs: list[RankedRun], stats: QueryStats) -> list[str]:
    """Cutoffs above 1,000 and beyond every run's depth and every query's labels: they
    are computed without allocating anything of their size, but worth a word, since past
    that depth only the metrics that divide by K still change."""
    deepest = max((int(run.lengths.max(initial=0)) for run in runs), default=0)
    labeled = int(stats.labels.counts[:, 1:].sum(axis=1).max(initial=0))
    depth = max(deepest, labeled, 1)
    beyond = sorted(k for k in set(cutoffs) if k > max(depth, ORDINARY_CUTOFF))
    if not beyond:
        return []
    shown = ", ".join(str(k) for k in beyond)
    return [
        f"cutoff {shown}: beyond every run's depth ({deepest}) and every query's labels "
        f"({labeled}); values equal those at {depth} except precision, precision_4plus "
        "and harm, which divide by K"
    ]
