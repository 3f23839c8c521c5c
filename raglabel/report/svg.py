"""A small SVG writer: linear scales, round ticks, escaped text.

Coordinates are written with at most two decimals, so the same numbers always give the
same bytes and a report diffs cleanly in a pull request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

#: Run colours, from a palette that stays distinct for colour-blind readers (Okabe-Ito),
#: each paired with a marker shape so greyscale prints still tell runs apart.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
SHAPES = ("circle", "square", "diamond", "triangle")
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:12px"


def number(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def label(value: float) -> str:
    """A tick label: as many decimals as the step needs, no more."""
    if value == 0:
        return "0"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.3g}"


@dataclass(frozen=True)
class Scale:
    """Maps [low, high] onto [start, end] pixels."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.high - self.low
        if span == 0:
            return (self.start + self.end) / 2
        return self.start + (value - self.low) / span * (self.end - self.start)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values from at or below ``low`` to at or above ``high``: the chart's
    domain runs from the first to the last, so every tick drawn is inside it."""
    if not math.isfinite(low) or not math.isfinite(high):
        return []
    if high == low:
        low, high = low - 0.5, high + 0.5
    raw = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step + 1e-9) * step
    last = math.ceil(high / step - 1e-9) * step
    count_steps = round((last - first) / step)
    return [round(first + i * step, 12) for i in range(count_steps + 1)]


@dataclass
class Svg:
    """One chart; ``title`` is its accessible name (and its tooltip)."""

    width: float
    height: float
    title: str
    parts: list[str] = field(default_factory=list)

    def add(self, element: str) -> None:
        self.parts.append(element)

    def line(self, x1: float, y1: float, x2: float, y2: float, **style: str) -> None:
        self.add(
            f'<line x1="{number(x1)}" y1="{number(y1)}" x2="{number(x2)}" y2="{number(y2)}"'
            f"{_style(style)}/>"
        )

    def rect(
        self, x: float, y: float, w: float, h: float, tip: str | None = None, **style: str
    ) -> None:
        inner = f"<title>{escape(tip)}</title>" if tip else ""
        self.add(
            f'<rect x="{number(x)}" y="{number(y)}" width="{number(max(w, 0))}"'
            f' height="{number(max(h, 0))}"{_style(style)}>{inner}</rect>'
        )

    def text(self, x: float, y: float, content: str, anchor: str = "start", **style: str) -> None:
        self.add(
            f'<text x="{number(x)}" y="{number(y)}" text-anchor="{anchor}"{_style(style)}>'
            f"{escape(content)}</text>"
        )

    def marker(self, x: float, y: float, index: int, tip: str, size: float = 4.5) -> None:
        """Run ``index``'s colour and shape at (x, y), with a tooltip."""
        colour = PALETTE[index % len(PALETTE)]
        shape = SHAPES[index % len(SHAPES)]
        inner = f"<title>{escape(tip)}</title>"
        fill = f' fill="{colour}" stroke="#fff" stroke-width="0.8"'
        if shape == "circle":
            body = f'<circle cx="{number(x)}" cy="{number(y)}" r="{number(size)}"{fill}>'
            self.add(f"{body}{inner}</circle>")
            return
        if shape == "square":
            points = [
                (x - size, y - size),
                (x + size, y - size),
                (x + size, y + size),
                (x - size, y + size),
            ]
        elif shape == "diamond":
            points = [
                (x, y - size * 1.3),
                (x + size * 1.3, y),
                (x, y + size * 1.3),
                (x - size * 1.3, y),
            ]
        else:
            points = [(x, y - size * 1.3), (x + size * 1.2, y + size), (x - size * 1.2, y + size)]
        coords = " ".join(f"{number(px)},{number(py)}" for px, py in points)
        self.add(f'<polygon points="{coords}"{fill}>{inner}</polygon>')

    def axis(self, scale: Scale, y: float, ticks: list[float], top: float) -> None:
        """A horizontal value axis at ``y``, with grid lines up to ``top``."""
        for tick in ticks:
            if not min(scale.low, scale.high) <= tick <= max(scale.low, scale.high):
                continue
            x = scale(tick)
            self.line(x, top, x, y, stroke="#e3e3e3")
            self.text(x, y + 14, label(tick), "middle", fill="#555")
        self.line(scale.start, y, scale.end, y, stroke="#999")

    def render(self, *, standalone: bool = False) -> str:
        """The SVG element; ``standalone`` adds the namespace a separate .svg file needs."""
        space = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
        return (
            f'<svg{space} width="{number(self.width)}" height="{number(self.height)}"'
            f' viewBox="0 0 {number(self.width)} {number(self.height)}" role="img"'
            f' aria-label="{escape(self.title)}" style="{FONT}">'
            f"<title>{escape(self.title)}</title>" + "".join(self.parts) + "</svg>"
        )


def _style(style: dict[str, str]) -> str:
    return "".join(f' {name.replace("_", "-")}="{escape(value)}"' for name, value in style.items())
