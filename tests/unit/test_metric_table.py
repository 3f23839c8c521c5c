"""The metric table (raglabel/metrics/table.py) is the one place a measure's facts are
written: every measure the engine computes has a complete record there, the records say
what the engine and the name reader do, and no other module spells a display name."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import numpy as np
import pytest

from raglabel.metrics import LabelSet, MetricConfig, RankedRun, evaluate_runs
from raglabel.metrics.definitions import definition, display_name
from raglabel.metrics.names import KNOWN_METRICS, MetricKey, parse_metric_list
from raglabel.metrics.table import METRICS, TOOLS, Metric, metric

PACKAGE = Path(__file__).resolve().parents[2] / "raglabel"
TABLE = PACKAGE / "metrics" / "table.py"


def _engine_names() -> set[str]:
    """The measures the engine writes values for, read from its source: each
    ``out["name"] = ...`` and each nDCG form ``("name", gains)`` of evaluate.py."""
    tree = ast.parse((PACKAGE / "metrics" / "evaluate.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = [
                part
                for target in node.targets
                for part in (target.elts if isinstance(target, ast.Tuple) else [target])
            ]
            for target in targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "out"
                    and isinstance(target.slice, ast.Constant)
                ):
                    found.add(target.slice.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "forms"
        ):
            form = node.args[0]
            assert isinstance(form, ast.Tuple) and isinstance(form.elts[0], ast.Constant)
            found.add(form.elts[0].value)
    return found


def test_every_measure_the_engine_computes_has_a_record_and_no_other() -> None:
    engine = _engine_names()
    assert engine == {m.name for m in METRICS}
    assert tuple(m.name for m in METRICS) == KNOWN_METRICS


_FIELDS = {"top", "k", "relevant", "harm", "ctx"}


@pytest.mark.parametrize("record", METRICS, ids=lambda m: m.name)
def test_every_record_is_complete(record: Metric) -> None:
    assert record.display.strip() == record.display and record.display
    assert record.short.strip() == record.short and record.short
    assert len(record.short) <= len(record.display)
    assert record.better in ("higher", "lower")
    assert record.group in ("set", "classic", "ranking", "trec", "peer")
    assert record.uncut in ("never", "named", "grouped", "only")
    used = {name for _, name, _, _ in string.Formatter().parse(record.definition) if name}
    assert used <= _FIELDS, f"{record.name}: unknown fields {used - _FIELDS}"
    for k in (None, 5):
        text = definition(MetricKey(record.name, k), MetricConfig())
        assert text.startswith(f"{display_name(MetricKey(record.name, k))}: ")
        assert "{" not in text and len(text) > len(record.display) + 10


def test_names_are_unique_across_the_table() -> None:
    for field in ("name", "display", "short"):
        values = [getattr(m, field) for m in METRICS]
        assert len(values) == len(set(values)), field
    assert [m.name for m in METRICS if m.better == "lower"] == ["harm"]


def test_an_unknown_measure_is_named_in_the_error() -> None:
    with pytest.raises(KeyError, match=r"'mapp'.*known: ra_nwg"):
        metric("mapp")
    with pytest.raises(ValueError, match="unknown tool 'pyterrier'"):
        METRICS[0].spellings("pyterrier")


@pytest.mark.parametrize("record", METRICS, ids=lambda m: m.name)
def test_the_cutoffs_a_record_allows_are_those_the_engine_computes(record: Metric) -> None:
    labels = LabelSet(("q0", "q1"), np.array([[0, 1, 2, 0, 1, 1], [0, 0, 1, 1, 0, 2]]))
    run = RankedRun.from_lists("sys", [[5, 1, 0, 4], [2, 5, 3]], contains=[[True] * 4, [True] * 3])
    pool = {"sys": RankedRun.from_lists("pool", [[5, 4, 2], [5, 5, 3]])}
    for k, allowed in ((None, record.uncut != "never"), (3, record.uncut != "only")):
        key = MetricKey(record.name, k)
        if allowed:
            values = evaluate_runs(labels, [run], [key], pools=pool)["sys"][key]
            assert values.shape == (2,)
        else:
            with pytest.raises(KeyError):
                evaluate_runs(labels, [run], [key], pools=pool)


def _typed(spelt: str) -> str:
    """A table spelling as a user types it, with a cutoff of 7 where it takes one."""
    return spelt[:-1] + "7" if spelt.endswith(("@k", "_k")) else spelt


@pytest.mark.parametrize("record", METRICS, ids=lambda m: m.name)
def test_each_tools_spelling_in_the_table_is_read_as_its_measure(record: Metric) -> None:
    for tool in TOOLS:
        for spelt in record.spellings(tool):
            keys = parse_metric_list(_typed(spelt), [4])
            cut = 7 if spelt.endswith(("@k", "_k")) else None
            expected = MetricKey(record.name, cut)
            if cut is None and record.uncut == "never":
                expected = MetricKey(record.name, 4)
            assert keys == [expected], f"{tool}'s {spelt}"
    for word in record.words:  # words only suggest; they are not read
        assert f"did you mean '{record.name}'" in _refusal(word)


def _refusal(word: str) -> str:
    try:
        parse_metric_list(word, [4])
    except ValueError as exc:
        return str(exc)
    raise AssertionError(f"{word!r} was read as a metric")


# -- no module but the table spells a display or short name -------------------------------

#: Sentences owned by modules another change is rebuilding (the evaluation entry, the
#: command's help, the sample reader): they list measures in prose. Each pair must still
#: be found, so the list only shrinks as those sentences come to read the table.
PINNED = {
    ("analysis/checks.py", "R-precision"),
    ("analysis/metric_notes.py", "R-precision"),
    ("cli/eval_cmd.py", "RA-nWG"),
    ("cli/eval_cmd.py", "%PROC"),
    ("cli/eval_cmd.py", "Precision4+"),
    ("cli/eval_cmd.py", "R-precision"),
    ("formats/samples.py", "R-precision"),
}


def _spelling_pattern() -> tuple[re.Pattern[str], set[str]]:
    """Every display and short name that is not the measure's own name in another case
    nor a lower-case word (``recall_all`` and ``prec`` cannot be told from code and
    prose), matched in any case and with or without its dashes and underscores, so a
    variant (``NRecall4+`` for ``N-Recall4+``) is caught too; and the names that such a
    loose match may hit and that are no display name (``n_recall_5``, ``ndcg_exp``)."""
    names: set[str] = set()
    exempt: set[str] = set()
    for record in METRICS:
        exempt |= {record.name, *record.words}
        for tool in TOOLS:
            exempt |= {s[:-2] if s.endswith(("@k", "_k")) else s for s in record.spellings(tool)}
        for shown in (record.display, record.short):
            if shown.lower() != record.name and not re.fullmatch(r"[a-z_]+", shown):
                names.add(shown)
    loose = ["[-_ ]?".join(re.escape(c) for c in name if c not in "-_ ") for name in names]
    alternatives = "|".join(sorted(loose, key=len, reverse=True))
    return re.compile(rf"(?<![\w%+])(?:{alternatives})(?![\w+])", re.IGNORECASE), exempt


def _strings(path: Path) -> list[ast.Constant]:
    """The string constants of a module, f-strings' parts included, docstrings not."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def _spelt_outside_the_table() -> dict[tuple[str, str], list[int]]:
    pattern, exempt = _spelling_pattern()
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == TABLE:
            continue
        module = path.relative_to(PACKAGE).as_posix()
        for node in _strings(path):
            for match in pattern.finditer(node.value):
                if match.group(0) not in exempt:
                    found.setdefault((module, match.group(0)), []).append(node.lineno)
    return found


def test_no_module_outside_the_table_spells_a_display_name() -> None:
    found = _spelt_outside_the_table()
    spelt = {pair: lines for pair, lines in found.items() if pair not in PINNED}
    assert not spelt, (
        "display or short names written outside raglabel/metrics/table.py (module, name: "
        f"lines); read them from the table instead: {spelt}"
    )
    assert set(found) >= PINNED, f"no longer spelt, unpin: {PINNED - set(found)}"


def test_the_scan_catches_a_variant_spelling() -> None:
    """The check is no formality: the spellings the app had before the table are found."""
    pattern, exempt = _spelling_pattern()
    for variant in ("NRecall4+", "NR4+", "N-Recall5", "Prec4+", "RA-nWG@", "%PROC", "R-prec"):
        match = pattern.search(f"x {variant} y")
        assert match is not None and match.group(0) not in exempt, variant
    for name in ("n_recall_5", "ndcg_exp", "ra_nwg", "rprec", "r-precision", "pct_proc"):
        match = pattern.search(f"x {name} y")
        assert match is None or match.group(0) in exempt, name
