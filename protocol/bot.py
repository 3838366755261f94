"""The bot SDK: write a Quarto bot as one function or a small class; this module does all the UQI work.

The smallest bot is a function::

    from quarto_arena.protocol.bot import SearchContext, run
    from quarto_arena.protocol.rules import Position, Turn

    def choose(position: Position, ctx: SearchContext) -> Turn:
        return position.legal_turns()[0]

    if __name__ == "__main__":
        run(choose)

A richer bot subclasses :class:`Bot` (a name, an author, typed options, ``new_game`` and ``search``). ``run`` serves
it over standard input and output, or, with ``--listen tcp://127.0.0.1:PORT`` (or ``ipc://PATH``), on a ZeroMQ
endpoint (SPEC.md §3.3), or, with ``--connect tcp://HOST:PORT --name NAME [--key K --server-key S] [--slots N]``,
connects in to an arena that serves (SPEC.md §3.4: each slot keeps one copy of the bot, warm across games).

The SDK answers the handshake, checks option values against their declared types, rebuilds the position from every
``position`` command (the engine keeps no game state), runs each search in a worker thread so that ``isready`` is
answered and ``stop`` works during it, sends exactly one ``turn`` per ``go`` (for ``go infinite`` only once ``stop``
arrives, as in UCI), refuses ``position``, ``go``, ``newgame`` and ``setoption`` during a search with an ``error``
line while a new ``uqi`` abandons the search (SPEC §4.10), answers every line it does not understand with an
``error`` line, and exits on ``quit`` or at the end of its input, even in the middle of a search. Logs go to
standard error.

A bot bug must not lose a game by itself: when ``search`` raises, or returns something that is not a legal turn,
the SDK logs the problem (with the traceback) on standard error and answers a legal turn of its own (a win when one
is on the board, otherwise the first legal turn). Deliberately broken test bots turn this off with
``validate_turns = False``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import ipaddress
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Literal, NoReturn

from .errors import ExitStatus, QuartoError
from .notation import NotationError
from .rules import IllegalTurn, Position, Turn, Variant
from .uqi import (
    PROTOCOL_VERSION,
    Go,
    Info,
    IsReady,
    NewGame,
    OptionSpec,
    OptionType,
    PositionCommand,
    Quit,
    Score,
    SetOption,
    Stop,
    Uqi,
    UqiError,
    format_reply,
    parse_command,
    strip_line,
)

__all__ = [
    "Bot",
    "EndpointError",
    "FunctionBot",
    "OptionValue",
    "OptionValues",
    "SearchContext",
    "SearchFunction",
    "UnsupportedVariant",
    "add_connect_arguments",
    "fallback_turn",
    "main",
    "parse_endpoint",
    "run",
    "serve_stdio",
    "serve_zmq",
    "time_budget",
]

if TYPE_CHECKING:
    from . import client  # imported when --connect is used: it loads ZeroMQ's authentication
    from .slots import Loop, Slot

log = logging.getLogger(__name__)

OptionValue = bool | int | str | None
"""A typed option value: check -> bool, spin -> int, combo and string -> str, button -> None."""

DEFAULT_BUDGET: Final = 1.0
"""Seconds a search takes when ``go`` gives no limit at all (SPEC §4.5: the engine chooses)."""
SAFETY_TIME: Final = 10.0
"""Seconds within which SPEC §4.5 wants the turn of a ``go`` whose only limits are ``depth`` and ``nodes``."""
_SAFETY_RESERVE: Final = 0.5
"""Seconds of the safety time kept back for answering (the search stops this long before it ends)."""
EXIT_USAGE: Final = 2
"""Exit status for a bad command line or an endpoint that cannot be served."""
EXIT_REFUSED: Final = 3
"""Exit status of ``--connect`` when the arena turns the bot down for good (its key, its name)."""
_JOIN_ON_EXIT: Final = 0.5
"""Seconds a search gets to notice ``stop`` when the engine exits before the process is ended regardless."""
_SEARCH_RUNNING: Final = "error {} a search is running (send stop first)"
"""The answer to a command that SPEC §4.10 refuses during a search."""


class UnsupportedVariant(QuartoError):
    """Raised by :meth:`Bot.new_game` for a variant the bot cannot play; the SDK answers ``error newgame ...``."""

    status = ExitStatus.ENGINE
    reason = "unsupported_variant"


class EndpointError(QuartoError, ValueError):
    """A ``--listen`` endpoint that cannot be served. The message is the problem, then what to do about it."""

    status = ExitStatus.USAGE
    reason = "endpoint"

    def __init__(self, problem: str, *, remedy: str = "", reason: str | None = None) -> None:
        super().__init__(f"{problem}; {remedy}" if remedy else problem, reason=reason)
        self.problem = problem
        """What is wrong, naming the endpoint."""
        self.remedy = remedy
        """What the user of a bot's command line can do about it ('' when nothing)."""


