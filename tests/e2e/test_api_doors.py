"""The Python API and the command line are two doors onto one evaluation
(``raglabel.analysis.entry``): dicts, pandas and polars frames give, byte for byte, the
JSON ``raglabel eval`` prints for the same rows written as files; the API imports no
CLI module, writes no file and reads no argv."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grimp
import polars as pl
import pytest

import raglabel
from raglabel.errors import RaglabelWarning

if TYPE_CHECKING:
    from cli_helpers import Cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"
RUNS = ("bm25", "dense", "hybrid")
GROUPS = ("set", "classic", "ranking", "trec", "all")

Table = dict[str, dict[str, Any]]


def _qrels() -> Table:
    out: Table = {}
    for line in (DEMO / "qrels.txt").read_text().splitlines():
        q, _, d, label = line.split()[:4]
        out.setdefault(q, {})[d] = int(label)
    return out


def _run(name: str) -> Table:
    out: Table = {}
    for line in (DEMO / "runs" / f"{name}.run").read_text().splitlines():
        q, _, d, _, score = line.split()[:5]
        out.setdefault(q, {})[d] = float(score)
    return out


def _write(tmp_path: Path, qrels: Table, runs: dict[str, Table]) -> tuple[Path, list[str]]:
    """The same rows as a qrels file and run files, in the dicts' order."""
    qrels_path = tmp_path / "labels.qrels"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    argv = ["--qrels", str(qrels_path)]
    for name, run in runs.items():
        path = tmp_path / f"{name}.run"
        lines = [
            f"{q} Q0 {d} {i} {s!r} t\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items(), 1)
        ]
        path.write_text("".join(lines))
        argv += ["--run", f"{name}={path}"]
    return qrels_path, argv


def _frames(module: str, qrels: Table, runs: dict[str, Table]) -> tuple[Any, dict[str, Any]]:
    rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    if module == "polars":
        make = lambda data, names: pl.DataFrame(data, schema=names, orient="row")  # noqa: E731
    else:
        pd = pytest.importorskip("pandas")
        make = lambda data, names: pd.DataFrame(data, columns=names)  # noqa: E731
    labels = make(rows, ["query_id", "doc_id", "relevance"])
    frames = {
        name: make(
            [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
            ["query_id", "doc_id", "score"],
        )
        for name, run in runs.items()
    }
    return labels, frames


@pytest.mark.parametrize("group", GROUPS)
def test_dicts_and_frames_give_the_eval_commands_json_byte_for_byte(
    cli: Cli, tmp_path: Path, group: str
) -> None:
    qrels = _qrels()
    runs = {name: _run(name) for name in RUNS}
    qrels_path, argv = _write(tmp_path, qrels, runs)
    options = {"metrics": group, "k": [5, 10], "na": "zero", "compare": True, "ci": True}
    flags = ["--metrics", group, "-k", "5,10", "--na", "zero", "--compare", "--ci"]
    code, out, err = cli("eval", *argv, *flags, "--per-query", "--format", "json")
    assert code == 0, err
    inputs: dict[str, tuple[Any, Any]] = {"dict": (qrels, runs)}
    inputs["polars DataFrame"] = _frames("polars", qrels, runs)
    inputs["pandas DataFrame"] = _frames("pandas", qrels, runs)
    for kind, (labels, given) in inputs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RaglabelWarning)
            report = raglabel.evaluate(labels, given, **options)  # type: ignore[arg-type]
        # Where the labels came from is the one field that differs, and it says so.
        expected = out.replace(json.dumps(str(qrels_path)), json.dumps(kind))
        assert report.to_json() == expected, kind
        assert json.loads(report.to_json())["config"]["labels"] == kind


