"""Time controls and chess clocks: what ``--tc`` means, what each ``go`` says, and when a player flags.

A time control is written as one or more comma-separated parts:

=================  ===========================================================================================
``BASE+INC``       ``BASE`` seconds for the game, ``INC`` seconds added after each turn (``60+0.5``); ``10``
                   alone is ``10+0``
``MOVES/BASE+INC`` moves per period, as cutechess writes them: ``BASE`` seconds for each ``MOVES`` turns of the
                   player, credited again after each period (``40/60``, ``40/60+0.5``); ``go`` says
                   ``movestogo``
``st=SECONDS``     a fixed time per turn (``go movetime``); the official tournament rule is ``st=60``
``depth=N``        search ``N`` turns ahead (``go depth N``)
``nodes=N``        search at most ``N`` positions (``go nodes N``)
``inf``            no limit: ``go`` carries no time and the engine chooses its own pace
=================  ===========================================================================================

``depth=`` and ``nodes=`` combine with each other and with one clock part (``10+0.1,depth=4``, ``st=1,nodes=5000``).
``BASE+INC`` and ``st=`` exclude each other, and ``inf`` stands alone. Without a clock part the arena cannot flag
anyone, so a search is bounded only by the safety deadline of :class:`quarto_arena.arena.engine.Deadlines`.

Two kinds of clock: a player's :class:`Clock` (what a time control leaves for the coming turn, with the margin: the
search's deadline) and the :class:`SearchClock` of one request to an engine (when it was sent, when the answer
came, whether the deadline has passed, what the turn is charged). The engine session, the referee (through it) and
the compliance check all time their requests with a :class:`SearchClock`.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from quarto_arena.protocol.uqi import MAX_GO_VALUE, Go, format_command

from . import codec
from .memo import by_identities
from .options import DEFAULT_MARGIN_MS
from .turns import ClockSlots

if TYPE_CHECKING:
    import asyncio

__all__ = ["DEFAULT_MARGIN_MS", "Clock", "SearchClock", "TimeControl", "as_text"]

_SECONDS: Final = re.compile(r"\d+(\.\d+)?\Z|\.\d+\Z")
_HELP: Final = (
    "accepted: BASE+INC (60+0.5), MOVES/BASE[+INC] (40/60+0.5), st=SECONDS (st=1), depth=N, nodes=N, inf;"
    " parts joined by ',' (10+0.1,depth=4)"
)


_CHARGES: Final = 8
"""Turns a player's clock is charged before its last ``go`` of a game: a game has at most 17 turns (the first give
and 16 placements), 9 of them the first player's."""


def _bad(spec: str, why: str) -> ValueError:
    """Every ``--tc`` error: what is wrong, then the forms accepted."""
    return ValueError(f"time control {spec!r}: {why}; {_HELP}")


def _ms(text: str, what: str, spec: str) -> int:
    if not _SECONDS.match(text):
        raise _bad(spec, f"{what} {text!r} is not a number of seconds")
    return round(float(text) * 1000)