def _typed(spec: OptionSpec, text: str | None) -> OptionValue:
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


def time_budget(limits: Go, position: Position | None = None) -> float | None:
    """Seconds to spend on this turn under ``limits``, or None when only ``stop`` (or depth/nodes) ends the search.

    SPEC §4.5: ``movetime`` minus a move overhead (a quarter of it, at most 25 ms) for the latency between the
    arena's clock and ours; with a clock, the remaining time shared over the turns we still have to play (half
    the empty squares rounded up with a piece in hand, one give plus half of them rounded down without; 8 when
    unknown; at most ``movestogo``) plus 80 % of the increment, never more than the clock minus its own overhead (a
    quarter of it, at most 30 ms); with both, the smaller; with only ``depth`` or ``nodes``, the safety time less a
    reserve (:data:`SAFETY_TIME`); with no limit at all, :data:`DEFAULT_BUDGET`. The SDK counts the budget from the
    moment it reads ``go``.
    """
    if limits.infinite:
        return None
    budget_ms: float | None = None
    if limits.movetime is not None:
        budget_ms = max(limits.movetime - min(limits.movetime * 0.25, 25.0), 0.5)
    if limits.time is not None:
        turns_left = 8 if position is None else _turns_left(position)
        if limits.movestogo is not None:  # a moves-per-period control: the clock is credited again after these
            turns_left = min(turns_left, limits.movestogo)
        clock = float(limits.time)
        share = clock / turns_left + 0.8 * (limits.inc or 0)
        on_clock = max(min(share, clock - min(clock * 0.25, 30.0)), 0.5)
        budget_ms = on_clock if budget_ms is None else min(budget_ms, on_clock)
    if budget_ms is not None:
        return budget_ms / 1000
    if limits.depth is not None or limits.nodes is not None:
        return SAFETY_TIME - _SAFETY_RESERVE
    return DEFAULT_BUDGET


