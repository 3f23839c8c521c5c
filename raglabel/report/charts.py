"""The report's charts, each an :class:`Svg` built from plain numbers.

Every chart's numbers are also in a table beside it (and in tooltips), so nothing in a
report exists only as a picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from raglabel.report.svg import PALETTE, Scale, Svg, nice_ticks, number

LEFT = 130  # room for run and metric names
RIGHT = 24
ROW = 22
WIDTH = 340
#: Colours of grades 1-5: harm in warm tones, utility in cool ones; light to dark so a
#: greyscale print keeps the order.
GRADE_COLOURS = ("#d7301f", "#fc8d59", "#d9d9d9", "#74add1", "#313695")


@dataclass(frozen=True)
class Interval:
    """One row of a forest plot: a label, a point and its interval."""

    label: str
    index: int  # the run's colour and shape
    value: float
    low: float | None
    high: float | None
    strong: bool = False  # drawn filled; hollow otherwise (e.g. not significant)


def _name(text: str, limit: int = 17) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def forest(title: str, rows: Sequence[Interval], zero: bool = False) -> Svg:
    """Points with interval whiskers, one row each; ``zero`` draws the no-difference line."""
    top, bottom = 8, 30
    height = top + ROW * max(len(rows), 1) + bottom
    svg = Svg(WIDTH, height, title)
    values = [v for r in rows for v in (r.value, r.low, r.high) if v is not None]
    if zero:
        values.append(0.0)
    if not values:
        svg.text(WIDTH / 2, height / 2, "no values", "middle", fill="#777")
        return svg
    ticks = nice_ticks(min(values), max(values))
    low, high = ticks[0], ticks[-1]
    scale = Scale(low, high, LEFT, WIDTH - RIGHT)
    axis_y = top + ROW * len(rows) + 4
    svg.axis(scale, axis_y, ticks, top)
    if zero and low <= 0 <= high:
        svg.line(scale(0), top, scale(0), axis_y, stroke="#333", stroke_dasharray="3,3")
    for i, row in enumerate(rows):
        y = top + ROW * i + ROW / 2
        svg.text(LEFT - 8, y + 4, _name(row.label), "end")
        colour = PALETTE[row.index % len(PALETTE)]
        if row.low is not None and row.high is not None:
            svg.line(scale(row.low), y, scale(row.high), y, stroke=colour, stroke_width="2")
            for end in (row.low, row.high):
                svg.line(scale(end), y - 4, scale(end), y + 4, stroke=colour, stroke_width="1.5")
        span = (
            ""
            if row.low is None or row.high is None
            else f" [{number(row.low)}, {number(row.high)}]"
        )
        tip = f"{row.label}: {row.value:.4f}{span}"
        if row.strong:
            svg.marker(scale(row.value), y, row.index, tip)
        else:
            svg.add(
                f'<circle cx="{number(scale(row.value))}" cy="{number(y)}" r="4" fill="#fff"'
                f' stroke="{colour}" stroke-width="2"><title>{escape(tip)}</title></circle>'
            )
    return svg


def distribution(title: str, runs: Sequence[tuple[str, int, Sequence[float]]]) -> Svg:
    """Each run's per-query values as a box (quartiles, median) over jittered points."""
    top, bottom = 8, 30
    height = top + 34 * max(len(runs), 1) + bottom
    svg = Svg(WIDTH + 160, height, title)
    values = [v for _, _, vs in runs for v in vs]
    if not values:
        svg.text(svg.width / 2, height / 2, "no values", "middle", fill="#777")
        return svg
    ticks = nice_ticks(min(values), max(values))
    scale = Scale(ticks[0], ticks[-1], LEFT, svg.width - RIGHT)
    axis_y = top + 34 * len(runs) + 4
    svg.axis(scale, axis_y, ticks, top)
    for i, (name, index, vs) in enumerate(runs):
        y = top + 34 * i + 17
        svg.text(LEFT - 8, y + 4, _name(name), "end")
        if not vs:
            continue
        ordered = sorted(vs)
        q1, med, q3 = (_quantile(ordered, q) for q in (0.25, 0.5, 0.75))
        colour = PALETTE[index % len(PALETTE)]
        svg.line(scale(ordered[0]), y, scale(ordered[-1]), y, stroke=colour)
        svg.rect(
            scale(q1),
            y - 9,
            scale(q3) - scale(q1),
            18,
            tip=f"{name}: median {med:.4f}, quartiles {q1:.4f}-{q3:.4f}, {len(vs)} queries",
            fill=colour,
            fill_opacity="0.18",
            stroke=colour,
        )
        svg.line(scale(med), y - 9, scale(med), y + 9, stroke=colour, stroke_width="2.5")
        for j, v in enumerate(ordered):
            # A fixed, deterministic spread keeps equal values visible without randomness.
            offset = ((j * 7919) % 13 - 6) * 0.9
            svg.add(
                f'<circle cx="{number(scale(v))}" cy="{number(y + offset)}" r="1.6"'
                f' fill="{colour}" fill-opacity="0.55"/>'
            )
    return svg


