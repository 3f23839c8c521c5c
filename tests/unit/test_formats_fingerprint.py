"""The labels' fingerprint is stored in reports and compared across versions: its value
on fixed inputs is pinned here, as the code gave it before its speed-ups (issue 27 §1),
besides being checked against the plain-Python digest of ``tests/trec_oracle.py``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trec_oracle

from raglabel.formats.trec import arrays
from raglabel.formats.trec.arrays import ArrayAlignment
from raglabel.formats.trec.rows import QrelsRows

ROOT = Path(__file__).resolve().parents[2]


def _tricky_rows() -> QrelsRows:
    # Queries out of byte order, an id that is a prefix of another, non-ASCII ids, ids
    # of exactly one 8-byte word and just past it, and one past two words.
    qids = ["q10", "q2", "q2", "\u00e9", "q10", "q2", "long" * 5, "q2"]
    docids = ["d1", "d10", "d1", "\u00fcn\u00ef", "d", "d" * 8, "x" * 17, "d" * 9]
    return QrelsRows(qids, docids, [1, 2, 3, 4, 5, 1, 2, 3])


def _random_rows() -> QrelsRows:
    """About 6,000 labels over 300 queries in a shuffled order, ids of 1 to 23 characters."""
    rng = np.random.default_rng(2711)
    alphabet = list("abcdefghijXYZ0123456789_-.:\u00e9")
    seen: set[tuple[int, str]] = set()
    rows = QrelsRows([], [], [])
    for q in rng.permutation(300).tolist():
        for _ in range(int(rng.integers(1, 40))):
            docid = "".join(rng.choice(alphabet, int(rng.integers(1, 24))).tolist())
            if (q, docid) in seen:
                continue
            seen.add((q, docid))
            rows.qids.append(f"Q{q}")
            rows.docids.append(docid)
            rows.grades.append(int(rng.integers(1, 6)))
    return rows


@pytest.mark.parametrize(
    ("relative", "digest"),
    [
        ("fixtures/demo/qrels.txt", "sha256:b260ee525ffd23e4"),
        ("tests/data/trec_eval/qrels.test", "sha256:f4ccc63f75c24a93"),
    ],
)
def test_the_fingerprint_of_a_qrels_file_is_pinned(relative: str, digest: str) -> None:
    path = ROOT / relative
    assert arrays.align_qrels(path, None).fingerprint() == digest
    rows = arrays.read_qrels_table(path).rows()
    assert trec_oracle.fingerprint(rows.qids, rows.docids, rows.grades) == digest


@pytest.mark.parametrize(
    ("rows", "size", "digest"),
    [
        (_tricky_rows(), 8, "sha256:42672a0fa743c2a7"),
        (_random_rows(), 6005, "sha256:3d7dd93b83c9c333"),
        (QrelsRows([], [], []), 0, "sha256:e3b0c44298fc1c14"),
    ],
    ids=["tricky", "random", "empty"],
)
def test_the_fingerprint_of_labels_from_rows_is_pinned(
    rows: QrelsRows, size: int, digest: str
) -> None:
    assert len(rows.qids) == size
    assert ArrayAlignment.from_rows(rows).fingerprint() == digest
    assert trec_oracle.fingerprint(rows.qids, rows.docids, rows.grades) == digest


def test_the_fingerprint_does_not_change_once_runs_are_aligned() -> None:
    # A run aligned first may build caches the fingerprint then reuses: same digest.
    rows = _random_rows()
    alignment = ArrayAlignment.from_rows(rows)
    table = arrays.RunTable(
        np.array([q.encode() for q in rows.qids[::3]], dtype=np.bytes_),
        np.array([d.encode() for d in rows.docids[::3]], dtype=np.bytes_),
        np.arange(len(rows.qids[::3]), dtype=np.float64),
    )
    alignment.run("r", table)
    assert alignment.fingerprint() == "sha256:3d7dd93b83c9c333"
