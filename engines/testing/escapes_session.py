"""Hostile bot: leaves two processes behind that escape its process group and session, then plays correctly.

    python -m quarto_arena.engines.testing.escapes_session PIDFILE

At start-up it starts a child that calls ``setsid()`` (a new session and group) and a daemon by double fork (its
parent exits at once, so it is an orphan from the start), both sleeping for a long time, and writes their pids to
``PIDFILE``, one per line. Killing the engine's process group misses both: the arena must find them (as a child
subreaper it inherits the orphans) and kill and reap them when it ends the engine.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ._base import MinimalBot


def _sleeper(double_fork: bool) -> int:
    """Forks a process that leaves the session and sleeps; returns its pid."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setsid()
        if double_fork and os.fork() != 0:
            os._exit(0)  # the middle process: the grandchild is orphaned at once
        os.write(w, b"%d\n" % os.getpid())
        os.close(w)
        for fd in (0, 1, 2):
            os.close(fd)  # hold none of the engine's pipes: only the supervisor's bookkeeping can find it
        time.sleep(1000)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        child = int(f.readline())
    if double_fork:
        os.waitpid(pid, 0)
    return child


class EscapesSession(MinimalBot):
    """Plays correctly with two escaped processes behind it."""

    name = "EscapesSession"

    def __init__(self, pidfile: Path) -> None:
        super().__init__()
        self.pidfile = pidfile

    def on_start(self) -> None:
        """Leaves the two processes behind and says where they are."""
        pids = [_sleeper(double_fork=False), _sleeper(double_fork=True)]
        with self.pidfile.open("a") as f:
            f.write("".join(f"{p}\n" for p in pids))


def main() -> None:
    """Runs the bot on stdin/stdout."""
    if len(sys.argv) != 2:
        raise SystemExit("usage: escapes_session PIDFILE")
    EscapesSession(Path(sys.argv[1])).run()


if __name__ == "__main__":
    main()
