"""``raglabel judge``: LLM suggestions for candidate pairs over a chat-completions API,
and with ``--answers`` the judge's grades of answer samples per criterion."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglabel.cli.arguments import int_in, project_file
from raglabel.cli.judge_options import (
    add_asking_options,
    add_endpoint_options,
    add_load_options,
    check_models,
    check_prompt,
    params_of,
    run_limits,
)
from raglabel.cli.options import MAX_DEPTH
from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.judge.prompt import Template
    from raglabel.judge.work import AnswerSlot, Slot, Tally
    from raglabel.session.answer_judging import AnswerFinished
    from raglabel.storage.judgments import Plan

EXIT_INTERRUPTED = 130
#: Tokens a reply of one short sentence takes, for --dry-run's estimate.
REPLY_TOKENS = 40
#: And a ctx_rank_prec reply: its frame, then one entry per chunk.
CHUNKS_REPLY_TOKENS, CHUNK_REPLY_TOKENS = 10, 30
#: Options of a passage run that mean nothing for answers, refused with --answers.
PASSAGE_ONLY = {
    "prompt": "--prompt",
    "depth": "--depth",
    "queue": "--queue",
    "limit": "--limit",
    "include_graded": "--include-graded",
    "skip_missing_text": "--skip-missing-text",
}
#: Flagged samples named one per line after a run; the rest are counted.
SHOW_FLAGGED = 10
CHARS_PER_TOKEN = 4
# Caps on the options (documented in --help and the README): each is far past any real
# need and keeps a typo from planning a billion requests or sleeping for ever.
MAX_REPEAT = 100
#: Answers one run may plan (pairs x models x repeats); narrow a bigger one.
MAX_ANSWERS = 10_000_000


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "judge",
        help="pre-fill suggestions with an LLM judge (never counted as human grades)",
        description=(
            "Ask a model behind an OpenAI-compatible chat-completions endpoint to grade "
            "candidate passages 1-5. Answers are stored as suggestions beside human grades, "
            "never in their place. A second run sends only what is missing or failed."
        ),
    )
    parser.add_argument("db", metavar="DB", type=project_file, help="the project file")
    add_endpoint_options(parser)
    answers = parser.add_argument_group(
        "answers (judge answer samples instead of passages; see the spec's criteria)"
    )
    answers.add_argument(
        "--answers",
        action="store_true",
        help="grade each answer sample 1-5 per criterion (one call per sample and criterion)",
    )
    answers.add_argument(
        "--criteria",
        metavar="LIST",
        help="with --answers: comma-separated among faithfulness, answer_relevancy,"
        " context_recall, ctx_rank_prec (default: all four)",
    )
    answers.add_argument(
        "--system",
        action="append",
        default=[],
        metavar="NAME",
        help="with --answers: only this answer system; repeatable (default: all)",
    )
    pick = parser.add_argument_group("which pairs (default: every ungraded candidate)")
    pick.add_argument(
        "--query", action="append", default=[], metavar="QID", help="only this query; repeatable"
    )
    pick.add_argument(
        "--depth",
        type=int_in(1, MAX_DEPTH),
        metavar="K",
        help=f"only candidates ranked <= K by a run, 1 to {MAX_DEPTH:,}",
    )
    pick.add_argument(
        "--queue", action="store_true", help="in the labeling queue's order (with --limit)"
    )
    pick.add_argument(
        "--limit",
        type=int_in(1, MAX_ANSWERS),
        metavar="N",
        help=f"at most N pairs, 1 to {MAX_ANSWERS:,}",
    )
    pick.add_argument(
        "--include-graded",
        action="store_true",
        help="also pairs people graded, to measure the judge against them (raglabel agree)",
    )
    pick.add_argument(
        "--skip-missing-text",
        action="store_true",
        help="leave out pairs whose query or passage has no text, and say how many"
        " (without it, such pairs stop the run before any request)",
    )
    ask = parser.add_argument_group("how to ask")
    add_asking_options(ask)
    ask.add_argument(
        "--repeat",
        type=int_in(1, MAX_REPEAT),
        default=1,
        metavar="N",
        help=f"answers per pair and model, 1 to {MAX_REPEAT} (default: 1)",
    )
    add_load_options(parser.add_argument_group("load and faults"))
    parser.add_argument(
        "--dry-run", action="store_true", help="print the calls and tokens it would take; send none"
    )
    parser.set_defaults(handler=run)


def _check_answers(args: argparse.Namespace) -> None:
    """Options that belong to one kind of run only are refused with the other."""
    if args.answers:
        for dest, option in PASSAGE_ONLY.items():
            if getattr(args, dest) not in (None, False):
                raise UsageError(f"{option}: applies to passage runs, not with --answers")
        return
    if args.criteria is not None:
        raise UsageError("--criteria: only with --answers")
    if args.system:
        raise UsageError("--system: only with --answers")


def run(args: argparse.Namespace) -> int:
    check_models(args)
    _check_answers(args)
    if args.answers:
        return run_answers(args)
    return run_passages(args)


def run_passages(args: argparse.Namespace) -> int:
    from raglabel.judge.client import endpoint_url, public_endpoint
    from raglabel.judge.prompt import Template
    from raglabel.session.judging import JudgeSetup, execute, missing_text, text_refusal
    from raglabel.storage.judgments import Setting, plan
    from raglabel.storage.pair_selection import Selection, pick_pairs
    from raglabel.storage.project import Project

    template = Template.from_file(Path(args.prompt)) if args.prompt else Template.builtin()
    check_prompt(args, template)
    setting = Setting(public_endpoint(endpoint_url(args.base_url)), template, params_of(args))
    setup = JudgeSetup(setting, tuple(args.model), args.repeat, args.api_key_env, args.base_url)
    selection = Selection(
        tuple(args.query),
        args.depth,
        args.queue,
        args.limit,
        args.include_graded,
        args.skip_missing_text,
    )
    with Project.open(args.db) as project:
        picked = pick_pairs(project.conn, selection)
        lacking = picked.without_text
        pairs = [p for p in picked.pairs if p.has_text]
        answers = len(pairs) * len(args.model) * args.repeat
        if answers > MAX_ANSWERS:
            raise UsageError(
                f"{len(pairs):,} pairs x {len(args.model)} model(s) x {args.repeat} repeat(s)"
                f" = {answers:,} answers, more than one run asks ({MAX_ANSWERS:,}); narrow it"
                " with --query, --depth or --limit"
            )
        if lacking and args.skip_missing_text:
            print(
                f"raglabel judge: skipping {len(lacking)} pair(s) with no text to show the"
                f" judge: {missing_text(lacking, args.db)}",
                file=sys.stderr,
            )
        elif lacking and not args.dry_run:
            raise UsageError(text_refusal(picked, args.db, skip_hint="--skip-missing-text"))
        work = plan(project.conn, pairs, setting, args.model, args.repeat)
        if args.dry_run:
            print(describe_plan(work, template, args.model, args.repeat))
            if lacking and not args.skip_missing_text:
                refusal = text_refusal(picked, args.db, skip_hint="--skip-missing-text")
                print(
                    f"note: the run would refuse (pairs without text are not counted above):"
                    f" {refusal}"
                )
            return 0
        if not work.slots:
            print(f"nothing to ask: {describe_plan(work, template, args.model, args.repeat)}")
            return 0
        limits = run_limits(args, setup)
        bar = ProgressLine()
        try:
            finished = execute(project, work, setup, limits, on_progress=bar.update)
        finally:
            bar.close()
    print(summary(finished.tally, finished.status))
    if finished.status == "interrupted":
        return EXIT_INTERRUPTED
    return 1 if finished.tally.stopped or finished.tally.failed else 0


def run_answers(args: argparse.Namespace) -> int:
    from raglabel.judge.client import endpoint_url, public_endpoint
    from raglabel.session import answer_judging
    from raglabel.session.judging import JudgeSetup, execute
    from raglabel.storage.project import Project

    criteria = answer_judging.parse_criteria(args.criteria)
    if len(set(args.system)) != len(args.system):
        raise UsageError("--system: a system is named twice")
    endpoint = public_endpoint(endpoint_url(args.base_url))
    setting = answer_judging.answer_setting(endpoint, params_of(args))
    setup = JudgeSetup(setting, tuple(args.model), args.repeat, args.api_key_env, args.base_url)
    with Project.open(args.db) as project:
        items = answer_judging.pick_items(project, args.system, args.query)
        planned = len(items) * len(criteria) * len(args.model) * args.repeat
        if planned > MAX_ANSWERS:
            raise UsageError(
                f"{len(items):,} samples x {len(criteria)} criteria x {len(args.model)}"
                f" model(s) x {args.repeat} repeat(s) = {planned:,} answers, more than one run"
                f" asks ({MAX_ANSWERS:,}); narrow it with --system, --criteria or --query"
            )
        work = answer_judging.plan(project, items, criteria, setup)
        if args.dry_run:
            print(describe_answer_plan(work, criteria, args.model, args.repeat))
            return 0
        if not work.slots:
            print(
                f"nothing to ask: {describe_answer_plan(work, criteria, args.model, args.repeat)}"
            )
            return 0
        limits = run_limits(args, setup)
        bar = ProgressLine()
        try:
            ran = execute(project, work, setup, limits, on_progress=bar.update)
        finally:
            bar.close()
        finished = answer_judging.account(project, work, ran)
    print(answer_summary(finished, work))
    if finished.status == "interrupted":
        return EXIT_INTERRUPTED
    return 1 if finished.tally.stopped or finished.tally.failed else 0


def describe_answer_plan(
    work: Plan[AnswerSlot], criteria: tuple[str, ...], models: list[str], repeats: int
) -> str:
    from raglabel.judge.answer_prompt import render
    from raglabel.metrics.criteria import RANKING

    prompt_chars = 0
    reply_tokens = 0
    by_criterion = dict.fromkeys(criteria, 0)
    for slot in work.slots:
        prompt_chars += len(render(slot.item, slot.criterion))
        by_criterion[slot.criterion] += 1
        if slot.criterion == RANKING:
            reply_tokens += CHUNKS_REPLY_TOKENS + CHUNK_REPLY_TOKENS * len(slot.item.contexts)
        else:
            reply_tokens += REPLY_TOKENS
    total = work.targets * len(models) * repeats
    counts = ", ".join(f"{name} {count}" for name, count in by_criterion.items())
    lines = [
        f"{len(work.slots)} requests to send for {work.targets} (sample, criterion) pairs"
        f" x {len(models)} model(s) x {repeats} repeat(s) = {total} answers"
        f" ({work.cached} already answered); by criterion: {counts};"
        f" about {prompt_chars // CHARS_PER_TOKEN:,} prompt tokens and {reply_tokens:,} reply"
        " tokens, before any retry or repair"
    ]
    lines.extend(_skipped(work))
    return "\n".join(lines)


def _skipped(work: Plan[AnswerSlot]) -> list[str]:
    """The (sample, criterion) pairs never sent because an input is missing, by reason."""
    from raglabel.metrics.criteria import NA_REASONS

    if not work.skipped:
        return []
    total = sum(work.skipped.values())
    lines = [f"not asked, inputs missing (NA): {total}"]
    for (criterion, reason), count in sorted(work.skipped.items()):
        lines.append(f"  {criterion}: {count} {reason} ({NA_REASONS.get(reason, reason)})")
    return lines


def answer_summary(finished: AnswerFinished, work: Plan[AnswerSlot]) -> str:
    usage = finished.usage
    both = usage.prompt_tokens + usage.completion_tokens
    lines = [
        summary(finished.tally, finished.status),
        f"tokens reported by the endpoint: {usage.prompt_tokens:,} prompt +"
        f" {usage.completion_tokens:,} completion = {both:,} over {usage.requests:,} answers",
    ]
    lines.extend(_skipped(work))
    if finished.flagged:
        lines.append(
            f"flagged for a human look (text aimed at the grader): {len(finished.flagged)}"
            " sample(s); their judge grades deserve a check"
        )
        for flagged in finished.flagged[:SHOW_FLAGGED]:
            lines.append(f"  {flagged.system}/{flagged.sample_id}: {'; '.join(flagged.why)}")
        if len(finished.flagged) > SHOW_FLAGGED:
            lines.append(f"  ... and {len(finished.flagged) - SHOW_FLAGGED} more")
    return "\n".join(lines)


def describe_plan(work: Plan[Slot], template: Template, models: list[str], repeats: int) -> str:
    sizes = [
        len(template.render(p.query, p.passage, p.title)) for p in (s.pair for s in work.slots)
    ]
    prompt_tokens = sum(sizes) // CHARS_PER_TOKEN
    total = work.targets * len(models) * repeats
    return (
        f"{len(work.slots)} requests to send for {work.targets} pairs x {len(models)} model(s)"
        f" x {repeats} repeat(s) = {total} answers ({work.cached} already answered);"
        f" about {prompt_tokens:,} prompt tokens and"
        f" {len(work.slots) * REPLY_TOKENS:,} reply tokens, before any retry or repair"
    )


def summary(tally: Tally, status: str) -> str:
    head = {
        "done": "judge run finished",
        "stopped": "judge run stopped",
        "interrupted": "judge run interrupted; what finished is kept",
    }[status]
    lines = [
        f"{head}: {tally.ok} answers graded, {tally.failed} failed, {tally.cached} from cache,"
        f" {tally.retries} retries, {tally.repairs} repairs asked"
    ]
    if tally.failures:
        lines.append(f"failures by reason: {tally.failures.brief()}")
        lines.extend(tally.failures.lines())
    if tally.stopped:
        lines.append(f"stopped because: {tally.stopped}")
        if tally.done < tally.planned:
            left = tally.planned - tally.done
            lines.append(f"not answered: {left} (the next run asks for them)")
    if tally.failed or status != "done":
        lines.append("run the same command again to ask only what is missing or failed")
    return "\n".join(lines)


class ProgressLine:
    """A one-line bar on a terminal; on a pipe or CI log, a plain line every 10 s."""

    PLAIN_EVERY_S = 10.0
    DRAW_EVERY_S = 0.1

    def __init__(self, command: str = "judge") -> None:
        self.command = command  # what a plain line is headed with: the command running
        self.tty = sys.stderr.isatty()
        self._last = 0.0
        self._drawn = False
        self._ended = False

    def update(self, tally: Tally) -> None:
        moment = time.monotonic()
        final = tally.done == tally.planned
        if self._ended or (
            not final
            and moment - self._last < (self.DRAW_EVERY_S if self.tty else self.PLAIN_EVERY_S)
        ):
            return
        self._ended = final
        self._last = moment
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + tally.bar() + " " + tally.describe())
            self._drawn = True
        elif tally.done:
            sys.stderr.write(f"raglabel {self.command}: {tally.describe()}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self._drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
