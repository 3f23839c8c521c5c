"""A UTF-8 byte order mark at the start of a TREC file is read as nothing, by every
strategy of the reader and every command that reads one: the ids and the figures are
those of the same file without it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from raglabel.cli.main import main
from raglabel.formats import lines
from raglabel.formats.maps import GradeMap
from raglabel.formats.trec.arrays import read_qrels_table, read_run_table
from raglabel.formats.trec.frames import read_qrels, read_run, read_run_blocks
from raglabel.formats.trec.rows import read_qrels_exactly, read_run_exactly
from raglabel.storage.judgment_import import read_judgments

BOM = "\ufeff"
QRELS = "".join(f"q{q} 0 d{q}-{d} {d % 3}\n" for q in (1, 2, 3) for d in range(4))
RUN = "".join(f"q{q} Q0 d{q}-{d} {d} {9 - d}.5 t\n" for q in (1, 2, 3) for d in range(6))
# The same lines as the exact reader alone takes them (a tab).
ODD_QRELS = QRELS.replace(" 0 ", "\t0 ", 1)
ODD_RUN = RUN.replace(" t\n", "\tt\n", 1)


def _pair(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """The file with a byte order mark, and without."""
    marked, plain = tmp_path / f"bom-{name}", tmp_path / f"plain-{name}"
    marked.write_text(BOM + text, encoding="utf-8")
    plain.write_text(text, encoding="utf-8")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    return marked, plain


@pytest.mark.parametrize("whole_file", [True, False], ids=["whole", "streamed"])
@pytest.mark.parametrize("qrels_text", [QRELS, ODD_QRELS], ids=["canonical", "exact"])
def test_qrels_strategies_drop_the_mark(
    tmp_path: Path, qrels_text: str, whole_file: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not whole_file:  # a file past the whole-file size is read line by line
        monkeypatch.setattr(lines, "_WHOLE_FILE_BYTES", 0)
    marked, plain = _pair(tmp_path, "qrels", qrels_text)
    table = read_qrels_table(marked).rows()
    expected = read_qrels_table(plain).rows()
    assert table == expected and table.qids[0] == "q1"
    assert read_qrels_exactly(marked, GradeMap()) == expected
    frame = read_qrels(marked)
    assert frame["qid"].to_list() == expected.qids
    assert frame["grade"].to_list() == expected.grades


@pytest.mark.parametrize("whole_file", [True, False], ids=["whole", "streamed"])
@pytest.mark.parametrize("run_text", [RUN, ODD_RUN], ids=["canonical", "exact"])
def test_run_strategies_drop_the_mark(
    tmp_path: Path, run_text: str, whole_file: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not whole_file:
        monkeypatch.setattr(lines, "_WHOLE_FILE_BYTES", 0)
    marked, plain = _pair(tmp_path, "run", run_text)
    table, expected = read_run_table(marked), read_run_table(plain)
    assert table.qids.tolist() == expected.qids.tolist()
    assert table.qids[0] == b"q1"
    assert read_run_exactly(marked) == read_run_exactly(plain)
    assert read_run(marked)["qid"].cast(str).to_list() == [q.decode() for q in expected.qids]
    # Blocks of two queries at most, so the file is read in several.
    blocks = [b for b in read_run_blocks(marked, 300) if b is not None]
    plain_blocks = [b for b in read_run_blocks(plain, 300) if b is not None]
    assert [b["qid"].to_list() for b in blocks] == [b["qid"].to_list() for b in plain_blocks]
    if run_text == RUN:  # a block with the tab is left to the exact reader
        assert len(blocks) > 1 and blocks[0]["qid"][0] == "q1"


@pytest.mark.parametrize("reader", ["python", "polars"])
def test_eval_reads_marked_files_as_plain_ones(
    tmp_path: Path, reader: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def figures(qrels: Path, run: Path) -> dict[str, object]:
        out = tmp_path / f"{qrels.name}-{reader}.json"
        argv = ["eval", "--qrels", str(qrels), "--run", f"r={run}", "--per-query"]
        assert main([*argv, "--reader", reader, "--format", "json", "-o", str(out)]) == 0
        report: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
        config = report["config"]
        assert isinstance(config, dict) and config.pop("labels") == str(qrels)  # differs
        return report

    marked_qrels, plain_qrels = _pair(tmp_path, "qrels", QRELS)
    marked_run, plain_run = _pair(tmp_path, "run", RUN)
    with_mark = figures(marked_qrels, marked_run)
    captured = capsys.readouterr()
    assert BOM not in captured.err and "unknown" not in captured.err
    assert BOM not in json.dumps(with_mark, ensure_ascii=False)
    assert with_mark == figures(plain_qrels, plain_run)


def _stored_queries(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return [row[0] for row in connection.execute("SELECT ext_id FROM query ORDER BY ext_id")]


def test_import_stores_ids_without_the_mark(tmp_path: Path) -> None:
    marked_qrels, _ = _pair(tmp_path, "qrels", QRELS)
    marked_run, _ = _pair(tmp_path, "run", RUN)
    db = tmp_path / "p.db"
    assert main(["init", str(db)]) == 0
    argv = ["import", str(db), "--qrels", str(marked_qrels), "--annotator", "a"]
    assert main([*argv, "--run", f"r={marked_run}"]) == 0
    assert _stored_queries(db) == ["q1", "q2", "q3"]
    judged, _ = _pair(tmp_path, "judge.qrels", QRELS)
    assert main(["import", str(db), "--judgments", f"m={judged}"]) == 0
    assert _stored_queries(db) == ["q1", "q2", "q3"]


def test_judgments_file_reads_as_plain(tmp_path: Path) -> None:
    marked, plain = _pair(tmp_path, "judge.qrels", QRELS)
    labels, expected = read_judgments("m", marked), read_judgments("m", plain)
    assert (labels.qids, labels.docids, labels.grades) == (
        expected.qids,
        expected.docids,
        expected.grades,
    )
    assert labels.format == expected.format
