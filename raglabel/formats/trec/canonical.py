"""Which TREC files (or blocks of one) the fast readers may parse.

polars reads fields split by single spaces, and :mod:`.columns` cuts them by the
positions of separators; the exact line reader splits on any white space, as
``str.split`` does. A file holding a byte they would see differently (a tab, a carriage
return, a NUL, a byte order mark that starts a block, white space outside ASCII) goes
to the exact reader, which also names the line of any error.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path

from raglabel.formats.lines import BYTE_ORDER_MARK

# Bytes that polars' single-space reader would misread silently, or that are invalid.
# Each is a single byte so that the scan is a memchr; empty fields (double or leading
# spaces) show up later as nulls instead. 0x1c-0x1f are white space to str.split(),
# which the exact reader uses: polars would keep them inside an id.
# A byte order mark at the start of a file is read as nothing by every reader (polars
# drops it, the exact reader too: :func:`~raglabel.formats.lines.without_byte_order_mark`).
# Blocks of a file never start with the file's mark (:mod:`.blocks` skips it), so a block
# that starts with one holds it at the start of a line inside the file, where the exact
# reader keeps it as part of the id and polars would drop it: that block is the exact
# reader's.
_IRREGULAR = (b"\t", b"\r", b"\x0b", b"\x0c", b"\x00", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
# The white space outside ASCII that str.split() splits on, as UTF-8: NEL, no-break
# space, ogham space, U+2000-U+200A, the line and paragraph separators, the narrow
# no-break space, the medium mathematical space and the ideographic space. Searched
# only in a file that is not ASCII (in valid UTF-8, these bytes are these characters).
UNICODE_SPACE = re.compile(
    rb"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)


def is_canonical(source: Path | bytes) -> bool:
    """True when the file (or a block of it) has none of the bytes that need the exact
    reader."""
    if isinstance(source, bytes):
        return (
            not source.startswith(BYTE_ORDER_MARK)
            and all(source.find(byte) < 0 for byte in _IRREGULAR)
            and (source.isascii() or UNICODE_SPACE.search(source) is None)
        )
    with source.open("rb") as handle:
        if source.stat().st_size == 0:
            return True
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if any(data.find(byte) >= 0 for byte in _IRREGULAR):
                return False
            # Slices of a megabyte: isascii is the quick test, the search is for the rest.
            ascii_only = all(
                data[at : at + (1 << 20)].isascii() for at in range(0, len(data), 1 << 20)
            )
            return ascii_only or UNICODE_SPACE.search(data) is None
