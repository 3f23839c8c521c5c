"""``raglabel agree DB --answers``: every alpha against the ``krippendorff`` package on
matrices built here from the same grades, and the counts beside them."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import krippendorff
import numpy as np
import pytest
from test_eval_answers import BOB, HUMAN, N, build, human_grade, judge, judge_grade, judgments
from test_eval_answers import raglabel as run_raglabel

if TYPE_CHECKING:
    from cli_helpers import Cli

DOMAIN = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = build(tmp_path_factory.mktemp("agree"), run_raglabel)
    judge(db, judgments())
    return db


def _alpha(rows: Sequence[Sequence[float]]) -> float:
    return float(
        krippendorff.alpha(
            reliability_data=np.array(rows, dtype=float),
            level_of_measurement="ordinal",
            value_domain=DOMAIN,
        )
    )


def _agree(cli: Cli, db: Path, *extra: str) -> dict[str, Any]:
    code, out, err = cli("agree", db, "--answers", "--format", "json", *extra)
    assert code == 0, err
    assert "NaN" not in out
    data: dict[str, Any] = json.loads(out)
    return data


def resolved_human() -> list[int]:
    return [1] * BOB + [human_grade(i) for i in range(BOB, HUMAN)]


def test_alphas_equal_the_krippendorff_package(project: Path, cli: Cli) -> None:
    faith = _agree(cli, project)["answers"]["faithfulness"]
    human = resolved_human()
    judged = [judge_grade(i) for i in range(HUMAN)]
    vs = faith["judge_vs_human"]
    assert vs["items"] == HUMAN
    assert vs["alpha"] == pytest.approx(_alpha([judged, human]), abs=1e-12)
    assert vs["ci"][0] <= vs["ci"][1]
    # Among humans: ann on 34 samples, bob on 3 of them; single ratings cannot pair.
    ann = [float(human_grade(i)) for i in range(HUMAN)]
    bob = [1.0] * BOB + [np.nan] * (HUMAN - BOB)
    assert faith["humans"]["items"] == BOB
    assert faith["humans"]["alpha"] == pytest.approx(_alpha([ann, bob]), abs=1e-12)
    # Repeats: (sample, model) units; m1 answered twice on alpha's 37 judged samples.
    first = [float(judge_grade(i)) for i in range(N - 3)]
    second = [float(min(5, judge_grade(i) + 1)) for i in range(N - 3)]
    assert faith["repeats"]["items"] == N - 3
    assert faith["repeats"]["alpha"] == pytest.approx(_alpha([first, second]), abs=1e-12)
    # Models: m1's lower median (g of g, g + 1) against m2's g: perfect agreement.
    assert faith["models"]["items"] == N - 3
    assert faith["models"]["alpha"] == pytest.approx(1.0)


def test_exact_within_one_confusion_and_gaps(project: Path, cli: Cli) -> None:
    faith = _agree(cli, project, "--top", "3")["answers"]["faithfulness"]
    human = resolved_human()
    judged = [judge_grade(i) for i in range(HUMAN)]
    gaps = [j - h for j, h in zip(judged, human, strict=True)]
    assert faith["exact"] == pytest.approx(sum(g == 0 for g in gaps) / HUMAN)
    assert faith["within_one"] == pytest.approx(sum(abs(g) <= 1 for g in gaps) / HUMAN)
    assert faith["bias"] == pytest.approx(sum(gaps) / HUMAN)
    table = [[0] * 5 for _ in range(5)]
    for j, h in zip(judged, human, strict=True):
        table[h - 1][j - 1] += 1
    assert faith["confusion"] == table
    shown = faith["gaps"]
    assert len(shown) == 3
    assert [abs(g["gap"]) for g in shown] == sorted((abs(g) for g in gaps), reverse=True)[:3]
    for g in shown:
        i = int(g["sample_id"][1:])
        assert (g["system"], g["human"], g["judge"]) == ("alpha", human[i], judged[i])
    # No grades at all for the other criteria: everything NA, nothing invented.
    relevancy = _agree(cli, project)["answers"]["answer_relevancy"]
    assert relevancy["judge_vs_human"] == {"alpha": None, "ci": None, "items": 0}
    assert relevancy["confusion"] is None and relevancy["exact"] is None


def test_table_markdown_and_errors(project: Path, cli: Cli, tmp_path: Path) -> None:
    code, table, _ = cli("agree", project, "--answers")
    assert code == 0
    assert "faithfulness: Krippendorff's alpha (ordinal)" in table
    assert "among humans (ceiling)" in table and "largest judge-human gaps" in table
    code, markdown, _ = cli("agree", project, "--answers", "--format", "markdown")
    assert code == 0 and "### faithfulness" in markdown and "| judge vs humans |" in markdown
    # Every table ends at a blank line: a line right under one would render as a row.
    lines = markdown.splitlines()
    for before, after in itertools.pairwise(lines):
        if before.startswith("|") and after.strip():
            assert after.startswith("|"), (before, after)
    code, plain, _ = cli("agree", project, "--format", "json")
    assert code == 0 and json.loads(plain)["answers"] is None
    empty = tmp_path / "empty.db"
    assert cli("init", empty)[0] == 0
    code, _, err = cli("agree", empty, "--answers")
    assert code == 2 and "no answer systems" in err
