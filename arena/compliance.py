"""The UQI compliance check behind ``quarto-arena check ENGINE``: numbered steps against a real engine.

Like fastchess's built-in checker, each step is one small function that talks to the engine over its real transport
(a process over stdio, or a ZeroMQ endpoint) under short deadlines of its own, and fails with a one-line reason that
quotes the offending line. Every line in both directions is recorded with a time stamp, so a failing step comes back
with the exchange that failed. The check stops at the first failing step unless asked to keep going (it then
restarts the engine before the next step, since its state is unknown), and whatever happens — a failure, an
exception, Ctrl-C — every process it started is killed with its whole process group and reaped before
:func:`run_check` returns or raises.

A step fails only for what SPEC.md makes a rule; a doubtful but tolerated behaviour (a ``go infinite`` answered
before ``stop``, a search that overran its time, an unsupported variant, a malformed ``info`` line) passes with a
warning. Like any conformance tester (SPEC §4.9), the check sends lines an arena never sends: an unknown command,
malformed ones, and commands during a search.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import re
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, NoReturn

from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import IllegalTurn, Position, Turn, Variant
from quarto_arena.protocol.uqi import (
    PROTOCOL_VERSION,
    ErrorReply,
    Go,
    IdAuthor,
    IdName,
    Info,
    NewGame,
    OptionSpec,
    OptionType,
    PositionCommand,
    ReadyOk,
    Reply,
    SetOption,
    TurnReply,
    Uqi,
    UqiError,
    UqiOk,
    format_command,
    parse_command,
    parse_reply,
)

from .engine import Connector, EngineConfig
from .transport import BadLine, PeerGone, ProcessTransport, Transport, ZmqTransport

__all__ = [
    "STEPS",
    "CheckReport",
    "CheckTimeouts",
    "Checker",
    "IoLine",
    "Status",
    "Step",
    "StepFailed",
    "StepResult",
    "StepSkipped",
    "format_report",
    "run_check",
]

log = logging.getLogger(__name__)

_MAX_WARNINGS: Final = 5
_STDERR_TAIL: Final = 10
_SHOWN_LINES: Final = 60
_NAME_WIDTH: Final = 24
_CLIP: Final = 120
_BARE_GO_SECONDS: Final = 5.0
"""A bare ``go`` that takes longer passes with a warning (SPEC §4.5: the engine should answer within seconds)."""


@dataclass(frozen=True, slots=True)
class CheckTimeouts:
    """How long the check waits at each kind of step, in seconds (``--timeout-scale`` multiplies them)."""

    startup: float = 10.0
    """Process start (or connect) to ``uqiok`` (SPEC §4.1)."""
    ready: float = 5.0
    """Commands then ``isready`` to ``readyok``, with any ``error`` line before it (SPEC §4.7)."""
    quit: float = 1.0
    """``quit`` or end of input to the engine's exit (SPEC §3.2)."""
    search_slack: float = 1.0
    """Allowed on top of a search's own time limit (``movetime``, ``time``), and to answer ``stop``."""
    search_safety: float = 10.0
    """A search with only a depth or node limit."""
    quiet: float = 0.3
    """How long to listen for a line that must not come (a second ``turn``)."""
    infinite: float = 0.2
    """How long ``go infinite`` runs before ``isready`` and ``stop`` (not scaled: it is part of the test)."""
    margin: float = 0.05
    """Overrun of a search's time tolerated before a warning, as the arena's time margin (not scaled)."""

    def scaled(self, factor: float) -> CheckTimeouts:
        """The same timeouts, every deadline multiplied by ``factor`` (for slow machines, or short tests)."""
        if factor <= 0:
            raise ValueError(f"timeout scale must be positive, not {factor:g}")
        return replace(
            self,
            startup=self.startup * factor,
            ready=self.ready * factor,
            quit=self.quit * factor,
            search_slack=self.search_slack * factor,
            search_safety=self.search_safety * factor,
            quiet=self.quiet * factor,
        )


class Status(enum.Enum):
    """How a step ended."""

    PASS = "ok"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class IoLine:
    """One recorded line: ``>`` arena to engine, ``<`` engine to arena, ``#`` an event (start, exit, kill)."""

    at: float
    """Seconds since the step began, on the monotonic clock."""
    direction: str
    """``>``, ``<`` or ``#``."""
    text: str
    """The line without its terminator (a ``\\r`` shown as the two characters ``\\r``)."""

    def __str__(self) -> str:
        return f"{self.at:7.3f} {self.direction} {self.text}"


@dataclass(frozen=True, slots=True)
class StepResult:
    """The outcome of one step."""

    number: int
    """The step's number (1 = start-up)."""
    name: str
    """The step's short name."""
    status: Status
    """Passed, failed or skipped."""
    reason: str = ""
    """One line: why it failed or was skipped (empty when it passed)."""
    warnings: tuple[str, ...] = ()
    """Tolerated deviations, one line each."""
    transcript: tuple[IoLine, ...] = ()
    """Every line of the step, both directions, with time stamps."""
    stderr: tuple[str, ...] = ()
    """The last lines the engine wrote to standard error, for a failed step of a process engine."""
    seconds: float = 0.0
    """How long the step took."""


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The result of a compliance check."""

    engine: str
    """The engine's display name."""
    target: str
    """Its command line or endpoint."""
    engine_id: str | None
    """What it said in ``id name``, once the handshake got that far."""
    steps: tuple[StepResult, ...]
    """The steps that ran, in order (without ``--keep-going``, up to the first failure)."""
    total_steps: int
    """How many steps the check has (more than ran when it stopped early)."""
    started: bool = True
    """False when the engine could not even be started (no such command, unusable endpoint)."""
    pids: tuple[int, ...] = ()
    """Every process (= process group) id started for the check, so callers can verify none is left."""

    @property
    def complies(self) -> bool:
        """True when every step ran and none failed."""
        return self.started and len(self.steps) == self.total_steps and self.first_failure is None

    @property
    def first_failure(self) -> StepResult | None:
        """The first failed step, if any."""
        return next((s for s in self.steps if s.status is Status.FAIL), None)

    @property
    def failed(self) -> tuple[int, ...]:
        """Numbers of the failed steps."""
        return tuple(s.number for s in self.steps if s.status is Status.FAIL)