def test_a_mix_of_a_qrels_file_and_run_dicts_gives_the_same_numbers(
    cli: Cli, tmp_path: Path
) -> None:
    qrels = _qrels()
    runs = {name: _run(name) for name in RUNS[:2]}
    qrels_path, argv = _write(tmp_path, qrels, runs)
    code, out, err = cli("eval", *argv, "--metrics", "all", "--per-query", "--format", "json")
    assert code == 0, err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RaglabelWarning)
        mixed = raglabel.evaluate(qrels_path, runs, metrics="all")
    assert mixed.to_json() == out


def test_no_api_module_imports_the_cli_nor_the_cli_the_api() -> None:
    # Annotation-only imports count too: the two doors know nothing of each other.
    graph = grimp.build_graph("raglabel", exclude_type_checking_imports=False, cache_dir=None)
    assert "raglabel.api.evaluate" in graph.modules
    assert graph.find_shortest_chains(importer="raglabel.api", imported="raglabel.cli") == set()
    # The command reads __version__ from the root package, whose facade names the API
    # for type checkers only; no CLI module imports an API module itself.
    cli = sorted(m for m in graph.modules if m.startswith("raglabel.cli"))
    for module in cli:
        imported = graph.find_modules_directly_imported_by(module)
        assert not any(m.startswith("raglabel.api") for m in imported), module
    # The cycle the layer test used to see: raglabel -> api.evaluate -> cli.main.
    assert not graph.chain_exists(importer="raglabel.api.evaluate", imported="raglabel.cli.main")


