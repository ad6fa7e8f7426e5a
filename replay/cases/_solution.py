"""Running a case's reference solution once, for ``matches_reference`` (``replay.graders``).

It runs on a fresh world of the case's fixture with the case's tools,
recorded like a trial; what it leaves is the ``Reference`` the grader
compares the trial with. Tools that raise are skipped, as tau2-bench does.
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from recorder import Pins, Tool, read_cassette, record

from ..graders import Reference, SqliteWorld, key_value, touched
from ..worlds import StateDiff, load_fixture


def reference_outcome(case: Any, tools: Callable[[Any], Sequence[Tool[..., Any]]]) -> Reference:
    """Run ``case``'s reference solution on a fresh world (once per case and tool set)."""
    fixture = Path(case.fixture)
    return _cached(case.id, str(fixture), fixture.stat().st_mtime_ns, _calls(case), tools)


def _calls(case: Any) -> str:
    return json.dumps([[c.tool, c.args] for c in case.reference_solution], sort_keys=True)


@functools.lru_cache(maxsize=256)
def _cached(case_id: str, fixture: str, mtime: int, calls: str, tools: Any) -> Reference:
    world = load_fixture(Path(fixture)).open()
    try:
        by_name = {t.name: t for t in tools(world.conn)}
        failed = []
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "reference.cassette"
            pins = Pins(fixture_hash=world.fixture.hash)
            with record(path, world=world.conn, case_id=case_id, pins=pins, strict=True):
                for name, args in json.loads(calls):
                    try:
                        by_name[name](**args)
                    except Exception as exc:  # tau2-bench skips gold actions that fail
                        failed.append(f"{name}: {type(exc).__name__}: {exc}")
            diff = StateDiff.from_delta(read_cassette(path).summary().state_diff or {})
        view = SqliteWorld(world.conn)
        rows = {(table, key): view.get(table, key_value(key)) for table, key in touched(diff)}
    finally:
        world.close()
    return Reference(diff, rows, tuple(failed))


def reference_for(case: Any, tools: Any) -> Reference | None:
    """The case's reference outcome when it asks to be matched and tools are at hand."""
    if getattr(case, "match_reference", None) is None or tools is None:
        return None
    return reference_outcome(case, tools)