class StepFailed(Exception):
    """A step's verdict: the engine does not comply. The message is one line and quotes the offending line."""


class StepSkipped(Exception):
    """The step does not apply to this engine or transport (or the engine could not be restarted for it)."""


class _Silence(StepFailed):
    """No line came before the deadline (a failure, except where silence is what a step wants)."""


class CannotStart(Exception):
    """The engine's process could not be started, or its endpoint is unusable."""


_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _clip(text: str, n: int = _CLIP) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _visible(text: str) -> str:
    """An engine's text as the check prints it: control characters (a terminal's escape sequences, ``\\r``) shown
    as escapes, so that what an engine sends can never drive the user's terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _q(line: str) -> str:
    """A line quoted for a reason."""
    return repr(_clip(line))


class _Deadline:
    """A point on the monotonic clock, with the budget it was made from (for messages)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()


class _Recorder:
    """The transcript of the running step."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.lines: list[IoLine] = []

    def reset(self) -> tuple[IoLine, ...]:
        out = tuple(self.lines)
        self.lines = []
        self.t0 = time.monotonic()
        return out

    def add(self, direction: str, text: str) -> None:
        self.lines.append(IoLine(round(time.monotonic() - self.t0, 3), direction, _visible(text)))


class _Link:
    """One transport whose every line is recorded; engine faults become :class:`StepFailed`."""

    def __init__(self, transport: Transport, recorder: _Recorder) -> None:
        self.transport = transport
        self.recorder = recorder

    @property
    def is_process(self) -> bool:
        return isinstance(self.transport, ProcessTransport)

    async def send(self, *lines: str) -> None:
        for line in lines:
            self.recorder.add(">", line)
        try:
            self.transport.send_lines(lines)
        except PeerGone as e:
            self.recorder.add("#", str(e))
            raise StepFailed(f"cannot send {_q(lines[0])}: {e}") from None

    async def read(self, deadline: _Deadline, waiting_for: str) -> str:
        """The next line, or :class:`StepFailed` naming what was awaited when time runs out or the engine is gone."""
        left = deadline.left()
        try:
            if left <= 0:
                raise TimeoutError
            line = await asyncio.wait_for(self.transport.read_line(), left)
        except TimeoutError:
            last = self.transport.last_line
            tail = "" if last is None else f" (last line from the engine: {_q(last)})"
            raise _Silence(f"no {waiting_for} within {deadline.seconds:.3g} s{tail}") from None
        except PeerGone as e:
            self.recorder.add("#", str(e))
            raise StepFailed(f"{e} while waiting for {waiting_for}") from None
        except BadLine as e:
            self.recorder.add("<", f"<{e}>")
            raise StepFailed(f"unreadable line from the engine ({e}) while waiting for {waiting_for}") from None
        self.recorder.add("<", line)
        return line

    async def read_quiet(self, seconds: float) -> str | None:
        """The next line if one comes within ``seconds``, else None (for lines that must not come)."""
        try:
            return await self.read(_Deadline(seconds), "line")
        except _Silence:
            return None

    async def lines_within(self, seconds: float) -> AsyncIterator[str]:
        """Every line that comes within ``seconds`` (a window in which lines may come, or must not)."""
        wait = _Deadline(seconds)
        while (left := wait.left()) > 0:
            line = await self.read_quiet(left)
            if line is None:
                return
            yield line

    async def close(self, quit_grace: float | None = None) -> None:
        """Ends the connection: kills the process group and reaps it, or closes the socket (after ``quit``)."""
        t = self.transport
        if isinstance(t, ProcessTransport):
            await t.close(grace=0, quit=False)
            self.recorder.add("#", f"killed process group {t.pgid} ({t.exit_info()})")
        else:
            # A ZeroMQ server outlives the session: a quit lets it serve the next arena at once.
            await t.close(grace=quit_grace or 0.2, quit=not t.gone)


def _parse(line: str, where: str) -> Reply:
    try:
        return parse_reply(line)
    except UqiError as e:
        raise StepFailed(f"malformed line {_q(line)} {where}: {e}") from None


def _reply(ck: Checker, line: str, where: str) -> Reply | None:
    """The reply on ``line``; None for a malformed ``info`` line, which an arena logs and ignores (SPEC §5.3): a
    warning here. Any other malformed line fails the step."""
    try:
        return parse_reply(line)
    except UqiError as e:
        if line.split()[0] != "info":
            raise StepFailed(f"malformed line {_q(line)} {where}: {e}") from None
        ck.warn(f"malformed info line {_q(line)} {where}: {e} (an arena ignores it)")
        return None


def _fail(reason: str) -> NoReturn:
    raise StepFailed(reason)


# --- the checker -----------------------------------------------------------------------------------------------


class Checker:
    """The engine under check and what the steps learn about it; steps are functions of a Checker."""

    def __init__(self, config: EngineConfig, timeouts: CheckTimeouts, connector: Connector | None = None) -> None:
        self.config = config
        """The engine: command line, endpoint, or a remote bot."""
        self.connector = connector
        """Where a remote bot's sessions come from (a server's slots)."""
        self.timeouts = timeouts
        """The deadlines."""
        self.recorder = _Recorder()
        """The running step's transcript."""
        self.link: _Link | None = None
        """The current connection, if any."""
        self.engine_id: str | None = None
        """``id name`` of the last handshake."""
        self.options: list[OptionSpec] = []
        """Options declared in the last handshake."""
        self.unsupported: set[Variant] = set()
        """Variants the engine refused with ``error newgame unsupported``."""
        self.pids: list[int] = []
        """Every process started."""
        self.warnings: list[str] = []
        """Warnings of the running step."""
        self.dirty = False
        """True after a failed step: the engine's state is unknown, so the next step starts it afresh."""
        self._tmp = Path(tempfile.mkdtemp(prefix="quarto-check-"))
        self.stderr_path = self._tmp / "stderr.log"
        """Where an engine process's standard error goes (shown with a failed step)."""

    @property
    def zmq(self) -> bool:
        """True when the engine speaks over ZeroMQ (an endpoint, or a remote bot) rather than as a process."""
        return self.config.endpoint is not None or self.config.remote is not None

    @property
    def session(self) -> _Link:
        """The live connection (steps after the first run on it)."""
        assert self.link is not None
        return self.link

    def warn(self, message: str) -> None:
        """Records a tolerated deviation for the running step."""
        if message not in self.warnings:
            log.info("%s: warning: %s", self.config.name, message)
            self.warnings.append(message)

    async def open(self) -> _Link:
        """Starts the engine process (or connects to the endpoint) as the current link. Raises CannotStart."""
        await self.close_link()
        cfg = self.config
        try:
            if cfg.remote is not None:
                if self.connector is None:
                    raise CannotStart(f"{cfg.describe()} connects in, but the check serves nothing (--listen)")
                transport: Transport = await self.connector(cfg, None)
                self.recorder.add("#", f"a session with {cfg.describe()}")
            elif cfg.endpoint is not None:
                transport = await ZmqTransport.start(cfg.name, cfg.endpoint)
                self.recorder.add("#", f"connecting to {cfg.endpoint}")
            else:
                transport = await ProcessTransport.start(
                    cfg.name, cfg.command, cwd=cfg.cwd, stderr_path=self.stderr_path
                )
                self.pids.append(transport.pid)
                self.recorder.add("#", f"started pid {transport.pid}: {cfg.describe()}")
        except OSError as e:
            raise CannotStart(e.strerror or str(e)) from None
        self.link = _Link(transport, self.recorder)
        return self.link

    async def close_link(self) -> None:
        """Ends the current connection, if any (the process group is killed and reaped)."""
        link, self.link = self.link, None
        if link is not None:
            await link.close(self.timeouts.quit)

    async def handshake(self, deadline: _Deadline, *, abandoning: bool = False) -> None:
        """``uqi 1`` -> ``id``/``option`` lines -> ``uqiok 1`` within ``deadline``, every line checked (§4.1).

        ``abandoning``: the ``uqi`` interrupts a search (step 8), whose ``info`` lines may still be on their way.
        """
        link = self.session
        await link.send(format_command(Uqi(PROTOCOL_VERSION)))
        name: str | None = None
        options: dict[str, OptionSpec] = {}
        while True:
            line = await link.read(deadline, "uqiok in answer to 'uqi 1'")
            reply = _parse(line, "in the handshake")
            match reply:
                case IdName(text):
                    name = text
                case IdAuthor():
                    pass
                case Info() if abandoning:
                    pass
                case OptionSpec():
                    if reply.name.lower() in options:
                        _fail(f"option {reply.name} is declared twice: {_q(line)}")
                    options[reply.name.lower()] = reply
                case UqiOk(version):
                    if version != PROTOCOL_VERSION:
                        _fail(f"{_q(line)}: the engine speaks UQI {version}, the check speaks {PROTOCOL_VERSION}")
                    break
                case _:
                    _fail(f"{_q(line)} before uqiok: only 'id' and 'option' lines may come before it")
        if name is None:
            _fail("no 'id name' line before uqiok")
        self.engine_id = name
        self.options = list(options.values())

    async def restart(self) -> None:
        """Starts the engine afresh with a handshake; StepSkipped when that fails (its own step reported why)."""
        try:
            await self.open()
            await self.handshake(_Deadline(self.timeouts.startup))
        except (StepFailed, CannotStart) as e:
            raise StepSkipped(f"the engine could not be restarted for this step: {e}") from None
        self.dirty = False

    async def run_step(self, step: Step) -> StepResult:
        """Runs one step, restarting the engine first when the previous step left it in an unknown state."""
        self.recorder.reset()
        self.warnings = []
        t0 = time.monotonic()
        status, reason = Status.PASS, ""
        try:
            if step.needs_session and (self.dirty or self.link is None or self.link.transport.gone):
                await self.restart()
            await step.run(self)
        except StepFailed as e:
            status, reason = Status.FAIL, str(e)
        except StepSkipped as e:
            status, reason = Status.SKIP, str(e)
        stderr: tuple[str, ...] = ()
        if status is Status.FAIL:
            self.dirty = True
            stderr = self._stderr_tail()
        log.info("%s: step %d %s: %s %s", self.config.name, step.number, step.name, status.value, reason)
        warnings = self.warnings[:_MAX_WARNINGS]
        if len(self.warnings) > _MAX_WARNINGS:
            warnings.append(f"... and {len(self.warnings) - _MAX_WARNINGS} more warnings")
        return StepResult(
            step.number,
            step.name,
            status,
            reason,
            tuple(warnings),
            self.recorder.reset(),
            stderr,
            round(time.monotonic() - t0, 3),
        )

    def _stderr_tail(self) -> tuple[str, ...]:
        try:
            text = self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ()
        return tuple(_visible(_clip(line)) for line in text.splitlines()[-_STDERR_TAIL:])

    async def close(self) -> None:
        """Ends every connection and removes the temporary files."""
        try:
            await self.close_link()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)


