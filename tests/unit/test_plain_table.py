"""The plain table drawing is rich's, character for character, or it steps aside; and
tables are laid out so that a value never wraps and no two headers read alike."""

from __future__ import annotations

import io
import re
import string
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from examples import examples
from hypothesis import given
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from raglabel.cli import plain_table
from raglabel.cli.plain_table import Column, Table, cut_names, draw, fit, layout, split
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


# 150 examples: each draws through rich several times. A title centred a column off
# (rounding the other way) is still found in every run of five.
@examples(150)
@given(tables(), st.integers(20, 140))
def test_a_plain_table_is_drawn_exactly_as_rich_draws_it(table: Table, width: int) -> None:
    expected = by_rich(table, width)
    drawn = draw(table, width)
    if drawn is not None:
        assert drawn == expected
    # What eval prints: laid out first, so rich is given a console the table fits,
    # block by block where the table is split.
    blocks, note = layout(table, width)
    text = "".join(by_rich(*fit(block, width)) for block in blocks)
    assert _drawn(table, width) == (text if note is None else note + "\n" + text)


def body_lines(text: str) -> list[str]:
    """The lines under a drawn table's rule, without the blank last one."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if "\u2501" in line)
    return [line for line in lines[rule + 1 :] if line.strip()]


# 100 examples: a fitted width that forgets the table's right edge (rich then wraps a
# cell) is still found in every run of five.
@examples(100)
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
        # Each header reads as its own name and as no other.
        assert {other for other in headers if reads_as(cut, other)} == {header}, (cut, headers)
        cutoff = re.search(r"@[A-Za-z0-9]+$|_[0-9]+$", header)
        if cutoff is not None and cutoff.start() > 0:
            # A cut header keeps the end that tells it from its siblings.
            assert cut.endswith(cutoff.group()), (cut, header)


# Metric names as eval heads its columns: a base, a level, a cutoff of either form.
METRIC_NAMES = st.builds(
    lambda base, level, cutoff: base + level + cutoff,
    st.sampled_from(["precision", "n_recall", "ndcg", "ndcg_cut", "ra_nwg", "harm", "P", "a"]),
    st.sampled_from(["", "_4plus", "_5", "_3plus", "x"]),
    st.sampled_from(["@3", "@5", "@10", "@100", "@k", "_10", "_20", ""]),
)


# 200 examples: a reading-alike check that misses names two characters longer than a cut
# shows (so two headers read alike) is still found in every run of five.
@examples(200)
@given(
    st.lists(METRIC_NAMES, min_size=1, max_size=12, unique=True).flatmap(
        lambda names: st.tuples(
            st.just(names),
            st.lists(st.integers(0, 24), min_size=len(names), max_size=len(names)),
        )
    )
)
def test_cut_metric_names_never_repeat_and_keep_their_cutoff(
    names_widths: tuple[list[str], list[int]],
) -> None:
    names, widths = names_widths
    shown = cut_names(names, widths)
    assert len(set(shown)) == len(shown), (names, widths, shown)
    for name, cut in zip(names, shown, strict=True):
        # Each header reads as its own name and as no other.
        assert [other for other in names if reads_as(cut, other)] == [name], (cut, names)
        cutoff = re.search(r"@[A-Za-z0-9]+$|_[0-9]+$", name)
        if cutoff is not None and cutoff.start() > 0:
            assert cut.endswith(cutoff.group()), (name, cut)
        if cut != name:
            # Cut to its width unless that would leave no start, or read as another.
            assert cut.count("\u2026") == 1 and len(cut) < len(name)


# 100 examples: a split that lets a block run a column past the console is still found
# in every run of five.
@examples(100)
@given(
    st.lists(METRIC_NAMES, min_size=1, max_size=10, unique=True),
    # From the width of the query column beside the longest name whole (30): narrower,
    # a block of one column is drawn wider, as a value is never cut.
    st.integers(30, 140),
)
def test_a_per_query_table_keeps_each_cutoff_at_any_width(names: list[str], width: int) -> None:
    columns = [Column("query"), *(Column(name, right=True) for name in names)]
    table = Table(columns, [["q01", *("0.5000" for _ in names)]])
    for block in split(table, width):
        fitted, wide = fit(block, width)
        shown = [column.header for column in fitted.columns]
        assert len(set(shown)) == len(shown)
        assert shown[0] == "query"  # every block is led by the row names
        for column, cut in zip(block.columns, shown, strict=True):
            cutoff = re.search(r"@[A-Za-z0-9]+$|_[0-9]+$", column.header)
            if cutoff is not None and cutoff.start() > 0:
                assert cut.endswith(cutoff.group()), (column.header, cut)
        assert all(len(line) <= width for line in by_rich(fitted, wide).splitlines())
    shown_in_blocks = [c.header for block in split(table, width) for c in block.columns[1:]]
    assert shown_in_blocks == names  # no column left out, none twice, in order


def test_headers_cut_alike_keep_the_end_that_tells_them_apart() -> None:
    names = ["precision_4plus@3", "precision_4plus@5", "ndcg@3", "ndcg_cut_10", "ndcg_cut_20"]
    assert cut_names(names, [14, 14, 14, 9, 9]) == [
        "precision_4\u2026@3",
        "precision_4\u2026@5",
        "ndcg@3",
        "ndcg_\u2026_10",
        "ndcg_\u2026_20",
    ]
    # The tester's widths (14 and 15): each keeps its cutoff, not whatever end fits.
    assert cut_names(["n_recall_4plus@3", "n_recall_4plus@5"], [14, 15]) == [
        "n_recall_4p\u2026@3",
        "n_recall_4pl\u2026@5",
    ]
    # Alike at both ends as well: wider than asked, until they differ (never a number
    # that reads as part of the name).
    assert cut_names(["abcdefXghij", "abcdefYghij"], [6, 6]) == ["abcdefX\u2026", "abcdefY\u2026"]
    # A cut that could be a shorter name beside it is no cut of it: that one is whole.
    assert cut_names(["precision@3", "precision_4plus@3", "n_recall_5@3"], [8, 8, 8]) == [
        "precision@3",
        "precision\u2026@3",
        "n_rec\u2026@3",
    ]


def test_an_interval_stays_on_one_line_where_rich_would_wrap_it() -> None:
    # The comparison table as eval draws it on an 80-column console: rich put
    # "[-1.00" and "-1.000]" on two lines, and drawn whole it is 87 wide, which the
    # terminal wraps instead.
    headers = ("metric", "baseline", "run", "diff", "CI", "p", "p (holm)", "family", "W/T/L")
    columns = [Column(h, right=h in {"diff", "p"}) for h in headers]
    row = ["ndcg@5", "bm25", "dense", "-1.0000", "[-1.0000, -1.0000]", "0.5011", "1.0000"]
    rows = [[*row, "headline", "0/0/2"], [*row, "secondary", "0/0/1"]]
    table = Table(columns, rows, keys=3)
    assert "[-1.0000, -1.0000]" not in by_rich(table, 80)  # what the fit is for
    text = _drawn(table, 80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert text.startswith("(too wide for 80 columns: printed in 2 parts, each led by the")
    first, second = text.split("part 2 of 2")
    assert [line.split()[:3] for line in body_lines(first)] == [row[:3], row[:3]]
    assert all("[-1.0000, -1.0000]" in line for line in body_lines(first))
    assert [line.split() for line in body_lines(second)] == [
        [*row[:3], "headline", "0/0/2"],
        [*row[:3], "secondary", "0/0/1"],
    ]
    assert "p (holm)" in first + second and "baseline" in second


@pytest.mark.parametrize("columns", [70, 80, 90, 100, 120])
def test_eval_per_query_headers_are_each_distinct(
    cli: Cli, demo_db: Path, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    # The demo's per-query table at K 3 and 5 is wider than its console: rich cut
    # precision_4plus@3 and @5 both to precision_4plus\u2026, and widest-first cutting
    # left n_recall_4plu\u2026 beside n_recall_4plus\u2026 at 70 to 100 columns.
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(plain_table, "_is_terminal", lambda: True)  # a terminal that wide
    monkeypatch.chdir(demo_db.parent)  # the labels line names the file: a short name
    code, out, err = cli("eval", demo_db.name, "-k", "3,5", "--per-query")
    assert code == 0, err
    lines = out.splitlines()
    assert all(len(line) <= columns for line in lines), max(lines, key=len)
    heads = [lines[i - 1] for i, line in enumerate(lines) if re.match(r" \u2501+ $", line)]
    per_query = [line.split() for line in heads if line.split()[0] == "query"]
    assert len(per_query) >= 6  # one table per run, in blocks where it is too wide
    for names in per_query:
        assert len(set(names)) == len(names), names
    shown = [name for names in per_query for name in names[1:]]
    for full in ("precision_4plus@3", "precision_4plus@5", "n_recall_4plus@3", "harm@5"):
        # In each run's table one header reads as this metric, and it ends with its cutoff.
        matches = [name for name in shown if reads_as(name, full)]
        assert len(matches) == 6 and all(m.endswith(full[-2:]) for m in matches), (full, shown)


def reads_as(shown: str, full: str) -> bool:
    """Whether a header, whole or cut (``head…tail``), could be the name ``full``."""
    if "\u2026" not in shown:
        return shown == full
    head, tail = shown.split("\u2026", 1)
    # The ellipsis stands for at least one character.
    return len(full) > len(head) + len(tail) and full.startswith(head) and full.endswith(tail)


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
