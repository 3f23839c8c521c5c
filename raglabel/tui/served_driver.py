"""The driver of an app that ``raglabel serve`` runs for a browser tab."""

from __future__ import annotations

from textual import messages
from textual.drivers.web_driver import WebDriver


class ServedDriver(WebDriver):
    """Textual's web driver, but an app whose input ends without its own exit quits.

    A tab's app reads its keys from a pipe the server holds. If the server is killed
    (``kill -9``, an out-of-memory kill), the pipe closes and Textual's driver stops
    reading, yet the app would run on alone, holding the project file open, in a session
    of its own (raglabel/web/tab.py) that no hangup reaches. The app's own exit sets
    ``exit_event`` before it stops the reader, so an unset event means the server is gone.
    """

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():
            # Textual's post_message is safe from another thread, as the driver's own
            # key events are posted from this one.
            self._app.post_message(messages.ExitApp())
