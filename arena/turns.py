"""The common engine turn in one compiled callback, where the optional C module ``_turns`` is built; and the contract
between that module and the Python objects it reads and writes, declared here once.

A game between two engine processes spends most of the arena's CPU in about a hundred and twenty small Python calls
per turn: the reader, the line split and decode, the session, the search's parse, the clock, the referee's check and
record, the next ``position``/``go`` and its write. ``_turns.Reader`` is each engine process's reader callback; for a
game :func:`path` arms, it takes the usual answer (a chunk holding exactly one ``turn TOKEN`` line with a
canonical token, legal, no adjudication due; a win or the last placement under automatic claims too, which end the
game) and does all of that in one call, on the same Python state the Python path keeps. Any other chunk (info and
error lines, a partial or several lines, an illegal turn, calls and claims, a strict game's uncalled alignment, a
disconnect), any other transport, a transcript or debug log, or a live view of the game (``on_turn``) goes the
Python path, which stays the one reference for the rules and the records: the compiled path hands a chunk over,
still unread by anyone, before it changes anything.

``QUARTO_ARENA_TURNS=python`` (read when an engine is started) makes every turn take the Python path, as does a
build without a C compiler, and any system but Linux (below).

The contract
------------
Everything the C module reads and writes of the Python path's state is a slot of one of the slotted classes below,
each owner's state that both paths share: :class:`GameSlots` (the referee's game), :class:`SessionSlots` (an engine
session), :class:`SearchSlots` (its search exchange), :class:`PipeSlots` (an engine process's transport) and
:class:`ClockSlots` (a request's clock). The classes that own that state inherit them (``_Game``, ``EngineSession``,
``Search``, ``ProcessTransport``, ``SearchClock``), so a name the C module relies on is written once, here. Each
class's ``CALLS`` names the methods C calls on such an object; :data:`CALLS` those of the other objects it is given
(the game's clocks, the event loop, a future, a timer), and :data:`VALUES` the layouts of the values it reads and
builds (``Position``'s fields, ``TurnRecord``'s and ``Turn``'s slots). ``_turns.setup`` (run at import, below) holds
the C module's own list of names to this declaration and refuses to load when they differ; it reads and writes a
slot at its offset, found there, never by name. tests/test_turns.py fails when a class stops inheriting its slots,
leaves one unset, loses a method C calls, or when a Python method the C module mirrors (``search_soon``,
``SearchClock.start``, ``_Game.record``...) writes state that is not a declared slot, which the C copy would not
write.

Why slots and not values: the other way offered (a pure C function, values in and values out, every state write
left to Python) was measured: the Python path with the read and the parse of the usual answer taken out of it (the
part a pure function would do) costs 93.4k instructions a turn, against 98.9k for the whole Python path and 58.0k
with this module (``benchmarks/tournament.py --instructions --setup "memory, j=1"``). What the compiled path saves is
the state writes themselves (the session's end of a search, the clock, the record, the next search and its write):
left to Python, they would cost the saving back. So C writes the state, and the state it writes is declared here.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final

from quarto_arena.arena.memo import by_identity
from quarto_arena.arena.records import TurnRecord
from quarto_arena.protocol.rules import TURNS, Outcome, Position, Turn, Variant

if TYPE_CHECKING:
    import asyncio

    from quarto_arena.arena.engine import Exchange, Search
    from quarto_arena.arena.records import TurnRecord as _Record
    from quarto_arena.arena.timecontrol import SearchClock
    from quarto_arena.arena.transport.base import Transport
    from quarto_arena.protocol.rules import Turn as _Turn

try:
    from quarto_arena.arena import _turns
except ImportError:  # no compiler where it was installed: the Python path plays every turn
    _turns = None  # type: ignore[assignment]
if sys.platform != "linux":
    # The compiled path times answers with clock_gettime(CLOCK_MONOTONIC), which is time.monotonic() on Linux; on
    # other systems Python's clock may be another one (macOS: mach_absolute_time), and the search's time is taken
    # from the moment Python's clock gave at its write: there, the Python path plays every turn.
    _turns = None  # type: ignore[assignment]

__all__ = [
    "CALLS",
    "ENV",
    "VALUES",
    "ClockSlots",
    "GameSlots",
    "PipeSlots",
    "SearchSlots",
    "SessionSlots",
    "compiled",
    "path",
    "reader",
    "rules",
    "use_clock",
]

ENV: Final = "QUARTO_ARENA_TURNS"
"""``python``: every turn takes the Python path (also where the C module could not be built)."""


class GameSlots:
    """A game's turns (``referee._Game``): the state the compiled path reads, records a turn in, and stops."""

    __slots__ = ("_side", "_stop", "position", "position_line", "records", "turns")
    CALLS: ClassVar[tuple[str, ...]] = ()
    position: Position
    """The position now."""
    position_line: str
    """The ``position`` line of the next search: the start and every turn so far."""
    turns: list[_Turn]
    """The turns played (canonical)."""
    records: list[_Record]
    """Their records."""
    _side: int
    """The player whose search runs."""
    _stop: asyncio.Future[Any]
    """What the game waits for while the turns are played: the compiled path sets it when a turn ends the game, or
    with the exception of the arena's own fault."""


