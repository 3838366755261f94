"""The random engine: plays a uniformly random legal turn. Option ``Seed`` (0: seeded from the OS).

Run it with ``python -m quarto_arena.engines.random [--listen ENDPOINT]``.
"""

from __future__ import annotations

import random

from quarto_arena.protocol.bot import Bot, OptionValue, SearchContext
from quarto_arena.protocol.rules import Position, Turn
from quarto_arena.protocol.uqi import OptionSpec, OptionType

__all__ = ["SEED", "RandomBot", "SeededBot"]

SEED = OptionSpec("Seed", OptionType.SPIN, "0", 0, 2**31 - 1)
"""The random seed option shared by the built-in engines: 0 draws a seed from the operating system."""


class SeededBot(Bot):
    """A bot with a ``Seed`` option and a random generator :attr:`rng` built from it.

    The generator is seeded when the option is set (at every handshake, then by ``setoption``), not at every game,
    so the games of one match differ from each other while the whole match replays from the same seed.
    """

    options: tuple[OptionSpec, ...] = (SEED,)

    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random()
        """The bot's random generator."""

    def set_option(self, name: str, value: OptionValue) -> None:
        """Reseeds :attr:`rng` when ``Seed`` changes."""
        super().set_option(name, value)
        if name == SEED.name:
            assert isinstance(value, int)
            self.rng = random.Random(value) if value else random.Random()


class RandomBot(SeededBot):
    """Plays a uniformly random legal turn."""

    name = "Random 1.0"
    author = "quarto-arena"

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """A uniformly random legal turn."""
        return self.rng.choice(position.legal_turns())
