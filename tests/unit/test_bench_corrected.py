"""benchmarks/corrected.py on the LLMJudge slice (tests/data/llmjudge: 10 queries, 240
pairs, people's labels and two submissions), laid out as the two repositories' work trees:
the loading and its errors, the synthetic runs, the per-query metrics against
pytrec_eval, and the resampled figures against a draw-by-draw loop, scipy's Pearson r and
intervals built here by hand."""

from __future__ import annotations

import importlib.util
import math
import shutil
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import pytrec_eval
from docs_pages import ROOT
from scipy import stats

from raglabel.metrics.judge_corrected import judge_corrected

SLICE = ROOT / "tests" / "data" / "llmjudge"
MODELS = {"umbrela1": "umbrela1.qrels", "gpt4o": "gpt4o.qrels"}


def _load_bench() -> ModuleType:
    # Appended, not inserted: benchmarks/common.py must shadow nothing of the suite's.
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(
        "bench_corrected", ROOT / "benchmarks" / "corrected.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


def lay_out(folder: Path, models: dict[str, str] = MODELS) -> Path:
    """The slice where the benchmark looks for clones of the two repositories."""
    challenge = folder / "LLMJudge" / "data"
    challenge.mkdir(parents=True)
    shutil.copy(SLICE / "humans.qrels", challenge / "llmjudge_test_qrel_idx.txt")
    scores = folder / "LLMJudge-benchmark" / "submissions" / "scores"
    scores.mkdir(parents=True)
    for name, file in models.items():
        shutil.copy(SLICE / file, scores / f"{name}.txt")
    return folder


def test_load_reads_people_and_each_submission(tmp_path: Path) -> None:
    sets = bench.load(lay_out(tmp_path), None)
    assert sorted(sets.models) == ["gpt4o", "umbrela1"]
    assert len(sets.humans) == 10
    assert sum(map(len, sets.humans.values())) == 240
    assert sets.humans["q22"]["p1170"] == 1 and sets.models["gpt4o"]["q22"]["p1170"] == 3
    assert sets.commits == {"LLMJudge": None, "LLMJudge-benchmark": None}
    assert list(bench.load(tmp_path, ["gpt4o"]).models) == ["gpt4o"]


def test_a_label_off_the_scale_is_left_out_and_said(tmp_path: Path) -> None:
    data = lay_out(tmp_path)
    target = data / "LLMJudge-benchmark" / "submissions" / "scores" / "gpt4o.txt"
    lines = target.read_text().splitlines()
    lines[2] = lines[2].rsplit(" ", 1)[0] + " 10"
    target.write_text("\n".join(lines) + "\n")
    sets = bench.load(data, None)
    assert sets.dropped["gpt4o"] == ["LLMJudge-benchmark/submissions/scores/gpt4o.txt:3 (label 10)"]
    qid, _, docid, _ = lines[2].split()
    assert docid not in sets.models["gpt4o"][qid]
    assert sets.dropped["umbrela1"] == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda lines: lines.__setitem__(4, "q22 0 p1"),
            "gpt4o.txt:5: expected 'qid 0 docid label'",
        ),
        (lambda lines: lines.__setitem__(4, "q22 0 p1 x"), "gpt4o.txt:5: label 'x' is not"),
        (lambda lines: lines.append(lines[0]), "gpt4o.txt:241: query q22 passage"),
        (lambda lines: lines.pop(), "gpt4o.txt: 239 pairs, people labelled 240"),
        (lambda lines: lines.__setitem__(0, "q22 0 p999999 1"), "passage p999999 has no people"),
    ],
)
def test_a_bad_submission_is_an_error_naming_file_and_line(
    tmp_path: Path, change: object, message: str
) -> None:
    data = lay_out(tmp_path)
    target = data / "LLMJudge-benchmark" / "submissions" / "scores" / "gpt4o.txt"
    lines = target.read_text().splitlines()
    change(lines)  # type: ignore[operator]
    target.write_text("\n".join(lines) + "\n")
    with pytest.raises(bench.DataError, match=message.replace("(", r"\(")):
        bench.load(data, None)


def test_missing_data_says_what_to_fetch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main(["--data", str(tmp_path), "--draws", "5"]) == 2
    said = capsys.readouterr().err
    assert "no clone of LLMJudge or LLMJudge-benchmark" in said
    assert "git clone --bare https://github.com/llm4eval/LLMJudge " in said
    with pytest.raises(bench.DataError, match="no submission nope"):
        bench.load(lay_out(tmp_path), ["nope"])


def test_the_runs_rank_every_pair_and_are_seeded(tmp_path: Path) -> None:
    humans = bench.load(lay_out(tmp_path), None).humans
    runs = bench.make_runs(humans, seed=3)
    assert list(runs) == list(bench.RUNS)
    for run in runs.values():
        assert {q: set(d) for q, d in run.items()} == {q: set(d) for q, d in humans.items()}
    assert runs == bench.make_runs(humans, seed=3)
    assert runs != bench.make_runs(humans, seed=4)


