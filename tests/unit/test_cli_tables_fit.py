"""Tables that fit the console (issue 26 §5): at 80 columns, six runs with intervals,
their comparisons and per-query tables print no line wider than the console and every
value whole, split into blocks led by the row names, or turned a run a row."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from raglabel.cli import plain_table

if TYPE_CHECKING:
    from cli_helpers import Cli

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
RULE = re.compile(r" \u2501+ $")


def six_runs(folder: Path) -> list[str]:
    """The demo's four run files and two more built from them (the order of bm25's
    passages reversed; dense's top two swapped), as ``name=path`` arguments."""
    arguments = [f"{path.stem}={path}" for path in sorted((DEMO / "runs").glob("*.run"))]
    assert len(arguments) == 4
    by_query: dict[str, list[list[str]]] = {}
    for line in (DEMO / "runs" / "bm25.run").read_text().splitlines():
        by_query.setdefault(line.split()[0], []).append(line.split())
    reversed_lines = []
    for rows in by_query.values():
        for rank, row in enumerate(reversed(rows), 1):
            reversed_lines.append(f"{row[0]} Q0 {row[2]} {rank} {100 - rank} bm25_reversed")
    (folder / "bm25_reversed.run").write_text("\n".join(reversed_lines) + "\n")
    swapped = []
    for line in (DEMO / "runs" / "dense.run").read_text().splitlines():
        qid, q0, doc, rank, _score, _ = line.split()
        new_rank = {"1": "2", "2": "1"}.get(rank, rank)
        swapped.append(f"{qid} {q0} {doc} {new_rank} {-int(new_rank)} dense_swapped")
    (folder / "dense_swapped.run").write_text("\n".join(swapped) + "\n")
    arguments += [f"{name}={folder / name}.run" for name in ("bm25_reversed", "dense_swapped")]
    return [part for argument in arguments for part in ("--run", argument)]


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Output to a terminal 80 columns wide, from a folder of the test's own."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(plain_table, "_is_terminal", lambda: True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_console_width_is_a_terminals_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "93")
    monkeypatch.setattr(plain_table, "_is_terminal", lambda: True)
    assert plain_table.console_width() == 93
    # A pipe or a file wraps nothing: its tables are whole, whatever COLUMNS a parent
    # left (readline sets it for every child of a process that loads it).
    monkeypatch.setattr(plain_table, "_is_terminal", lambda: False)
    assert plain_table.console_width() is None


#: The tables' layout is under test here, not the figures: a tenth of eval's default draws
#: (10,000 permutations, 1,000 resamples) gives every value at the same width and
#: decimals, and the comparisons' ~500 paired tests in a fraction of the time.
FEWER_DRAWS = ("--permutations", "1000", "--resamples", "100")


def eval_both(cli: Cli, folder: Path, *options: str) -> tuple[str, dict[str, object]]:
    """The table eval prints on an 80-column console, and the same report as JSON."""
    args = ("eval", "--qrels", str(DEMO / "qrels.txt"), *six_runs(folder), *FEWER_DRAWS, *options)
    code, out, err = cli(*args)
    assert code == 0, err
    code, text, err = cli(*args, "--format", "json")
    assert code == 0, err
    report: dict[str, object] = json.loads(text)
    return out, report


def wide_lines(text: str, width: int = 80) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


def test_six_runs_with_intervals_fit_80_columns_each_value_whole(cli: Cli, console: Path) -> None:
    # Drawn 165 wide before: the terminal wrapped "0.3667 [0." over "250, 0.483]".
    out, report = eval_both(cli, console, "--ci", "--metrics", "ndcg@5,harm@5")
    assert wide_lines(out) == []
    runs = report["runs"]
    assert isinstance(runs, dict) and len(runs) == 6
    lines = out.splitlines()
    for run, result in runs.items():
        for metric, mean in result["mean"].items():
            low, high = result["ci"][metric]
            cell = f"{mean:.4f} [{low:.3f}, {high:.3f}]"
            # Every value whole on one line, on its run's row (the table is turned).
            assert any(line.split()[:1] == [run] and cell in line for line in lines), cell
    assert "(too wide for 80 columns with a run a column: printed a run a row)" in out


def test_many_metrics_split_into_blocks_each_led_by_the_metric(cli: Cli, console: Path) -> None:
    out, report = eval_both(cli, console, "--ci", "-k", "3,5")
    assert wide_lines(out) == []
    runs = report["runs"]
    assert isinstance(runs, dict)
    metrics = list(next(iter(runs.values()))["mean"])
    assert re.search(r"\(too wide for 80 columns: printed in \d+ parts, each led by the", out)
    lines = out.splitlines()
    for run, result in runs.items():
        # The run heads one block, and its every value is whole on its metric's row.
        assert any(line.split() == ["metric", run] for line in lines), run
        for metric in metrics:
            low, high = result["ci"][metric]
            cell = f"{result['mean'][metric]:.4f} [{low:.3f}, {high:.3f}]"
            assert any(line.split()[:1] == [metric] and cell in line for line in lines)


