"""How much of each run's metrics the judge graded, under ``--fill-with-judge``.

For a run and a cutoff K, over every labelled query, the entries of the run's top K
that have a label are counted, and of those the ones whose label is the judge's
(a pair no person graded, filled in from the judge's suggestions): the judge share is
the second count over the first (None when the top K hold no label at all). Every
query counts at the same K, the cutoffs of ``-k``, on the ranking as the run gives it
(``--judged-only`` condenses the rankings the classic metrics read, not this one).

The project's labels are aligned a second time with each label replaced by who gave
it (1 a person, 2 the judge), so the metric engine's ranking of every run (trec_eval's
order, repeated passages dropped) says for each of its top K entries whether it has a
label and whose; trec_eval's ``Judged@k`` counts the first of those.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from raglabel.formats.judge_share import leaning_line

if TYPE_CHECKING:
    from raglabel.metrics.run import RankedRun
    from raglabel.storage.labels import LabelChoice

_PERSON, _JUDGE = 1, 2


class JudgeShares:
    """Per run (in the report's order) and cutoff, the labelled entries of its top K
    and how many of those labels are the judge's; ``stale`` when the project's grades
    changed between the metrics' read of them and this one."""

    __slots__ = ("counts", "stale")

    def __init__(self, counts: dict[str, dict[int, tuple[int, int]]], *, stale: bool) -> None:
        self.counts = counts  # run -> K -> (labelled, judge's)
        self.stale = stale

    def shares(self, run: str) -> dict[str, float | None]:
        """``run``'s share at each K, keyed as the report's JSON keys it (``"10"``)."""
        return {
            str(k): None if labelled == 0 else judge / labelled
            for k, (labelled, judge) in self.counts[run].items()
        }

    def warnings(self) -> list[str]:
        """A line per run whose share is above
        :data:`~raglabel.formats.judge_share.WARN_ABOVE` at some K."""
        lines = []
        if self.stale:
            lines.append(
                "the project's grades changed while eval read them: the judge shares"
                " come from a later read than the metrics"
            )
        for run in self.counts:
            line = leaning_line(run, self.shares(run))
            if line is not None:
                lines.append(line)
        return lines


def top_k_counts(run: RankedRun, cutoffs: list[int]) -> dict[int, tuple[int, int]]:
    """Per cutoff, the labelled entries of ``run``'s top K over all its queries and how
    many of them the judge labelled; ``run`` is aligned to the marked labels."""
    out = {}
    for k in cutoffs:
        entries, _, _ = run.head(k)
        marks = run.grades if entries is None else run.grades[entries]
        out[k] = (int(np.count_nonzero(marks)), int(np.count_nonzero(marks == _JUDGE)))
    return out


def judge_shares(
    project: Path,
    choice: LabelChoice,
    run_files: list[tuple[str, Path]],
    cutoffs: list[int],
    fingerprint: str,
) -> JudgeShares:
    """Every run's counts (the project's stored runs, then ``run_files``) on the labels
    ``choice`` resolves; ``fingerprint`` is the label set the metrics were computed on."""
    from raglabel.formats.trec.arrays import ArrayAlignment, read_run_table
    from raglabel.formats.trec.rows import QrelsRows
    from raglabel.formats.trec.table import RunTable, as_text
    from raglabel.storage import runs
    from raglabel.storage.labels import resolved_labels
    from raglabel.storage.project import Project

    with Project.open_read(project) as opened:
        conn = opened.conn
        resolved = resolved_labels(conn, choice)
        qrels = resolved.qrels
        marks = [_JUDGE if judge else _PERSON for judge in resolved.from_judge]
        align = ArrayAlignment.from_rows(QrelsRows(qrels.qids, qrels.docids, marks))
        ranked: list[RankedRun] = []
        for name in runs.run_names(conn):
            qids: list[str] = []
            docids: list[str] = []
            for qid, ids in runs.ranked_ids(conn, name):
                qids += [qid] * len(ids)
                docids += ids
            ranked.append(align.run(name, RunTable(as_text(qids), as_text(docids), None)))
    stale = ArrayAlignment.from_rows(qrels).fingerprint() != fingerprint
    # The alignment's warnings (queries without labels, repeated passages) are the
    # metrics' alignment's too, which gave them already.
    ranked += [align.run(name, read_run_table(path)) for name, path in run_files]
    return JudgeShares({run.name: top_k_counts(run, cutoffs) for run in ranked}, stale=stale)
