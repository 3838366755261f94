"""Hostile bot: hangs on its first ``go`` once (marked by a file), and plays correctly in every later process.

    python -m quarto_arena.engines.testing.hang_once MARKER

When ``MARKER`` does not exist, the first ``go`` creates it and hangs for good (no turn, ignores ``stop``,
``quit`` and end of input). Served by the bridge, the arena must end that session (a time forfeit), and the
bridge must start a clean engine for the next one, which then plays normally.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class HangOnce(MinimalBot):
    """Hangs once."""

    name = "HangOnce"

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = marker

    def on_go(self, go: Go) -> None:
        """Hangs when the marker is not there yet."""
        if not self.marker.exists():
            self.marker.touch()
            while True:
                time.sleep(3600)
        super().on_go(go)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    if len(sys.argv) != 2:
        raise SystemExit("usage: hang_once MARKER")
    HangOnce(Path(sys.argv[1])).run()


if __name__ == "__main__":
    main()
