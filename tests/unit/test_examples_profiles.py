"""The quick and thorough profiles of the property tests (tests/examples.py): a quick run
draws a quarter of each property's examples, a thorough one all of them, and no property
of the suite names its count any other way."""

from __future__ import annotations

import itertools
import re

from docs_pages import ROOT
from examples import QUICK, QUICK_LEAST, THOROUGH, count, thinned
from hypothesis import settings


def test_thorough_draws_what_each_property_names() -> None:
    for written in (1, 10, 60, 200, 300):
        assert count(written, THOROUGH) == written


def test_quick_draws_a_quarter_and_never_fewer_than_the_least() -> None:
    assert [count(n, QUICK) for n in (200, 100, 60, 40, 25, 8)] == [50, 25, 15, 10, 10, 8]
    assert all(count(n, QUICK) >= min(n, QUICK_LEAST) for n in range(1, 400))


def test_a_thinned_loop_keeps_its_ends_and_spreads_the_rest() -> None:
    widths = list(range(1, 120, 3))
    assert thinned(widths, THOROUGH) == widths
    quick = thinned(widths, QUICK)
    assert len(quick) == count(len(widths), QUICK) == 10
    assert quick[0] == widths[0] and quick[-1] == widths[-1]
    assert quick == sorted(set(quick))
    steps = {b - a for a, b in itertools.pairwise(quick)}
    assert max(steps) - min(steps) <= 3  # one width apart at most: evenly spread
    assert thinned(range(5), QUICK) == [0, 1, 2, 3, 4]


def test_the_loaded_profile_is_one_of_the_two() -> None:
    assert settings.default.max_examples in {QUICK, THOROUGH}
    assert settings.default.max_examples == settings.get_profile("quick").max_examples or (
        settings.default.max_examples == settings.get_profile("thorough").max_examples
    )


def test_no_property_names_its_count_but_through_examples() -> None:
    # A max_examples written anywhere else escapes the profiles: a quick run would draw it
    # all, or a thorough run fewer than the property asks.
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name != "examples.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bmax_examples\s*=(?!=)", line)
    ]
    assert found == [], found
