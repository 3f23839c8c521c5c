"""The README's Python API examples, run as the doctests they are written as."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_python_api_examples_print_what_the_readme_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python API", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python block in the README's Python API section"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    examples = 0
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"README-python-{i}", "README.md", 0)
        examples += len(test.examples)
        runner.run(test)
    assert examples >= 13
    assert runner.failures == 0, f"{runner.failures} README example(s) printed otherwise"
