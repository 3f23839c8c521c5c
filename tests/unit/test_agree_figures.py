"""The figures the literature on LLM assessors reports, from ``raglabel agree`` (issue 28
§2), each checked against an independent implementation: Cohen's kappa against
scikit-learn's ``cohen_kappa_score``, Krippendorff's alpha against the ``krippendorff``
package, Kendall's tau-b against ``scipy.stats.kendalltau``; on the pure functions and
end to end on a project built here. The bootstrap intervals over queries are checked
against a plain loop that rebuilds each resample's pairs and runs and recomputes the
figure with those packages, and by simulation: how often they cover a known value.
Also runs the examples of docs/guide/judge.md's agree section."""

from __future__ import annotations

import json
import shlex
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import krippendorff
import numpy as np
import pytest
from docs_pages import examples
from numpy.typing import NDArray
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from raglabel.metrics.agreement import (
    binary_tables,
    confusion,
    kendall_tau_b,
    table_kappas,
    tau_b_rows,
    weighted_kappa,
)
from raglabel.metrics.agreement_intervals import (
    pair_intervals,
    query_draws,
    run_order_intervals,
    table_alphas,
    table_figures,
    top_tau_rows,
)
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli

GRADES = [1, 2, 3, 4, 5]
Pair = tuple[str, str]


# -- independent implementations -------------------------------------------------------


def sk_kappa(a: Sequence[int], b: Sequence[int], weights: str | None) -> float:
    return float(cohen_kappa_score(a, b, labels=GRADES, weights=weights))


def sk_binary(a: Sequence[int], b: Sequence[int], threshold: int) -> float:
    """NaN where both raters put every pair on one side (scikit-learn warns of 0/0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(
            cohen_kappa_score(
                [int(g >= threshold) for g in a], [int(g >= threshold) for g in b], labels=[0, 1]
            )
        )


def kr_alpha(a: Sequence[int], b: Sequence[int]) -> float:
    return float(
        krippendorff.alpha(
            reliability_data=np.array([a, b], dtype=float),
            level_of_measurement="ordinal",
            value_domain=GRADES,
        )
    )


def sp_tau(x: Sequence[float], y: Sequence[float]) -> float:
    return float(kendalltau(x, y, variant="b").statistic)


def random_grades(rng: np.random.Generator, n: int) -> tuple[list[int], list[int]]:
    """Two raters who agree more than chance: b is a's grade moved by -1, 0 or +1."""
    a = rng.integers(1, 6, size=n)
    b = np.clip(a + rng.integers(-1, 2, size=n), 1, 5)
    return a.tolist(), b.tolist()


# -- the pure functions ----------------------------------------------------------------


def test_kappas_equal_scikit_learns() -> None:
    rng = np.random.default_rng(11)
    for _ in range(25):
        a, b = random_grades(rng, int(rng.integers(5, 60)))
        table = confusion(a, b)
        assert weighted_kappa(a, b, weights="none") == pytest.approx(sk_kappa(a, b, None))
        assert weighted_kappa(a, b) == pytest.approx(sk_kappa(a, b, "quadratic"))
        assert float(table_kappas(table, "none")) == pytest.approx(sk_kappa(a, b, None))
        for threshold in (2, 3, 4, 5):
            relevant = np.array(GRADES) >= threshold
            folded = binary_tables(table, relevant)
            assert folded.sum() == len(a)
            expected = sk_binary(a, b, threshold)
            if np.isnan(expected):  # scikit-learn's 0/0; ours says undefined
                assert np.isnan(table_kappas(folded, "none"))
            else:
                assert float(table_kappas(folded, "none")) == pytest.approx(expected)


def test_table_alpha_equals_the_krippendorff_package() -> None:
    rng = np.random.default_rng(12)
    stack = []
    expected = []
    for _ in range(40):
        a, b = random_grades(rng, int(rng.integers(4, 50)))
        stack.append(confusion(a, b))
        expected.append(kr_alpha(a, b))
    got = table_alphas(np.array(stack, dtype=np.float64))
    assert got == pytest.approx(expected)


