"""Supervision of engine processes: nothing the arena starts outlives it, and nothing is left a zombie.

Four layers, from the kernel's guarantees to our own bookkeeping:

- **Process group and session.** Every engine leads a new session (hence a new process group); closing an engine
  kills its group and every process of its session.
- **Parent-death signal** (Linux). An engine is started through util-linux's ``setpriv --pdeathsig KILL``, which
  asks the kernel to SIGKILL it when the arena dies, even by SIGKILL, and then execs the engine. We chose this over
  ``preexec_fn`` (a ``prctl`` call between fork and exec), which can deadlock in a process that has other threads
  (ZeroMQ's I/O threads, asyncio's resolver), and over a Python exec shim, which costs tens of milliseconds per
  start. Where ``setpriv`` is missing the watchdog below still covers an arena's death.
- **Child subreaper** (Linux). The arena marks itself ``PR_SET_CHILD_SUBREAPER``, so a descendant that escaped the
  engine's group and session with ``setsid()`` is reparented to the arena, not to init, when its parent dies.
  Every engine carries :data:`MARKER` in its environment; at an engine's end the arena kills, besides its group
  and session, every descendant still linked by parentage and every child of its own that carries the marker, and
  reaps each one that became its child.
- **Watchdog.** A small process started with the first engine holds a pipe from the arena and the list of live
  engines; when the pipe ends (the arena died, however) it kills their groups and sessions and every process
  that carries this arena's marker.

:func:`kill_all` and :func:`shutdown` end every engine at once, for signal handlers and the end of a command.
The arena's own helper processes (a process pool's workers) are not engines: :func:`exit_with_parent` makes each
one end itself when the arena dies.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Final

from ...protocol.launch import launcher_prefix

__all__ = ["MARKER", "exit_with_parent", "kill_all", "launcher_prefix", "shutdown", "sweep"]

log = logging.getLogger("quarto_arena.arena.transport")

MARKER: Final = "QUARTO_ARENA_ENGINE"
"""Environment variable set in every engine: ``ARENA_PID.TOKEN``, unique to the arena process that started it."""

_PR_SET_CHILD_SUBREAPER: Final = 36
_HAS_PROC: Final = sys.platform.startswith("linux") and os.path.isdir("/proc")

# Live engines: pid -> its closer (kills the group at once). Filled and emptied by ProcessTransport.
_live: dict[int, Callable[[], None]] = {}
_async_closers: dict[int, Callable[[], Awaitable[None]]] = {}
_state: dict[str, object] = {}
# Engines may start in several threads at once, each in its own event loop (a Dask worker plays one game per
# thread): the marker and the watchdog must still be made once per process, or a second watchdog would replace the
# first, whose pipe then closes and takes the engines it was told about along.
_making = threading.RLock()


_PARENT_POLL: Final = 0.5
"""How often a helper process checks that the arena that started it is still its parent, s."""


def exit_with_parent(parent: int) -> None:
    """Ends this helper process (a process pool's worker, as ``initializer`` with ``(os.getpid(),)``) as soon as
    ``parent`` is no longer its parent: the arena died, even by SIGKILL, and the process was handed to init or a
    subreaper. A pool's worker would otherwise wait on its task queue for ever: it holds that queue's writing end
    itself, so it never sees the queue end. A daemon thread looks every :data:`_PARENT_POLL` seconds; a
    parent-death signal would be immediate, but the kernel sends it when the *thread* that started the worker ends,
    which need not be the arena's end."""
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def marker_value() -> str:
    """This arena's value of :data:`MARKER` (changes in a forked child, which is another arena)."""
    pid = os.getpid()
    with _making:
        if _state.get("marker_pid") != pid:
            _state["marker_pid"] = pid
            _state["marker"] = f"{pid}.{os.urandom(8).hex()}"  # secrets.token_hex(8) without its import
            _state.pop("watchdog", None)
            _state.pop("subreaper", None)
        return str(_state["marker"])


def _become_subreaper() -> None:
    if _state.get("subreaper") or not sys.platform.startswith("linux"):
        return
    _state["subreaper"] = True
    import ctypes

    try:
        # The process's own symbols, libc's among them: ctypes.util.find_library("c") runs ldconfig at each start.
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            log.debug("prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d", ctypes.get_errno())
    except OSError as e:
        log.debug("no prctl: %s", e)


class _Watchdog:
    """The watchdog process (arena/transport/_watchdog.py) and the pipe that tells it which engines live."""

    def __init__(self) -> None:
        script = Path(__file__).with_name("_watchdog.py")
        # -I -S: no site packages, no user paths; the watchdog needs only the standard library and starts fast.
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(script), marker_value()],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's Ctrl-C or a group kill of the arena must not take it along
            close_fds=True,
        )
        self.ok = True

    def tell(self, text: str) -> None:
        stdin = self.proc.stdin
        if not self.ok or stdin is None:
            return
        try:
            stdin.write(text.encode("ascii"))
            stdin.flush()
        except OSError:
            self.ok = False


