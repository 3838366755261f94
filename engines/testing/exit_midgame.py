"""Broken bot: answers two searches, then exits cleanly (status 0) on the third ``go`` without a turn.

The arena must see the engine gone during a search, record ``disconnect`` (exit status 0), and reap it.
"""

from __future__ import annotations

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot

ANSWERED = 2
"""Searches answered before the bot leaves."""


class ExitMidgame(MinimalBot):
    """Leaves in the middle of a game."""

    name = "ExitMidgame"

    def on_go(self, go: Go) -> None:
        """Plays the first two turns, then exits with status 0."""
        if self.gos > ANSWERED:
            self.exit(0)
        super().on_go(go)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    ExitMidgame().run()


if __name__ == "__main__":
    main()