# --- shared exchanges ------------------------------------------------------------------------------------------


async def _ping(ck: Checker, before: Sequence[str], what: str) -> list[str]:
    """Sends ``before`` then ``isready``; returns the ``error`` lines that came before ``readyok``.

    Only ``error`` and ``info`` lines may come before ``readyok``; anything else fails the step.
    """
    link = ck.session
    await link.send(*before, "isready")
    deadline = _Deadline(ck.timeouts.ready)
    errors: list[str] = []
    while True:
        line = await link.read(deadline, f"readyok after {what}")
        match _reply(ck, line, f"while waiting for readyok after {what}"):
            case ReadyOk():
                return errors
            case ErrorReply():
                errors.append(line)
            case Info() | None:
                pass
            case TurnReply():
                _fail(f"{_q(line)} when no search runs (a second turn for one go?), waiting for readyok after {what}")
            case _:
                _fail(f"unexpected {_q(line)} while waiting for readyok after {what}")


async def _new_game(ck: Checker, variant: Variant) -> None:
    line = format_command(NewGame(variant))
    errors = await _ping(ck, [line], _q(line))
    if errors:
        _fail(f"answered {_q(line)} with {_q(errors[0])}")


def _check_info(ck: Checker, info: Info, line: str, position: Position) -> None:
    """An ``info`` line parsed (§5.3): its ``pv`` should be legal from the position, and a ``win N`` or ``loss N``
    no longer than the game can last (warnings when not)."""
    score = info.score
    # Every turn but a first give-only one places a piece, and a claim ends the game.
    turns_left = 16 - position.placed + (position.hand is None)
    if score is not None and score.kind in ("win", "loss") and score.value is not None and score.value > turns_left:
        ck.warn(f"{_q(line)}: the game can last at most {turns_left} more turns, so N cannot be {score.value}")
    if not info.pv:
        return
    try:
        position.play(info.pv)
    except IllegalTurn as e:
        ck.warn(f"{_q(line)}: the pv is not legal from the searched position: {e}")


