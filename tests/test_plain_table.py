"""The plain table drawing is rich's, character for character, or it steps aside; and
tables are laid out so that a value never wraps and no two headers read alike."""

from __future__ import annotations

import io
import re
import string
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from raglabel.cli.plain_table import Column, Table, cut_names, draw, fit
from raglabel.cli.render import _drawn

if TYPE_CHECKING:
    from cli_helpers import Cli

# Printable ASCII without what rich reads as markup, emoji codes or escapes.
PLAIN = st.text(
    alphabet=string.ascii_letters + string.digits + " .,;!?()=<>+*&%$'\"|~^_@#-/{}",
    max_size=14,
)


def by_rich(table: Table, width: int) -> str:
    output = io.StringIO()
    drawn = RichTable(title=table.title, box=box.SIMPLE_HEAVY)
    for column in table.columns:
        drawn.add_column(column.header, justify="right" if column.right else "left")
    for row in table.rows:
        drawn.add_row(*row)
    Console(file=output, width=width).print(drawn)
    return output.getvalue()


@st.composite
def tables(draw_from: st.DrawFn) -> Table:
    count = draw_from(st.integers(1, 5))
    columns = [Column(draw_from(PLAIN), draw_from(st.booleans())) for _ in range(count)]
    rows = draw_from(st.lists(st.lists(PLAIN, min_size=count, max_size=count), max_size=6))
    title = draw_from(
        st.none() | st.from_regex(r"[a-z0-9@()-]{1,8}( [a-z0-9@()-]{1,8}){0,3}", fullmatch=True)
    )
    return Table(columns, rows, title)


@settings(max_examples=400, deadline=None)
@given(tables(), st.integers(20, 140))
def test_a_plain_table_is_drawn_exactly_as_rich_draws_it(table: Table, width: int) -> None:
    expected = by_rich(table, width)
    drawn = draw(table, width)
    if drawn is not None:
        assert drawn == expected
    # What eval prints: laid out first, so rich is given a console the table fits.
    assert _drawn(table, width) == by_rich(*fit(table, width))


def body_lines(text: str) -> list[str]:
    """The lines under a drawn table's rule, without the blank last one."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if "\u2501" in line)
    return [line for line in lines[rule + 1 :] if line.strip()]


@settings(max_examples=200, deadline=None)
@given(tables(), st.integers(20, 140))
def test_a_laid_out_table_never_wraps_a_cell_or_repeats_a_header(table: Table, width: int) -> None:
    fitted, wide = fit(table, width)
    assert wide >= width
    text = by_rich(fitted, wide)
    # One line per row under the rule, and a blank one: rich wrapped no cell (a title
    # wider than the table may wrap above it).
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if "\u2501" in line)
    assert len(lines) - rule - 2 == len(table.rows)
    assert len(lines[rule - 1].rstrip()) <= wide  # the header line, whole
    headers = [column.header for column in table.columns]
    shown = [column.header for column in fitted.columns]
    if len(set(headers)) == len(headers):
        assert len(set(shown)) == len(shown)
    for header, cut in zip(headers, shown, strict=True):
        assert cut == header or cut.endswith(header[-1]) or "\u2026" in cut


def test_headers_cut_alike_keep_the_end_that_tells_them_apart() -> None:
    names = ["precision_4plus@3", "precision_4plus@5", "ndcg@3", "ndcg_cut_10", "ndcg_cut_20"]
    assert cut_names(names, [14, 14, 14, 9, 9]) == [
        "precision_4\u2026@3",
        "precision_4\u2026@5",
        "ndcg@3",
        "ndcg_\u2026_10",
        "ndcg_\u2026_20",
    ]
    # Alike at both ends as well: numbered, in order.
    assert cut_names(["abcdefXghij", "abcdefYghij"], [6, 6]) == ["abcd\u20261", "abcd\u20262"]


def test_an_interval_stays_on_one_line_where_rich_would_wrap_it() -> None:
    # The comparison table as eval draws it, on the console width of the metric table
    # above it (80): rich put "[-1.00" and "-1.000]" on two lines.
    headers = ("metric", "baseline", "run", "diff", "CI", "p", "p (holm)", "family", "W/T/L")
    columns = [Column(h, right=h in {"diff", "p"}) for h in headers]
    row = ["ndcg@5", "bm25", "dense", "-1.0000", "[-1.0000, -1.0000]", "0.5011", "1.0000"]
    table = Table(columns, [[*row, "headline", "0/0/2"], [*row, "secondary", "0/0/1"]])
    assert "[-1.0000, -1.0000]" not in by_rich(table, 80)  # what the fit is for
    text = _drawn(table, 80)
    lines = body_lines(text)
    assert len(lines) == 2
    assert all("[-1.0000, -1.0000]" in line and "secondary" in text for line in lines)
    assert "baseline" in text and "headline" in lines[0]


def test_eval_per_query_headers_are_each_distinct(cli: Cli, demo_db: Path) -> None:
    # The demo's per-query table at K 3 and 5 is wider than its console: rich cut
    # precision_4plus@3 and @5 both to precision_4plus\u2026 (and n_recall_4plus@3, @5).
    code, out, err = cli("eval", demo_db, "-k", "3,5", "--per-query")
    assert code == 0, err
    lines = out.splitlines()
    heads = [lines[i - 1] for i, line in enumerate(lines) if re.match(r" \u2501+ $", line)]
    per_query = [line.split() for line in heads if line.split()[0] == "query"]
    assert len(per_query) == 6  # one table per run
    for names in per_query:
        assert len(set(names)) == len(names), names
        for full in ("precision_4plus@3", "precision_4plus@5", "n_recall_4plus@3"):
            # One header reads as this metric, and it shows the cutoff that tells it apart.
            shown = [name for name in names if reads_as(name, full)]
            assert len(shown) == 1 and shown[0].endswith(full[-2:]), (full, names)


def reads_as(shown: str, full: str) -> bool:
    """Whether a header, whole or cut (``head…tail``), could be the name ``full``."""
    if "\u2026" not in shown:
        return shown == full
    head, tail = shown.split("\u2026", 1)
    return full.startswith(head) and full.endswith(tail)


def test_the_usual_metric_table_is_drawn_without_rich() -> None:
    table = Table(
        [Column("metric"), Column("bm25", right=True), Column("dense", right=True)],
        [["ndcg@10", "0.5405", "0.6120"], ["recall@100", "0.8312", "0.9000 (n=99)"]],
    )
    assert draw(table, 80) == by_rich(table, 80)


@pytest.mark.parametrize(
    ("cell", "why"),
    [
        ("[bold]x", "markup"),
        (":smile:", "an emoji code"),
        ("a\\b", "an escape"),
        ("\u00e9t\u00e9", "not ASCII"),
        ("\u65e5\u672c", "wide characters"),
        ("x" * 90, "wider than the console"),
    ],
)
def test_what_rich_would_read_or_wrap_goes_to_rich(cell: str, why: str) -> None:
    table = Table([Column("metric"), Column("run", right=True)], [[cell, "0.5"]])
    assert draw(table, 80) is None, why
    assert _drawn(table, 80) == by_rich(*fit(table, 80))
    assert "x" * 90 in _drawn(table, 80) or why != "wider than the console"  # never cut


def test_forced_colour_goes_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    table = Table([Column("metric")], [["ndcg@10"]])
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert draw(table, 80) is None


def test_a_title_wider_than_the_table_goes_to_rich() -> None:
    table = Table([Column("q")], [["a"]], title="a title much wider than one column")
    assert draw(table, 80) is None
    assert _drawn(table, 80) == by_rich(table, 80)
