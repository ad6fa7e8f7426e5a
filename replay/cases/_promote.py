"""Incident to regression case: a cassette with a wrong outcome becomes a case that guards it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from recorder import (
    Cassette,
    ConfigError,
    FixtureError,
    HttpEvent,
    RowChange,
    ToolEvent,
    WarningEvent,
    WorldDelta,
    llm_call,
    net_delta,
    read_cassette,
    world_hash,
    write_cassette,
)

from ..graders import Assertion, agent_calls
from ..worlds import StateDiff, apply_delta
from ._files import replacing, write_whole
from ._names import check_name, inside


@dataclass(frozen=True, slots=True)
class Promoted:
    """What ``promote`` wrote."""

    case: Path
    fixture: Path
    cassette: Path
    truncation: str | None = None
    """Why the incident's cassette is cut short (its recording killed), or None: the case
    then replays only what it kept."""


def instruction_of(cassette: Cassette) -> str | None:
    """The user's instruction: the first user message of the first LLM call."""
    for event in cassette.events:
        if isinstance(event, HttpEvent) and (call := llm_call(event)) is not None:
            for message in call.messages:
                if message.get("role") == "user" and isinstance(message.get("content"), str):
                    return str(message["content"])
    return None


def scaffold(diff: StateDiff) -> list[str]:
    """Assertions describing what the incident did, for the user to correct."""
    lines = []
    for table in sorted(diff.touched()):
        part = diff.table(table)
        for what in ("inserted", "deleted", "updated"):
            if getattr(part, what):
                lines.append(f"diff.{table}.{what} == {len(getattr(part, what))}")
        for key, update in part.updated.items():
            name = key[0] if len(key) == 1 else key
            for field, value in update.after.items():
                lines.append(f"{table}[{name!r}].{field} == {json.dumps(value)}")
    return lines


def promote(
    cassette_path: str | Path,
    case_id: str,
    expect: Sequence[str],
    out: str | Path,
    *,
    fixture: str | Path | None = None,
    instruction: str | None = None,
) -> Promoted:
    """Turn an incident cassette into a regression case in ``out``.

    Writes ``out/<id>.yaml`` (suite regression, the instruction, the
    ``expect`` assertions and a commented scaffold from the recorded diff),
    ``out/<id>.fixture<suffix>`` (the world as it was when the recording
    started) and ``out/cassettes/<id>.cassette`` (the frozen tool and LLM
    responses for offline replay).

    Args:
        cassette_path: The incident's cassette.
        case_id: Id of the new case, and the stem of every file written.
        expect: Assertions the right outcome meets (may be empty).
        out: The directory to write to (created if missing).
        fixture: The starting world, when the one the cassette names is gone.
        instruction: The instruction, when the cassette's LLM calls lack it.

    Raises:
        CassetteError: The cassette is missing, damaged or of an unknown format.
        AssertionSyntaxError: An ``expect`` assertion does not parse.
        ConfigError: ``case_id`` is not a name (``check_name``), no fixture to copy, or
            no instruction.

    Each file is written whole (beside its path, then renamed over it): a promote
    killed midway leaves each file as it was, or new and whole.
    """
    check_name(case_id, "case id")  # a name: it is the stem of every file written
    cassette_path, out = Path(cassette_path), Path(out)
    fixture = Path(fixture) if fixture is not None else None
    cassette = read_cassette(cassette_path)
    for source in expect:
        Assertion(source)  # raises AssertionSyntaxError, pointing at the column
    source_fixture = fixture or (
        Path(cassette.header.fixture_source) if cassette.header.fixture_source else None
    )
    if source_fixture is None or not source_fixture.exists():
        where = f"its world {source_fixture} is not here" if source_fixture else "no world"
        raise ConfigError(
            f"{cassette_path}: {where} (recorded with record(..., world=conn) on a file?); "
            "pass --fixture"
        )
    text = instruction or instruction_of(cassette)
    if not text:
        raise ConfigError(
            f"{cassette_path}: no user instruction in its LLM calls; pass --instruction"
        )
    what = f"case id {case_id!r}"
    fixture_copy = inside(out, out / f"{case_id}.fixture{source_fixture.suffix}", what)
    frozen = inside(out, out / "cassettes" / f"{case_id}.cassette", what)
    case_path = inside(out, out / f"{case_id}.yaml", what)
    # Each file is written beside its path and renamed over it: a promote killed midway
    # leaves each as it was or whole (a case file read by CI, a world copied halfway).
    with replacing(fixture_copy) as copy:
        shutil.copyfile(source_fixture, copy)
        if fixture is None and _is_database(copy):
            _undo_if_changed(copy, cassette, cassette_path)
    header = cassette.header.model_copy(update={"case_id": case_id})
    with replacing(frozen) as tmp:
        write_cassette(tmp, header, cassette.events, cassette.footer, overwrite=True)
    summary = cassette.summary()
    diff = StateDiff.from_delta(summary.state_diff or {})
    tools = sorted({e.name for e in agent_calls(cassette.events)})
    write_whole(
        case_path,
        _case_yaml(
            case_id, text, fixture_copy.name, expect, scaffold(diff), diff, tools, cassette_path
        ),
    )
    return Promoted(case_path, fixture_copy, frozen, cassette.truncation)