def test_comparisons_and_per_query_tables_fit_80_columns(cli: Cli, console: Path) -> None:
    out, report = eval_both(cli, console, "--ci", "--compare", "--per-query", "-k", "3,5")
    assert wide_lines(out) == []
    lines = out.splitlines()
    compare = report["compare"]
    assert isinstance(compare, list) and len(compare) > 30
    led_by: dict[tuple[str, ...], list[str]] = {}
    for line in lines:
        led_by.setdefault(tuple(line.split()[:3]), []).append(line)
    for test in compare:
        names = (test["metric"], test["baseline"], test["run"])
        ci = f"[{test['ci'][0]:.4f}, {test['ci'][1]:.4f}]"
        # Each block of the comparisons is led by the test's metric, baseline and run.
        rows = led_by.get(names, [])
        assert len(rows) >= 2 and any(ci in row for row in rows), names
        assert any(f"{test['wins']}/{test['ties']}/{test['losses']}" in row for row in rows)
    runs = report["runs"]
    assert isinstance(runs, dict)
    heads = [lines[i - 1].split() for i, line in enumerate(lines) if RULE.match(line)]
    query_heads = [head for head in heads if head[0] == "query"]
    # Every run's per-query table is there, its metrics spread over blocks, none lost.
    assert len(query_heads) >= 2 * len(runs)
    metrics = list(next(iter(runs.values()))["mean"])
    shown = [name for head in query_heads for name in head[1:]]
    assert len(shown) == len(metrics) * len(runs)


def test_a_file_keeps_each_table_whole(cli: Cli, console: Path) -> None:
    # --output is no console: its tables are as wide as they need, never split.
    target = console / "out.txt"
    args = ("eval", "--qrels", str(DEMO / "qrels.txt"), *six_runs(console), "--ci")
    code, _, err = cli(*args, "--output", str(target))
    assert code == 0, err
    text = target.read_text()
    assert "too wide" not in text and "part 1 of" not in text
    head = next(line for line in text.splitlines() if line.split()[:1] == ["metric"])
    runs = ["bm25", "dense", "dense_rerank", "hybrid", "bm25_reversed", "dense_swapped"]
    assert head.split()[1:] == runs


def test_agree_names_are_whole_and_its_tables_fit_80_columns(
    cli: Cli, console: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_agree import HUMANS, JUDGE, build

    long_model = "gpt-4o-mini-2024-07-18-with-a-long-suffix"
    db = build(console, cli, {f"{long_model}-a": JUDGE, f"{long_model}-b": HUMANS})
    code, out, err = cli("agree", db.name, "-k", "3", "--metrics", "ndcg@3")
    assert code == 0, err
    assert wide_lines(out) == []
    lines = out.splitlines()
    # The judge, named for both its models, is wider than 80 alone: a row at a time,
    # each name whole (wrapped at its spaces), then the row's values.
    assert "(too wide for 80 columns as a table: each row as its names, then its values)" in out
    raters = [line for line in lines if line.startswith("rater a: ")]
    assert raters[1:3] == [f"rater a: {long_model}-a", f"rater a: {long_model}-b"]
    judge = lines.index(raters[3])
    assert lines[judge + 1].split() == [f"{long_model}-b)"]  # the rest of its name
    values = " ".join(lines[judge + 3 : judge + 5])
    assert re.fullmatch(
        r"\s+pairs 5   kappa\(q\) \d\.\d{3}   alpha \d\.\d{3}   bias a-b -?\d\.\d\d"
        r"   exact \d+%\s+within 1 \d+%",
        values,
    ), values

    # Without a console (a pipe, COLUMNS still set) nothing is split, and each name
    # column is as wide as its longest name: the run table's is 6 ("middle"), not 24.
    monkeypatch.setattr(plain_table, "_is_terminal", lambda: False)
    code, out, err = cli("agree", db.name, "-k", "3", "--metrics", "ndcg@3")
    assert code == 0 and "too wide" not in out, err
    lines = out.splitlines()
    assert "  run    humans judge" in lines
    head = next(line for line in lines if line.startswith("rater a"))
    judge = next(line for line in lines if line.startswith("judge (median"))
    judge_name = judge[: judge.index(") humans") + 1]
    assert head.index("rater b") == len(judge_name) + 1


def test_a_table_of_names_and_values_is_split_into_blocks_led_by_the_names() -> None:
    from raglabel.cli.agree_cmd import text_table

    headers = ("rater a", "rater b", "pairs", "kappa(q)", "alpha", "bias a-b", "exact")
    rows = [
        ["claude-3-5-sonnet-20241022-judge", "annotator-with-a-long-name", "30", "0.812"],
        ["a", "b", "6", "0.824"],
    ]
    rows = [
        [*row, *more]
        for row, more in zip(
            rows, [["0.790", "-0.12", "67%"], ["0.851", "-0.17", "50%"]], strict=True
        )
    ]
    lines = text_table(headers, rows, 80, keys=2)
    assert all(len(line) <= 80 for line in lines)
    assert lines[0] == (
        "(too wide for 80 columns: printed in 2 parts, each led by the rater a and rater"
    )
    blocks = [i for i, line in enumerate(lines) if line.startswith("(part ")]
    assert [lines[i] for i in blocks] == ["(part 1 of 2)", "(part 2 of 2)"]
    first, second = lines[blocks[0] + 1 : blocks[1]], lines[blocks[1] + 1 :]
    assert first[0].split() == ["rater", "a", "rater", "b", "pairs", "kappa(q)", "alpha"]
    assert second[0].split() == ["rater", "a", "rater", "b", "bias", "a-b", "exact"]
    for block in (first, second):
        # Each row led by both names, whole, and every column under its header.
        assert [line.split()[:2] for line in block[1:]] == [row[:2] for row in rows]
        assert len({len(line) for line in block}) == 1
    assert text_table(headers, rows, None, keys=2)[1].split() == rows[0]