def _check_turn(position: Position, turn: Turn, line: str, context: str) -> None:
    try:
        position.apply(turn)
    except IllegalTurn as e:
        kind = "false claim" if e.false_claim else "illegal turn"
        _fail(f"{kind} {_q(line)} {context}: {e}")


@dataclass(frozen=True, slots=True)
class _Probe:
    """A position the searches step sends: a label, its variant and its ``position`` line."""

    label: str
    variant: Variant
    line: str

    def position(self) -> Position:
        cmd = parse_command(self.line)
        assert isinstance(cmd, PositionCommand)
        return cmd.position(self.variant)


_AUTO: Final = Variant()
_STRICT: Final = parse_variant("standard", "all", "strict")
_ADVANCED: Final = parse_variant("advanced", "all", "auto")

PROBES: Final[tuple[_Probe, ...]] = (
    _Probe("the start position (give only)", _AUTO, "position startpos"),
    _Probe("a mid-game position", _AUTO, "position ..8./.3../..9./1... 7"),
    _Probe("a position with an immediate win", _AUTO, "position ..../..../..../012. 3"),
    _Probe("a full board but one square", _AUTO, "position 91eb/.4d5/f630/8ac7 2"),
    _Probe("startpos plus turns", _AUTO, "position startpos turns 3 c47 d4e"),
    _Probe("a position string plus turns", _AUTO, "position ..8./.3../..9./1... 7 turns b1e"),
    _Probe("a strict game with a claim available", _STRICT, "position ..../..../..../012. 3 turns d14"),
    _Probe("an advanced game with a 2x2 win", _ADVANCED, "position ..../..../2.../01.. 3"),
)
"""The positions of step 6, chosen to exercise every form of turn: give, place+give, win, fill, claim."""

LIMITS: Final[tuple[Go, ...]] = (
    Go(movetime=200),
    Go(depth=1),
    Go(nodes=1000),
    Go(time=1000, inc=0, otime=1000, oinc=0),
    Go(time=150, inc=0, otime=10000, oinc=0, movetime=1000),
)
"""The ``go`` limits of step 6 (movetime first, so a hanging engine fails as early as possible; the last one has
a clock shorter than its ``movetime``: SPEC §4.5 wants the turn within the smaller)."""

MALFORMED_GO: Final = "go depth 0"
"""A ``go`` that step 6 expects to be refused without a turn (SPEC §4.5)."""
MALFORMED_NEWGAMES: Final = (
    "newgame shapes standard attributes color,color claims auto",
    "newgame shapes standard attributes color claims auto timer 5",
)
"""``newgame`` lines that step 5 expects to be refused as malformed (SPEC §4.3)."""
UNKNOWN_VARIANT: Final = "newgame shapes hexagon attributes color claims auto"
"""A ``newgame`` with a value of no version of the protocol: refused, as ``newgame unsupported`` (SPEC §4.3)."""

VARIANTS: Final[tuple[Variant, ...]] = tuple(
    parse_variant(shapes, attributes, claims)
    for shapes in ("standard", "advanced")
    for attributes in ("color,shape,height,fill", "color,fill")
    for claims in ("auto", "strict")
)
"""The ``newgame`` variants of step 5: both shapes, all attributes or a subset, both claim rules."""