def _count(text: str, what: str, spec: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise _bad(spec, f"{what} {text!r} is not a positive integer")
    return int(text)


def _check_go_values(fields: Mapping[str, int], spec: str) -> None:
    """Refuses a time control that would put a value beyond UQI's largest (``MAX_GO_VALUE``, SPEC §4.5) into a
    ``go``: a limit itself, or a game clock grown by its increments and periods by the last turn of a game. An engine
    must refuse such a ``go``, and the arena would then score it a time forfeit for the arena's own bad limit."""
    names = {"movetime": "st", "depth": "depth", "nodes": "nodes", "moves": "moves per period"}
    names |= {"base": "base time", "inc": "increment"}
    for key, what in names.items():
        if fields.get(key, 0) > MAX_GO_VALUE:
            unit = " ms" if key in ("movetime", "base", "inc") else ""
            raise _bad(spec, f"{what} is more than 2^63 - 1{unit}, the largest value UQI sends (SPEC 4.5)")
    if "base" in fields:
        periods = 1 + _CHARGES // fields["moves"] if "moves" in fields else 1
        if fields["base"] * periods + _CHARGES * fields.get("inc", 0) > MAX_GO_VALUE:
            raise _bad(spec, "the clock would pass 2^63 - 1 ms, the largest value UQI sends (SPEC 4.5), within a game")


@dataclass(frozen=True, slots=True)
class TimeControl:
    """The limits of every search in a game, as parsed from a ``--tc`` string."""

    text: str = "inf"
    """The time control as written (recorded in the game record and the PGN)."""
    base_ms: int | None = None
    """Time for the whole game per player, ms; None without a game clock."""
    inc_ms: int = 0
    """Increment added after each turn, ms (only with ``base_ms``)."""
    movetime_ms: int | None = None
    """Fixed time per turn, ms (``st=``)."""
    depth: int | None = None
    """Depth limit in turns, sent as ``go depth``."""
    nodes: int | None = None
    """Node limit, sent as ``go nodes``."""
    moves: int | None = None
    """Turns per period of a moves-per-period control (``40/60``: 40): ``base_ms`` is credited again after each
    period; None: ``base_ms`` is for the whole game."""

    @classmethod
    def parse(cls, text: str) -> TimeControl:
        """Parses a ``--tc`` string; raises ValueError with a one-line message naming the bad part."""
        spec = text.strip().lower()
        if not spec:
            raise ValueError(f"empty time control; {_HELP}")
        if spec == "inf":
            return cls("inf")
        fields: dict[str, int] = {}
        for part in (p.strip() for p in spec.split(",")):
            key, eq, value = part.partition("=")
            if not part:
                raise _bad(text, "empty part")
            if part == "inf":
                raise _bad(text, "inf cannot be combined with other limits")
            if eq and key in ("st", "depth", "nodes"):
                name = {"st": "movetime"}.get(key, key)
                if name in fields:
                    raise _bad(text, f"{key}= is given twice")
                fields[name] = _ms(value, "st", text) if key == "st" else _count(value, key, text)
            elif not eq:
                if "base" in fields:
                    raise _bad(text, "two game clocks given")
                clock, plus, inc = part.partition("+")
                moves, slash, base = clock.rpartition("/")
                if slash:
                    fields["moves"] = _count(moves, "moves per period", text)
                fields["base"] = _ms(base, "base time", text)
                fields["inc"] = _ms(inc, "increment", text) if plus else 0
                if fields["base"] <= 0:
                    raise _bad(text, "the base time must be positive")
            else:
                raise _bad(text, f"unknown part {part!r}")
        if "base" in fields and "movetime" in fields:
            raise _bad(text, "BASE+INC and st= exclude each other")
        if fields.get("movetime") == 0:
            raise _bad(text, "st= must be positive")
        _check_go_values(fields, text)
        return cls(
            text.strip(),
            base_ms=fields.get("base"),
            inc_ms=fields.get("inc", 0),
            movetime_ms=fields.get("movetime"),
            depth=fields.get("depth"),
            nodes=fields.get("nodes"),
            moves=fields.get("moves"),
        )

    @property
    def timed(self) -> bool:
        """True when the arena can flag a player (a game clock or a fixed time per turn)."""
        return self.base_ms is not None or self.movetime_ms is not None

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class Clock:
    """One player's clock in one game. Mutable: the referee charges it after every turn."""

    control: TimeControl
    """The player's time control."""
    margin_ms: int = DEFAULT_MARGIN_MS
    """Overrun tolerated before the player loses on time, ms."""
    remaining_ms: int | None = None
    """Time left on a game clock, ms (None without one)."""
    turns: int = 0
    """Turns this player has played (charged) in the game: where a moves-per-period control stands."""
    _go_key: tuple[object, ...] = field(default=(), init=False, repr=False, compare=False)
    _go_line: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.remaining_ms is None:
            self.remaining_ms = self.control.base_ms

    def go(self, opponent: Clock) -> Go:
        """The ``go`` command for this player's search; the clocks in it are relative to this player."""
        c = self.control
        return Go(
            time=self.remaining_ms,
            inc=c.inc_ms if c.base_ms is not None else None,
            otime=opponent.remaining_ms,
            oinc=opponent.control.inc_ms if opponent.control.base_ms is not None else None,
            movestogo=None if c.moves is None or c.base_ms is None else c.moves - self.turns % c.moves,
            movetime=c.movetime_ms,
            depth=c.depth,
            nodes=c.nodes,
        )

    def go_line(self, opponent: Clock) -> str:
        """``format_command(self.go(opponent))``, formatted again only when one of the two clocks has moved.

        The line depends only on the two remaining times and the two controls; without a game clock they never
        change during a game, so the line of the last turn is reused (the controls compare by identity first).
        """
        key = (self.remaining_ms, opponent.remaining_ms, self.control, opponent.control, self.turns)
        if key != self._go_key:
            if self.remaining_ms is None and opponent.remaining_ms is None:  # no game clock: the controls alone
                self._go_line = _untimed_go_line(self.control, opponent.control)
            else:
                self._go_line = format_command(self.go(opponent))
            self._go_key = key
        return self._go_line

    def allowance_ms(self) -> int | None:
        """Longest the player may take for the coming turn before flagging, ms (None when untimed)."""
        # Called twice per turn (deadline and charge): plain branches rather than a list of the limits.
        remaining, movetime = self.remaining_ms, self.control.movetime_ms
        if remaining is None:
            return None if movetime is None else movetime + self.margin_ms
        return (remaining if movetime is None else min(remaining, movetime)) + self.margin_ms

    def deadline(self, safety_s: float) -> float:
        """Seconds the arena waits for the coming turn: the allowance, or ``safety_s`` when untimed."""
        allowance = self.allowance_ms()
        return safety_s if allowance is None else allowance / 1000

    def charge(self, elapsed_ms: int) -> None:
        """Charges a turn that took ``elapsed_ms`` (never more than :meth:`allowance_ms`: the search's deadline
        is the allowance, and a reply read after it is a time forfeit, or charged the deadline when the arena
        itself woke late; see :meth:`~quarto_arena.arena.engine.EngineSession.search`)."""
        if self.remaining_ms is not None:
            c = self.control
            self.remaining_ms = max(0, self.remaining_ms - elapsed_ms) + c.inc_ms
            self.turns += 1
            if c.moves is not None and c.base_ms is not None and self.turns % c.moves == 0:
                self.remaining_ms += c.base_ms  # a period ends: the next one's time, with what was left

    def describe(self) -> str:
        """Short text for messages, e.g. ``1234 ms left`` or ``st=1``."""
        if self.remaining_ms is not None:
            return f"{self.remaining_ms} ms left"
        if self.control.movetime_ms is not None:
            return f"{self.control.movetime_ms} ms per turn"
        return "untimed"


@by_identities  # looked up by identity: a run's games share its controls
@functools.lru_cache(maxsize=64)
def _untimed_go_line(mine: TimeControl, theirs: TimeControl) -> str:
    """The ``go`` line of two controls without a game clock (``st``, depth or node limits), which is the same in
    every game: formatted once per pair of controls, not per game and player."""
    return format_command(Clock(mine).go(Clock(theirs)))


class SearchClock(ClockSlots):
    """The clock of one request to an engine (a search above all), on the arena's monotonic clock
    (``time.monotonic``): when the request was sent, when its answer came, the deadline, and whether it has passed.

    :meth:`start` it just after the request is written (a delay of the arena's before the write is not the engine's);
    :meth:`answered` when the answer has been read, with the time the chunk holding it was read (the transport's
    ``received_at``). The deadline is what the caller allows: a search's :meth:`Clock.deadline` (the allowance with
    the margin, or the safety deadline when untimed), a phase's deadline of
    :class:`~quarto_arena.arena.engine.Deadlines`, or a compliance check's shorter one: the same mechanism with
    other values.

    Made with an event loop and ``on_expiry``, the clock also keeps one timer that calls ``on_expiry`` once a
    started deadline has passed without an answer. The timer is moved, not re-created: starting a later deadline
    keeps the pending timer, which re-arms itself when it fires early. In a game every search's deadline is later
    than the last one's, so a timer is made only about once per deadline's length, not once per turn.
    """

    __slots__ = ("_loop", "_on_expiry")  # and ClockSlots', which the compiled turn path reads and writes too

    def __init__(
        self, loop: asyncio.AbstractEventLoop | None = None, on_expiry: Callable[[], None] | None = None
    ) -> None:
        self.sent_at = 0.0
        """When the request was written (``time.monotonic``)."""
        self.seconds = 0.0
        """The deadline's length, as given to :meth:`start` (for messages)."""
        self.at = 0.0
        """The deadline (``time.monotonic``)."""
        self.answered_at: float | None = None
        """When the chunk holding the answer was read, None before the answer."""
        self._loop = loop
        self._on_expiry = on_expiry
        self._handle: asyncio.TimerHandle | None = None
        self._when = 0.0  # when the pending timer fires (loop time): compared each turn without a call
        self._running = False

    @classmethod
    def started(cls, seconds: float) -> SearchClock:
        """A clock without a timer, started now with a deadline ``seconds`` away."""
        clock = cls()
        clock.start(seconds)
        return clock

    def start(self, seconds: float) -> None:
        """A request has just been written: its deadline is ``seconds`` from now (and the timer, if any, runs)."""
        now = time.monotonic()
        self.sent_at = now
        self.seconds = seconds
        self.at = now + seconds
        self.answered_at = None
        loop = self._loop
        if loop is not None:
            self._running = True
            when = loop.time() + seconds
            h = self._handle
            if h is None or self._when > when:
                if h is not None:
                    h.cancel()
                self._handle = loop.call_at(when, self._fire)
                self._when = when

    def answered(self, at: float) -> None:
        """The answer was read at ``at`` (``time.monotonic``); the timer no longer calls ``on_expiry`` for it."""
        self.answered_at = at
        self._running = False

    def stop(self) -> None:
        """The request ended without an answer to time (failed, or given up); the timer stays for the next one."""
        self._running = False

    def close(self) -> None:
        """Drops the timer (the session ends)."""
        self._running = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def left(self) -> float:
        """Seconds until the deadline (negative once past)."""
        return self.at - time.monotonic()

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return time.monotonic() >= self.at

    def answer_ms(self) -> int:
        """Milliseconds from the request to its answer, as the turn is charged: never more than the deadline.

        An answer read after the deadline came in the same wake-up of the arena as its overdue deadline (an arena on
        time would have declared the forfeit at the deadline, with nothing there yet): the arena was late, and
        whether the answer was there before the deadline cannot be told. The doubt goes to the engine.
        """
        answered = self.at if self.answered_at is None else min(self.answered_at, self.at)
        ms = round((answered - self.sent_at) * 1000)
        return ms if ms > 0 else 0

    def elapsed_ms(self) -> int:
        """Milliseconds since the request was sent (for a request that failed or timed out)."""
        return round((time.monotonic() - self.sent_at) * 1000)

    def _fire(self) -> None:
        self._handle = None
        if not self._running:
            return
        loop = self._loop
        assert loop is not None and self._on_expiry is not None
        early = self.at - time.monotonic()
        if early > 0:  # moved to a later deadline since the timer was set
            self._when = loop.time() + early
            self._handle = loop.call_at(self._when, self._fire)
            return
        self._running = False
        self._on_expiry()


def as_text(key: str | None = None) -> dict[str, Any]:
    """Field metadata for :mod:`.codec`: a time control written as its ``--tc`` text, under ``key`` (None: the
    field's name)."""
    return codec.hook(key, encode=lambda tc: tc.text, decode=lambda text, _: TimeControl.parse(str(text)))
