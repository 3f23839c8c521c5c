"""Small canonical files cut into byte columns by numpy, with no per-line Python.

For inputs of a few megabytes, importing polars costs more than the work, and
splitting lines in Python costs most of the rest. When every line of a file is
exactly ``n`` fields separated by single spaces, the positions of the separators
say where each field starts and ends, and fields come out as fixed-width byte
arrays in a few vectorised steps. Anything else (tabs, runs of spaces, comments,
blank lines, extra fields, other white space, bad UTF-8) gives None, and the caller
reads the file with the exact line reader, which also names the line of any error.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.trec.canonical import UNICODE_SPACE

_SPACE, _NEWLINE, _HASH, _MINUS, _DOT, _ZERO, _NINE = (ord(c) for c in " \n#-.09")

# Exact decimal parsing: a mantissa below 2**53 divided by an exactly representable
# power of ten is one correctly rounded operation, so it equals Python's float().
_MAX_DIGITS = 15
_POWERS_OF_TEN = np.array([float(f"1e{i}") for i in range(23)])


class Fields:
    """Where the fields are: ``separators`` has a row per line, the position of the
    byte after each field (a space, the last one a newline); no field is longer than
    ``widest`` bytes.

    A plain class: a frozen dataclass costs a millisecond of every eval's start-up to
    create, for two attributes.
    """

    __slots__ = ("buffer", "separators", "widest")

    def __init__(
        self, buffer: NDArray[np.uint8], separators: NDArray[np.intp], widest: int
    ) -> None:
        self.buffer = buffer
        self.separators = separators
        self.widest = widest

    @property
    def rows(self) -> int:
        return int(self.separators.shape[0])

    def starts(self, field: int) -> NDArray[np.intp]:
        if field:
            return self.separators[:, field - 1] + 1
        starts = np.empty(self.rows, dtype=np.intp)
        starts[0] = 0
        starts[1:] = self.separators[:-1, -1] + 1
        return starts

    def longest(self, field: int) -> int:
        """The length in bytes of the longest value of field ``field``."""
        return int((self.separators[:, field] - self.starts(field)).max(initial=0))

    def matrix(self, field: int) -> NDArray[np.uint8]:
        """Field ``field`` of every line, zero-padded to the longest one."""
        starts = self.starts(field)
        lengths = self.separators[:, field] - starts
        width = int(lengths.max(initial=1))
        # One slice of the buffer per row: a window view, then a gather of rows (the
        # buffer has padding after its last line for the last windows).
        cells = np.lib.stride_tricks.sliding_window_view(self.buffer, width)[starts]
        # Safe: data holds no NUL byte, so zero padding is unambiguous. Multiplying by
        # the mask of kept bytes is a third cheaper than assigning through the mask of
        # padding (which first lists its positions), and a column of one width (scores
        # written to fixed decimals) needs no padding at all.
        if int(lengths.min(initial=width)) < width:
            cells *= np.arange(width) < lengths[:, None]
        return cells

    def text(self, field: int) -> NDArray[np.bytes_]:
        """Field ``field`` as fixed-width bytes; they compare in byte order, as str does."""
        cells = np.ascontiguousarray(self.matrix(field))
        return cells.view(f"S{cells.shape[1]}").ravel()

    def decimals(self, field: int) -> NDArray[np.float64] | None:
        """Field ``field`` as numbers, when every one is plain ``[-]digits[.digits]``."""
        fixed = self._fixed_point(field)
        if fixed is not None:
            return fixed
        parts = self._digits(field, _MAX_DIGITS, decimal_point=True)
        if parts is None:
            return None
        mantissa, fraction, negative = parts
        if int(fraction.max()) >= _POWERS_OF_TEN.size:
            return None
        values: NDArray[np.float64] = mantissa.astype(np.float64) / _POWERS_OF_TEN[fraction]
        values[negative] = -values[negative]
        return values

    def _fixed_point(self, field: int) -> NDArray[np.float64] | None:
        """Field ``field`` as numbers when every value has one layout, digits with the
        point (if any) in the same place, as runs write their scores (``%.4f``): a few
        passes over whole columns with no check per column, and one power of ten divides
        every mantissa. The same integer and the same division as :meth:`_digits`'s way,
        so the same floats; None for anything else (a sign, another width), which that
        way reads."""
        starts = self.starts(field)
        lengths = self.separators[:, field] - starts
        width = int(lengths.max(initial=0))
        if width == 0 or int(lengths.min()) != width:
            return None
        cells = np.lib.stride_tricks.sliding_window_view(self.buffer, width)[starts]
        points = np.flatnonzero(cells[0] == _DOT)
        if points.size > 1:
            return None
        digit_columns = np.ones(width, dtype=np.bool_)
        digit_columns[points] = False
        n_digits = int(digit_columns.sum())
        if not 1 <= n_digits <= _MAX_DIGITS:
            return None
        digits = cells[:, digit_columns] - np.uint8(_ZERO)  # wraps around below "0"
        if bool((digits >= 10).any()) or bool((cells[:, points] != _DOT).any()):
            return None
        mantissa = np.zeros(self.rows, dtype=np.int64)
        for column in digits.T:
            mantissa *= 10
            mantissa += column
        fraction = int(width - 1 - points[0]) if points.size else 0
        values: NDArray[np.float64] = mantissa.astype(np.float64) / _POWERS_OF_TEN[fraction]
        return values

    def integers(self, field: int) -> NDArray[np.int64] | None:
        """Field ``field`` as integers, when every one is plain ``[-]digits`` (< 10**18)."""
        parts = self._digits(field, 18, decimal_point=False)
        if parts is None:
            return None
        value, _, negative = parts
        value[negative] = -value[negative]
        return value

    def _digits(
        self, field: int, max_digits: int, *, decimal_point: bool
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]] | None:
        """(digits as an integer, digits after the point, minus sign) of each value; None
        when a value has anything else, no digit, two points or too many digits."""
        columns = np.ascontiguousarray(self.matrix(field).T)
        negative = columns[0] == _MINUS
        value = np.zeros(self.rows, dtype=np.int64)
        fraction = np.zeros(self.rows, dtype=np.int64)
        n_digits = np.zeros(self.rows, dtype=np.int64)
        dots = np.zeros(self.rows, dtype=np.int64)
        other = np.zeros(self.rows, dtype=np.bool_)
        # Column by column: a handful of operations on whole columns, no per-value work.
        for index, column in enumerate(columns):
            digit_value = column - np.uint8(_ZERO)  # wraps around below "0"
            digit = digit_value < 10
            dot = column == _DOT
            value = np.where(digit, value * 10 + digit_value, value)
            n_digits += digit
            fraction += digit & (dots > 0)
            dots += dot
            stray = ~digit & (column != 0)
            if decimal_point:
                stray &= ~dot
            if index == 0:
                stray &= ~negative
            other |= stray
        if (
            bool(other.any())
            or int(n_digits.min()) < 1
            or int(n_digits.max()) > max_digits
            or int(dots.max()) > 1
        ):
            return None
        return value, fraction, negative


def split_fields(data: bytes, n_fields: int) -> Fields | None:
    """Fields of ``data`` when each line is exactly ``n_fields`` single-spaced fields."""
    if not data:
        return None
    if not data.endswith(b"\n"):
        data += b"\n"
    buffer = np.frombuffer(data, dtype=np.uint8)
    # Every byte up to the space is a separator here, so tabs, carriage returns, NUL and
    # the other control bytes break the pattern of separators checked below.
    separators = np.flatnonzero(buffer <= _SPACE)
    if separators.size % n_fields:
        return None
    pattern = np.full(n_fields, _SPACE, dtype=np.uint8)
    pattern[-1] = _NEWLINE
    if bool((buffer[separators].reshape(-1, n_fields) != pattern).any()):
        return None
    gaps = np.diff(separators)
    if separators[0] == 0 or int(gaps.min(initial=2)) < 2:
        return None  # an empty field: a blank line or a doubled, leading or trailing space
    if int(buffer.max()) >= 0x80:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        # White space outside ASCII, which the exact reader splits on and the
        # separators here do not see.
        if UNICODE_SPACE.search(data):
            return None
    # Room after the last line for the widest field's window.
    widest = int(gaps.max(initial=1))
    padded = np.concatenate([buffer, np.zeros(widest, dtype=np.uint8)])
    fields = Fields(padded, separators.reshape(-1, n_fields), widest)
    if bool((buffer[fields.starts(0)] == _HASH).any()):
        return None  # a comment line
    return fields
