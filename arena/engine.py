"""One engine session: start-up handshake, options, new games, searches, pings, and the end, each under a deadline.

The request/response exchanges (:class:`Handshake`, :class:`ReadyPing`, :class:`Search`) are small state machines
at module level: each says which lines to send and consumes the engine's replies until it is finished, so each can
be tested alone. :class:`EngineSession` drives them over a :class:`~quarto_arena.arena.transport.Transport`
with the arena's own monotonic clock: the session is the transport's line sink and hands each line to the running
exchange, one future per exchange, and one :class:`~quarto_arena.arena.timecontrol.SearchClock` per session
(restarted for each exchange: when it was sent, when the answer came, the deadline, its one timer).

Whatever an engine sends, a session's memory stays bounded: ``error`` lines are kept as a short tail
(:class:`ErrorTail`), warnings about a misbehaving engine are rate-limited (:class:`Complaints`), and a handshake
may declare at most :data:`~quarto_arena.protocol.uqi.MAX_OPTIONS` options.

Failures come in two levels, as in python-chess: :class:`EngineError` (the engine misbehaved: stalled, refused,
sent nonsense) and :class:`EngineTerminated` (it died). Both carry the :class:`Termination` a game would record,
and a one-line message naming the engine, its pid and its last line. A search never raises for an engine fault:
it returns a :class:`SearchOutcome` that says who is to blame and why, because losing the game is the referee's
call, not an exception.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, TypeAlias, TypeVar

from quarto_arena.arena.memo import by_identity, maker
from quarto_arena.arena.records import EngineIdentity, Termination
from quarto_arena.arena.timecontrol import SearchClock, TimeControl, as_text
from quarto_arena.arena.transport import (
    DEFAULT_STDERR_LIMIT,
    PeerGone,
    ProcessTransport,
    Transcript,
    Transport,
    ZmqTransport,
)
from quarto_arena.arena.transport.base import END_WAIT
from quarto_arena.arena.transport.zeromq import RECONNECT_PAUSE
from quarto_arena.arena.turns import SearchSlots, SessionSlots
from quarto_arena.protocol.rules import Turn, Variant
from quarto_arena.protocol.text import safe_text
from quarto_arena.protocol.uqi import (
    MAX_LINE_BYTES,
    MAX_OPTIONS,
    PROTOCOL_VERSION,
    ErrorReply,
    Go,
    IdAuthor,
    IdName,
    Info,
    IsReady,
    NewGame,
    OptionSpec,
    PositionCommand,
    ReadyOk,
    Reply,
    SetOption,
    TurnReply,
    Uqi,
    UqiError,
    UqiOk,
    format_command,
    parse_reply,
)

from .errors import ArenaError, ArenaFault, ExitStatus, arena_fault

RESOURCE_WAIT: Final = 5.0
"""Seconds an engine's start waits out the arena's own shortage of open files or memory before the run stops."""

__all__ = [
    "Complaints",
    "Connector",
    "Deadlines",
    "EngineConfig",
    "EngineError",
    "EngineSession",
    "EngineTerminated",
    "ErrorTail",
    "Exchange",
    "Handshake",
    "ReadyPing",
    "Search",
    "SearchOutcome",
    "new_games",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Deadlines:
    """The named deadline of every phase, in seconds (SPEC §6). Tests shorten them."""

    startup: float = 10.0
    """Process start (or connect) to ``uqiok``."""
    ready: float = 5.0
    """``isready`` to ``readyok`` (also after ``setoption``)."""
    newgame: float = 5.0
    """``newgame`` to the ``readyok`` that follows it."""
    quit: float = 1.0
    """``quit`` to exit, before the process group is killed."""
    safety: float = 60.0
    """A search without a clock (depth or node limits only, or ``inf``)."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How to run one engine: a command line or an endpoint, plus its options."""

    name: str
    """Display name (in records, tables and messages)."""
    command: tuple[str, ...] = ()
    """argv of the engine process; empty when ``endpoint`` is used."""
    endpoint: str | None = None
    """ZeroMQ endpoint the engine serves (``tcp://HOST:PORT``, ``ipc://PATH``), instead of a command."""
    cwd: str | None = None
    """Working directory of the engine process (default: the arena's)."""
    options: dict[str, str] = field(default_factory=dict)
    """UQI options to set after the handshake (id -> value as text; checked against the declared types)."""
    time_control: TimeControl | None = field(default=None, metadata=as_text("tc"))
    """This engine's own time control (time odds), overriding the game's."""
    remote: str | None = None
    """The name of a bot that connects in to the arena's server (``remote:NAME``), instead of a command."""

    def __post_init__(self) -> None:
        if sum((bool(self.command), self.endpoint is not None, self.remote is not None)) != 1:
            raise ValueError(f"engine {self.name}: give exactly one of a command, an endpoint and a remote bot")

    def describe(self) -> str:
        """The command line, the endpoint, or ``remote:NAME``, for messages."""
        if self.remote is not None:
            return f"remote:{self.remote}"
        return self.endpoint if self.endpoint is not None else " ".join(self.command)


Connector = Callable[[EngineConfig, Transcript | None], Awaitable[Transport]]
"""Where a remote engine's sessions come from: ``connector(config, transcript)`` returns a transport that carries a
new session with the bot ``config.remote`` (a server hands out one of the bot's free slots), or raises OSError."""


