"""The app's full garbage collections wait for a moment without input (tui/collector.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from raglabel.session.options import AppOptions
from raglabel.tui.app import create_app
from raglabel.tui.collector import BACKSTOP, REST_S, Collector


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """The collector's thresholds as the test found them, put back whatever happens."""
    found = gc.get_threshold()
    yield found
    gc.set_threshold(*found)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_full_collections_wait_for_rest_and_for_their_usual_count(
    thresholds: tuple[int, int, int],
) -> None:
    clock = Clock()
    collector = Collector(clock)
    assert not collector.due()  # not held: CPython's own rule applies
    collector.hold()
    young, middle, full = gc.get_threshold()
    assert (young, middle) == thresholds[:2]
    assert full > 1_000_000  # no automatic full collection while held
    gc.collect()  # counts start from a full collection
    for _ in range(thresholds[2]):
        gc.collect(1)  # each middle collection counts towards a full one
    assert gc.get_count()[2] >= thresholds[2]
    assert not collector.due()  # just made: no rest yet
    clock.now += REST_S / 2
    collector.input_seen()
    clock.now += REST_S / 2
    assert not collector.due()  # a key came in meanwhile
    clock.now += REST_S
    assert collector.due()
    assert collector.collect_if_due()
    assert gc.get_count()[2] == 0
    assert not collector.collect_if_due()  # nothing counted since
    collector.release()
    assert gc.get_threshold() == thresholds
    assert not collector.due()


def test_rest_alone_does_not_collect(thresholds: tuple[int, int, int]) -> None:
    clock = Clock()
    collector = Collector(clock)
    collector.hold()
    gc.collect()
    clock.now += 10 * REST_S
    assert not collector.due()  # no middle collection since the last full one
    collector.release()


def test_keys_that_never_stop_still_get_a_full_collection(
    thresholds: tuple[int, int, int],
) -> None:
    clock = Clock()
    collector = Collector(clock)
    collector.hold()
    gc.collect()
    for _ in range(thresholds[2]):
        gc.collect(1)
    assert not collector.due()  # no rest: held back
    for _ in range((BACKSTOP - 1) * thresholds[2]):
        gc.collect(1)
    collector.input_seen()
    assert collector.due()  # held back long enough: memory must not grow for good
    collector.release()


def test_holds_nest_and_the_last_release_gives_the_thresholds_back(
    thresholds: tuple[int, int, int],
) -> None:
    first, second = Collector(), Collector()
    first.hold()
    second.hold()
    second.hold()  # once per collector
    first.release()
    assert gc.get_threshold()[2] > 1_000_000  # the second app still holds them
    second.release()
    assert gc.get_threshold() == thresholds
    second.release()  # again: nothing left to give back
    assert gc.get_threshold() == thresholds


def test_a_collector_without_a_full_threshold_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CPython 3.14's incremental collector ignores the third threshold and reports 0.
    monkeypatch.setattr(gc, "get_threshold", lambda: (2000, 10, 0))
    changed: list[object] = []
    monkeypatch.setattr(gc, "set_threshold", lambda *a: changed.append(a))
    clock = Clock()
    collector = Collector(clock)
    collector.hold()
    clock.now += 10 * REST_S
    assert changed == [] and not collector.due()
    collector.release()
    assert changed == []


async def test_the_app_holds_full_collections_while_it_runs(
    demo_db: Path, thresholds: tuple[int, int, int]
) -> None:
    app = create_app(AppOptions(project=demo_db, annotator="ann"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert gc.get_threshold()[2] > 1_000_000
        seen = app.collector._last_input
        await pilot.press("down")
        assert app.collector._last_input > seen  # keys count as input
    assert gc.get_threshold() == thresholds  # given back on exit
