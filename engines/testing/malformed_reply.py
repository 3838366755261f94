"""Broken bot: answers ``go`` with ``turn zz9``, a token that does not parse.

The arena must record ``malformed reply`` (quoting the line) and the bot loses.
"""

from __future__ import annotations

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class MalformedReply(MinimalBot):
    """Replies to every search with an unparsable turn token."""

    name = "MalformedReply"

    def on_go(self, go: Go) -> None:
        """``zz9`` is neither a piece nor a square followed by a piece."""
        self.send("turn zz9")


def main() -> None:
    """Runs the bot on stdin/stdout."""
    MalformedReply().run()


if __name__ == "__main__":
    main()