class EngineError(ArenaError):
    """The engine misbehaved (stalled, refused, or answered nonsense). The message is one line."""

    status = ExitStatus.ENGINE
    reason = "engine_error"

    def __init__(self, message: str, termination: Termination = Termination.ENGINE_ERROR) -> None:
        super().__init__(message, reason=termination.name.lower())
        self.termination = termination
        """The termination reason a game records for this failure (``reason`` is its name: ``stall``...)."""


class EngineTerminated(EngineError):
    """The engine died or dropped the connection. The message carries its exit code or signal."""

    reason = "disconnect"

    def __init__(self, message: str) -> None:
        super().__init__(message, Termination.DISCONNECT)


# --- bounded bookkeeping ---------------------------------------------------------------------------------------

ERROR_TAIL: Final = 20
"""``error`` lines kept per session (the last ones); older ones are only counted."""
WARNING_BURST: Final = 10
"""Warnings about one engine logged in a burst before the rate limit applies."""
WARNING_INTERVAL: Final = 1.0
"""Seconds per further warning about one engine once the burst is spent; the rest are counted."""


class ErrorTail:
    """The last :data:`ERROR_TAIL` ``error`` texts of an engine, each cut to the line limit, and how many came."""

    __slots__ = ("lines", "total")

    def __init__(self) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=ERROR_TAIL)
        """The newest error texts, oldest first."""
        self.total = 0
        """How many error lines arrived in all."""

    def add(self, text: str) -> None:
        """Records one error text."""
        self.lines.append(text[:MAX_LINE_BYTES])
        self.total += 1

    @property
    def dropped(self) -> int:
        """Error lines no longer kept."""
        return self.total - len(self.lines)

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def __repr__(self) -> str:
        return f"ErrorTail({list(self.lines)!r}, total={self.total})"


class Complaints:
    """Warnings about one engine, rate-limited: a burst, then one per interval, with a count of those suppressed.

    An engine that floods ``error`` or malformed lines must not flood the arena's own output or log.
    """

    __slots__ = ("_last", "_log", "_suppressed", "_tokens", "engine")

    def __init__(self, engine: str, logger: logging.Logger | None = None) -> None:
        self.engine = engine
        """Display name, prefixed to every warning."""
        self._log = log if logger is None else logger
        self._tokens = float(WARNING_BURST)
        self._last = time.monotonic()
        self._suppressed = 0

    def warn(self, message: str) -> None:
        """Logs ``ENGINE: message`` as a warning, unless the engine has used up its share of warnings."""
        now = time.monotonic()
        self._tokens = min(float(WARNING_BURST), self._tokens + (now - self._last) / WARNING_INTERVAL)
        self._last = now
        if self._tokens < 1:
            self._suppressed += 1
            return
        self._tokens -= 1
        if self._suppressed:
            message = f"{message} (and {self._suppressed} more like it, not shown)"
            self._suppressed = 0
        self._log.warning("%s: %s", self.engine, safe_text(message, None))


# --- exchanges -------------------------------------------------------------------------------------------------


class Exchange(abc.ABC, Generic[T]):
    """One request and the replies it owns until it is finished."""

    def __init__(self, engine: str, errors: ErrorTail | None = None, complaints: Complaints | None = None) -> None:
        self.engine = engine
        """Display name, for messages."""
        self.errors = ErrorTail() if errors is None else errors
        """Where the ``error`` lines the engine sends are kept (the session's tail, when run by a session)."""
        self.complaints = Complaints(engine) if complaints is None else complaints
        """Where warnings about the engine go."""

    @abc.abstractmethod
    def lines(self) -> list[str]:
        """The lines to send, in order, in one write."""

    @abc.abstractmethod
    def feed(self, line: str) -> bool:
        """Consumes one line from the engine; returns True once the exchange is finished.

        Raises :class:`EngineError` when the line makes the exchange fail.
        """

    @abc.abstractmethod
    def result(self) -> T:
        """The exchange's result, once finished."""

    def ignore(self, line: str, why: str) -> None:
        """Logs a line that is not valid here and keeps waiting (SPEC §5.5, outside a search)."""
        self.complaints.warn(f"ignored {_clip(line)!r}: {why}")


@dataclass(frozen=True, slots=True)
class EngineId:
    """What the handshake told about the engine."""

    name: str | None
    """``id name``, if sent."""
    author: str | None
    """``id author``, if sent."""
    options: dict[str, OptionSpec]
    """Declared options by lower-case id."""
    version: int
    """Protocol version of ``uqiok``."""


