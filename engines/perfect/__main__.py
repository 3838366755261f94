"""``python -m quarto_arena.engines.perfect``: the perfect engine over stdio, or ``--listen ENDPOINT``."""

from __future__ import annotations

from quarto_arena.protocol.bot import run

from . import PerfectBot

if __name__ == "__main__":
    run(PerfectBot())
