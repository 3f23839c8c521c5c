"""Where the command palette's screenshot is saved, and what the app says about it.

Textual saves it in the downloads folder and, when that folder does not exist (a
server, a container, a fresh account), fails with "Failed to save screenshot" and no
word of where or why. Here it goes to the first of the downloads folder, the current
folder and the temporary folder that exists and can be written, and the app names the
file, or the folder and the reason when even that write fails.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

# Textual's own dependency, and where Textual looks: the same downloads folder.
from platformdirs import user_downloads_path


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def screenshot_folder() -> Path:
    """The downloads folder if it is a folder one can write in, else the current
    folder, else the temporary folder; the current folder when none is (the write
    then fails, and says why)."""
    candidates: list[Path] = [user_downloads_path()]
    with contextlib.suppress(OSError):  # the current folder was removed under the app
        candidates.append(Path.cwd())
    candidates.append(Path(tempfile.gettempdir()))
    return next((folder for folder in candidates if _writable(folder)), Path(os.curdir))


def saved_message(path: Path | None) -> str:
    """What the app says once the screenshot is written (``path`` None: a browser
    received it, under ``raglabel serve``)."""
    if path is None:
        return "Screenshot sent to the browser."
    return f"Screenshot saved to {path.resolve()}"


def failed_message(folder: Path | None, error: BaseException) -> str:
    """What the app says when the screenshot could not be written in ``folder``."""
    where = f" in {folder}" if folder is not None else ""
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return f"Screenshot NOT saved{where}: {reason or type(error).__name__}"
