"""Files the harness writes for others to read (a JUnit report, an HTML page): whole or not at all.

``write_whole`` lives in ``replay.cases`` (promoted cases are written so too, and the
cases stage is below this one); it is exported here under its public name.
"""

from __future__ import annotations

from ..cases import write_whole

__all__ = ["write_whole"]
