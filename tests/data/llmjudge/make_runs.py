"""Make the synthetic runs that go with the LLMJudge slice, so that ``agree`` has run
orders to compare (Kendall's tau) on public labels.

The LLMJudge repositories hold labels, not the retrieval runs the pairs were pooled from,
so these six runs are made up, and say so: each ranks every query's 24 slice passages by
``quality * people's label + noise``, with a quality and a noise scale of its own and
numpy's generator seeded with 2024. Better runs put labelled-relevant passages higher, so
the runs differ in nDCG the way real systems do; nothing in them comes from the judges'
labels. Run from the repository root:

    python tests/data/llmjudge/make_runs.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
SEED = 2024
#: name: (quality, noise): how strongly the run follows people's labels, and how noisily.
RUNS = {
    "oracle_ish": (1.0, 0.4),
    "dense": (1.0, 0.9),
    "hybrid": (1.0, 1.1),
    "bm25": (1.0, 1.6),
    "sparse_weak": (0.6, 1.6),
    "random": (0.0, 1.0),
}


def main() -> None:
    lines = (HERE / "humans.qrels").read_text(encoding="utf-8").splitlines()
    pairs = [(qid, docid, int(label)) for qid, _, docid, label in map(str.split, lines)]
    rng = np.random.default_rng(SEED)
    out = HERE / "runs"
    out.mkdir(exist_ok=True)
    for name, (quality, noise) in RUNS.items():
        scores = quality * np.array([label for *_, label in pairs], dtype=np.float64)
        scores += rng.normal(0.0, noise, size=len(pairs))
        by_query: dict[str, list[tuple[float, str]]] = {}
        for (qid, docid, _), score in zip(pairs, scores.tolist(), strict=True):
            by_query.setdefault(qid, []).append((round(score, 4), docid))
        rows = []
        for qid, entries in by_query.items():
            entries.sort(key=lambda entry: (-entry[0], entry[1]))
            rows += [
                f"{qid} Q0 {docid} {rank} {score:.4f} {name}"
                for rank, (score, docid) in enumerate(entries, start=1)
            ]
        (out / f"{name}.run").write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
