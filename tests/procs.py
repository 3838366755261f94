"""Processes in tests: the CLI run as a subprocess, free loopback ports, servers tied to the test's life, and finding
what is left of an engine (every process, zombies included, in given process groups or sessions)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from quarto_arena.arena.transport.supervision import launcher_prefix

#: The CLI as a subprocess, with this Python (the console script may not be on PATH): the console script's own
#: entry point (pyproject.toml), which also covers a Ctrl-C during the imports.
CLI = [sys.executable, "-c", "from quarto_arena.arena.console import main; main()"]

STEADY_TC = "st=1"
"""A time control the load does not reach, for engines that answer at once (random, greedy, minimax at its default
depth, the C and JS bots, the testing bots): a turn past it (and the 50 ms margin) means the machine stalled for a
second. For a test whose subject is not timing: at st=0.5, with another CI run beside it (load 11 on 2 CPUs), random
once went 555 ms without its turn and lost on time. Not for an engine that thinks for its movetime (perfect, the
starters): it would think for the whole second and keep its 100 ms of slack all the same; see STEADY_MARGIN."""

STEADY_MARGIN_MS = 1000
"""The margin of :data:`STEADY_MARGIN`, for the Python API (``GameSpec``/``GameSettings`` ``margin_ms``,
``RunOptions.timemargin``)."""

STEADY_MARGIN = ("--timemargin", str(STEADY_MARGIN_MS))
"""For engines that think for (a share of) their movetime: keep their short ``--tc st=...``, so that the test stays
quick, and tolerate a 1 s stall of the machine (the engine still thinks for st; the arena waits a second more)."""


def cli(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``quarto-arena ARGS`` run to its end, its output captured as text."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def wait_until(
    condition: Callable[[], object], timeout: float = 60.0, *, proc: subprocess.Popen[Any] | None = None
) -> None:
    """Polls ``condition`` until it holds; fails after ``timeout`` seconds, or at once when ``proc`` (the process
    the test waits on) has exited, with its status and stderr."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process exited with {proc.returncode}: {proc.communicate()[1]}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def group_members(leader: int) -> list[int]:
    """The pids of every process in ``leader``'s process group or session but the leader itself (the helpers a
    command started, which must end with it)."""
    return [pid for line in processes_in_groups([leader]) if (pid := int(line.split()[0])) != leader]


