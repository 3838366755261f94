"""Serve any stdio UQI engine over ZeroMQ: ``python -m quarto_arena.protocol.bridge``.

    python -m quarto_arena.protocol.bridge --listen tcp://127.0.0.1:5555 -- ./quarto_bot --some-flag
    python -m quarto_arena.protocol.bridge --connect tcp://arena.example.org:5555 --name alice \
        --key keys/alice.key_secret --server-key keys/arena.key [--slots 2] -- ./quarto_bot

With ``--listen`` the bridge serves on an endpoint that the arena connects to (SPEC §3.3); binds to loopback unless
``--allow-remote`` is given. With ``--connect`` it connects in to an arena that serves (SPEC §3.4), and needs no
open port.

**Warm engines.** Each slot (one with ``--listen``) keeps one engine process, in its own process group, for game
after game, as a local arena does: the process is started and its handshake done before the slot takes a session,
so a slow start never lands on an arena's deadline. Each session's ``uqi`` is answered with that handshake; its
lines then pass to the engine as they are (``newgame`` starts each game). When a session ends the bridge stops a
search still running, sets the options the session changed back to their defaults and waits for ``readyok``:
then the slot takes the next session. A fresh process comes only when the engine exited, could not be made clean,
wrote a line over the limit, or the arena killed the session (``kill K``), and for every session with
``--fresh-process``.

**Leaving.** The first SIGINT or SIGTERM finishes the games in flight and takes no new ones, then exits 0; a second
one leaves at once (status 130 or 143). When the arena ends the run (``goodbye``) the bridge exits 0, unless
``--stay`` keeps it connecting for the next run. The engine's standard error goes to ours, each line prefixed with
its slot, or to ``--engine-log FILE``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import IO, Final

from .bot import EXIT_USAGE, EndpointError, add_connect_arguments, parse_endpoint
from .launch import launcher_prefix
from .safelog import LOG_BYTES, Quiet, service_log
from .slots import Loop, Timer
from .uqi import (
    MAX_LINE_BYTES,
    MAX_OPTIONS,
    PROTOCOL_VERSION,
    OptionSpec,
    OptionType,
    SetOption,
    UqiError,
    format_command,
    parse_command,
    parse_reply,
)

log = logging.getLogger("quarto_arena.protocol.bridge")  # its name also when run as __main__

QUIT_GRACE: Final = 1.0
"""Seconds the engine has to exit after ``quit`` before its process group is killed."""
STARTUP: Final = 60.0
"""Seconds a fresh engine has for its handshake (no arena waits on it meanwhile)."""
CLEAN: Final = 3.0
"""Seconds an engine has, after its session, to end a search and answer ``isready``; then it is replaced."""
_RESTART_PAUSES: Final = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0)
"""Pauses before each further start of an engine that keeps failing to start."""
_PENDING: Final = 1000
"""Lines of the arena kept for an engine that is not ready yet (a session opened while it restarts)."""


ROUTINE: Final = {
    "slot %d: session begins": "sessions begun",
    "slot %d: session ends (%s)": "sessions ended",
    "session ended (%s)": "sessions ended",
    "waiting for the next uqi": "waits for the next uqi",
    "%s: started %s (pid %d)": "engine processes started",
    "%s: a fresh engine process (%s)": "fresh engine processes",
    "%s: the engine ended (%s, pid %d)": "engine exits",
    "no arena at %s yet; trying again in %.1f s": "connection attempts",
}
"""The bridge's routine lines (by their template), which ``-q`` counts in its summary instead of showing them."""


def _exit_status(returncode: int | None) -> str:
    """``exit code 1``, ``killed by signal 9``, or ``still running`` (the engine closed its output but lives on)."""
    if returncode is None:
        return "closed its output, still running"
    return f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"


