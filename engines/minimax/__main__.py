"""``python -m quarto_arena.engines.minimax``: the minimax engine over stdio, or ``--listen ENDPOINT``."""

from __future__ import annotations

from quarto_arena.protocol.bot import run

from . import MinimaxBot

if __name__ == "__main__":
    run(MinimaxBot())
