"""A run given as qrels (or qrels as a run) is named as such, whatever its ranks; grade
maps are read as every report prints them and with a negative first label after a space
(issue 26, §2). On trec_eval's own test files where the issue names them."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import raglabel
from raglabel.cli.arguments import join_dash_values
from raglabel.formats.maps import GradeMap, parse_grade_map

if TYPE_CHECKING:
    from cli_helpers import Cli

TREC_EVAL = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
QRELS, RESULTS = TREC_EVAL / "qrels.test", TREC_EVAL / "results.test"
READERS = ("python", "polars")


# ------------------------------------------------------------- runs and qrels swapped


@pytest.mark.parametrize("reader", READERS)
def test_trec_evals_results_given_as_qrels_is_named_a_run(cli: Cli, reader: str) -> None:
    code, out, err = cli("eval", "--qrels", RESULTS, "--run", RESULTS, "--reader", reader)
    assert code == 2 and out == ""
    assert f"{RESULTS}:1: looks like a run (qid Q0 docid rank score tag" in err
    assert "give runs as --run and the labels as --qrels" in err
    assert "grade map" not in err  # its rank 104 is not taken for a relevance label


@pytest.mark.parametrize("reader", READERS)
def test_a_run_whose_ranks_the_grade_map_covers_is_still_a_run(
    cli: Cli, tmp_path: Path, reader: str
) -> None:
    # Ranks 1 to 3 are labels the default map covers: read as qrels, they would grade.
    head = tmp_path / "head.run"
    kept: dict[str, int] = {}
    with head.open("w") as out:
        for line in RESULTS.read_text().splitlines():
            qid, q0, docid, _, score, tag = line.split()
            kept[qid] = rank = kept.get(qid, 0) + 1
            if rank <= 3:
                out.write(f"{qid} {q0} {docid} {rank} {score} {tag}\n")
    code, out, err = cli("eval", "--qrels", head, "--run", RESULTS, "--reader", reader)
    assert code == 2 and out == ""
    assert "looks like a run" in err


def test_import_refuses_a_run_given_as_qrels(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--qrels", RESULTS)
    assert code == 2
    assert "looks like a run" in err and "grade map" not in err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM query").fetchone() == (0,)


@pytest.mark.parametrize("reader", READERS)
def test_trec_evals_qrels_given_as_a_run_is_named_qrels(cli: Cli, reader: str) -> None:
    code, _, err = cli("eval", "--qrels", QRELS, "--run", QRELS, "--reader", reader)
    assert code == 2
    assert "looks like qrels (qid iteration docid relevance), not a run" in err


def test_import_names_qrels_given_as_a_run(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--run", QRELS)
    assert code == 2
    assert f"{QRELS}:1: expected 6 fields" in err and "looks like qrels" in err


def test_qrels_with_q0_and_four_fields_are_still_qrels(cli: Cli, tmp_path: Path) -> None:
    qrels = tmp_path / "q0.qrels"
    qrels.write_text(
        "".join(
            f"{q} Q0 {d} {g}\n" for q, _, d, g in map(str.split, QRELS.read_text().splitlines())
        )
    )
    code, _, err = cli("eval", "--qrels", qrels, "--run", RESULTS, "--metrics", "ndcg")
    assert code == 0, err


# ------------------------------------------------------------------------ grade maps


def eval_json(cli: Cli, *args: str | Path) -> dict[str, object]:
    code, out, err = cli("eval", "--qrels", QRELS, "--run", RESULTS, *args, "--format", "json")
    assert code == 0, err
    report: dict[str, object] = json.loads(out)
    return report


def test_a_negative_first_label_works_after_a_space(cli: Cli) -> None:
    spaced = eval_json(cli, "--metrics", "map,ndcg", "--grade-map", "-1:1,0:2,1:5")
    joined = eval_json(cli, "--metrics", "map,ndcg", "--grade-map=-1:1,0:2,1:5")
    assert spaced["runs"] == joined["runs"]
    assert spaced["config"]["grade_map"] == "-1:1,0:2,1:5"  # type: ignore[index]


def test_a_negative_first_label_works_through_the_api_and_import(cli: Cli, tmp_path: Path) -> None:
    report = raglabel.evaluate(QRELS, RESULTS, metrics="map", grade_map="-1:1,0:2,1:5")
    assert report.means["run"]["ap"] is not None
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--qrels", QRELS, "--grade-map", "-1:1,0:2,1:5")
    assert code == 0, err


def test_the_map_every_report_prints_is_accepted_back(cli: Cli, tmp_path: Path) -> None:
    default = eval_json(cli, "--metrics", "map,ndcg@10", "--relevance-threshold", "3")
    printed = default["config"]["grade_map"]  # type: ignore[index]
    assert printed == "0:2,1:3,2:4,3:5,<0:1"
    again = eval_json(
        cli, "--metrics", "map,ndcg@10", "--relevance-threshold", "3", "--grade-map", printed
    )
    assert again["runs"] == default["runs"]
    assert again["config"]["grade_map"] == printed  # type: ignore[index]
    # <0:G grades every negative label the map does not name, as -1:G names one.
    negative = tmp_path / "negative.qrels"
    lines = QRELS.read_text().splitlines()
    negative.write_text(
        "".join(f"{line[:-1]}-1\n" if line.endswith(" 0") else f"{line}\n" for line in lines[:400])
    )
    named = ("--qrels", negative, "--run", RESULTS, "--metrics", "bpref,ndcg", "--format", "json")
    code_a, a, _ = cli("eval", *named, "--grade-map", "-1:1,1:5")
    code_b, b, _ = cli("eval", *named, "--grade-map", "1:5,<0:1")
    assert code_a == code_b == 0
    assert json.loads(a)["runs"] == json.loads(b)["runs"]


@pytest.mark.parametrize(
    "text", ["0:2,1:3,2:4,3:5,<0:1", "-1:1,0:2,1:5", "1:5,<0:2", "0:1,1:5", "< 0 : 3,2:5"]
)
def test_described_maps_read_back_the_same(text: str) -> None:
    grade_map = parse_grade_map(text)
    assert parse_grade_map(grade_map.describe()).describe() == grade_map.describe()
    assert GradeMap().describe() == parse_grade_map(GradeMap().describe()).describe()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("0:2,<0:1,<0:2", "<0 (the negative labels) is mapped twice"),
        ("0:2,<0:9", "maps to 9, outside grades 1-5"),
        ("0:2,<0:x", "must map to a grade"),
        ("<1:2", "must map an integer label to a grade"),
    ],
)
def test_bad_negative_parts_are_refused(cli: Cli, text: str, said: str) -> None:
    code, _, err = cli("eval", "--qrels", QRELS, "--run", RESULTS, "--grade-map", text)
    assert code == 2 and said in err


def test_joining_keeps_everything_else_as_it_was() -> None:
    assert join_dash_values(["eval", "--grade-map", "-1:1,0:2"]) == ["eval", "--grade-map=-1:1,0:2"]
    assert join_dash_values(["--grade-map", "0:2"]) == ["--grade-map", "0:2"]
    assert join_dash_values(["--grade-map", "-k"]) == ["--grade-map", "-k"]  # an option
    assert join_dash_values(["--grade-map"]) == ["--grade-map"]
    assert join_dash_values(["--", "--grade-map", "-1:1"]) == ["--", "--grade-map", "-1:1"]
    # argparse's abbreviation is read alike; "--" after the option still ends the options.
    assert join_dash_values(["--grade", "-1:1,0:2"]) == ["--grade=-1:1,0:2"]
    assert join_dash_values(["--gr", "-1:1"]) == ["--gr", "-1:1"]  # too short to be sure
    assert join_dash_values(["--grade-map", "--", "-1:1"]) == ["--grade-map", "--", "-1:1"]


def test_no_other_option_starts_as_the_grade_map_abbreviation() -> None:
    from raglabel.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in commands.choices.values():
        for option in command._option_string_actions:
            if option.startswith("--grade"):
                assert option == "--grade-map", option
