"""``raglabel report`` and ``Report.to_html``: what the file holds, that it fetches
nothing, that its numbers are eval's, its words, its refusals, and its text pinned."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import raglabel
from raglabel.report.summary import value

if TYPE_CHECKING:
    from cli_helpers import Cli
    from syrupy.assertion import SnapshotAssertion

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"
RUNS = {"bm25": DEMO / "runs" / "bm25.run", "dense": DEMO / "runs" / "dense.run"}


class Visible(HTMLParser):
    """The text a reader sees, and every URL-bearing attribute and style."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.references: list[str] = []
        self.styles: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("style", "title", "script"):
            self._hidden += 1
        for name, content in attrs:
            if name in ("src", "href", "xlink:href", "action", "srcset", "poster"):
                self.references.append(content or "")
            if name == "style":
                self.styles.append(content or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "title", "script"):
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if tag_text := data.strip():
            if self._hidden:
                self.styles.append(data)
            else:
                self.text.append(tag_text)


def parse(html: str) -> Visible:
    page = Visible()
    page.feed(html)
    return page


def assert_fetches_nothing(html: str) -> None:
    page = parse(html)
    assert "<script" not in html.lower()
    for reference in page.references:
        assert not re.match(r"\s*(https?:)?//", reference, re.I), reference
    for css in [*page.styles, *re.findall(r"<style>(.*?)</style>", html, re.S)]:
        for target in re.findall(r"url\(\s*['\"]?([^'\")]*)", css, re.I):
            assert not re.match(r"\s*(https?:)?//", target, re.I), target
        assert "@import" not in css


def files_argv(*extra: str | Path) -> list[str | Path]:
    argv: list[str | Path] = ["report", "--qrels", DEMO / "qrels.txt"]
    for name, path in RUNS.items():
        argv += ["--run", f"{name}={path}"]
    return [*argv, *extra]


def test_the_demo_report_holds_eval_numbers_and_fetches_nothing(
    demo_db: Path, tmp_path: Path, cli: Cli
) -> None:
    out = tmp_path / "report.html"
    code, _, err = cli("report", demo_db, "--answers", "-o", out)
    assert code == 0, err
    html = out.read_text(encoding="utf-8")
    assert_fetches_nothing(html)
    code, text, err = cli("eval", demo_db, "--ci", "--format", "json")
    assert code == 0, err
    data = json.loads(text)
    page = " | ".join(parse(html).text)
    for run in data["runs"].values():
        for metric, mean in run["mean"].items():
            low, high = run["ci"][metric]
            assert f"{value(mean)} [{value(low)}, {value(high)}]" in page, metric
    for title in (
        "Summary",
        "Means per run",
        "Against the baseline bm25",
        "Per-query ra_nwg@5",
        "Grade prevalence",
        "Judge and people",
        "Answer criteria",
        "Labels and conventions",
    ):
        assert title in page
    assert data["labels"]["fingerprint"] in page
    # Every chart is inline SVG with an accessible name.
    assert html.count("<svg ") == html.count('role="img"') >= 40


def test_the_demo_reports_text_is_pinned(
    demo_db: Path, tmp_path: Path, cli: Cli, snapshot: SnapshotAssertion
) -> None:
    out = tmp_path / "report.html"
    code, _, err = cli("report", demo_db, "--answers", "-o", out)
    assert code == 0, err
    text = "\n".join(parse(out.read_text(encoding="utf-8")).text)
    assert text == snapshot


def test_markdown_writes_report_md_and_every_chart_it_links(tmp_path: Path, cli: Cli) -> None:
    folder = tmp_path / "pr"
    code, _, err = cli(*files_argv("--format", "markdown", "-o", folder))
    assert code == 0, err
    text = (folder / "report.md").read_text(encoding="utf-8")
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(linked) == sorted(p.name for p in folder.glob("*.svg"))
    assert len(linked) == 36  # 17 metrics: means and differences, the distribution, grades
    for name in linked:
        root = ET.parse(folder / name).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "## Summary" in text and "| metric | bm25 | dense |" in text
    assert not list(tmp_path.glob(".raglabel-report-*")), "the staging folder is gone"


