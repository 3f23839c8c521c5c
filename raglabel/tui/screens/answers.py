"""One query's RAG answers: each system's answer sentence by sentence beside its
contexts, each criterion's grade, the judge's suggestion, and unsupported sentences."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar, cast

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from raglabel.metrics.criteria import CRITERIA, RUBRICS
from raglabel.session.timing import Timing
from raglabel.tui.keys import bind, first_key
from raglabel.tui.screens.grade import IDLE_CAP_MS
from raglabel.tui.widgets.answer_table import JUDGE_STYLE, AnswerTable
from raglabel.tui.widgets.passage_view import highlighted, query_terms
from raglabel.tui.widgets.status import SaveMark

if TYPE_CHECKING:
    from raglabel.judge.work import AnswerItem
    from raglabel.session.answers import (
        AnswerChange,
        AnswerGrading,
        AnswerKey,
        AnswerView,
        CriterionView,
        JudgeView,
    )
    from raglabel.tui.app import GradingApp

_GRADE = Binding.Group("grade", compact=True)
#: The gutter before each sentence: the cursor, then the unsupported mark.
GUTTER = 3


def judge_text(view: CriterionView, flags: Sequence[str] = ()) -> Text:
    """The judge on one criterion, worded so it never reads as a grade, with the first
    flag on the answer (as passages show ``!``) when the judge answered."""
    if not view.gradable:
        return Text(f"NA: {view.missing_text}", style="yellow")
    judge = view.judge
    if judge is None:
        return Text("no judge answer on this criterion", style="dim italic")
    out = _judge_words(judge)
    if flags:
        more = f" (+{len(flags) - 1} more)" if len(flags) > 1 else ""
        flagged = Text(f"! flagged, check the judge: {flags[0]}{more} · ", style="bold yellow")
        out = flagged + out
    return out


def _judge_words(judge: JudgeView) -> Text:
    models = ", ".join(judge.models)
    if judge.hidden:
        return Text(
            f"judge answered ({models}); blind: its grade shows once you grade this",
            style=JUDGE_STYLE,
        )
    if judge.grade is None:
        return Text(f"judge failed ({models}): {judge.error}", style="italic red")
    spread = "" if judge.low == judge.high else f", answers ranged {judge.low}-{judge.high}"
    out = Text(f"judge suggests {judge.grade} ({models}{spread})", style=JUDGE_STYLE)
    if judge.failed:
        out.append(f", {judge.failed} failed", style="italic red")
    if judge.reason:
        out.append(f": {judge.reason}", style="italic dim")
    return out


def undo_text(change: AnswerChange) -> str:
    now = "ungraded" if change.grade is None else str(change.grade)
    return (
        f"undo: {change.query} / {change.system} / {change.criterion} is now {now}"
        f" · event {change.event_id}"
    )


class AnswersScreen(Screen[None]):
    # Side by side from 100 columns: the answer and its contexts each keep 48 or more.
    HORIZONTAL_BREAKPOINTS = [(0, "-stacked"), (100, "-beside")]  # noqa: RUF012
    #: Which rubric the Help screen opens with over this screen.
    help_topic = "answers"
    BINDINGS: ClassVar[list[BindingType]] = [
        *(bind(f"grade_{g}", f"grade({g})", label="grade", group=_GRADE) for g in range(1, 6)),
        # The sentence and criterion keys are named where they act (the answer's border,
        # the criterion line), so the footer keeps room for undo and help at 80 columns.
        bind("prev_sentence", "sentence(-1)", show=False),
        bind("next_sentence", "sentence(1)", show=False),
        bind("unsupported", "mark"),
        bind("prev_criterion", "criterion(-1)", show=False),
        bind("next_criterion", "criterion(1)", show=False),
        bind("clear", "clear", show=False),
        bind("down", "answer(1)", show=False),
        bind("up", "answer(-1)", show=False),
        bind("next_query", "query(1)", show=False),
        bind("prev_query", "query(-1)", show=False),
        bind("contexts_down", "contexts(1)", show=False),
        bind("contexts_up", "contexts(-1)", show=False),
        bind("queries", "app.queries"),
        Binding("escape", "back", show=False),
    ]

    def __init__(
        self, query: str, focus: tuple[str, str, str] | None = None, *, saved: str | None = None
    ) -> None:
        """``focus``: (system, sample id, criterion) to show first; ``saved``: what the
        status line says was saved (an undo that opened this view)."""
        super().__init__()
        self._saved_note = saved
        self.query_id = query
        self.views: list[AnswerView] = []
        self.current: AnswerKey | None = None
        self.criterion: str = CRITERIA[0]
        self.sentence = 0
        self._focus = focus
        self._shown_at: str | None = None
        self._active_ms = 0
        self._last = time.monotonic()

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    @property
    def grading(self) -> AnswerGrading:
        return self.glapp.session.answers

    def compose(self) -> ComposeResult:
        yield Static(id="answers-head")
        yield AnswerTable(id="answer-table")
        yield Static(id="criterion-line")
        with Horizontal(id="answers-body"):
            with VerticalScroll(id="answer-pane"):
                yield Static(id="sentences")
            # What the criterion checks the answer against: the contexts, and for
            # context recall the reference first.
            with VerticalScroll(id="contexts-pane"):
                yield Static(id="reference")
                yield Static(id="contexts")
        yield SaveMark(id="answers-status")
        yield Footer()

    def on_mount(self) -> None:
        for pane in self.query(VerticalScroll):
            pane.can_focus = False  # every key goes to this screen's bindings
        focus = self._focus
        self.load(self.query_id, focus[:2] if focus else None, focus[2] if focus else None)
        if self._saved_note is not None:
            self.query_one(SaveMark).saved(self._saved_note)
            return
        self.query_one(SaveMark).note(
            f"1-5 grade the ▸ criterion · {self._key('help')} the rubric and every key"
        )

    def on_screen_resume(self) -> None:
        # Grades may have changed on a screen above this one (passages graded relevant
        # stand in for a missing reference), or the annotator.
        if self.views:
            self.grading.reread()
            self.load(self.query_id, self.current, self.criterion)

    # -- showing -----------------------------------------------------------------------

    def load(
        self, query: str, focus: AnswerKey | None = None, criterion: str | None = None
    ) -> None:
        if query != self.query_id:
            self.query_one(SaveMark).note("")
        self.query_id = query
        self.views = self.grading.answers(query)
        keys = [view.key for view in self.views]
        if focus not in keys:
            focus = next((v.key for v in self.views if v.ungraded()), keys[0] if keys else None)
        if criterion is None and focus is not None:
            left = self._view(focus).ungraded()
            criterion = left[0] if left else CRITERIA[0]
        self._select(focus, criterion or self.criterion, reset_sentence=True)

    def _view(self, key: AnswerKey) -> AnswerView:
        return next(view for view in self.views if view.key == key)

    def _select(self, key: AnswerKey | None, criterion: str, *, reset_sentence: bool) -> None:
        """Put answer ``key`` and ``criterion`` in front of the annotator."""
        moved = key != self.current or criterion != self.criterion
        if moved:
            self._restart_timing()
        if key != self.current or reset_sentence:
            self.sentence = 0
        self.current, self.criterion = key, criterion
        self.query_one(AnswerTable).show(self.views, key, criterion)
        self._show_head()
        self._show_criterion()
        self._show_answer()
        if key is not None and (moved or reset_sentence):
            self.query_one("#answer-pane", VerticalScroll).scroll_home(animate=False)
            self.query_one("#contexts-pane", VerticalScroll).scroll_home(animate=False)

    def _refresh(self) -> None:
        """Show the loaded grades again after a write, on the same answer and criterion."""
        self.views = self.grading.answers(self.query_id)
        self._select(self.current, self.criterion, reset_sentence=False)

    def _show_head(self) -> None:
        session = self.glapp.session
        answered = self.grading.queries()
        position = answered.index(self.query_id) + 1 if self.query_id in answered else 0
        q = session.catalog.query_by_ext(self.query_id)
        text = session.catalog.queries[q].text if q is not None else ""
        view = self._view(self.current) if self.current is not None else None
        question = view.item.question if view is not None and view.item.question else text
        head = Text.assemble(
            (f"{self.query_id} ", "bold"),
            (f"[{position}/{len(answered)} answered] ", "dim"),
            question or "(no question text)",
        )
        if view is not None:
            number = self.views.index(view) + 1
            # Answers with something to grade, and those of them graded on everything.
            gradable = [v for v in self.views if any(c.gradable for c in v.criteria)]
            graded = sum(not v.ungraded() for v in gradable)
            head.append(
                f"\nanswer {number}/{len(self.views)} · {view.item.system} · "
                f"{graded}/{len(gradable)} fully graded · annotator {session.annotator}"
                + (" · blind" if session.blind else " · all annotators"),
                style="dim",
            )
        else:
            head.append("\nno system answered this query", style="dim")
        self.query_one("#answers-head", Static).update(head)

    def _show_criterion(self) -> None:
        line = self.query_one("#criterion-line", Static)
        if self.current is None:
            line.update("")
            return
        view = self._view(self.current).criterion(self.criterion)
        first = Text.assemble(
            ("▸ ", "bold"),
            (self.criterion, "bold"),
            (f" ({self._key('prev_criterion')} {self._key('next_criterion')})", "dim"),
            f": {RUBRICS[self.criterion].question}",
            no_wrap=True,
            overflow="ellipsis",
        )
        line.update(Group(first, judge_text(view, self._view(self.current).flags)))

    def _show_answer(self) -> None:
        sentences = self.query_one("#sentences", Static)
        reference = self.query_one("#reference", Static)
        contexts = self.query_one("#contexts", Static)
        pane = self.query_one("#answer-pane", VerticalScroll)
        if self.current is None:
            sentences.update(Text("No system answered this query.", style="dim"))
            reference.update("")
            contexts.update("")
            return
        view = self._view(self.current)
        item = view.item
        marks = set(view.unsupported)
        unsupported = len(view.unsupported)
        title = Text(f"answer · {item.system}", style="bold")
        if unsupported:
            title.append(
                f" · {unsupported} unsupported" + (" (waiting)" if view.waiting else ""),
                style="yellow" if view.waiting else "red",
            )
        pane.border_title = title
        pane.border_subtitle = (
            f"{self._key('prev_sentence')} {self._key('next_sentence')} sentence · "
            f"{self._key('unsupported')} unsupported"
        )
        if not view.sentences:
            sentences.update(Text("(the system gave no answer)", style="dim italic"))
        else:
            grid = Table.grid(padding=0)
            grid.add_column(width=GUTTER, no_wrap=True)
            grid.add_column(ratio=1)
            for i, (start, end) in enumerate(view.sentences):
                here = i == self.sentence
                marked = any(s < end and start < e for s, e in marks)
                gutter = Text("▸" if here else " ", style="bold")
                gutter.append("✗" if marked else " ", style="yellow" if view.waiting else "red")
                style = ("red" if marked else "") + (" bold" if here else "")
                body = Text(item.answer[start:end], style=style.strip())
                if here:
                    body.stylize("underline")
                grid.add_row(gutter, body)
            sentences.update(grid)
        recall = self.criterion == "context_recall"
        reference.update(self._reference_text(item))
        reference.display = recall
        self._show_contexts(view, reference=recall)
        self.call_after_refresh(self._scroll_to_sentence)

    def _reference_text(self, item: AnswerItem) -> Text:
        out = Text()
        if isinstance(item.reference, tuple):
            out.append("reference (key facts)\n", style="bold")
            for fact in item.reference:
                out.append(f"• {fact}\n")
        elif item.reference:
            out.append("reference\n", style="bold")
            out.append(item.reference + "\n")
        elif item.gold:
            out.append(
                "no reference: the passages graded relevant\n",
                style="bold",
            )
            for text in item.gold:
                out.append(f"• {text}\n")
        else:
            out.append("no reference, and no passage graded relevant\n", style="bold")
        return out

    def _show_contexts(self, view: AnswerView, *, reference: bool) -> None:
        pane = self.query_one("#contexts-pane", VerticalScroll)
        chunks = view.item.contexts
        pane.border_title = Text(
            ("reference, then " if reference else "") + f"contexts ({len(chunks)})",
            style="bold",
        )
        pane.border_subtitle = f"{self._key('contexts_up')} {self._key('contexts_down')} scroll"
        if not chunks:
            self.query_one("#contexts", Static).update(
                Text("The system retrieved no contexts.", style="dim")
            )
            return
        terms: list[str] = []
        if view.sentences:
            start, end = view.sentences[min(self.sentence, len(view.sentences) - 1)]
            terms = query_terms(view.item.answer[start:end])
        parts: list[Text] = []
        for chunk in chunks:
            head = Text(f"[{chunk.position + 1}] ", style="bold")
            head.append(chunk.pid, style="bold")
            if chunk.rank is not None:
                head.append(f" · rank {chunk.rank}", style="dim")
            parts.append(head)
            parts.append(highlighted(chunk.text or "(no text stored)", terms))
            parts.append(Text(""))
        self.query_one("#contexts", Static).update(Group(*parts))

    def _scroll_to_sentence(self) -> None:
        """Keep the sentence under the cursor in view, counting the wrapped lines of the
        sentences before it."""
        # Asked for after a refresh: Escape may have taken the screen apart by then (its
        # widgets go before it stops counting as attached).
        if self.current is None or not self.is_attached or self not in self.app.screen_stack:
            return
        view = self._view(self.current)
        if not view.sentences:
            return
        pane = self.query_one("#answer-pane", VerticalScroll)
        width = max(10, pane.scrollable_content_region.width - GUTTER)
        console = self.app.console
        top = 0
        for start, end in view.sentences[: self.sentence]:
            top += len(Text(view.item.answer[start:end]).wrap(console, width))
        start, end = view.sentences[self.sentence]
        height = len(Text(view.item.answer[start:end]).wrap(console, width))
        visible = pane.scrollable_content_region.height
        if top < pane.scroll_y:
            pane.scroll_to(y=top, animate=False)
        elif top + height > pane.scroll_y + visible:
            pane.scroll_to(y=max(0, top + height - visible), animate=False)

    def _key(self, binding_id: str) -> str:
        """The first key of a binding, as remapped, the way a person reads it."""
        key = first_key(self.glapp.session.options.keymap, binding_id)
        return {"pageup": "PgUp", "pagedown": "PgDn", "left": "←", "right": "→"}.get(key, key)

    # -- timing ------------------------------------------------------------------------

    def _restart_timing(self) -> None:
        self._tick()
        self._shown_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        self._active_ms = 0

    def _tick(self) -> None:
        now = time.monotonic()
        self._active_ms += min(int((now - self._last) * 1000), IDLE_CAP_MS)
        self._last = now

    def _timing(self) -> Timing:
        self._tick()
        return Timing(shown_at=self._shown_at, active_ms=self._active_ms)

    # -- after a write -----------------------------------------------------------------

    def _where(self, system: str, criterion: str | None = None) -> str:
        return f"{self.query_id} / {system}" + (f" / {criterion}" if criterion else "")

    def _saved(self, change: AnswerChange) -> None:
        where = f"{change.query} / {change.system}"
        if change.kind == "marks":
            count = len(change.unsupported or ())
            what = (
                f"{where}: {count} sentence{'s' if count != 1 else ''} unsupported "
                f"(faithfulness {change.grade} saved again with them)"
            )
        elif change.kind == "grade":
            what = f"{where} / {change.criterion} = {change.grade}"
            if change.unsupported:
                what += f" with {len(change.unsupported)} unsupported"
        else:
            what = f"{where} / {change.criterion}: {change.kind}"
        self.query_one(SaveMark).saved(f"{what} · event {change.event_id}")

    def show_undo(self, change: AnswerChange) -> None:
        """Bring the screen to what an undo reverted, and say what it is now."""
        self.grading.reread()
        self.load(change.query, (change.system, change.sample_id), change.criterion)
        self.query_one(SaveMark).saved(undo_text(change))

    def _failed(self, exc: Exception) -> None:
        self.query_one(SaveMark).failed(str(exc))
        self.app.bell()

    def on_answer_table_picked(self, message: AnswerTable.Picked) -> None:
        key = message.key if message.key is not None else self.current
        if key is not None:
            criterion = message.criterion or self.criterion
            self._select(key, criterion, reset_sentence=key != self.current)

    # -- actions -----------------------------------------------------------------------

    def _ready(self) -> AnswerKey | None:
        if self.current is None:
            self.query_one(SaveMark).note("No answer here: n and p go to queries with answers.")
        return self.current

    def action_grade(self, grade: int) -> None:
        key = self._ready()
        if key is None:
            return
        view = self._view(key).criterion(self.criterion)
        if not view.gradable:
            self.query_one(SaveMark).note(f"Nothing to grade: {view.missing_text}.")
            return
        try:
            change = self.grading.grade(key, self.criterion, grade, self._timing())
        except Exception as exc:
            self._failed(exc)
            return
        self._refresh()
        self._saved(change)
        self._advance()

    def _advance(self) -> None:
        from raglabel.session.answers import next_ungraded

        assert self.current is not None
        found = next_ungraded(self.views, self.current, self.criterion)
        if found is None:
            keys = self.glapp.session.options.keymap
            self.query_one(SaveMark).saved(
                f"{self.query_id}: every answer graded on every criterion · "
                f"{first_key(keys, 'next_query')} for the next query with answers"
            )
            return
        self._select(found[0], found[1], reset_sentence=found[0] != self.current)

    def action_clear(self) -> None:
        key = self._ready()
        if key is None:
            return
        if self._view(key).criterion(self.criterion).own is None:
            # An event that changes nothing would only clutter the log (and the undo).
            self.query_one(SaveMark).note(
                f"Nothing to clear: you have not graded {self.criterion}."
            )
            return
        try:
            change = self.grading.clear(key, self.criterion, self._timing())
        except Exception as exc:
            self._failed(exc)
            return
        self._refresh()
        self._saved(change)

    def action_mark(self) -> None:
        key = self._ready()
        if key is None:
            return
        view = self._view(key)
        faithfulness = view.criterion("faithfulness")
        if not faithfulness.gradable:
            self.query_one(SaveMark).note(
                f"Marks go with the faithfulness grade, which is NA here "
                f"({faithfulness.missing_text})."
            )
            return
        try:
            change = self.grading.toggle_mark(key, self.sentence, self._timing())
        except Exception as exc:
            self._failed(exc)
            return
        self._refresh()
        if change is not None:
            self._saved(change)
            return
        waiting = len(self._view(key).unsupported)
        self.query_one(SaveMark).note(
            f"{waiting} sentence{'s' if waiting != 1 else ''} marked unsupported: "
            "saved with your faithfulness grade (not before)"
        )

    def action_sentence(self, step: int) -> None:
        if self.current is None:
            return
        count = len(self._view(self.current).sentences)
        if count:
            self.sentence = max(0, min(count - 1, self.sentence + step))
            self._show_answer()

    def action_criterion(self, step: int) -> None:
        if self.current is None:
            return
        position = (CRITERIA.index(self.criterion) + step) % len(CRITERIA)
        self._select(self.current, CRITERIA[position], reset_sentence=False)

    def action_answer(self, step: int) -> None:
        if self.current is None or len(self.views) < 2:
            return
        keys = [view.key for view in self.views]
        target = keys[(keys.index(self.current) + step) % len(keys)]
        self._select(target, self.criterion, reset_sentence=True)

    def action_query(self, step: int) -> None:
        answered = self.grading.queries()
        if not answered:
            return
        position = answered.index(self.query_id) if self.query_id in answered else -1
        self.load(answered[(position + step) % len(answered)])

    def action_contexts(self, step: int) -> None:
        pane = self.query_one("#contexts-pane", VerticalScroll)
        if step > 0:
            pane.scroll_page_down(animate=False)
        else:
            pane.scroll_page_up(animate=False)

    def action_back(self) -> None:
        self.app.pop_screen()
