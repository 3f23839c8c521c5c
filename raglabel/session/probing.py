"""Running a probe (``raglabel agree --probe``): draw pairs people graded, ask each model
about each one twice, fresh and with the same prompt and parameters, as it is (the
control) and altered by the probe (``raglabel.judge.probe``), and make the figures.

Nothing is written: the project is read, then closed before the first request, and the
answers live in memory only. They grade altered passages; stored as suggestions they
would reach ``agree``'s figures, ``--fill-with-judge`` and the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from raglabel.analysis.probe import INTERVAL, Answers, model_probe
from raglabel.errors import UsageError
from raglabel.formats.probe_report import (
    ModelProbe,
    ProbeDraw,
    ProbeFailure,
    ProbeFill,
    ProbeReport,
)
from raglabel.judge.failures import Failures
from raglabel.judge.probe import DOES, LENGTH, Filler, alter, filler
from raglabel.judge.task import PassageTask
from raglabel.judge.work import Outcome, Pair, RunLimits, Slot, Tally
from raglabel.session.judging import JudgeSetup
from raglabel.storage.pair_selection import Selection, pick_pairs
from raglabel.storage.project import Project
from raglabel.storage.ratings import load_ratings

CONTROL: Final = "control"
PERTURBED: Final = "perturbed"
ARMS: Final = (CONTROL, PERTURBED)
#: A filler under this share of its passage's length is counted short (donors ran out).
SHORT_FILL: Final = 0.9
NOT_STORED: Final = (
    "probe answers are not stored: they grade altered passages, so no suggestion, agree"
    " figure or --fill-with-judge label comes from them"
)


@dataclass(frozen=True)
class Draw:
    """The pairs a probe asks about, each with the person's grade and its filler (empty
    for ``stuffing``), and what was left out."""

    pairs: list[Pair]
    human: list[int]
    fillers: list[Filler]
    eligible: int
    accepted_left_out: int
    without_text: int
    seed: int

    def describe(self) -> str:
        return (
            f"{len(self.pairs)} of {self.eligible} eligible human-graded pairs, drawn"
            f" uniformly at random without replacement (seed {self.seed})"
        )


def draw(project: Project, probe: str, limit: int, seed: int) -> Draw:
    """Up to ``limit`` pairs with a resolved human grade (the grade ``eval`` uses) and
    text, drawn with ``seed``; pairs whose grade accepted a judge suggestion are left
    out, as ``agree`` leaves them out of the judge's figures (the person's grade there
    is the judge's own). For ``length``, each pair's filler: passages that are
    candidates of other queries and not of this one, in an order drawn from the seed
    and the pair."""
    ratings = load_ratings(project.conn)
    picked = pick_pairs(project.conn, Selection(include_graded=True))
    by_key = {(p.qid, p.pid): p for p in picked.pairs}
    accepted = without_text = 0
    eligible: list[Pair] = []
    for key in sorted(ratings.resolved):
        pair = by_key.get(key)
        if key in ratings.accepted_pairs:
            accepted += 1
        elif pair is None or not pair.has_text:
            # Every graded pair is a candidate (grading makes it one), so a pair
            # missing here has no text to show either.
            without_text += 1
        else:
            eligible.append(pair)
    chosen = random.Random(f"raglabel-probe-draw/{seed}").sample(
        eligible, min(limit, len(eligible))
    )
    chosen.sort(key=lambda p: (p.qid, p.pid))
    fillers = [Filler("", ())] * len(chosen)
    if probe == LENGTH:
        fillers = _fillers(picked.pairs, chosen, seed)
    return Draw(
        chosen,
        [ratings.resolved[p.qid, p.pid] for p in chosen],
        fillers,
        len(eligible),
        accepted,
        without_text,
        seed,
    )


def _fillers(candidates: list[Pair], chosen: list[Pair], seed: int) -> list[Filler]:
    """Each chosen pair's filler, drawn from every candidate passage with text (by
    passage id) less its own query's candidates."""
    texts: dict[str, str] = {}
    pools: dict[int, set[str]] = defaultdict(set)
    for pair in candidates:
        pools[pair.query_row].add(pair.pid)
        if pair.passage.strip():
            texts.setdefault(pair.pid, pair.passage)
    ids = sorted(texts)
    at = {pid: i for i, pid in enumerate(ids)}
    donors = [texts[pid] for pid in ids]
    found = []
    for pair in chosen:
        own = {at[pid] for pid in pools[pair.query_row] if pid in at}
        rng = random.Random(f"raglabel-probe-filler/{seed}/{pair.qid}/{pair.pid}")
        found.append(filler(len(pair.passage), donors, own, rng))
    return found


