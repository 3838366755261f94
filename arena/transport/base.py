"""The transport interface: lines in, lines out, and the one place where bytes become UQI lines.

A transport pushes every line it receives to a :class:`LineSink`, the object that owns the engine's output at the
moment (an engine session's running exchange); without one, lines wait in a small bounded queue that
:meth:`Transport.read_line` serves (the compliance checker and tests read that way). Sending is synchronous: one
write per call, never a coroutine on the hot path.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import logging
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Final, Protocol

from quarto_arena.protocol.uqi import MAX_LINE_BYTES

from ..errors import ArenaError, ExitStatus

__all__ = [
    "BadLine",
    "LineSink",
    "PeerGone",
    "Transcript",
    "Transport",
    "TransportError",
    "describe_exit",
]

log = logging.getLogger("quarto_arena.arena.transport")

END_WAIT: Final = 0.25
"""Seconds an ended output waits for the process's exit so that a message can name its exit status."""
QUEUE_LINES: Final = 64
"""Lines a transport keeps for :meth:`Transport.read_line` when nobody reads; older ones are dropped and counted."""


class TransportError(ArenaError):
    """Base of the transport errors."""

    status = ExitStatus.ENGINE
    reason = "transport"


class PeerGone(TransportError):
    """The engine exited, closed its output, or dropped the connection. The message says how."""

    status = ExitStatus.ENGINE
    reason = "peer_gone"


class BadLine(TransportError):
    """The engine sent a line that is not text UQI can read: too long, not UTF-8, or not a single-line frame."""

    status = ExitStatus.ENGINE
    reason = "bad_line"


def describe_exit(returncode: int | None) -> str:
    """``exit code 3``, ``killed by signal 9 (SIGKILL)``, or ``still running``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"killed by signal {-returncode} ({name})"
    return f"exit code {returncode}"


class Transcript:
    """Writes every line in both directions, with a monotonic time stamp and the engine's name (``--debug``).

    One line per message: ``SECONDS NAME > LINE`` for arena to engine, ``<`` for engine to arena, ``#`` for
    events (start, exit, kill). Several engines may share one transcript; lines are flushed as they are written
    so a transcript survives a crash.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = self.path.open("a", encoding="utf-8")

    def write(self, name: str, direction: str, line: str) -> None:
        """Records one line (``direction`` is ``>``, ``<`` or ``#``)."""
        if not self._file.closed:
            self._file.write(f"{time.monotonic():.6f} {name} {direction} {line}\n")
            self._file.flush()

    def close(self) -> None:
        """Closes the file."""
        self._file.close()


class LineSink(Protocol):
    """Who receives an engine's output. Called on the event loop, in arrival order."""

    def line(self, text: str) -> None:
        """One non-empty line, decoded, without its terminator."""

    def bad_line(self, why: str) -> None:
        """A line that cannot be read (too long, not UTF-8, a multipart or multi-line frame)."""

    def gone(self, why: str) -> None:
        """The engine is gone (end of output, exit, disconnect); nothing follows."""


class _Queue:
    """The sink used while nobody else owns the output: a bounded queue served by :meth:`Transport.read_line`."""

    __slots__ = ("dropped", "items", "waiter")

    def __init__(self) -> None:
        self.items: collections.deque[str | TransportError] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None
        self.dropped = 0

    def _put(self, item: str | TransportError) -> None:
        if len(self.items) >= QUEUE_LINES:
            self.items.popleft()
            self.dropped += 1
        self.items.append(item)
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    def line(self, text: str) -> None:
        self._put(text)

    def bad_line(self, why: str) -> None:
        self._put(BadLine(why))

    def gone(self, why: str) -> None:
        self._put(PeerGone(why))