def prevalence(title: str, counts: dict[str, tuple[int, ...]]) -> Svg:
    """Per query, stacked shares of grades 1-5, queries sorted by their share of 4 and 5;
    the overall shares in a bar above them."""
    width, left, top = 720.0, 60.0, 14.0
    plot_w = width - left - RIGHT
    svg = Svg(width, 250, title)
    queries = [(q, c) for q, c in counts.items() if sum(c) > 0]
    total = [sum(c[g] for _, c in queries) for g in range(5)]
    all_graded = sum(total)
    if not all_graded:
        svg.text(width / 2, 120, "no graded passages", "middle", fill="#777")
        return svg
    # The overall bar.
    x = left
    svg.text(left - 6, top + 12, "all", "end")
    for g in range(5):
        share = total[g] / all_graded
        svg.rect(
            x,
            top,
            plot_w * share,
            16,
            tip=f"grade {g + 1}: {total[g]} of {all_graded} ({share:.1%})",
            fill=GRADE_COLOURS[g],
        )
        x += plot_w * share
    # One column a query.
    queries.sort(key=lambda item: (-(item[1][3] + item[1][4]) / sum(item[1]), item[0]))
    column_top, column_h = top + 34, 150.0
    step = plot_w / len(queries)
    for i, (qid, c) in enumerate(queries):
        n = sum(c)
        y = column_top + column_h
        for g in range(5):
            h = column_h * c[g] / n
            y -= h
            svg.rect(
                left + i * step,
                y,
                max(step - (0.5 if step > 3 else 0), 0.6),
                h,
                tip=f"{qid}, grade {g + 1}: {c[g]} of {n}",
                fill=GRADE_COLOURS[g],
            )
    svg.text(left - 6, column_top + 8, "100%", "end", fill="#555")
    svg.text(left - 6, column_top + column_h, "0%", "end", fill="#555")
    svg.text(
        left + plot_w / 2,
        column_top + column_h + 16,
        f"{len(queries)} queries, most 4s and 5s first",
        "middle",
        fill="#555",
    )
    for g in range(5):
        lx = left + g * 90
        svg.rect(lx, 232, 12, 12, fill=GRADE_COLOURS[g])
        svg.text(lx + 16, 242, f"grade {g + 1}")
    return svg


def heatmap(title: str, matrix: Sequence[Sequence[int]], rows: str, columns: str) -> Svg:
    """A 5x5 count matrix, darker for more; the diagonal (agreement) outlined."""
    cell, left, top = 44.0, 70.0, 40.0
    svg = Svg(left + cell * 5 + 20, top + cell * 5 + 30, title)
    peak = max((v for row in matrix for v in row), default=0) or 1
    svg.text(left + cell * 2.5, 14, f"{columns} grade", "middle", fill="#555")
    for j in range(5):
        svg.text(left + cell * j + cell / 2, top - 8, str(j + 1), "middle")
    for i in range(5):
        svg.text(left - 8, top + cell * i + cell / 2 + 4, f"{rows} {i + 1}", "end")
        for j in range(5):
            value = matrix[i][j]
            shade = value / peak
            red, green, blue = (round(255 - d * shade) for d in (200, 160, 60))
            fill = f"rgb({red},{green},{blue})"
            style = {"fill": fill, "stroke": "#333" if i == j else "#ccc"}
            svg.rect(
                left + cell * j,
                top + cell * i,
                cell,
                cell,
                tip=f"{rows} {i + 1}, {columns} {j + 1}: {value}",
                **style,
            )
            svg.text(
                left + cell * j + cell / 2,
                top + cell * i + cell / 2 + 4,
                str(value),
                "middle",
                fill="#fff" if shade > 0.6 else "#222",
            )
    return svg


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    position = (len(ordered) - 1) * q
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
