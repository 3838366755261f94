"""The common engine turn in one compiled callback, where the optional C module ``_turns`` is built.

A game between two engine processes spends most of the arena's CPU in about a hundred and twenty small Python calls
per turn: the reader, the line split and decode, the session, the search's parse, the clock, the referee's check and
record, the next ``position``/``go`` and its write. ``_turns.Reader`` is each engine process's reader callback; for a
game :func:`fast_path` arms, it takes the usual answer (a chunk holding exactly one ``turn TOKEN`` line with a
canonical token, legal, no adjudication due; a win or the last placement under automatic claims too, which end the
game) and does all of that in one call, on the same Python state the Python path keeps. Any other chunk (info and
error lines, a partial or several lines, an illegal turn, calls and claims, a strict game's uncalled alignment, a
disconnect), any other transport, a transcript or debug log, or a live view of the game (``on_turn``) goes the
Python path, which stays the one reference for the rules and the records: the compiled path hands a chunk over,
still unread by anyone, before it changes anything.

``QUARTO_ARENA_TURNS=python`` (read when an engine is started) makes every turn take the Python path, as does a
build without a C compiler, and any system but Linux (below).
"""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING, Any, Final

from quarto_arena.arena.records import TurnRecord
from quarto_arena.arena.timecontrol import SearchClock
from quarto_arena.protocol.rules import TURNS, Outcome, Position, Variant

if TYPE_CHECKING:
    from quarto_arena.arena.transport.process import ProcessTransport

try:
    from quarto_arena.arena import _turns
except ImportError:  # no compiler where it was installed: the Python path plays every turn
    _turns = None  # type: ignore[assignment]
if sys.platform != "linux":
    # The compiled path times answers with clock_gettime(CLOCK_MONOTONIC), which is time.monotonic() on Linux; on
    # other systems Python's clock may be another one (macOS: mach_absolute_time), and the search's time is taken
    # from the moment Python's clock gave at its write: there, the Python path plays every turn.
    _turns = None  # type: ignore[assignment]
if _turns is not None:
    slots = tuple(vars(TurnRecord)[n] for n in ("token", "ms", "score"))
    _turns.setup(Position, TURNS, Outcome, TurnRecord, slots, SearchClock)

__all__ = ["ENV", "compiled", "path", "reader", "rules"]

ENV: Final = "QUARTO_ARENA_TURNS"
"""``python``: every turn takes the Python path (also where the C module could not be built)."""


def compiled() -> bool:
    """True when turns may take the compiled path: the module is built and :data:`ENV` does not say ``python``."""
    return _turns is not None and os.environ.get(ENV, "") != "python"


def reader(transport: ProcessTransport, fd: int) -> _turns.Reader | None:
    """The compiled reader callback of an engine process's output, or None where turns take the Python path."""
    return _turns.Reader(transport, fd) if compiled() else None


def path(*args: Any) -> _turns.Path:
    """``_turns.Path(...)``: a game's compiled path (only asked for where :func:`reader` gave readers)."""
    assert _turns is not None
    return _turns.Path(*args)


@functools.lru_cache(maxsize=64)
def rules(variant: Variant) -> _turns.Rules:
    """The variant's winning groups through each square, for the compiled win test (made once per variant)."""
    return _turns.Rules(variant, variant.through)