def _own_ports() -> Iterator[int]:
    """This process's ports for :func:`free_port`, in turn: its own slice of the ports below the kernel's ephemeral
    range, starting at a random place in the slice (other test runs on the same machine start elsewhere)."""
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    low = min(20000, ephemeral // 2)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    size = (ephemeral - low) // max(workers, 1)
    first = low + worker * size
    start = random.randrange(size)
    while True:
        for i in range(size):
            yield first + (start + i) % size


_PORTS = _own_ports()


def free_port() -> int:
    """A TCP port free on the loopback address just now, which nothing else in the suite takes before the test's
    server binds it.

    Not one the kernel picks (a bind to port 0): it picks at random in its ephemeral range, and any other bind to
    port 0 in the suite (another worker's free_port, a server on port 0) may get the same port between this check
    and the server's bind (2,000 picks in a row here repeated 156 ports). Each xdist worker takes its ports in turn
    from its own slice below the ephemeral range, where the kernel never picks one, neither for a bind to port 0
    nor for a connection's own end.
    """
    for _ in range(1000):
        port = next(_PORTS)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use (or in TIME_WAIT from an earlier test): the next one
            return port
    raise AssertionError("no free port in this worker's slice: 1,000 in a row are in use")


def tied(argv: Sequence[str]) -> list[str]:
    """``argv`` started so that the kernel kills it when the test's process dies (Linux: ``setpriv --pdeathsig
    KILL``, as the arena starts engines). A server a test starts in a session of its own is killed by the test's
    ``finally``; but a test process that dies (an xdist worker's crash, a libzmq abort, a kill) runs no ``finally``,
    and such a server would serve on for hours. Start it from the test's own thread: the kernel ties it to the thread
    that started it."""
    return [*launcher_prefix(), *argv]


def processes_in_groups(pgids: Collection[int]) -> list[str]:
    """``pid (state) cmdline`` of every process whose process group or session is one of ``pgids``.

    Each engine leads its own session, so a child that left the engine's group is still found.
    """
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended while we looked
        # Fields after the command name in parentheses: state, ppid, pgrp, session, ...
        state, _ppid, pgrp, session = stat.rsplit(")", 1)[1].split()[:4]
        if int(pgrp) in pgids or int(session) in pgids:
            out.append(f"{entry.name} ({state}) {cmdline.strip()}")
    return out


def cpu_seconds(pid: int) -> float:
    """The processor time ``pid`` has used so far (user and system, its own threads; not its children's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_started(
    condition: Callable[[], object], proc: subprocess.Popen[Any], what: str, *, cpu: float = 30.0, wall: float = 240.0
) -> None:
    """Polls ``condition`` (the server ``proc`` is up) until it holds; fails at once when ``proc`` exits, when it has
    used ``cpu`` seconds of processor time without being up, or after ``wall`` seconds.

    A start is bounded by the work it takes, not by the clock: on a machine at load 15 a Dask scheduler that needs 2 s
    of processor time took over 10 s to listen, and a wall-clock deadline measured the other suites beside it. The
    ``wall`` bound is only for a server blocked without working (the suite's own per-test timeout is 300 s).
    """
    deadline = time.monotonic() + wall
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"{what}: the server exited with {proc.returncode}")
        used = cpu_seconds(proc.pid)
        assert used < cpu, f"{what}: not yet after {used:.1f} s of processor time"
        assert time.monotonic() < deadline, f"{what}: not yet after {wall:.0f} s, with {used:.1f} s of processor time"
        time.sleep(0.02)


def wait_listening(endpoint: str, proc: subprocess.Popen[Any], *, cpu: float = 30.0) -> None:
    """Waits until something accepts TCP connections at ``endpoint`` (an arena reports a dead endpoint at once, so a
    test must not connect before the server it just started is up), within ``cpu`` seconds of the server's processor
    time (:func:`wait_started`)."""
    port = int(endpoint.rsplit(":", 1)[1])

    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_started(listening, proc, f"nothing listens on {endpoint}", cpu=cpu)


def become_subreaper() -> None:
    """Makes this process inherit the orphans of its descendants (Linux), as a proper init would, so that a test
    can reap what a killed arena left and count what is really left."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def present(pids: Collection[int]) -> list[int]:
    """Those of ``pids`` that still exist (zombies included); our own zombie children among them are reaped first."""
    out = []
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        if Path(f"/proc/{pid}").exists():
            out.append(pid)
    return out


def marked_processes(arena_pid: int) -> list[int]:
    """Pids of every live process that carries the engine marker of the arena process ``arena_pid``."""
    needle = f"QUARTO_ARENA_ENGINE={arena_pid}.".encode()
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes():
                    out.append(int(entry.name))
    return out


@contextlib.contextmanager
def started(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` running in its own process group, its stderr into ``log``; the whole group is killed afterwards."""
    with log.open("ab") as f:
        proc = subprocess.Popen(tied(argv), stdout=subprocess.DEVNULL, stderr=f, start_new_session=True)
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def sdk_bot(engine: str, endpoint: str, keys: Path, name: str, slots: int = 1, stay: bool = False) -> list[str]:
    """The command line of a built-in engine as an SDK bot connecting in as ``name`` with its key in ``keys``."""
    from quarto_arena.engines.registry import command

    return [
        *command(engine),
        "--connect",
        endpoint,
        "--name",
        name,
        "--key",
        str(keys / f"{name}.key_secret"),
        "--server-key",
        str(keys / "arena.key"),
        "--slots",
        str(slots),
        *(["--stay"] if stay else []),
    ]


def ladder_process(directory: Path, *args: str, tc: str = STEADY_TC) -> subprocess.Popen[str]:
    """`quarto-arena ladder run DIRECTORY --tc TC ARGS` in a session of its own, its stderr in ``DIRECTORY.err``
    beside it: a pipe nobody reads fills with a line per game (about 850 house games) and then stops the ladder,
    which made tests waiting for a bot's games time out on a loaded machine. At :data:`STEADY_TC`: the ladders of the
    tests play engines that answer at once, and a game lost on time is a counted game that tests do not expect (at
    its first turn, one without turns)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    with ladder_log(directory).open("a") as err:
        return subprocess.Popen(
            [*CLI, "ladder", "run", str(directory), "--tc", tc, *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            start_new_session=True,
        )


def ladder_log(directory: Path) -> Path:
    """Where :func:`ladder_process` writes the ladder's stderr."""
    return directory.parent / f"{directory.name}.err"


def stop_ladder(proc: subprocess.Popen[str], signum: int = signal.SIGTERM) -> tuple[int, str]:
    """Sends ``signum`` to a ladder of :func:`ladder_process` and waits for it: its status, and what it wrote on
    stderr in this run (the file is emptied, so that a ladder started again on the directory writes afresh)."""
    proc.send_signal(signum)
    proc.wait(timeout=60)
    log = ladder_log(Path(str(proc.args[len(CLI) + 2])))  # type: ignore[index]
    err = log.read_text()
    log.unlink()
    return proc.returncode, err
