"""``eval --estimate corrected`` on the LLMJudge slice (tests/data/llmjudge, NOTICE.md
there): NIST's labels come in as a person's qrels (``import --qrels --annotator``), the two
model label sets as judgments, and a draw of every query is complete by NIST's grades."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cli_helpers import Cli

SLICE = Path(__file__).parents[1] / "data" / "llmjudge"
RUNS = sorted((SLICE / "runs").glob("*.run"))


def project(cli: Cli, db: Path, qrels: Path) -> None:
    assert cli("init", db)[0] == 0
    judgments = [f"{name}={SLICE / f'{name}.qrels'}" for name in ("umbrela1", "gpt4o")]
    code, _, err = cli(
        "import", db, "--qrels", qrels, "--annotator", "nist",
        "--judgments", judgments[0], "--judgments", judgments[1],
        "--run", *RUNS,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = cli("audit", db, "--sample", "10", "--seed", "1")
    assert code == 0, err


def test_nist_qrels_complete_every_drawn_query(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "lj.db"
    project(cli, db, SLICE / "humans.qrels")
    code, out, err = cli("audit", db, "--list", "--format", "json")
    assert code == 0, err
    listed = json.loads(out)
    assert (len(listed["complete"]), listed["incomplete"]) == (10, [])
    code, out, err = cli(
        "eval", db, "--estimate", "corrected", "--compare", "--metrics", "ndcg@5",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["estimate"]["complete"] == 10
    assert report["estimate"]["incomplete"] == []
    assert len(report["compare"]) == 15  # every pair of the six runs


def test_with_every_query_drawn_the_refusal_names_the_incomplete_ones(
    cli: Cli, tmp_path: Path
) -> None:
    """No query is left to draw: the refusal must not ask for a draw."""
    # bm25's first passage for q0 and for q1 left ungraded.
    ranked = [line.split() for line in (SLICE / "runs" / "bm25.run").read_text().splitlines()]
    dropped = {(r[0], r[2]) for r in ranked if r[0] in ("q0", "q1") and r[3] == "1"}
    assert len(dropped) == 2
    lines = (SLICE / "humans.qrels").read_text().splitlines()
    partial = tmp_path / "partial.qrels"
    partial.write_text(
        "".join(f"{line}\n" for line in lines if (line.split()[0], line.split()[2]) not in dropped)
    )
    db = tmp_path / "lj.db"
    project(cli, db, partial)
    code, out, err = cli("eval", db, "--estimate", "corrected", "--metrics", "ndcg@5")
    assert code == 2 and out == ""
    assert "only 8 complete drawn queries" in err
    assert "draw more" not in err and "--sample" not in err
    assert "every query the runs cover is drawn" in err
    assert "grade 2 more of the drawn ones in full; not complete: q0, q1" in err


def test_too_few_queries_to_ever_complete_ten_says_so(cli: Cli, tmp_path: Path) -> None:
    """Eight queries covered, all drawn and complete: no draw or grade gives ten."""
    keep = sorted({line.split()[0] for line in (SLICE / "humans.qrels").read_text().splitlines()})
    keep = keep[:8]
    runs = []
    for path in RUNS:
        lines = [line for line in path.read_text().splitlines() if line.split()[0] in keep]
        runs.append(tmp_path / path.name)
        runs[-1].write_text("".join(f"{line}\n" for line in lines))
    db = tmp_path / "eight.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli(
        "import", db, "--qrels", SLICE / "humans.qrels", "--annotator", "nist",
        "--judgments", f"gpt4o={SLICE / 'gpt4o.qrels'}", "--run", *runs,
    )  # fmt: skip
    assert code == 0, err
    assert cli("audit", db, "--sample", "8", "--seed", "1")[0] == 0
    code, out, err = cli("eval", db, "--estimate", "corrected", "--metrics", "ndcg@5")
    assert code == 2 and out == ""
    assert "only 8 complete drawn queries" in err and "--sample" not in err
    assert "even with all of them complete there would be fewer than 10" in err
    assert "use --estimate human or judge" in err
