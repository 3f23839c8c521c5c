"""The pydantic-free runtime types (the report dataclasses, MetricConfig, the grade map)
against what pydantic reads and writes for them."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from raglabel.formats.maps import GradeMap
from raglabel.formats.report import (
    Comparison,
    CorrectedComparison,
    CorrectedMean,
    CriterionAnswers,
    CtxRankDetail,
    EstimateInfo,
    Figure,
    Figures,
    GradeSummary,
    LabelsInfo,
    Report,
    RunReport,
    SampleGrades,
    json_float,
)
from raglabel.metrics.config import ConfigError, MetricConfig
from raglabel.metrics.names import MetricKey
from raglabel.session.options import AppOptions


class _Floats(BaseModel):
    values: list[float]


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=20))
def test_json_floats_are_written_as_pydantic_writes_them(values: list[float]) -> None:
    expected = _Floats(values=values).model_dump_json()
    assert '{"values":[' + ",".join(map(json_float, values)) + "]}" == expected


def _run(*, ci: bool = False, per_query: bool = False, ctx_rank: bool = False) -> RunReport:
    """A run's report with the optional parts asked for."""
    detail = CtxRankDetail(k=2, actual_ranks=[0, 1], ideal_ranks=[1, 0],
                           grades=[None, 5], passed=False)  # fmt: skip
    figures = Figures({"ndcg@2": 0.25, "mrr": None}, {"ndcg@2": (0.0, 0.5), "mrr": None},
                      {"ndcg@2": 3, "mrr": 0})  # fmt: skip
    return RunReport(
        mean={"ndcg@2": 1.5e-05, "mrr": None},
        valid={"ndcg@2": 3, "mrr": 0},
        judge_share={"2": 0.25, "5": None} if ci else None,
        ci={"ndcg@2": (1e-7, 0.25), "mrr": None} if ci else None,
        per_query={"q\u00e9": {"ndcg@2": 0.5, "mrr": None}} if per_query else None,
        ctx_rank={"ctx_rank_prec@2": {"q\u00e9": detail}} if ctx_rank else None,
        lam={"ndcg@2": 0.5, "mrr": None} if ci else None,
        judge_only=figures if ci else None,
        human_only=figures if ci else None,
    )


def _report(runs: dict[str, RunReport], compare: list[Comparison] | None) -> Report:
    return Report(
        labels=LabelsInfo(queries=1, graded=2, fingerprint="sha256:0"),
        config={"k": [2], "gain_map": {1: 0.0, 5: 3.0}, "pool": {}},
        runs=runs,
        compare=compare,
        warnings=["w"],
    )


def test_report_json_is_what_pydantic_writes() -> None:
    # Every optional field asked for, so pydantic and the report write the same keys.
    full = _run(ci=True, per_query=True, ctx_rank=True)
    compare: list[Comparison | CorrectedComparison] = [
        Comparison("a", "b", "mrr", 2.5e-5, (-1.0, 1e20), 0.5, 1, 0, 2, 3),
        CorrectedComparison(
            "a",
            "b",
            "ndcg@2",
            0.1,
            (0.0, 0.2),
            0.04,
            1,
            0,
            2,
            3,
            queries_to_settle=7,
            lam=0.5,
            judge_only=Figure(0.1, (0.0, 0.2), 3),
            human_only=None,
        ),
    ]
    report = _report({"a": full, "b": full}, compare)
    report.estimate = EstimateInfo("corrected", 400, 40, 38, ["q17", "q203"], 5)
    # The answers section (eval --answers --compare --per-query), every part present.
    sample = SampleGrades("q1", 4.0, None, None, "judge_failed", [1, 0], [0, 1],
                          [{"chunk_position": 1, "reason": "off topic"}])  # fmt: skip
    report.answers = {
        "a": {
            "ctx_rank_prec": CriterionAnswers(
                human=GradeSummary(4.0, 1.0, 1, {}, (4.0, 4.0), 2),
                judge=GradeSummary(None, None, 0, {"judge_failed": 1}, None, 2),
                corrected=CorrectedMean(3.5, (3.0, 4.0), 30, 40),
                per_sample={"s1": sample},
            )
        }
    }
    report.answer_compare = compare[:1]
    text = report.to_json()
    assert text == TypeAdapter(Report).dump_json(report, indent=2, by_alias=True).decode() + "\n"


