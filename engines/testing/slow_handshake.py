"""Broken bot: sleeps before ``uqiok``, longer than any sane start-up deadline.

The delay in seconds is the first command-line argument, else the environment variable
``QUARTO_ARENA_HANDSHAKE_DELAY``, else 60. It sends ``id name`` at once, then sleeps without reading input, then
finishes the handshake and behaves correctly. The arena must give up at its start-up deadline (``stall``) and
kill the process group; with a deadline longer than the delay the bot plays normally.
"""

from __future__ import annotations

import os
import sys
import time

from ._base import MinimalBot

DEFAULT_DELAY = 60.0
"""Seconds slept before ``uqiok`` when neither the argument nor the environment variable is given."""


class SlowHandshake(MinimalBot):
    """Takes ``delay`` seconds to finish the handshake."""

    name = "SlowHandshake"

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def on_uqi(self) -> None:
        """Sends ``id name``, sleeps, then finishes the handshake."""
        self.send(f"id name {self.name}")
        time.sleep(self.delay)
        self.send("uqiok 1")


def delay_from(argv: list[str]) -> float:
    """The delay from the command line, the environment, or the default."""
    text = argv[0] if argv else os.environ.get("QUARTO_ARENA_HANDSHAKE_DELAY", "")
    return float(text) if text else DEFAULT_DELAY


def main() -> None:
    """Runs the bot on stdin/stdout."""
    SlowHandshake(delay_from(sys.argv[1:])).run()


if __name__ == "__main__":
    main()
