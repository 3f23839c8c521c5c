"""``report -o PATH`` names a file unless it names a folder: with --format markdown a
``.md`` path is the Markdown file (its charts in ``NAME-charts`` beside it), anything
else the report's folder; with html a path that names a folder is refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from raglabel.cli.main import main


@pytest.fixture
def inputs(tmp_path: Path) -> list[str]:
    qrels, run = tmp_path / "in" / "qrels", tmp_path / "in" / "run"
    qrels.parent.mkdir()
    qrels.write_text("".join(f"q{q} 0 d{d} {d % 4}\n" for q in (1, 2) for d in range(4)))
    run.write_text("".join(f"q{q} Q0 d{d} {d} {9 - d} t\n" for q in (1, 2) for d in range(5)))
    return ["report", "--qrels", str(qrels), "--run", f"bm25={run}", "--metrics", "ndcg@3"]


def _linked(markdown: Path) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown.read_text(encoding="utf-8"))


def test_a_md_path_is_the_markdown_file_with_its_charts_beside_it(
    tmp_path: Path, inputs: list[str]
) -> None:
    out = tmp_path / "r.md"
    assert main([*inputs, "--format", "markdown", "-o", str(out)]) == 0
    assert out.is_file()
    charts = tmp_path / "r-charts"
    linked = _linked(out)
    assert linked and all(link.startswith("r-charts/") for link in linked)
    assert sorted(tmp_path / link for link in linked) == sorted(charts.glob("*.svg"))
    assert not list(tmp_path.glob(".raglabel-report-*"))
    # Written again, the same two paths.
    assert main([*inputs, "--format", "markdown", "-o", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "r-charts", "r.md"]


def test_any_other_markdown_path_is_the_folder(tmp_path: Path, inputs: list[str]) -> None:
    for given in (f"{tmp_path / 'pr'}/", str(tmp_path / "pr2")):
        assert main([*inputs, "--format", "markdown", "-o", given]) == 0
        folder = Path(given)
        assert (folder / "report.md").is_file()
        assert sorted(_linked(folder / "report.md")) == sorted(p.name for p in folder.glob("*.svg"))


def test_html_goes_to_the_file_named_and_a_folder_is_refused(
    tmp_path: Path, inputs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    assert main([*inputs, "-o", str(out)]) == 0
    assert out.is_file() and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    capsys.readouterr()
    folder = f"{tmp_path / 'site'}/"
    with pytest.raises(SystemExit) as stopped:
        main([*inputs, "-o", folder])
    assert stopped.value.code == 2
    assert "is a folder; give the HTML file's path" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()


def test_a_md_path_that_is_a_folder_is_refused(
    tmp_path: Path, inputs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r.md").mkdir()
    with pytest.raises(SystemExit) as stopped:
        main([*inputs, "--format", "markdown", "-o", str(tmp_path / "r.md")])
    assert stopped.value.code == 2
    assert "is a folder" in capsys.readouterr().err
    assert list((tmp_path / "r.md").iterdir()) == []
