"""Answer-level criteria: their names, 1-5 anchors, pass marks, and when one cannot apply.

A criterion is graded 1-5 by people and by the judge alike. One whose inputs are missing
is not applicable (NA) with a reason, never a 1 and never a 0, so a mean is taken over
the samples that could be graded and the rest are counted by reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Criterion = Literal["faithfulness", "answer_relevancy", "context_recall"]
CRITERIA: Final[tuple[Criterion, ...]] = ("faithfulness", "answer_relevancy", "context_recall")
#: The judge's per-chunk ranking precision against the reference, 0-100.
RANKING: Final = "ctx_rank_prec"
#: A grade at or above this passes, unless ``--threshold CRITERION=N`` says otherwise.
DEFAULT_THRESHOLD: Final = 3
RANKING_THRESHOLD: Final = 80.0

# Why a criterion is NA for a sample. Keys are stable: they appear in JSON reports.
NO_QUESTION: Final = "no_question"
NO_ANSWER: Final = "no_answer"
NO_CONTEXTS: Final = "no_contexts"
NO_REFERENCE: Final = "no_reference"
JUDGE_FAILED: Final = "judge_failed"
NO_USEFUL_CHUNK: Final = "no_useful_chunk"
NA_REASONS: Final[dict[str, str]] = {
    NO_QUESTION: "the sample has no question",
    NO_ANSWER: "the system gave no answer",
    NO_CONTEXTS: "the system retrieved no contexts",
    NO_REFERENCE: "no reference answer and no passage graded relevant for the query",
    JUDGE_FAILED: "the judge's reply could not be read, even after one repair",
    NO_USEFUL_CHUNK: "no chunk helps (every chunk graded 2 or lower): the ideal ranking is empty",
}


@dataclass(frozen=True)
class Rubric:
    criterion: str
    question: str
    anchors: tuple[str, str, str, str, str]  # for grades 5, 4, 3, 2, 1


RUBRICS: Final[dict[str, Rubric]] = {
    "faithfulness": Rubric(
        "faithfulness",
        "Does the retrieved context back up every claim the answer makes?",
        (
            "every claim is backed by the contexts; nothing is made up",
            "one or two small details lack support",
            "roughly half of the claims are backed",
            "most claims lack support",
            "made up, or at odds with the contexts",
        ),
    ),
    "answer_relevancy": Rubric(
        "answer_relevancy",
        "Does the answer respond to the question, fully and without filler?",
        (
            "answers the whole question, stays on it, no filler",
            "a small gap or a little filler",
            "only partly on the question, or evasive",
            "mostly about something else",
            "beside the point, or declines to answer",
        ),
    ),
    "context_recall": Rubric(
        "context_recall",
        "Does the answer cover the key facts of the reference?",
        (
            "covers every key fact",
            "misses one or two minor facts",
            "covers about half of the key facts",
            "covers only a few",
            "covers none",
        ),
    ),
}

LENGTH_RULE: Final = (
    "Length is not quality: a short correct answer earns the same grade as a long correct"
    " one, and padding earns nothing."
)


def missing_input(
    criterion: str, *, question: bool, answer: bool, contexts: bool, reference: bool
) -> str | None:
    """The NA reason when the sample lacks what ``criterion`` needs, else None.

    ``reference`` is true when there is a reference answer, or (for context_recall) gold
    passages to stand in for it; for the ranking precision it is the reference or the
    question, whichever the chunks are graded against.
    """
    if criterion == RANKING:
        if not contexts:
            return NO_CONTEXTS
        return None if reference or question else NO_REFERENCE
    if not answer:
        return NO_ANSWER
    if criterion == "faithfulness":
        return None if contexts else NO_CONTEXTS
    if criterion == "answer_relevancy":
        return None if question else NO_QUESTION
    if criterion == "context_recall":
        return None if reference else NO_REFERENCE
    raise ValueError(f"unknown criterion {criterion!r}")


def passes(grade: float, threshold: float) -> bool:
    return grade >= threshold - 1e-9
