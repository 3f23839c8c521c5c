"""The numpy column cutter: exact numbers, and no answer at all for any file the line
reader would split differently."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raglabel.formats.trec.canonical import is_canonical
from raglabel.formats.trec.columns import split_fields

plain_decimal = st.from_regex(r"-?[0-9]{1,7}(\.[0-9]{0,8})?", fullmatch=True) | st.from_regex(
    r"-?\.[0-9]{1,12}", fullmatch=True
)


@given(st.lists(plain_decimal, min_size=1, max_size=30))
def test_decimals_equal_python_float(texts: list[str]) -> None:
    data = "".join(f"q Q0 d 1 {t} x\n" for t in texts).encode()
    fields = split_fields(data, 6)
    assert fields is not None
    values = fields.decimals(4)
    assert values is not None
    assert [repr(float(v)) for v in values] == [repr(float(t)) for t in texts]


@st.composite
def fixed_layout(draw: st.DrawFn) -> list[str]:
    """Values of one width with the point (if any) in one place, as ``%.Nf`` writes them."""
    digits = draw(st.integers(1, 16))
    point = draw(st.none() | st.integers(0, digits))
    values = draw(st.lists(st.integers(0, 10**digits - 1), min_size=1, max_size=30))
    texts = [f"{v:0{digits}d}" for v in values]
    return texts if point is None else [f"{t[:point]}.{t[point:]}" for t in texts]


@given(fixed_layout())
def test_fixed_layout_decimals_equal_python_float(texts: list[str]) -> None:
    # One layout for every value takes the short way (and 16 digits, too many for an
    # exact mantissa, the long one, which declines them).
    fields = split_fields("".join(f"q Q0 d 1 {t} x\n" for t in texts).encode(), 6)
    assert fields is not None
    values = fields.decimals(4)
    if sum(c.isdigit() for c in texts[0]) > 15:
        assert values is None
        return
    assert values is not None
    assert [repr(float(v)) for v in values] == [repr(float(t)) for t in texts]


@given(st.lists(st.integers(-(10**17), 10**17), min_size=1, max_size=30))
def test_integers_equal_python_int(numbers: list[int]) -> None:
    fields = split_fields("".join(f"q 0 d {n}\n" for n in numbers).encode(), 4)
    assert fields is not None
    values = fields.integers(3)
    assert values is not None and values.tolist() == numbers


@pytest.mark.parametrize(
    "score", ["1e5", "+1", "inf", "nan", "1_0", "1.2.3", "-", "1234567890123456"]
)
def test_other_numbers_are_left_to_python(score: str) -> None:
    fields = split_fields(f"q Q0 d 1 {score} x\n".encode(), 6)
    assert fields is not None and fields.decimals(4) is None


@pytest.mark.parametrize(
    "text",
    [
        "q Q0 d 1 0.5 x\nq Q0 e 2 0.4\n",  # a short line
        "q Q0 d 1 0.5 x y\n",  # an extra field
        "q Q0  d 1 0.5 x\n",  # a doubled space
        " q Q0 d 1 0.5 x\n",  # a leading space
        "q Q0 d 1 0.5 x \n",  # a trailing space
        "q Q0 d 1 0.5 x\n\nq Q0 e 1 0.5 x\n",  # a blank line
        "# q Q0 d 1 0.5\nq Q0 e 1 0.5 x\n",  # a comment
        "q Q0 d 1 0.5 x\r\n",  # a carriage return
        "q\tQ0 d 1 0.5 x\n",  # a tab
        "q Q0 d\x1f 1 0.5 x\n",  # a unit separator (str.split splits on it)
        "q Q0 d\u00a0e 1 0.5 x\n",  # a no-break space
        "",
    ],
)
def test_odd_layouts_are_left_to_the_line_reader(text: str) -> None:
    assert split_fields(text.encode(), 6) is None


def test_fields_are_cut_exactly() -> None:
    fields = split_fields("q1 Q0 doc-\u00e9 1 2.5 t\nq10 Q0 z 2 -0 t".encode(), 6)
    assert fields is not None
    assert fields.text(0).tolist() == [b"q1", b"q10"]
    assert fields.text(2).tolist() == ["doc-\u00e9".encode(), b"z"]
    scores = fields.decimals(4)
    assert scores is not None and [repr(s) for s in scores.tolist()] == ["2.5", "-0.0"]


def test_both_fast_readers_leave_every_white_space_split_sees_to_the_exact_reader() -> None:
    # One set of bytes (canonical.UNICODE_SPACE) decides for the numpy cutter and the
    # polars reader alike; it must hold every character outside ASCII that str.split,
    # and so the exact reader, splits on, and no other.
    splits = [chr(c) for c in range(0x80, sys.maxunicode + 1) if len(f"a{chr(c)}b".split()) == 2]
    assert splits  # NEL, no-break space, ...
    for char in splits:
        line = f"q Q0 d{char}x 1 0.5 t\n".encode()
        assert split_fields(line, 6) is None, hex(ord(char))
        assert not is_canonical(line), hex(ord(char))
    for char in ("é", "\u200b", "\u2060", "\ufeff", "\U0001f600"):  # not white space to split
        line = f"q Q0 d{char}x 1 0.5 t\n".encode()
        assert split_fields(line, 6) is not None and is_canonical(line), hex(ord(char))