async def _search(ck: Checker, probe: _Probe, position: Position, go: Go, *, end: str = "") -> Turn:
    """``position`` + ``go`` -> ``info``... -> exactly one legal ``turn`` within the deadline.

    ``end`` is sent at the end of both lines, before the transport's ``\n`` (``\r`` for step 10).
    """
    go_line = format_command(go)
    limits = [ms for ms in (go.movetime, go.time) if ms is not None]
    limit_ms = min(limits) if limits else None  # SPEC §4.5: with both, the smaller
    budget = ck.timeouts.search_safety if limit_ms is None else limit_ms / 1000 + ck.timeouts.search_slack
    link = ck.session
    await link.send(probe.line + end, go_line + end)
    deadline = _Deadline(budget)
    t0 = time.monotonic()
    where = f"after {_q(go_line)} in {probe.label}"
    while True:
        line = await link.read(deadline, f"turn {where}")
        reply = _reply(ck, line, f"during a search ({where})")
        match reply:
            case None:
                pass
            case TurnReply(turn):
                break
            case Info():
                _check_info(ck, reply, line, position)
            case ErrorReply():
                _fail(f"answered {_q(probe.line)} / {_q(go_line)} with {_q(line)}")
            case _:
                _fail(f"unexpected {_q(line)} during a search ({where})")
    ms = (time.monotonic() - t0) * 1000
    _check_turn(position, turn, line, where)
    if limit_ms is not None and ms > limit_ms + ck.timeouts.margin * 1000:
        ck.warn(f"took {ms:.0f} ms for {_q(go_line)} (a game would be lost on time)")
    return turn


# --- the steps -------------------------------------------------------------------------------------------------


async def step_startup(ck: Checker) -> None:
    """1. The process starts (or the endpoint connects) and completes the handshake within the start-up deadline."""
    deadline = _Deadline(ck.timeouts.startup)
    link = await ck.open()
    try:
        await ck.handshake(deadline)
    except StepFailed as e:
        if ck.zmq and link.transport.last_line is None:
            raise StepFailed(f"{e}: is the engine serving on {ck.config.describe()}?") from None
        raise
    ck.dirty = False


async def step_isready(ck: Checker) -> None:
    """2. ``isready`` -> ``readyok``."""
    errors = await _ping(ck, [], "'isready'")
    if errors:
        _fail(f"answered 'isready' with {_q(errors[0])}")


async def step_unknown_command(ck: Checker) -> None:
    """3. An unknown command gets an ``error`` line (§4.9) and the engine still answers ``isready``."""
    errors = await _ping(ck, ["frobnicate"], "'frobnicate'")
    if not errors:
        _fail("no error line in answer to the unknown command 'frobnicate' (SPEC §4.9: answer it with 'error')")
    if errors[0].split()[1:3] != ["unknown", "command"]:
        ck.warn(f"answered 'frobnicate' with {_q(errors[0])}; SPEC §5.4 suggests 'error unknown command frobnicate'")


async def step_options(ck: Checker) -> None:
    """4. Each declared option accepts its default, and the values SPEC §4.2 makes equivalent or valid: a check or
    combo value in other letter case, an empty string; a spin refuses an out-of-range value; an unknown id is
    refused."""
    for spec in ck.options:
        line = format_command(SetOption(spec.name, spec.default))
        errors = await _ping(ck, [line], _q(line))
        if errors:
            _fail(f"refused its own default: {_q(line)} -> {_q(errors[0])}")
        if spec.default is not None and spec.type in (OptionType.CHECK, OptionType.COMBO, OptionType.STRING):
            other = "" if spec.type is OptionType.STRING else spec.default.swapcase()
            if other != spec.default:
                bad = format_command(SetOption(spec.name, other))
                errors = await _ping(ck, [bad, line], _q(bad))  # then the default again
                if errors:
                    _fail(f"refused {_q(bad)}: {_q(errors[0])} (SPEC §4.2: a valid value of a {spec.type.value})")
        if spec.type is OptionType.SPIN:
            assert spec.max is not None and spec.min is not None
            bad = format_command(SetOption(spec.name, str(spec.max + 1)))
            if not await _ping(ck, [bad], _q(bad)):
                _fail(f"no error line for the out-of-range value {_q(bad)} (declared {spec.min}..{spec.max})")
    declared = {s.name.lower() for s in ck.options}
    unknown = next(n for n in ("NoSuchOption", "NoSuchOption_2", "NoSuchOption_3") if n.lower() not in declared)
    bad = format_command(SetOption(unknown, "1"))
    if not await _ping(ck, [bad], _q(bad)):
        _fail(f"no error line for the unknown option {_q(bad)} (SPEC §4.2)")


async def step_new_games(ck: Checker) -> None:
    """5. ``newgame`` in every variant combination, then ``isready`` -> ``readyok`` without error; a malformed
    ``newgame`` and one with an unknown value get an ``error`` line (§4.3)."""
    for variant in VARIANTS:
        line = format_command(NewGame(variant))
        errors = await _ping(ck, [line], _q(line))
        if not errors:
            continue
        if variant == _AUTO:
            _fail(f"refused the standard game: {_q(line)} -> {_q(errors[0])}")
        if not all(e.split()[1:3] == ["newgame", "unsupported"] for e in errors):
            _fail(f"answered {_q(line)} with {_q(errors[0])} (an unsupported variant is 'error newgame unsupported')")
        ck.unsupported.add(variant)
        ck.warn(f"does not support {variant.describe()}: {_q(errors[0])}")
    for line in (*MALFORMED_NEWGAMES, UNKNOWN_VARIANT):
        errors = await _ping(ck, [line], _q(line))
        if not errors:
            _fail(f"no error line for {_q(line)} (SPEC §4.3: refuse it with 'error newgame ...')")
        if line == UNKNOWN_VARIANT and errors[0].split()[1:3] != ["newgame", "unsupported"]:
            ck.warn(f"answered {_q(line)} with {_q(errors[0])}; SPEC §4.3 says 'error newgame unsupported ...'")