class Handshake(Exchange[EngineId]):
    """``uqi 1`` -> ``id``/``option`` lines -> ``uqiok 1``; at most :data:`MAX_OPTIONS` distinct options."""

    def __init__(self, engine: str, errors: ErrorTail | None = None, complaints: Complaints | None = None) -> None:
        super().__init__(engine, errors, complaints)
        self.name: str | None = None
        self.author: str | None = None
        self.options: dict[str, OptionSpec] = {}
        self.version: int | None = None
        self.replied = False
        """True once a handshake reply (``id``, ``option``, ``uqiok``, ``error``) has come."""

    def lines(self) -> list[str]:
        return [format_command(Uqi(PROTOCOL_VERSION))]

    def feed(self, line: str) -> bool:
        try:
            reply = parse_reply(line)
        except UqiError as e:
            # SPEC §4.1 and §5.5 as UQI 1 was published: a line that is no UQI reply (a banner) is logged and the
            # handshake goes on; bots that print one played, and must go on playing. A program that does not speak
            # UQI at all is told at the start-up deadline (the stall's message quotes its last line).
            self.ignore(line, f"not a UQI reply ({e})")
            return False
        self.replied = self.replied or not isinstance(reply, Info | TurnReply | ReadyOk)
        match reply:
            case IdName(name):
                self.name = name
            case IdAuthor(author):
                self.author = author
            case OptionSpec():
                key = reply.name.lower()
                if key not in self.options and len(self.options) >= MAX_OPTIONS:
                    too_many = f"declares more than {MAX_OPTIONS} options (the UQI limit, SPEC §4.1)"
                    raise EngineError(too_many, Termination.MALFORMED_REPLY)
                self.options[key] = reply
            case UqiOk(version):
                if version != PROTOCOL_VERSION:
                    raise EngineError(f"speaks UQI version {version}; the arena speaks {PROTOCOL_VERSION}")
                self.version = version
                return True
            case ErrorReply(text):
                self.errors.add(text)
                raise EngineError(f"answered uqi with an error: {_clip(text)}")
            case _:
                self.ignore(line, "not a handshake reply")
        return False

    def result(self) -> EngineId:
        assert self.version is not None
        return EngineId(self.name, self.author, self.options, self.version)


_ISREADY: Final = format_command(IsReady())


class ReadyPing(Exchange[None]):
    """Optional commands (``setoption``, ``newgame``) then ``isready`` -> ``readyok``.

    An ``error`` reply fails the exchange when commands precede the ping (the engine refused them: SPEC §5.4);
    a lone ping only logs it.
    """

    def __init__(
        self,
        engine: str,
        before: Sequence[str] = (),
        errors: ErrorTail | None = None,
        complaints: Complaints | None = None,
    ) -> None:
        super().__init__(engine, errors, complaints)
        self.before = list(before)

    def lines(self) -> list[str]:
        return [*self.before, _ISREADY]

    def feed(self, line: str) -> bool:
        try:
            reply = parse_reply(line)
        except UqiError as e:
            self.ignore(line, str(e))
            return False
        if isinstance(reply, ReadyOk):
            return True
        if isinstance(reply, ErrorReply):
            self.errors.add(reply.text)
            if self.before:
                # The command the error names (SPEC §5.4: its text starts with the command's word), else the last.
                sent = {b.split()[0] for b in self.before}
                word = reply.text.split()[0] if reply.text.split() else ""
                refused = word if word in sent else self.before[-1].split()[0]
                raise EngineError(f"refused {refused}: error {_clip(reply.text)}")
            self.complaints.warn(f"error {_clip(reply.text)}")
        elif not isinstance(reply, Info):
            self.ignore(line, "not an answer to isready")
        return False

    def result(self) -> None:
        return None


class SearchFailed(Exception):
    """Raised inside :class:`Search` when the engine loses the game by its reply."""

    def __init__(self, termination: Termination, detail: str) -> None:
        super().__init__(detail)
        self.termination = termination
        self.detail = detail


class Search(Exchange[tuple[Turn, str | None]], SearchSlots):
    """``position`` + ``go`` -> ``info``... -> ``turn``; keeps the last score; anything else loses the game.

    Its slots (:class:`~quarto_arena.arena.turns.SearchSlots`) are read and written by the compiled turn path too.
    """

    def __init__(
        self,
        engine: str,
        position: PositionCommand | str,
        go: Go | str,
        errors: ErrorTail | None = None,
        complaints: Complaints | None = None,
    ) -> None:
        # Exchange.__init__, inline (one Search a turn); a session always gives its own tail and complaints.
        self.engine = engine
        self.errors = ErrorTail() if errors is None else errors
        self.complaints = Complaints(engine) if complaints is None else complaints
        self.position = position
        """The position to search, or its ``position`` line already formatted."""
        self.go = go
        """The limits, or the ``go`` line already formatted."""
        self.score: str | None = None
        self.turn: Turn | None = None

    def lines(self) -> list[str]:
        position, go = self.position, self.go
        return [
            position if isinstance(position, str) else format_command(position),
            go if isinstance(go, str) else format_command(go),
        ]

    def feed(self, line: str) -> bool:
        try:
            reply: Reply = parse_reply(line)
        except UqiError as e:
            if line.split()[0] == "info":  # SPEC §5.3: a malformed info line is logged and otherwise ignored
                self.complaints.warn(f"ignored malformed info line {_clip(line)!r}: {e}")
                return False
            raise SearchFailed(Termination.MALFORMED_REPLY, f"malformed reply {_clip(line)!r}: {e}") from None
        if isinstance(reply, TurnReply):  # the usual line, before the match of the other kinds (measured: it pays)
            self.turn = reply.turn
            return True
        match reply:
            case Info(score=score):
                if score is not None:
                    self.score = str(score)
            case ErrorReply(text):
                self.errors.add(text)
                self.complaints.warn(f"error {_clip(text)}")
            case ReadyOk():
                pass  # a late readyok during a search
            case _:
                raise SearchFailed(Termination.MALFORMED_REPLY, f"unexpected reply during a search: {_clip(line)!r}")
        return False

    def result(self) -> tuple[Turn, str | None]:
        assert self.turn is not None
        return self.turn, self.score


