"""``raglabel.evaluate``: the ``eval`` command as a function.

Inputs in the shapes peers take (pytrec_eval's dict of dicts, a TREC file, a pandas or
polars DataFrame with ir_measures' or ranx's column names) are written as TREC files and
evaluated by the very path ``raglabel eval --qrels F --run NAME=F`` takes, with keyword
arguments read as that command's options. So the numbers, the conventions, the checks
and the messages are the command's, by construction, not by a second implementation.
"""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raglabel.api.warn import warn
from raglabel.errors import InputError, UsageError
from raglabel.formats.report import Report as ReportData

#: Column names a DataFrame may use, peer by peer, for each field.
QUERY_COLUMNS = ("query_id", "q_id", "qid")
DOC_COLUMNS = ("doc_id", "docid", "passage_id")
RELEVANCE_COLUMNS = ("relevance", "rel", "label", "grade")
SCORE_COLUMNS = ("score",)
DEFAULT_RUN = "run"


@dataclass(frozen=True)
class Report:
    """What ``evaluate`` returns: the ``eval --format json`` document, with views of it.

    ``argv`` is the ``eval`` command line it was computed with, and ``inputs`` the
    folder holding whatever was given as Python objects, kept while the Report lives so
    ``to_html`` can compute what a report adds (intervals, paired tests) on the same files.
    """

    data: ReportData
    argv: tuple[str, ...] = ()
    inputs: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

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
        """The text ``raglabel eval --format json`` prints for the same inputs."""
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
        Intervals and paired tests against ``baseline`` (default: the first run) are
        computed here, with the command's seeds. A warning of the report's that
        ``evaluate`` did not give already is a ``RaglabelWarning``."""
        from raglabel.cli.main import build_parser, parse_args
        from raglabel.cli.report_cmd import build_input
        from raglabel.report.html import render_html

        if not self.argv:
            raise ValueError("this Report was not made by raglabel.evaluate")
        # The report always computes these three; its parser does not take them.
        always = {"--per-query", "--ci", "--compare"}
        kept = [word for word in self.argv[1:] if word not in always]
        argv = ["report", *kept, "--output", "report.html"]
        for option, given in (("--baseline", baseline), ("--headline", headline)):
            if given is not None:
                argv += [option, given]
        if title is not None:
            argv += ["--title", title]
        said: list[str] = []
        try:
            with _keyword_words():
                args = parse_args(build_parser(), argv)
                report = build_input(args, warn=said.append)
        except (UsageError, InputError) as exc:
            raise ValueError(str(exc)) from None
        except SystemExit as exc:
            raise ValueError(f"an option was refused: {argv[1:]!r}") from exc
        # The same inputs gave evaluate's warnings already, where the Report was made.
        warn(text for text in said if text not in self.data.warnings)
        return render_html(report)

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


def evaluate(
    qrels: Any,
    runs: Any,
    *,
    metrics: str | Iterable[str] | None = None,
    k: int | Iterable[int] | None = None,
    **conventions: Any,
) -> Report:
    """Evaluate ``runs`` against ``qrels`` as ``raglabel eval`` does.

    ``qrels``: ``{qid: {docid: relevance}}``, a qrels file path, or a DataFrame with a
    query, a document and a relevance column. ``runs``: one run (``{qid: {docid:
    score}}``, a TREC run file path, or a DataFrame with a score column) or a mapping of
    names to runs. ``metrics`` and ``k`` are ``--metrics`` and ``-k``; every other
    keyword is the ``eval`` option of that name (``na="zero"``, ``judged_only=True``,
    ``ci=True``, ``compare=True``, ``gain_map="0:0,1:1"``, ...). Per-query values are
    always computed. A bad input or option raises ``ValueError`` with the command's
    message; each warning the command would print is a ``RaglabelWarning``, its
    fix worded as this function's keyword (``grade_map="0:2,1:5"``).
    """
    from raglabel.cli.eval_cmd import compute
    from raglabel.cli.main import build_parser, parse_args

    named = _named_runs(runs)
    inputs = tempfile.TemporaryDirectory(prefix="raglabel-")
    where = Path(inputs.name)
    # The folder outlives this call: the Report keeps it, for to_html.
    try:
        argv = ["eval", "--qrels", _qrels_file(qrels, where), "--per-query"]
        for i, (name, run) in enumerate(named.items()):
            argv += ["--run", f"{name}={_run_file(run, where / f'run{i}.txt')}"]
        if metrics is not None:
            argv += ["--metrics", metrics if isinstance(metrics, str) else ",".join(metrics)]
        if k is not None:
            argv += ["-k", str(k) if isinstance(k, int) else ",".join(map(str, k))]
        argv += _options(conventions)
        try:
            # The eval command's own computation: the warnings stay in the report too.
            with _keyword_words():
                report, said, _, _ = compute(parse_args(build_parser(), argv))
        except (UsageError, InputError) as exc:
            raise ValueError(str(exc)) from None
        except SystemExit as exc:  # argparse's own refusal, printed on stderr
            raise ValueError(f"an option was refused: {dict(conventions)!r}") from exc
    except BaseException:
        inputs.cleanup()
        raise
    warn(said)
    return Report(report, tuple(argv), inputs)


@contextmanager
def _keyword_words() -> Iterator[None]:
    """While the command's code runs for the API, its warnings name a fix as the
    keyword argument a notebook types (``grade_map="0:2,1:5"``), not the option."""
    from raglabel.analysis.checks import OPTION_WORDS, keyword_argument

    token = OPTION_WORDS.set(keyword_argument)
    try:
        yield
    finally:
        OPTION_WORDS.reset(token)


def _named_runs(runs: Any) -> dict[str, Any]:
    """One run, or a mapping of names to runs (a run being a dict, a path or a frame)."""
    if isinstance(runs, Mapping) and not _is_run_dict(runs):
        return {str(name): run for name, run in runs.items()}
    return {DEFAULT_RUN: runs}


def _is_run_dict(value: Mapping[Any, Any]) -> bool:
    """``{qid: {docid: score}}``: the values are mappings of numbers."""
    return all(
        isinstance(docs, Mapping) and all(isinstance(s, (int, float)) for s in docs.values())
        for docs in value.values()
    )


def _options(conventions: Mapping[str, Any]) -> list[str]:
    argv: list[str] = []
    for key, value in conventions.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        else:
            argv += [flag, str(value)]
    return argv


def _qrels_file(qrels: Any, where: Path) -> str:
    if isinstance(qrels, (str, Path)):
        return str(qrels)
    rows = _frame_rows(qrels, RELEVANCE_COLUMNS) if _is_frame(qrels) else _dict_rows(qrels)
    path = where / "qrels.txt"
    with path.open("w", encoding="utf-8") as out:
        for qid, docid, relevance in rows:
            out.write(f"{qid} 0 {docid} {_integer(relevance, qid, docid)}\n")
    return str(path)


def _run_file(run: Any, path: Path) -> str:
    if isinstance(run, (str, Path)):
        return str(run)
    rows = _frame_rows(run, SCORE_COLUMNS) if _is_frame(run) else _dict_rows(run)
    with path.open("w", encoding="utf-8") as out:
        # Ranks are left to the scores, as trec_eval ranks (score, then docid, descending).
        for qid, docid, score in rows:
            out.write(f"{qid} Q0 {docid} 0 {float(score)!r} raglabel\n")
    return str(path)


def _integer(value: Any, qid: str, docid: str) -> int:
    if isinstance(value, bool) or not float(value).is_integer():
        raise ValueError(f"qrels: relevance {value!r} of ({qid}, {docid}) is not an integer")
    return int(value)


def _dict_rows(data: Any) -> list[tuple[str, str, Any]]:
    if not isinstance(data, Mapping):
        raise ValueError(
            f"expected {{qid: {{docid: value}}}}, a file path or a DataFrame, got"
            f" {type(data).__name__}"
        )
    rows = []
    for qid, docs in data.items():
        if not isinstance(docs, Mapping):
            raise ValueError(f"query {qid!r}: expected {{docid: value}}, got {type(docs).__name__}")
        rows += [(_token(qid, "query id"), _token(docid, "doc id"), v) for docid, v in docs.items()]
    return rows


def _token(value: Any, what: str) -> str:
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise ValueError(f"{what} {text!r} is empty or holds white space")
    return text


def _is_frame(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


def _frame_rows(frame: Any, value_columns: tuple[str, ...]) -> list[tuple[str, str, Any]]:
    columns = [str(c) for c in frame.columns]
    query = _column(columns, QUERY_COLUMNS)
    doc = _column(columns, DOC_COLUMNS)
    value = _column(columns, value_columns)
    # polars has to_dicts(); pandas has to_dict("records").
    records = frame.to_dicts() if hasattr(frame, "to_dicts") else frame.to_dict("records")
    return [(_token(r[query], "query id"), _token(r[doc], "doc id"), r[value]) for r in records]


def _column(columns: list[str], names: tuple[str, ...]) -> str:
    for name in names:
        if name in columns:
            return name
    raise ValueError(f"the DataFrame has no {' or '.join(names)} column (it has {columns})")