async def step_searches(ck: Checker) -> None:
    """6. Searches in positions covering every turn form, under each kind of limit: one legal ``turn`` each; a
    bare ``go`` answered within the safety deadline; a malformed ``go`` refused without a turn (§4.5)."""
    for probe in PROBES:
        if probe.variant in ck.unsupported:
            ck.warn(f"{probe.label} not searched: the engine does not support {probe.variant.describe()}")
            continue
        position = probe.position()
        for go in LIMITS:
            await _new_game(ck, probe.variant)
            await _search(ck, probe, position, go)
    probe = PROBES[1]
    await _new_game(ck, probe.variant)
    t0 = time.monotonic()
    await _search(ck, probe, probe.position(), Go())
    if (seconds := time.monotonic() - t0) > _BARE_GO_SECONDS:
        ck.warn(f"took {seconds:.1f} s for a bare 'go' (SPEC §4.5: answer within a few seconds)")
    await ck.session.send(probe.line, MALFORMED_GO, "isready")
    deadline = _Deadline(ck.timeouts.ready)
    errors = 0
    while True:
        line = await ck.session.read(deadline, f"readyok after {_q(MALFORMED_GO)} and 'isready'")
        match _reply(ck, line, f"after {_q(MALFORMED_GO)}"):
            case ReadyOk():
                break
            case ErrorReply():
                errors += 1
            case TurnReply():
                _fail(f"answered the malformed {_q(MALFORMED_GO)} with {_q(line)} (SPEC §4.5: refuse it, no search)")
            case Info() | None:
                pass
            case _:
                _fail(f"unexpected {_q(line)} after {_q(MALFORMED_GO)}")
    if not errors:
        _fail(f"no error line for the malformed {_q(MALFORMED_GO)} (SPEC §4.5: refuse it with 'error go ...')")


async def step_infinite(ck: Checker) -> None:
    """7. ``go infinite``; ``isready`` is answered during the search; ``stop`` -> one legal ``turn``; idle ``stop``.

    A ``turn`` that comes before ``stop`` passes with a warning: SPEC §4.5 says an engine should hold it until
    ``stop`` (an engine that answers every ``go`` at once included, §4.7), and that an arena accepts it.
    """
    link = ck.session
    probe = PROBES[1]
    position = probe.position()
    await _new_game(ck, probe.variant)
    await link.send(probe.line, "go infinite")
    t0 = time.monotonic()
    turns: list[tuple[str, Turn, float]] = []

    def take(line: str, stage: str) -> None:
        match _reply(ck, line, f"during 'go infinite' ({stage})"):
            case None:
                pass
            case TurnReply(turn):
                if turns:
                    _fail(f"a second turn {_q(line)} for one 'go infinite' (first: {_q(turns[0][0])})")
                turns.append((line, turn, time.monotonic() - t0))
            case Info() as info:
                _check_info(ck, info, line, position)
            case ReadyOk() if stage == "isready":
                pass
            case _:
                _fail(f"unexpected {_q(line)} during 'go infinite' ({stage})")

    async for line in link.lines_within(ck.timeouts.infinite):
        take(line, "before isready")
    await link.send("isready")
    deadline = _Deadline(ck.timeouts.ready)
    while True:
        line = await link.read(deadline, "readyok to 'isready' during 'go infinite'")
        take(line, "isready")
        if line.split()[0] == "readyok":
            break
    await link.send("stop")
    if not turns:
        deadline = _Deadline(ck.timeouts.search_slack)
        while not turns:
            take(await link.read(deadline, "turn after 'stop'"), "after stop")
    else:
        line_text, _, after = turns[0]
        ck.warn(
            f"answered 'go infinite' with {_q(line_text)} after {after * 1000:.0f} ms, before 'stop' "
            "(SPEC §4.5: hold the turn until stop)"
        )
    line_text, turn, _ = turns[0]
    _check_turn(position, turn, line_text, "after 'go infinite' and 'stop'")
    # stop when idle: ignored, no error, no turn (§4.6); a late second turn would show up here too.
    errors = await _ping(ck, ["stop"], "'stop' when no search runs")
    if errors:
        _fail(f"answered 'stop' when no search runs with {_q(errors[0])} (SPEC §4.6: ignore it)")


async def _hold(ck: Checker, position: Position) -> str | None:
    """Listens to a ``go infinite`` that just started; returns a ``turn`` line that came before ``stop``, if any."""
    async for line in ck.session.lines_within(ck.timeouts.infinite):
        match _reply(ck, line, "during 'go infinite'"):
            case TurnReply(turn):
                _check_turn(position, turn, line, "for 'go infinite'")
                ck.warn(f"answered 'go infinite' with {_q(line)} before 'stop', so no search ran to test §4.10 in")
                return line
            case Info() as info:
                _check_info(ck, info, line, position)
            case None:
                pass
            case _:
                _fail(f"unexpected {_q(line)} during 'go infinite'")
    return None