def _turns_left(position: Position) -> int:
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

    def __init__(self) -> None:
        self._values: dict[str, OptionValue] = {
            spec.name.lower(): _typed(spec, spec.default) for spec in self.options if spec.type is not OptionType.BUTTON
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
                self.set_option(spec.name, _typed(spec, spec.default))

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


def _illegal(position: Position, turn: object) -> str | None:
    """Why ``turn`` cannot be played in ``position``, or None when it can."""
    if not isinstance(turn, Turn):
        return f"search returned {turn!r}, not a Turn"
    try:
        position.apply(turn)
    except IllegalTurn as e:
        return f"search returned the illegal turn {turn}: {e}"
    return None


class _Search:
    """One running ``go``: its context, its worker thread, and whether its output still goes anywhere."""

    __slots__ = ("cancelled", "ctx", "position", "thread")

    def __init__(self, position: Position, ctx: SearchContext) -> None:
        self.position = position
        self.ctx = ctx
        self.cancelled = False
        self.thread: threading.Thread | None = None


class _Session:
    """One UQI conversation with one arena: turns command lines into calls on the bot and reply lines.

    ``handle`` runs on the transport's thread; searches run on worker threads. ``write`` must be thread-safe.
    """

    def __init__(self, bot: Bot, write: Callable[[str], None]) -> None:
        self._bot = bot
        self._write = write
        self._lock = threading.Lock()
        self._variant = Variant()
        self._position: Position | None = None
        self._position_problem = "no position was sent"
        self._search: _Search | None = None

    def handle(self, raw: str) -> bool:
        """Handles one line; returns False when the session ends (``quit``)."""
        line = strip_line(raw)
        if not line:
            return True
        try:
            cmd = parse_command(line)
        except UqiError as e:
            log.warning("bad command %r: %s", line[:200], e)
            self._write(f"error {e}")
            return True
        match cmd:
            case Uqi():
                self._handshake()
            case IsReady():
                self._write("readyok")
            case SetOption():
                self._set_option(cmd)
            case NewGame(variant):
                self._new_game(variant)
            case PositionCommand():
                self._set_position(cmd)
            case Go():
                self._go(cmd)
            case Stop():
                with self._lock:
                    if self._search is not None:
                        self._search.ctx.stop()
            case Quit():
                return False
        return True

    def _busy(self) -> bool:
        with self._lock:
            return self._search is not None

    def _handshake(self) -> None:
        # A handshake starts the session afresh: forget a search left over from an arena that went away.
        self.close()
        # SPEC §4.1: a second uqi keeps nothing of the session before, the variant and the position included.
        self._variant = Variant()
        self._position = None
        self._position_problem = "no position was sent"
        try:
            self._bot.reset_options()
        except Exception:
            log.exception("the bot's set_option raised while restoring defaults")
        self._write(f"id name {self._bot.name}")
        if self._bot.author:
            self._write(f"id author {self._bot.author}")
        for spec in self._bot.options:
            self._write(format_reply(spec))
        self._write(f"uqiok {PROTOCOL_VERSION}")

    def _set_option(self, cmd: SetOption) -> None:
        if self._busy():
            self._write(_SEARCH_RUNNING.format("setoption"))
            return
        spec = next((s for s in self._bot.options if s.name.lower() == cmd.name.lower()), None)
        if spec is None:
            self._write(f"error setoption unknown option {cmd.name}")
            return
        try:
            text = spec.check(cmd.value)
            self._bot.set_option(spec.name, _typed(spec, text))
        except (UqiError, ValueError) as e:
            self._write(f"error setoption {e}")
            return
        log.info("option %s = %s", spec.name, text)

    def _new_game(self, variant: Variant) -> None:
        if self._busy():
            self._write(_SEARCH_RUNNING.format("newgame"))
            return
        try:
            self._bot.new_game(variant)
        except UnsupportedVariant as e:
            self._write(f"error newgame unsupported {variant.describe()}: {e}")
            return
        except Exception as e:
            log.exception("the bot's new_game raised")
            self._write(f"error newgame failed: {type(e).__name__}: {e}")
            return
        self._variant = variant
        self._position = None
        self._position_problem = "no position was sent since newgame"

    def _set_position(self, cmd: PositionCommand) -> None:
        if self._busy():
            self._write(_SEARCH_RUNNING.format("position"))
            return
        # Stateless, as in UCI: the whole game comes with every position command, under the newgame variant.
        try:
            self._position = cmd.position(self._variant)
        except (IllegalTurn, NotationError, ValueError) as e:
            self._position = None
            self._position_problem = f"the last position was invalid ({e})"
            self._write(f"error position {e}")

    def _go(self, limits: Go) -> None:
        position = self._position
        if position is None:
            self._write(f"error go: {self._position_problem}")
            return
        if position.is_over:
            self._write("error go: the game is over in this position, there is no turn to play")
            return
        with self._lock:
            if self._search is not None:
                self._write(_SEARCH_RUNNING.format("go"))
                return
            run = _Search(position, SearchContext(limits, position=position, options=self._bot.option_values))
            run.ctx._on_info = lambda info: self._info(run, info)
            run.thread = threading.Thread(target=self._search_thread, args=(run,), name="search", daemon=True)
            self._search = run
        run.thread.start()

    def _info(self, run: _Search, info: Info) -> None:
        if not run.cancelled:
            self._write(format_reply(info))

    def _search_thread(self, run: _Search) -> None:
        position = run.position
        turn: object = None
        try:
            turn = self._bot.search(position, run.ctx)
        except Exception:
            log.exception("the bot's search raised; answering a fallback legal turn instead")
            turn = fallback_turn(position)
        if self._bot.validate_turns:
            problem = _illegal(position, turn)
            if problem is not None:
                log.error("%s; answering a fallback legal turn instead", problem)
                turn = fallback_turn(position)
            assert isinstance(turn, Turn)
            turn = position.canonical(turn)
        if run.ctx.limits.infinite:
            # As in UCI, an infinite search answers only when stopped, however early the bot has made up its mind.
            run.ctx._stop.wait()
        # Clearing the search and sending the turn under one lock: the arena may send the next go as soon as it
        # reads the turn, and that go must not find this search still registered.
        with self._lock:
            if self._search is run:
                self._search = None
            if not run.cancelled:
                self._write(f"turn {turn}")

    def close(self) -> threading.Thread | None:
        """Ends the session: stops a running search and drops its output. Returns its thread, if any."""
        with self._lock:
            run, self._search = self._search, None
        if run is None:
            return None
        run.cancelled = True
        run.ctx.stop()
        return run.thread


def serve_stdio(bot: Bot, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> threading.Thread | None:
    """Serves one session over byte streams (standard input and output by default) until ``quit`` or end of input.

    Returns the thread of a search that was still running at the end (already told to stop), or None.
    """
    instream = stdin if stdin is not None else sys.stdin.buffer
    outstream = stdout if stdout is not None else sys.stdout.buffer
    out_lock = threading.Lock()
    broken = False

    def write(line: str) -> None:
        nonlocal broken
        with out_lock:
            if broken:
                return
            try:
                outstream.write(line.encode("utf-8") + b"\n")
                outstream.flush()
            except (OSError, ValueError):
                broken = True  # the arena closed our output; the end of input follows
                log.warning("standard output is closed; dropping %r", line)

    session = _Session(bot, write)
    try:
        for raw in iter(instream.readline, b""):
            if not session.handle(raw.decode("utf-8", "replace")):
                log.info("quit")
                break
        else:
            log.info("end of input")
    except KeyboardInterrupt:
        log.info("interrupted")
    return session.close()


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_endpoint(text: str, *, allow_remote: bool = False) -> str:
    """Checks a ``--listen`` value and returns the endpoint to bind; raises :class:`EndpointError`.

    Accepted: ``tcp://HOST:PORT`` (HOST a loopback address unless ``allow_remote``), ``ipc://PATH``, or a bare
    port number, which means ``tcp://127.0.0.1:PORT``.
    """
    value = text.strip()
    if value.isdigit():
        value = f"tcp://127.0.0.1:{value}"
    if value.startswith("ipc://"):
        if len(value) == len("ipc://"):
            raise EndpointError(f"endpoint {text!r}: ipc:// needs a path")
        return value
    if not value.startswith("tcp://"):
        raise EndpointError(f"endpoint {text!r}: expected tcp://HOST:PORT, ipc://PATH or a port number")
    host, sep, port = value[len("tcp://") :].rpartition(":")
    if not sep or not host:
        raise EndpointError(f"endpoint {text!r}: expected tcp://HOST:PORT")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise EndpointError(f"endpoint {text!r}: port {port!r} is not a number in 1..65535")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not allow_remote and not _loopback(bare):
        raise EndpointError(
            f"endpoint {text!r}: {host} is not a loopback address",
            remedy="pass --allow-remote to accept other machines",
            reason="not_loopback",
        )
    if bare == "localhost":
        host = "127.0.0.1"  # libzmq binds addresses or interface names, not host names
    return f"tcp://{host}:{port}"


class BotSlot:
    """The SDK's warm slot (a :class:`~quarto_arena.protocol.slots.Slot`): one bot object serves session after
    session (``uqi`` resets its options, ``newgame`` starts each game); with ``copies``, a copy of the bot as it was
    at start, and a new copy only after a session the arena killed or a search that would not stop."""

    def __init__(self, pristine: Bot, loop: Loop, *, copies: bool = True) -> None:
        self._pristine = pristine
        self._loop = loop
        self._copies = copies
        self._bot = pristine
        self._session: _Session | None = None
        self._ready = False
        self._on_ready: Callable[[], None] = lambda: None

    def _fresh(self) -> Bot:
        return copy.deepcopy(self._pristine) if self._copies else self._pristine

    def start(self, on_ready: Callable[[], None]) -> None:
        self._on_ready = on_ready
        self._bot = self._fresh()
        self._ready = True
        on_ready()

    @property
    def ready(self) -> bool:
        return self._ready

    def open(self, write: Callable[[str | None], None]) -> None:
        if not self._ready:
            self._bot = self._fresh()  # the last session's search may still run on the old one
        self._ready = False
        self._session = _Session(self._bot, write)

    def handle(self, line: str) -> bool:
        return True if self._session is None else self._session.handle(line)

    def exit_info(self) -> str | None:
        return None

    def finish(self, *, fresh: bool = False) -> None:
        session, self._session = self._session, None
        thread = None if session is None else session.close()
        if thread is None or not thread.is_alive():
            self._clean(fresh)
            return

        def wait() -> None:  # off the loop: the search has been told to stop
            thread.join(_JOIN_ON_EXIT)
            lingers = thread.is_alive()
            self._loop.call_soon_threadsafe(lambda: self._clean(fresh or lingers))

        threading.Thread(target=wait, name="end-of-session", daemon=True).start()

    def _clean(self, fresh: bool) -> None:
        if self._session is not None:
            return  # a session opened meanwhile (on a fresh copy)
        if fresh:
            self._bot = self._fresh()
        self._ready = True
        self._on_ready()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


#: ``make_slot(loop, number)``: the slot that serves the sessions (bot.py's :class:`BotSlot`, the bridge's engine).
SlotFactory = Callable[["Loop", int], "Slot"]


def serve_zmq(bot: Bot, endpoint: str, *, on_bound: Callable[[], None] | None = None) -> int:
    """Serves ``bot`` on a ZeroMQ endpoint (a bound DEALER, one frame per line, SPEC §3.3), session after session.

    ``quit`` ends a session, and the server waits for the next ``uqi``. Runs until stopped (:func:`serve_slot_sessions`,
    whose exit status it returns). Raises :class:`EndpointError` when the endpoint cannot be bound.
    """
    return serve_slot_sessions(lambda loop, _: BotSlot(bot, loop, copies=False), endpoint, on_bound=on_bound)


HEARTBEAT_MS: Final = 1000
"""Interval of the ZMTP heartbeats a server sends; an arena silent for three intervals has gone (SPEC §3.3)."""
_OUTBOX_LINES: Final = 1000


class _Signals:
    """SIGINT and SIGTERM while serving: the first calls ``first()`` (finish what is in flight, take nothing new), a
    second leaves at once by raising :class:`_LeaveNow` (exit status 128 + the signal)."""

    def __init__(self, first: Callable[[], None]) -> None:
        self._first = first
        self._count = 0
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._old[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._count += 1
        if self._count > 1:
            raise _LeaveNow(signum)
        self._first()


class _LeaveNow(QuartoError):
    """A second signal: leave at once (exit status 128 + the signal)."""

    status = ExitStatus.SIGNAL
    reason = "signal"

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.exit_code = int(ExitStatus.SIGNAL) + signum


def serve_slot_sessions(make_slot: SlotFactory, endpoint: str, *, on_bound: Callable[[], None] | None = None) -> int:
    """The ZeroMQ server behind :func:`serve_zmq` and the bridge's ``--listen``: one session at a time, each on a
    new socket, all of them served by one warm slot (its engine ready before the endpoint is bound).

    A session ends (SPEC §3.3) on ``quit``, when the engine side ends it, or when the arena's connection drops
    (its process died, or three heartbeats went unanswered). Each session gets a fresh socket, and whatever an old
    session still writes is dropped: a reply from another session never reaches an arena. The first SIGINT or
    SIGTERM lets a session in progress finish, then returns 0; a second one returns 128 + the signal at once.
    Raises :class:`EndpointError` when the endpoint cannot be bound.
    """
    from .slots import Loop

    loop = Loop()
    server = _SessionServer(make_slot(loop, 1), loop, endpoint)
    try:
        with _Signals(server.leave):
            try:
                server.serve(on_bound)
            except _LeaveNow as e:
                log.info("leaving at once")
                server.hurry = True
                return e.exit_code
        return 0
    finally:
        server.close()


class _SessionServer:
    """The state of :func:`serve_slot_sessions`: the bound socket and its monitor, the slot, the loop.

    ZeroMQ sockets are not thread-safe: only the loop's thread touches the socket; lines written from other threads
    (the SDK's searches) are queued and sent by the loop. Each line carries the number of the session that wrote it,
    and only the current session's lines are sent. The queue is bounded, so an engine flooding its output waits for
    the socket instead of filling memory.

    Connections are counted: a session's arena has vanished when no connection is left. An arena that quit may
    still reconnect to the fresh socket for a moment before its own socket is closed, and its disconnect must not
    end the next arena's session; a port probe (no ZeroMQ peer) comes and goes without a session.
    """

    def __init__(self, slot: Slot, loop: Loop, endpoint: str) -> None:
        import zmq

        self.zmq = zmq
        self.slot = slot
        self.loop = loop
        self.endpoint = endpoint
        self.context = zmq.Context()
        self.sock: Any = None
        self.monitor: Any = None
        self.outbox: queue.Queue[tuple[int, str | None]] = queue.Queue(maxsize=_OUTBOX_LINES)
        self.generation = 0
        self.connections = 0
        self.begun = False
        self.leaving = False
        self.hurry = False
        self.done = False

    def serve(self, on_bound: Callable[[], None] | None) -> None:
        self.slot.start(lambda: None)
        while not self.slot.ready:
            if self.leaving:
                return
            self.loop.run_once()
        self.sock = self._bind()
        self.monitor = self._watch()
        self.slot.open(self._writer(self.generation))
        log.info("listening on %s", self.endpoint)
        if on_bound is not None:
            on_bound()
        while not self.done:
            self.loop.run_once()

    def leave(self) -> None:
        """The first signal: the session in progress finishes, then the server stops."""
        self.loop.call_soon_threadsafe(self._leave)

    def _leave(self) -> None:
        if self.leaving:
            return
        self.leaving = True
        if self.begun:
            log.warning("stopping: finishing the game in flight, taking no new one (signal again to leave at once)")
        else:
            log.info("stopping")
            self.done = True

    def _bind(self, patience: float = 0.0) -> Any:
        """A fresh DEALER bound to the endpoint, with ZMTP heartbeats."""
        zmq = self.zmq
        # ZeroMQ releases a closed socket's address in its I/O thread, a moment later: a rebind may retry a while.
        give_up = time.monotonic() + patience
        while True:
            fresh = self.context.socket(zmq.DEALER)
            fresh.setsockopt(zmq.LINGER, 0)
            fresh.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_MS)
            fresh.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3 * HEARTBEAT_MS)
            fresh.setsockopt(zmq.HEARTBEAT_TTL, 3 * HEARTBEAT_MS)
            try:
                fresh.bind(self.endpoint)
                return fresh
            except zmq.ZMQError as e:
                fresh.close()
                if e.errno != zmq.EADDRINUSE or time.monotonic() > give_up:
                    raise EndpointError(f"cannot listen on {self.endpoint}: {e}", reason="cannot_bind") from None
            time.sleep(0.01)

    def _watch(self) -> Any:
        """Reads the current socket and a monitor of its connections on the loop."""
        zmq = self.zmq
        monitor = self.sock.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self.loop.add_reader(self.sock, self._receive)
        self.loop.add_reader(monitor, self._on_monitor)
        return monitor

    def _writer(self, number: int) -> Callable[[str | None], None]:
        """What session ``number`` writes with (from any thread); ``None`` ends it from the engine's side."""
        loop_thread = self.loop.thread

        def write(line: str | None) -> None:
            if threading.get_ident() == loop_thread:
                self._emit(number, line)
                return
            self.outbox.put((number, line))
            self.loop.call_soon_threadsafe(self._flush)

        return write

    def _emit(self, number: int, line: str | None) -> None:
        if number != self.generation or self.sock is None:
            return  # written by a session that is over
        if line is None:
            self._next_session("the engine ended it")
            return
        with contextlib.suppress(self.zmq.Again):
            self.sock.send(line.encode("utf-8"), self.zmq.NOBLOCK)

    def _flush(self) -> None:
        """Sends what the session's threads queued, a batch at a time, never blocking: a line the arena's
        connection cannot take (it is gone, or reads nothing) is dropped."""
        for _ in range(_OUTBOX_LINES):
            try:
                number, line = self.outbox.get_nowait()
            except queue.Empty:
                return
            self._emit(number, line)
        self.loop.call_soon_threadsafe(self._flush)  # more is queued: come back after a look at the socket

    def _receive(self) -> None:
        """Hands every waiting line to the slot, once the monitor's waiting events are read.

        Those events are older than the lines, and the session must begin after them: a server slow to wake may
        find a port probe's connection and disconnection queued before the arena's connection, whose ``uqi`` waits
        on the socket. Read after the ``uqi``, the probe's disconnection would end the session just begun."""
        self._on_monitor()
        generation = self.generation
        while self.sock is not None and generation == self.generation:
            try:
                frames = self.sock.recv_multipart(self.zmq.NOBLOCK)
            except self.zmq.Again:
                return
            self.begun = True
            if len(frames) != 1:
                self._emit(generation, f"error message has {len(frames)} frames; UQI over ZeroMQ is one line per frame")
                continue
            if not self.slot.handle(frames[0].decode("utf-8", "replace")):
                self._next_session("quit")
                return

    def _on_monitor(self) -> None:
        """Reads the monitor: the session ends when the arena's connection dropped (its process died or its
        heartbeats stopped) and no other is left. A session that never began has nothing to end."""
        from zmq.utils.monitor import recv_monitor_message

        vanished = False
        while self.monitor is not None and self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)["event"]
            self.connections += 1 if event == self.zmq.EVENT_ACCEPTED else -1
            vanished = vanished or (self.begun and self.connections <= 0)
        if vanished:
            self._next_session("the arena's connection dropped")

    def _next_session(self, why: str) -> None:
        # A bound DEALER deals its replies round-robin to every peer it still has, so the next arena could lose
        # lines to this one's dying connection: start over with a fresh socket. Closing it is also how the arena
        # learns that a bridged engine went away (a disconnect).
        self._unbind()
        self.generation += 1
        self.slot.finish()
        log.info("session ended (%s)", why)
        if self.leaving:
            self.done = True
            return
        self.sock = self._bind(patience=5.0)
        self.monitor = self._watch()
        self.begun, self.connections = False, 0
        self.slot.open(self._writer(self.generation))
        log.info("waiting for the next uqi")

    def _unbind(self) -> None:
        for old in (self.sock, self.monitor):
            if old is not None:
                self.loop.remove_reader(old)
        if self.sock is not None:
            with contextlib.suppress(self.zmq.ZMQError):
                self.sock.disable_monitor()
            self.monitor.close(linger=0)
            self.sock.close()
        self.sock = self.monitor = None

    def close(self) -> None:
        """Ends the slot's engine and releases the socket, the context and the loop."""
        self._unbind()
        self.slot.close()
        self.context.term()
        self.loop.close()