def _clip(line: str, n: int = 80) -> str:
    """An engine's line as a message quotes it: cut to ``n`` characters, and safe for a terminal."""
    return safe_text(line, n)


# --- the session -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """What one search came to: a turn with its time and score, or the engine's failure."""

    turn: Turn | None
    """The turn the engine sent (syntax checked, legality not), None on failure."""
    ms: int
    """Milliseconds from writing ``go`` to reading ``turn``, on the arena's monotonic clock."""
    score: str | None = None
    """The last score the engine reported in this search."""
    termination: Termination | None = None
    """Why the engine loses, when it failed (time forfeit, malformed reply, disconnect)."""
    detail: str = ""
    """One line naming the engine and the failure."""


_answer: Final = maker(SearchOutcome)
"""``SearchOutcome(turn=..., ms=..., score=...)``, a search's success (one a turn), at under half the cost
(:func:`~quarto_arena.arena.memo.maker`)."""


class _Timeout:
    """What an exchange's waiter receives when its deadline passed with no answer (a sentinel, not raised)."""


_TIMEOUT: Final = _Timeout()
_UNSETTLED: Final = "(disconnected; exit status not yet known)"
"""The detail of a disconnect's outcome before :meth:`EngineSession.settled` (compared by identity)."""

# What an exchange comes to: None (finished), the failure, the end of the engine, or the deadline.
_Ending = None | EngineError | SearchFailed | PeerGone | _Timeout
# An exchange sent, to be waited for: its waiter, or None when the engine was not running (nothing sent).
_Sent: TypeAlias = "asyncio.Future[_Ending] | None"