def test_the_contract_refuses_the_api_calling_the_cli(tmp_path: Path) -> None:
    # api and cli are one layer of siblings: an import from one to the other breaks it.
    shutil.copytree(
        ROOT / "raglabel", tmp_path / "raglabel", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    warn = tmp_path / "raglabel" / "api" / "warn.py"
    warn.write_text(warn.read_text() + "\nimport raglabel.cli.main  # noqa\n")
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert tool is not None, "lint-imports is not installed: pip install -e '.[test]'"
    result = subprocess.run(
        [tool, "--no-cache", "--config", str(tmp_path / "pyproject.toml")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "raglabel.api.warn -> raglabel.cli.main" in result.stdout


def test_evaluate_writes_no_file_parses_no_argv_and_leaks_nothing(tmp_path: Path) -> None:
    code = """
import sys, tempfile, warnings
warnings.simplefilter("error", ResourceWarning)
def refuse(*args, **kwargs):
    raise AssertionError("a temporary file or folder was made")
tempfile.mkdtemp = tempfile.mkstemp = tempfile.NamedTemporaryFile = refuse
tempfile.TemporaryDirectory = refuse
import raglabel
qrels = {"q1": {"d1": 3, "d2": 0}, "q2": {"d3": 2}}
runs = {"a": {"q1": {"d1": 1.0, "d2": 0.5}, "q2": {"d3": 0.1}},
        "b": {"q1": {"d2": 1.0, "d1": 0.5}, "q2": {"d9": 0.1}}}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", raglabel.RaglabelWarning)
    report = raglabel.evaluate(qrels, runs, metrics="ndcg@10,mrr")
    page = report.to_html()
assert page.startswith("<!DOCTYPE html>")
print(sorted(m for m in sys.modules if m.startswith("raglabel.cli") or m == "argparse"))
"""
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert done.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_keyword_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'judgedonly'"):
        raglabel.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, judgedonly=True)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("qrels", "run", "message"),
    [
        (
            {"q": {"a": 3}},
            {"q": {"a": float("nan")}},
            r"run 'run': score nan of \(q, a\) is not a finite",
        ),
        (
            {"q": {"a": 3}},
            {"r": {"q": {"a": "high"}}},
            r"run 'r': score 'high' of \(q, a\) is not a number",
        ),
        (
            {"q": {"a": True}},
            {"q": {"a": 1.0}},
            r"qrels dict: relevance True of \(q, a\) is not an integer",
        ),
        (
            {"q": {"a": 7}},
            {"q": {"a": 1.0}},
            r"qrels dict: passage 'a' of query 'q': relevance 7 is not covered",
        ),
        (
            {"q": {"a\tb": 3}},
            {"q": {"a": 1.0}},
            r"qrels dict: doc id 'a\\tb' is empty or holds white space",
        ),
        ({"q": {"": 3}}, {"q": {"a": 1.0}}, "qrels dict: doc id '' is empty"),
        ({}, {"q": {"a": 1.0}}, "qrels dict: has no judgments"),
        ({"q": {"a\x00b": 3}}, {"q": {"a": 1.0}}, "qrels dict: a doc id holds a NUL character"),
        ({"q": {"a" * 1025: 3}}, {"q": {"a": 1.0}}, "is 1025 characters long; an id may be at"),
        ({"q": {"a": 3}}, {"q": {}}, "run 'run': has no entries"),
        ({"q": {"a": 3}}, [1, 2], "run 'run': expected"),
    ],
)
def test_a_bad_table_is_a_value_error_naming_the_table_and_the_row(
    qrels: object, run: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        raglabel.evaluate(qrels, run)


def test_a_pair_judged_twice_in_a_frame_is_refused() -> None:
    labels = pl.DataFrame({"qid": ["q", "q"], "docid": ["a", "a"], "grade": [1, 2]})
    with pytest.raises(ValueError, match="passage 'a' of query 'q' is judged twice"):
        raglabel.evaluate(labels, {"q": {"a": 1.0}})
    nulls = pl.DataFrame({"qid": ["q", None], "docid": ["a", "b"], "grade": [3, 4]})
    with pytest.raises(ValueError, match="column 'qid' has 1 missing value"):
        raglabel.evaluate(nulls, {"q": {"a": 1.0}})


def test_the_report_has_a_short_repr_and_an_html_table_for_notebooks() -> None:
    # Binary labels under the default map: AP is NA (no grade reaches the threshold).
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}}
    runs = {"a": {"q1": {"d1": 1.0}, "q2": {"d3": 0.1}}, "b<i>": {"q1": {"d2": 1.0}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RaglabelWarning)
        report = raglabel.evaluate(qrels, runs, metrics="ndcg@10,ap")
    text = repr(report)
    assert "\n" not in text and len(text) < 200
    assert text.startswith("<raglabel.Report: 2 runs a, b<i>, metrics ndcg@10, ap, 2 queries")
    table = report._repr_html_()
    assert table.startswith("<table>") and "<th>b&lt;i&gt;</th>" in table
    assert "<td>1.0000</td>" in table and "<td>NA</td>" in table


def test_tied_scores_in_any_order_rank_as_the_files_do(cli: Cli, tmp_path: Path) -> None:
    # Scores equal as trec_eval's 32-bit floats (1.0 and 1.0000000001, 0.0 and -0.0),
    # given in a random order: ties go by passage id, as for the same rows in a file.
    rng = random.Random(5)
    qrels = {
        f"q{q}": {f"d{i}": rng.choice([0, 1, 2, 3]) for i in range(0, 40, 3)} for q in range(20)
    }
    run: Table = {}
    for q in range(20):
        scores = [rng.choice([1.0, 1.0000000001, 0.5, 0.0, -0.0, -2.5]) for _ in range(40)]
        items = [(f"d{i}", s) for i, s in enumerate(scores)]
        rng.shuffle(items)
        run[f"q{q}"] = dict(items)
    qrels_path, argv = _write(tmp_path, qrels, {"r": run})
    code, out, err = cli("eval", *argv, "--metrics", "all", "--per-query", "--format", "json")
    assert code == 0, err
    frame = pl.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        schema=["qid", "docid", "score"],
        orient="row",
    )
    for given in ({"r": run}, {"r": frame}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RaglabelWarning)
            report = raglabel.evaluate(qrels, given, metrics="all")
        assert report.to_json() == out.replace(json.dumps(str(qrels_path)), json.dumps("dict"))
