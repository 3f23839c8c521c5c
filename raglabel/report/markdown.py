"""The report as Markdown for a pull request: ``report.md`` and one SVG file a chart."""

from __future__ import annotations

from raglabel.report.document import sections
from raglabel.report.model import ReportInput
from raglabel.report.parts import Table


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(table: Table) -> list[str]:
    lines = ["| " + " | ".join(_cell(c) for c in table.head) + " |"]
    lines.append("|" + "---|" * len(table.head))
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    return lines


def render_markdown(report: ReportInput) -> tuple[str, dict[str, str]]:
    """The Markdown text and the chart files it links to (name -> SVG text)."""
    lines = [f"# {report.title}", "", report.source, ""]
    files: dict[str, str] = {}
    for section in sections(report):
        lines += [f"## {section.title}", ""]
        for paragraph in section.paragraphs:
            lines += [paragraph, ""]
        for chart in section.charts:
            name = f"{chart.name}.svg"
            while name in files:  # two metrics whose names slug alike
                name = f"{name[:-4]}-{len(files)}.svg"
            files[name] = chart.svg.render(standalone=True) + "\n"
            lines += [f"![{_cell(chart.svg.title)}]({name})", ""]
        for table in section.tables:
            lines += [*_table(table), ""]
    return "\n".join(lines).rstrip() + "\n", files
