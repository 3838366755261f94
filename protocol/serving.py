"""What a bot's ZeroMQ server (``--listen``, :mod:`.server`) and its client (``--connect``, :mod:`.client`) share:
the heartbeat, the queue that carries the lines of search threads to the loop's thread, and the way out on signals.

**Leaving.** Both serve until stopped: the first SIGINT or SIGTERM asks them to finish what is in flight and take
nothing new (their ``leave``), a second one leaves at once with exit status 128 + the signal
(:func:`serve_until_stopped`).
"""

from __future__ import annotations

import functools
import logging
import queue
import signal
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, Final, Generic, Protocol, TypeVar

from .errors import ExitStatus
from .slots import Loop, Slot

__all__ = ["HEARTBEAT_MS", "OUTBOX_LINES", "LoopServer", "Outbox", "Servable", "serve_until_stopped"]

log = logging.getLogger(__name__)

HEARTBEAT_MS: Final = 1000
"""Interval of the ZMTP heartbeats a bot's socket sends; a peer silent for three intervals is gone (SPEC §3.3)."""
OUTBOX_LINES: Final = 1000
"""Lines the search threads may have waiting for the loop; then a writer waits (a flood is slowed, not buffered)."""

K = TypeVar("K")


class Outbox(Generic[K]):
    """Lines written from any thread, sent by the loop's thread, which alone touches the socket (ZeroMQ sockets are
    not thread-safe). Each line carries a key (the session that wrote it); ``emit(key, line)`` runs on the loop and
    drops what an ended session still writes. A line written on the loop's own thread is emitted at once."""

    def __init__(self, loop: Loop, emit: Callable[[K, str | None], None]) -> None:
        self._loop = loop
        self._emit = emit
        self._queue: queue.Queue[tuple[K, str | None]] = queue.Queue(maxsize=OUTBOX_LINES)

    def writer(self, key: K) -> Callable[[str | None], None]:
        """What the session ``key`` writes with, from any thread (``None`` ends it from the engine's side)."""
        loop_thread = self._loop.thread

        def write(line: str | None) -> None:
            if threading.get_ident() == loop_thread:
                self._emit(key, line)
                return
            self._queue.put((key, line))  # waits while the queue is full
            self._loop.call_soon_threadsafe(self._flush)

        return write

    def _flush(self) -> None:
        """Emits what the threads queued, a batch at a time, so that the loop looks at its sockets in between."""
        for _ in range(OUTBOX_LINES):
            try:
                key, line = self._queue.get_nowait()
            except queue.Empty:
                return
            self._emit(key, line)
        self._loop.call_soon_threadsafe(self._flush)


class LoopServer:
    """The frame of the server and the client: slots warmed up before anything is offered, a loop that runs until
    ``done``, and :meth:`leave` (take nothing new, finish what is in flight), which each says how to do."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        """The loop: its thread alone touches the sockets and the slots' pipes."""
        self.leaving = False
        """Set once :meth:`leave` was called: nothing new begins."""
        self.done = False
        """Set when the loop may stop: :meth:`serve_until_done` returns."""

    def warm_up(self, slots: Mapping[int, Slot], on_ready: Callable[[int], None]) -> bool:
        """Starts each slot's engine (``on_ready(number)`` whenever it is ready again) and runs the loop until every one
        is ready; False when :meth:`leave` came first."""
        for number, slot in slots.items():
            slot.start(functools.partial(on_ready, number))
        while not all(slot.ready for slot in slots.values()):
            if self.leaving:
                return False
            self.loop.run_once()
        return True

    def serve_until_done(self) -> None:
        """Runs the loop until ``done``."""
        while not self.done:
            self.loop.run_once()

    def leave(self) -> None:
        """Takes nothing new, finishes what is in flight, then stops (from any thread, or a signal handler)."""
        self.loop.call_soon_threadsafe(self._leave_once)

    def _leave_once(self) -> None:
        if not self.leaving:
            self.leaving = True
            self.on_leave()

    def on_leave(self) -> None:
        """What leaving means here (on the loop's thread, once): say so, and set ``done`` when nothing is in flight."""
        self.done = True


class _LeaveNow(Exception):
    """A second signal: leave at once (exit status 128 + the signal). It never leaves :func:`serve_until_stopped`."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.exit_code = int(ExitStatus.SIGNAL) + signum
        """The status to exit with."""


class _Signals:
    """SIGINT and SIGTERM while serving: the first calls ``first()``, a second raises :class:`_LeaveNow`."""

    def __init__(self, first: Callable[[], None]) -> None:
        self._first = first
        self._count = 0
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._old[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._count += 1
        if self._count > 1:
            raise _LeaveNow(signum)
        self._first()


class Servable(Protocol):
    """A server or a client: it serves until done, can be asked to leave (from a signal handler), and closes."""

    def run(self) -> None:
        """Serves until done (the sessions in flight are over after :meth:`leave`)."""

    def leave(self) -> None:
        """Takes nothing new and finishes what is in flight, then :meth:`run` returns (callable from a signal)."""

    def close(self) -> None:
        """Releases everything: engines, sockets, the loop."""


def serve_until_stopped(server: Servable) -> int:
    """Runs ``server`` under the two signals and closes it; returns 0 when it is done (after a first signal once
    what was in flight is over), or 128 + the signal when a second one came (what was in flight is lost). Whatever
    ``run`` raises otherwise reaches the caller, after the close."""
    try:
        with _Signals(server.leave):
            try:
                server.run()
            except _LeaveNow as e:
                log.warning("leaving at once")
                return e.exit_code
        return int(ExitStatus.OK)
    finally:
        server.close()
