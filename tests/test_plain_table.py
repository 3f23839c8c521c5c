"""The plain table drawing is rich's, character for character, or it steps aside."""

from __future__ import annotations

import io
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from raglabel.cli.plain_table import Column, Table, draw
from raglabel.cli.render import _drawn

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
    assert _drawn(table, width) == expected


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
    assert _drawn(table, 80) == by_rich(table, 80)


def test_forced_colour_goes_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    table = Table([Column("metric")], [["ndcg@10"]])
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert draw(table, 80) is None


def test_a_title_wider_than_the_table_goes_to_rich() -> None:
    table = Table([Column("q")], [["a"]], title="a title much wider than one column")
    assert draw(table, 80) is None
    assert _drawn(table, 80) == by_rich(table, 80)
