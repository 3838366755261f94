"""Hostile bot: slow to start and slow on its first search, like a JVM or a bot that loads a network.

    python -m quarto_arena.engines.testing.slow_start PIDFILE [START_S [FIRST_EXTRA_MS]]

It appends its pid to ``PIDFILE`` (one line per process started), sleeps ``START_S`` seconds (default 1.5) before it
reads anything, and takes ``FIRST_EXTRA_MS`` milliseconds (default 80) longer over the first search of the process
than over the others, which it answers at once. It declares one option, ``Style`` (combo ``calm``/``wild``, default
``calm``), and reports its value before every turn (``info string style VALUE``), so that a test can see what a warm
process was left with. Started once per slot and kept warm, it never loses on time at ``st=0.1``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from quarto_arena.protocol.uqi import Go, SetOption, UqiError, parse_command

from ._base import MinimalBot


class SlowStart(MinimalBot):
    """Slow to start, slower on its first search."""

    name = "SlowStart"

    def __init__(self, pidfile: Path, start: float, first_extra: float) -> None:
        super().__init__()
        self.pidfile = pidfile
        self.start = start
        self.first_extra = first_extra
        self.style = "calm"

    def on_start(self) -> None:
        """Notes the process, then takes its time to start."""
        with self.pidfile.open("a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(self.start)

    def on_uqi(self) -> None:
        """Declares ``Style`` too."""
        self.send(f"id name {self.name}")
        self.send("option name Style type combo var calm var wild default calm")
        self.send("uqiok 1")

    def handle(self, line: str) -> None:
        """``setoption name Style`` is taken; everything else as the minimal bot does."""
        try:
            cmd = parse_command(line)
        except UqiError:
            cmd = None
        if isinstance(cmd, SetOption) and cmd.name.lower() == "style" and self.held is None:
            if cmd.value is None or cmd.value.lower() not in ("calm", "wild"):
                self.send(f"error setoption Style cannot be {cmd.value!r}")
            else:
                self.style = cmd.value.lower()
            return
        super().handle(line)

    def on_go(self, go: Go) -> None:
        """The first search of the process is slower."""
        if self.gos == 1:
            time.sleep(self.first_extra / 1000)
        self.send(f"info string style {self.style}")
        super().on_go(go)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    args = sys.argv[1:]
    if not 1 <= len(args) <= 3:
        raise SystemExit("usage: slow_start PIDFILE [START_S [FIRST_EXTRA_MS]]")
    start = float(args[1]) if len(args) > 1 else 1.5
    extra = float(args[2]) if len(args) > 2 else 80.0
    SlowStart(Path(args[0]), start, extra).run()


if __name__ == "__main__":
    main()
