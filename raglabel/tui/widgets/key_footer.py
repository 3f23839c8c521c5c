"""The key bar at the bottom of a screen, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.widgets import Footer

#: What the bar shows of each binding: key, how it is shown, what it says, its action,
#: whether it is enabled, its tooltip, its group.
Shown = tuple[tuple[object, ...], ...]


class KeyFooter(Footer):
    """Textual's Footer, which builds a new widget for every key each time the screen's
    bindings are published again: every time its screen comes back on the stack, the
    same keys, a tenth of a second of each open of a query. This one rebuilds only when
    what it shows differs."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: Shown | None = None

    def _keys(self) -> Shown:
        # Every binding, shown or not: the command palette's key shows in the bar too.
        return tuple(
            (
                *(binding.key, binding.key_display, binding.description, binding.action),
                *(binding.show, binding.group, enabled, tooltip),
            )
            for _, binding, enabled, tooltip in self.screen.active_bindings.values()
        )

    async def recompose(self) -> None:
        # The bar asks for this after a refresh; by then its screen may have been popped
        # (Escape pressed twice in a row), and a detached bar has no screen to ask.
        # ``_pruning`` is Textual's own flag (not API): without it, attachment alone.
        if not self.is_attached or getattr(self, "_pruning", False):
            return
        shown = self._keys()
        if shown != self._shown:
            self._shown = shown
            await super().recompose()
