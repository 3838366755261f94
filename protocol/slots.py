"""Warm slots: what serves a bot's sessions one after another, and the one loop that drives them.

A *slot* holds one engine across sessions (SPEC §3.4): the bridge's slot keeps one engine process, the SDK's one copy
of the bot. A session begins with :meth:`Slot.open`, gets the arena's lines through :meth:`Slot.handle`, and ends
with :meth:`Slot.finish`; the slot then makes its engine clean for the next session (or starts a fresh one) and says
so through the ``on_ready`` callback it was started with. Nothing of one session reaches the next.

:class:`Loop` is a small single-threaded event loop over ZeroMQ sockets and file descriptors (one ``poll``),
with timers and calls from other threads: the socket, the engines' pipes and the slots' deadlines share it, so a
line crosses the bridge with no thread hop and no queue.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
import os
import select
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
    """A poller over descriptors and ZeroMQ sockets, timers, and a queue of calls from other threads (woken by a pipe).

    One ``poll`` system call per wake-up, on plain descriptors: a ZeroMQ socket is watched through its own descriptor
    (``ZMQ_FD``), not through ``zmq_poll``, which costs four system calls more per socket and wake-up (each look at a
    socket's ``EVENTS`` is a ``poll`` and a ``getpid``) and was most of a relayed line's cost. That descriptor tells of
    a change, not of a message: a socket's reader must read until ``EVENTS`` has no ``POLLIN`` (or ``zmq.Again``),
    and whoever sends on a socket calls :meth:`sent`, since ZeroMQ may then take in the signal of a message that
    arrived meanwhile, which the descriptor then never shows.
    """

    def __init__(self) -> None:
        import zmq

        self._zmq = zmq
        self._poll = select.poll()
        self.thread = threading.get_ident()
        """The loop's thread: only it touches sockets and pipes."""
        self._fds: dict[Any, int] = {}  # source -> the descriptor polled for it
        self._readers: dict[int, Callable[[], None]] = {}  # descriptor -> callback
        self._sockets: dict[Any, Callable[[], None]] = {}  # ZeroMQ socket -> callback
        self._recheck: dict[Any, None] = {}  # ZeroMQ sockets whose reader runs again before the loop waits
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._calls: collections.deque[Callable[[], None]] = collections.deque()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self._poll.register(self.wake_r, select.POLLIN)
        self.closed = False

    def add_reader(self, source: Any, callback: Callable[[], None]) -> None:
        """Calls ``callback()`` whenever ``source`` (a descriptor, or a ZeroMQ socket: see the class) has something to
        read. A socket's reader also runs once soon after this (messages may wait already)."""
        if isinstance(source, int):
            fd = source
        else:
            fd = source.getsockopt(self._zmq.FD)
            self._sockets[source] = callback
            self._recheck[source] = None
        self._fds[source] = fd
        self._readers[fd] = callback
        self._poll.register(fd, select.POLLIN)

    def remove_reader(self, source: Any) -> None:
        fd = self._fds.pop(source, None)
        if fd is None:
            return
        self._sockets.pop(source, None)
        self._recheck.pop(source, None)
        del self._readers[fd]
        with contextlib.suppress(KeyError):
            self._poll.unregister(fd)

    def sent(self, socket: Any) -> None:
        """``socket`` (a ZeroMQ socket with a reader) was sent on: its reader runs again before the loop waits."""
        self._recheck[socket] = None

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
        timeout = limit
        timers = self._timers
        if timers:
            while timers and timers[0][2].cancelled:
                heapq.heappop(timers)
            if timers:
                due = max(0.0, timers[0][0] - time.monotonic())
                timeout = due if timeout is None else min(timeout, due)
        if self._calls or self._recheck:
            timeout = 0.0
        readers = self._readers
        for fd, _ in self._poll.poll(None if timeout is None else int(timeout * 1000 + 0.999)):
            if fd == self.wake_r:
                with contextlib.suppress(BlockingIOError):
                    while os.read(self.wake_r, 4096):
                        pass
                continue
            callback = readers.get(fd)
            if callback is not None:
                callback()
        calls = self._calls
        recheck = self._recheck
        while calls or recheck:
            while calls:
                calls.popleft()()
            if recheck:
                sockets = list(recheck)
                recheck.clear()
                for socket in sockets:
                    callback = self._sockets.get(socket)
                    if callback is not None:
                        callback()
        if timers:
            now = time.monotonic()
            while timers and timers[0][0] <= now:
                _, _, timer = heapq.heappop(timers)
                if not timer.cancelled:
                    timer.cancelled = True
                    timer.callback()

    def close(self) -> None:
        self.closed = True
        os.close(self.wake_r)
        os.close(self.wake_w)
