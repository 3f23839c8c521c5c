"""A project for ``eval --estimate`` tests (issue 29, section 2): three stored runs over
20 queries, two judge models' imported judgments on every pair they rank, an audit draw
of 14 queries, and a person's grades on every pooled pair of the first ``complete``
drawn queries (one passage short on the next ``incomplete``).

People's grades are a fixed random truth; the judge models see it with noise and
overrate ``dense``'s passages, so the judge alone is biased and people correct it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from raglabel.storage.audit import draw
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

QUERIES = [f"q{i:02d}" for i in range(1, 21)]
RUNS = ("bm25", "dense", "hybrid")
DEPTH = 10  # each run ranks 10 passages a query: the deepest cutoff the tests use
DRAWN = 14
SEED = 5


@dataclass
class EstimateProject:
    db: Path
    runs: dict[str, dict[str, list[str]]]  # run -> query -> passages in rank order
    truth: dict[tuple[str, str], int]  # people's grade of every pair
    models: dict[str, dict[tuple[str, str], int]]  # judge model -> its grades
    drawn: list[str]  # in draw order
    complete: list[str]
    incomplete: list[str]
    graded: dict[tuple[str, str], int] = field(default_factory=dict)  # what people graded


def _rankings(rng: random.Random) -> dict[str, dict[str, list[str]]]:
    runs: dict[str, dict[str, list[str]]] = {run: {} for run in RUNS}
    for qid in QUERIES:
        pool = [f"{qid}-p{j:02d}" for j in range(1, 15)]
        for run in RUNS:
            runs[run][qid] = rng.sample(pool, DEPTH)
    return runs


def build(folder: Path, *, complete: int = 12, incomplete: int = 2, judge: bool = True,
          draw_sample: bool = True) -> EstimateProject:  # fmt: skip
    rng = random.Random(29)
    runs = _rankings(rng)
    pairs = sorted({(q, p) for by_query in runs.values() for q, ps in by_query.items() for p in ps})
    truth = {}
    for qid, pid in pairs:
        # Every query has passages of each grade, so every metric is defined under both
        # labellings: the first passages of a query's pool are relevant (4 and 5).
        number = int(pid.rsplit("p", 1)[1])
        truth[qid, pid] = 5 if number == 1 else 4 if number == 2 else rng.randint(1, 5)
    models: dict[str, dict[tuple[str, str], int]] = {}
    for model, noise in (("m1", 1), ("m2", 2)):
        grades = {}
        for (qid, pid), grade in truth.items():
            lean = 1 if pid in runs["dense"][qid][:3] else 0  # the judge favours dense
            grades[qid, pid] = min(5, max(1, grade + lean + rng.randint(-noise, noise)))
        models[model] = grades

    (folder / "queries.tsv").write_text("".join(f"{q}\ttext of {q}\n" for q in QUERIES))
    run_files = []
    for run, by_query in runs.items():
        path = folder / f"{run}.run"
        path.write_text(
            "".join(
                f"{q} Q0 {p} {rank} {100 - rank} {run}\n"
                for q, ps in by_query.items()
                for rank, p in enumerate(ps, 1)
            )
        )
        run_files.append((run, path))
    judgments = []
    for model, grades in models.items():
        path = folder / f"{model}.jsonl"
        path.write_text(
            "".join(
                json.dumps({"query_id": q, "doc_id": p, "grade": g}) + "\n"
                for (q, p), g in grades.items()
            )
        )
        judgments.append((model, path))
    db = folder / "project.db"
    drawn: list[str] = []
    graded: dict[tuple[str, str], int] = {}
    with Project.create(db) as project:
        run_import(project, ImportRequest(queries=folder / "queries.tsv", runs=run_files))
        if judge:
            run_import(project, ImportRequest(judgments=judgments))
        if draw_sample:
            drawn = list(draw(project, DRAWN, SEED).draw.drawn)
        for at, qid in enumerate(drawn[: complete + incomplete]):
            pooled = sorted({p for by_query in runs.values() for p in by_query[qid]})
            if at >= complete:
                pooled = pooled[1:]  # one passage short of complete
            for pid in pooled:
                grade = truth[qid, pid]
                record(project, GradeEvent(query=qid, passage=pid, annotator="alice", grade=grade))
                graded[qid, pid] = grade
    return EstimateProject(
        db,
        runs,
        truth,
        models,
        drawn,
        drawn[:complete],
        drawn[complete : complete + incomplete],
        graded,
    )
