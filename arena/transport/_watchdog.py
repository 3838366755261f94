"""The arena's engine watchdog: run as ``python -I -S _watchdog.py MARKER_VALUE`` with a pipe from the arena.

The arena writes ``+PID`` when it starts an engine and ``-PID`` once it has reaped it. When the pipe ends, the
arena has exited or died: the watchdog kills every listed engine's process group and session, and every process
whose environment carries the arena's marker (a descendant that left the engine's session), then exits.
Standard library only, so that it starts fast and imports nothing of the arena.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing itself costs this script's start-up a fifth; mypy knows the name
if TYPE_CHECKING:
    import signal
else:
    try:  # the C module behind signal: signal.py's enums of its constants are over a third of this script's start-up
        import _signal as signal
    except ImportError:
        import signal


def _procs() -> list[tuple[int, int, int]]:
    """(pid, process group, session) of every process."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/" + name + "/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            out.append((int(name), int(fields[2]), int(fields[3])))
    return out


def _marked(pid: int, marker: bytes) -> bool:
    try:
        with open("/proc/" + str(pid) + "/environ", "rb") as f:
            return marker in f.read()
    except OSError:
        return False


def _kill(pid: int, group: bool = False) -> None:
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def main() -> None:
    marker = ("QUARTO_ARENA_ENGINE=" + sys.argv[1]).encode()
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    engines: set[int] = set()
    for line in sys.stdin.buffer:
        word = line.strip()
        if word[:1] == b"+":
            engines.add(int(word[1:]))
        elif word[:1] == b"-":
            engines.discard(int(word[1:]))
    me = os.getpid()
    # A few passes: a process may fork while we look.
    for _ in range(5):
        for pid in engines:
            _kill(pid, group=True)
        if not os.path.isdir("/proc"):
            break
        found = False
        for pid, pgrp, sid in _procs():
            if pid != me and (pgrp in engines or sid in engines or _marked(pid, marker)):
                _kill(pid)
                found = True
        if not found:
            break
        time.sleep(0.01)


if __name__ == "__main__":
    main()
