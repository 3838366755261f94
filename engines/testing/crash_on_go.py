"""Broken bot: exits with status 3 on the first ``go``, without answering.

The arena must see the engine exit during a search, record ``disconnect`` with the exit code 3, and reap the
process (no zombie).
"""

from __future__ import annotations

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class CrashOnGo(MinimalBot):
    """Crashes (exit status 3) when asked to search."""

    name = "CrashOnGo"

    def on_go(self, go: Go) -> None:
        """Exits with status 3 instead of answering."""
        self.exit(3)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    CrashOnGo().run()


if __name__ == "__main__":
    main()
