"""Broken bot: on the first ``go`` it writes an endless line (no newline ever) to standard output.

The line passes the 4096-byte limit at once and never ends. The arena must stop buffering at the limit (not
run out of memory waiting for a newline), record ``malformed reply``, and kill the process group: the bot only
stops writing when it is killed or its output is closed.
"""

from __future__ import annotations

import sys

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class Flood(MinimalBot):
    """Floods standard output when asked to search."""

    name = "Flood"

    def on_go(self, go: Go) -> None:
        """Writes ``turn aaaa...`` forever; exits quietly once the reader is gone."""
        chunk = b"a" * 65536
        out = sys.stdout.buffer
        try:
            out.write(b"turn ")
            while True:
                out.write(chunk)
                out.flush()
        except (BrokenPipeError, OSError):
            self.exit(1)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    Flood().run()


if __name__ == "__main__":
    main()
