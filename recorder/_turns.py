"""Tool calls on one world take turns, so each call's delta is exactly its own.

The change capture logs every row change made on the world's connection; a
call's delta is what was logged between its start and its end. That is exact
only if no other call changes the world in between, and agent frameworks run
one turn's tool calls concurrently (asyncio tasks, or threads). So calls on a
world are serialised: a call waits for its turn (a thread blocks, a coroutine
awaits; first come, first served) and holds it to its end, awaits included.

One case cannot wait: a sync tool called on the event loop's own thread while
an async call that holds the turn is suspended on that loop (blocking would
stop the loop the holder needs). It runs at once, *inside* the holder's turn:
the holder's changes so far are set aside for it, the sync call runs to its
end (the loop runs nothing else meanwhile), and its changes are its own. If
the two change the same rows, offline replay (which applies deltas in call
order) may not rebuild the same values: that is warned.

A call that waits longer than ``TURN_WAIT`` runs without a turn and is
warned: most often a tool that runs another tool in a thread pool (pools do
not carry the context that marks the inner call as nested, so it would wait
for the outer call forever). Its changes stay with the holder, as a nested
call's do. Calls without a world attached do not take turns.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ._delta import net_delta
from ._schema import WorldDelta

Take = Callable[[], tuple[WorldDelta, list[str]]]
"""Read (and clear) the changes logged since the last read, with notes on what was missed."""

TURN_WAIT = 5.0
"""Seconds a call waits for its turn before it runs without one (warned)."""


@dataclass(eq=False, slots=True)
class Turn:
    """One tool call's hold on the world."""

    name: str
    thread: int
    inside: Turn | None = None
    """The suspended holder this call runs inside of, if it did not wait for a turn."""
    free: bool = False
    """It gave up waiting and runs without a turn: its changes stay in the log."""
    pieces: list[WorldDelta] = field(default_factory=list)
    """Changes set aside for this call while calls ran inside its turn."""
    insiders: list[tuple[str, WorldDelta]] = field(default_factory=list)
    """Calls that ran inside this one's turn, with their changes (to warn of overlaps)."""


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _keys(delta: WorldDelta) -> set[tuple[str, str]]:
    return {(table, repr(c.key)) for table, rows in delta.items() for c in rows}


class Turns:
    """Serialises the tool calls made on one world (see the module docstring)."""

    def __init__(
        self,
        take: Take,
        aside: Callable[[WorldDelta, list[str]], None],
        warn: Callable[[str], None],
        wait: float | None = None,
    ) -> None:
        self._take = take
        self._aside = aside
        """Receives changes that belong to no call (made outside any) and their notes."""
        self._warn = warn
        self._wait = TURN_WAIT if wait is None else wait
        self._mutex = threading.Lock()
        self._holder: Turn | None = None
        self._waiters: deque[tuple[Turn, Callable[[], None], bool]] = deque()
        """(turn, wake it, waits blocking its thread) in order of arrival."""

    @property
    def holder(self) -> Turn | None:
        """The call holding the turn now, if any."""
        return self._holder

    def begin(self, name: str) -> Turn:
        """Start a sync call: wait for the turn, or run inside a suspended holder's."""
        turn = Turn(name, threading.get_ident())
        woken: threading.Event | None = None
        with self._mutex:
            holder = self._holder
            if holder is None:
                self._holder = turn
            elif holder.thread == turn.thread:
                # A holder on this very thread is not running (this code is): an async call
                # suspended on this thread's loop. Waiting would stop the loop it needs.
                turn.inside = holder
            else:
                woken = threading.Event()
                self._waiters.append((turn, woken.set, True))
        if turn.inside is not None:
            changes, notes = self._safe_take()
            turn.inside.pieces.append(changes)
            self._aside({}, notes)
            return turn
        if woken is not None and not woken.wait(self._wait):
            self._give_up(turn)
        if not turn.free:
            self._aside(*self._safe_take())
        return turn

    async def begin_async(self, name: str) -> Turn:
        """Start an async call: await the turn (other tasks and threads go on meanwhile)."""
        turn = Turn(name, threading.get_ident())
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(_settle, woken)

        with self._mutex:
            if self._holder is None:
                self._holder = turn
            else:
                self._waiters.append((turn, wake, False))
        if self._holder is not turn:
            try:
                await asyncio.wait_for(asyncio.shield(woken), self._wait)
            except asyncio.TimeoutError:
                self._give_up(turn)
            except BaseException:  # cancelled while waiting: leave the queue, or pass it on
                self._leave(turn)
                raise
        if not turn.free:
            self._aside(*self._safe_take())
        return turn

    def end(self, turn: Turn) -> tuple[WorldDelta, list[str]]:
        """End a call: return its changes (and notes), and give the turn to the next call.

        A read of the changes that fails (the connection refuses this thread, say)
        is a note, never the end of the call's record.
        """
        if turn.free:
            return {}, []
        try:
            changes, notes = self._safe_take()
            if turn.inside is not None:
                turn.inside.insiders.append((turn.name, changes))
                return changes, notes
            if turn.pieces:
                changes = net_delta([*turn.pieces, changes])
            mine = _keys(changes) if turn.insiders else set()
            for name, theirs in turn.insiders:
                if mine & _keys(theirs):
                    notes.append(
                        f"{name} ran inside this call's turn and changed the same rows: offline "
                        "replay applies the two deltas in call order and may end elsewhere"
                    )
            return changes, notes
        finally:
            if turn.inside is None:
                self._release(turn)

    def _safe_take(self) -> tuple[WorldDelta, list[str]]:
        try:
            return self._take()
        except Exception as exc:
            return {}, [f"the world's changes could not be read ({exc})"]

    def _release(self, turn: Turn) -> None:
        """Hand the turn to the first waiter (first come, first served), or free it.

        An async waiter cannot run while a sync call blocks its loop's thread
        waiting too: that sync call goes first, else both would wait forever.
        """
        with self._mutex:
            if self._holder is not turn:
                return
            self._holder = None
            if not self._waiters:
                return
            chosen = self._waiters[0]
            if not chosen[2]:
                chosen = next(
                    (w for w in self._waiters if w[2] and w[0].thread == chosen[0].thread), chosen
                )
            self._waiters.remove(chosen)
            self._holder = chosen[0]
            chosen[1]()

    def _give_up(self, turn: Turn) -> None:
        """After ``TURN_WAIT``: run without a turn, unless it was handed over meanwhile."""
        with self._mutex:
            if self._holder is turn:
                return
            self._waiters = deque(w for w in self._waiters if w[0] is not turn)
            holder = self._holder.name if self._holder is not None else "another call"
        turn.free = True
        self._warn(
            f"tool {turn.name} waited {self._wait:g} s for its turn on the world, held by "
            f"{holder}, and ran without it: its changes are in {holder}'s delta. A tool run "
            "by another tool in a thread pool should run in the caller's context "
            "(contextvars.copy_context().run) to be part of it"
        )

    def _leave(self, turn: Turn) -> None:
        with self._mutex:
            self._waiters = deque(w for w in self._waiters if w[0] is not turn)
            handed = self._holder is turn
        if handed:
            self._release(turn)
