r"""Recorded text made safe for a terminal: the one rule every printer uses.

A cassette, a case file or a results row holds what an agent, a model or a tool
said, and any of them can say ``\x1b]0;TITLE\x07\x1b[2J`` (retitle the window,
clear the screen) or a bidi override that shows text in an order other than its
own. What the CLI prints from recorded data goes through ``printable``: every C0
and C1 control character, DEL and the bidi controls (U+061C, U+200E, U+200F,
U+202A-U+202E, U+2066-U+2069) are shown escaped, as Python spells them
(``\x1b``, ``\u202e``), so they can be read and do nothing. In the lowest stage,
so every stage (views, results, the CLI's error printer) uses the same rule.
"""

from __future__ import annotations

import re

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = (*range(0x00, 0x20), *range(0x7F, 0xA0), *_BIDI)


def _spelled(code: int) -> str:
    named = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(code)
    return named or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


_ONE_LINE = {code: _spelled(code) for code in _CONTROLS}
_LINES = {code: spelled for code, spelled in _ONE_LINE.items() if chr(code) not in "\n\t"}
_ANY = re.compile("[" + "".join(re.escape(chr(code)) for code in _CONTROLS) + "]")


def printable(text: str, *, lines: bool = False) -> str:
    r"""Return ``text`` with every control character shown escaped (``\x1b``, ``\u202e``).

    Args:
        text: Text from recorded data (a message, a tool's name or result, an id).
        lines: Keep newlines and tabs as they are (a transcript's multi-line text);
            a CR before a newline goes with it. Otherwise they are escaped too, and
            the result is one line (an error message, a table cell).

    Example:
        >>> printable("ok\x1b]0;pwned\x07")
        'ok\\x1b]0;pwned\\x07'
    """
    if _ANY.search(text) is None:  # the common case: nothing to escape, no copy
        return text
    if lines:
        return text.replace("\r\n", "\n").translate(_LINES)
    return text.translate(_ONE_LINE)
