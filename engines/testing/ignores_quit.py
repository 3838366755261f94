"""Broken bot: plays correctly but ignores ``quit``, end of input and SIGTERM; it only dies when killed.

The games it plays end normally (``normal``). The fault shows when the arena stops it: the bot is still running
a second after ``quit`` and after its input is closed, so the arena must kill its process group (SIGKILL,
since SIGTERM is ignored too) and reap it, leaving no zombie or orphan.
"""

from __future__ import annotations

import signal
import time

from ._base import MinimalBot


class IgnoresQuit(MinimalBot):
    """Will not leave on its own."""

    name = "IgnoresQuit"

    def on_start(self) -> None:
        """Ignores SIGTERM, so only SIGKILL ends it."""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def on_quit(self) -> None:
        """Ignores ``quit``."""

    def on_eof(self) -> None:
        """Keeps running after its input is closed."""
        while True:
            time.sleep(3600)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    IgnoresQuit().run()


if __name__ == "__main__":
    main()