def test_tau_rows_equal_scipys_leaving_out_missing_runs() -> None:
    rng = np.random.default_rng(13)
    x = rng.integers(0, 6, size=(50, 9)).astype(np.float64)  # integers: many ties
    y = x + rng.integers(-2, 3, size=x.shape)
    x[rng.random(x.shape) < 0.15] = np.nan
    got = tau_b_rows(x, y)
    for row, tau in zip(range(len(x)), got, strict=True):
        keep = ~np.isnan(x[row])
        expected = sp_tau(x[row][keep], y[row][keep])
        if np.isnan(expected):
            assert np.isnan(tau)
        else:
            assert tau == pytest.approx(expected)
    whole = rng.normal(size=(2, 12))
    assert kendall_tau_b(whole[0], whole[1]) == pytest.approx(sp_tau(whole[0], whole[1]))


def test_tau_over_the_best_runs_equals_scipy_on_those_runs() -> None:
    rng = np.random.default_rng(14)
    for _ in range(30):
        human = rng.normal(size=10)
        judge = human + rng.normal(scale=0.8, size=10)
        for top in (3, 5, 10):
            best = np.argsort(-human)[:top]
            got = top_tau_rows(human[None], judge[None], top)[0]
            assert got == pytest.approx(sp_tau(human[best], judge[best]))
            # Lower is better (harm@k): the best are the lowest on human grades.
            low = np.argsort(human)[:top]
            got = top_tau_rows(human[None], judge[None], top, lower_is_better=True)[0]
            assert got == pytest.approx(sp_tau(human[low], judge[low]))
    # Fewer than 3 runs with both means: undefined, never a number.
    two = np.array([[0.3, 0.2, np.nan, np.nan]])
    assert np.isnan(top_tau_rows(two, two, 3)[0])


def expand(
    per_query: Sequence[tuple[list[int], list[int]]], counts: NDArray[np.float64]
) -> tuple[list[int], list[int]]:
    """One resample's pairs: each query's pairs repeated as often as it was drawn."""
    a: list[int] = []
    b: list[int] = []
    for (qa, qb), times in zip(per_query, counts, strict=True):
        a += qa * int(times)
        b += qb * int(times)
    return a, b


def test_pair_intervals_are_the_figures_recomputed_on_resampled_queries() -> None:
    rng = np.random.default_rng(15)
    per_query = [random_grades(rng, int(rng.integers(3, 12))) for _ in range(9)]
    tables = np.array([confusion(a, b) for a, b in per_query], dtype=np.float64)
    relevant = np.array(GRADES) >= 4
    found = pair_intervals(tables, relevant, resamples=120, seed=(5, 0))
    draws: dict[str, list[float]] = {name: [] for name in found}
    for chunk in query_draws(len(per_query), 120, (5, 0)):
        for counts in chunk:
            a, b = expand(per_query, counts)
            draws["kappa"].append(sk_kappa(a, b, "quadratic"))
            draws["kappa_unweighted"].append(sk_kappa(a, b, None))
            draws["kappa_binary"].append(sk_binary(a, b, 4))
            draws["alpha"].append(kr_alpha(a, b))
    for name, values in draws.items():
        defined = [v for v in values if not np.isnan(v)]
        assert found[name].undefined == len(values) - len(defined)
        assert found[name].ci == pytest.approx(tuple(np.percentile(defined, [2.5, 97.5])))
    # One query: nothing to resample, so no interval rather than a zero-width one.
    assert pair_intervals(tables[:1], relevant, resamples=50, seed=1) == {}


def test_a_resample_where_kappa_is_undefined_is_left_out_and_counted() -> None:
    # Only the last query holds relevant grades: a resample without it has no relevant
    # pair on either side, and binary kappa is 0/0 there.
    per_query = [([1, 2, 3], [2, 2, 3]), ([3, 1], [3, 2]), ([5, 4, 2], [4, 5, 2])]
    tables = np.array([confusion(a, b) for a, b in per_query], dtype=np.float64)
    found = pair_intervals(tables, np.array(GRADES) >= 4, resamples=400, seed=(9,))
    without_last = sum(int((chunk[:, 2] == 0).sum()) for chunk in query_draws(3, 400, (9,)))
    assert 0 < without_last < 400
    assert found["kappa_binary"].undefined == without_last
    assert found["kappa"].undefined == 0
    assert found["kappa_binary"].ci is not None
    assert not any(np.isnan(found["kappa_binary"].ci))


