"""The ``Level`` ladder of the perfect engine: levels 2-9, each a search capped in nodes plus a rate of plain turns.

A level's strength must not depend on the clock or on the machine's load, so each level's work per turn is
counted in solver nodes, not in seconds: :attr:`Rung.nodes` caps every turn (the core checks the cap at each node,
so a turn stops at exactly the same place on any machine), and the deepening keeps the turn of the last depth it
completed within the cap. The cap moves the horizon smoothly: early in a game it allows a few turns of look-ahead,
later the exact solve fits in it, so a larger cap plays perfectly from more empty squares on. That replaces the
old "search N turns deep" levels, whose strength went up in pairs (3 = 4, 5 = 6, 7 = 8: a horizon effect of odd
and even depths).

The caps alone span too little: in a pilot round-robin (20 games a pair) 300 nodes a turn was about 110 Elo below
perfect play, 3,000 nodes about 50 and 10,000 about 25 (nodes of the solver of that time), while greedy (level 1)
was about 270 Elo below 300 nodes. So levels 2-9 all search :data:`RUNGS`' 900 nodes (as far as 3,000 nodes reached
before the solver scored nodes of four to six empty squares as leaves: on 240 positions at 6-15 empties the same
depth on average, the same turn in 236-238; 1,500 did so while the leaves began at five), and below 9 a level plays,
with probability :attr:`Rung.plain`, a plain turn instead of the search's: greedy's (a win when there is one, else a
random turn that does not hand one over), drawn from the engine's seeded generator, as Stockfish's Skill Level
weakens its play by chance. Head to head, strength falls smoothly with that rate, faster near 0 and 1 than in the
middle: a least-squares fit of a cubic S(p) to 34 measured steps (48,000 games, rates from 0 to 1) puts the slope at
about 370 Elo per unit of rate at 0, 270 at 0.5 and 310 at 1, and greedy about 290 Elo below level 9 (chi2 29.4 on
31 degrees of freedom; a straight line, 40.7 on 33, fits worse). The rates are even steps on that curve, the lower
ones a little wider (their games draw less, so their margins are wider for the same games).
With ``Seed`` set a level's choices repeat exactly.

Calibrated by ``benchmarks/levels.py``: each level against the one above it, colour-swapped pairs from random
three-turn openings, levels 0-9 at ``st=10`` (the cap, not the clock, ends every turn) and level 10 at ``st=0.1``
(figures in the README).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from quarto_arena.protocol.uqi import Go

__all__ = ["RUNGS", "Rung"]


@dataclass(frozen=True, slots=True)
class Rung:
    """What one level may do on a turn."""

    nodes: int
    """Solver nodes per turn, at most (with ``go nodes`` too, the smaller)."""
    plain: float = 0.0
    """Probability of playing greedy's turn instead of searching."""

    def plays_plain(self, rng: random.Random) -> bool:
        """Whether this turn is a plain one (drawn from ``rng``; never drawn at a rate of 0)."""
        return self.plain > 0.0 and rng.random() < self.plain

    def limits(self, go: Go) -> Go:
        """``go`` with the rung's node cap joined to its own (the smaller wins), so the deepening search counts
        against the cap exactly as against ``go nodes``."""
        return dataclasses.replace(go, nodes=self.nodes if go.nodes is None else min(self.nodes, go.nodes))


RUNGS: Final[Mapping[int, Rung]] = {
    2: Rung(900, plain=0.875),
    3: Rung(900, plain=0.741),
    4: Rung(900, plain=0.602),
    5: Rung(900, plain=0.462),
    6: Rung(900, plain=0.33),
    7: Rung(900, plain=0.209),
    8: Rung(900, plain=0.098),
    9: Rung(900),
}
"""Levels 2-9 (0 is random, 1 greedy, 10 the full engine)."""
