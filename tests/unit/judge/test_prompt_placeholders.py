"""A prompt file's names in braces: each is a placeholder, or the file is refused when
it is read (naming the line), so that a typo never reaches the model as text. Braces
around anything else are text, and doubled braces send a name as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from raglabel.cli.main import main
from raglabel.errors import InputError
from raglabel.judge.prompt import Template

BODY = "Query: {query}\n{fence}\n{title}{passage}\n{fence}\n"
HEADER = '+++\nscale = [0, 1, 2, 3]\nreply = "final-score"\n+++\n'


def _refused(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        Template.from_text(text, "p.prompt")
    return caught.value


def test_an_unknown_name_is_refused_with_its_line_and_the_placeholders() -> None:
    error = _refused(BODY + "Answer in {language}.\n")
    assert error.source == "p.prompt" and error.line == 5
    assert "{language} is not a placeholder" in error.message
    assert "{query}, {passage}, {fence}, {title}" in error.message
    assert "{{language}}" in error.message


def test_a_typo_is_named_with_the_placeholder_it_is_close_to() -> None:
    error = _refused(BODY.replace("{title}", "{titel}"))
    assert error.line == 3
    assert "{titel} is not a placeholder (did you mean {title}?)" in error.message
    # Case counts: {Query} is not {query}.
    assert "{Query}" in _refused(BODY + "{Query}\n").message


def test_lines_count_from_the_top_of_the_file_header_included() -> None:
    error = _refused(HEADER + BODY + "##final score: N {foo}\n")
    assert error.line == 9


def test_json_examples_stay_as_written_and_doubled_braces_send_a_name() -> None:
    text = BODY + 'Reply {"grade": 3} or {{passage}}, not { x }.\n'
    rendered = Template.from_text(text, "p.prompt").render("Q?", "the text", fence="@@")
    assert rendered.endswith('Reply {"grade": 3} or {passage}, not { x }.\n')
    assert "Query: Q?\n@@\nthe text\n@@\n" in rendered


def test_a_doubled_placeholder_does_not_count_as_the_placeholder() -> None:
    error = _refused(BODY.replace("Query: {query}", "Query: {{query}}"))
    assert "lacks {query}" in error.message


def test_the_judge_command_stops_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = tmp_path / "p.prompt"
    prompt.write_text(HEADER + BODY.replace("{passage}", "{passage} {foo}"), encoding="utf-8")
    db = tmp_path / "p.db"
    assert main(["init", str(db)]) == 0
    argv = ["judge", str(db), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    assert main([*argv, "--prompt", str(prompt), "--dry-run"]) == 2
    assert f"{prompt}:7: {{foo}} is not a placeholder" in capsys.readouterr().err
