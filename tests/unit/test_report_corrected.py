"""The report's "Judge-corrected" section (issue 29, section 4): on the project of
tests/estimate_project.py the page shows ``eval --estimate corrected --compare``'s
figures, a forest plot of each run's three estimates, and the sentence a lead needs;
without a draw there is no section, with a draw but not the rest one sentence says what
to run; the sentence's wording in each case; and docs/guide/report.md's example."""

from __future__ import annotations

import json
import re
import shlex
from html import unescape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from docs_pages import examples
from estimate_project import EstimateProject, build

from raglabel.formats.report import CorrectedComparison, EstimateInfo, Figure, LabelsInfo, Report
from raglabel.report.judge_corrected import TITLE, lead_sentence
from raglabel.report.model import ReportInput

if TYPE_CHECKING:
    from cli_helpers import Cli


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> EstimateProject:
    return build(tmp_path_factory.mktemp("report_corrected"))


def write_report(cli: Cli, db: Path, *extra: str) -> str:
    out = db.parent / "report.html"
    code, _, err = cli("report", db, "-o", out, *extra)
    assert code == 0, err
    return out.read_text(encoding="utf-8")


def section(html: str) -> str | None:
    """The section's HTML, from its heading to the next one."""
    start = html.find(f"<h2>{TITLE}</h2>")
    if start < 0:
        return None
    end = html.find("<h2>", start + 1)
    return html[start : end if end > 0 else len(html)]


def paragraphs(part: str) -> list[str]:
    return [unescape(p) for p in re.findall(r"<p>(.*?)</p>", part, flags=re.S)]


