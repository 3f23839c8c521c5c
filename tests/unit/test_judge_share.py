"""The judge share under ``--fill-with-judge``: of the entries in a run's top K that have
a label, the share whose label is the judge's, per run and cutoff, in eval's formats,
its warnings and the report page; nothing of it without the option."""

from __future__ import annotations

import json
import random
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from docs_pages import examples

from raglabel.analysis.judge_share import judge_shares
from raglabel.cli.main import main
from raglabel.formats.judge_share import leaning_line, percent
from raglabel.formats.trec.order import trec_scores
from raglabel.storage.labels import LabelChoice

if TYPE_CHECKING:
    from cli_helpers import Cli

PAGE = "guide/eval.md"
TEST = f"tests/unit/{Path(__file__).name}"

# q1: people graded d1..d7 (and the judge d1 too, which never replaces a person's grade);
# the judge alone graded d8, d9, d10. q2: people graded d1 and d2, the judge d3.
PEOPLE = "".join(f"q1 0 d{i} 1\n" for i in range(1, 8)) + "q2 0 d1 2\nq2 0 d2 2\n"
JUDGE = [
    ("q1", "d1", 5),
    ("q1", "d8", 4),
    ("q1", "d9", 4),
    ("q1", "d10", 2),
    ("q2", "d3", 5),
]


def _run(tag: str, rankings: dict[str, list[str]]) -> str:
    return "".join(
        f"{qid} Q0 {pid} {rank} {100 - rank} {tag}\n"
        for qid, pids in rankings.items()
        for rank, pid in enumerate(pids, 1)
    )


# a: q1's top 10 is d1..d10 (7 people's labels, 3 the judge's), q2's top has no label:
# 3 of 10 -> 30% at 10; its top 5 are all people's -> 0% at 5.
RUN_A = _run("a", {"q1": [f"d{i}" for i in range(1, 13)], "q2": ["d4", "d5"]})
# b: q1's top 10 holds d2..d9 (6 people's, 2 the judge's) and two unlabelled passages,
# q2's holds d1 and d2 (people's): 2 of 10 -> exactly 20% at 10, which is no warning.
RUN_B = _run("b", {"q1": [*(f"d{i}" for i in range(2, 10)), "x1", "x2"], "q2": ["d1", "d2"]})
# c: no label anywhere in its top K -> no share (NA).
RUN_C = _run("c", {"q1": ["x1", "x2"], "q2": ["x4"]})