async def step_during_search(ck: Checker) -> None:
    """8. During ``go infinite``, ``position``, ``go``, ``newgame`` and ``setoption`` get ``error`` and the search
    goes on to one legal ``turn`` at ``stop``; a ``uqi`` abandons the search: no turn comes for it (SPEC §4.10)."""
    link = ck.session
    probe = PROBES[1]
    position = probe.position()
    await _new_game(ck, probe.variant)
    await link.send(probe.line, "go infinite")
    if await _hold(ck, position) is not None:
        return
    refused = [PROBES[0].line, format_command(Go(depth=1)), format_command(NewGame(_STRICT))]
    if ck.options:
        refused.append(format_command(SetOption(ck.options[0].name, ck.options[0].default)))
    await link.send(*refused, "isready")
    deadline = _Deadline(ck.timeouts.ready)
    errors: list[str] = []
    while True:
        line = await link.read(deadline, "readyok after commands sent during 'go infinite'")
        match _reply(ck, line, "during 'go infinite'"):
            case ReadyOk():
                break
            case ErrorReply():
                errors.append(line)
            case TurnReply():
                _fail(f"{_q(line)} before 'stop' (SPEC §4.10: refuse 'go' during a search, do not start it)")
            case Info() | None:
                pass
            case _:
                _fail(f"unexpected {_q(line)} during 'go infinite'")
    named = {e.split()[1].rstrip(":") for e in errors if len(e.split()) > 1}
    missing = [c for c in refused if c.split()[0] not in named]
    if missing and len(errors) < len(refused):
        _fail(f"no error line for {_q(missing[0])} sent during a search (SPEC §4.10: refuse it with 'error')")
    if missing:
        ck.warn(f"refused commands during a search with {_q(errors[0])}; SPEC §4.10 names the command first")
    await link.send("stop")
    deadline = _Deadline(ck.timeouts.search_slack)
    while True:
        line = await link.read(deadline, "turn after 'stop'")
        match _reply(ck, line, "after 'stop'"):
            case TurnReply(turn):
                _check_turn(position, turn, line, f"after 'stop', for the search of {probe.label}")
                break
            case Info() | None:
                pass
            case _:
                _fail(f"unexpected {_q(line)} after 'stop'")
    await link.send(probe.line, "go infinite")
    if await _hold(ck, position) is not None:
        return
    ck.recorder.add("#", "a new session during the search")
    try:
        await ck.handshake(_Deadline(ck.timeouts.startup), abandoning=True)
    except StepFailed as e:
        _fail(f"'uqi' during a search: {e} (SPEC §4.10: abandon the search, never send its turn)")
    # The abandoned search must stay silent, also when a stop comes; any turn shows up before readyok.
    errors = await _ping(ck, ["stop"], "'stop' after 'uqi' abandoned the search")
    if errors:
        _fail(f"answered 'stop' when no search runs with {_q(errors[0])} (SPEC §4.6: ignore it)")


async def step_one_reply(ck: Checker) -> None:
    """9. After a search's ``turn``, no second ``turn`` comes."""
    probe = PROBES[1]
    position = probe.position()
    await _new_game(ck, probe.variant)
    first = await _search(ck, probe, position, Go(movetime=100))
    async for line in ck.session.lines_within(ck.timeouts.quiet):
        match _reply(ck, line, "after the turn"):
            case None:
                pass
            case TurnReply():
                _fail(f"a second turn {_q(line)} for one 'go movetime 100' (first: 'turn {first}')")
            case Info():
                ck.warn(f"{_q(line)} after the turn: info belongs to a running search (§5.3)")
            case _:
                _fail(f"unexpected {_q(line)} after the turn")
    errors = await _ping(ck, [], "'isready' after a search")
    if errors:
        _fail(f"answered 'isready' with {_q(errors[0])}")


async def step_crlf(ck: Checker) -> None:
    """10. Commands ending in ``\\r\\n`` are understood (§3.1): ``isready``, ``newgame``, a search."""
    if ck.zmq:
        raise StepSkipped("ZeroMQ frames carry no line terminator")
    # The transport ends each line with "\n": a trailing "\r" makes it "\r\n" on the wire.
    link = ck.session
    await link.send("isready\r")
    errors = await _ping_reply_only(ck, "'isready\\r\\n'")
    probe = PROBES[4]
    newgame = format_command(NewGame(probe.variant)) + "\r"
    await link.send(newgame, "isready\r")
    errors += await _ping_reply_only(ck, "'newgame ...\\r\\n'")
    if errors:
        _fail(f"answered a command ending in \\r\\n with {_q(errors[0])}")
    crlf = _Probe(probe.label + " (lines ending in \\r\\n)", probe.variant, probe.line)
    await _search(ck, crlf, probe.position(), Go(depth=1), end="\r")


async def _ping_reply_only(ck: Checker, what: str) -> list[str]:
    """Reads up to ``readyok`` for an ``isready`` already sent; returns the ``error`` lines before it."""
    link = ck.session
    deadline = _Deadline(ck.timeouts.ready)
    errors: list[str] = []
    while True:
        line = await link.read(deadline, f"readyok to {what}")
        match _reply(ck, line, f"while waiting for readyok to {what}"):
            case ReadyOk():
                return errors
            case ErrorReply():
                errors.append(line)
            case Info() | None:
                pass
            case _:
                _fail(f"unexpected {_q(line)} while waiting for readyok to {what}")


async def step_quit(ck: Checker) -> None:
    """11. ``quit``: a process exits within the quit deadline; a ZeroMQ server then serves a new session."""
    link = ck.session
    if isinstance(link.transport, ProcessTransport):
        proc = link.transport
        await link.send("quit")
        deadline = _Deadline(ck.timeouts.quit)
        while proc.returncode is None and deadline.left() > 0:
            await asyncio.sleep(0.01)
        if proc.returncode is None:
            _fail(f"still running {deadline.seconds:.3g} s after 'quit' (SPEC §3.2: exit at once)")
        ck.recorder.add("#", f"exited ({proc.exit_info()})")
        await ck.close_link()
        return
    ck.recorder.add(">", "quit")
    await ck.close_link()  # sends the quit and closes the socket: the session ends
    # The engine's DEALER deals its replies round-robin over every connection it still has, so a reconnection
    # racing the teardown of the old one could lose lines to it: give the disconnect time to reach the engine.
    await asyncio.sleep(ck.timeouts.quiet)
    ck.recorder.add("#", "reconnecting for a second session")
    deadline = _Deadline(ck.timeouts.startup)
    await ck.open()
    try:
        await ck.handshake(deadline)
    except StepFailed as e:
        _fail(f"after 'quit', a new session got no handshake: {e}")
    await step_isready(ck)