class Transport(abc.ABC):
    """One connection to one engine: send lines, receive lines, end.

    Subclasses move bytes and call :meth:`_received` for each raw line, :meth:`_bad` for an unreadable one and
    :meth:`_gone` once at the end; this class decodes, logs at DEBUG, copies to the transcript, and hands each line
    to the current sink.
    """

    def __init__(self, name: str, transcript: Transcript | None = None) -> None:
        self.name = name
        """The engine's display name, for logs and messages."""
        self.transcript = transcript
        """Where every line is copied, if anywhere."""
        self.last_line: str | None = None
        """The last line read from the engine (for error messages)."""
        self.received_at = 0.0
        """``time.monotonic()`` when the newest chunk of lines was read (what a
        :class:`~quarto_arena.arena.timecontrol.SearchClock` takes as the time of an answer)."""
        self._queue = _Queue()
        self._sink: LineSink = self._queue
        self._ended: str | None = None
        # Checked once per line: whether a line needs formatting for the log or the transcript at all.
        self._trace = transcript is not None or log.isEnabledFor(logging.DEBUG)

    # --- what the subclasses provide ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The engine's process id, when it is a process we started."""
        return None

    @property
    def gone(self) -> bool:
        """True once the engine is known to be gone (exited, disconnected, or closed by us)."""
        return self._ended is not None

    def exit_info(self) -> str | None:
        """How the engine ended (``exit code 3``, ``killed by signal 9 (SIGKILL)``, ``disconnected``), if it did."""
        return None

    @abc.abstractmethod
    def _write(self, data: bytes) -> None:
        """Writes bytes to the engine at once (buffering what cannot be written yet); raises PeerGone."""

    def describe_end(self) -> str:
        """How the engine's output ended, for messages (with its exit status where there is one)."""
        return self._ended or f"{self.name} is gone"

    def poll(self) -> None:
        """Reads, at once and without waiting, whatever the engine has already sent (before a forfeit is declared)."""
        return None  # a transport whose lines arrive by callback has nothing waiting to be read

    async def wait_exit(self, timeout: float) -> None:
        """Waits up to ``timeout`` seconds for the engine process to end (no-op where there is no process)."""
        return None

    @abc.abstractmethod
    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Ends the session: sends ``quit`` (when ``quit``), waits up to ``grace`` seconds, then forces the end.

        Never raises, never hangs longer than ``grace`` plus a little, and may be called more than once.
        """

    # --- sending -----------------------------------------------------------------------------------------------

    def send_lines(self, lines: Sequence[str]) -> None:
        """Sends lines (without terminators) in one write. Raises :class:`PeerGone` when the engine cannot receive."""
        if self._trace:
            for line in lines:
                self._trace_line(">", line)
        self._write(("\n".join(lines) + "\n").encode("utf-8"))

    def send_bytes(self, data: bytes) -> None:
        """Sends bytes as they are, lines terminated by ``\n``: what a conformance tester sends to see an engine
        survive a line that is not UTF-8 (an arena never does)."""
        if self._trace:
            for line in data.splitlines():
                self._trace_line(">", line.decode("utf-8", "backslashreplace"))
        self._write(data)

    def send_text(self, text: str) -> None:
        """Sends already terminated lines (``"position ...\\ngo ...\\n"``) in one write: the per-turn path."""
        if self._trace:
            for line in text.splitlines():
                self._trace_line(">", line)
        self._write(text.encode("utf-8"))

    async def send_line(self, line: str) -> None:
        """Sends one line (kept awaitable for callers written against the older interface)."""
        self.send_lines((line,))

    # --- receiving ---------------------------------------------------------------------------------------------

    def attach(self, sink: LineSink | None) -> None:
        """Makes ``sink`` receive every following line (None: back to the queue that :meth:`read_line` serves)."""
        self._sink = self._queue if sink is None else sink
        if sink is not None and self._ended is not None:
            sink.gone(self._ended)

    async def read_line(self) -> str:
        """Waits for the next line from the engine (without terminator; empty lines are skipped).

        Raises :class:`BadLine` for an unreadable line (the transport stays usable) and :class:`PeerGone` at the end.
        """
        q = self._queue
        while not q.items:
            if self._ended is not None:
                await self.wait_exit(END_WAIT)
                raise PeerGone(self.describe_end())
            q.waiter = asyncio.get_running_loop().create_future()
            try:
                await q.waiter
            finally:
                q.waiter = None
        item = q.items.popleft()
        if isinstance(item, PeerGone):
            await self.wait_exit(END_WAIT)
            raise PeerGone(self.describe_end())  # and it stays the end for every later read (see above)
        if isinstance(item, TransportError):
            raise item
        return item

    def _received(self, raw: bytes) -> None:
        """One raw line from the engine, terminator removed."""
        if len(raw) > MAX_LINE_BYTES:
            self._bad(f"line longer than {MAX_LINE_BYTES} bytes")
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            self._bad(f"invalid UTF-8 at byte {e.start}")
            return
        if self._trace:
            self._trace_line("<", text)
        if text and not text.isspace():
            self.last_line = text
            self._sink.line(text)

    def _bad(self, why: str) -> None:
        self.last_line = f"<{why}>"
        if self._trace:
            self._trace_line("<", f"<{why}>")
        self._sink.bad_line(why)

    def _gone(self, why: str) -> None:
        if self._ended is None:
            self._ended = why
            self.note(why)
            self._sink.gone(why)

    def note(self, event: str) -> None:
        """Records an event (start, exit, kill) in the log and the transcript."""
        if self._trace:
            self._trace_line("#", event)

    def _trace_line(self, direction: str, line: str) -> None:
        log.debug("%s %s %s", self.name, direction, line)
        if self.transcript is not None:
            self.transcript.write(self.name, direction, line)