def test_markdown_written_again_into_its_folder_replaces_the_files(
    tmp_path: Path, cli: Cli
) -> None:
    folder = tmp_path / "pr"
    assert cli(*files_argv("--format", "markdown", "-o", folder))[0] == 0
    (folder / "report.md").write_text("stale")
    (folder / "notes.txt").write_text("mine")
    code, _, err = cli(*files_argv("--format", "markdown", "-o", folder))
    assert code == 0, err
    assert (folder / "report.md").read_text(encoding="utf-8").startswith("# ")
    assert (folder / "notes.txt").read_text() == "mine"


def test_html_into_a_folder_is_refused(tmp_path: Path, cli: Cli) -> None:
    code, _, err = cli(*files_argv("-o", tmp_path))
    assert code == 2 and "is a folder; give the HTML file's path" in err


def test_the_default_baseline_adjusts_as_naming_the_first_run_does(
    tmp_path: Path, cli: Cli
) -> None:
    # Holm over the tests the report shows: the first run against each other one, not
    # every pair (which would make the p-values depend on naming the default).
    default, named = tmp_path / "default.html", tmp_path / "named.html"
    third = ["--run", f"hybrid={DEMO / 'runs' / 'hybrid.run'}"]  # three runs, three pairs
    assert cli(*files_argv(*third, "-o", default))[0] == 0
    assert cli(*files_argv(*third, "--baseline", "bm25", "-o", named))[0] == 0
    assert default.read_text(encoding="utf-8") == named.read_text(encoding="utf-8")


def test_answers_in_the_report_leave_the_runs_p_values_alone(
    demo_db: Path, tmp_path: Path, cli: Cli
) -> None:
    def against_the_baseline(*extra: str) -> list[str]:
        out = tmp_path / "r.html"
        # 1,000 randomization draws, not 10,000: the two reports are compared, not a figure.
        assert cli("report", demo_db, *extra, "--permutations", "1000", "-o", out)[0] == 0
        text = parse(out.read_text(encoding="utf-8")).text
        start = text.index("Against the baseline bm25")
        end = next(i for i in range(start, len(text)) if text[i].startswith("Per-query "))
        return text[start:end]

    assert against_the_baseline("--answers") == against_the_baseline()


