"""``python -m quarto_arena.engines.random``: the random engine over stdio, or ``--listen ENDPOINT``."""

from __future__ import annotations

from quarto_arena.protocol.bot import run

from . import RandomBot

if __name__ == "__main__":
    run(RandomBot())