class EngineSession(SessionSlots):
    """One engine, over a transport, from handshake to quit. Restartable after a crash (:meth:`restart`).

    Not safe for concurrent exchanges: one request at a time, except :meth:`stop` during a search. The session is
    its transport's line sink: each line goes straight to the running exchange; a line that comes between
    exchanges is dropped (and warned about, rate-limited).
    """

    def __init__(
        self,
        config: EngineConfig,
        *,
        deadlines: Deadlines | None = None,
        stderr_path: str | os.PathLike[str] | None = None,
        stderr_limit: int = DEFAULT_STDERR_LIMIT,
        transcript: Transcript | None = None,
        connector: Connector | None = None,
    ) -> None:
        self.config = config
        """How the engine is run."""
        self.connector = connector
        """Where the sessions of a remote engine come from (a server's slots); None for other engines."""
        self.deadlines = deadlines or Deadlines()
        """Deadlines of every phase."""
        self.stderr_path = None if stderr_path is None else Path(stderr_path)
        """Where the engine's standard error goes (appended), or None to discard it."""
        self.stderr_limit = stderr_limit
        """Bytes kept per standard error log file; the rest is dropped and the cut marked in the file."""
        self.transcript = transcript
        """Where every line is copied (``--debug``), or None."""
        self.id: EngineId | None = None
        """What the last handshake told, None before :meth:`start`."""
        self.errors = ErrorTail()
        """The last ``error`` lines the engine sent (and how many in all)."""
        self.complaints = Complaints(config.name)
        """Rate-limited warnings about this engine."""
        self.starts = 0
        """How many times the engine was started (a restart counts)."""
        self.pids: list[int] = []
        """Process ids (= process group ids) of every process started for this session, oldest first."""
        self._transport: Transport | None = None
        self._exchange: Exchange[Any] | None = None
        self._abandoned: Exchange[Any] | None = None
        """An exchange the arena gave up (its game abandoned): its late answer is expected, not the engine's fault."""
        self._waiter: asyncio.Future[_Ending] | None = None
        self._then: Callable[[SearchOutcome], None] | None = None
        """Who hears how the running search ended, called from the callback that ended it (see :meth:`search_soon`)."""
        self._clock: SearchClock | None = None
        """The clock of the running (or last) exchange: made with the session's first exchange, restarted for
        each one; its timer calls :meth:`_expired`."""
        self._search: Search | None = None
        """The exchange of :meth:`search_soon`, reset for each search."""
        self._identity: tuple[EngineId | None, EngineConfig, EngineIdentity] | None = None
        """The last :meth:`identity`, with the handshake and the config it was made from."""
        self._held: Mapping[str, str] = config.options
        """The options the engine process holds (its config's when it took them: compared by identity first)."""
        self._fresh = False
        """True when the engine must start afresh before its next game (an option was dropped: :meth:`configure`)."""

    @property
    def name(self) -> str:
        """The display name."""
        return self.config.name

    @property
    def transport(self) -> Transport | None:
        """The current transport (None before start)."""
        return self._transport

    @property
    def pid(self) -> int | None:
        """The engine's pid, when it runs as our child."""
        return None if self._transport is None else self._transport.pid

    @property
    def alive(self) -> bool:
        """True when the engine has been started and has neither died nor been closed (nor needs a fresh start:
        :meth:`configure`)."""
        return self._transport is not None and self.id is not None and not self._transport.gone and not self._fresh

    def exit_info(self) -> str | None:
        """How the engine ended, if it did (exit code, signal, disconnect)."""
        return None if self._transport is None else self._transport.exit_info()

    def describe(self) -> str:
        """``greedy (pid 123)``, for messages."""
        return self.name if self.pid is None else f"{self.name} (pid {self.pid})"

    def identity(self) -> EngineIdentity:
        """What the handshake told about the engine, with how it was run (for a game's record, its JSON Lines and
        PGN). Made again only when the handshake or the config changed (a restart): every game of a session
        records the same (equal) value."""
        ident, config = self.id, self.config
        made = self._identity
        if made is not None and made[0] is ident and made[1] is config:
            return made[2]
        identity = EngineIdentity(
            id_name=None if ident is None or ident.name is None else safe_text(ident.name),
            author=None if ident is None or ident.author is None else safe_text(ident.author),
            protocol=None if ident is None else ident.version,
            source=config.describe(),
            options=dict(config.options),
        )
        self._identity = (ident, config, identity)
        return identity

    def _fail(self, what: str, termination: Termination) -> EngineError:
        last = None if self._transport is None else self._transport.last_line
        tail = "" if last is None else f" (last line {_clip(last)!r})"
        return EngineError(f"{self.describe()}: {what}{tail}", termination)

    async def _died(self, what: str) -> EngineTerminated:
        if self._transport is not None:
            await self._transport.wait_exit(END_WAIT)  # so that the message can name the exit status
        last = None if self._transport is None else self._transport.last_line
        tail = "" if last is None else f", last line {_clip(last)!r}"
        return EngineTerminated(f"{self.describe()}: {what} ({self.exit_info() or 'gone'}{tail})")

    # --- the line sink (called by the transport) ---------------------------------------------------------------

    def line(self, text: str) -> None:
        """A line from the engine: fed to the running exchange."""
        exchange = self._exchange
        if exchange is None:
            abandoned = self._abandoned
            if abandoned is None:
                self.complaints.warn(f"ignored {_clip(text)!r}: no command is waiting for an answer")
                return
            # The answer to a command of a game the arena abandoned (a stop, the SPRT decided): it comes late by
            # the arena's doing, so it is read to its end quietly, not reported as the engine's protocol error.
            log.debug("%s: %r answers a command given up by the arena; ignored", self.name, _clip(text))
            try:
                finished = abandoned.feed(text)
            except (EngineError, SearchFailed):
                finished = True
            if finished:
                self._abandoned = None
            return
        try:
            if exchange.feed(text):
                self._end(None)
        except (EngineError, SearchFailed) as e:
            self._end(e)
            if isinstance(exchange, ReadyPing):
                # A refusal (``error`` to setoption or newgame) fails the exchange at once; the readyok still due
                # (SPEC §5.4) is expected, not an engine's stray line: read quietly.
                self._abandoned = exchange

    def bad_line(self, why: str) -> None:
        """An unreadable line: loses a search; elsewhere it is logged and ignored (SPEC §5.5)."""
        exchange = self._exchange
        if isinstance(exchange, Search):
            self._end(SearchFailed(Termination.MALFORMED_REPLY, f"{self.name}: malformed reply: {why}"))
        else:
            self.complaints.warn(f"ignored an unreadable line: {why}")

    def gone(self, why: str) -> None:
        """The engine is gone: the running exchange ends with that."""
        if self._exchange is not None:
            self._end(PeerGone(why))

    def _end(self, ending: _Ending) -> None:
        exchange, self._exchange = self._exchange, None
        clock = self._clock
        if clock is not None:
            if ending is None and self._transport is not None:
                clock.answered(self._transport.received_at)
            else:
                clock.stop()
        then = self._then
        if then is not None:
            self._then = None
            assert isinstance(exchange, Search)
            then(self._outcome(exchange, ending))
            return
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(ending)

    def _expired(self) -> None:
        # Before declaring the deadline passed, read what the engine has already sent: when the arena itself woke
        # late, its timer must not win over an answer that was waiting.
        if self._transport is not None:
            self._transport.poll()
        if self._exchange is not None:
            self._end(_TIMEOUT)

    def _send(self, exchange: Exchange[Any], timeout: float) -> _Sent:
        """Sends the exchange's lines at once and starts its deadline, ``timeout`` seconds from the write; the
        waiter that :meth:`_wait` awaits (None when the engine is not running: nothing was sent)."""
        t = self._transport
        if t is None or t.gone:
            return None
        text = "\n".join(exchange.lines()) + "\n"
        waiter: asyncio.Future[_Ending] = asyncio.get_running_loop().create_future()
        self._exchange, self._waiter, self._then = exchange, waiter, None
        self._abandoned = None
        clock = self._clock
        if clock is None:
            clock = self._clock = SearchClock(asyncio.get_running_loop(), self._expired)
        try:
            t.send_text(text)
        except PeerGone as e:
            self._end(e)
        # Started once the write has returned: a delay of ours before it must not be charged to the engine.
        clock.start(max(timeout, 0.0))
        return waiter

    def _give_up(self, waiter: asyncio.Future[_Ending]) -> None:
        """The sent exchange is no longer waited for: its late answer is read quietly (an exchange cancelled, or
        one whose companion's wait was)."""
        if self._clock is not None:
            self._clock.stop()
        if self._waiter is waiter:
            self._abandoned = self._exchange
            self._exchange = self._waiter = None

    async def _wait(
        self, exchange: Exchange[T], sent: _Sent, timeout: float, stalled: str, deadline_s: float | None = None
    ) -> T:
        """The result of an exchange :meth:`_send` sent, once the engine has answered; raises as :meth:`_run`."""
        if sent is None:
            raise await self._died(f"cannot {stalled}: the engine is not running")
        try:
            ending = await sent
        finally:
            self._give_up(sent)
        if ending is None:
            return exchange.result()
        if isinstance(ending, _Timeout):
            shown = timeout if deadline_s is None else deadline_s
            raise self._fail(f"no answer within {shown:g} s: {stalled}", Termination.STALL)
        if isinstance(ending, PeerGone):
            raise await self._died(f"exited during {stalled}")
        if isinstance(ending, EngineTerminated):
            raise ending
        assert isinstance(ending, EngineError)
        raise self._fail(str(ending), ending.termination)

    async def _run(self, exchange: Exchange[T], timeout: float, stalled: str, deadline_s: float | None = None) -> T:
        """Sends the exchange's lines and feeds it replies until it finishes or ``timeout`` seconds pass.

        ``deadline_s`` is the deadline as named in a stall message, when ``timeout`` is what is left of it.
        """
        return await self._wait(exchange, self._send(exchange, timeout), timeout, stalled, deadline_s)

    async def start(self, transport: Transport | None = None) -> EngineId:
        """Starts (or connects to) the engine, does the handshake, sets the configured options, waits until ready.

        ``transport``, when given, is used instead of starting the configured engine (protocol tests use
        :class:`~quarto_arena.arena.transport.testing.ScriptedTransport`; a server that engines connect to hands
        over the connection it accepted). Raises :class:`EngineError` (stall, refusal, unknown option or bad
        value: the option check happens before anything is sent) or :class:`EngineTerminated`; the engine is
        killed before the error is raised.
        """
        if self._transport is not None:
            await self.kill()
        self.id = None
        cfg = self.config
        if transport is None and cfg.remote is not None:
            # Before the start-up deadline begins: waiting for a free slot of a busy bot is not a stall.
            transport = await self._lease()
        started = time.monotonic()
        while True:
            await self._open(transport)
            try:
                left = self.deadlines.startup - (time.monotonic() - started)
                handshake = Handshake(cfg.name, self.errors, self.complaints)
                stalled = "the handshake (uqi -> uqiok)"
                ident = await self._run(handshake, left, stalled, deadline_s=self.deadlines.startup)
                break
            except EngineTerminated:
                await self.kill()
                # A ZeroMQ server switching sessions closes the socket an arena may just have reached (and may
                # still deal it the old session's last lines): a connection dropped before any handshake reply is
                # tried again while the start-up deadline allows.
                early = not handshake.replied
                time_left = self.deadlines.startup - (time.monotonic() - started) > 2 * RECONNECT_PAUSE
                if not (transport is None and cfg.endpoint is not None and early and time_left):
                    raise
                await asyncio.sleep(RECONNECT_PAUSE)
            except BaseException:
                await self.kill()
                raise
        try:
            setoptions = self._setoption_lines(ident, cfg.options)
            if setoptions:
                ping = ReadyPing(cfg.name, setoptions, self.errors, self.complaints)
                await self._run(ping, self.deadlines.ready, "setoption then isready")
        except BaseException:
            await self.kill()
            raise
        self.id = ident
        self._held = cfg.options
        self._fresh = False
        log.info("%s: started %s (%s)", self.describe(), ident.name or "?", cfg.describe())
        return ident

    async def _lease(self) -> Transport:
        """A new session with the remote bot, from the connector; EngineTerminated when there is none."""
        cfg = self.config
        if self.connector is None:
            raise EngineTerminated(f"{cfg.name}: {cfg.describe()} connects in, but the arena serves nothing (--listen)")
        try:
            return await self.connector(cfg, self.transcript)
        except OSError as e:
            raise EngineTerminated(f"{cfg.name}: {e.strerror or e}") from None

    async def _open(self, transport: Transport | None) -> None:
        """Starts the engine process, connects to its endpoint, or takes ``transport``; the session is its sink.

        The arena's own shortage (open files, memory, processes: :func:`~quarto_arena.arena.errors.arena_fault`) is
        no fault of the engine's: it is waited out for up to :data:`RESOURCE_WAIT` seconds (a burst of connections
        being shed), then raised as :class:`~quarto_arena.arena.errors.ArenaFault`, which no game is scored for.
        """
        cfg = self.config
        waited = 0.0
        while True:
            try:
                if transport is not None:
                    self._transport = transport
                elif cfg.endpoint is not None:
                    self._transport = await ZmqTransport.start(cfg.name, cfg.endpoint, transcript=self.transcript)
                else:
                    self._transport = await ProcessTransport.start(
                        cfg.name,
                        cfg.command,
                        cwd=cfg.cwd,
                        stderr_path=self.stderr_path,
                        stderr_limit=self.stderr_limit,
                        transcript=self.transcript,
                    )
                break
            except OSError as e:
                if not arena_fault(e):
                    raise EngineTerminated(f"{cfg.name}: {e.strerror or e}") from None
                if waited >= RESOURCE_WAIT:
                    raise ArenaFault(
                        f"the arena could not start {cfg.name} for {RESOURCE_WAIT:g} s: {e.strerror or e}"
                        " (the arena's own limit, not the engine's fault)"
                    ) from None
                if not waited:
                    log.warning("%s: cannot start it: %s (the arena's own limit): waiting", cfg.name, e.strerror or e)
                await asyncio.sleep(0.2)
                waited += 0.2
        self._transport.attach(self)
        self.starts += 1
        if self._transport.pid is not None:
            self.pids.append(self._transport.pid)

    def _setoption_lines(self, ident: EngineId, options: Mapping[str, str]) -> list[str]:
        """The ``setoption`` lines of ``options``, each checked against its declaration first."""
        out = []
        for key, value in options.items():
            spec = ident.options.get(key.lower())
            if spec is None:
                declared = ", ".join(s.name for s in ident.options.values()) or "none"
                raise self._fail(f"unknown option {key!r} (declared: {declared})", Termination.ENGINE_ERROR)
            try:
                out.append(format_command(SetOption(spec.name, spec.check(value))))
            except UqiError as e:
                raise self._fail(str(e), Termination.ENGINE_ERROR) from None
        return out

    def configure(self, config: EngineConfig) -> None:
        """Plays its next games as ``config``: the same engine, its options' values changed (a tune changes them
        between games).

        A running engine is sent the ``setoption`` lines of the values that changed with its next ``newgame``, in the
        same write, answered by the same ``readyok`` (SPEC §4.2: between games; no round trip of their own); one
        that is not running starts with them. An option dropped cannot be unset: the engine counts as not running,
        and its next game starts it afresh (the old process ended first). An engine that refuses a value fails that
        ``newgame``, which loses the game, as an engine that refuses its options always does.
        """
        old = self.config.options
        self.config = config
        if old is not config.options and {k.lower() for k in old} - {k.lower() for k in config.options}:
            self._fresh = True

    def _option_changes(self) -> list[str]:
        """The ``setoption`` lines of the options changed since the engine last took its options (:meth:`configure`);
        EngineError for a value its declaration refuses (nothing is sent then)."""
        options, held = self.config.options, self._held
        if options is held or options == held or self.id is None:
            return []
        return self._setoption_lines(self.id, {k: v for k, v in options.items() if held.get(k) != v})

    async def restart(self) -> EngineId:
        """Kills what is left of the engine and starts it again."""
        await self.kill()
        return await self.start()

    async def new_game(self, variant: Variant) -> None:
        """``newgame`` + ``isready`` under the new-game deadline; raises EngineError when refused or stalled."""
        (failure,) = await new_games((self,), variant)
        if failure is not None:
            raise failure

    async def ping(self) -> float:
        """``isready`` -> ``readyok`` under the ready deadline; returns the round trip in seconds (the yardstick of
        benchmarks/overhead.py: a round trip through the whole session, without a search)."""
        t0 = time.perf_counter()
        await self._run(ReadyPing(self.name, (), self.errors, self.complaints), self.deadlines.ready, "isready")
        return time.perf_counter() - t0

    async def search(self, position: PositionCommand | str, go: Go | str, deadline: float) -> SearchOutcome:
        """Sends ``position`` and ``go`` in one write and waits up to ``deadline`` seconds for the ``turn``.

        Each may be given as its line, already formatted with ``format_command`` (the referee keeps the
        ``position`` line of the game growing turn by turn instead of formatting the whole game again).

        The time is measured from just after the write to the moment the chunk holding the ``turn`` was read;
        when the deadline passes, what the engine already sent is read before a time forfeit is declared, and a
        turn read only once the arena woke up past the deadline is charged the deadline, not the arena's delay.

        Never raises for an engine fault: a timeout, malformed reply or disconnect comes back as a failed
        :class:`SearchOutcome`. The engine is then in an unknown state; the caller kills it.
        """
        done: asyncio.Future[SearchOutcome] = asyncio.get_running_loop().create_future()

        def then(out: SearchOutcome) -> None:
            if not done.done():
                done.set_result(out)

        self.search_soon(position, go, deadline, then)
        try:
            out = await done
        except BaseException:  # cancelled from outside: the search is abandoned
            self.abandon()
            raise
        return await self.settled(out)

    def search_soon(
        self, position: PositionCommand | str, go: Go | str, deadline: float, then: Callable[[SearchOutcome], None]
    ) -> None:
        """:meth:`search` without a coroutine: sends and returns at once; ``then`` gets the outcome, called from the
        event loop's callback that ended the search (the line's reader, the deadline's timer), or before this
        returns when the engine is not running or the write fails.

        The referee answers the next engine from ``then``, so that a turn costs one pass of the event loop, not a
        task's wake-up besides. A disconnect's outcome is not final: pass it to :meth:`settled` (which waits a
        moment for the exit status to name). :meth:`abandon` gives the search up.
        """
        t = self._transport
        if t is None or t.gone:
            then(SearchOutcome(None, 0, None, Termination.DISCONNECT, f"{self.name}: not running"))
            return
        exchange = self._search
        if exchange is None:
            exchange = self._search = Search(self.name, position, go, self.errors, self.complaints)
        else:  # one Search a session, made anew for each search (the last one's outcome was handed on at its end)
            exchange.position, exchange.go, exchange.score, exchange.turn = position, go, None, None
        p = position if isinstance(position, str) else format_command(position)
        g = go if isinstance(go, str) else format_command(go)
        clock = self._clock
        if clock is None:
            clock = self._clock = SearchClock(asyncio.get_running_loop(), self._expired)
        self._exchange, self._waiter, self._then = exchange, None, then
        self._abandoned = None
        try:
            t.send_text(f"{p}\n{g}\n")
        except PeerGone as e:
            clock.start(deadline)
            self._end(e)
            return
        # Started once the write has returned: a delay of ours before it must not be charged to the engine.
        clock.start(deadline)

    def _resend(self, text: str, deadline: float) -> None:
        """The compiled turn path's write to this engine failed (nothing was written): :meth:`search_soon`'s write
        and its end, once more in Python, so that the failure is reported as there."""
        clock = self._clock
        assert clock is not None and self._transport is not None  # the compiled path checked both
        try:
            self._transport.send_text(text)
        except PeerGone as e:
            clock.start(deadline)
            self._end(e)
            return
        clock.start(deadline)

    def abandon(self) -> None:
        """Gives up the running search (its game was abandoned): its late answer is read quietly, and nobody hears
        of its end. Nothing when no search runs."""
        if self._then is not None:
            self._then = None
            self._abandoned, self._exchange = self._exchange, None
            if self._clock is not None:
                self._clock.stop()

    def _outcome(self, exchange: Search, ending: _Ending) -> SearchOutcome:
        clock = self._clock
        assert clock is not None  # made by the search
        if ending is None:
            assert exchange.turn is not None  # the exchange finished: it has its turn
            return _answer(turn=exchange.turn, ms=clock.answer_ms(), score=exchange.score)
        ms = clock.elapsed_ms()
        if isinstance(ending, _Timeout):
            return SearchOutcome(None, ms, exchange.score, Termination.TIME_FORFEIT, f"{self.name}: no turn in {ms} ms")
        if isinstance(ending, SearchFailed):
            detail = ending.detail if ending.detail.startswith(f"{self.name}: ") else f"{self.name}: {ending.detail}"
            return SearchOutcome(None, ms, exchange.score, ending.termination, detail)
        return SearchOutcome(None, ms, exchange.score, Termination.DISCONNECT, _UNSETTLED)

    async def settled(self, out: SearchOutcome) -> SearchOutcome:
        """The outcome of :meth:`search_soon` made final: a disconnect waits a moment for the exit status it names."""
        if out.detail is not _UNSETTLED:
            return out
        if self._transport is not None:
            await self._transport.wait_exit(END_WAIT)  # so that the record can name the exit status
        detail = f"{self.name}: disconnected during a search ({self.exit_info()})"
        return SearchOutcome(None, out.ms, out.score, Termination.DISCONNECT, detail)

    async def stop(self) -> None:
        """Sends ``stop`` (the running search still ends with its ``turn``)."""
        if self._transport is not None:
            self._transport.send_lines(("stop",))

    async def quit(self) -> None:
        """Ends the session politely: ``quit``, the quit deadline, then the kill and the reaping."""
        if self._transport is not None:
            await self._transport.close(grace=self.deadlines.quit)
        self._drop_timer()

    async def kill(self) -> None:
        """Ends the session at once: kills the process group (or ends the ZeroMQ session) and reaps."""
        if self._transport is not None:
            await self._transport.close(grace=0, quit=False)
        self._drop_timer()

    def _drop_timer(self) -> None:
        if self._clock is not None:
            self._clock.close()
            self._clock = None


