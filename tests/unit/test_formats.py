"""Reading TREC runs, qrels and samples: canonical files, odd ones, and every error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from raglabel.errors import InputError
from raglabel.formats.limits import MAX_ID_CHARS
from raglabel.formats.maps import GradeMap, parse_gain_map, parse_grade_map
from raglabel.formats.samples import read_samples
from raglabel.formats.text import normalize
from raglabel.formats.trec.align import Alignment
from raglabel.formats.trec.arrays import align_qrels, read_qrels_table, read_run_table
from raglabel.formats.trec.frames import read_qrels, read_run


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def test_run_skips_comments_blank_lines_and_extra_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.run",
        "# header\nq1 Q0 d1 1 2E-1 tag extra fields\n\nq1 Q0 d#2 2 0.1 tag\n  # indented\n",
    )
    assert read_run(path).rows() == [("q1", "d1", 0.2), ("q1", "d#2", 0.1)]


@pytest.mark.parametrize(
    "content",
    [
        "q1\tQ0\td1\t1\t0.5\tt\r\nq1 Q0 d2 2 0.25 t\r\n",
        "q1  Q0   d1 1 0.5 t\n   q1 Q0 d2 2 0.25 t\n",
    ],
    ids=["tabs-crlf", "runs-of-spaces"],
)
def test_run_accepts_any_whitespace(tmp_path: Path, content: str) -> None:
    assert read_run(write(tmp_path, "r.run", content)).rows() == [
        ("q1", "d1", 0.5),
        ("q1", "d2", 0.25),
    ]


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", 2, "expected 6 fields"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n", 2, "score 'high' is not a number"),
        ("q1 Q0 d1 1 nan t\n", 1, "not a finite number"),
        ("q1 Q0 d1 1 1e999 t\n", 1, "not a finite number"),
        (b"q1 Q0 d1 1 0.5 t\nq\xff Q0 d2 2 0.4 t\n", 2, "not valid UTF-8"),
        (b"q1 Q0 d\x001 1 0.5 t\n", 1, "NUL byte"),
    ],
    ids=["short-line", "bad-score", "nan", "huge", "bad-utf8", "nul"],
)
@pytest.mark.parametrize("reader", [read_run, read_run_table], ids=["polars", "python"])
def test_run_errors_name_the_line(
    tmp_path: Path, content: str | bytes, line: int, fragment: str, reader: Callable[[Path], object]
) -> None:
    path = write(tmp_path, "bad.run", content)
    with pytest.raises(InputError) as caught:
        reader(path)
    assert caught.value.line == line
    assert fragment in caught.value.message
    assert str(caught.value).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize("content", ["", "# only a comment\n\n"])
def test_empty_files_are_errors(tmp_path: Path, content: str) -> None:
    for read in (read_run, read_run_table, read_qrels, read_qrels_table):
        with pytest.raises(InputError, match="empty"):
            read(write(tmp_path, "e.txt", content))


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_run(tmp_path / "nope.run")


def test_qrels_default_map_is_trec_scale(tmp_path: Path) -> None:
    path = write(tmp_path, "q", "q1 0 a 0\nq1 0 b 1\nq1 0 c 2\nq1 0 d 3\nq1 0 e -1\nq1 0 f -2\n")
    assert read_qrels(path)["grade"].to_list() == [2, 3, 4, 5, 1, 1]


@pytest.mark.parametrize("reader", [read_qrels, read_qrels_table], ids=["polars", "python"])
def test_qrels_label_outside_the_map_names_line_and_option(
    tmp_path: Path, reader: Callable[[Path], object]
) -> None:
    path = write(tmp_path, "q", "q1 0 a 0\n# note\nq1 0 b 4\n")
    with pytest.raises(InputError) as caught:
        reader(path)
    assert caught.value.line == 3
    assert "--grade-map" in caught.value.message


def test_qrels_binary_map(tmp_path: Path) -> None:
    path = write(tmp_path, "q", "q1 0 a 0\nq1 0 b 1\n")
    assert read_qrels(path, parse_grade_map("0:2,1:5"))["grade"].to_list() == [2, 5]
    with pytest.raises(InputError, match="not covered"):
        read_qrels(write(tmp_path, "q2", "q1 0 a -1\n"), parse_grade_map("0:2,1:5"))


@pytest.mark.parametrize(
    "reader", [read_qrels, read_qrels_table, align_qrels], ids=["polars", "table", "aligned"]
)
def test_a_qrels_id_past_the_limit_is_an_error_on_every_path(
    tmp_path: Path, reader: Callable[[Path, GradeMap], object]
) -> None:
    # A plain file, so the numpy strategy cuts it: the evaluation's path once took the
    # long id where an import refused it.
    path = write(tmp_path, "q", f"q1 0 a 1\nq1 0 {'d' * (MAX_ID_CHARS + 1)} 2\n")
    with pytest.raises(InputError, match="at most 1024 characters") as caught:
        reader(path, GradeMap())
    assert caught.value.line == 2


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("q1 0 a 1\nq1 0 b 1.5\n", 2, "not an integer"),
        ("q1 0 a\n", 1, "expected 4 fields"),
        ("q1 0 a 1\nq1 0 b 2\nq1 0 a 3\n", 3, "judged twice"),
    ],
)
@pytest.mark.parametrize("reader", [read_qrels, read_qrels_table], ids=["polars", "python"])
def test_qrels_errors(
    tmp_path: Path, content: str, line: int, fragment: str, reader: Callable[[Path], object]
) -> None:
    with pytest.raises(InputError) as caught:
        reader(write(tmp_path, "q", content))
    assert caught.value.line == line
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("0:2,1", "not a from:to pair"), ("a:2", "integer label"), ("0:9", "outside grades")],
)
def test_grade_map_errors(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_grade_map(text)


def test_gain_map_needs_every_grade() -> None:
    assert parse_gain_map("1:0,2:0,3:1,4:3,5:7")[5] == 7.0
    with pytest.raises(ValueError, match="missing"):
        parse_gain_map("1:0,2:0")


def test_grade_map_apply_flags_uncovered() -> None:
    grades, uncovered = GradeMap().apply(np.array([0, 3, -5, 4]))
    assert grades.tolist()[:3] == [2, 5, 1]
    assert uncovered.tolist() == [False, False, False, True]


def _align(tmp_path: Path, qrels: str) -> Alignment:
    return Alignment.from_qrels(read_qrels(write(tmp_path, "q", qrels)))


def test_ties_break_by_docid_descending_as_bytes(tmp_path: Path) -> None:
    align = _align(tmp_path, "q1 0 b 3\nq1 0 a 2\nq1 0 c 1\nq1 0 \u00e9 0\n")
    # Equal scores: trec_eval puts the larger id first (byte order: é, c, b, a).
    run = align.run(
        "r",
        read_run(
            write(
                tmp_path, "r", "q1 Q0 a 1 1 t\nq1 Q0 b 2 1 t\nq1 Q0 c 3 1 t\nq1 Q0 \u00e9 4 1 t\n"
            )
        ),
    )
    assert run.grades.tolist() == [2, 3, 5, 4]


def test_rank_column_is_ignored_and_file_order_does_not_matter(tmp_path: Path) -> None:
    align = _align(tmp_path, "q1 0 a 3\nq1 0 b 1\nq2 0 c 2\n")
    shuffled = "q2 Q0 c 1 0.1 t\nq1 Q0 b 1 0.2 t\nq1 Q0 a 2 0.9 t\n"
    run = align.run("r", read_run(write(tmp_path, "r", shuffled)))
    assert run.offsets.tolist() == [0, 2, 3]
    assert run.grades.tolist() == [5, 3, 4]


def test_duplicates_keep_best_ranked_and_warn(tmp_path: Path) -> None:
    align = _align(tmp_path, "q1 0 a 3\nq1 0 b 1\n")
    run = align.run(
        "r", read_run(write(tmp_path, "r", "q1 Q0 a 1 0.2 t\nq1 Q0 b 2 0.5 t\nq1 Q0 a 3 0.9 t\n"))
    )
    assert run.grades.tolist() == [5, 3]
    assert any("repeated passage" in w and "a in q1" in w for w in align.warnings)


def test_unknown_queries_are_skipped_with_a_warning(tmp_path: Path) -> None:
    align = _align(tmp_path, "q1 0 a 3\n")
    run = align.run("r", read_run(write(tmp_path, "r", "q1 Q0 a 1 1 t\nq9 Q0 a 1 1 t\n")))
    assert run.n_queries == 1 and run.grades.tolist() == [5]
    assert any("q9" in w and "not in the labels" in w for w in align.warnings)


def test_query_missing_from_run_has_an_empty_slot(tmp_path: Path) -> None:
    align = _align(tmp_path, "q1 0 a 3\nq2 0 b 3\n")
    run = align.run("r", read_run(write(tmp_path, "r", "q2 Q0 b 1 1 t\n")))
    assert run.offsets.tolist() == [0, 0, 1]


def test_normalize_folds_case_width_and_space() -> None:
    assert normalize("  The\u00a0ANSWER\n is  \uff14\uff12 ") == "the answer is 42"


def test_samples_are_read_and_matched(tmp_path: Path) -> None:
    lines = [
        '{"id": "q1", "input": {"question": "?"}, "expected_output": {"a": 5, "b": 2},'
        ' "actual_output": {"retrieved": [{"id": "b", "text": "nothing"},'
        ' {"id": "a", "text": "The answer is 42."}]}, "expected_answer": "answer is 42",'
        ' "metadata": {"k": 1}}',
        '{"id": 2, "input": {"question": "?"}, "expected_output": ["x"],'
        ' "actual_output": ["y", "x"]}',
    ]
    samples = read_samples(write(tmp_path, "s.jsonl", "\n".join(lines) + "\n"))
    qrels = samples.qrels
    assert list(zip(qrels.qids, qrels.docids, qrels.grades, strict=True)) == [
        ("q1", "a", 5),
        ("q1", "b", 2),
        ("2", "x", 5),
    ]
    assert samples.run.contains is not None
    assert samples.run.contains.tolist() == [False, True, False, False]
    assert samples.k_override == {"q1": 1}
    assert samples.answered == {"q1"}


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"id": "q", "input": {}, "expected_output": [], "actual_output": []}', "input.question"),
        (
            '{"id": "q", "input": {"question": "?"}, "expected_output": {"a": 9},'
            ' "actual_output": []}',
            "outside 1-5",
        ),
        (
            '{"id": "q", "input": {"question": "?"}, "expected_output": [],'
            ' "actual_output": [], "metadata": {"k": 0}}',
            "metadata.k",
        ),
    ],
)
def test_samples_errors_name_line_and_field(tmp_path: Path, line: str, fragment: str) -> None:
    good = '{"id": "q0", "input": {"question": "?"}, "expected_output": [], "actual_output": []}'
    path = write(tmp_path, "s.jsonl", good + "\n" + line + "\n")
    with pytest.raises(InputError) as caught:
        read_samples(path)
    assert caught.value.line == 2
    assert fragment in caught.value.message


def test_samples_duplicate_id(tmp_path: Path) -> None:
    good = '{"id": "q0", "input": {"question": "?"}, "expected_output": [], "actual_output": []}'
    with pytest.raises(InputError, match="already used on line 1"):
        read_samples(write(tmp_path, "s.jsonl", good + "\n" + good + "\n"))