async def step_end_of_input(ck: Checker) -> None:
    """12. A fresh process whose input is closed in the middle of a search exits within the quit deadline."""
    if ck.zmq:
        raise StepSkipped("end of input applies to standard input only (§3.2)")
    await ck.close_link()
    deadline = _Deadline(ck.timeouts.startup)
    link = await ck.open()
    await ck.handshake(deadline)
    probe = PROBES[1]
    await _new_game(ck, probe.variant)
    await link.send(probe.line, "go infinite")
    await asyncio.sleep(ck.timeouts.infinite)
    proc = link.transport
    assert isinstance(proc, ProcessTransport)
    ck.recorder.add("#", "closing the engine's standard input")
    t0 = time.monotonic()
    # close() without quit closes standard input, waits up to the grace for the exit, then kills the group: an
    # engine that was still running at the kill shows SIGKILL as its exit status.
    await proc.close(grace=ck.timeouts.quit, quit=False)
    ck.link = None
    seconds = time.monotonic() - t0
    ck.recorder.add("#", f"{proc.exit_info()} after {seconds:.3f} s")
    if proc.returncode == -signal.SIGKILL:
        _fail(f"still running {ck.timeouts.quit:.3g} s after its standard input was closed (SPEC §3.2: exit on EOF)")


@dataclass(frozen=True, slots=True)
class Step:
    """One numbered step of the check."""

    number: int
    """Its number, as printed."""
    name: str
    """Its short name, as printed."""
    run: Callable[[Checker], Awaitable[None]] = field(repr=False)
    """The step: returns when the engine passes, raises StepFailed or StepSkipped."""
    needs_session: bool = True
    """The step runs on a live, handshaken session (restarted first after a failed step)."""


STEPS: Final[tuple[Step, ...]] = (
    Step(1, "start-up", step_startup, needs_session=False),
    Step(2, "isready", step_isready),
    Step(3, "unknown command", step_unknown_command),
    Step(4, "options", step_options),
    Step(5, "new games", step_new_games),
    Step(6, "searches", step_searches),
    Step(7, "infinite + stop", step_infinite),
    Step(8, "during a search", step_during_search),
    Step(9, "exactly one reply", step_one_reply),
    Step(10, "\\r\\n line ends", step_crlf),
    Step(11, "quit", step_quit),
    Step(12, "end of input", step_end_of_input, needs_session=False),
)
"""Every step, in order."""


async def run_check(
    config: EngineConfig,
    *,
    timeouts: CheckTimeouts | None = None,
    keep_going: bool = False,
    steps: Sequence[Step] = STEPS,
    connector: Connector | None = None,
) -> CheckReport:
    """Checks the engine ``config`` step by step and returns the report; never raises for an engine fault.

    Without ``keep_going`` the check stops at the first failed step. Every process it started is killed and
    reaped before this returns, also when it is cancelled (Ctrl-C). ``connector`` gives the sessions of a remote
    bot (``remote:NAME``).
    """
    ck = Checker(config, timeouts or CheckTimeouts(), connector)
    results: list[StepResult] = []
    started = True
    try:
        for step in steps:
            try:
                result = await ck.run_step(step)
            except CannotStart as e:
                started = not (step.number == steps[0].number and not results)
                result = StepResult(step.number, step.name, Status.FAIL, str(e))
            results.append(result)
            if result.status is Status.FAIL and (not keep_going or not started):
                break
    finally:
        # Shielded so that a second interrupt during the clean-up cannot leave a process behind.
        await asyncio.shield(ck.close())
    return CheckReport(
        config.name,
        config.describe(),
        ck.engine_id,
        tuple(results),
        len(steps),
        started,
        tuple(ck.pids),
    )


# --- what the CLI prints ---------------------------------------------------------------------------------------


def format_report(report: CheckReport, *, verbose: bool = False) -> list[str]:
    """The lines ``quarto-arena check`` prints: one per step, the failing steps' I/O, and a summary."""
    ident = f" ({report.engine_id})" if report.engine_id else ""
    out = [f"Checking {report.engine}{ident}: {report.target}"]
    for s in report.steps:
        dots = "." * max(2, _NAME_WIDTH - len(s.name))
        verdict = s.status.value if not s.reason else f"{s.status.value}: {s.reason}"
        out.append(f"{s.number:3d} {s.name} {dots} {verdict}")
        out.extend(f"      warning: {w}" for w in s.warnings)
        if s.status is Status.FAIL or verbose:
            shown = s.transcript[-_SHOWN_LINES:]
            if len(s.transcript) > len(shown):
                out.append(f"      ... {len(s.transcript) - len(shown)} earlier lines")
            out.extend(f"      {line}" for line in shown)
        if s.status is Status.FAIL and s.stderr:
            out.append("      standard error (last lines):")
            out.extend(f"      | {line}" for line in s.stderr)
    passed = sum(s.status is Status.PASS for s in report.steps)
    skipped = sum(s.status is Status.SKIP for s in report.steps)
    warned = sum(len(s.warnings) for s in report.steps)
    counts = f"{passed} passed, {len(report.failed)} failed, {skipped} skipped, {warned} warning{'s' * (warned != 1)}"
    if not report.started:
        out.append(f"{report.engine} could not be started")
    elif report.complies:
        out.append(f"{report.engine} complies with UQI {PROTOCOL_VERSION}: {counts}")
    else:
        failed = ", ".join(map(str, report.failed))
        out.append(f"{report.engine} does NOT comply with UQI {PROTOCOL_VERSION}: step {failed} failed; {counts}")
        if len(report.steps) < report.total_steps:
            out.append(f"Stopped after step {report.steps[-1].number}; --keep-going runs the remaining steps")
    return out
