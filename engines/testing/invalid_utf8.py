"""Broken bot: answers ``go`` with a ``turn`` line whose token is bytes that are not UTF-8.

The arena must not crash decoding it: it records ``malformed reply`` and the bot loses.
"""

from __future__ import annotations

import sys

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class InvalidUtf8(MinimalBot):
    """Replies to every search with invalid UTF-8."""

    name = "InvalidUtf8"

    def on_go(self, go: Go) -> None:
        """0xff and 0xfe never occur in UTF-8; 0xc3 starts a sequence that is cut short."""
        sys.stdout.buffer.write(b"turn \xff\xfe\xc3\n")
        sys.stdout.buffer.flush()


def main() -> None:
    """Runs the bot on stdin/stdout."""
    InvalidUtf8().run()


if __name__ == "__main__":
    main()
