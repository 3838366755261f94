"""Group commit: finished games wait until one write and one ``fsync`` put them all in the journal.

A game counts once it is on disk. Syncing every game alone costs more than the 16 turns of a game (an ``fsync``
takes a fraction of a millisecond of CPU and up to milliseconds of wall on a busy disk); instead the games that
finish within :data:`WINDOW_S` of each other, and those that finish while a sync is running, share one write and one
sync, and the next game starts meanwhile. A game finished but not yet synced when the arena dies is played again on
resume; a run that stops (or ends) syncs what it has at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..journal import Journal
from ..records import GameRecord

Counted = Callable[[GameRecord, Mapping[str, Any] | None], None]
"""What is told of each game once it counts: the record, and its ``to_dict()`` as the journal wrote it (or None)."""

WINDOW_S: Final = 0.05
"""Seconds a finished game may wait for others to share its sync (its count, and the progress line, wait as long)."""


class Committer:
    """Group commit: finished games wait here until one write and one sync put them all in the journal.

    ``on_counted(record, data)`` is called for each game, in order, once it is on disk; ``data`` is the record's
    ``to_dict()`` as the journal wrote it (made once per game, for the JSON Lines file too). Without a journal (an
    in-memory run) a game counts at once, with ``data`` None.
    """

    def __init__(self, journal: Journal | None, on_counted: Counted) -> None:
        self._journal = journal
        self._on_counted = on_counted
        self._waiting: list[GameRecord] = []
        self._wake = asyncio.Event()
        self._hurry = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._window: asyncio.Future[None] | None = None
        """While the loop waits for company: done when the window closes or :meth:`drain` cuts it short."""

    def submit(self, record: GameRecord) -> None:
        """Queues a finished game; raises the journal's error if a previous sync failed."""
        if self._error is not None:
            raise self._error
        if self._journal is None:
            self._on_counted(record, None)
            return
        self._waiting.append(record)
        self._idle.clear()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        assert self._journal is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            if not self._hurry.is_set():
                # The window: let other games join this sync. One future and one timer (wait_for on the hurry
                # event made a task, a timer and a cancellation each time: more than a game's records cost).
                window = self._window = loop.create_future()
                timer = loop.call_later(WINDOW_S, _close, window)
                try:
                    await window
                finally:
                    timer.cancel()
                    self._window = None
            self._wake.clear()
            batch, self._waiting = self._waiting, []
            if batch:
                try:
                    # In a thread, so that the other games' clocks keep going during the sync.
                    dicts = [r.to_dict() for r in batch]
                    await loop.run_in_executor(None, self._journal.append_many, batch, dicts)
                except BaseException as e:
                    self._error = e
                    self._idle.set()
                    raise
                for record, data in zip(batch, dicts, strict=True):
                    self._on_counted(record, data)
            if not self._waiting:
                self._idle.set()

    async def drain(self) -> None:
        """Waits until every submitted game is synced and counted; raises the journal's error."""
        self._hurry.set()  # no more waiting for company: sync what there is
        if self._window is not None:
            _close(self._window)
        if self._task is not None and not self._task.done():
            await asyncio.shield(self._wait_idle())
        if self._error is not None:
            raise self._error

    async def _wait_idle(self) -> None:
        """Until the loop is idle, or has died (its error is then in ``_error``)."""
        assert self._task is not None
        while not self._idle.is_set():
            idle = asyncio.ensure_future(self._idle.wait())
            try:
                await asyncio.wait([idle, self._task], return_when="FIRST_COMPLETED")
            finally:
                idle.cancel()  # not left pending when the loop died first
            if self._task.done():
                return

    async def close(self) -> None:
        """Stops the loop (after :meth:`drain`)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


def _close(window: asyncio.Future[None]) -> None:
    """Ends a group's wait for company (its timer, or a drain)."""
    if not window.done():
        window.set_result(None)
