"""The Python API examples of docs/reference/api.md, run as the doctests they are written as."""

from __future__ import annotations

import doctest
from pathlib import Path

from docs_pages import examples

PAGE = "reference/api.md"


def test_the_python_api_examples_print_what_the_page_says() -> None:
    blocks = examples(PAGE, f"tests/unit/{Path(__file__).name}", "python")
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    count = 0
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"docs-python-{i}", f"docs/{PAGE}", 0)
        count += len(test.examples)
        runner.run(test)
    assert count >= 13
    assert runner.failures == 0, f"{runner.failures} example(s) of docs/{PAGE} printed otherwise"
