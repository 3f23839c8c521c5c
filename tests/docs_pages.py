"""The documentation pages' fenced blocks, and which test runs each.

Every fenced block on a page under ``docs/`` names its language and sits below a one-line
HTML comment (a blank line between them) that says what becomes of it:

- ``<!-- run by tests/test_x.py -->``: that test file takes the block through
  :func:`examples` and runs it; ``tests/unit/test_docs_examples.py`` checks that the file
  asks for the page's examples;
- ``<!-- not run: why -->``: a shape with placeholders, printed output, or commands no
  test can run (a paid endpoint, an interactive app), and the reason.

A comment is invisible on the built site, so a reader sees only the block.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>.*)$")
MARK = re.compile(r"^<!-- (?:run by (?P<test>tests/\S+\.py)|not run: (?P<why>.+?)) -->$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a docs page."""

    page: str  # the path under docs/
    line: int  # the opening fence's line, 1-based
    language: str  # the fence's info string, "" when it gives none
    code: str  # the lines between the fences, their indentation removed
    mark: str  # the comment line above it, stripped; "" when there is none


def pages() -> list[str]:
    return sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))


def blocks(page: str, docs: Path = DOCS) -> list[Block]:
    lines = (docs / page).read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    at = 0
    while at < len(lines):
        opening = FENCE.match(lines[at])
        if opening is None:
            at += 1
            continue
        closing = f"{opening['indent']}{opening['fence']}"
        end = at + 1
        while end < len(lines) and lines[end].rstrip() != closing:
            end += 1
        if end == len(lines):
            raise AssertionError(f"docs/{page}:{at + 1}: a fence that never closes")
        above = next((line.strip() for line in reversed(lines[:at]) if line.strip()), "")
        found.append(
            Block(
                page=page,
                line=at + 1,
                language=opening["info"].strip(),
                code=textwrap.dedent("\n".join(lines[at + 1 : end])) + "\n",
                mark=above if above.startswith("<!--") else "",
            )
        )
        at = end + 1
    return found


def runner(block: Block) -> str | None:
    """The test file a block's mark names, as ``tests/test_x.py``; None when not run."""
    mark = MARK.match(block.mark)
    return None if mark is None else mark["test"]


def examples(page: str, test: str, language: str) -> list[str]:
    """The code of each ``language`` block of ``page`` marked as run by ``test`` (the
    calling file's path under the checkout, ``tests/test_x.py``)."""
    chosen = [
        block.code for block in blocks(page) if runner(block) == test and block.language == language
    ]
    assert chosen, f"docs/{page} has no {language} block marked as run by {test}"
    return chosen
