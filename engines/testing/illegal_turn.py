"""Broken bot: once a piece is on the board, it places its piece on an occupied square.

The turn is well formed (``b3e`` style, giving a piece that is still available), so only the rules reject it.
The arena must record ``illegal turn`` (naming the occupied square) and the bot loses.
"""

from __future__ import annotations

from quarto_arena.protocol.rules import square_name
from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class IllegalTurn(MinimalBot):
    """Plays legally until it can place a piece on an occupied square."""

    name = "IllegalTurn"

    def on_go(self, go: Go) -> None:
        """Places on the first occupied square when there is one and a piece is in hand."""
        pos = self.position
        if pos is None or pos.hand is None or pos.occupied == 0 or not pos.pieces_available():
            super().on_go(go)
            return
        occupied = next(s for s in range(16) if pos.occupied >> s & 1)
        self.send(f"turn {square_name(occupied)}{pos.pieces_available()[0]:x}")


def main() -> None:
    """Runs the bot on stdin/stdout."""
    IllegalTurn().run()


if __name__ == "__main__":
    main()
