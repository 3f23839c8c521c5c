"""The sentence splitter behind unsupported marks: exact character spans, abbreviations,
decimals and line breaks, and spans that always tile the answer's text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raglabel.formats.sentences import sentence_spans


def split(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text)]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Open Settings. Choose Reset!", ["Open Settings.", "Choose Reset!"]),
        ("Is it free? Yes.", ["Is it free?", "Yes."]),
        # Abbreviations that never end a sentence.
        (
            "Use a format, e.g. CSV or JSON. Then upload it.",
            ["Use a format, e.g. CSV or JSON.", "Then upload it."],
        ),
        (
            "Plain text (i.e. no markup) works. Done.",
            ["Plain text (i.e. no markup) works.", "Done."],
        ),
        ("Ask Dr. Lee about it. She knows.", ["Ask Dr. Lee about it.", "She knows."]),
        ("See Fig. 3 for details. No. 5 is out.", ["See Fig. 3 for details.", "No. 5 is out."]),
        ("The answer is no. Try again.", ["The answer is no.", "Try again."]),
        # Decimals, versions and names: no space after the period.
        (
            "It costs 3.5 dollars. Version 2.10.1 fixed it.",
            ["It costs 3.5 dollars.", "Version 2.10.1 fixed it."],
        ),
        ("Visit example.com today. It is up.", ["Visit example.com today.", "It is up."]),
        # A lower-case word after the period continues the sentence.
        (
            "Open at 9 a.m. on weekdays. Closed Sundays.",
            ["Open at 9 a.m. on weekdays.", "Closed Sundays."],
        ),
        ("J. R. Smith wrote it. Read it.", ["J. R. Smith wrote it.", "Read it."]),
        # Line breaks end sentences; blank lines leave nothing behind.
        (
            "Steps:\n1. Open Settings.\n2. Choose Reset.\n\nThat is all",
            ["Steps:", "1. Open Settings.", "2. Choose Reset.", "That is all"],
        ),
        ("- first item\r\n- second item", ["- first item", "- second item"]),
        # Closing quotes and brackets stay with their sentence.
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("(It is optional.) Skip it.", ["(It is optional.)", "Skip it."]),
        ("Wait... What happened?", ["Wait...", "What happened?"]),
        ("Well... maybe not.", ["Well... maybe not."]),
        ("你好。再见！", ["你好。", "再见！"]),
        ("  padded  ", ["padded"]),
        ("", []),
        ("   \n\n ", []),
        ("No stop at the end", ["No stop at the end"]),
    ],
)
def test_sentences(text: str, sentences: list[str]) -> None:
    assert split(text) == sentences


def test_spans_are_offsets_into_the_text() -> None:
    text = "One.  Two 3.5 units.\nThree"
    assert sentence_spans(text) == [(0, 4), (6, 20), (21, 26)]


ALPHABET = st.sampled_from([*"ab A.!?\n\t3e.g\"')", "。", "\r\n", "...", "e.g. ", "Dr. "])


@given(st.lists(ALPHABET, max_size=60).map("".join))
def test_spans_tile_the_text(text: str) -> None:
    spans = sentence_spans(text)
    covered = [False] * len(text)
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(text)  # ordered, disjoint, not empty
        assert not text[start].isspace() and not text[end - 1].isspace()  # trimmed
        assert "\n" not in text[start:end] and "\r" not in text[start:end]  # one line
        for i in range(start, end):
            covered[i] = True
        previous_end = end
    # Every character outside the spans is whitespace: nothing of the answer is lost.
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))
