"""Warm slots: what serves a bot's sessions one after another, and the one loop that drives them.

A *slot* holds one engine across sessions (SPEC §3.4): the bridge's slot keeps one engine process, the SDK's one copy
of the bot. A session begins with :meth:`Slot.open`, gets the arena's lines through :meth:`Slot.handle`, and ends
with :meth:`Slot.finish`; the slot then makes its engine clean for the next session (or starts a fresh one) and says
so through the ``on_ready`` callback it was started with. Nothing of one session reaches the next.

:class:`Loop` is a small single-threaded event loop over ZeroMQ sockets and file descriptors (a ``zmq.Poller``),
with timers and calls from other threads: the socket, the engines' pipes and the slots' deadlines share it, so a
line crosses the bridge with no thread hop and no queue.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Loop", "Slot", "SlotFactory", "Timer"]


class Slot(Protocol):
    """One engine, kept warm across the sessions of one slot."""

    def start(self, on_ready: Callable[[], None]) -> None:
        """Starts the engine; ``on_ready()`` (on the loop's thread) once it can take a session, and again after each
        :meth:`finish` once it can take the next one."""

    @property
    def ready(self) -> bool:
        """True when the engine is clean and idle: a session opened now begins at once."""
        ...

    def open(self, write: Callable[[str | None], None]) -> None:
        """A session begins: the engine's lines go to ``write(line)`` (thread-safe); ``write(None)`` ends the session
        from the engine's side. The arena's lines that come before the engine is ready are kept for it."""

    def handle(self, line: str) -> bool:
        """One line of the session from the arena; False when it ends the session (``quit``)."""
        ...

    def exit_info(self) -> str | None:
        """How the engine ended the session from its side (``exit code 1``), if known."""
        ...

    def finish(self, *, fresh: bool = False) -> None:
        """The session is over: the engine is made clean for the next one, or replaced when ``fresh`` (the arena
        killed the session) or when it cannot be made clean; ``on_ready`` follows."""

    def close(self) -> None:
        """Ends the engine for good (the bot is leaving). May block for the engine's grace."""


SlotFactory = Callable[["Loop", int], Slot]
"""``make_slot(loop, number)``: slot ``number``'s engine (the SDK's :class:`~.session.BotSlot`, the bridge's engine
process), driven by ``loop``."""


class Timer:
    """A call at a time on the loop; :meth:`cancel` drops it."""

    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    """A poller over sockets and descriptors, timers, and a queue of calls from other threads (woken by a pipe)."""

    def __init__(self) -> None:
        import zmq

        self._zmq = zmq
        self.poller = zmq.Poller()
        self.thread = threading.get_ident()
        """The loop's thread: only it touches sockets and pipes."""
        self._readers: dict[Any, Callable[[], None]] = {}
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._calls: collections.deque[Callable[[], None]] = collections.deque()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.poller.register(self.wake_r, zmq.POLLIN)
        self.closed = False

    def add_reader(self, source: Any, callback: Callable[[], None]) -> None:
        """Calls ``callback()`` whenever ``source`` (a ZeroMQ socket or a descriptor) has something to read."""
        self._readers[source] = callback
        self.poller.register(source, self._zmq.POLLIN)

    def remove_reader(self, source: Any) -> None:
        if self._readers.pop(source, None) is not None:
            with contextlib.suppress(KeyError):
                self.poller.unregister(source)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(time.monotonic() + delay, callback)
        heapq.heappush(self._timers, (timer.when, next(self._order), timer))
        return timer

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` on the loop's thread once the events at hand are handled (from the loop's thread)."""
        self._calls.append(callback)

    def call_soon_threadsafe(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` on the loop's thread (from any thread, or a signal handler)."""
        self._calls.append(callback)
        self.wake()

    def wake(self) -> None:
        if not self.closed:
            with contextlib.suppress(BlockingIOError, OSError):  # a full pipe already holds a wake-up
                os.write(self.wake_w, b"\0")

    def run_once(self, limit: float | None = None) -> None:
        """Waits for something to do (at most ``limit`` seconds, or until the next timer) and does it."""
        now = time.monotonic()
        timeout = limit
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if self._timers:
            due = max(0.0, self._timers[0][0] - now)
            timeout = due if timeout is None else min(timeout, due)
        if self._calls:
            timeout = 0.0
        events = self.poller.poll(None if timeout is None else int(timeout * 1000 + 0.999))
        for source, _ in events:
            if source == self.wake_r:
                with contextlib.suppress(BlockingIOError):
                    while os.read(self.wake_r, 4096):
                        pass
                continue
            callback = self._readers.get(source)
            if callback is not None:
                callback()
        while self._calls:
            self._calls.popleft()()
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                timer.cancelled = True
                timer.callback()

    def close(self) -> None:
        self.closed = True
        os.close(self.wake_r)
        os.close(self.wake_w)
