"""A prompt file's header (issue 28 §3): its label scale, the grades the labels become and
the reply shape it asks for; strict on the header when the file is read, strict on every
reply, and a file without a header read exactly as before."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import pytest

from raglabel.errors import InputError
from raglabel.formats.maps import GradeMap
from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.client import ChatClient
from raglabel.judge.failures import (
    EMPTY,
    NO_FINAL_SCORE,
    OUT_OF_RANGE,
    WRONG_SHAPE,
    Failures,
    early_stop,
    failure_kind,
)
from raglabel.judge.prompt import Template, repair_request
from raglabel.judge.prompt_header import FINAL_SCORE, JSON, NO_HEADER, Scale, split
from raglabel.judge.reply import Problem, parse_final_score, parse_label
from raglabel.judge.runner import JudgeRun
from raglabel.judge.task import PassageTask, Reading
from raglabel.judge.work import Outcome, Pair, RunLimits, Slot
from raglabel.metrics.config import trec_grades

from .conftest import BASE_URL, FENCE_RE, body_of, chat_response

BODY = "Is this passage useful for {query}?\n{fence}\n{title}{passage}\n{fence}\n"
ZERO_TO_THREE = Scale((0, 1, 2, 3))


def headed(*lines: str, body: str = BODY) -> str:
    return "+++\n" + "".join(f"{line}\n" for line in lines) + "+++\n" + body


def refusal(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        Template.from_text(text, "scale.prompt")
    return caught.value


# --- the header ------------------------------------------------------------------------


def test_a_full_header_declares_scale_grades_and_reply() -> None:
    text = headed(
        "scale = [0, 1, 2]",
        "grades = {0 = 1, 1 = 3, 2 = 5}",
        'reply = "final-score"',
    )
    template = Template.from_text(text, "scale.prompt")
    header = template.header
    assert header.declared and header.reply == FINAL_SCORE
    assert header.scale.labels == (0, 1, 2)
    assert [header.grade_of(label) for label in (0, 1, 2)] == [1, 3, 5]
    # The body is the text after the header; the version names the whole file.
    assert template.body == BODY
    assert template.text == text and template.version.startswith("custom-")


def test_an_empty_header_means_the_trec_scale_and_json() -> None:
    header = Template.from_text(headed(), "p").header
    assert header.declared and header.reply == JSON
    assert header.scale.labels == (0, 1, 2, 3)
    assert dict(header.grades) == {0: 2, 1: 3, 2: 4, 3: 5}


def test_the_default_grades_are_the_qrels_default_map() -> None:
    # One home for the TREC map: a prompt file's labels become the grades imported qrels do.
    assert dict(Template.from_text(headed(), "p").header.grades) == trec_grades()
    assert GradeMap().mapping == trec_grades()


def test_grades_alone_make_the_scale_and_may_be_a_table() -> None:
    inline = Template.from_text(headed("grades = {1 = 1, 0 = 2, 2 = 5}"), "p").header
    table = Template.from_text(headed("[grades]", "0 = 2", "1 = 1", "2 = 5"), "p").header
    assert inline.scale.labels == table.scale.labels == (0, 1, 2)
    assert dict(inline.grades) == dict(table.grades) == {0: 2, 1: 1, 2: 5}


def test_negative_and_scattered_labels() -> None:
    header = Template.from_text(headed("grades = {-2 = 1, 0 = 2, 4 = 5}"), "p").header
    assert header.scale.labels == (-2, 0, 4)
    assert header.scale.span == "-2, 0, 4" and header.scale.wanted == "integer among -2, 0, 4"
    assert ZERO_TO_THREE.span == "0..3" and ZERO_TO_THREE.wanted == "integer from 0 to 3"


def test_the_body_renders_with_every_placeholder() -> None:
    template = Template.from_text(headed('reply = "final-score"'), "p")
    rendered = template.render("tidal power", "Turbines in a tidal race.", "Tides")
    assert "+++" not in rendered and "reply" not in rendered
    fence = FENCE_RE.findall(rendered)[0]
    assert rendered == (
        f"Is this passage useful for tidal power?\n{fence}\nTitle: Tides\n"
        f"Turbines in a tidal race.\n{fence}\n"
    )


def test_a_header_lets_a_prompt_leave_out_the_fence() -> None:
    # A published prompt runs as written: {query} and {passage} are all it must hold.
    template = Template.from_text(headed(body="Query: {query}\nPassage: {passage}\n"), "p")
    assert not template.fenced
    assert template.render("q", "text") == "Query: q\nPassage: text\n"
    assert Template.builtin().fenced


def test_a_header_may_follow_a_byte_order_mark() -> None:
    template = Template.from_text("\ufeff" + headed('reply = "final-score"'), "p")
    assert template.header.reply == FINAL_SCORE and template.body == BODY


def test_a_byte_order_mark_without_a_header_is_not_sent() -> None:
    # An editor's marker at the start of a prompt without a header is no word of it.
    template = Template.from_text("\ufeff" + BODY, "p")
    assert template.header == NO_HEADER and template.body == BODY
    assert split("\ufeff" + BODY, "p") == (NO_HEADER, BODY)


def test_the_header_is_part_of_the_version() -> None:
    one = Template.from_text(headed("grades = {0 = 1, 1 = 5}"), "p")
    other = Template.from_text(headed("grades = {0 = 2, 1 = 5}"), "p")
    assert one.body == other.body and one.version != other.version


def test_a_stored_template_reads_its_header_again() -> None:
    # The app's J rebuilds the last run's template from the text stored in the file.
    first = Template.from_text(headed('reply = "final-score"'), "p")
    again = Template(first.text, first.version)
    assert again.header == first.header and again.body == first.body


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "+++\nscale = [0, 1]\n" + BODY,
            ":1: ",
            "the header opened here is never closed: end it with a line holding only +++",
        ),
        (headed("scale = [0, 1,", 'reply = "json"'), ":3:1: ", "the header is not valid TOML"),
        (headed("reply = final-score"), ":2:9: ", "the header is not valid TOML: Invalid value"),
        (headed("scale = [0, 1]", "scale = [0, 1]"), ":4: ", "not valid TOML: Cannot overwrite"),
        (
            headed("scale = [0, 1, 2, 3]", 'format = "json"'),
            ":3: ",
            "the header has no key 'format' (it takes scale, grades, reply)",
        ),
        (
            headed('scale = "0-3"'),
            ":2: ",
            'scale must be a list of whole numbers, e.g. [0, 1, 2, 3]; got "0-3"',
        ),
        (headed("scale = [0, 1.5]"), ":2: ", "scale must be a list of whole numbers"),
        (headed("scale = [true, false]"), ":2: ", "scale must be a list of whole numbers"),
        (headed("scale = [0, 1, 1]"), ":2: ", "scale lists label 1 twice"),
        (headed("scale = [3]"), ":2: ", "a scale needs at least two labels"),
        (headed("scale = []"), ":2: ", "a scale needs at least two labels"),
        (
            headed('reply = "json"', "scale = [0, 1, 2, 3, 4]"),
            ":3: ",
            "label 4 of the scale has no grade: the default grades (the TREC map 0 = 2, 1 = 3,"
            " 2 = 4, 3 = 5) cover 0..3 only",
        ),
        (
            headed("scale = [0, 1, 2]", "grades = {0 = 1, 1 = 3}"),
            ":3: ",
            "grades gives label 2 of the scale no grade: add 2 = G, with G its grade (1-5)",
        ),
        (
            headed("scale = [0, 1]", "grades = {0 = 1, 1 = 5, 2 = 5}"),
            ":3: ",
            "grades maps label 2, which is not on the scale (0..1)",
        ),
        (headed("grades = {0 = 1, 1 = 6}"), ":2: ", "grades maps label 1 to 6, not a grade 1-5"),
        (headed("grades = {0 = 0, 1 = 5}"), ":2: ", "grades maps label 0 to 0, not a grade 1-5"),
        (headed("grades = {0 = 1, 1 = 4.5}"), ":2: ", "maps label 1 to 4.5, not a grade 1-5"),
        (headed("grades = {0 = 1, 1 = true}"), ":2: ", "maps label 1 to true, not a grade 1-5"),
        (headed("grades = {zero = 1, 1 = 5}"), ":2: ", "grades: 'zero' is not a label"),
        (headed('grades = {"1.5" = 1, 1 = 5}'), ":2: ", "grades: '1.5' is not a label"),
        (headed('grades = {"1" = 1, "01" = 5}'), ":2: ", "grades maps label 1 twice"),
        (headed("grades = {2 = 5}"), ":2: ", "grades must map at least two labels"),
        (headed("grades = [2, 3, 4, 5]"), ":2: ", "grades must be a table of label = grade"),
        (
            headed("scale = [0, 1]", "[grades]", "0 = 1", "1 = 9"),
            ":3: ",
            "grades maps label 1 to 9",
        ),
        (headed('reply = "xml"'), ":2: ", 'reply must be "json" or "final-score", got "xml"'),
        (headed("reply = 1"), ":2: ", 'reply must be "json" or "final-score", got 1'),
        (
            headed(body="Grade this: {passage}\n"),
            ": ",
            "the prompt after its header lacks {query}; a prompt needs {query} and {passage}",
        ),
    ],
)
def test_each_bad_header_is_refused_naming_the_file_and_line(
    text: str, where: str, message: str
) -> None:
    error = refusal(text)
    assert str(error).startswith(f"scale.prompt{where}"), str(error)
    assert message in error.message, error.message


def test_a_bad_header_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "umbrella-like.txt"
    path.write_text(headed('reply = "final-score"', "scale = [0, 1, 2, 3, 4]"), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        Template.from_file(path)
    assert str(caught.value).startswith(f"{path}:3: label 4 of the scale has no grade")


# --- no header: as before ------------------------------------------------------------


def test_a_prompt_without_a_header_reads_as_before() -> None:
    template = Template.from_text(BODY, "p")
    assert template.header == NO_HEADER and template.body == BODY
    # The version of a file without a header is the one it always had.
    assert template.version == Template.named("custom", BODY).version
    assert template.repair("it is not valid JSON") == repair_request("it is not valid JSON")
    # And it still needs its fence.
    error = refusal("{query} {passage}")
    assert error.message.startswith("the prompt lacks {fence}; a prompt needs {query}")


def test_plus_signs_that_do_not_open_a_header_are_text() -> None:
    text = "+++ read carefully +++\n" + BODY
    template = Template.from_text(text, "p")
    assert template.header == NO_HEADER and template.body == text
    # A first line of +++ alone opens a header, which must close.
    with pytest.raises(InputError, match="never closed"):
        split("+++\n{query} {passage}", "p")


# --- final-score replies ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "label", "said"),
    [
        ("##final score: 2", 2, ""),
        ("The passage names the answer.\n##final score: 3", 3, "The passage names the answer."),
        ("  ## Final Score :  1  ", 1, ""),
        ("##FINAL SCORE:0\n", 0, ""),
        ("##final  score:2", 2, ""),
        ("##finalscore: 2", 2, ""),
        ("##final score: +2", 2, ""),
        # The last score line wins: a model that thinks aloud ends with its answer.
        (
            "M: 2\n##final score: 1\nOn reflection\n##final score: 3\n",
            3,
            "M: 2 ##final score: 1 On reflection",
        ),
        # A code fence around the reply is markup, not part of the reason stored.
        ("```\n##final score: 2\n```", 2, ""),
        ("```json\nThe passage bears on it.\n##final score: 2\n```", 2, "The passage bears on it."),
        ("It helps.\n~~~text\nIn part.\n~~~\n##final score: 1", 1, "It helps. In part."),
        # Backticks inside a line are the model's words, kept as written.
        ("Uses `grep` and ```x``` inline.\n##final score: 1", 1, "Uses `grep` and ```x``` inline."),
    ],
)
def test_the_last_final_score_line_gives_the_label(content: str, label: int, said: str) -> None:
    assert parse_final_score(content, ZERO_TO_THREE) == (label, said)


@pytest.mark.parametrize(
    ("content", "kind", "text"),
    [
        ("", EMPTY, "the reply was empty"),
        ("  \n ", EMPTY, "the reply was empty"),
        (
            "My final score is 2.",
            NO_FINAL_SCORE,
            'no line of it reads "##final score: N" with N the label (0..3)',
        ),
        ("Final score: 2", NO_FINAL_SCORE, "no line of it reads"),
        ("Verdict ##final score: 2", NO_FINAL_SCORE, "no line of it reads"),
        ("**##final score: 2**", NO_FINAL_SCORE, "no line of it reads"),
        ('{"grade": 2, "reason": "JSON, not the line asked for"}', NO_FINAL_SCORE, "no line"),
        ("##final score: 7", OUT_OF_RANGE, "final score 7 is outside 0..3"),
        ("##final score: -1", OUT_OF_RANGE, "final score -1 is outside 0..3"),
        ("##final score: 2.5", WRONG_SHAPE, 'must be a whole number (0..3), got "2.5"'),
        ("##final score: 2.0", WRONG_SHAPE, 'got "2.0"'),
        ("##final score: two", WRONG_SHAPE, 'got "two"'),
        ("##final score: 2 of 3", WRONG_SHAPE, 'got "2 of 3"'),
        ("##final score:", WRONG_SHAPE, "got nothing"),
        # A good score line earlier does not save a bad last one: never a guess.
        ("##final score: 2\n##final score: 2.5", WRONG_SHAPE, 'got "2.5"'),
        ("##final score: 2\n##final score: 8", OUT_OF_RANGE, "final score 8 is outside 0..3"),
    ],
)
def test_anything_else_is_a_problem_of_a_named_kind(content: str, kind: str, text: str) -> None:
    problem = parse_final_score(content, ZERO_TO_THREE)
    assert isinstance(problem, Problem)
    assert problem.kind == kind
    assert text in problem.text, problem.text


def test_json_replies_to_a_header_give_a_label_of_its_scale() -> None:
    assert parse_label('{"grade": 0, "reason": "Off topic."}', ZERO_TO_THREE) == (0, "Off topic.")
    out = parse_label('{"grade": 5, "reason": "Too high."}', ZERO_TO_THREE)
    assert out == Problem("grade 5 is outside 0..3", OUT_OF_RANGE)
    typed = parse_label('{"grade": "2", "reason": "A string."}', ZERO_TO_THREE)
    assert typed == Problem('grade must be an integer from 0 to 3, got "2"', WRONG_SHAPE)
    assert parse_label('{"reason": "No grade."}', ZERO_TO_THREE) == Problem(
        'the field "grade" is missing'
    )


# --- the passage task with a header ------------------------------------------------------


def slot(n: int = 1) -> Slot:
    pair = Pair(n, n, f"q{n}", f"p{n}", "tidal power", "Turbines in a tidal race.", "")
    return Slot(pair, "m", 0, f"k{n}", f"t{n}")


FINAL = Template.from_text(
    headed(
        "scale = [0, 1, 2, 3]", "grades = {0 = 1, 1 = 2, 2 = 4, 3 = 5}", 'reply = "final-score"'
    ),
    "p",
)


def test_the_task_maps_the_label_and_says_both_in_the_reason() -> None:
    task = PassageTask(FINAL)
    assert task.read(slot(), "It names the turbines.\n##final score: 2") == Reading(
        4, "label 2 (grade 4): It names the turbines."
    )
    assert task.read(slot(), "##final score: 1") == Reading(2, "label 1 (grade 2)")
    json_task = PassageTask(Template.from_text(headed('reply = "json"'), "p"))
    assert json_task.read(slot(), '{"grade": 3, "reason": "Exact."}') == Reading(
        5, "label 3 (grade 5): Exact."
    )


def test_the_repair_asks_for_the_shape_the_prompt_asked_for() -> None:
    problem = Problem('no line of it reads "##final score: N"', NO_FINAL_SCORE)
    assert PassageTask(FINAL).repair(slot(), problem) == (
        'That answer could not be used: no line of it reads "##final score: N". Answer again,'
        " and end your answer with one line that holds only ##final score: N, where N is"
        " your score, an integer from 0 to 3."
    )
    json_task = PassageTask(Template.from_text(headed("grades = {1 = 1, 2 = 5}"), "p"))
    assert json_task.repair(slot(), Problem("grade 7 is outside 1..2")) == (
        "That answer could not be used: grade 7 is outside 1..2. Answer again with only one"
        ' JSON object, shaped {"grade": <integer from 1 to 2>, "reason": "<one short'
        ' sentence>"}.'
    )


async def judge(template: Template, replies: list[str]) -> tuple[list[Outcome], list[str]]:
    """Run one slot against replies given in turn; the user messages the endpoint saw."""
    asked: list[str] = []
    left = iter(replies)

    async def handler(request: httpx.Request) -> httpx.Response:
        asked.append(body_of(request)["messages"][-1]["content"])
        return chat_response(next(left))

    client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(handler))
    outcomes: list[Outcome] = []
    runner = JudgeRun(
        client,
        PassageTask(template),
        params={},
        limits=RunLimits(concurrency=1, retry=RetryPolicy(attempts=1)),
        on_outcome=outcomes.append,
        rng=random.Random(0),
    )
    try:
        await runner.run([slot()])
    finally:
        await client.aclose()
    return outcomes, asked


async def test_a_reply_without_the_line_is_repaired_once() -> None:
    outcomes, asked = await judge(FINAL, ["My final score is 3.", "Exact.\n##final score: 3"])
    [outcome] = outcomes
    assert (outcome.grade, outcome.reason, outcome.repaired) == (
        5,
        "label 3 (grade 5): Exact.",
        True,
    )
    assert len(asked) == 2 and "end your answer with one line" in asked[1]
    assert outcome.raw is not None and outcome.raw.endswith("##final score: 3")


async def test_a_second_bad_reply_is_a_failure_never_a_guess() -> None:
    outcomes, _ = await judge(FINAL, ["My final score is 3.", "Still 3, final score."])
    [outcome] = outcomes
    assert outcome.grade is None and outcome.error is not None
    assert outcome.error.startswith("no final score after one repair: no line of it reads")
    assert failure_kind(outcome.error) == NO_FINAL_SCORE


async def test_a_decimal_twice_fails_as_wrong_shape() -> None:
    [outcome], _ = await judge(FINAL, ["##final score: 2.5", "##final score: 2.5"])
    assert outcome.error is not None and failure_kind(outcome.error) == WRONG_SHAPE
    assert 'got "2.5"' in outcome.error


def test_a_run_that_never_gives_the_line_stops_with_advice_that_fits() -> None:
    failures = Failures()
    for _ in range(5):
        failures.add("no final score after one repair: no line of it reads ...", "My score: 2")
    why = early_stop(failures, ok=0, done=5, planned=9)
    assert why is not None and "(no final score)" in why
    assert "##final score: N" in why and "--json-mode" not in why