def add_connect_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--connect``, ``--name``, ``--key``, ``--server-key`` and ``--slots`` to a bot's command line (read
    them with :func:`quarto_arena.protocol.client.connect_options`). Declared here, not beside the control lines in
    :mod:`.connect`: every bot's start parses its command line, and only one that connects in needs those."""
    group = parser.add_argument_group("connecting in to an arena that serves (SPEC §3.4)")
    group.add_argument("--connect", metavar="ENDPOINT", help="the arena's endpoint, tcp://HOST:PORT")
    group.add_argument("--name", metavar="NAME", help="the bot's name at the arena (with keys: its key's name)")
    group.add_argument("--key", metavar="FILE", help="the bot's secret key, NAME.key_secret (quarto-arena keys new)")
    group.add_argument("--server-key", metavar="FILE", help="the arena's public key, arena.key")
    group.add_argument("--slots", type=int, default=1, metavar="N", help="games played at once (default: 1)")
    group.add_argument(
        "--stay",
        action="store_true",
        help="keep connecting after the arena ends its run, and while it does not know our key yet (a standing ladder)",
    )


def _parser(prog: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="A Quarto engine speaking UQI over standard input/output, or on a ZeroMQ endpoint.",
    )
    parser.add_argument(
        "--listen",
        metavar="ENDPOINT",
        help="serve on a ZeroMQ endpoint instead of stdio: tcp://127.0.0.1:PORT, ipc://PATH, or a port number",
    )
    parser.add_argument("--allow-remote", action="store_true", help="allow a --listen address that is not loopback")
    add_connect_arguments(parser)
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="level of the log on standard error (default: info)",
    )
    return parser


