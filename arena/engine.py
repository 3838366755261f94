"""One engine session: start-up handshake, options, new games, searches, pings, and the end, each under a deadline.

The request/response exchanges (:class:`Handshake`, :class:`ReadyPing`, :class:`Search`) are small state machines
at module level: each says which lines to send and consumes the engine's replies until it is finished, so each can
be tested alone. :class:`EngineSession` drives them over a :class:`~quarto_arena.arena.transports.Transport`
with the arena's own monotonic clock.

Failures come in two levels, as in python-chess: :class:`EngineError` (the engine misbehaved: stalled, refused,
sent nonsense) and :class:`EngineTerminated` (it died). Both carry the :class:`Termination` a game would record,
and a one-line message naming the engine, its pid and its last line. A search never raises for an engine fault:
it returns a :class:`SearchOutcome` that says who is to blame and why, because losing the game is the referee's
call, not an exception.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from quarto_arena.arena.records import Termination
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.transports import (
    BadLine,
    PeerGone,
    ProcessTransport,
    Transcript,
    Transport,
    ZmqTransport,
)
from quarto_arena.protocol.rules import Turn, Variant
from quarto_arena.protocol.uqi import (
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

__all__ = [
    "Deadlines",
    "EngineConfig",
    "EngineError",
    "EngineSession",
    "EngineTerminated",
    "Exchange",
    "Handshake",
    "ReadyPing",
    "Search",
    "SearchOutcome",
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
    time_control: TimeControl | None = None
    """This engine's own time control (time odds), overriding the game's."""

    def __post_init__(self) -> None:
        if bool(self.command) == (self.endpoint is not None):
            raise ValueError(f"engine {self.name}: give exactly one of a command and an endpoint")

    def describe(self) -> str:
        """The command line or the endpoint, for messages."""
        return self.endpoint if self.endpoint is not None else " ".join(self.command)


class EngineError(Exception):
    """The engine misbehaved (stalled, refused, or answered nonsense). The message is one line."""

    def __init__(self, message: str, termination: Termination = Termination.ENGINE_ERROR) -> None:
        super().__init__(message)
        self.termination = termination
        """The termination reason a game records for this failure."""


class EngineTerminated(EngineError):
    """The engine died or dropped the connection. The message carries its exit code or signal."""

    def __init__(self, message: str) -> None:
        super().__init__(message, Termination.DISCONNECT)


# --- exchanges -------------------------------------------------------------------------------------------------


class Exchange(abc.ABC, Generic[T]):
    """One request and the replies it owns until it is finished."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        """Display name, for messages."""
        self.errors: list[str] = []
        """``error`` lines the engine sent during this exchange."""

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
        log.warning("%s: ignored %r: %s", self.engine, line, why)


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
    """``uqi 1`` -> ``id``/``option`` lines -> ``uqiok 1``."""

    def __init__(self, engine: str) -> None:
        super().__init__(engine)
        self.name: str | None = None
        self.author: str | None = None
        self.options: dict[str, OptionSpec] = {}
        self.version: int | None = None

    def lines(self) -> list[str]:
        return [format_command(Uqi(PROTOCOL_VERSION))]

    def feed(self, line: str) -> bool:
        try:
            reply = parse_reply(line)
        except UqiError as e:
            self.ignore(line, str(e))
            return False
        match reply:
            case IdName(name):
                self.name = name
            case IdAuthor(author):
                self.author = author
            case OptionSpec():
                self.options[reply.name.lower()] = reply
            case UqiOk(version):
                if version != PROTOCOL_VERSION:
                    raise EngineError(f"speaks UQI version {version}; the arena speaks {PROTOCOL_VERSION}")
                self.version = version
                return True
            case ErrorReply(text):
                raise EngineError(f"answered uqi with an error: {text}")
            case _:
                self.ignore(line, "not a handshake reply")
        return False

    def result(self) -> EngineId:
        assert self.version is not None
        return EngineId(self.name, self.author, self.options, self.version)


class ReadyPing(Exchange[None]):
    """Optional commands (``setoption``, ``newgame``) then ``isready`` -> ``readyok``.

    An ``error`` reply fails the exchange when commands precede the ping (the engine refused them: SPEC §5.4);
    a lone ping only logs it.
    """

    def __init__(self, engine: str, before: Sequence[str] = ()) -> None:
        super().__init__(engine)
        self.before = list(before)

    def lines(self) -> list[str]:
        return [*self.before, format_command(IsReady())]

    def feed(self, line: str) -> bool:
        try:
            reply = parse_reply(line)
        except UqiError as e:
            self.ignore(line, str(e))
            return False
        if isinstance(reply, ReadyOk):
            return True
        if isinstance(reply, ErrorReply):
            self.errors.append(reply.text)
            if self.before:
                raise EngineError(f"refused {self.before[-1].split()[0]}: error {reply.text}")
            log.warning("%s: error %s", self.engine, reply.text)
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


class Search(Exchange[tuple[Turn, str | None]]):
    """``position`` + ``go`` -> ``info``... -> ``turn``; keeps the last score; anything else loses the game."""

    def __init__(self, engine: str, position: PositionCommand | str, go: Go | str) -> None:
        super().__init__(engine)
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
                log.warning("%s: ignored malformed info line %r: %s", self.engine, line, e)
                return False
            raise SearchFailed(Termination.MALFORMED_REPLY, f"malformed reply {_clip(line)!r}: {e}") from None
        match reply:
            case TurnReply(turn):
                self.turn = turn
                return True
            case Info(score=score):
                if score is not None:
                    self.score = str(score)
            case ErrorReply(text):
                self.errors.append(text)
                log.warning("%s: error %s", self.engine, text)
            case ReadyOk():
                log.debug("%s: late readyok during a search ignored", self.engine)
            case _:
                raise SearchFailed(Termination.MALFORMED_REPLY, f"unexpected reply during a search: {_clip(line)!r}")
        return False

    def result(self) -> tuple[Turn, str | None]:
        assert self.turn is not None
        return self.turn, self.score


def _clip(line: str, n: int = 80) -> str:
    return line if len(line) <= n else line[:n] + "..."


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

    @property
    def ok(self) -> bool:
        """True when a turn arrived in time."""
        return self.turn is not None


class EngineSession:
    """One engine, over a transport, from handshake to quit. Restartable after a crash (:meth:`restart`).

    Not safe for concurrent exchanges: one request at a time, except :meth:`stop` during a search.
    """

    def __init__(
        self,
        config: EngineConfig,
        *,
        deadlines: Deadlines | None = None,
        stderr_path: str | os.PathLike[str] | None = None,
        transcript: Transcript | None = None,
    ) -> None:
        self.config = config
        """How the engine is run."""
        self.deadlines = deadlines or Deadlines()
        """Deadlines of every phase."""
        self.stderr_path = None if stderr_path is None else Path(stderr_path)
        """Where the engine's standard error goes (appended), or None to discard it."""
        self.transcript = transcript
        """Where every line is copied (``--debug``), or None."""
        self.id: EngineId | None = None
        """What the last handshake told, None before :meth:`start`."""
        self.errors: list[str] = []
        """Every ``error`` line the engine sent, in order."""
        self.starts = 0
        """How many times the engine was started (a restart counts)."""
        self.pids: list[int] = []
        """Process ids (= process group ids) of every process started for this session, oldest first."""
        self._transport: Transport | None = None

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
        """True when the engine has been started and has neither died nor been closed."""
        return self._transport is not None and self.id is not None and not self._transport.gone

    def exit_info(self) -> str | None:
        """How the engine ended, if it did (exit code, signal, disconnect)."""
        return None if self._transport is None else self._transport.exit_info()

    def describe(self) -> str:
        """``greedy (pid 123)``, for messages."""
        return self.name if self.pid is None else f"{self.name} (pid {self.pid})"

    def _fail(self, what: str, termination: Termination) -> EngineError:
        last = None if self._transport is None else self._transport.last_line
        tail = "" if last is None else f" (last line {_clip(last)!r})"
        return EngineError(f"{self.describe()}: {what}{tail}", termination)

    def _died(self, what: str) -> EngineTerminated:
        last = None if self._transport is None else self._transport.last_line
        tail = "" if last is None else f", last line {_clip(last)!r}"
        return EngineTerminated(f"{self.describe()}: {what} ({self.exit_info() or 'gone'}{tail})")

    async def _run(self, exchange: Exchange[T], timeout: float, stalled: str, deadline_s: float | None = None) -> T:
        """Sends the exchange's lines and feeds it replies until it finishes or ``timeout`` seconds pass.

        ``deadline_s`` is the deadline as named in a stall message, when ``timeout`` is what is left of it.
        """
        t = self._transport
        if t is None or t.gone:
            raise self._died(f"cannot {stalled}: the engine is not running")
        try:
            # One timer for the whole exchange, on the loop's clock (time.monotonic): asyncio.wait_for per line
            # would cost a task and a timer for every line read.
            async with asyncio.timeout(timeout):
                await t.send_lines(exchange.lines())
                while True:
                    try:
                        line = await t.read_line()
                    except BadLine as e:
                        exchange.ignore("", str(e))
                        continue
                    if exchange.feed(line):
                        self.errors.extend(exchange.errors)
                        return exchange.result()
        except TimeoutError:
            shown = timeout if deadline_s is None else deadline_s
            raise self._fail(f"no answer within {shown:g} s: {stalled}", Termination.STALL) from None
        except PeerGone:
            raise self._died(f"exited during {stalled}") from None
        except EngineTerminated:
            raise
        except EngineError as e:
            self.errors.extend(exchange.errors)
            raise self._fail(str(e), e.termination) from None

    async def start(self, transport: Transport | None = None) -> EngineId:
        """Starts (or connects to) the engine, does the handshake, sets the configured options, waits until ready.

        ``transport``, when given, is used instead of starting the configured engine (protocol tests use a
        :class:`~quarto_arena.arena.transports.ScriptedTransport`). Raises :class:`EngineError` (stall, refusal,
        unknown option or bad value: the option check happens before anything is sent) or
        :class:`EngineTerminated`; the engine is killed before the error is raised.
        """
        if self._transport is not None:
            await self.kill()
        self.id = None
        started = time.monotonic()
        cfg = self.config
        try:
            if transport is not None:
                self._transport = transport
            elif cfg.endpoint is not None:
                self._transport = await ZmqTransport.start(cfg.name, cfg.endpoint, transcript=self.transcript)
            else:
                self._transport = await ProcessTransport.start(
                    cfg.name, cfg.command, cwd=cfg.cwd, stderr_path=self.stderr_path, transcript=self.transcript
                )
        except OSError as e:
            raise EngineTerminated(f"{cfg.name}: {e.strerror or e}") from None
        self.starts += 1
        if self._transport.pid is not None:
            self.pids.append(self._transport.pid)
        try:
            left = self.deadlines.startup - (time.monotonic() - started)
            ident = await self._run(
                Handshake(cfg.name), left, "the handshake (uqi -> uqiok)", deadline_s=self.deadlines.startup
            )
            setoptions = [format_command(SetOption(spec.name, value)) for spec, value in self._checked_options(ident)]
            if setoptions:
                await self._run(ReadyPing(cfg.name, setoptions), self.deadlines.ready, "setoption then isready")
        except BaseException:
            await self.kill()
            raise
        self.id = ident
        log.info("%s: started %s (%s)", self.describe(), ident.name or "?", cfg.describe())
        return ident

    def _checked_options(self, ident: EngineId) -> list[tuple[OptionSpec, str | None]]:
        out = []
        for key, value in self.config.options.items():
            spec = ident.options.get(key.lower())
            if spec is None:
                declared = ", ".join(s.name for s in ident.options.values()) or "none"
                raise self._fail(f"unknown option {key!r} (declared: {declared})", Termination.ENGINE_ERROR)
            try:
                out.append((spec, spec.check(value)))
            except UqiError as e:
                raise self._fail(str(e), Termination.ENGINE_ERROR) from None
        return out

    async def restart(self) -> EngineId:
        """Kills what is left of the engine and starts it again."""
        await self.kill()
        return await self.start()

    async def new_game(self, variant: Variant) -> None:
        """``newgame`` + ``isready`` under the new-game deadline; raises EngineError when refused or stalled."""
        await self._run(
            ReadyPing(self.name, [format_command(NewGame(variant))]), self.deadlines.newgame, "newgame then isready"
        )

    async def ping(self) -> float:
        """``isready`` -> ``readyok`` under the ready deadline; returns the round trip in seconds."""
        t0 = time.perf_counter()
        await self._run(ReadyPing(self.name), self.deadlines.ready, "isready")
        return time.perf_counter() - t0

    async def search(self, position: PositionCommand | str, go: Go | str, deadline: float) -> SearchOutcome:
        """Sends ``position`` and ``go`` in one write and waits up to ``deadline`` seconds for the ``turn``.

        Each may be given as its line, already formatted with ``format_command`` (the referee keeps the
        ``position`` line of the game growing turn by turn instead of formatting the whole game again).

        Never raises for an engine fault: a timeout, malformed reply or disconnect comes back as a failed
        :class:`SearchOutcome`. The engine is then in an unknown state; the caller kills it.
        """
        t = self._transport
        if t is None or t.gone:
            return SearchOutcome(None, 0, None, Termination.DISCONNECT, f"{self.name}: not running")
        exchange = Search(self.name, position, go)
        t0 = time.monotonic()
        try:
            # One timer for the whole search (see _run); the loop's clock is time.monotonic, as t0 is.
            async with asyncio.timeout(deadline):
                await t.send_lines(exchange.lines())
                while not exchange.feed(await t.read_line()):
                    pass
        except TimeoutError:
            ms = round((time.monotonic() - t0) * 1000)
            return SearchOutcome(None, ms, exchange.score, Termination.TIME_FORFEIT, f"{self.name}: no turn in {ms} ms")
        except SearchFailed as e:
            return self._lost(exchange, t0, e.termination, f"{self.name}: {e.detail}")
        except BadLine as e:
            return self._lost(exchange, t0, Termination.MALFORMED_REPLY, f"{self.name}: malformed reply: {e}")
        except PeerGone:
            return self._lost(
                exchange, t0, Termination.DISCONNECT, f"{self.name}: disconnected during a search ({self.exit_info()})"
            )
        finally:
            self.errors.extend(exchange.errors)
        ms = round((time.monotonic() - t0) * 1000)
        return SearchOutcome(exchange.turn, ms, exchange.score)

    def _lost(self, exchange: Search, t0: float, termination: Termination, detail: str) -> SearchOutcome:
        ms = round((time.monotonic() - t0) * 1000)
        return SearchOutcome(None, ms, exchange.score, termination, detail)

    async def stop(self) -> None:
        """Sends ``stop`` (the running search still ends with its ``turn``)."""
        if self._transport is not None:
            await self._transport.send_line("stop")

    async def quit(self) -> None:
        """Ends the session politely: ``quit``, the quit deadline, then the kill and the reaping."""
        if self._transport is not None:
            await self._transport.close(grace=self.deadlines.quit)

    async def kill(self) -> None:
        """Ends the session at once: kills the process group (or closes the socket) and reaps."""
        if self._transport is not None:
            await self._transport.close(grace=0, quit=False)
