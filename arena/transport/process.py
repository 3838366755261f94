"""An engine as a child process, spoken to over its standard input and output.

The pipes are read and written by the event loop itself (``add_reader``/``add_writer`` and plain ``os.read``/
``os.write``): no stream objects, no task per read, one write per exchange. Standard error comes back through a
third pipe and is appended to a log file with a size cap, so a full disk or a chatty engine can never stop a
tournament. The process's exit is watched through a pidfd where the system has them.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import shutil
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final

from quarto_arena.protocol.uqi import MAX_LINE_BYTES

from .. import turns
from ..turns import PipeSlots
from . import supervision
from .base import PeerGone, Transcript, Transport, describe_exit

if TYPE_CHECKING:
    from .. import _turns

__all__ = ["DEFAULT_STDERR_LIMIT", "ProcessTransport", "StderrLog"]

log = logging.getLogger("quarto_arena.arena.transport")

DEFAULT_STDERR_LIMIT: Final = 16 * 1024 * 1024
"""Bytes of standard error kept per engine log file; the rest is dropped and the cut is marked in the file."""

# How long lines an engine wrote just before it exited may take to arrive before its output is taken as ended, s.
_AFTER_EXIT: Final = 0.1
# How long close() waits for what an engine left behind to be gone after the kill, s.
_SWEEP_S: Final = 2.0
_CHUNK: Final = 65536
# Bytes queued for an engine that does not read its input before it counts as gone.
_MAX_PENDING: Final = 1 << 20
# Room for the optional "\r" before the "\n": the 4096-byte limit is on the line's text.
_LINE_ROOM: Final = MAX_LINE_BYTES + 1


class StderrLog:
    """An engine's standard error log, shared by every session of that engine, capped at ``limit`` bytes.

    A write that fails (a full disk, a removed directory) is reported once as a warning and the log is dropped
    from then on: the engine goes on, and only the journal decides whether a tournament stops.
    """

    _open: ClassVar[dict[str, StderrLog]] = {}

    def __init__(self, path: Path, limit: int) -> None:
        self.path = path
        self.limit = limit
        self.users = 0
        self.size = 0
        self.cut = False
        self._fd: int | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self.size = os.fstat(self._fd).st_size
        except OSError as e:
            self._fail(e)
        self.cut = self.size >= limit  # a log reopened after a resume may be full already

    @classmethod
    def acquire(cls, path: str | os.PathLike[str], limit: int) -> StderrLog:
        """The log at ``path`` (opened on first use), with one more user."""
        key = os.path.abspath(path)
        found = cls._open.get(key)
        if found is None:
            found = cls._open[key] = cls(Path(key), limit)
        found.users += 1
        return found

    def release(self) -> None:
        """One user fewer; the file is closed with the last."""
        self.users -= 1
        if self.users <= 0:
            self._open.pop(str(self.path), None)
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None

    def write(self, data: bytes) -> None:
        """Appends ``data``, up to the cap; at the cap a note says that the rest was dropped."""
        if self.cut or self._fd is None:
            return
        room = self.limit - self.size
        if len(data) >= room:
            data = (
                data[:room]
                + (
                    f"\n[quarto-arena: this log reached its limit of {self.limit} bytes; the rest of the engine's "
                    "standard error is discarded]\n"
                ).encode()
            )
            self.cut = True
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as e:
            self._fail(e)
        self.size += len(data)

    def _fail(self, e: OSError) -> None:
        log.warning(
            "cannot write engine log %s (%s): the engine's standard error is discarded from now on",
            self.path,
            e.strerror or e,
        )
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None


def _read_some(fd: int, size: int = _CHUNK) -> bytes | None:
    """One non-blocking read: ``None`` when nothing is there yet, ``b""`` at the end (a read error ends it too)."""
    try:
        return os.read(fd, size)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _check_executable(argv0: str, cwd: str | os.PathLike[str] | None) -> None:
    """Raises the OSError the exec would give, before the launcher hides it behind its own exit status."""
    if os.sep not in argv0:
        if shutil.which(argv0) is None:
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
        return
    path = Path(argv0) if os.path.isabs(argv0) or cwd is None else Path(cwd) / argv0
    if not path.exists():
        raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
    if path.is_dir() or not os.access(path, os.X_OK):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))


class ProcessTransport(Transport, PipeSlots):
    """An engine process leading its own session (and process group), over standard input and output.

    Reading is bounded: an over-long line is reported once and its rest skipped as it arrives, so a flood without
    line ends never holds more than one line's worth of bytes.
    """

    def __init__(
        self,
        name: str,
        proc: subprocess.Popen[bytes],
        stdin: int,
        stdout: int,
        stderr: int | None,
        stderr_log: StderrLog | None,
        transcript: Transcript | None = None,
    ) -> None:
        super().__init__(name, transcript)
        self._proc = proc
        self._pid = proc.pid
        self._in = stdin
        self._out = stdout
        self._err = stderr
        self._log = stderr_log
        self._buf = b""
        self._skip = False  # the rest of an over-long line is still to be discarded
        self._pending = b""  # what the engine's input pipe could not take yet
        self._eof = False
        self._closing: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()
        self.returncode: int | None = None
        """The engine's exit status once it has been reaped (negative: killed by that signal)."""
        self._exited: asyncio.Future[None] = self._loop.create_future()
        for fd in (stdin, stdout) if stderr is None else (stdin, stdout, stderr):
            os.set_blocking(fd, False)
        # The compiled reader takes a game's usual turn in one call and gives every other chunk to _on_readable.
        self._reader = turns.reader(self, stdout)
        self._loop.add_reader(stdout, self._on_readable if self._reader is None else self._reader)
        if stderr is not None:
            self._loop.add_reader(stderr, self._on_stderr)
        self._watch_exit()
        supervision.started(self._pid, self.kill_group, self._kill_and_close)

    @classmethod
    async def start(
        cls,
        name: str,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        stderr_path: str | os.PathLike[str] | None = None,
        stderr_limit: int = DEFAULT_STDERR_LIMIT,
        transcript: Transcript | None = None,
    ) -> ProcessTransport:
        """Starts ``argv``. Raises OSError (a message naming the command) when it cannot be started.

        Standard error is appended to ``stderr_path`` (at most ``stderr_limit`` bytes per file, shared by every
        session writing it) or discarded.
        """
        try:
            _check_executable(argv[0], cwd)
        except OSError as e:
            raise OSError(e.errno, f"cannot start {' '.join(argv)!r}: {e.strerror}") from None
        env = dict(os.environ)
        env[supervision.MARKER] = supervision.marker_value()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r: int | None = None
        err_w: int | None = None
        if stderr_path is not None:
            err_r, err_w = os.pipe()
        ours = [in_w, out_r] + ([] if err_r is None else [err_r])
        try:
            proc = subprocess.Popen(
                [*supervision.launcher_prefix(), *argv],
                stdin=in_r,
                stdout=out_w,
                stderr=subprocess.DEVNULL if err_w is None else err_w,
                cwd=cwd,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            for fd in ours:
                os.close(fd)
            raise OSError(e.errno, f"cannot start {' '.join(argv)!r}: {e.strerror or e}") from None
        finally:
            for child_end in (in_r, out_w, err_w):
                if child_end is not None:
                    os.close(child_end)
        stderr_log = None if stderr_path is None else StderrLog.acquire(stderr_path, stderr_limit)
        transport = cls(name, proc, in_w, out_r, err_r, stderr_log, transcript)
        transport.note(f"started pid {proc.pid}: {' '.join(argv)}")
        return transport

    # --- state -------------------------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The engine's process id (also its process group and session id)."""
        return self._pid

    @property
    def pgid(self) -> int:
        """The engine's process group id."""
        return self._pid

    @property
    def fast_reader(self) -> _turns.Reader | None:
        """The compiled reader callback of the output (arena/turns.py), None where turns take the Python path: also
        when the lines are traced (a transcript, the debug log), which only the Python path writes."""
        return None if self._trace else self._reader

    @property
    def input_fd(self) -> int:
        """The engine's standard input (-1 once closed)."""
        return self._in

    @property
    def gone(self) -> bool:
        """True once the engine closed its output, exited, or was closed."""
        return self._ended is not None or self.returncode is not None or self._closing is not None

    def exit_info(self) -> str | None:
        """``exit code N`` / ``killed by signal N (NAME)`` once reaped; ``closed its output`` before that."""
        if self.returncode is not None:
            return describe_exit(self.returncode)
        return "closed its output" if self._eof else None

    def describe_end(self) -> str:
        """What ended the engine's output, with its exit status if known."""
        return f"{self._ended or self.name + ' is gone'} ({self.exit_info() or 'still running'})"

    # --- the exit ----------------------------------------------------------------------------------------------

    def _watch_exit(self) -> None:
        try:
            pidfd = os.pidfd_open(self._pid)
        except (AttributeError, OSError):
            threading.Thread(target=self._wait_in_thread, name=f"wait-{self._pid}", daemon=True).start()
            return
        self._pidfd = pidfd
        self._loop.add_reader(pidfd, self._on_pidfd)

    def _on_pidfd(self) -> None:
        try:
            pid, status = os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self._pid, 255 << 8  # someone else reaped it: the status is lost
        if pid == 0:
            return
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._reaped(os.waitstatus_to_exitcode(status))

    def _wait_in_thread(self) -> None:
        try:
            _, status = os.waitpid(self._pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            code = 255
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._reaped, code)

    def _reaped(self, code: int) -> None:
        self.returncode = code
        self._proc.returncode = code  # so that Popen never waits for a pid that may be reused
        if not self._exited.done():
            self._exited.set_result(None)
        # A child the engine left behind can hold the output pipe open after the engine died, so the exit ends the
        # output: once lines written just before it have had time to arrive, what is there is read and the output
        # counts as ended.
        self._loop.call_later(_AFTER_EXIT, self._end_output)

    def _end_output(self) -> None:
        if not self._eof and self._out >= 0:
            self.poll()
            if not self._eof:
                self._at_eof()

    async def wait_exit(self, timeout: float) -> None:
        """Waits up to ``timeout`` seconds for the engine to exit and be reaped."""
        if not self._exited.done() and timeout > 0:
            await asyncio.wait((self._exited,), timeout=timeout)

    # --- reading -----------------------------------------------------------------------------------------------

    def _on_readable(self, size: int = _CHUNK) -> int:
        """One non-blocking read of at most ``size`` bytes of the output: how many it took (0: none there, or the
        end)."""
        try:  # _read_some, inline: this runs once a turn
            data: bytes | None = os.read(self._out, size)
        except BlockingIOError:
            data = None
        except OSError:
            data = b""
        if not data:
            if data is not None:
                self._at_eof()
            return 0
        self.received_at = time.monotonic()
        self._feed(data)
        return len(data)

    def poll(self) -> None:
        """Reads what is in the pipe at this moment, without waiting, and nothing the engine writes meanwhile.

        Called when a deadline has passed: the bytes counted now were there when the arena woke for it (the doubt of
        a late wake-up goes to the engine); what comes after the count is later still. Reading on while a flooding
        engine keeps writing would let a slow arena (a loaded machine) take a turn written seconds after the
        deadline as if it had been waiting there. At most a pipe's capacity is read.
        """
        if self._eof or self._out < 0:
            return
        try:
            left = struct.unpack("i", fcntl.ioctl(self._out, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            left = 0
        # With nothing counted, one byte is still asked for: a closed output is seen now (a disconnect, not a
        # forfeit), and at most a byte written in the instant since the count is taken with it.
        size = max(1, min(left, _CHUNK))
        while taken := self._on_readable(size):
            left -= taken
            if left <= 0 or self._eof or self._out < 0:
                return
            size = min(left, _CHUNK)

    def _feed(self, data: bytes) -> None:
        """Splits bytes into lines: the one place where that happens for a process."""
        if self._skip:
            nl = data.find(b"\n")
            if nl < 0:
                return
            self._skip = False
            data = data[nl + 1 :]
        buf = self._buf + data if self._buf else data
        start = 0
        find = buf.find
        nl = find(b"\n")
        while nl >= 0:
            end = nl - 1 if nl > start and buf[nl - 1] == 13 else nl  # 13: "\r"
            self._received(buf[start:end])
            start = nl + 1
            nl = find(b"\n", start)
        if len(buf) - start > _LINE_ROOM:
            self._buf = b""
            self._skip = True
            self._bad(f"line longer than {MAX_LINE_BYTES} bytes")
        else:
            self._buf = buf[start:] if start else buf

    def _at_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        if self._out >= 0:
            self._loop.remove_reader(self._out)
        if self._buf and not self._skip:  # a last line without "\n" before the end is still a line
            rest, self._buf = self._buf, b""
            self._received(rest[:-1] if rest.endswith(b"\r") else rest)
        self._gone(f"{self.name} closed its output")

    def _on_stderr(self) -> None:
        assert self._err is not None
        data = _read_some(self._err)
        if data is None:
            return
        if not data:
            self._loop.remove_reader(self._err)
            os.close(self._err)
            self._err = None
        elif self._log is not None:
            self._log.write(data)

    # --- writing -----------------------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self._in < 0 or self.returncode is not None:
            raise PeerGone(f"{self.name} is gone ({self.exit_info() or 'input closed'})")
        if self._pending:
            if len(self._pending) + len(data) > _MAX_PENDING:
                raise PeerGone(f"{self.name} does not read its input")
            self._pending += data
            return
        try:
            n = os.write(self._in, data)
        except BlockingIOError:
            n = 0
        except OSError:
            raise PeerGone(f"{self.name} closed its input ({self.exit_info() or 'still running'})") from None
        if n < len(data):
            self._pending = data[n:]
            self._loop.add_writer(self._in, self._flush)

    def _flush(self) -> None:
        try:
            n = os.write(self._in, self._pending)
        except BlockingIOError:
            return
        except OSError:
            n = len(self._pending)  # the engine is gone; the reader or the exit watcher reports it
        self._pending = self._pending[n:]
        if not self._pending:
            self._loop.remove_writer(self._in)

    def _close_input(self) -> None:
        if self._in >= 0:
            if self._pending:
                self._loop.remove_writer(self._in)
                self._pending = b""
            os.close(self._in)
            self._in = -1

    # --- the end -----------------------------------------------------------------------------------------------

    def kill_group(self) -> None:
        """Sends SIGKILL to the engine's whole process group (the engine and every child it kept in it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._pid, signal.SIGKILL)

    async def _kill_and_close(self) -> None:
        await self.close(grace=0, quit=False)

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Sends ``quit``, closes the input, waits up to ``grace`` s for the exit, then kills the group, reaps the
        engine and sweeps away whatever it left behind (children in its group or session, escaped descendants)."""
        if self._closing is not None:
            await asyncio.shield(self._closing)
            return
        self._closing = self._loop.create_future()
        try:
            if quit and self.returncode is None and self._in >= 0:
                with contextlib.suppress(PeerGone):
                    self.send_lines(("quit",))
            self._close_input()  # end of input: a compliant engine exits on it too
            await self.wait_exit(grace)
        finally:
            # Always, even after a clean exit: children the engine left behind die with it. The snapshot comes
            # first, while descendants are still linked to the engine by parentage.
            left = supervision.snapshot(self._pid) if self.returncode is None else set()
            self.kill_group()
            supervision.kill_now(left)
            await self._exited
            stray = await supervision.sweep(self._pid, known=left, timeout=_SWEEP_S)
            if stray:
                log.warning("%s: processes %s still exist %g s after the kill", self.name, stray, _SWEEP_S)
            self._release_pipes()
            supervision.ended(self._pid)
            self.note(describe_exit(self.returncode))
            self._closing.set_result(None)

    def _release_pipes(self) -> None:
        self._close_input()
        if self._out >= 0:
            if not self._eof:
                self._loop.remove_reader(self._out)
            os.close(self._out)
            self._out = -1
        if self._err is not None:
            # The last words of a crashed engine are usually already in the pipe.
            for _ in range(16):
                try:
                    data = os.read(self._err, _CHUNK)
                except OSError:
                    break
                if not data:
                    break
                if self._log is not None:
                    self._log.write(data)
            self._loop.remove_reader(self._err)
            os.close(self._err)
            self._err = None
        if self._log is not None:
            self._log.release()
            self._log = None
        if not self._eof:
            self._eof = True
            self._gone(f"{self.name} was closed")