def _is_database(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def _undo_if_changed(copy: Path, cassette: Cassette, cassette_path: Path) -> None:
    """Bring a live world's file back to its state when the recording started.

    A world recorded live (``record(..., world=conn)``) names its database
    file, which holds the state after the session: the recorded changes are
    undone on the copy, and the result must hash as the recording's starting
    world did.

    Raises:
        ConfigError: The file changed otherwise since (the hashes differ).
    """
    wanted = cassette.header.fixture_hash
    conn = sqlite3.connect(copy)
    try:
        # (in the pin's own hash version: a cassette recorded before v2 pins a v1 hash)
        if wanted is None or world_hash(conn, like=wanted) == wanted:
            return
        deltas = [
            e.delta for e in cassette.events if isinstance(e, ToolEvent | WarningEvent) and e.delta
        ]
        with conn:
            apply_delta(conn, _inverse(net_delta(deltas)))
        if world_hash(conn, like=wanted) != wanted:
            raise ConfigError(
                f"{cassette_path}: its world changed since the recording (undoing the recorded "
                "changes does not give the world it started from); pass --fixture"
            )
    except (sqlite3.Error, FixtureError, ValueError) as exc:  # (ValueError: an unknown pin)
        raise ConfigError(
            f"{cassette_path}: cannot undo its changes on a copy of its world: {exc}"
        ) from None
    finally:
        conn.close()


def _inverse(delta: WorldDelta) -> WorldDelta:
    """The delta that undoes ``delta``: each change swapped, in reverse order."""
    return {
        table: [RowChange(key=c.key, before=c.after, after=c.before) for c in reversed(changes)]
        for table, changes in delta.items()
    }


def _case_yaml(
    case_id: str,
    instruction: str,
    fixture: str,
    expect: Sequence[str],
    scaffolded: list[str],
    diff: StateDiff,
    tools: list[str],
    source: Path,
) -> str:
    q = json.dumps  # JSON strings are valid YAML scalars
    lines = [
        f"# Promoted from the incident {source.name} by `replay promote`.",
        "# The scaffold below says what the incident did: turn the lines that",
        "# describe the right outcome into assertions, correct the others.",
        f"id: {q(case_id)}",
        "suite: regression",
        f"instruction: {q(instruction)}",
        f"fixture: {q(fixture)}",
        f"# allowed_tables: {q(sorted(diff.touched()))}   # the tables the incident changed",
        f"# tools the incident called: {', '.join(tools) or 'none'}",
        "assert:" if expect else "assert: []  # add assertions (replay promote --expect ...)",
        *(f"  - {q(e)}" for e in expect),
        *(f"  # - {q(s)}" for s in scaffolded),
        "tags: [incident]",
    ]
    return "\n".join(lines) + "\n"
