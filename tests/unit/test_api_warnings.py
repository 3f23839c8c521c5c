"""Every warning ``raglabel eval`` prints is a ``RaglabelWarning`` from the Python API,
so a notebook shows it; a fix is worded as the keyword the API takes."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import raglabel
from raglabel.errors import RaglabelWarning

if TYPE_CHECKING:
    from cli_helpers import Cli

# The issue's own example: binary labels, which the default map reads as grades 2 and 3,
# below the relevance threshold of 4, so every binary metric is NA while nDCG is 1.0.
BINARY = {"q1": {"d1": 1, "d2": 0}}
RUN = {"q1": {"d1": 2.0, "d2": 1.0}}


def test_binary_labels_warn_with_the_keyword_that_fixes_them() -> None:
    with pytest.warns(RaglabelWarning, match=r'Binary qrels want grade_map="0:2,1:5"') as caught:
        report = raglabel.evaluate(BINARY, RUN, metrics="ap,ndcg@10,mrr")
    assert report.means == {"run": {"ap": None, "ndcg@10": 1.0, "mrr": None}}
    said = [w for w in caught if issubclass(w.category, RaglabelWarning)]
    assert len(said) == 1
    assert "--grade-map" not in str(said[0].message)
    # Attributed to the caller's line, not to raglabel's insides.
    assert said[0].filename == __file__
    assert raglabel.RaglabelWarning is RaglabelWarning
    assert issubclass(RaglabelWarning, UserWarning)


def test_the_fix_the_warning_names_works_and_says_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RaglabelWarning)
        report = raglabel.evaluate(BINARY, RUN, metrics="ap,ndcg@10,mrr", grade_map="0:2,1:5")
    assert report.means == {"run": {"ap": 1.0, "ndcg@10": 1.0, "mrr": 1.0}}


def test_other_labels_below_the_threshold_name_the_keywords_too() -> None:
    # Grades up to 3 from a map of the user's: the threshold is the fix, as a keyword.
    with pytest.warns(RaglabelWarning, match=r"try relevance_threshold=3 or a grade_map that"):
        raglabel.evaluate(BINARY, RUN, metrics="ap", grade_map="0:1,1:3")


def test_the_command_line_still_names_its_option(cli: Cli, tmp_path: Path) -> None:
    # After the API has worded a fix its way in this process, the command words its own.
    with pytest.warns(RaglabelWarning):
        raglabel.evaluate(BINARY, RUN, metrics="ap")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n")
    code, _, err = cli("eval", "--qrels", qrels, "--run", run, "--metrics", "ap")
    assert code == 0, err
    assert "Binary qrels want --grade-map 0:2,1:5" in err
    assert "grade_map=" not in err


def test_every_warning_in_the_document_is_raised(cli: Cli, tmp_path: Path) -> None:
    qrels = {"q1": {"d1": 3}, "q2": {"d2": 3}, "q3": {"d3": 3}}
    # One run retrieves for a third of the queries, another for none of them.
    runs = {"some": {"q1": {"d1": 1.0}}, "none": {"x9": {"d1": 1.0}}}
    with pytest.warns(RaglabelWarning) as caught:
        report = raglabel.evaluate(qrels, runs, metrics="mrr")
    raised = [str(w.message) for w in caught if issubclass(w.category, RaglabelWarning)]
    assert raised == report.data.warnings
    assert any("retrieves nothing for 2 of the 3 labeled queries" in text for text in raised)
    assert any("'none' shares no query with the labels" in text for text in raised)
    # The command prints the same ones for the same rows written as files.
    (tmp_path / "qrels.txt").write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    argv = ["eval", "--qrels", tmp_path / "qrels.txt", "--metrics", "mrr", "--format", "json"]
    for name, run in runs.items():
        path = tmp_path / f"{name}.run"
        path.write_text(
            "".join(f"{q} Q0 {d} 1 {s!r} x\n" for q, docs in run.items() for d, s in docs.items())
        )
        argv += ["--run", f"{name}={path}"]
    code, out, err = cli(*argv)
    assert code == 0, err
    assert json.loads(out)["warnings"] == raised


def test_to_html_repeats_no_warning_evaluate_gave() -> None:
    with pytest.warns(RaglabelWarning, match="no label reaches the relevance threshold"):
        report = raglabel.evaluate(BINARY, {"a": RUN, "b": RUN}, metrics="ap,ndcg@10")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RaglabelWarning)
        page = report.to_html()
    assert page.startswith("<!DOCTYPE html>")
