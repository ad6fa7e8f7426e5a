"""The console every command prints to: rich, with recorded text made printable.

Every string the commands print reaches rich through ``Console.render_str``
(``print``'s arguments, table cells, titles), so this console passes each one
through ``printable`` (``replay.plugins``) first: a control sequence in a recorded
message, tool result, name or id is shown escaped, never sent to the terminal.
Our own markup holds no control character, and rich adds its styles after this.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.text import Text

from ..plugins import printable

OFF_TERMINAL_WIDTH = 400
"""Columns of output that is not a terminal (a CI log, a pipe) unless ``COLUMNS`` says: wide
enough that tables never cut an id to fit (a terminal's own width is used on a terminal)."""


class _Console(Console):
    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable(text, lines=True), **options)


def console() -> Console:
    """The console the commands print to."""
    out = _Console(highlight=False, soft_wrap=True)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = OFF_TERMINAL_WIDTH
    return out
