"""The answer task's own parts of a judge run: which (sample, criterion) to ask about,
and what the run cost and flagged. The run itself is ``judging.execute``, the one
driver of every task.

For the CLI (``raglabel judge DB --answers``) and the grading app alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from raglabel.errors import UsageError
from raglabel.judge.answer_prompt import answers_template
from raglabel.judge.flags import flag_sample
from raglabel.judge.work import AnswerItem, AnswerSlot, RunLimits, Tally
from raglabel.metrics.criteria import CRITERIA, RANKING
from raglabel.session import judging
from raglabel.session.judging import Finished, JudgeSetup
from raglabel.storage.answer_items import answer_items, require_systems
from raglabel.storage.judgments import Plan, Setting, Usage, plan_answers, run_usage
from raglabel.storage.project import Project

#: Every criterion an answer run may ask about, in the order runs ask them.
ANSWER_CRITERIA: tuple[str, ...] = (*CRITERIA, RANKING)


def parse_criteria(text: str | None) -> tuple[str, ...]:
    """``--criteria LIST``: comma-separated names, each once; all four when not given."""
    if text is None:
        return ANSWER_CRITERIA
    names = [name.strip() for name in text.split(",")]
    if not any(names):
        raise UsageError("--criteria: name at least one criterion")
    chosen: list[str] = []
    for name in names:
        if name not in ANSWER_CRITERIA:
            raise UsageError(
                f"--criteria {name!r}: no such criterion (choose among"
                f" {', '.join(ANSWER_CRITERIA)})"
            )
        if name in chosen:
            raise UsageError(f"--criteria: {name} is named twice")
        chosen.append(name)
    return tuple(chosen)


def answer_setting(endpoint: str, params: dict[str, Any]) -> Setting:
    """The setting of an answer run: its stored prompt names every answer prompt text."""
    return Setting(endpoint, answers_template(), params)


def pick_items(
    project: Project, systems: Sequence[str], queries: Sequence[str]
) -> list[AnswerItem]:
    """The samples of ``systems`` (all when empty), of ``queries`` when given; an unknown
    system or query, or a project without answer systems, is a usage error."""
    require_systems(project.conn)
    return answer_items(project.conn, list(systems), queries=list(queries))


def plan(
    project: Project,
    items: Sequence[AnswerItem],
    criteria: Sequence[str],
    setup: JudgeSetup,
) -> Plan[AnswerSlot]:
    return plan_answers(
        project.conn,
        items,
        criteria,
        setup.setting,
        models=setup.models,
        repeats=setup.repeats,
    )


@dataclass(frozen=True)
class Flagged:
    """An answer sample of the run with text aimed at the grader (or stuffed contexts)."""

    system: str
    sample_id: str
    why: tuple[str, ...]  # "answer: ...", "context N: ..."


@dataclass(frozen=True)
class AnswerFinished(Finished):
    # The failures by kind, with an excerpt of each, are the tally's (``tally.failures``).
    usage: Usage = field(default_factory=lambda: Usage(0, 0, 0))
    flagged: tuple[Flagged, ...] = ()


def flagged_samples(work: Plan[AnswerSlot]) -> tuple[Flagged, ...]:
    """The samples a run asks about whose answer or contexts need a human look."""
    seen: set[tuple[str, str]] = set()
    found: list[Flagged] = []
    for slot in work.slots:
        item = slot.item
        if (item.system, item.sample_id) in seen:
            continue
        seen.add((item.system, item.sample_id))
        why = flag_sample(item.question, item.answer, [c.text for c in item.contexts])
        if why:
            found.append(Flagged(item.system, item.sample_id, tuple(why)))
    return tuple(found)


def account(project: Project, work: Plan[AnswerSlot], finished: Finished) -> AnswerFinished:
    """What a run over ``work`` (``judging.execute``, the one driver of every task, with
    ``kind = 'answers'``) cost, by the endpoint's count, and which samples it flagged."""
    if finished.run_id is None:  # nothing was asked: no run record, nothing spent
        return AnswerFinished(finished.tally, finished.status, flagged=flagged_samples(work))
    return AnswerFinished(
        finished.tally,
        finished.status,
        finished.run_id,
        usage=run_usage(project.conn, finished.run_id),
        flagged=flagged_samples(work),
    )


def answer_setup(setup: JudgeSetup) -> JudgeSetup:
    """``setup`` (a passage run's, say the app's last) asking about answers instead: the
    same endpoint, models, repeats and parameters, with the answer prompts."""
    setting = answer_setting(setup.setting.endpoint, setup.setting.params)
    return replace(setup, setting=setting)


def judge_answers(
    path: Path,
    setup: JudgeSetup,
    limits: RunLimits,
    *,
    systems: Sequence[str] = (),
    queries: Sequence[str] = (),
    criteria: Sequence[str] = ANSWER_CRITERIA,
    on_progress: Callable[[Tally], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> AnswerFinished:
    """The judge's grades for the answers of ``systems`` (all when empty) to ``queries``
    (all when empty), on a connection of its own: the app calls this from a worker
    thread while grading goes on. ``setup`` must carry the answer setting
    (:func:`answer_setup`)."""
    with Project.open(path) as project:
        items = pick_items(project, systems, queries)
        work = plan(project, items, criteria, setup)
        if not work.slots:
            return AnswerFinished(Tally(0, cached=work.cached), "done")
        finished = judging.execute(
            project, work, setup, limits, on_progress=on_progress, should_stop=should_stop
        )
        return account(project, work, finished)
