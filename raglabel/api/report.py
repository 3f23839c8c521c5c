"""What ``raglabel.evaluate`` returns: the ``eval --format json`` document, with the
views a notebook wants of it (dicts, long tables, a short repr, an HTML table)."""

from __future__ import annotations

import copy
import html
import importlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from raglabel.api.warn import warn
from raglabel.api.words import keyword_errors
from raglabel.formats.report import Report as ReportData

if TYPE_CHECKING:
    from raglabel.analysis.inputs import EvalRequest

#: How many runs and metrics ``_repr_html_`` shows before it says how many more.
_HTML_ROWS = 50
_HTML_COLUMNS = 20


@dataclass(frozen=True)
class Report:
    """``data`` is the document ``raglabel eval --format json --per-query`` prints for
    the same inputs and options. ``request`` is what it was computed from (the tables
    in memory, or the files' paths), kept so that ``to_html`` can compute what a report
    adds (intervals, paired tests) from the same inputs."""

    data: ReportData
    request: EvalRequest | None = field(default=None, repr=False, compare=False)
    #: How a report page names the inputs: ``qrels dict; runs a, b``.
    source: str = field(default="", repr=False, compare=False)

    @property
    def means(self) -> dict[str, dict[str, float | None]]:
        """``{run: {metric: mean}}``; None is NA."""
        return {name: dict(run.mean) for name, run in self.data.runs.items()}

    @property
    def per_query(self) -> dict[str, dict[str, dict[str, float | None]]]:
        """``{run: {query: {metric: value}}}``; None is NA."""
        out: dict[str, dict[str, dict[str, float | None]]] = {}
        for name, run in self.data.runs.items():
            out[name] = {q: dict(values) for q, values in (run.per_query or {}).items()}
        return out

    def ci(self) -> dict[str, dict[str, tuple[float, float] | None]]:
        """``{run: {metric: (low, high)}}``: the percentile bootstrap intervals."""
        return {name: dict(run.ci or {}) for name, run in self.data.runs.items()}

    def compare(self) -> list[dict[str, Any]]:
        """The paired randomization tests, one dict per (baseline, run, metric)."""
        return [vars(c) for c in self.data.compare or ()]

    def to_json(self) -> str:
        """The text ``raglabel eval --format json --per-query`` prints for the same inputs."""
        return self.data.to_json()

    def to_html(
        self,
        *,
        baseline: str | None = None,
        headline: str | None = None,
        title: str | None = None,
    ) -> str:
        """The file ``raglabel report`` writes for the same inputs and options: one
        self-contained HTML page with a summary in words and inline SVG charts.
        Intervals and paired tests against ``baseline`` (default: the one given to
        ``evaluate``, else the first run) are computed here, with the command's seeds,
        on the inputs ``evaluate`` was given (nothing was written to disk). A warning of
        the report's that ``evaluate`` did not give already is a ``RaglabelWarning``;
        a ``baseline`` or ``headline`` that is not a run or a metric is a ``ValueError``."""
        from raglabel.analysis.entry import evaluate_request
        from raglabel.analysis.report_input import as_report_request, report_input
        from raglabel.report.html import render_html

        if self.request is None:
            raise ValueError("this Report was not made by raglabel.evaluate")
        asked = copy.copy(self.request)
        if headline is not None:
            asked.options = replace(asked.options, headline=headline)
        chosen = asked.options.baseline if baseline is None else baseline
        as_report_request(asked, runs=len(self.data.runs), baseline=chosen)
        with keyword_errors():
            done = evaluate_request(asked)
            page = report_input(
                done,
                title=title or "raglabel report",
                source=self.source,
                baseline=chosen,
                headline=headline,
            )
        # The same inputs gave evaluate's warnings already, where the Report was made.
        warn(text for text in done.warnings if text not in self.data.warnings)
        return render_html(page)

    def rows(self) -> list[dict[str, Any]]:
        """One row per (run, query, metric) with its value: the long, tidy shape."""
        return [
            {"run": name, "query": query, "metric": metric, "value": value}
            for name, queries in self.per_query.items()
            for query, values in queries.items()
            for metric, value in values.items()
        ]

    def to_polars(self) -> Any:
        """``rows()`` as a polars DataFrame (polars is imported only here)."""
        pl = importlib.import_module("polars")

        schema = {"run": pl.String, "query": pl.String, "metric": pl.String, "value": pl.Float64}
        return pl.DataFrame(self.rows(), schema=schema)

    def to_pandas(self) -> Any:
        """``rows()`` as a pandas DataFrame (pandas is imported only here)."""
        pd = importlib.import_module("pandas")  # not a dependency: an ImportError says so
        return pd.DataFrame(self.rows(), columns=["run", "query", "metric", "value"])

    def _metrics(self) -> list[str]:
        first = next(iter(self.data.runs.values()), None)
        return [] if first is None else list(first.mean)

    def __repr__(self) -> str:
        """One line: the runs, the metrics, the queries and the warnings' count."""
        runs = list(self.data.runs)
        return (
            f"<raglabel.Report: {len(runs)} run{'s' * (len(runs) != 1)} {_listed(runs)},"
            f" metrics {_listed(self._metrics())}, {self.data.labels.queries} queries,"
            f" {len(self.data.warnings)} warning{'s' * (len(self.data.warnings) != 1)}>"
        )

    def _repr_html_(self) -> str:
        """The means as an HTML table (runs down, metrics across; NA for None), for a
        notebook's cell, with the warnings' count under it."""
        metrics = self._metrics()
        shown = metrics[:_HTML_COLUMNS]
        head = "".join(f"<th>{html.escape(m)}</th>" for m in shown)
        body = []
        for name, run in list(self.data.runs.items())[:_HTML_ROWS]:
            cells = "".join(f"<td>{_number(run.mean.get(m))}</td>" for m in shown)
            body.append(f"<tr><th>{html.escape(name)}</th>{cells}</tr>")
        notes = [f"{self.data.labels.queries} queries"]
        if len(metrics) > len(shown):
            notes.append(f"{len(metrics) - len(shown)} more metrics in .means")
        if len(self.data.runs) > _HTML_ROWS:
            notes.append(f"{len(self.data.runs) - _HTML_ROWS} more runs in .means")
        if self.data.warnings:
            notes.append(f"{len(self.data.warnings)} warning(s) in .data.warnings")
        return (
            "<table><thead><tr><th>run</th>"
            + head
            + "</tr></thead><tbody>"
            + "".join(body)
            + "</tbody></table>"
            + f"<p>{html.escape('; '.join(notes))}</p>"
        )


def _listed(names: list[str], most: int = 4) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" (+{len(names) - most})" if len(names) > most else "")


def _number(value: float | None) -> str:
    return "NA" if value is None else f"{value:.4f}"