def _files(folder: Path) -> None:
    (folder / "people.qrels").write_text(PEOPLE)
    (folder / "m.jsonl").write_text(
        "".join(json.dumps({"query_id": q, "doc_id": p, "grade": g}) + "\n" for q, p, g in JUDGE)
    )
    for name, text in (("a", RUN_A), ("b", RUN_B), ("c", RUN_C)):
        (folder / f"{name}.run").write_text(text)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project above, made once per module: each test takes a copy (project)."""
    folder = tmp_path_factory.mktemp("share")
    _files(folder)
    db = folder / "project.db"
    assert main(["init", str(db)]) == 0
    assert main([
        "import", str(db), "--qrels", str(folder / "people.qrels"), "--annotator", "nist",
        "--run", f"a={folder / 'a.run'}", "--judgments", f"m={folder / 'm.jsonl'}",
    ]) == 0  # fmt: skip
    assert not db.with_name(f"{db.name}-wal").exists(), "the copies would miss its log"
    return db


@pytest.fixture
def project(built: Path, tmp_path: Path) -> Path:
    """The project above: run a stored, runs b and c left as files beside it."""
    _files(tmp_path)
    db = tmp_path / "project.db"
    shutil.copyfile(built, db)
    return db


def _eval(cli: Cli, project: Path, *extra: str | Path) -> tuple[int, str, str]:
    folder = project.parent
    return cli(
        "eval", project, "--run", f"b={folder / 'b.run'}", "--run", f"c={folder / 'c.run'}",
        "-k", "5,10", "--metrics", "ndcg@10", *extra,
    )  # fmt: skip


def test_shares_counted_by_hand(project: Path, cli: Cli) -> None:
    code, out, err = _eval(cli, project, "--fill-with-judge", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    shares = {name: run["judge_share"] for name, run in report["runs"].items()}
    assert shares == {
        "a": {"5": 0.0, "10": 0.3},
        "b": {"5": 0.0, "10": 0.2},
        "c": {"5": None, "10": None},
    }
    line = (
        "run 'a': 30% of its top-10 labels are the judge's (--fill-with-judge);"
        " its metrics lean on the judge"
    )
    assert line in report["warnings"]
    assert f"raglabel eval: warning: {line}\n" in err
    # Exactly a fifth is not above it; a run with no label in its top K has no share.
    assert [w for w in report["warnings"] if "lean on the judge" in w] == [line]


def test_the_json_fits_the_report_model_and_its_schema(project: Path, cli: Cli) -> None:
    from pydantic import TypeAdapter

    from raglabel.formats.report import Report

    report = json.loads(_eval(cli, project, "--fill-with-judge", "--format", "json")[1])
    parsed = TypeAdapter(Report).validate_python(report)  # unknown keys are refused
    assert parsed.runs["a"].judge_share == {"5": 0.0, "10": 0.3}
    schema = json.loads((Path(__file__).parents[2] / "schemas" / "report.schema.json").read_text())
    field = schema["$defs"]["RunReport"]["properties"]["judge_share"]
    assert {"type": "null"} in field["anyOf"]


def test_without_fill_nothing_is_said(project: Path, cli: Cli) -> None:
    for fmt in ("json", "table", "markdown", "csv"):
        code, out, err = _eval(cli, project, "--format", fmt)
        assert code == 0, err
        assert "judge_share" not in out and "judge share" not in out, fmt
        assert "the judge" not in err
    report = json.loads(_eval(cli, project, "--format", "json")[1])
    assert all("judge_share" not in run for run in report["runs"].values())


def test_table_markdown_and_csv_show_the_shares(project: Path, cli: Cli) -> None:
    table = _eval(cli, project, "--fill-with-judge", "-o", project.parent / "t.txt")
    assert table[0] == 0
    rows = (project.parent / "t.txt").read_text().splitlines()
    [at5] = [row.split() for row in rows if "judge share@5" in row]
    [at10] = [row.split() for row in rows if "judge share@10" in row]
    assert at5[2:] == ["0%", "0%", "NA"]
    assert at10[2:] == ["30%", "20%", "NA"]
    markdown = _eval(cli, project, "--fill-with-judge", "--format", "markdown")[1]
    assert "| judge share@10 | 30% | 20% | NA |" in markdown.splitlines()
    csv = _eval(cli, project, "--fill-with-judge", "--format", "csv")[1].splitlines()
    assert "judge_share,a,10,,,0.3" in csv
    assert "judge_share,b,10,,,0.2" in csv
    assert "judge_share,c,10,,," in csv


def test_the_report_page_shows_the_shares_and_says_which_lean(project: Path, cli: Cli) -> None:
    folder = project.parent
    page = folder / "r.html"
    code, _, err = cli(
        "report", project, "--run", f"b={folder / 'b.run'}", "-k", "5,10",
        "--metrics", "ndcg@10", "--fill-with-judge", "-o", page,
    )  # fmt: skip
    assert code == 0, err
    html = page.read_text()
    assert "<tr><td>judge share@10</td><td>30%</td><td>20%</td></tr>" in html
    assert "Above 20% for a: those metrics lean on the judge" in html
    assert "More than 20% of a&#x27;s top labels at some cutoff are the judge&#x27;s" in html
    plain = folder / "plain.html"
    assert cli("report", project, "--run", f"b={folder / 'b.run'}", "-o", plain)[0] == 0
    assert "judge share" not in plain.read_text()


@pytest.mark.parametrize(
    ("shares", "said"),
    [
        ({"10": 0.2}, None),
        ({"10": 0.31}, "31% of its top-10"),
        # A hair above a fifth rounds to 20%: said as over it, never as 20%.
        ({"10": 1001 / 5000}, "over 20% of its top-10"),
        ({"5": 0.5, "10": 0.25, "20": None}, "50% of its top-5 and 25% of its top-10"),
        ({"5": None}, None),
    ],
)
def test_the_warning_line(shares: dict[str, float | None], said: str | None) -> None:
    line = leaning_line("x", shares)
    if said is None:
        assert line is None
    else:
        assert line == (
            f"run 'x': {said} labels are the judge's (--fill-with-judge);"
            " its metrics lean on the judge"
        )


def test_percent() -> None:
    assert [percent(x) for x in (0.3, 1 / 3, 0.0, 1.0, None)] == [
        "30%",
        "33.3%",
        "0%",
        "100%",
        "NA",
    ]


def _brute_force(
    run_text: str, labels: dict[tuple[str, str], bool], cutoffs: list[int]
) -> dict[str, float | None]:
    """The share from the run's lines alone: trec_eval's order (32-bit scores descending,
    then passage id descending), a repeated passage kept where it ranks best, top K of
    each labelled query, each entry's label looked up by pair."""
    by_query: dict[str, list[tuple[float, str]]] = {}
    lines = [line.split() for line in run_text.splitlines()]
    scores = trec_scores(np.array([float(f[4]) for f in lines])).tolist()
    for fields, score in zip(lines, scores, strict=True):
        by_query.setdefault(fields[0], []).append((score, fields[2]))
    queries = {q for q, _ in labels}
    out: dict[str, float | None] = {}
    for k in cutoffs:
        labelled = judge = 0
        for qid, entries in by_query.items():
            if qid not in queries:
                continue
            ranked: list[str] = []
            for _, pid in sorted(entries, reverse=True):
                if pid not in ranked:
                    ranked.append(pid)
            for pid in ranked[:k]:
                if (qid, pid) in labels:
                    labelled += 1
                    judge += labels[qid, pid]
        out[str(k)] = None if labelled == 0 else judge / labelled
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shares_equal_a_count_from_the_run_lines(tmp_path: Path, cli: Cli, seed: int) -> None:
    """Random grades, suggestions and runs (tied scores, repeated passages, queries
    without labels), stored and as files: every share is the brute-force count's."""
    rng = random.Random(seed)
    queries = [f"q{i}" for i in range(6)]
    passages = [f"p{i:02d}" for i in range(30)]
    people = {(q, p): rng.randint(0, 3) for q in queries[:5] for p in rng.sample(passages, 8)}
    judged = {(q, p): rng.randint(1, 5) for q in queries for p in rng.sample(passages, 10)}
    (tmp_path / "people.qrels").write_text(
        "".join(f"{q} 0 {p} {g}\n" for (q, p), g in people.items())
    )
    (tmp_path / "m.jsonl").write_text(
        "".join(
            json.dumps({"query_id": q, "doc_id": p, "grade": g}) + "\n"
            for (q, p), g in judged.items()
        )
    )
    runs = {}
    for name in ("r1", "r2"):
        lines = [
            f"{q} Q0 {rng.choice(passages)} 0 {rng.choice([1, 2, 2.5, 3, 3, 4])} {name}\n"
            for q in queries
            for _ in range(rng.randint(5, 25))
        ]
        runs[name] = "".join(lines)
        (tmp_path / f"{name}.run").write_text(runs[name])
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli(
        "import", db, "--qrels", tmp_path / "people.qrels", "--annotator", "nist",
        "--run", f"r1={tmp_path / 'r1.run'}", "--judgments", f"m={tmp_path / 'm.jsonl'}",
    )  # fmt: skip
    assert code == 0, err
    # Each pair's label and whether it is the judge's: people's grade wins where both.
    labels = {pair: False for pair in people} | {
        pair: True for pair in judged if pair not in people
    }
    cutoffs = [1, 3, 5, 10, 50]
    code, out, err = cli(
        "eval", db, "--run", f"r2={tmp_path / 'r2.run'}", "--run", f"f1={tmp_path / 'r1.run'}",
        "-k", ",".join(map(str, cutoffs)), "--metrics", "ndcg@1", "--fill-with-judge",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)["runs"]
    for name, text in (("r1", runs["r1"]), ("r2", runs["r2"]), ("f1", runs["r1"])):
        assert report[name]["judge_share"] == pytest.approx(
            _brute_force(text, labels, cutoffs), abs=0
        ), name