class SessionSlots:
    """An engine session's running exchange (``engine.EngineSession``): whether a search runs as ``search_soon``
    left it, and who hears of its end."""

    __slots__ = ("_abandoned", "_clock", "_exchange", "_search", "_then", "_transport", "_waiter")
    CALLS: ClassVar[tuple[str, ...]] = ("search_soon", "_resend")
    _transport: Transport | None
    _exchange: Exchange[Any] | None
    _search: Search | None
    _clock: SearchClock | None
    _then: Callable[[Any], None] | None
    _waiter: asyncio.Future[Any] | None
    _abandoned: Exchange[Any] | None


class SearchSlots:
    """A session's search exchange (``engine.Search``): the lines it was sent, the last score and the turn."""

    __slots__ = ("go", "position", "score", "turn")
    CALLS: ClassVar[tuple[str, ...]] = ()
    position: Any
    go: Any
    score: str | None
    turn: _Turn | None


class PipeSlots:
    """An engine process's transport (``transport.process.ProcessTransport``): its line buffer, its input pipe, and
    whether it is gone."""

    __slots__ = (
        "_buf",
        "_closing",
        "_ended",
        "_in",
        "_pending",
        "_skip",
        "last_line",
        "received_at",
        "returncode",
    )
    CALLS: ClassVar[tuple[str, ...]] = ("_feed", "_at_eof", "_on_readable", "_flush")
    last_line: str | None
    received_at: float
    _ended: str | None
    returncode: int | None
    _closing: asyncio.Future[None] | None
    _in: int
    _buf: bytes
    _skip: bool
    _pending: bytes


class ClockSlots:
    """A request's clock (``timecontrol.SearchClock``): when it was sent and answered, its deadline and timer."""

    __slots__ = ("_handle", "_running", "_when", "answered_at", "at", "seconds", "sent_at")
    CALLS: ClassVar[tuple[str, ...]] = ("_fire",)
    sent_at: float
    seconds: float
    at: float
    answered_at: float | None
    _running: bool
    _handle: asyncio.TimerHandle | None
    _when: float


CALLS: Final = {
    "Clock": ("charge", "go_line", "deadline"),
    "loop": ("time", "call_at", "add_writer"),
    "future": ("done", "set_result", "set_exception"),
    "timer": ("cancel",),
}
"""The methods the compiled path calls on the other objects it is given: a game's two ``timecontrol.Clock``, the
event loop, the game's stop (an ``asyncio.Future``) and a clock's timer (an ``asyncio.TimerHandle``)."""

VALUES: Final = {
    "Position": ("variant", "occupied", "planes", "held", "available", "claimable", "outcome"),
    "TurnRecord": ("token", "ms", "score"),
    "Turn": ("token",),
}
"""The values the compiled path reads and makes: ``Position``'s fields in their order (it builds the next one as
the 7-tuple it is), and the slots of ``TurnRecord`` (made a turn) and ``Turn`` (its ``token`` read)."""

if _turns is not None:
    _turns.setup(
        (GameSlots, SessionSlots, SearchSlots, PipeSlots, ClockSlots),
        CALLS,
        VALUES,
        (Position, TurnRecord, Turn),
        TURNS,
        Outcome,
    )


def compiled() -> bool:
    """True when turns may take the compiled path: the module is built and :data:`ENV` does not say ``python``."""
    return _turns is not None and os.environ.get(ENV, "") != "python"


def reader(transport: PipeSlots, fd: int) -> _turns.Reader | None:
    """The compiled reader callback of an engine process's output, or None where turns take the Python path."""
    return _turns.Reader(transport, fd) if compiled() else None


def path(*args: Any) -> _turns.Path:
    """``_turns.Path(...)``: a game's compiled path (only asked for where :func:`reader` gave readers)."""
    assert _turns is not None
    return _turns.Path(*args)


@by_identity  # every game of a run asks, with the run's one variant object
def rules(variant: Variant) -> _turns.Rules:
    """The variant's winning groups through each square, for the compiled win test (made once per variant)."""
    return _turns.Rules(variant.through, variant.strict)


def use_clock(clock: Callable[[], float] | None) -> None:
    """Times the compiled path's answers with ``clock`` instead of ``CLOCK_MONOTONIC`` (None: that again), so that a
    test can put it and the Python path (``time.monotonic`` where they read it) on one controlled clock."""
    assert _turns is not None
    _turns.clock(None if clock is time.monotonic else clock)
