"""Serve any stdio UQI engine over ZeroMQ: ``python -m quarto_arena.protocol.bridge``.

    python -m quarto_arena.protocol.bridge --listen tcp://127.0.0.1:5555 -- ./quarto_bot --some-flag
    python -m quarto_arena.protocol.bridge --connect tcp://arena.example.org:5555 --name alice \
        --key keys/alice.key_secret --server-key keys/arena.key [--slots 2] -- ./quarto_bot

With ``--listen`` the bridge serves on an endpoint that the arena connects to (SPEC §3.3); binds to loopback unless
``--allow-remote`` is given. With ``--connect`` it connects in to an arena that serves (SPEC §3.4), and needs no
open port. Each session starts the engine as a child process in its own process group (one process per slot),
passes every line from the arena to its standard input and every line of its standard output back, and ends when
the arena sends ``quit`` (the engine gets a second to exit, then its group is killed). If the engine exits on its
own, the session ends (``--listen``: the bridge closes the socket, so the arena sees a disconnect; ``--connect``:
it tells the arena ``ended``), and the next session gets a fresh engine. Standard error goes to ours.
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
import threading
from collections.abc import Callable, Sequence

from .bot import (
    EXIT_USAGE,
    EndpointError,
    exit_on_sigterm,
    parse_endpoint,
    serve_connected_until_stopped,
    serve_zmq_sessions,
)
from .connect import add_arguments as add_connect_arguments

log = logging.getLogger(__name__)

QUIT_GRACE = 1.0
"""Seconds the engine has to exit after ``quit`` before its process group is killed."""


def _exit_status(returncode: int | None) -> str:
    """``exit code 1``, ``killed by signal 9``, or ``still running`` (the engine closed its output but lives on)."""
    if returncode is None:
        return "closed its output, still running"
    return f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"


class _Bridged:
    """One session: one engine process, its lines pumped both ways."""

    def __init__(self, argv: Sequence[str], write: Callable[[str | None], None]) -> None:
        self._write = write
        self._proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True, bufsize=0
        )
        log.info("started %s (pid %d)", " ".join(argv), self._proc.pid)
        self._quit = False
        self.exit_info: str | None = None
        """How the engine ended, once it closed its output on its own (for the arena's record)."""
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        try:
            for raw in iter(self._proc.stdout.readline, b""):
                self._write(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):  # the session closed the pipe under us (the bridge is stopping)
            return
        log.info("the engine closed its output (pid %d)", self._proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(0.25)  # so that the end can name the exit status
        self.exit_info = _exit_status(self._proc.returncode)
        self._write(None)

    def handle(self, line: str) -> bool:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(line.encode("utf-8") + b"\n")
        except (BrokenPipeError, ValueError):
            return False  # the engine is gone; the reader thread ends the session
        if line.strip() == "quit":
            self._quit = True
            return False
        return True

    def close(self) -> None:
        # Called once the session's socket is closed and a fresh one listens, so the grace given to an engine
        # that was told to quit never keeps the next arena waiting for a socket.
        if self._quit:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(QUIT_GRACE)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        self._pump.join(QUIT_GRACE)  # it sees the end of the output: its pipe must not be closed under it
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Parses the command line and serves the engine until interrupted; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m quarto_arena.protocol.bridge",
        description="Serve a stdio UQI engine over ZeroMQ: on an endpoint (--listen), or connected in to an arena"
        " that serves (--connect).",
    )
    parser.add_argument("--listen", metavar="ENDPOINT", help="tcp://127.0.0.1:PORT or ipc://PATH")
    parser.add_argument("--allow-remote", action="store_true", help="allow a --listen address that is not loopback")
    add_connect_arguments(parser)
    parser.add_argument("engine", nargs="+", help="the engine's command line (put it after --)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s bridge: %(message)s")
    if (args.listen is None) == (args.connect is None):
        print("error: give --listen ENDPOINT or --connect ENDPOINT (one of them)", file=sys.stderr)
        return EXIT_USAGE
    if args.connect is not None or args.name or args.key or args.server_key or args.slots != 1:
        return _connect(args)  # which says that these go with --connect, when it is not there
    try:
        endpoint = parse_endpoint(args.listen, allow_remote=args.allow_remote)
        exit_on_sigterm()
        serve_zmq_sessions(lambda write: _Bridged(args.engine, write), endpoint)
    except EndpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"error: cannot start {args.engine[0]!r}: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        log.info("interrupted")
    return 0


def _connect(args: argparse.Namespace) -> int:
    """``--connect``: serves the arena's sessions on ``--slots`` slots, a fresh engine process for each session."""
    from .client import ClientError, connect_options

    try:
        options = connect_options(args)
    except ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    assert options is not None
    program = args.engine[0]
    if shutil.which(program) is None:
        print(f"error: cannot start {program!r}: no such program", file=sys.stderr)
        return EXIT_USAGE
    return serve_connected_until_stopped(lambda write: _Bridged(args.engine, write), options)


if __name__ == "__main__":
    sys.exit(main())
