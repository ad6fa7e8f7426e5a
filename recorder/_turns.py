"""Tool calls on one world take turns, so each call's delta is exactly its own.

The change capture logs every row change made on the world's connection; a
call's delta is what was logged between its start and its end. That is exact
only if no other call changes the world in between, and agent frameworks run
one turn's tool calls concurrently (asyncio tasks, or threads). So calls on a
world are serialised: a call waits for its turn (a thread blocks, a coroutine
awaits) and holds it to its end, awaits included.

One case cannot wait: a sync tool called on the event loop's own thread while
an async call that holds the turn is suspended on that loop (blocking would
stop the loop the holder needs). It runs at once, *inside* the holder's turn:
the holder's changes so far are set aside for it, the sync call runs to its
end without the loop running anything else, and its changes are its own. So
this case is exact too.

Calls without a world attached do not take turns (there is no delta to keep
apart). Limit: a call that holding its turn waits for another tool call made
from an unrelated task or thread (not nested in it) waits forever; nested
calls are part of the outer call and take no turn.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ._delta import net_delta
from ._schema import WorldDelta

Take = Callable[[], tuple[WorldDelta, list[str]]]
"""Read (and clear) the changes logged since the last read, with notes on what was missed."""

_MAX_POLL = 0.002


@dataclass(slots=True)
class Turn:
    """One tool call's hold on the world."""

    thread: int
    inside: Turn | None = None
    """The suspended holder this call runs inside of, if it did not wait for a turn."""
    pieces: list[WorldDelta] = field(default_factory=list)
    """Changes set aside for this call while calls ran inside its turn."""


class Turns:
    """Serialises the tool calls made on one world (see the module docstring)."""

    def __init__(self, take: Take, aside: Callable[[WorldDelta, list[str]], None]) -> None:
        self._take = take
        self._aside = aside
        """Receives changes that belong to no call (made outside any) and their notes."""
        self._lock = threading.Lock()
        self._holder: Turn | None = None

    def begin(self) -> Turn:
        """Start a sync call: wait for the turn, or run inside a suspended holder's."""
        turn = Turn(threading.get_ident())
        if not self._lock.acquire(blocking=False):
            holder = self._holder
            # A holder on this very thread is not running (this code is): an async call
            # suspended on this thread's loop. Waiting would stop the loop it needs.
            if holder is not None and holder.thread == turn.thread:
                changes, notes = self._take()
                holder.pieces.append(changes)
                self._aside({}, notes)
                turn.inside = holder
                return turn
            self._lock.acquire()
        self._hold(turn)
        return turn

    async def begin_async(self) -> Turn:
        """Start an async call: await the turn (other tasks and threads go on meanwhile)."""
        turn = Turn(threading.get_ident())
        pause = 0.0
        while not self._lock.acquire(blocking=False):
            # Polled, not queued: the holder may be a thread or a task on another loop.
            await asyncio.sleep(pause)
            pause = min(_MAX_POLL, pause * 2 or 0.0001)
        self._hold(turn)
        return turn

    def end(self, turn: Turn) -> tuple[WorldDelta, list[str]]:
        """End a call: return its changes (and notes), and give the turn to the next call.

        A read of the changes that fails (the connection refuses this thread, say)
        is a note, never the end of the call's record.
        """
        try:
            try:
                changes, notes = self._take()
            except Exception as exc:
                changes, notes = {}, [f"its world changes could not be read ({exc})"]
            if turn.pieces:
                changes = net_delta([*turn.pieces, changes])
            return changes, notes
        finally:
            if turn.inside is None:
                self._holder = None
                self._lock.release()

    def _hold(self, turn: Turn) -> None:
        self._holder = turn
        try:
            self._aside(*self._take())
        except BaseException:
            self._holder = None
            self._lock.release()
            raise