class EngineSlot:
    """One slot's engine process, kept across sessions (a :class:`~quarto_arena.protocol.slots.Slot`).

    States: ``starting`` (a process and its handshake, under :data:`STARTUP`), ``idle``, ``busy`` (a session is on),
    ``cleaning`` (after a session: the search stopped, the options reset, ``isready``). Every pipe is read by the
    loop; writes to the engine's input are plain writes.
    """

    def __init__(
        self,
        argv: Sequence[str],
        loop: Loop,
        *,
        label: str = "engine",
        stderr: IO[bytes] | None = None,
        fresh_process: bool = False,
    ) -> None:
        self.argv = list(argv)
        self.loop = loop
        self.label = label
        self.stderr = stderr
        """Where the engine's standard error goes; None: ours, each line prefixed with :attr:`label`."""
        self.fresh_process = fresh_process
        self.starts = 0
        """Processes started so far."""
        self.state = "stopped"
        self._on_ready: Callable[[], None] = lambda: None
        self._proc: subprocess.Popen[bytes] | None = None
        self._in = -1
        self._out = -1
        self._err = -1
        self._buf = b""
        self._err_buf = b""
        self._handshake: list[str] = []
        self._defaults: dict[str, OptionSpec] = {}
        self._changed: dict[str, None] = {}
        self._searches = 0  # go lines sent whose turn (or refusal) has not come back
        self._write: Callable[[str | None], None] | None = None
        self._greeted = False  # the session's uqi has been answered
        self._pending: list[str] = []
        self._inbox: list[str] = []  # lines for the engine, written once the loop's batch is done
        self._timer: Timer | None = None
        self._exit: str | None = None
        self._failures = 0
        self._closed = False

    # --- the Slot protocol ---------------------------------------------------------------------------------------

    def start(self, on_ready: Callable[[], None]) -> None:
        self._on_ready = on_ready
        self._spawn()

    @property
    def ready(self) -> bool:
        return self.state == "idle"

    def open(self, write: Callable[[str | None], None]) -> None:
        self._write = write
        self._greeted = False
        self._pending = []
        self._exit = None
        if self.state == "idle":
            self.state = "busy"

    def handle(self, line: str) -> bool:
        if self.state != "busy":
            if len(self._pending) < _PENDING:
                self._pending.append(line)
            return line.strip() != "quit"
        word = line.split(None, 1)[0] if line and not line[0].isspace() else (line.split() or [""])[0]
        if word == "go":
            self._searches += 1
        elif word == "uqi":
            write = self._write
            assert write is not None
            if self._greeted:
                # A second uqi: another arena on the same connection starts a session (SPEC §4.10). The engine is
                # made clean first (its search stopped, its lines dropped); the handshake follows.
                self.finish()
                self.open(write)
                return self.handle(line)
            self._greeted = True
            for reply in self._handshake:
                write(reply)
            return True
        elif word == "quit":
            return False
        elif word == "setoption":
            with contextlib.suppress(UqiError):
                command = parse_command(line)
                if isinstance(command, SetOption):
                    self._changed[command.name.lower()] = None
        self._send(line + "\n")
        return True

    def exit_info(self) -> str | None:
        return self._exit

    def finish(self, *, fresh: bool = False) -> None:
        self._write = None
        self._pending = []
        if self.state in ("starting", "stopped") or self._closed:
            return  # a fresh engine is on its way already
        if fresh or self.fresh_process:
            self._replace("the arena killed the session" if fresh else None)
            return
        self.state = "cleaning"
        self._arm(CLEAN, lambda: self._replace(f"not clean within {CLEAN:g} s of the session's end"))
        if self._searches:
            self._send("stop\n")
        else:
            self._reset()

    def close(self) -> None:
        self._closed = True
        self.state = "stopped"
        self._disarm()
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._inbox.append("quit\n")
            self._write_in()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(QUIT_GRACE)
        self._kill()

    # --- the process ------------------------------------------------------------------------------------------------

    def _spawn(self) -> None:
        self.state = "starting"
        self._buf, self._err_buf, self._handshake, self._defaults, self._changed = b"", b"", [], {}, {}
        self._searches = 0
        try:
            proc = subprocess.Popen(
                [*launcher_prefix(), *self.argv],  # the engine dies with the bridge, even a SIGKILLed one
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if self.stderr is None else self.stderr,
                start_new_session=True,
                bufsize=0,
            )
        except OSError as e:
            self._failed(f"cannot start {self.argv[0]!r}: {e.strerror or e}")
            return
        self._proc = proc
        self.starts += 1
        assert proc.stdin is not None and proc.stdout is not None
        self._in, self._out = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(self._out, False)
        self.loop.add_reader(self._out, self._readable)
        if proc.stderr is not None:
            self._err = proc.stderr.fileno()
            os.set_blocking(self._err, False)
            self.loop.add_reader(self._err, self._stderr_readable)
        log.info("%s: started %s (pid %d)", self.label, " ".join(self.argv), proc.pid)
        self._arm(STARTUP, lambda: self._failed(f"no uqiok within {STARTUP:g} s"))
        self._send(format_command_uqi())

    def _kill(self) -> None:
        """Kills the process group, reaps the process and closes the pipes."""
        proc, self._proc = self._proc, None
        self._inbox = []
        if proc is None:
            return
        for fd in (self._out, self._err):
            if fd >= 0:
                self.loop.remove_reader(fd)
        self._out = self._err = self._in = -1
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _replace(self, why: str | None) -> None:
        """A fresh process for the next session (``why`` is logged)."""
        if why is not None:
            log.info("%s: a fresh engine process (%s)", self.label, why)
        self._disarm()
        self._kill()
        if not self._closed:
            self._spawn()

    def _failed(self, why: str) -> None:
        """The engine could not start (or finish its handshake): tried again after a pause that grows."""
        pause = _RESTART_PAUSES[min(self._failures, len(_RESTART_PAUSES) - 1)]
        self._failures += 1
        log.error("%s: %s; trying again in %g s", self.label, why, pause)
        self._disarm()
        self._kill()
        self.state = "stopped"
        if not self._closed:
            self._timer = self.loop.call_later(pause, self._spawn)

    def _send(self, data: str) -> None:
        """Queues ``data`` for the engine's input: what the arena sends in one batch (``position`` and ``go``)
        reaches the engine in one write, so that it wakes once."""
        if self._in < 0:
            return
        if not self._inbox:
            self.loop.call_soon(self._write_in)
        self._inbox.append(data)

    def _write_in(self) -> None:
        data, self._inbox = "".join(self._inbox).encode("utf-8"), []
        if self._in < 0 or not data:
            return
        with contextlib.suppress(OSError, ValueError):  # the engine is gone: the end of its output follows
            os.write(self._in, data)

    def _arm(self, seconds: float, callback: Callable[[], None]) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # --- what the engine writes ---------------------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            data = os.read(self._out, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._ended()
            return
        lines = (self._buf + data).split(b"\n")
        self._buf = lines.pop()
        if len(self._buf) > MAX_LINE_BYTES + 1:
            self._buf = b""
            self._broken(f"the engine wrote a line longer than {MAX_LINE_BYTES} bytes")
            return
        for raw in lines:
            if self._proc is None:
                return  # replaced meanwhile
            self._line(raw.decode("utf-8", "replace").rstrip("\r"))

    def _line(self, line: str) -> None:
        state = self.state
        if state == "busy":
            if line.startswith(("turn", "error go")) and self._searches:
                self._searches -= 1
            assert self._write is not None
            self._write(line)
        elif state == "starting":
            self._handshaking(line)
        elif state == "cleaning":
            if line.startswith(("turn", "error go")) and self._searches:
                self._searches -= 1
                if not self._searches:
                    self._reset()
            elif line.startswith("readyok") and not self._searches:
                self._clean()
            elif line.startswith("error"):
                self._replace(f"it refused to be reset: {line[:80]!r}")
        # idle: a line nobody asked for is dropped

    def _handshaking(self, line: str) -> None:
        word = line.split(None, 1)[0] if line.strip() else ""
        if word == "option":
            try:
                spec = parse_reply(line)
            except UqiError:
                spec = None
            if isinstance(spec, OptionSpec):
                self._defaults[spec.name.lower()] = spec
            if len(self._defaults) > MAX_OPTIONS:
                self._failed(f"it declares more than {MAX_OPTIONS} options")
                return
            self._handshake.append(line)
        elif word == "id":
            self._handshake.append(line)
        elif word == "uqiok":
            self._handshake.append(line)
            self._failures = 0
            self._disarm()
            self._became_ready()

    def _reset(self) -> None:
        """The search is over: options back to their defaults, then ``isready``."""
        lines = []
        for key in self._changed:
            spec = self._defaults.get(key)
            if spec is not None and spec.type is not OptionType.BUTTON:
                lines.append(format_command(SetOption(spec.name, spec.default)))
        self._changed = {}
        lines.append("isready")
        self._send("\n".join(lines) + "\n")

    def _clean(self) -> None:
        self._disarm()
        self._became_ready()

    def _became_ready(self) -> None:
        if self._write is not None:  # a session opened meanwhile: it begins now, with what the arena sent so far
            self.state = "busy"
            pending, self._pending = self._pending, []
            for line in pending:
                if self.state != "busy" or not self.handle(line):
                    break
            return
        self.state = "idle"
        self._on_ready()

    def _ended(self) -> None:
        """The engine closed its output (it exited, most likely)."""
        proc = self._proc
        assert proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.05)  # so that the end can name the exit status
        how = _exit_status(proc.returncode)
        self._broken(how)

    def _broken(self, how: str) -> None:
        """The engine cannot go on: the session, if any, ends from our side; a fresh process follows."""
        state = self.state
        log.info("%s: the engine ended (%s, pid %d)", self.label, how, self._proc.pid if self._proc else 0)
        self._exit = how
        write = self._write
        if state == "starting":
            self._failed(f"the engine ended before its handshake ({how})")
            return
        self._replace(None)
        if state == "busy" and write is not None:
            write(None)

    def _stderr_readable(self) -> None:
        try:
            data = os.read(self._err, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.loop.remove_reader(self._err)
            self._err = -1
            return
        lines = (self._err_buf + data).split(b"\n")
        self._err_buf = lines.pop()[-MAX_LINE_BYTES:]
        out = sys.stderr
        for raw in lines:
            out.write(f"[{self.label}] {raw.decode('utf-8', 'replace').rstrip()}\n")
        out.flush()


def format_command_uqi() -> str:
    return f"uqi {PROTOCOL_VERSION}\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m quarto_arena.protocol.bridge",
        description="Serve a stdio UQI engine over ZeroMQ: on an endpoint (--listen), or connected in to an arena"
        " that serves (--connect).",
    )
    parser.add_argument("--listen", metavar="ENDPOINT", help="tcp://127.0.0.1:PORT or ipc://PATH")
    parser.add_argument("--allow-remote", action="store_true", help="allow a --listen address that is not loopback")
    add_connect_arguments(parser)
    parser.add_argument(
        "--fresh-process", action="store_true", help="a new engine process for every session (default: kept warm)"
    )
    parser.add_argument(
        "--engine-log", metavar="FILE", help="append the engine's standard error to FILE (default: ours, prefixed)"
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no line per session or engine start, but a summary of them every 10 minutes",
    )
    parser.add_argument(
        "--log", metavar="FILE", help=f"the bridge's log in FILE, rotated at {LOG_BYTES >> 20} MB (default: stderr)"
    )
    parser.add_argument("engine", nargs="+", help="the engine's command line (put it after --)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parses the command line and serves the engine until stopped; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        logs = service_log(
            ["quarto_arena.protocol"],
            "%(asctime)s bridge: %(message)s",
            quiet=Quiet(ROUTINE) if args.quiet else None,
            path=args.log,
        )
    except OSError as e:
        print(f"error: --log {args.log}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _serve(args)
    finally:
        logs.close()


def _serve(args: argparse.Namespace) -> int:
    if (args.listen is None) == (args.connect is None):
        print("error: give --listen ENDPOINT or --connect ENDPOINT (one of them)", file=sys.stderr)
        return EXIT_USAGE
    program = args.engine[0]
    if shutil.which(program) is None:
        print(f"error: cannot start {program!r}: no such program", file=sys.stderr)
        return EXIT_USAGE
    engine_log: IO[bytes] | None = None
    if args.engine_log is not None:
        try:
            engine_log = open(args.engine_log, "ab")  # noqa: SIM115 (open for the bridge's whole life)
        except OSError as e:
            print(f"error: --engine-log {args.engine_log}: {e.strerror or e}", file=sys.stderr)
            return EXIT_USAGE
    try:
        if args.connect is not None or args.name or args.key or args.server_key or args.slots != 1:
            return _connect(args, engine_log)  # which says that these go with --connect, when it is not there
        return _listen(args, engine_log)
    finally:
        if engine_log is not None:
            engine_log.close()


def _slot_factory(args: argparse.Namespace, engine_log: IO[bytes] | None) -> Callable[[Loop, int], EngineSlot]:
    def make(loop: Loop, number: int) -> EngineSlot:
        return EngineSlot(
            args.engine, loop, label=f"slot {number}", stderr=engine_log, fresh_process=args.fresh_process
        )

    return make


def _listen(args: argparse.Namespace, engine_log: IO[bytes] | None) -> int:
    from .bot import serve_slot_sessions

    try:
        endpoint = parse_endpoint(args.listen, allow_remote=args.allow_remote)
    except EndpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return serve_slot_sessions(_slot_factory(args, engine_log), endpoint)
    except EndpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE


def _connect(args: argparse.Namespace, engine_log: IO[bytes] | None) -> int:
    """``--connect``: serves the arena's sessions on ``--slots`` slots, one warm engine process each."""
    from .bot import serve_connected_until_stopped
    from .client import ClientError, connect_options

    try:
        options = connect_options(args)
    except ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    assert options is not None
    return serve_connected_until_stopped(_slot_factory(args, engine_log), options)


if __name__ == "__main__":
    sys.exit(main())
