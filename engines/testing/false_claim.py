"""Broken bot: calls QUARTO! (``b3!``) with a placement that completes nothing.

On a give-only turn (no piece in hand) it gives a piece normally, so the fault shows on its first placement,
in any variant. The arena must record ``false claim`` and the bot loses.
"""

from __future__ import annotations

from quarto_arena.protocol.rules import square_name
from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class FalseClaim(MinimalBot):
    """Calls QUARTO! on a square that does not win."""

    name = "FalseClaim"

    def on_go(self, go: Go) -> None:
        """Calls on the first empty square where the piece in hand completes no group."""
        pos = self.position
        if pos is None or pos.hand is None:
            super().on_go(go)
            return
        losing = [s for s in pos.empty_squares() if not pos.wins_at(s)]
        if not losing:  # every empty square wins: nothing false to call, so play on
            super().on_go(go)
            return
        self.send(f"turn {square_name(losing[0])}!")


def main() -> None:
    """Runs the bot on stdin/stdout."""
    FalseClaim().run()


if __name__ == "__main__":
    main()