def test_run_order_intervals_are_tau_recomputed_on_resampled_queries() -> None:
    rng = np.random.default_rng(16)
    human = rng.normal(size=(15, 7)) + np.linspace(0, 1, 7)
    judge = human + rng.normal(scale=0.7, size=human.shape)
    human[3, 2] = np.nan  # a query without a value for one run
    tau, top = run_order_intervals(
        human, judge, 4, lower_is_better=False, resamples=200, seed=(3, 1)
    ) or pytest.fail("no interval")
    taus, tops = [], []
    for chunk in query_draws(15, 200, (3, 1)):
        for counts in chunk:
            rows = np.repeat(np.arange(15), counts.astype(int))
            h = np.nanmean(human[rows], axis=0)
            j = np.nanmean(judge[rows], axis=0)
            taus.append(sp_tau(h, j))
            best = np.argsort(-h, kind="stable")[:4]
            tops.append(sp_tau(h[best], j[best]))
    assert tau.ci == pytest.approx(tuple(np.percentile(taus, [2.5, 97.5])))
    assert top.ci == pytest.approx(tuple(np.percentile(tops, [2.5, 97.5])))
    assert tau.undefined == top.undefined == 0


# -- coverage: how often the interval holds a known value --------------------------------

BASE = np.array([0.3, 0.25, 0.2, 0.15, 0.1])  # how often each grade comes up


def joint(copy: float) -> NDArray[np.float64]:
    """Joint law of (human, judge): the judge copies the grade with chance ``copy``,
    else grades at random with the grades' own shares."""
    result: NDArray[np.float64] = copy * np.diag(BASE) + (1 - copy) * np.outer(BASE, BASE)
    return result


def test_kappa_and_alpha_intervals_cover_the_true_value_about_95_percent() -> None:
    """200 simulated projects of 50 queries and 20 pairs each; how well the judge copies
    differs from query to query (Beta(4, 2)), so the queries' pairs hang together, as
    real ones do. The true figures are those of the law averaged over queries."""
    rng = np.random.default_rng(2026)
    relevant = np.array(GRADES) >= 4
    # The law of a pair on a random query: the mean of joint() over Beta(4, 2), i.e.
    # joint(2/3); counts scaled up so alpha's small-sample factor (n - 1) / n is 1.
    truth = {k: float(v[0]) for k, v in table_figures(1e12 * joint(2 / 3)[None], relevant).items()}
    hits = dict.fromkeys(truth, 0)
    runs = 200
    for s in range(runs):
        copies = rng.beta(4, 2, size=50)
        tables = np.stack([rng.multinomial(20, joint(c).ravel()).reshape(5, 5) for c in copies])
        found = pair_intervals(tables.astype(np.float64), relevant, resamples=400, seed=s)
        for name, value in truth.items():
            ci = found[name].ci
            assert ci is not None
            hits[name] += ci[0] <= value <= ci[1]
    for name, count in hits.items():
        assert 0.90 <= count / runs <= 0.99, (name, count)