def test_per_query_metrics_are_trec_evals(tmp_path: Path) -> None:
    sets = bench.load(lay_out(tmp_path), None)
    runs = bench.make_runs(sets.humans)
    queries = sorted(sets.humans)
    for labels in (sets.humans, sets.models["gpt4o"]):
        found = bench.per_query(labels, runs, queries)
        for r, run in enumerate(runs.values()):
            # Label 2 and up is relevant for P@10: raglabel's default pass mark (grade 4).
            ndcg = pytrec_eval.RelevanceEvaluator(labels, {"ndcg_cut.10"}).evaluate(run)
            prec = pytrec_eval.RelevanceEvaluator(labels, {"P.10"}, relevance_level=2).evaluate(run)
            for q, qid in enumerate(queries):
                relevant = any(v > 0 for v in labels.get(qid, {}).values())
                if relevant:
                    assert found[q, r, 0] == pytest.approx(ndcg[qid]["ndcg_cut_10"], abs=1e-12)
                else:  # no relevant passage: nDCG undefined, left out
                    assert math.isnan(found[q, r, 0])
                assert found[q, r, 1] == pytest.approx(prec[qid]["P_10"], abs=1e-12)


def test_draws_are_without_replacement_and_seeded() -> None:
    drawn = bench.draw_queries(25, 10, 500, seed=1)
    assert drawn.shape == (500, 10)
    assert all(len(set(row)) == 10 for row in drawn.tolist())
    assert drawn.min() == 0 and drawn.max() == 24
    # Uniform: each query drawn about 10/25 of the time (200 of 500, sd about 11).
    counts = np.bincount(drawn.ravel(), minlength=25)
    assert np.all(np.abs(counts - 200) < 60)
    assert np.array_equal(drawn, bench.draw_queries(25, 10, 500, seed=1))


def test_resampled_figures_match_a_draw_by_draw_check(tmp_path: Path) -> None:
    sets = bench.load(lay_out(tmp_path), None)
    runs = bench.make_runs(sets.humans)
    names = list(runs)
    queries = sorted(sets.humans)
    people = bench.columns(bench.per_query(sets.humans, runs, queries), names)
    judge = bench.columns(bench.per_query(sets.models["umbrela1"], runs, queries), names)
    f, h = judge.values, people.values
    k = f.shape[1]
    assert k == len(bench.RUNS) * 2 + len(bench.DIFFERENCES) * 2
    # A difference column is the two runs' columns subtracted.
    a, b = bench.DIFFERENCES[0]
    j_diff = people.names.index((f"{a} - {b}", "ndcg@10"))
    j_a, j_b = people.names.index((a, "ndcg@10")), people.names.index((b, "ndcg@10"))
    assert np.allclose(h[:, j_diff], h[:, j_a] - h[:, j_b], equal_nan=True)

    drawn = bench.draw_queries(len(queries), 6, 60, seed=5)
    found = bench.figures(f, h, drawn, min_drawn=5)
    truth = np.nanmean(h, axis=0)
    z = stats.norm.ppf(0.975)
    covered = np.zeros((len(drawn), k))
    human_covered = np.zeros((len(drawn), k))
    widths = np.zeros((len(drawn), k))
    human_widths = np.zeros((len(drawn), k))
    for d, rows in enumerate(drawn.tolist()):
        one = judge_corrected(f, h[rows], f[rows], min_drawn=5)
        covered[d] = (one.corrected.low <= truth) & (truth <= one.corrected.high)
        widths[d] = one.corrected.high - one.corrected.low
        # People's interval by hand: mean +- z * sd / sqrt(n), the sample sd.
        sample = h[rows]
        mean, sd = sample.mean(axis=0), sample.std(axis=0, ddof=1)
        half = z * sd / math.sqrt(len(rows))
        human_covered[d] = (mean - half <= truth) & (truth <= mean + half)
        human_widths[d] = 2 * half
    assert not np.isnan(widths).any()  # every pair defined here: no draw left out
    assert np.allclose(found.cover, covered.mean(axis=0))
    assert np.allclose(found.human_cover, human_covered.mean(axis=0))
    assert np.allclose(found.width_ratio, widths.sum(axis=0) / human_widths.sum(axis=0))
    assert np.allclose(found.bias, f.mean(axis=0) - h.mean(axis=0))
    assert np.all(found.failed == 0.0)
    for j in range(k):
        if np.ptp(f[:, j]) > 0 and np.ptp(h[:, j]) > 0:
            assert found.correlation[j] == pytest.approx(stats.pearsonr(f[:, j], h[:, j])[0])
    # lam = 1 is classic PPI: its interval is the judge's mean plus the drawn mean of
    # h - f, each term's variance over its own sample.
    rows = drawn[0].tolist()
    rectifier = h[rows] - f[rows]
    se = np.sqrt(rectifier.var(axis=0, ddof=1) / 6 + f.var(axis=0, ddof=1) / len(queries))
    estimate = f.mean(axis=0) + rectifier.mean(axis=0)
    fixed = bench.resample(f, h, drawn, min_drawn=5).classic
    assert np.allclose(fixed.width[0], 2 * z * se)
    assert np.array_equal(
        fixed.covered[0], (estimate - z * se <= truth) & (truth <= estimate + z * se)
    )

    rows_shown = bench.table_rows("umbrela1", people, found)
    assert [row[:2] for row in rows_shown] == [["umbrela1", "nDCG@10"], ["umbrela1", "P@10"]]
    assert len(rows_shown[0]) == len(bench.HEAD)
    met = bench.goals([found])
    assert met[0][0] == bool(np.all(found.cover >= 0.93))
