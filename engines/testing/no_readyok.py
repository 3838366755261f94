"""Broken bot: completes the handshake but never answers ``isready``.

The arena sends ``isready`` after ``setoption`` and ``newgame``. The arena must give up at the ready (or
new-game) deadline, record ``stall``, and kill the process group.
"""

from __future__ import annotations

from ._base import MinimalBot


class NoReadyOk(MinimalBot):
    """Stays silent on ``isready``."""

    name = "NoReadyOk"

    def on_isready(self) -> None:
        """Says nothing."""


def main() -> None:
    """Runs the bot on stdin/stdout."""
    NoReadyOk().run()


if __name__ == "__main__":
    main()