@by_identity  # looked up by identity: a run's games share one variant object
@functools.lru_cache(maxsize=64)
def _newgame_line(variant: Variant) -> str:
    """The ``newgame`` line of a variant (kept: every game sends it twice)."""
    return format_command(NewGame(variant))


async def new_games(sessions: Sequence[EngineSession], variant: Variant) -> list[EngineError | None]:
    """``newgame`` + ``isready`` to every session at once, each under its own new-game deadline; then each one's
    failure (refused, stalled, gone), in order, or None.

    Both engines of a game get ready together: one wait of the event loop for both answers rather than a round trip
    and a task wake-up after the other. Every exchange is waited for to its end (each is bounded by its deadline),
    so that no session is left with an exchange running; cancelled, the ones not yet waited for are given up.
    """
    line = _newgame_line(variant)
    found: dict[EngineSession, EngineError | None] = {}
    started = []
    for session in dict.fromkeys(sessions):  # a session given twice (an engine playing itself) is asked once
        try:
            # Options changed since its last game go in the same write, answered by the same readyok.
            before = [*session._option_changes(), line]
        except EngineError as e:  # a value its declaration refuses: nothing is sent
            found[session] = e
            continue
        ping = ReadyPing(session.name, before, session.errors, session.complaints)
        started.append((session, ping, session._send(ping, session.deadlines.newgame)))
    try:
        for session, ping, sent in started:
            try:
                await session._wait(ping, sent, session.deadlines.newgame, "newgame then isready")
                session._held = session.config.options
                found[session] = None
            except EngineError as e:
                found[session] = e
    finally:
        for session, _, sent in started:
            if session not in found and sent is not None:
                session._give_up(sent)
    return [found[session] for session in sessions]