def test_names_are_escaped_everywhere(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "report.html"
    odd = 'a<b&"c"'
    code, _, err = cli(
        "report",
        "--qrels",
        DEMO / "qrels.txt",
        "--run",
        f"{odd}={RUNS['bm25']}",
        "--run",
        f"dense={RUNS['dense']}",
        "--title",
        "<i>mine</i>",
        "-o",
        out,
    )
    assert code == 0, err
    html = out.read_text(encoding="utf-8")
    assert odd not in html and "<i>mine</i>" not in html
    assert "a&lt;b&amp;&quot;c&quot;" in html
    assert odd in " ".join(parse(html).text)
    ET.fromstring(re.findall(r"<svg .*?</svg>", html, re.S)[0])  # well-formed XML


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--headline", "nope@5"], "--headline 'nope@5' is not among the metrics"),
        (["--baseline", "nope"], "--baseline 'nope' is not one of the runs"),
        (["--answers"], "--answers needs a project DB: raglabel report DB --answers"),
        (["-o", "missing/report.html"], "does not exist"),
    ],
)
def test_refusals_exit_2_and_write_nothing(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, extra: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = files_argv(*extra)
    if "-o" not in extra:
        argv += ["-o", "report.html"]
    code, _, err = cli(*argv)
    assert code == 2, err
    assert message in err
    assert list(tmp_path.iterdir()) == []


def test_markdown_into_a_file_is_refused(tmp_path: Path, cli: Cli) -> None:
    taken = tmp_path / "taken"
    taken.write_text("mine")
    code, _, err = cli(*files_argv("--format", "markdown", "-o", taken))
    assert code == 2 and "not a folder" in err
    assert taken.read_text() == "mine"


def test_to_html_equals_the_command_on_files_and_on_dicts(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "report.html"
    code, _, err = cli(*files_argv("-k", "5,10", "-o", out))
    assert code == 0, err
    from_files = raglabel.evaluate(
        str(DEMO / "qrels.txt"), {n: str(p) for n, p in RUNS.items()}, k=[5, 10]
    )
    assert from_files.to_html() == out.read_text(encoding="utf-8")
    qrels: dict[str, dict[str, int]] = {}
    for line in (DEMO / "qrels.txt").read_text().splitlines():
        q, _, d, label = line.split()[:4]
        qrels.setdefault(q, {})[d] = int(label)
    from_dicts = raglabel.evaluate(qrels, {n: str(p) for n, p in RUNS.items()}, k=[5, 10])
    html = from_dicts.to_html()
    # The same labels and runs: the same report, but for where the qrels came from.
    assert html.replace("qrels dict", "SOURCE") == out.read_text(encoding="utf-8").replace(
        "qrels qrels.txt", "SOURCE"
    )
    with pytest.raises(ValueError, match=r"^baseline 'x' is not one of the runs"):
        from_dicts.to_html(baseline="x")
    assert "On ndcg@10," in from_dicts.to_html(headline="ndcg@10")
    # Asked for intervals and tests already, the page is the same.
    with_tests = raglabel.evaluate(
        str(DEMO / "qrels.txt"),
        {n: str(p) for n, p in RUNS.items()},
        k=[5, 10],
        ci=True,
        compare=True,
    )
    assert with_tests.to_html() == out.read_text(encoding="utf-8")


def run_file(path: Path, order: dict[str, list[str]]) -> Path:
    path.write_text(
        "".join(
            f"{q} Q0 {d} {i + 1} {100 - i} x\n"
            for q, docs in order.items()
            for i, d in enumerate(docs)
        )
    )
    return path


def words(
    tmp_path: Path,
    cli: Cli,
    runs: dict[str, dict[str, list[str]]],
    *extra: str,
    metrics: str = "ndcg@5,judged@5",
) -> str:
    qrels = tmp_path / "qrels.txt"
    queries = [f"q{i:02d}" for i in range(30)]
    qrels.write_text("".join(f"{q} 0 good 3\n{q} 0 bad 0\n{q} 0 meh 1\n" for q in queries))
    argv: list[str | Path] = ["report", "--qrels", qrels, "--metrics", metrics]
    for name, order in runs.items():
        argv += ["--run", f"{name}={run_file(tmp_path / f'{name}.run', order)}"]
    out = tmp_path / "r.html"
    code, _, err = cli(*argv, *extra, "-o", out)
    assert code == 0, err
    page = parse(out.read_text(encoding="utf-8")).text
    return page[page.index("Summary") + 1]


def test_the_summary_says_significant_when_it_is(tmp_path: Path, cli: Cli) -> None:
    queries = [f"q{i:02d}" for i in range(30)]
    text = words(
        tmp_path,
        cli,
        {
            "old": {q: ["bad", "meh", "good"] for q in queries},
            "new": {q: ["good", "meh", "bad"] for q in queries},
        },
    )
    assert text.startswith("On ndcg@5, new is best: 1.000")
    assert "Against the baseline old, new differs by +" in text
    assert "(30 better, 0 tied, 0 worse): significant at the 0.05 level (p < 0.001" in text
    assert "thin" not in text


def test_the_summary_says_when_runs_cannot_be_told_apart(tmp_path: Path, cli: Cli) -> None:
    queries = [f"q{i:02d}" for i in range(30)]
    same = {q: ["good", "meh", "bad"] for q in queries}
    text = words(tmp_path, cli, {"a": same, "b": same})
    assert text.startswith("On ndcg@5, every run scores the same, 1.000, over 30 queries.")
    # a is ahead on 16 queries, b on 14: a small difference of means, not significant.
    first, second = ["good", "meh"], ["meh", "good"]
    a = {q: first if i < 16 else second for i, q in enumerate(queries)}
    b = {q: second if i < 16 else first for i, q in enumerate(queries)}
    text = words(tmp_path, cli, {"a": a, "b": b}, "--baseline", "b")
    assert "a is best" in text and "Against the baseline b, a differs by +" in text
    assert "(16 better, 0 tied, 14 worse)" in text
    assert "not significant at the 0.05 level" in text
    assert "the paired test cannot tell the two apart" in text
    unjudged = {q: ["unjudged", "good"] for q in queries}
    text = words(tmp_path, cli, {"a": same, "b": unjudged})
    assert "Labels are thin: only 50% of b's top passages are graded" in text


def test_on_harm_the_lowest_run_is_best_and_wins_where_it_is_lower(
    tmp_path: Path, cli: Cli
) -> None:
    queries = [f"q{i:02d}" for i in range(30)]
    runs = {
        "risky": {q: ["bad", "good"] for q in queries},
        # Lower harm than the baseline on 20 queries, the same on 10.
        "safe": {q: ["good", "meh"] if i < 20 else ["bad", "good"] for i, q in enumerate(queries)},
    }
    text = words(tmp_path, cli, runs, metrics="harm@1")
    assert text.startswith("On harm@1 (lower is better), safe is best: 0.333"), text
    assert "Against the baseline risky, safe differs by -0.667" in text
    assert "(20 better, 10 tied, 0 worse): significant" in text


def test_judged_just_under_one_is_said_plainly_not_called_thin(tmp_path: Path, cli: Cli) -> None:
    queries = [f"q{i:02d}" for i in range(30)]
    almost = {q: ["good", "meh", "bad", *(["unjudged"] if q == "q00" else [])] for q in queries}
    text = words(tmp_path, cli, {"a": almost}, metrics="ndcg@4,judged@4")
    assert "thin" not in text
    assert "99.1% of a's top passages are graded (the least of any run)" in text


def test_a_best_baseline_is_set_against_the_runner_up(tmp_path: Path, cli: Cli) -> None:
    queries = [f"q{i:02d}" for i in range(30)]
    text = words(
        tmp_path,
        cli,
        {
            "best": {q: ["good", "meh", "bad"] for q in queries},
            "worst": {q: ["bad", "meh", "good"] for q in queries},
            "middle": {q: ["meh", "good", "bad"] for q in queries},
        },
    )
    assert "best is the baseline; against the runner-up middle, it differs by +" in text
    # Said from the baseline's side: it is better on every query, not worse.
    assert "(30 better, 0 tied, 0 worse)" in text
    on_harm = words(
        tmp_path,
        cli,
        {
            "safe": {q: ["good", "bad"] for q in queries},
            "risky": {
                q: ["bad", "good"] if i < 20 else ["good", "bad"] for i, q in enumerate(queries)
            },
        },
        metrics="harm@1",
    )
    assert "safe is the baseline; against the runner-up risky, it differs by -0.667" in on_harm
    assert "(20 better, 10 tied, 0 worse)" in on_harm


def test_agreement_shows_a_heatmap_and_alpha_with_its_interval(tmp_path: Path, cli: Cli) -> None:
    from test_agree import build

    db = build(tmp_path, cli, {"m1": [4, 4, 3, 1, 1, 5]})
    out = tmp_path / "a.html"
    code, _, err = cli("report", db, "-o", out)
    assert code == 0, err
    html = out.read_text(encoding="utf-8")
    text = " ".join(parse(html).text)
    assert "The judge (m1) and people graded" in text
    assert re.search(r"Krippendorff's alpha \(ordinal\) between the judge and people is -?\d", text)
    assert "<figcaption>Judge against people</figcaption>" in html
    assert_fetches_nothing(html)


def test_files_have_no_judge_section_and_say_why(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "r.html"
    assert cli(*files_argv("-o", out))[0] == 0
    text = " ".join(parse(out.read_text(encoding="utf-8")).text)
    assert "Not shown: the labels come from files" in text


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path, cli: Cli) -> None:
    first, second = tmp_path / "1.html", tmp_path / "2.html"
    assert cli(*files_argv("-o", first))[0] == 0
    assert cli(*files_argv("-o", second))[0] == 0
    assert first.read_bytes() == second.read_bytes()


def test_one_run_has_no_baseline_section_and_no_warning_about_it(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "one.html"
    code, _, err = cli("report", "--qrels", DEMO / "qrels.txt", "--run", RUNS["bm25"], "-o", out)
    assert code == 0, err
    assert "compare" not in err
    text = parse(out.read_text(encoding="utf-8")).text
    assert not any(line.startswith("Against the baseline") for line in text)
    summary = text[text.index("Summary") + 1]
    assert summary.startswith("On ra_nwg@5, bm25 scores 0.693 (95% interval")


def test_an_intervals_bounds_are_written_alike() -> None:
    from raglabel.report.parts import bracket as _ci

    assert _ci((-10.94, 7.1984)) == "[-10.9, 7.2]"
    assert _ci((0.51234, 0.7)) == "[0.512, 0.700]"
    assert _ci(None) == ""


def test_the_summary_calls_an_interval_that_excludes_0_with_p_over_005_borderline(
    tmp_path: Path, cli: Cli
) -> None:
    # a is ahead on 5 of 30 queries, tied on the rest. Flipping the 5 signs gives p =
    # 2/32 = 0.0625, but a bootstrap resample misses all 5 only (25/30)^30 = 0.4% of the
    # time, so the 95% interval excludes 0: two procedures, two verdicts, said as such.
    queries = [f"q{i:02d}" for i in range(30)]
    a = {q: ["good", "meh", "bad"] for q in queries}
    b = {
        q: ["bad", "meh", "good"] if i < 5 else ["good", "meh", "bad"]
        for i, q in enumerate(queries)
    }
    text = words(tmp_path, cli, {"a": a, "b": b}, "--baseline", "b")
    assert "(5 better, 25 tied, 0 worse): not significant at the 0.05 level" in text
    assert "The evidence is borderline: the 95% interval of the difference excludes 0" in text
    assert "cannot tell the two apart" not in text


def test_agreement_table_gives_agrees_intervals_at_the_reports_level(
    tmp_path: Path, cli: Cli
) -> None:
    # The LLMJudge slice: NIST's labels as people's, gpt4o's as the judge's, 10 queries.
    from test_estimate_notes import llmjudge

    db = llmjudge(cli, tmp_path)
    code, out, err = cli("agree", db, "--format", "json", "--seed", "7", "--resamples", "300")
    assert code == 0, err
    (pair,) = json.loads(out)["pairs"]
    kappa, alpha = pair["ci"]["kappa"], pair["ci"]["alpha"]
    for level, expect in (("0.95", (kappa, alpha)), ("0.8", None)):
        page = tmp_path / f"r{level}.html"
        argv = ("report", db, "-o", page, "--seed", "7", "--resamples", "300")
        code, _, err = cli(*argv, "--confidence", level)
        assert code == 0, err
        text = " ".join(parse(page.read_text(encoding="utf-8")).text)
        percent = f"{float(level):.0%}"
        assert f"pairs alpha alpha {percent} kappa kappa {percent} exact" in text
        assert re.search(rf"people is -?[\d.]+ \({percent} interval -?[\d.]+ to -?[\d.]+\)", text)
        row = re.search(r"gpt4o humans 240 ([\d.-]+) ([\d.-]+) to ([\d.-]+) ([\d.-]+) "
                        r"([\d.-]+) to ([\d.-]+)", text)  # fmt: skip
        assert row is not None, text
        a_lo, a_hi, k_lo, k_hi = (float(row[i]) for i in (2, 3, 5, 6))
        if expect is not None:  # the same bootstrap as agree's, at 95%
            assert (k_lo, k_hi) == pytest.approx(tuple(kappa), abs=5e-4)
            assert (a_lo, a_hi) == pytest.approx(tuple(alpha), abs=5e-4)
        else:  # a lower level gives an interval inside the 95% one
            assert kappa[0] - 5e-4 <= k_lo <= k_hi <= kappa[1] + 5e-4
            assert (k_hi - k_lo) < (kappa[1] - kappa[0])