def test_grades_changed_between_the_two_reads_are_said(project: Path) -> None:
    shares = judge_shares(project, LabelChoice(fill_with_judge=True), [], [10], "sha256:other")
    assert shares.stale
    assert shares.warnings()[0].startswith("the project's grades changed while eval read them")
    # The same labels: not stale.
    from raglabel.formats.trec.arrays import ArrayAlignment
    from raglabel.storage.labels import resolved_labels
    from raglabel.storage.project import Project

    with Project.open_read(project) as opened:
        qrels = resolved_labels(opened.conn, LabelChoice(fill_with_judge=True)).qrels
    same = judge_shares(
        project,
        LabelChoice(fill_with_judge=True),
        [],
        [10],
        ArrayAlignment.from_rows(qrels).fingerprint(),
    )
    assert not same.stale
    assert same.shares("a") == {"10": 0.3}


def test_the_guide_examples(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    [commands] = examples(PAGE, TEST, "bash")
    err = ""
    for line in commands.splitlines():
        argv = shlex.split(line)
        assert argv[0] == "raglabel"
        code, _, err = cli(*argv[1:])
        assert code == 0, (argv, err)
    [said] = examples(PAGE, TEST, "text")
    for line in said.splitlines():
        assert f"raglabel eval: warning: {line}\n" in err
    assert "run 'b'" not in err


@pytest.mark.parametrize("blind", [True, False])
def test_the_app_scores_peoples_grades_only(project: Path, cli: Cli, blind: bool) -> None:
    """The Runs screen's labels are the grades in view, never the judge's: the app has no
    fill, so no judge share to show."""
    from raglabel.session.grading import GradingSession
    from raglabel.session.options import AppOptions
    from raglabel.session.run_figures import view_inputs

    filled = json.loads(_eval(cli, project, "--fill-with-judge", "--format", "json")[1])
    assert filled["labels"]["graded"] == 13  # 9 people's pairs and 4 the judge's
    session = GradingSession.open(AppOptions(project=project, annotator="nist", blind=blind))
    try:
        assert view_inputs(session).stats.labels.n_graded == 9
    finally:
        session.close()


@pytest.mark.parametrize("annotator", [None, "nist"])
def test_resolved_labels_say_which_pairs_are_the_judges(
    project: Path, annotator: str | None
) -> None:
    from raglabel.storage.labels import resolved_labels
    from raglabel.storage.project import Project

    with Project.open_read(project) as opened:
        resolved = resolved_labels(
            opened.conn, LabelChoice(annotator=annotator, fill_with_judge=True)
        )
        plain = resolved_labels(opened.conn, LabelChoice(annotator=annotator))
    qrels = resolved.qrels
    marked = zip(zip(qrels.qids, qrels.docids, strict=True), resolved.from_judge, strict=True)
    judges = {pair for pair, judge in marked if judge}
    assert judges == {("q1", "d8"), ("q1", "d9"), ("q1", "d10"), ("q2", "d3")}
    assert plain.from_judge == [False] * 9


def test_export_says_how_many_qrels_lines_are_the_judges(project: Path, cli: Cli) -> None:
    # A judge's label in a qrels file looks like anyone's: export --qrels says how many.
    target = project.parent / "filled.qrels"
    code, out, _ = cli("export", project, "--qrels", target, "--fill-with-judge")
    assert code == 0
    # People's 9 pairs, and the judge's 5 less the one people graded (q1 d1).
    assert out.startswith(f"wrote 13 judged pairs ({4} of them the judge's: ")
    assert "4 pairs from m" in out
    assert len(target.read_text().splitlines()) == 13
    code, out, _ = cli("export", project, "--qrels", target)
    assert out == f"wrote 9 judged pairs to {target}\n"
