"""Options say their limits the same way: a grade threshold off the scale is refused as
the command line is read, with the usage line and the wording of every whole-number
option; ``--top-runs`` says in its help that it takes at least 3."""

from __future__ import annotations

import pytest

from raglabel.cli.main import main


@pytest.mark.parametrize("command", ["agree", "eval", "label"])
@pytest.mark.parametrize(
    ("option", "value"),
    [("--relevance-threshold", "0"), ("--relevance-threshold", "6"), ("--harm-threshold", "0")],
)
def test_a_grade_threshold_off_the_scale_is_a_usage_error(
    command: str, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([command, "no-such.db", option, value])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: raglabel {command} ")
    assert err.endswith(
        f"raglabel {command}: error: argument {option}: must be a whole number"
        f" from 1 to 5, got {value}\n"
    )
    assert "Input should be" not in err


def test_top_runs_help_says_its_least_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["agree", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "N is at least 3" in help_text
    with pytest.raises(SystemExit):
        main(["agree", "no-such.db", "--top-runs", "2"])
    assert "must be a whole number from 3 to 100,000, got 2" in capsys.readouterr().err
