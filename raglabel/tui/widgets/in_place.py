"""A Static's new content, drawn where it stands when it needs no more or fewer lines."""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static


def update_in_place(static: Static, content: VisualType) -> None:
    """Show ``content`` in ``static``, laying the screen out again only if the content's
    height changes.

    Static.update lays the whole screen out on every update, in case the content grew or
    shrank. A grade changes a query's head and metrics panel by a figure or two, which
    rarely changes their height; the layout it would cost is a fifth of the CPU of a
    grade (the screen is laid out again after it too, for whatever it resized). A Static
    held below its content's height (``max-height``) is laid out each time, as before.
    """
    if not static.is_mounted or not static.size:
        static.update(content)  # nothing drawn yet: the first layout sizes it
        return
    static.update(content, layout=False)
    width = static.content_size.width
    needed = static.get_content_height(static.container_size, static.screen.size, width)
    if needed != static.content_size.height:
        static.refresh(layout=True)