def corrected_json(cli: Cli, db: Path, *metrics: str) -> dict[str, Any]:
    code, out, err = cli(
        "eval", db, "--estimate", "corrected", "--compare", "--baseline", "bm25",
        "--metrics", ",".join(metrics), "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def test_the_section_shows_evals_corrected_figures(cli: Cli, project: EstimateProject) -> None:
    html = write_report(cli, project.db, "--metrics", "ndcg@10,ra_nwg@10", "--baseline", "bm25")
    part = section(html)
    assert part is not None
    # After the comparisons against the baseline, before the per-query values.
    assert html.index("Against the baseline bm25") < html.index(part) < html.index("Per-query")
    want = corrected_json(cli, project.db, "ndcg@10", "ra_nwg@10")
    for run, figures in want["runs"].items():
        for metric in ("ndcg@10", "ra_nwg@10"):
            mean, ci = figures["mean"][metric], figures["ci"][metric]
            judge, people = figures["judge_only"], figures["human_only"]
            row = (
                f"<tr><td>{metric}</td><td>{run}</td>"
                f"<td>{mean:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]</td>"
                f"<td>{figures['lambda'][metric]:.2f}</td>"
                f"<td>{judge['mean'][metric]:.3f} [{judge['ci'][metric][0]:.3f},"
                f" {judge['ci'][metric][1]:.3f}] (n={judge['valid'][metric]})</td>"
                f"<td>{people['mean'][metric]:.3f} [{people['ci'][metric][0]:.3f},"
                f" {people['ci'][metric][1]:.3f}] (n={people['valid'][metric]})</td></tr>"
            )
            assert row in part, row
            # The forest plot's three points of the headline metric, with their tooltips.
            if metric == "ndcg@10":
                assert f"<title>{run} corrected: {mean:.4f} [" in part
                assert f"<title>{run} judge: {judge['mean'][metric]:.4f} [" in part
                assert f"<title>{run} people: {people['mean'][metric]:.4f} [" in part
    for c in want["compare"]:
        settle = c["queries_to_settle"]
        words = (
            "settled"
            if settle == 0
            else "not within the undrawn queries"
            if settle is None
            else f"{settle} more queries to settle"
        )
        assert f"<td>{c['run']} - bm25</td>" in part
        assert re.search(
            rf"<td>{c['run']} - bm25</td><td>{re.escape(c['metric'])}</td>"
            rf"<td>{re.escape(format(c['mean_difference'], '+.4f'))} \[[^<]*</td>"
            rf"<td>{c['p_adjusted']:.4f}</td>"
            rf".*?<td>{words}</td></tr>",
            part,
        ), c
    texts = paragraphs(part)
    assert "2 of the 14 drawn queries are not complete (q11, q19)" in texts[2]
    # The estimate's warnings, as eval prints them, in a folded table of their own.
    code, _, err = cli("eval", project.db, "--estimate", "corrected", "--compare",
                       "--baseline", "bm25", "--metrics", "ndcg@10,ra_nwg@10")  # fmt: skip
    assert code == 0
    warned = [line.split("warning: ", 1)[1] for line in err.splitlines() if "warning: " in line]
    assert warned
    table = part[part.index("<summary>estimate warning table</summary>") :]
    assert [unescape(w) for w in re.findall(r"<td>(.*?)</td>", table)] == warned
    assert "<summary>difference table</summary>" in part
    assert "<script" not in html and part.count("<svg ") == 2


def test_markdown_has_the_section_and_its_charts(cli: Cli, project: EstimateProject) -> None:
    out = project.db.parent / "md"
    code, _, err = cli("report", project.db, "--format", "markdown", "-o", out,
                       "--metrics", "ndcg@10", "--baseline", "bm25")  # fmt: skip
    assert code == 0, err
    text = (out / "report.md").read_text(encoding="utf-8")
    assert f"## {TITLE}" in text
    assert (out / "corrected-ndcg-10.svg").is_file()
    assert (out / "corrected-difference-ndcg-10.svg").is_file()


def test_without_a_draw_there_is_no_section(cli: Cli, tmp_path: Path) -> None:
    built = build(tmp_path, draw_sample=False)
    html = write_report(cli, built.db, "--metrics", "ndcg@10")
    assert section(html) is None and "Judge-corrected" not in html


@pytest.mark.parametrize(
    ("made", "said"),
    [
        ({"judge": False}, "no judge labels; raglabel judge {db}"),
        (
            {"complete": 8},
            "8 of 14 drawn queries complete at depth 10, 10 needed; grade 2 more drawn"
            " queries in full",
        ),
    ],
)
def test_a_draw_without_the_rest_is_one_sentence_saying_what_to_run(
    cli: Cli, tmp_path: Path, made: dict[str, Any], said: str
) -> None:
    built = build(tmp_path, **made)
    html = write_report(cli, built.db, "--metrics", "ndcg@10")
    part = section(html)
    assert part is not None
    assert paragraphs(part) == [
        "Not computed: the project has an audit draw, but the judge-corrected estimate"
        f" needs more: {said.format(db=built.db)}."
    ]
    assert "<svg" not in part


def page(metric: str, c: CorrectedComparison) -> ReportInput:
    runs: dict[str, Any] = {}
    corrected = Report(
        labels=LabelsInfo(400, 4000, "sha256:0"),
        config={},
        runs=runs,
        compare=[c],
        estimate=EstimateInfo("corrected", population=400, drawn=42, complete=40, depth=10),
    )
    return ReportInput(
        data=corrected,
        grade_counts={},
        title="t",
        baseline="bm25",
        headline=metric,
        source="s",
        corrected=corrected,
    )


def comparison(
    difference: float | None, ci: tuple[float, float] | None, settle: int | None, metric: str
) -> CorrectedComparison:
    return CorrectedComparison(
        baseline="bm25",
        run="hybrid",
        metric=metric,
        mean_difference=difference,
        ci=ci,
        p_value=None,
        wins=0,
        ties=0,
        losses=0,
        queries=40,
        queries_to_settle=settle,
        judge_only=Figure(None, None, 400),
        human_only=Figure(None, None, 40),
    )


@pytest.mark.parametrize(
    ("metric", "difference", "ci", "settle", "sentence"),
    [
        (
            "ndcg@10",
            0.041,
            (0.012, 0.070),
            0,
            "With 40 graded queries and the judge on all 400, hybrid beats bm25 on ndcg@10"
            " by +0.041, 95% interval +0.012 to +0.070.",
        ),
        (  # the baseline wins: said from its side
            "ndcg@10",
            -0.041,
            (-0.070, -0.012),
            0,
            "With 40 graded queries and the judge on all 400, bm25 beats hybrid on ndcg@10"
            " by +0.041, 95% interval +0.012 to +0.070.",
        ),
        (  # lower is better: less harm wins
            "harm@10",
            -0.020,
            (-0.035, -0.005),
            0,
            "With 40 graded queries and the judge on all 400, hybrid beats bm25 on harm@10"
            " (lower is better) by -0.020, 95% interval -0.035 to -0.005.",
        ),
        (
            "ndcg@10",
            0.010,
            (-0.012, 0.032),
            25,
            "With 40 graded queries and the judge on all 400, ndcg@10 cannot tell hybrid and"
            " bm25 apart: hybrid minus bm25 is +0.010, 95% interval -0.012 to +0.032, which"
            " includes 0. About 25 more graded drawn queries would likely settle it.",
        ),
        (
            "ndcg@10",
            0.001,
            (-0.020, 0.022),
            None,
            "With 40 graded queries and the judge on all 400, ndcg@10 cannot tell hybrid and"
            " bm25 apart: hybrid minus bm25 is +0.001, 95% interval -0.020 to +0.022, which"
            " includes 0. Even grading all 360 remaining queries would likely not settle it"
            " at this effect size.",
        ),
        (
            "ndcg@10",
            None,
            None,
            None,
            "With 40 graded queries and the judge on all 400, hybrid and bm25 have no"
            " corrected difference on ndcg@10: too few complete drawn queries where it is"
            " defined.",
        ),
    ],
)
def test_the_sentence_a_lead_needs(
    metric: str,
    difference: float | None,
    ci: tuple[float, float] | None,
    settle: int | None,
    sentence: str,
) -> None:
    c = comparison(difference, ci, settle, metric)
    assert lead_sentence(page(metric, c), c) == sentence


def test_the_pages_example_says_what_the_page_says(
    cli: Cli, project: EstimateProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = f"tests/unit/{Path(__file__).name}"
    [commands] = examples("guide/report.md", here, "bash")
    [printed] = examples("guide/report.md", here, "text")
    monkeypatch.chdir(project.db.parent)
    (line,) = commands.splitlines()
    words = shlex.split(line)
    assert words[:2] == ["raglabel", "report"]
    code, _, err = cli(*words[1:])
    assert code == 0, err
    html = (project.db.parent / words[words.index("-o") + 1]).read_text(encoding="utf-8")
    part = section(html)
    assert part is not None
    assert paragraphs(part)[1] + "\n" == printed


def test_with_every_query_graded_the_sentence_does_not_ask_for_more() -> None:
    # A tryout's project: all 10 queries drawn and complete, the difference unsettled.
    c = comparison(0.239, (-0.063, 0.540), None, "ndcg@10")
    report = page("ndcg@10", c)
    assert report.corrected is not None
    report.corrected.estimate = EstimateInfo(
        "corrected", population=10, drawn=10, complete=10, depth=10
    )
    sentence = lead_sentence(report, c)
    assert "remaining" not in sentence
    assert sentence.endswith(
        "which includes 0. Every query is graded in full already, so no more grading can settle it."
    )
