"""Broken bot: starts a child process (``sleep 1000``) in its own process group, then crashes on ``go``.

The child inherits the bot's standard output, so the pipe stays open after the bot exits: the arena must notice
the bot's own exit (not wait for end of file), record ``disconnect`` (exit status 3), kill the whole process
group so the child dies too, and reap everything (no orphan left behind).
"""

from __future__ import annotations

import subprocess
import sys

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class LeavesChild(MinimalBot):
    """Spawns a long-lived child at start-up and crashes when asked to search."""

    name = "LeavesChild"

    def on_start(self) -> None:
        """Starts the child in the bot's process group (the default for subprocess)."""
        child = subprocess.Popen(["sleep", "1000"])
        print(f"leaves_child: started child pid {child.pid}", file=sys.stderr, flush=True)

    def on_go(self, go: Go) -> None:
        """Exits with status 3, leaving the child running."""
        self.exit(3)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    LeavesChild().run()


if __name__ == "__main__":
    main()
