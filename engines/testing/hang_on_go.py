"""Broken bot: on the first ``go`` the whole process hangs (sleeps forever in its only thread).

It answers nothing after that: no ``turn``, no ``readyok``, and it ignores ``stop``, ``quit`` and end of input.
The arena must forfeit it on time (``time forfeit``) when the search deadline passes, then kill its process group.
"""

from __future__ import annotations

import time

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class HangOnGo(MinimalBot):
    """Hangs when asked to search."""

    name = "HangOnGo"

    def on_go(self, go: Go) -> None:
        """Never returns, so no further line is read or answered."""
        while True:
            time.sleep(3600)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    HangOnGo().run()


if __name__ == "__main__":
    main()
