"""The built-in engines the arena can start by name, and the command line that starts each one."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Final

from quarto_arena.protocol.errors import ExitStatus, QuartoError

__all__ = ["BUILTIN", "BuiltinEngine", "UnknownEngine", "command"]


@dataclass(frozen=True, slots=True)
class BuiltinEngine:
    """One engine shipped with quarto-arena."""

    name: str
    """Short name, as given on the command line (``greedy``)."""
    description: str
    """One line for listings."""
    module: str
    """The module run with ``python -m``."""


class UnknownEngine(QuartoError, KeyError):
    """A name that is not a built-in engine. The message lists the known names."""

    status = ExitStatus.USAGE
    reason = "unknown_engine"

    def __str__(self) -> str:
        return str(self.args[0])


BUILTIN: Final[dict[str, BuiltinEngine]] = {
    e.name: e
    for e in (
        BuiltinEngine("random", "a uniformly random legal turn (option Seed)", "quarto_arena.engines.random"),
        BuiltinEngine(
            "greedy",
            "wins when it can, never gives an immediately winning piece when it can avoid it (option Seed)",
            "quarto_arena.engines.greedy",
        ),
        BuiltinEngine(
            "perfect",
            "exact play once the solver proves the position in time, a deepening search before "
            "(options Level 0-10, Hash, Seed, Search)",
            "quarto_arena.engines.perfect",
        ),
        BuiltinEngine(
            "minimax",
            "alpha-beta over safe turns to a fixed depth, with info lines (options Depth, Seed)",
            "quarto_arena.engines.minimax",
        ),
    )
}
"""Built-in engines by name."""


def command(name: str) -> list[str]:
    """The argv that starts built-in engine ``name`` over stdio with this Python; raises :class:`UnknownEngine`."""
    engine = BUILTIN.get(name)
    if engine is None:
        raise UnknownEngine(f"unknown built-in engine {name!r}; choose from {', '.join(BUILTIN)}")
    return [sys.executable, "-m", engine.module]