def simulated_orders(
    rng: np.random.Generator, mu: NDArray[np.float64], nu: NDArray[np.float64], noise: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """50 queries' metric values of the runs on human and judge labels: the runs' true
    means (mu, nu), a query's difficulty shared by every run, and noise."""
    difficulty = rng.normal(0, 0.15, size=(50, 1))
    human = mu + difficulty + rng.normal(0, noise, size=(50, mu.size))
    judge = nu + difficulty + rng.normal(0, noise, size=(50, mu.size))
    return human, judge


def tau_coverage(spread: float, noise: float) -> float:
    """Share of 200 simulated projects (12 runs, 50 queries) whose tau interval holds
    the tau of the runs' true means."""
    mu = np.linspace(0.3, 0.6, 12)
    nu = mu + np.random.default_rng(3).normal(0, spread, size=12)
    truth = sp_tau(mu, nu)
    rng = np.random.default_rng(2027)
    hits = 0
    for s in range(200):
        human, judge = simulated_orders(rng, mu, nu, noise)
        found = run_order_intervals(human, judge, 5, lower_is_better=False, resamples=400, seed=s)
        assert found is not None and found[0].ci is not None
        hits += found[0].ci[0] <= truth <= found[0].ci[1]
    return hits / 200


def test_the_tau_interval_covers_the_true_tau_when_runs_stand_apart() -> None:
    # Runs 0.027 apart in truth, per-query noise 0.1 over 50 queries: the true tau is
    # 0.88 and the mean's error (0.014) is small beside the gaps.
    assert 0.90 <= tau_coverage(0.02, 0.1) <= 0.99


def test_the_tau_interval_misses_when_runs_are_close_for_the_noise() -> None:
    # The same runs with three times the noise: each resample's order, like the
    # sample's, flips close runs, so tau is pulled towards 0 and the interval sits
    # below the true tau. docs/guide/judge.md says so; this holds it true.
    assert tau_coverage(0.02, 0.3) < 0.5


# -- end to end: a project -------------------------------------------------------------

QUERIES = [f"q{i:02d}" for i in range(12)]
PER_QUERY = 10  # passages per query, every one graded by alice and pooled by every run
RUNS = ["bm25", "dense", "hybrid", "rerank", "splade", "tfidf"]
BOB_QUERIES = QUERIES[:4]  # bob grades these queries too: alice and bob are compared there


class Labels:
    """The project's grades, drawn once with a fixed seed: alice grades every pair, bob
    the first four queries' pairs, model m1 every pair and m2 four pairs in five (m2
    leans high)."""

    def __init__(self) -> None:
        rng = np.random.default_rng(28)
        self.pairs: list[Pair] = [(q, f"{q}-p{i}") for q in QUERIES for i in range(PER_QUERY)]
        latent = {p: int(rng.integers(1, 6)) for p in self.pairs}

        def noisy(spread: int, lean: int = 0) -> dict[Pair, int]:
            return {
                p: int(np.clip(g + lean + rng.integers(-spread, spread + 1), 1, 5))
                for p, g in latent.items()
            }

        self.alice = dict(latent)
        self.bob = {p: g for p, g in noisy(1).items() if p[0] in BOB_QUERIES}
        self.m1 = noisy(1)
        self.m2 = {p: g for p, g in noisy(1, lean=1).items() if rng.random() < 0.8}
        # The resolved grade of two annotators is the lower median: the smaller one.
        self.humans = {p: min(g, self.bob.get(p, g)) for p, g in self.alice.items()}
        # The judge of two models: the lower median of the models that graded the pair.
        self.ensemble = {p: min(g, self.m2.get(p, g)) for p, g in self.m1.items()}
        # Each run ranks a query's passages by their grade blurred by noise of its own
        # size: the runs differ in quality, as real ones do, and their order means something.
        self.orders = {
            run: {
                q: sorted(
                    (p for at, p in self.pairs if at == q),
                    key=lambda p: -latent[q, p] - rng.normal(0, 0.6 * (r + 1)),
                )
                for q in QUERIES
            }
            for r, run in enumerate(RUNS)
        }


def build_project(folder: Path, cli: Cli, labels: Labels) -> Path:
    (folder / "q.tsv").write_text("".join(f"{q}\ttext of {q}\n" for q in QUERIES))
    (folder / "p.tsv").write_text("".join(f"{p}\ttext of {p}\n" for _, p in labels.pairs))
    runs: list[str | Path] = []
    for run, by_query in labels.orders.items():
        path = folder / f"{run}.run"
        path.write_text(
            "".join(
                f"{q} Q0 {p} {rank} {100 - rank} {run}\n"
                for q, order in by_query.items()
                for rank, p in enumerate(order, 1)
            )
        )
        runs += ["--run", f"{run}={path}"]
    for who, grades in (("alice", labels.alice), ("bob", labels.bob)):
        (folder / f"{who}.qrels").write_text(
            "".join(f"{q} 0 {p} {g}\n" for (q, p), g in grades.items())
        )
    db = folder / "project.db"
    assert cli("init", db)[0] == 0
    identity = "1:1,2:2,3:3,4:4,5:5"
    code, _, err = cli(
        "import", db, "--queries", folder / "q.tsv", "--passages", folder / "p.tsv", *runs
    )
    assert code == 0, err
    for who in ("alice", "bob"):
        code, _, err = cli(
            "import", db, "--qrels", folder / f"{who}.qrels", "--annotator", who,
            "--grade-map", identity,
        )  # fmt: skip
        assert code == 0, err
    with Project.open(db) as project, project.write():
        for model, grades in (("m1", labels.m1), ("m2", labels.m2)):
            project.conn.executemany(
                "INSERT INTO suggestion (query_id, passage_id, model, grade, created_at)"
                " VALUES ((SELECT id FROM query WHERE ext_id = ?),"
                " (SELECT id FROM passage WHERE ext_id = ?), ?, ?, 'now')",
                [(q, p, model, g) for (q, p), g in grades.items()],
            )
    return db


@pytest.fixture(scope="module")
def labels() -> Labels:
    return Labels()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, labels: Labels) -> Path:
    from raglabel.cli.main import main

    def cli(*args: str | Path) -> tuple[int, str, str]:
        # Module-scoped, so without capsys: what the imports print is not looked at.
        return main([str(a) for a in args]), "", ""

    return build_project(tmp_path_factory.mktemp("agree-figures"), cli, labels)


