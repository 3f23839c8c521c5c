"""The command palette (ctrl+p): export, switch annotator, change K, open a run, and over
a query its answers, the judge and accepting its suggestions."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from raglabel.tui.screens.grade import GradeScreen

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp


class LabelCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = cast("GradingApp", self.app)
        session = app.session
        commands: list[tuple[str, str, Callable[[], object]]] = []
        if not session.options.locked:
            commands += [
                (
                    "Export grades as TREC qrels",
                    "write the grades in view to a qrels file",
                    app.action_export,
                ),
                (
                    "Switch annotator",
                    f"grade as someone else (now {session.annotator})",
                    app.action_switch_annotator,
                ),
            ]
        commands += [
            (
                "Reload grades",
                "read every grade again (others' work, when not blind)",
                app.action_reload,
            ),
            ("Runs: means, intervals and comparisons", "open the Runs screen", app.action_runs),
            ("Help: rubric and keys", "the 1-5 scale in full and every key", app.action_help),
        ]
        # The screen the palette was opened from: app.screen is the palette itself.
        screen = self.screen
        if isinstance(screen, GradeScreen):
            query = session.catalog.queries[screen.qi].ext_id
            commands.append(
                (
                    f"Answers of {query}",
                    "grade each system's answer: faithfulness, relevancy, recall",
                    partial(app.open_answers, screen.qi),
                )
            )
            if not session.options.locked:  # the judge's calls are the server's to pay
                commands.append(
                    (
                        f"Judge query {query}",
                        "LLM suggestions for its ungraded passages, in the background",
                        screen.action_judge,
                    )
                )
            commands.append(
                (
                    f"Accept all suggestions for {query}",
                    "as your grades, for passages you have not graded (asks first)",
                    screen.action_accept_all,
                )
            )
        for k in session.options.cutoffs:
            commands.append(
                (f"Set K to {k}", "the cutoff of every metric and hole", partial(app.set_k, k))
            )
        for name in session.catalog.run_names:
            commands.append(
                (
                    f"Open run {name}",
                    "its means and intervals on the Runs screen",
                    partial(app.action_runs, name),
                )
            )
        if session.options.adjudicate:
            commands.append(
                (
                    "Adjudicate disagreements",
                    "pairs whose annotators differ by 2+",
                    app.action_adjudicate,
                )
            )
        return commands

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