def test_written_reports_validate_against_the_schema_types() -> None:
    runs = {"a": _run(ci=True, per_query=True, ctx_rank=True), "b": _run(per_query=True)}
    text = _report(runs, [Comparison("a", "b", "mrr", None, None, None, 0, 0, 0, 0)]).to_json()
    model = TypeAdapter(Report).validate_json(text)
    assert model.to_json() == text
    assert json.loads(text)["runs"]["b"]["ctx_rank"] is None
    # What was not asked for is left out, and a report without it is still valid.
    bare = _report({"c": _run()}, None).to_json()
    assert set(json.loads(bare)) == {"labels", "config", "runs", "warnings"}
    assert set(json.loads(bare)["runs"]["c"]) == {"mean", "valid"}
    assert TypeAdapter(Report).validate_json(bare).to_json() == bare
    with pytest.raises(ValueError, match="Unexpected keyword argument"):
        TypeAdapter(Report).validate_json(text.replace('"warnings"', '"extra": 1, "warnings"'))


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"alpha": -1}, "alpha", "Input should be greater than or equal to 0"),
        ({"ctx_threshold": 101.0}, "ctx_threshold", "Input should be less than or equal to 100"),
        ({"harm_threshold": 0}, "harm_threshold", "Input should be greater than or equal to 1"),
        ({"harm_threshold": 2.5}, "harm_threshold", "got a number with a fractional part"),
        ({"alpha": float("nan")}, "alpha", "Input should be a finite number"),
        ({"cap3": float("inf")}, "cap3", "Input should be a finite number"),
        ({"default_k": 0}, "default_k", "Input should be greater than or equal to 1"),
        ({"gain_map": {1: 0}}, "gain_map", "needs exactly the grades 1-5 as keys (missing [2,"),
        ({"gain_map": {1: -1, 2: 0, 3: 0, 4: 0, 5: 0}}, "gain_map", "must not be negative"),
        ({"base_utilities": dict.fromkeys(range(1, 6), 0.0)}, None, "base_utilities[5]"),
        ({"nope": 1}, "nope", "Extra inputs are not permitted"),
    ],
)
def test_config_errors_name_field_and_problem(
    fields: dict[str, object], field: str | None, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        MetricConfig.from_fields(fields)
    assert caught.value.field == field
    assert message in caught.value.message


def test_config_coerces_and_keeps_the_printed_order() -> None:
    config = MetricConfig(alpha=2, harm_threshold=3.0, gain_map={5: 3, 4: 2, 3: 1, 2: 0, 1: 0})  # type: ignore[arg-type]
    assert config.alpha == 2.0 and isinstance(config.alpha, float)
    assert config.harm_threshold == 3 and isinstance(config.harm_threshold, int)
    assert list(config.gain_map.items()) == [(1, 0.0), (2, 0.0), (3, 1.0), (4, 2.0), (5, 3.0)]
    assert list(config.as_dict()["base_utilities"]) == [5, 4, 3, 2, 1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.alpha = 3.0  # type: ignore[misc]


def test_config_behaves_as_the_frozen_dataclass_it_was() -> None:
    # A hand-written record since eval's start-up stopped compiling a dataclass for it:
    # the same repr, equality by fields, no hash (its tables are dicts), copied tables.
    config = MetricConfig()
    assert repr(config) == (
        "MetricConfig(alpha=1.0, cap4=1.0, cap3=0.25, base_utilities={5: 1.0, 4: 0.5,"
        " 3: 0.1, 2: 0.0, 1: 0.0}, fallback_weights={5: 1.0, 4: 1.0, 3: 0.2, 2: 0.0,"
        " 1: 0.0}, harm_threshold=2, relevance_threshold=4, gain_map={1: 0.0, 2: 0.0,"
        " 3: 1.0, 4: 2.0, 5: 3.0}, ctx_threshold=80.0, default_k=5)"
    )
    assert config == MetricConfig(gain_map={1: 0, 2: 0, 3: 1, 4: 2, 5: 3})
    assert config != MetricConfig(cap3=0.5)
    assert config != "MetricConfig()"
    with pytest.raises(TypeError, match="unhashable"):
        hash(config)
    fields = config.as_dict()
    assert list(fields) == [
        "alpha",
        "cap4",
        "cap3",
        "base_utilities",
        "fallback_weights",
        "harm_threshold",
        "relevance_threshold",
        "gain_map",
        "ctx_threshold",
        "default_k",
    ]
    fields["gain_map"][5] = 9.0
    assert config.gain_map[5] == 3.0
    # Each default table is the instance's own: changing one changes no other config.
    assert config.base_utilities is not MetricConfig().base_utilities
    with pytest.raises(dataclasses.FrozenInstanceError):
        del config.cap4
    # None is no table (a default is left out, not given as None).
    with pytest.raises(ConfigError, match="valid dictionary"):
        MetricConfig(gain_map=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "record",
    [
        MetricConfig(cap3=0.5),
        MetricKey("ndcg", 10),
        GradeMap({0: 1, 1: 5}, negative=None),
        AppOptions(project=Path("p.db"), annotator="ann"),  # holds a MetricConfig
    ],
    ids=type,
)
def test_frozen_records_copy_and_pickle_as_the_dataclasses_did(record: object) -> None:
    for twin in (
        copy.copy(record),
        copy.deepcopy(record),
        pickle.loads(pickle.dumps(record)),
    ):
        assert type(twin) is type(record)
        if isinstance(record, GradeMap):  # compares and prints by identity, as ever
            assert (twin.mapping, twin.negative) == (record.mapping, record.negative)
        else:
            assert twin == record
            assert repr(twin) == repr(record)
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.deepcopy(record).__setattr__("alpha", 2.0)


@pytest.mark.parametrize(
    "fields", [{"mapping": {0: 6}}, {"mapping": {0: 0}}, {"negative": 0}, {"negative": 6}]
)
def test_grade_maps_only_map_onto_grades(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="outside"):
        GradeMap(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", [["--format", "json"], []])
def test_plain_eval_imports_only_what_it_uses(tmp_path: Path, fmt: list[str]) -> None:
    # Importing any of these costs more than evaluating a small run from start to finish
    # (rich alone, warmed up, about as much as the evaluation): the table is drawn
    # without it. Nor does eval load the judge's client or the web server's event loop,
    # nor OpenSSL (hashlib's _hashlib) for the labels' fingerprint, nor shutil (with
    # zlib, bz2 and lzma) to measure a terminal for help it does not print, nor the
    # statistics of answer grades and the agreement measures they use, nor the report's
    # answer sections and per-query details (their dataclasses are built only when a
    # report has them); a table needs no json either.
    (tmp_path / "q").write_text("q1 0 a 3\nq1 0 b 0\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.4 t\n")
    argv = ["eval", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r")]
    argv += ["--metrics", "ndcg@10,recall@100,mrr", *fmt]
    unused = {"json"} if not fmt else set()
    code = (
        "import sys; from raglabel.cli.main import main; "
        f"main({argv!r}); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'polars', 'rich',"
        " 'asyncio', 'aiohttp', 'textual', 'textual_serve', 'httpx', 'jinja2', 'sqlite3',"
        f" 'sqlite_utils', 'statistics', '_hashlib', 'shutil', 'bz2', 'lzma', *{sorted(unused)!r}}}"
        " | (set(sys.modules) & {'raglabel.metrics.answer_stats', 'raglabel.metrics.agreement',"
        " 'raglabel.metrics.answer_summaries', 'raglabel.formats.report_details'}))"
        ")"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "command",
    [["export", "{db}", "--qrels", "{out}"], ["eval", "{db}"], ["backup", "{db}", "{out}"]],
)
def test_the_leads_commands_on_a_project_import_only_what_they_use(
    demo_db: Path, tmp_path: Path, command: list[str]
) -> None:
    # A lead runs these every few seconds beside a host serving a team (issue 30): each is
    # a process of its own, and pydantic's models alone cost an export --qrels half its
    # CPU. Nor do they need the app, the judge's client, polars or rich.
    argv = [part.format(db=demo_db, out=tmp_path / "out") for part in command]
    code = (
        "import sys; from raglabel.cli.main import main; "
        f"main({argv!r}); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'polars', 'rich',"
        " 'textual', 'httpx', 'asyncio', 'jinja2'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "{out}" not in command or (tmp_path / "out").stat().st_size > 0


def test_eval_pauses_the_collector_only_as_its_process_command(tmp_path: Path) -> None:
    # As the process's own command, eval runs without the cyclic collector (it walked the
    # modules again and again while they loaded); called with arguments, from Python
    # code, main() must leave the caller's collector as it was.
    (tmp_path / "q").write_text("q1 0 a 3\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 0.5 t\n")
    argv = ["eval", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r")]
    code = (
        "import gc, sys; import raglabel.cli.main as cli\n"
        "cli._exit_now = lambda code: print('collecting', gc.isenabled())\n"
        f"cli.main({argv!r}); print('called', gc.isenabled())\n"
        f"sys.argv = ['raglabel', *{argv!r}]; cli.main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    states = [line for line in out.stdout.splitlines() if line.startswith(("called", "collecting"))]
    assert states == ["called True", "collecting False"]