def agree_json(cli: Cli, db: Path, *extra: str) -> dict[str, Any]:
    code, out, err = cli("agree", db, "--format", "json", *extra)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def shared(a: dict[Pair, int], b: dict[Pair, int]) -> tuple[list[int], list[int]]:
    both = sorted(set(a) & set(b))
    return [a[p] for p in both], [b[p] for p in both]


def test_every_pairs_figures_equal_the_independent_ones(
    project: Path, labels: Labels, cli: Cli
) -> None:
    data = agree_json(cli, project, "--metrics", "none")
    assert data["relevance_threshold"] == 4 and data["resamples"] == 1000 and data["seed"] == 42
    entries = {(p["a"], p["b"]): p for p in data["pairs"]}
    raters = {
        ("alice", "bob"): (labels.alice, labels.bob),
        ("m1", "humans"): (labels.m1, labels.humans),
        ("m2", "humans"): (labels.m2, labels.humans),
        ("judge (median of m1, m2)", "humans"): (labels.ensemble, labels.humans),
    }
    assert set(entries) == set(raters)
    for key, (ga, gb) in raters.items():
        a, b = shared(ga, gb)
        entry = entries[key]
        assert entry["n"] == len(a)
        assert entry["queries"] == len({q for q, _ in set(ga) & set(gb)})
        assert entry["kappa"] == pytest.approx(sk_kappa(a, b, "quadratic"))
        assert entry["kappa_unweighted"] == pytest.approx(sk_kappa(a, b, None))
        assert entry["kappa_binary"] == pytest.approx(sk_binary(a, b, 4))
        assert entry["alpha"] == pytest.approx(kr_alpha(a, b))
        gaps = np.subtract(a, b)
        assert entry["bias"] == pytest.approx(gaps.mean())
        assert entry["exact"] == pytest.approx(np.mean(gaps == 0))
        assert entry["within_one"] == pytest.approx(np.mean(np.abs(gaps) <= 1))
        table = np.zeros((5, 5), dtype=int)
        np.add.at(table, (np.array(a) - 1, np.array(b) - 1), 1)
        assert entry["confusion"] == table.tolist()  # rows: a's grades
        for name, ci in entry["ci"].items():
            assert ci[0] <= ci[1], (key, name)
        assert set(entry["ci_undefined"]) == set(entry["ci"])
    # The judge's confusion of old is the ensemble's, humans in rows.
    ensemble = entries["judge (median of m1, m2)", "humans"]
    assert data["confusion"] == np.array(ensemble["confusion"]).T.tolist()


