"""Broken bot: it keeps its position from one game to the next.

To save work it remembers the last ``position`` line and the position it built; a line that repeats or extends it
gets only the new turns applied. That is right within a game, but ``newgame`` should forget it, and this bot never
does: the same position string in the next game, under other rules, is played with the last game's (a strict game
gets the bare winning placement of an automatic one: an illegal turn), SPEC §4.3 and §4.4.
"""

from __future__ import annotations

from quarto_arena.protocol.notation import parse_turn
from quarto_arena.protocol.rules import Position

from ._base import MinimalBot


class NeverResets(MinimalBot):
    """Reuses the last position whenever the new ``position`` line starts with the last one."""

    name = "NeverResets"

    def __init__(self) -> None:
        super().__init__()
        self.last: tuple[list[str], Position] | None = None

    def handle(self, line: str) -> None:
        """``position``: the turns after the last line's applied to the last position; anything else as usual."""
        words = line.split()
        if words[0] != "position" or self.held is not None:
            super().handle(line)
            return
        if self.last is not None:
            last_words, last_position = self.last
            tail = words[len(last_words) :]
            extra: list[str] | None = tail
            if words[: len(last_words)] == last_words and "turns" not in last_words and tail[:1] == ["turns"]:
                extra = tail[1:]
            elif words[: len(last_words)] != last_words or (tail and "turns" not in last_words):
                extra = None
            if extra is not None:
                try:
                    self.position = last_position.play(parse_turn(t) for t in extra)
                except ValueError as e:  # NotationError and IllegalTurn
                    self.position = None
                    self.send(f"error position {e}")
                self.last = None if self.position is None else (words, self.position)
                return
        super().handle(line)
        self.last = None if self.position is None else (words, self.position)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    NeverResets().run()


if __name__ == "__main__":
    main()
