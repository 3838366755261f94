"""How UQI lines move between the arena and an engine: one :class:`Transport` interface, three implementations.

- :class:`ProcessTransport`: the engine is a child process in its own process group, spoken to over its
  standard input and output; the whole group is killed and reaped on close.
- :class:`ZmqTransport`: the engine serves UQI on a ZeroMQ endpoint; the arena connects a DEALER socket.
- :class:`ScriptedTransport`: an in-memory engine that follows a script, for protocol unit tests only.

A transport knows nothing of UQI beyond lines: it enforces the line-length limit and strict UTF-8, logs every
line at DEBUG with the engine's name, and copies it to a :class:`Transcript` when ``--debug`` asks for one.
Deadlines belong to the caller (``asyncio.wait_for`` on :meth:`Transport.read_line`).
"""

from __future__ import annotations

import abc
import asyncio
import atexit
import collections
import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any, Final

import zmq
import zmq.asyncio
from quarto_arena.protocol.uqi import MAX_LINE_BYTES
from zmq.utils.monitor import parse_monitor_message

__all__ = [
    "BadLine",
    "PeerGone",
    "ProcessTransport",
    "ScriptedTransport",
    "Transcript",
    "Transport",
    "TransportError",
    "ZmqTransport",
    "describe_exit",
]

log = logging.getLogger(__name__)

# Room for the optional "\r" before the "\n": the 4096-byte limit is on the line's text.
_READ_LIMIT: Final = MAX_LINE_BYTES + 1
# How long lines an engine wrote just before it exited may take to arrive before its output is closed, seconds.
_AFTER_EXIT: Final = 0.1
# How long close() waits for the killed children of an engine to be reaped by init, seconds.
_GROUP_REAP_S: Final = 2.0

# Process groups we started and have not yet killed: a last-resort sweep at interpreter exit, so that not even a
# crash of the arena itself leaves an engine behind.
_LIVE_GROUPS: set[int] = set()