def _watchdog() -> _Watchdog | None:
    with _making:
        marker_value()
        dog = _state.get("watchdog")
        if dog is None:
            try:
                dog = _Watchdog()
            except OSError as e:
                log.warning("cannot start the engine watchdog: %s", e)
                dog = False
            _state["watchdog"] = dog
    return dog if isinstance(dog, _Watchdog) else None


def started(pid: int, kill: Callable[[], None], close: Callable[[], Awaitable[None]]) -> None:
    """Registers a new engine (its pid is its group and session id) with the watchdog and :func:`kill_all`."""
    _become_subreaper()
    _live[pid] = kill
    _async_closers[pid] = close
    dog = _watchdog()
    if dog is not None:
        dog.tell(f"+{pid}\n")


def ended(pid: int) -> None:
    """The engine ``pid`` has been reaped and swept."""
    _live.pop(pid, None)
    _async_closers.pop(pid, None)
    dog = _state.get("watchdog")
    if isinstance(dog, _Watchdog):
        dog.tell(f"-{pid}\n")


def live_pids() -> list[int]:
    """The pids of the engines started and not yet reaped."""
    return list(_live)


def kill_all() -> int:
    """SIGKILLs every live engine's process group at once; returns how many. Safe in a signal handler.

    It only sends signals (no lock, no I/O, no await), so it may run at any point of the arena's code. The
    processes are reaped by their transports' exit watchers, or by :func:`shutdown`.
    """
    killers = list(_live.values())
    for kill in killers:
        kill()
    return len(killers)


async def shutdown() -> None:
    """Kills every live engine and waits until each one and everything it left behind is reaped, then the watchdog."""
    kill_all()
    closers = list(_async_closers.values())
    await asyncio.gather(*(c() for c in closers), return_exceptions=True)
    await asyncio.to_thread(_stop_watchdog)


@atexit.register
def _stop_watchdog() -> None:
    """Ends the watchdog and reaps it: left to exit after us, it would wait for init as a zombie."""
    dog = _state.get("watchdog")
    if not isinstance(dog, _Watchdog) or _state.get("marker_pid") != os.getpid():
        return
    del _state["watchdog"]
    with contextlib.suppress(OSError):
        if dog.proc.stdin is not None:
            dog.proc.stdin.close()  # the end of the pipe: it kills what is still listed, then exits
    try:
        dog.proc.wait(2.0)
    except subprocess.TimeoutExpired:
        dog.proc.kill()
        dog.proc.wait()


# --- finding what an engine left behind ------------------------------------------------------------------------


def _table() -> list[tuple[int, int, int, int]]:
    """(pid, ppid, process group, session) of every process, zombies included."""
    out: list[tuple[int, int, int, int]] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it ended while we looked
        fields = stat.rsplit(b")", 1)[1].split()
        out.append((int(name), int(fields[1]), int(fields[2]), int(fields[3])))
    return out


def _carries_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read()
    except OSError:
        return False


def _doomed(engine: int, known: set[int]) -> set[int]:
    """Every process to kill for engine ``engine``: its group and session, its descendants, our marked orphans."""
    me = os.getpid()
    marker = f"{MARKER}={marker_value()}".encode()
    table = _table()
    children: dict[int, list[int]] = {}
    out: set[int] = set()
    live = set(_live)
    for pid, ppid, pgrp, sid in table:
        children.setdefault(ppid, []).append(pid)
        ours = pgrp == engine or sid == engine or pid in known
        if ours or (ppid == me and pid not in live and _carries_marker(pid, marker)):
            out.add(pid)
    stack = [engine, *out]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out:
                out.add(child)
                stack.append(child)
    out.discard(me)
    return out


def _kill(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _reap(pids: Iterable[int], engine: int) -> None:
    """Reaps those of ``pids`` that are our children (reparented to us as the subreaper); never an engine's own pid."""
    live = set(_live)
    for pid in pids:
        if pid == engine or pid in live:
            continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


async def sweep(engine: int, *, known: Iterable[int] = (), timeout: float = 2.0) -> list[int]:
    """Kills everything engine ``engine`` left (its pid is its group and session id) and reaps what became ours.

    Call it with the engine itself already killed; ``known`` are pids found before (:func:`snapshot`). Returns the
    pids still there after ``timeout`` seconds (none, unless a process is stuck in the kernel). Without /proc only
    the process group can be found.
    """
    deadline = time.monotonic() + timeout
    if not _HAS_PROC:
        while time.monotonic() < deadline:
            try:
                os.killpg(engine, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                return []
            await asyncio.sleep(0.005)
        return [engine]
    seen = set(known)
    while True:
        doomed = _doomed(engine, seen) - {engine}
        if not doomed:
            return []
        seen |= doomed
        _kill(doomed)
        _reap(doomed, engine)
        if time.monotonic() > deadline:
            return sorted(doomed)
        await asyncio.sleep(0.002)


def snapshot(engine: int) -> set[int]:
    """The processes :func:`sweep` would kill for ``engine`` right now (taken before the engine itself is killed,
    while its descendants are still linked to it by parentage)."""
    return _doomed(engine, set()) - {engine} if _HAS_PROC else set()


def kill_now(pids: Iterable[int]) -> None:
    """SIGKILLs ``pids`` (from :func:`snapshot`)."""
    _kill(pids)
