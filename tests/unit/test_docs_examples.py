"""Every fenced block on the documentation pages is run by a test or says why it is not.

The rule is in tests/docs_pages.py: a block names its language and sits below a comment,
``<!-- run by tests/test_x.py -->`` or ``<!-- not run: why -->``. A block marked as run
must be one its test file can take: the file exists and asks :func:`docs_pages.examples`
for that page. The test files then assert what each command or doctest does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_pages import MARK, ROOT, Block, blocks, pages, runner


def every_block() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def where(block: Block) -> str:
    return f"docs/{block.page}:{block.line}"


def test_the_pages_have_examples_run_by_tests() -> None:
    run = [block for block in every_block() if runner(block) is not None]
    # The guide's eval, serve, answers, report and judge pages, the API's doctests, the
    # project file's commands and the nginx block.
    assert len(run) >= 14
    assert {block.page for block in run} >= {
        "guide/eval.md",
        "guide/serve.md",
        "guide/answers.md",
        "guide/report.md",
        "guide/judge.md",
        "reference/api.md",
        "reference/project-file.md",
    }


@pytest.mark.parametrize("block", every_block(), ids=where)
def test_each_block_is_run_or_says_why_not(block: Block) -> None:
    assert block.language, f"{where(block)}: name the block's language (```bash, ```text, ...)"
    assert MARK.match(block.mark), (
        f"{where(block)}: put '<!-- run by tests/test_x.py -->' or '<!-- not run: why -->' on"
        f" the line above the block (a blank line between them), not {block.mark!r}"
    )
    test = runner(block)
    if test is not None:
        source = ROOT / test
        assert source.is_file(), f"{where(block)}: {test} does not exist"
        text = source.read_text(encoding="utf-8")
        assert "examples(" in text and f'"{block.page}"' in text, (
            f"{where(block)}: {test} never asks docs_pages.examples for {block.page}"
        )


def test_the_rule_sees_a_block_without_a_mark(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(
        "# A page\n\n```python\nprint(1)\n```\n\n"
        "- a list item\n\n  <!-- not run: output -->\n\n  ```text\n  1\n  ```\n"
        "\n````\nno language\n````\n",
        encoding="utf-8",
    )
    unmarked, indented, bare = blocks("page.md", tmp_path)
    assert (unmarked.mark, unmarked.language, unmarked.code) == ("", "python", "print(1)\n")
    assert MARK.match(indented.mark) and runner(indented) is None
    assert (indented.language, indented.code, indented.line) == ("text", "1\n", 11)
    assert (bare.language, bare.code) == ("", "no language\n")