def test_the_relevance_threshold_sets_binary_kappa(project: Path, labels: Labels, cli: Cli) -> None:
    data = agree_json(cli, project, "--metrics", "none", "--relevance-threshold", "3")
    m1 = next(p for p in data["pairs"] if p["a"] == "m1")
    assert m1["kappa_binary"] == pytest.approx(sk_binary(*shared(labels.m1, labels.humans), 3))
    assert data["relevance_threshold"] == 3


def test_tau_over_all_and_over_the_best_runs_equals_scipys(project: Path, cli: Cli) -> None:
    data = agree_json(cli, project, "-k", "5", "--top-runs", "4")
    assert {r["metric"] for r in data["runs"]} == {"ra_nwg@5", "ndcg@5", "precision_4plus@5"}
    for entry in data["runs"]:
        runs = sorted(entry["human"])
        assert runs == RUNS
        human = np.array([entry["human"][r] for r in runs])
        judge = np.array([entry["judge"][r] for r in runs])
        assert entry["tau"] == pytest.approx(sp_tau(human, judge))
        assert entry["top_runs"] == 4
        best = sorted(runs, key=lambda r: (-entry["human"][r], r))[:4]
        top = sp_tau([entry["human"][r] for r in best], [entry["judge"][r] for r in best])
        assert entry["tau_top"] == pytest.approx(top)
        assert entry["tau_ci"][0] <= entry["tau_ci"][1]
        assert entry["tau_top_ci"][0] <= entry["tau_top_ci"][1]
        assert set(entry["ci_undefined"]) == {"tau", "tau_top"}
    # More best runs asked for than there are: all of them, and tau_top is tau.
    data = agree_json(cli, project, "-k", "5", "--metrics", "ndcg@5", "--top-runs", "50")
    [entry] = data["runs"]
    assert entry["top_runs"] == len(RUNS)
    assert entry["tau_top"] == pytest.approx(entry["tau"])


def test_intervals_follow_the_seed_and_the_resamples(project: Path, cli: Cli) -> None:
    first = agree_json(cli, project, "--metrics", "ndcg@k", "--resamples", "200")
    again = agree_json(cli, project, "--metrics", "ndcg@k", "--resamples", "200")
    other = agree_json(cli, project, "--metrics", "ndcg@k", "--resamples", "200", "--seed", "7")
    assert first == again
    assert [p["ci"] for p in first["pairs"]] != [p["ci"] for p in other["pairs"]]
    assert first["runs"][0]["tau_ci"] is not None
    # Figures do not move with the seed; only their intervals do.
    assert [p["kappa"] for p in first["pairs"]] == [p["kappa"] for p in other["pairs"]]
    for bad in (["--resamples", "0"], ["--top-runs", "2"], ["--seed", "-1"]):
        code, _, err = cli("agree", project, *bad)
        assert code == 2 and bad[0] in err, err


def test_text_and_markdown_show_the_figures_intervals_and_orders(project: Path, cli: Cli) -> None:
    code, out, err = cli("agree", project, "-k", "5", "--metrics", "ndcg@5", "--top-runs", "3")
    assert code == 0, err
    data = agree_json(cli, project, "-k", "5", "--metrics", "ndcg@5", "--top-runs", "3")
    m1 = next(p for p in data["pairs"] if p["a"] == "m1")
    row = next(line.split() for line in out.splitlines() if line.startswith("m1 ") and "[" in line)
    ci = m1["ci"]
    assert row[:5] == [
        "m1",
        "humans",
        "12",
        f"{m1['kappa_unweighted']:.3f}",
        f"{m1['kappa_binary']:.3f}",
    ]
    assert " ".join(row[5:]) == " ".join(
        f"[{ci[f][0]:.3f}, {ci[f][1]:.3f}]"
        for f in ("kappa_unweighted", "kappa_binary", "kappa", "alpha")
    )
    assert "kappa(b): binary, relevant at grade >= 4" in out
    assert "percentile bootstrap over queries (1000 resamples, seed 42)" in out
    for model in ("m1", "m2", "judge (median of m1, m2)"):
        assert f"confusion: humans (rows) vs {model} (columns)" in out
    [entry] = data["runs"]
    assert f"Kendall tau of the runs' order: {entry['tau']:.3f} [" in out
    assert f"Kendall tau over the 3 best runs on human grades: {entry['tau_top']:.3f} [" in out
    human_order = sorted(RUNS, key=lambda r: (-entry["human"][r], r))
    judge_order = sorted(RUNS, key=lambda r: (-entry["judge"][r], r))
    assert "  order on human grades: " + " > ".join(human_order) in out
    assert "  order on judge grades: " + " > ".join(judge_order) in out
    code, markdown, err = cli(
        "agree",
        project,
        "-k",
        "5",
        "--metrics",
        "ndcg@5",
        "--top-runs",
        "3",
        "--format",
        "markdown",
    )
    assert code == 0, err
    assert markdown == "```text\n" + out + "```\n"


