"""The report as one self-contained HTML file: inline style, inline SVG, no script.

Nothing is fetched: no font, stylesheet, script or image from anywhere, so the file
opens offline and survives being mailed or attached to a ticket.
"""

from __future__ import annotations

from html import escape

from raglabel.report.document import sections
from raglabel.report.model import ReportInput
from raglabel.report.parts import Section, Table

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b;
  margin: 2rem auto; max-width: 1100px; padding: 0 1.5rem; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.2rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
.source { color: #555; margin-top: 0; }
.summary { font-size: 1.08rem; background: #f3f6fa; border-left: 4px solid #0072B2;
  padding: .8rem 1rem; }
.charts { display: flex; flex-wrap: wrap; gap: .6rem 1.4rem; margin: .8rem 0; }
figure { margin: 0; max-width: 100%; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-weight: 600; font-size: .85rem; margin-bottom: .1rem; }
details > summary { cursor: pointer; color: #0a4f85; }
.table { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .85rem; }
th, td { border: 1px solid #ddd; padding: .2rem .5rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
td { font-variant-numeric: tabular-nums; }
details { margin: .6rem 0; }
@media print { .charts { break-inside: avoid; } }
"""


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in table.head)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in table.rows
    )
    # Wide tables scroll in their own box on a narrow screen, not the whole page.
    return (
        f'<div class="table"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def _section(section: Section, first: bool) -> str:
    parts = [f"<h2>{escape(section.title)}</h2>"]
    css = ' class="summary"' if first else ""
    parts += [f"<p{css}>{escape(text)}</p>" for text in section.paragraphs]
    if section.charts:
        figures = "".join(
            f"<figure><figcaption>{escape(chart.caption)}</figcaption>{chart.svg.render()}</figure>"
            for chart in section.charts
        )
        parts.append(f'<div class="charts">{figures}</div>')
    for i, table in enumerate(section.tables):
        rendered = _table(table)
        # Long tables (conventions, definitions) fold away; the first table is the
        # section's own numbers and stays open.
        if i > 0 or len(table.rows) > 40:
            rendered = (
                f"<details><summary>{escape(table.head[0])} table</summary>{rendered}</details>"
            )
        parts.append(rendered)
    return "\n".join(parts)


def render_html(report: ReportInput) -> str:
    body = "\n".join(_section(s, i == 0) for i, s in enumerate(sections(report)))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(report.title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{escape(report.title)}</h1>\n"
        f'<p class="source">{escape(report.source)}</p>\n{body}\n</body>\n</html>\n'
    )
