"""Broken bot: in a strict game it writes a winning placement bare (``d1``) instead of calling it (``d1!``).

The bug a bot author makes who wrote the bot for automatic claims first: the arena records ``illegal turn`` (SPEC
§1.1: a placement that completes a group is called, or played with a give). It never claims a missed alignment
either. In games with automatic claims it plays correctly.
"""

from __future__ import annotations

from quarto_arena.protocol.rules import Position, Turn, turn_of

from ._base import MinimalBot


class OmitsCall(MinimalBot):
    """Plays strict wins as bare placements."""

    name = "OmitsCall"

    def choose(self, position: Position) -> Turn:
        """A winning square played without the call; otherwise the usual choice, a claim excepted."""
        if position.variant.strict and position.hand is not None:
            wins = position.winning_squares()
            if wins:
                return turn_of(place=wins[0])
        turn = super().choose(position)
        if turn.claim:
            return next(t for t in position.legal_turns() if not t.claim)
        return turn


def main() -> None:
    """Runs the bot on stdin/stdout."""
    OmitsCall().run()


if __name__ == "__main__":
    main()
