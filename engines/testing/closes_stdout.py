"""Hostile bot: on the first ``go`` it closes its standard output but stays alive (ignoring quit and end of input).

The arena must record a ``disconnect`` at once (not wait for the time control to run out), then kill it.
"""

from __future__ import annotations

import os
import sys
import time

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class ClosesStdout(MinimalBot):
    """Closes its output when asked to search."""

    name = "ClosesStdout"

    def on_go(self, go: Go) -> None:
        """Closes standard output and sleeps."""
        sys.stdout.flush()
        os.close(1)
        while True:
            time.sleep(3600)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    ClosesStdout().run()


if __name__ == "__main__":
    main()
