"""A bot whose strength is a known function of its options: what ``quarto-arena tune`` is measured against.

    python -m quarto_arena.engines.testing.tunable

It declares six ``spin`` options ``P1`` to ``P6`` (0 to 1000), ``Seed``, and ``Think``: the milliseconds it
takes over each turn, sleeping (an engine that searches, without the CPU; default 0). Each turn it plays a uniformly
random legal turn with probability :func:`random_turn_probability` of its options, and the greedy engine's turn
otherwise (a win when there is one, else a turn that hands over no win). That probability is the Euclidean distance
of the options from :data:`OPTIMUM`, divided by :data:`WIDTH` (at most 1): the bot is strongest at the optimum, an
interior point of the ranges, and weaker the further its options are from it, in every direction alike. The defaults
are the optimum, so options a tune leaves alone add nothing to the distance. Its first line on standard error is
``tunable: pid N``.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping

from quarto_arena.protocol.bot import SearchContext, run
from quarto_arena.protocol.rules import Position, Turn
from quarto_arena.protocol.uqi import OptionSpec, OptionType

from ..greedy import greedy_turn
from ..random import SEED, SeededBot

__all__ = ["OPTIMUM", "WIDTH", "TunableBot", "random_turn_probability"]

OPTIMUM: dict[str, int] = {"P1": 620, "P2": 380, "P3": 710, "P4": 290, "P5": 540, "P6": 450}
"""The options of the strongest bot: no random turn at all."""
WIDTH = 400.0
"""The distance from :data:`OPTIMUM` at which every turn is random."""


def random_turn_probability(values: Mapping[str, float]) -> float:
    """The share of random turns of the bot with these options (the others at the optimum)."""
    distance = math.sqrt(sum((float(values.get(k, o)) - o) ** 2 for k, o in OPTIMUM.items()))
    return min(1.0, distance / WIDTH)


class TunableBot(SeededBot):
    """Greedy, but for a share of random turns that grows with its options' distance from :data:`OPTIMUM`."""

    name = "Tunable 1.0"
    author = "quarto-arena"
    options = (
        SEED,
        *(OptionSpec(k, OptionType.SPIN, str(v), 0, 1000) for k, v in OPTIMUM.items()),
        OptionSpec("Think", OptionType.SPIN, "0", 0, 10_000),
    )

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """A random turn with :func:`random_turn_probability` of the options, else the greedy turn; after ``Think``
        milliseconds."""
        think = self.option("Think")
        if isinstance(think, int) and think:
            time.sleep(think / 1000)
        values = {k: float(v) for k in OPTIMUM if isinstance(v := self.option(k), int)}
        if self.rng.random() < random_turn_probability(values):
            return self.rng.choice(position.legal_turns())
        return greedy_turn(position, self.rng)


if __name__ == "__main__":
    # Its first line on standard error names the process: tests count the processes a tune started.
    print(f"tunable: pid {os.getpid()}", file=sys.stderr, flush=True)
    run(TunableBot())
