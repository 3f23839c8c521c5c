"""The probes' alterations of a passage (raglabel/judge/probe.py): padding with unrelated
text of about the passage's length, drawn from a seed, and the query's words appended."""

from __future__ import annotations

import random

import pytest

from raglabel.judge.probe import (
    BREAK,
    LENGTH,
    STUFFING,
    Filler,
    alter,
    filler,
    pad,
    query_words,
    stuff,
)

DONORS = [
    "Copper roofs turn green as the metal weathers over decades of rain.",
    "A lighthouse keeper once trimmed the wick every few hours through the night.",
    "Honey never spoils when it is sealed away from moisture.",
    "Granite forms when magma cools slowly deep under the surface.",
    "",  # a passage without text is never a donor
    "Owls turn their heads far because their necks hold extra vertebrae.",
]


def test_the_filler_is_about_the_passage_length_cut_at_a_space() -> None:
    found = filler(100, DONORS, set(), random.Random(1))
    assert 50 < found.chars <= 100
    assert not found.text.endswith(" ")
    # Whole words only: the text is a prefix of the donors joined, ending where a word ends.
    joined = BREAK.join(DONORS[i] for i in found.donors)
    assert joined.startswith(found.text)
    assert joined[found.chars] in " \n"


def test_the_filler_leaves_out_the_query_s_own_passages_and_empty_ones() -> None:
    for seed in range(30):
        found = filler(10_000, DONORS, {0, 3}, random.Random(seed))
        assert sorted(found.donors) == [1, 2, 5]  # all the others, each once
        assert "Copper" not in found.text and "Granite" not in found.text
    assert filler(50, DONORS, set(range(6)), random.Random(1)) == Filler("", ())


def test_the_filler_follows_its_seed() -> None:
    first = filler(150, DONORS, set(), random.Random("seed-a"))
    assert filler(150, DONORS, set(), random.Random("seed-a")) == first
    orders = {filler(150, DONORS, set(), random.Random(f"s{n}")).donors for n in range(20)}
    assert len(orders) > 3


def test_a_large_donor_list_is_drawn_without_a_shuffle_each_at_most_once() -> None:
    texts = [f"passage number {n} holds some words" for n in range(50_000)]
    found = filler(2_000, texts, {0, 1, 2}, random.Random(3))
    assert len(set(found.donors)) == len(found.donors) > 10
    assert not {0, 1, 2} & set(found.donors)
    assert 1_000 < found.chars <= 2_000


def test_a_word_longer_than_the_cut_is_cut_where_the_length_ends() -> None:
    found = filler(10, ["x" * 40], set(), random.Random(1))
    assert found.text == "x" * 10


def test_padding_appends_after_a_blank_line() -> None:
    extra = Filler("Unrelated words.", (4,))
    assert pad("The passage.", extra) == "The passage.\n\nUnrelated words."
    assert pad("The passage.", Filler("", ())) == "The passage."
    assert alter(LENGTH, "The passage.", "ignored", extra) == "The passage.\n\nUnrelated words."


def test_stuffing_appends_the_query_s_words_in_order() -> None:
    assert (
        query_words("What's the tide-table for Brest, 2024?")
        == "What s the tide table for Brest 2024"
    )
    assert stuff("Tides at Brest.", "Brest tides?") == "Tides at Brest.\n\nBrest tides"
    assert stuff("Tides.", "?!") == "Tides."
    assert alter(STUFFING, "Tides.", "brest tides", Filler("x", ())) == "Tides.\n\nbrest tides"


def test_an_unknown_probe_is_refused() -> None:
    with pytest.raises(ValueError, match="no probe named 'loud'"):
        alter("loud", "p", "q", Filler("", ()))