@atexit.register
def _kill_leftover_groups() -> None:
    for pgid in list(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    _LIVE_GROUPS.clear()


class TransportError(Exception):
    """Base of the transport errors."""


class PeerGone(TransportError):
    """The engine exited, closed its output, or dropped the connection. The message says how."""


class BadLine(TransportError):
    """The engine sent a line that is not text UQI can read: too long, or not UTF-8."""


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


class Transport(abc.ABC):
    """One connection to one engine: send lines, read lines, close.

    :meth:`read_line` raises :class:`PeerGone` when the engine is gone and :class:`BadLine` for an unreadable
    line (the connection stays usable). Subclasses implement the ``_send``/``_read``/``_close`` primitives; this
    class adds the logging and the transcript.
    """

    def __init__(self, name: str, transcript: Transcript | None = None) -> None:
        self.name = name
        """The engine's display name, for logs and messages."""
        self.transcript = transcript
        """Where every line is copied, if anywhere."""
        self.last_line: str | None = None
        """The last line read from the engine (for error messages)."""

    @property
    def pid(self) -> int | None:
        """The engine's process id, when it is a process we started."""
        return None

    @property
    def gone(self) -> bool:
        """True once the engine is known to be gone (exited, disconnected, or closed by us)."""
        return False

    def exit_info(self) -> str | None:
        """How the engine ended (``exit code 3``, ``killed by signal 9 (SIGKILL)``, ``disconnected``), if it did."""
        return None

    def note(self, event: str) -> None:
        """Records an event (start, exit, kill) in the log and the transcript."""
        log.debug("%s # %s", self.name, event)
        if self.transcript is not None:
            self.transcript.write(self.name, "#", event)

    async def send_line(self, line: str) -> None:
        """Sends one line (without terminator). Raises :class:`PeerGone` when the engine cannot receive."""
        await self.send_lines((line,))

    async def send_lines(self, lines: Sequence[str]) -> None:
        """Sends several lines at once (one write where the transport allows it)."""
        if self.transcript is not None or log.isEnabledFor(logging.DEBUG):  # no per-line work when neither
            for line in lines:
                log.debug("%s > %s", self.name, line)
                if self.transcript is not None:
                    self.transcript.write(self.name, ">", line)
        await self._send(lines)

    async def read_line(self) -> str:
        """Waits for the next line from the engine (without terminator; empty lines are skipped)."""
        while True:
            try:
                line = await self._read()
            except BadLine as e:
                self.last_line = f"<{e}>"
                log.debug("%s < <%s>", self.name, e)
                if self.transcript is not None:
                    self.transcript.write(self.name, "<", f"<{e}>")
                raise
            if self.transcript is not None:
                self.transcript.write(self.name, "<", line)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s < %s", self.name, line)
            if line.strip():
                self.last_line = line
                return line

    @abc.abstractmethod
    async def _send(self, lines: Sequence[str]) -> None: ...

    @abc.abstractmethod
    async def _read(self) -> str: ...

    @abc.abstractmethod
    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Ends the session: sends ``quit`` (when ``quit``), waits up to ``grace`` seconds, then forces the end.

        Never raises, never hangs longer than ``grace`` plus a little, and may be called more than once.
        """


def _decode(raw: bytes) -> str:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if len(raw) > MAX_LINE_BYTES:
        raise BadLine(f"line longer than {MAX_LINE_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadLine(f"invalid UTF-8 at byte {e.start}") from None


class _EngineProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol plus a future for the process's own exit.

    ``Process.wait()`` also waits for the pipes to close, which never happens while a child the engine left behind
    holds its output open, or while a flooded reader has paused the pipe; the supervisor needs the exit itself.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class ProcessTransport(Transport):
    """An engine process in its own process group, over standard input and output.

    Standard error goes to ``stderr_path`` (appended) or is discarded. Reading is bounded: a flood without line
    ends never holds more than a few kilobytes in memory.
    """

    def __init__(
        self,
        name: str,
        proc: asyncio.subprocess.Process,
        pipes: asyncio.SubprocessTransport,
        exited: asyncio.Future[None],
        transcript: Transcript | None = None,
    ) -> None:
        super().__init__(name, transcript)
        self._proc = proc
        self._pipes = pipes
        self._exited = exited
        exited.add_done_callback(self._on_exit)
        self._pgid = proc.pid  # start_new_session makes the engine the leader of a new group
        self._skip_rest = False  # the tail of an over-long line is still to be discarded
        self._closed = False
        self._eof = False
        _LIVE_GROUPS.add(self._pgid)

    @classmethod
    async def start(
        cls,
        name: str,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        stderr_path: str | os.PathLike[str] | None = None,
        transcript: Transcript | None = None,
    ) -> ProcessTransport:
        """Starts ``argv``. Raises OSError (a message naming the command) when it cannot be started."""
        stderr: IO[bytes] | int = asyncio.subprocess.DEVNULL
        if stderr_path is not None:
            Path(stderr_path).parent.mkdir(parents=True, exist_ok=True)
            stderr = Path(stderr_path).open("ab")  # noqa: SIM115 (handed to the child, closed right after)
        loop = asyncio.get_running_loop()
        try:
            # asyncio.create_subprocess_exec, spelled out to get at the protocol (see _EngineProtocol).
            pipes, protocol = await loop.subprocess_exec(
                lambda: _EngineProtocol(_READ_LIMIT, loop),
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as e:
            raise OSError(e.errno, f"cannot start {' '.join(argv)!r}: {e.strerror or e}") from None
        finally:
            if not isinstance(stderr, int):
                stderr.close()
        proc = asyncio.subprocess.Process(pipes, protocol, loop)
        transport = cls(name, proc, pipes, protocol.exited, transcript)
        transport.note(f"started pid {proc.pid}: {' '.join(argv)}")
        return transport

    @property
    def pid(self) -> int:
        """The engine's process id (also its process group id)."""
        return self._proc.pid

    @property
    def pgid(self) -> int:
        """The engine's process group id."""
        return self._pgid

    @property
    def returncode(self) -> int | None:
        """The engine's exit status once it has been reaped (negative: killed by that signal)."""
        return self._proc.returncode

    @property
    def gone(self) -> bool:
        """True once the engine closed its output, exited, or was closed."""
        return self._closed or self._eof or self._proc.returncode is not None

    def exit_info(self) -> str | None:
        """``exit code N`` / ``killed by signal N (NAME)`` once reaped; ``closed its output`` before that."""
        if self._proc.returncode is not None:
            return describe_exit(self._proc.returncode)
        return "closed its output" if self._eof else None

    async def _send(self, lines: Sequence[str]) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        if self.gone or stdin.is_closing():
            raise PeerGone(f"{self.name} is gone ({self.exit_info() or 'input closed'})")
        try:
            stdin.write(("\n".join(lines) + "\n").encode("utf-8"))
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self._await_exit(0.5)
            raise PeerGone(f"{self.name} closed its input ({self.exit_info() or 'still running'})") from None

    def _on_exit(self, _: asyncio.Future[None]) -> None:
        # A child the engine left behind can hold the output pipe open after the engine died, so the exit ends the
        # output: once lines written just before it have had time to arrive, the pipe is closed, which makes a
        # pending read see the end of the output (buffered lines are still read first).
        asyncio.get_running_loop().call_later(_AFTER_EXIT, self._close_output)

    def _close_output(self) -> None:
        pipe = self._pipes.get_pipe_transport(1)
        if pipe is not None and not pipe.is_closing():
            pipe.close()

    async def _read(self) -> str:
        stdout = self._proc.stdout
        assert stdout is not None
        if self._eof:
            raise PeerGone(f"{self.name} closed its output ({self.exit_info()})")
        try:
            if self._skip_rest:
                await self._discard_rest(stdout)
            raw = await stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            self._eof = True
            if e.partial:  # a last line without "\n" before the end is still a line
                return _decode(e.partial)
            await self._await_exit(0.5)
            raise PeerGone(f"{self.name} closed its output ({self.exit_info()})") from None
        except asyncio.LimitOverrunError:
            self._skip_rest = True
            raise BadLine(f"line longer than {MAX_LINE_BYTES} bytes") from None
        return _decode(raw)

    async def _discard_rest(self, stdout: asyncio.StreamReader) -> None:
        """Drops the rest of an over-long line, a bounded chunk at a time."""
        while True:
            try:
                await stdout.readuntil(b"\n")
                self._skip_rest = False
                return
            except asyncio.LimitOverrunError as e:
                await stdout.readexactly(e.consumed)

    async def _await_exit(self, timeout: float) -> None:
        await asyncio.wait((self._exited,), timeout=timeout)

    def kill_group(self) -> None:
        """Sends SIGKILL to the engine's whole process group (the engine and every child it kept in it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._pgid, signal.SIGKILL)

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Sends ``quit``, waits up to ``grace`` s for the exit, kills the group, and reaps the engine."""
        if self._closed:
            return
        self._closed = True
        stdin = self._proc.stdin
        try:
            if quit and self._proc.returncode is None and stdin is not None and not stdin.is_closing():
                with contextlib.suppress(OSError, PeerGone):  # a broken pipe, or the quit timed out
                    await asyncio.wait_for(self._send_quit(), grace)
            if stdin is not None:
                stdin.close()  # end of input: a compliant engine exits on it too
            if grace > 0:
                await self._await_exit(grace)
        finally:
            # Always, even after a clean exit: children the engine left in its group die with it.
            self.kill_group()
            _LIVE_GROUPS.discard(self._pgid)
            await self._exited  # reaped by asyncio's child watcher
            self._pipes.close()  # a paused or inherited pipe would otherwise keep wait() from returning
            await self._proc.wait()
            await self._group_gone(_GROUP_REAP_S)
            self.note(describe_exit(self._proc.returncode))

    async def _group_gone(self, timeout: float) -> None:
        """Waits until no process of the group is left, zombies included (orphans are reaped by init, not us)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self._pgid, 0)
            except ProcessLookupError:
                return
            except PermissionError:
                return  # the pgid was reused by someone else's group: ours is gone
            self.kill_group()
            await asyncio.sleep(0.005)
        log.warning("%s: processes of group %d still exist %g s after the kill", self.name, self._pgid, timeout)

    async def _send_quit(self) -> None:
        log.debug("%s > quit", self.name)
        if self.transcript is not None:
            self.transcript.write(self.name, ">", "quit")
        stdin = self._proc.stdin
        assert stdin is not None
        stdin.write(b"quit\n")
        await stdin.drain()


_ZMQ_CONTEXT: zmq.asyncio.Context | None = None


def _zmq_context() -> zmq.asyncio.Context:
    # One context for the whole arena: sockets are closed individually and the context is never terminated, so
    # closing a socket can never block on undelivered messages.
    global _ZMQ_CONTEXT
    if _ZMQ_CONTEXT is None:
        _ZMQ_CONTEXT = zmq.asyncio.Context()
    return _ZMQ_CONTEXT


class ZmqTransport(Transport):
    """An engine serving UQI on a ZeroMQ endpoint; the arena connects a DEALER socket (one frame = one line).

    A disconnect after the connection was made (the engine's server died) is seen through the socket monitor and
    ends the session: ZeroMQ would reconnect silently, but UQI sessions do not survive their connection.
    """

    def __init__(self, name: str, endpoint: str, transcript: Transcript | None = None) -> None:
        super().__init__(name, transcript)
        self.endpoint = endpoint
        """The engine's endpoint, ``tcp://HOST:PORT`` or ``ipc://PATH``."""
        ctx = _zmq_context()
        self._sock: Any = ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.RCVHWM, 1000)
        self._sock.setsockopt(zmq.MAXMSGSIZE, MAX_LINE_BYTES + 2)
        self._monitor: Any = self._sock.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        self._connected = False
        self._disconnected = False
        self._closed = False
        self._gone_event = asyncio.Event()
        self._watch = asyncio.ensure_future(self._watch_monitor())
        try:
            self._sock.connect(endpoint)
        except zmq.ZMQError as e:
            self._cleanup()
            raise OSError(f"cannot connect to {endpoint}: {e}") from None
        self.note(f"connecting to {endpoint}")

    @classmethod
    async def start(cls, name: str, endpoint: str, *, transcript: Transcript | None = None) -> ZmqTransport:
        """Connects to ``endpoint`` (the engine need not be up yet: the handshake deadline decides)."""
        return cls(name, endpoint, transcript)

    @property
    def gone(self) -> bool:
        """True after a disconnect or close."""
        return self._disconnected or self._closed

    def exit_info(self) -> str | None:
        """``disconnected`` after the engine dropped the connection."""
        return "disconnected" if self._disconnected else None

    async def _watch_monitor(self) -> None:
        with contextlib.suppress(zmq.ZMQError, asyncio.CancelledError):
            while True:
                event = parse_monitor_message(await self._monitor.recv_multipart())
                if event["event"] == zmq.EVENT_CONNECTED:
                    self._connected = True
                elif event["event"] == zmq.EVENT_DISCONNECTED and self._connected:
                    self._disconnected = True
                    self._gone_event.set()
                    self.note(f"{self.endpoint} disconnected")
                    return

    async def _send(self, lines: Sequence[str]) -> None:
        if self.gone:
            raise PeerGone(f"{self.name} at {self.endpoint} is gone ({self.exit_info() or 'closed'})")
        for line in lines:
            await self._sock.send(line.encode("utf-8"))

    async def _read(self) -> str:
        if self.gone:
            raise PeerGone(f"{self.name} at {self.endpoint} disconnected")
        recv = asyncio.ensure_future(self._sock.recv())
        gone = asyncio.ensure_future(self._gone_event.wait())
        try:
            done, _ = await asyncio.wait((recv, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not recv.done():
                recv.cancel()
        if recv in done:
            return _decode(recv.result())
        raise PeerGone(f"{self.name} at {self.endpoint} disconnected")

    def _cleanup(self) -> None:
        self._watch.cancel()
        with contextlib.suppress(zmq.ZMQError):
            self._sock.disable_monitor()
        self._monitor.close(linger=0)

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Sends ``quit`` (ends the session, not the server) and closes the socket without blocking."""
        if self._closed:
            return
        if quit and not self._disconnected:
            with contextlib.suppress(zmq.ZMQError, TimeoutError):
                log.debug("%s > quit", self.name)
                if self.transcript is not None:
                    self.transcript.write(self.name, ">", "quit")
                await asyncio.wait_for(self._sock.send(b"quit"), grace)
        self._closed = True
        self._cleanup()
        # A short linger lets the queued quit reach the engine; the context is never terminated, so this never
        # blocks the arena.
        self._sock.close(linger=int(grace * 1000) if quit else 0)
        self.note("closed")


class ScriptedTransport(Transport):
    """An in-memory engine that follows a script: for protocol unit tests, where no process is needed.

    ``expect(line, replies)`` says that the arena's next line must be ``line`` and that the engine then answers
    ``replies``; ``feed(replies)`` queues replies unprompted; ``hang_up()`` ends the output. A line the script
    did not expect fails the test with AssertionError.
    """

    def __init__(self, name: str = "scripted", transcript: Transcript | None = None) -> None:
        super().__init__(name, transcript)
        self._expected: collections.deque[tuple[str, tuple[str | BaseException, ...]]] = collections.deque()
        self._pending: asyncio.Queue[str | BaseException] = asyncio.Queue()
        self._closed = False
        self.sent: list[str] = []
        """Every line the arena sent, in order."""

    def expect(self, line: str, replies: Iterable[str | BaseException] = ()) -> None:
        """The arena must send ``line`` next; the engine answers ``replies`` (an exception is raised on read)."""
        self._expected.append((line, tuple(replies)))

    def feed(self, replies: Iterable[str | BaseException]) -> None:
        """Queues replies now."""
        for r in replies:
            self._pending.put_nowait(r)

    def hang_up(self) -> None:
        """The engine goes away: reads after the queued replies raise :class:`PeerGone`."""
        self._pending.put_nowait(PeerGone(f"{self.name} closed its output (scripted)"))

    def assert_done(self) -> None:
        """Fails when expected lines were never sent."""
        assert not self._expected, f"expected lines never sent: {[e[0] for e in self._expected]}"

    @property
    def gone(self) -> bool:
        """True after close."""
        return self._closed

    async def _send(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.sent.append(line)
            if self._closed:
                raise PeerGone(f"{self.name} is closed")
            assert self._expected, f"unexpected line sent: {line!r}"
            want, replies = self._expected.popleft()
            assert line == want, f"expected {want!r}, sent {line!r}"
            self.feed(replies)

    async def _read(self) -> str:
        item = await self._pending.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Marks the transport closed (a ``quit`` is recorded in :attr:`sent`, not checked)."""
        if not self._closed and quit:
            self.sent.append("quit")
        self._closed = True