# -- the page ----------------------------------------------------------------------------

PAGE = "guide/judge.md"
TEST = f"tests/unit/{Path(__file__).name}"


def rounded(value: Any) -> Any:
    """``value`` with every float rounded to 3 places, as the page shows them."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def test_the_pages_agree_examples_are_what_agree_prints(project: Path, cli: Cli) -> None:
    """The page's project is this file's: its commands run on it as written, and print
    what the page shows (its text excerpts whole, its JSON entries to 3 places)."""
    [block] = examples(PAGE, TEST, "bash")
    printed = []
    for line in block.splitlines():
        words = shlex.split(line)
        assert words[:3] == ["raglabel", "agree", "project.db"], line
        code, out, err = cli("agree", project, *words[3:])
        assert code == 0, err
        printed.append(out)
    text, data = printed[0], json.loads(printed[1])
    for excerpt in examples(PAGE, TEST, "text"):
        assert excerpt in text, excerpt
    pair, runs = (json.loads(b) for b in examples(PAGE, TEST, "json"))
    entry = next(p for p in data["pairs"] if (p["a"], p["b"]) == (pair["a"], pair["b"]))
    assert rounded(entry) == pair
    assert rounded(data["runs"]) == [runs]


# -- public labels: LLMJudge's people and two of its submissions --------------------------

LLMJUDGE = Path(__file__).parents[1] / "data" / "llmjudge"
TREC_GRADES = {0: 2, 1: 3, 2: 4, 3: 5}  # the project's default grade map


def trec_labels(name: str) -> dict[Pair, int]:
    out: dict[Pair, int] = {}
    for line in (LLMJUDGE / f"{name}.qrels").read_text(encoding="utf-8").splitlines():
        qid, _, docid, label = line.split()
        out[qid, docid] = int(label)
    return out


def test_on_llmjudges_labels_each_figure_equals_the_independent_one(
    tmp_path: Path, cli: Cli
) -> None:
    """The people's labels come in as qrels and the two submissions as those models'
    suggestions (``import --judgments``), all through the default map, TREC's; the
    expected figures are computed straight from the public files."""
    db = tmp_path / "llmjudge.db"
    assert cli("init", db)[0] == 0
    models = {name: trec_labels(name) for name in ("gpt4o", "umbrela1")}
    code, _, err = cli(
        "import", db, "--qrels", LLMJUDGE / "humans.qrels", "--annotator", "nist",
        *[f"--judgments={model}={LLMJUDGE / model}.qrels" for model in models],
    )  # fmt: skip
    assert code == 0, err
    data = agree_json(cli, db, "--metrics", "none", "--resamples", "300")
    people = trec_labels("humans")
    pairs = sorted(people)
    assert len(pairs) == 240
    entries = {p["a"]: p for p in data["pairs"]}
    for model, found in models.items():
        entry = entries[model]
        judge = [TREC_GRADES[found[p]] for p in pairs]
        human = [TREC_GRADES[people[p]] for p in pairs]
        assert entry["n"] == 240 and entry["queries"] == 10
        assert entry["kappa"] == pytest.approx(sk_kappa(judge, human, "quadratic"))
        assert entry["kappa_unweighted"] == pytest.approx(sk_kappa(judge, human, None))
        assert entry["alpha"] == pytest.approx(kr_alpha(judge, human))
        # Grade 4 and up is TREC label 2 and up: the relevance TREC DL counts.
        raw = cohen_kappa_score(
            [int(found[p] >= 2) for p in pairs], [int(people[p] >= 2) for p in pairs]
        )
        assert entry["kappa_binary"] == pytest.approx(raw)
        for ci in entry["ci"].values():
            assert ci is not None and ci[0] <= ci[1]


def test_a_figure_undefined_in_some_resamples_is_counted_and_said(tmp_path: Path, cli: Cli) -> None:
    """Three queries, and only q02 holds a grade of 4 or more: a resample without q02
    has no relevant pair on either side, where binary kappa is 0/0."""
    alice = {"q00": [1, 2, 3], "q01": [2, 1], "q02": [5, 4, 2]}
    model = {"q00": [2, 2, 3], "q01": [2, 2], "q02": [4, 5, 2]}
    small = Labels()
    small.pairs = [(q, f"{q}-p{i}") for q, grades in alice.items() for i in range(len(grades))]
    small.alice = {(q, f"{q}-p{i}"): g for q, grades in alice.items() for i, g in enumerate(grades)}
    small.bob = {("q00", "q00-p0"): 1}
    small.m1 = {(q, f"{q}-p{i}"): g for q, grades in model.items() for i, g in enumerate(grades)}
    small.m2 = {}
    small.orders = {
        run: {q: [p for at, p in small.pairs if at == q] for q in alice} for run in RUNS
    }
    db = build_project(tmp_path, cli, small)
    data = agree_json(cli, db, "--metrics", "none")
    entry = next(p for p in data["pairs"] if p["a"] == "m1")
    undefined = entry["ci_undefined"]["kappa_binary"]
    assert 0 < undefined < 1000
    assert entry["ci_undefined"]["kappa"] == 0
    assert entry["ci"]["kappa_binary"] is not None
    code, out, err = cli("agree", db, "--metrics", "none")
    assert code == 0, err
    assert (
        f"(m1 vs humans: kappa(b) was undefined in {undefined} of 1000 resamples, left out of"
        " its interval)"
    ) in out


def test_the_text_says_when_tau_lies_outside_its_interval_and_shows_ties() -> None:
    from raglabel.cli.agree_cmd import as_text
    from raglabel.formats.agreement_report import AgreementReport, RunOrderAgreement

    runs = RunOrderAgreement(
        metric="harm@5",  # lower is better: the best run comes first with the lowest
        queries=9,
        human={"a": 0.1, "b": 0.3, "c": 0.3, "d": None},
        judge={"a": 0.2, "b": 0.1, "c": 0.4, "d": 0.5},
        tau=-0.2,
        tau_ci=(0.1, 0.9),
        top_runs=2,
        tau_top=None,
        tau_top_ci=None,
        ci_undefined={"tau": 3},
    )
    report = AgreementReport(
        annotators=[], models=["m"], judge="m", human_pairs=0, judged_pairs=0,
        shared_pairs=0, alpha_annotators=None, alpha_with_judge=None, pairs=[],
        confusion=None, accepted=0, offered=0, accepted_share=None, queries=[],
        accepted_left_out=0, relevance_threshold=4, resamples=500, seed=1, runs=[runs],
    )  # fmt: skip
    text = as_text(report)
    assert "Kendall tau of the runs' order: -0.200 [0.100, 0.900]" in text
    assert "Kendall tau over the 2 best runs on human grades: NA (fewer than 3 runs" in text
    assert "  order on human grades: a > b = c (no mean: d)" in text
    assert "  order on judge grades: b > a > c > d" in text
    assert "(tau was undefined in 3 of 500 resamples, left out of its interval)" in text
    assert "(tau lies outside its interval, as it can when runs are close" in text
    assert "tau over the best runs lies outside" not in text  # it has no interval
