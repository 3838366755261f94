"""``python -m quarto_arena.engines.greedy``: the greedy engine over stdio, or ``--listen ENDPOINT``."""

from __future__ import annotations

from quarto_arena.protocol.bot import run

from . import GreedyBot

if __name__ == "__main__":
    run(GreedyBot())
