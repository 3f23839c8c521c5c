"""trec_eval's reading of a run, written the plainest way, for tests of the TREC reader.

The reader ranks and aligns runs on numpy and polars arrays, several ways for speed;
this is the rule they all implement, on Python lists and dicts, slow and obvious:
queries in label order (ids compared as UTF-8 bytes, which is Python's str order), each
query's entries by score descending as 32-bit floats, ties by passage id descending,
and a passage met again in a query dropped after its best-ranked place.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from raglabel.formats.notices import repeated_passages, unknown_queries


@dataclass(frozen=True)
class Ranked:
    """Per label query (in order), the grades of its ranked entries; and the warnings."""

    query_ids: list[str]
    grades: list[list[int]]
    warnings: list[str]

    def offsets(self) -> list[int]:
        out = [0]
        for grades in self.grades:
            out.append(out[-1] + len(grades))
        return out

    def flat(self) -> list[int]:
        return [g for grades in self.grades for g in grades]


def fingerprint(qids: list[str], docids: list[str], grades: list[int]) -> str:
    """SHA-256 (first 16 hex digits) of the sorted ``qid<TAB>docid<TAB>grade`` lines."""
    lines = sorted(zip(qids, docids, grades, strict=True))
    text = "".join(f"{q}\t{d}\t{g}\n" for q, d, g in lines)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def rank(
    labels: dict[tuple[str, str], int],
    run: str,
    qids: list[str],
    docids: list[str],
    scores: list[float] | None,
) -> Ranked:
    """The run's rows (``scores`` None: each query's rows in rank order already) ranked,
    deduplicated and graded as trec_eval does, against ``labels`` ((qid, docid) -> grade)."""
    query_ids = sorted({q for q, _ in labels})
    rows: dict[str, list[int]] = {q: [] for q in query_ids}
    unknown: list[str] = []
    for row, qid in enumerate(qids):
        if qid in rows:
            rows[qid].append(row)
        elif qid not in unknown:
            unknown.append(qid)
    warnings = [unknown_queries(run, unknown)] if unknown else []
    as_float32 = None if scores is None else np.array(scores, dtype=np.float32).tolist()
    grades: list[list[int]] = []
    dropped: list[str] = []
    for qid in query_ids:
        members = rows[qid]
        if as_float32 is not None:
            members = sorted(members, key=lambda r: (as_float32[r], docids[r]), reverse=True)
        seen: set[str] = set()
        kept: list[int] = []
        for r in members:
            if docids[r] in seen:
                dropped.append(f"{docids[r]} in {qid}")
                continue
            seen.add(docids[r])
            kept.append(labels.get((qid, docids[r]), 0))
        grades.append(kept)
    if dropped:
        warnings.append(repeated_passages(run, dropped))
    return Ranked(query_ids, grades, warnings)
