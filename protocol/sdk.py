"""The SDK's core: what a bot is (:class:`Bot`, or one function), what a search may know and do
(:class:`SearchContext`), and how much time a search takes (:func:`time_budget`). No I/O: :mod:`.session` speaks UQI
for a bot, :mod:`.server` and :mod:`.client` serve it over ZeroMQ, and :mod:`.bot` is the face a bot imports
(``from quarto_arena.protocol.bot import Bot, SearchContext, run``)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Final, Literal

from .errors import ExitStatus, QuartoError
from .rules import IllegalTurn, Position, Turn, Variant
from .uqi import Go, Info, OptionSpec, OptionType, Score

__all__ = [
    "CLOCK_CAP",
    "DEFAULT_BUDGET",
    "INC_SHARE",
    "MOVE_OVERHEAD_MS",
    "SAFETY_TIME",
    "Bot",
    "FunctionBot",
    "OptionValue",
    "OptionValues",
    "SearchContext",
    "SearchFunction",
    "UnsupportedVariant",
    "fair_share_ms",
    "fallback_turn",
    "illegal_reason",
    "machine_load",
    "time_budget",
    "turns_left",
    "typed_value",
]

OptionValue = bool | int | str | None
"""A typed option value: check -> bool, spin -> int, combo and string -> str, button -> None."""

DEFAULT_BUDGET: Final = 1.0
"""Seconds a search takes when ``go`` gives no limit at all (SPEC §4.5: the engine chooses)."""
SAFETY_TIME: Final = 10.0
"""Seconds within which SPEC §4.5 wants the turn of a ``go`` whose only limits are ``depth`` and ``nodes``."""
_SAFETY_RESERVE: Final = 1.0
"""Seconds of the safety time kept back for answering (the search stops this long before it ends)."""
MOVE_OVERHEAD_MS: Final = 50.0
"""Milliseconds kept back from every turn's limit (SPEC §4.5): the figure for a loaded machine (as many processes
that want a CPU as there are CPUs: a tournament at ``-j`` the cores, a ladder), times the load beyond that, which the
SDK, ``perfect`` and the starters use; 10 does on a quiet machine, and across a network add twice the round trip."""
INC_SHARE: Final = 0.75
"""The part of the increment a fair share spends ahead (SPEC §4.5's "most of inc")."""
CLOCK_CAP: Final = 0.25
"""No search plans more than this part of the time left, whatever its share (SPEC §4.5)."""


class UnsupportedVariant(QuartoError):
    """Raised by :meth:`Bot.new_game` for a variant the bot cannot play; the SDK answers ``error newgame ...``."""

    status = ExitStatus.ENGINE
    reason = "unsupported_variant"


def typed_value(spec: OptionSpec, text: str | None) -> OptionValue:
    """A checked option text as its Python value."""
    if spec.type is OptionType.CHECK:
        return text == "true"
    if spec.type is OptionType.SPIN:
        assert text is not None  # OptionSpec.check guarantees a value for a spin
        return int(text)
    if spec.type is OptionType.BUTTON:
        return None
    return text


class OptionValues(Mapping[str, OptionValue]):
    """Read-only option values, looked up by option id case-insensitively (SPEC §4.1)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, OptionValue]) -> None:
        self._values = {k.lower(): v for k, v in values.items()}

    def __getitem__(self, name: str) -> OptionValue:
        return self._values[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"OptionValues({self._values!r})"


def time_budget(
    limits: Go, position: Position | None = None, *, overhead_ms: float = MOVE_OVERHEAD_MS, load: float = 1.0
) -> float | None:
    """Seconds to spend on this turn under ``limits``, or None when only ``stop`` ends the search (SPEC §4.5).

    The turn's limit L is ``movetime``, or with a clock the fair share (:func:`fair_share_ms`), or the smaller of the
    two. The search keeps back ``overhead_ms`` (:data:`MOVE_OVERHEAD_MS`, the figure for a loaded machine) times
    ``load`` (:func:`machine_load`: 1 up to one runnable process per CPU, more above), and at most ``load / (1 +
    load)`` of L: half of it at a load of 1, two thirds at 2. With only ``depth`` or ``nodes``, the safety time less a
    second; with no limit at all, :data:`DEFAULT_BUDGET`. The SDK counts the budget from the moment it reads ``go``.
    """
    if limits.infinite:
        return None
    limit_ms: float | None = None if limits.movetime is None else float(limits.movetime)
    if limits.time is not None:
        share = fair_share_ms(limits, position)
        limit_ms = share if limit_ms is None else min(limit_ms, share)
    if limit_ms is not None:
        load = max(load, 1.0)
        kept = min(overhead_ms * load, limit_ms * load / (1 + load))
        return max(limit_ms - kept, 0.5) / 1000
    if limits.depth is not None or limits.nodes is not None:
        return SAFETY_TIME - _SAFETY_RESERVE
    return DEFAULT_BUDGET


def machine_load() -> float:
    """How loaded the machine is now, for :func:`time_budget`: the load average of the last minute per CPU this
    process may run on, at least 1 (1 where the system has no load average)."""
    try:
        average = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(average / cpus, 1.0)


def fair_share_ms(limits: Go, position: Position | None = None) -> float:
    """The fair share of the clock in ``limits`` (``time``, ms) for this turn (SPEC §4.5): the time left divided by
    the turns still to play (:func:`turns_left`; 8 when the position is not known; at most ``movestogo``), plus
    three quarters of ``inc``, and never more than a quarter of the time left. A search may run past it up to twice
    as long when it has a reason, never past that quarter (:data:`CLOCK_CAP`)."""
    assert limits.time is not None
    turns = 8 if position is None else turns_left(position)
    if limits.movestogo is not None:  # a moves-per-period control: the clock is credited again after these
        turns = min(turns, limits.movestogo)
    clock = float(limits.time)
    return min(clock / turns + INC_SHARE * (limits.inc or 0), CLOCK_CAP * clock)


def turns_left(position: Position) -> int:
    """The turns the player to move still plays (SPEC §4.5): every other placement from now, or from the
    opponent's next one plus this give when there is no piece in hand (9 at the opening give)."""
    empty = 16 - position.placed
    return (empty + 1) // 2 if position.hand is not None else 1 + empty // 2


class SearchContext:
    """What a search may know and do: the ``go`` limits, the time budget, the stop flag, info output, options.

    The SDK builds one per ``go``; tests and tools may build their own (``SearchContext(Go(depth=2))``).
    """

    def __init__(
        self,
        limits: Go | None = None,
        *,
        position: Position | None = None,
        options: Mapping[str, OptionValue] | None = None,
        budget: float | Literal["auto"] | None = "auto",
        on_info: Callable[[Info], None] | None = None,
    ) -> None:
        self.limits: Go = limits or Go()
        """The ``go`` command: time, inc, otime, oinc, movestogo, movetime, depth, nodes, infinite."""
        self.options: OptionValues = OptionValues(options or {})
        """The bot's option values when the search started (case-insensitive ids)."""
        self.budget: float | None = time_budget(self.limits, position) if budget == "auto" else budget
        """Seconds this search should take at most (:func:`time_budget`), or None for no time limit."""
        self.started: float = time.monotonic()
        """When the search started, on the monotonic clock."""
        self.deadline: float | None = None if self.budget is None else self.started + self.budget
        """Monotonic time at which :meth:`should_stop` turns true, or None."""
        self._stop = threading.Event()
        self._on_info = on_info
        self._on_stop: list[Callable[[], None]] = []
        self._stop_lock = threading.Lock()

    @property
    def stopped(self) -> bool:
        """True once ``stop`` arrived (or the session ended): return a turn as soon as possible."""
        return self._stop.is_set()

    def stop(self) -> None:
        """Asks the search to end (what ``stop`` does), and calls what :meth:`on_stop` registered."""
        with self._stop_lock:
            self._stop.set()
            callbacks, self._on_stop = self._on_stop, []
        for callback in callbacks:
            callback()

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Calls ``callback`` when the search is stopped (at once if it already is), from the stopping thread.

        For a search that cannot poll :meth:`should_stop`, such as one running in a C extension: the callback
        tells it to end (``Solver.stop``).
        """
        with self._stop_lock:
            if not self._stop.is_set():
                self._on_stop.append(callback)
                return
        callback()

    def wait_stopped(self) -> None:
        """Blocks until the search is stopped (``stop``, or the session's end): an infinite search's held turn."""
        self._stop.wait()

    def should_stop(self) -> bool:
        """True when the search should return now: stopped, or its time budget is spent. Call it often."""
        return self._stop.is_set() or (self.deadline is not None and time.monotonic() >= self.deadline)

    def elapsed(self) -> float:
        """Seconds since the search started."""
        return time.monotonic() - self.started

    def remaining(self) -> float | None:
        """Seconds left in the budget (never negative), or None without a time limit."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def info(
        self,
        *,
        depth: int | None = None,
        seldepth: int | None = None,
        score: Score | None = None,
        nodes: int | None = None,
        nps: int | None = None,
        time: int | None = None,
        pv: Sequence[Turn] = (),
        string: str | None = None,
    ) -> None:
        """Sends an ``info`` line (SPEC §5.3). ``time`` is in ms; ``pv`` starts with the bot's own turn."""
        if self._on_info is not None:
            info = Info(depth, seldepth, score, nodes, nps, time, tuple(pv), string)
            self._on_info(info)


SearchFunction = Callable[[Position, SearchContext], Turn]
"""The simplest bot: a function from the position and the search context to a turn."""


class Bot:
    """Base class of a bot. Override :meth:`search`; optionally :meth:`new_game` and :meth:`set_option`.

    Class attributes describe the bot for the handshake: :attr:`name`, :attr:`author`, :attr:`options`.
    """

    name: str = "Unnamed bot"
    """Sent as ``id name``."""
    author: str | None = None
    """Sent as ``id author`` when set."""
    options: tuple[OptionSpec, ...] = ()
    """Typed options (protocol/uqi.py :class:`OptionSpec`), sent with the handshake and checked on ``setoption``."""
    validate_turns: bool = True
    """Replace a turn that is not legal by a legal one (see the module docstring). Only test bots turn it off."""
    move_overhead_ms: float = MOVE_OVERHEAD_MS
    """Milliseconds each search keeps back from its limit (:func:`time_budget`): more for a bot that plays across a
    network (SPEC §4.5: add twice the round trip), less on a quiet machine of its own."""

    def __init__(self) -> None:
        self._values: dict[str, OptionValue] = {
            spec.name.lower(): typed_value(spec, spec.default)
            for spec in self.options
            if spec.type is not OptionType.BUTTON
        }

    def option(self, name: str) -> OptionValue:
        """The current value of an option (id compared case-insensitively); KeyError when there is none."""
        return self._values[name.lower()]

    @property
    def option_values(self) -> OptionValues:
        """A snapshot of every option value."""
        return OptionValues(self._values)

    def set_option(self, name: str, value: OptionValue) -> None:
        """Stores a checked, typed value (``name`` as declared). Override to react; raise ValueError to refuse it.

        The SDK also calls it with every default when a session starts (``uqi``), so state derived from an option
        (a random generator from a seed) can be built here.
        """
        self._values[name.lower()] = value

    def reset_options(self) -> None:
        """Sets every option back to its default through :meth:`set_option`."""
        for spec in self.options:
            if spec.type is not OptionType.BUTTON:
                self.set_option(spec.name, typed_value(spec, spec.default))

    def new_game(self, variant: Variant) -> None:
        """A new game starts under ``variant``: reset any search state. Raise UnsupportedVariant to refuse it."""

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """The turn to play in ``position`` (never a finished game). Check ``ctx.should_stop()`` often."""
        raise NotImplementedError(f"{type(self).__name__}.search is not implemented")


class FunctionBot(Bot):
    """A bot made of one :data:`SearchFunction`."""

    def __init__(
        self,
        choose: SearchFunction,
        *,
        name: str | None = None,
        author: str | None = None,
        options: Sequence[OptionSpec] = (),
    ) -> None:
        self.options = tuple(options)
        self.name = name or str(getattr(choose, "__name__", "bot"))
        self.author = author
        self._choose = choose
        super().__init__()

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """Calls the function."""
        return self._choose(position, ctx)


def fallback_turn(position: Position) -> Turn:
    """A legal turn chosen without search: the claim or a winning placement when there is one, else the first."""
    turns = position.legal_turns()
    if not turns:
        raise ValueError("the game is over: there is no legal turn")
    for turn in turns:
        if turn.claim or turn.call or (turn.place is not None and position.wins_at(turn.place)):
            return turn
    return turns[0]


def illegal_reason(position: Position, turn: object) -> str | None:
    """Why ``turn`` cannot be played in ``position``, or None when it can."""
    if not isinstance(turn, Turn):
        return f"search returned {turn!r}, not a Turn"
    try:
        position.apply(turn)
    except IllegalTurn as e:
        return f"search returned the illegal turn {turn}: {e}"
    return None
