"""Broken bot: it plays every game as if all four attributes counted, whatever ``newgame`` said.

It accepts ``newgame ... attributes color,fill`` without complaint (the shapes and the claim rule it keeps), then
sees wins that are not there: a bare winning placement where none wins is an ``illegal turn`` (a piece must be
given), SPEC §1.1.
"""

from __future__ import annotations

from quarto_arena.protocol.rules import ALL_ATTRIBUTES, Variant

from ._base import MinimalBot


class IgnoresAttributes(MinimalBot):
    """Counts every attribute in every variant."""

    name = "IgnoresAttributes"

    def handle(self, line: str) -> None:
        """A ``newgame`` keeps its shapes and claims, with every attribute counted; anything else as usual."""
        super().handle(line)
        if line.split()[0] == "newgame" and self.held is None:
            self.variant = Variant(self.variant.shapes, ALL_ATTRIBUTES, self.variant.claims)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    IgnoresAttributes().run()


if __name__ == "__main__":
    main()