def serve_connected_until_stopped(make_slot: client.SlotFactory, options: client.ConnectOptions) -> int:
    """Serves the arena's sessions (:func:`.client.serve_connected`): the SDK's and the bridge's ``--connect``.

    Returns 0 when the arena said goodbye (the run is over) or after a first SIGINT or SIGTERM once the games in
    flight are over; 128 + the signal when a second one came (leaving at once: the games in flight are lost by
    disconnect); :data:`EXIT_REFUSED` when the arena turned the bot down for good (the reason logged).
    """
    from .client import ArenaRefused, Client, serve_connected

    client_ = Client(make_slot, options)
    with _Signals(client_.leave):
        try:
            serve_connected(make_slot, options, client_)
        except ArenaRefused as e:
            log.error("%s", e)
            return EXIT_REFUSED
        except _LeaveNow as e:
            log.warning("leaving at once")
            return e.exit_code
    log.info("stopped")
    return 0


def main(bot: Bot | SearchFunction, argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Parses the command line and serves ``bot``; returns the exit status (0, or 2 for a bad command line).

    A search still running when the session ends gets half a second to stop; after that the process exits
    through ``os._exit`` because a Python thread cannot be killed and the engine must exit (SPEC §3.2).
    """
    args = _parser(prog).parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    the_bot = bot if isinstance(bot, Bot) else FunctionBot(bot)
    if args.connect is not None or args.name or args.key or args.server_key or args.slots != 1 or args.stay:
        return _connect(the_bot, args)
    if args.listen is not None:
        try:
            endpoint = parse_endpoint(args.listen, allow_remote=args.allow_remote)
            return serve_zmq(the_bot, endpoint)
        except EndpointError as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_USAGE
    leftover = serve_stdio(the_bot)
    if leftover is not None:
        leftover.join(_JOIN_ON_EXIT)
        if leftover.is_alive():
            log.warning("the search did not stop within %.1f s; exiting anyway", _JOIN_ON_EXIT)
            logging.shutdown()
            os._exit(0)
    return 0


def _connect(bot: Bot, args: argparse.Namespace) -> int:
    """``--connect``: serves the arena's sessions, one warm copy of ``bot`` per slot (SPEC §3.4)."""
    from .client import ClientError, connect_options

    try:
        options = connect_options(args)
        assert options is not None
        if args.listen is not None:
            raise ClientError("give --listen or --connect, not both")
        pristine = copy.deepcopy(bot)  # a bot that cannot be copied is refused here, not at the first game
    except ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (TypeError, copy.Error) as e:
        print(
            f"error: --connect gives each session a copy of the bot, and this one cannot be copied: {e}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return serve_connected_until_stopped(lambda loop, _: BotSlot(pristine, loop), options)


def run(bot: Bot | SearchFunction, argv: Sequence[str] | None = None) -> NoReturn:
    """Runs ``bot`` as an engine process: :func:`main`, then exit with its status."""
    sys.exit(main(bot, argv))