def probe_slots(drawn: Draw, probe: str, models: tuple[str, ...]) -> list[Slot]:
    """Two slots per pair and model, the control first; the pairs in turn, each asked of
    every model before the next, so an early stop has heard from each."""
    slots = []
    for i, (pair, extra) in enumerate(zip(drawn.pairs, drawn.fillers, strict=True)):
        altered = Pair(
            pair.query_row,
            pair.passage_row,
            pair.qid,
            pair.pid,
            pair.query,
            alter(probe, pair.passage, pair.query, extra),
            pair.title,
        )
        for model in models:
            # The slot's key says which answer it is; nothing is looked up or stored by it.
            slots.append(Slot(pair, model, 0, f"{CONTROL}/{i}", ""))
            slots.append(Slot(altered, model, 0, f"{PERTURBED}/{i}", ""))
    return slots


@dataclass(frozen=True)
class Probed:
    report: ProbeReport
    tally: Tally


def probe(
    path: str | Path,
    kind: str,
    limit: int,
    setup: JudgeSetup,
    limits: RunLimits,
    *,
    seed: int,
    resamples: int,
    open_project: Callable[[str | Path], Project] = Project.open_read,
    on_progress: Callable[[Tally], None] | None = None,
    transport: Any = None,
) -> Probed:
    """Draw, ask and measure; the project is closed before the first request."""
    api_key = setup.api_key()  # refused here, before anything is read or sent
    with open_project(path) as project:
        drawn = draw(project, kind, limit, seed)
    if not drawn.pairs:
        raise UsageError(
            "--probe: no pair to ask about: it needs pairs with a person's grade (one that"
            " took no judge suggestion) and text;"
            f" {drawn.accepted_left_out} graded pair(s) took a suggestion,"
            f" {drawn.without_text} lack text"
        )
    slots = probe_slots(drawn, kind, setup.models)
    outcomes, tally, status = _ask(
        slots, setup, limits, api_key, on_progress=on_progress, transport=transport
    )
    models = [
        _model(model, drawn, outcomes, resamples=resamples, seed=seed) for model in setup.models
    ]
    report = ProbeReport(
        probe=kind,
        alteration=DOES[kind],
        seed=seed,
        resamples=resamples,
        interval=INTERVAL,
        drawn=ProbeDraw(
            len(drawn.pairs),
            drawn.eligible,
            drawn.accepted_left_out,
            drawn.without_text,
            drawn.describe(),
        ),
        fill=_fill(drawn) if kind == LENGTH else None,
        models=models,
        status=status,
        stopped=tally.stopped,
        stored=False,
        note=NOT_STORED,
    )
    return Probed(report, tally)


def _ask(
    slots: list[Slot],
    setup: JudgeSetup,
    limits: RunLimits,
    api_key: str | None,
    *,
    on_progress: Callable[[Tally], None] | None,
    transport: Any,
) -> tuple[dict[tuple[str, str], Outcome], Tally, str]:
    """Every slot's outcome by (model, slot key), the tally, and how the run ended."""
    from raglabel.judge.runner import JudgeRun

    outcomes: dict[tuple[str, str], Outcome] = {}

    def keep(outcome: Outcome) -> None:
        outcomes[outcome.slot.model, outcome.slot.cache_key] = outcome

    client = setup.client(api_key, limits, transport)
    runner = JudgeRun(
        client,
        PassageTask(setup.setting.template),
        params=setup.setting.params,
        limits=limits,
        on_outcome=keep,
        on_progress=on_progress,
        keeps_replies=False,
    )

    async def run() -> None:
        try:
            await runner.run(slots)
        finally:
            await client.aclose()

    status = "interrupted"
    # On Ctrl-C the answers back are measured and the run says it was interrupted.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
        status = "stopped" if runner.tally.stopped else "done"
    return outcomes, runner.tally, status


def _model(
    model: str,
    drawn: Draw,
    outcomes: dict[tuple[str, str], Outcome],
    *,
    resamples: int,
    seed: int,
) -> ModelProbe:
    grades: dict[str, list[int | None]] = {arm: [] for arm in ARMS}
    failures = {arm: Failures() for arm in ARMS}
    for i in range(len(drawn.pairs)):
        for arm in ARMS:
            outcome = outcomes.get((model, f"{arm}/{i}"))
            grades[arm].append(None if outcome is None else outcome.grade)
            if outcome is not None and not outcome.ok:
                failures[arm].add(outcome.error or "", outcome.raw)
    failed = [
        ProbeFailure(arm, kind, count, failures[arm].examples[kind])
        for arm in ARMS
        for kind, count in failures[arm].counts.most_common()
    ]
    answers = Answers(
        [p.qid for p in drawn.pairs],
        [p.pid for p in drawn.pairs],
        drawn.human,
        grades[CONTROL],
        grades[PERTURBED],
    )
    return model_probe(model, answers, failed, resamples=resamples, seed=seed)


def _fill(drawn: Draw) -> ProbeFill:
    ratios = [
        extra.chars / len(pair.passage)
        for pair, extra in zip(drawn.pairs, drawn.fillers, strict=True)
    ]
    mean = sum(ratios) / len(ratios) if ratios else None
    return ProbeFill(mean, sum(ratio < SHORT_FILL for ratio in ratios))
