"""The machinery of the check: its deadlines, the recorded link to the engine, the :class:`Checker` the steps
run on, and what a step is (:class:`Step`)."""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, NoReturn

from quarto_arena.protocol.rules import Variant
from quarto_arena.protocol.uqi import (
    PROTOCOL_VERSION,
    IdAuthor,
    IdName,
    Info,
    OptionSpec,
    Reply,
    Uqi,
    UqiError,
    UqiOk,
    format_command,
    parse_reply,
)

from ..engine import Connector, Deadlines, EngineConfig
from ..errors import ArenaError, ExitStatus
from ..timecontrol import SearchClock
from ..transport import BadLine, PeerGone, ProcessTransport, Transport, ZmqTransport
from ..transport.zeromq import RECONNECT_PAUSE
from .report import IoLine, Status, StepResult

log = logging.getLogger("quarto_arena.arena.compliance")


_MAX_WARNINGS: Final = 5
_STDERR_TAIL: Final = 10
_CLIP: Final = 120
BARE_GO_SECONDS: Final = 5.0
"""A bare ``go`` that takes longer passes with a warning (SPEC §4.5: the engine should answer within seconds)."""


@dataclass(frozen=True, slots=True)
class CheckTimeouts(Deadlines):
    """How long the check waits at each kind of step, in seconds (``--timeout-scale`` multiplies them).

    The arena's own :class:`~quarto_arena.arena.engine.Deadlines` (start-up, ``isready``, ``newgame``, ``quit``,
    the safety deadline of a search without a clock) with the check's values (a safety deadline of 10 s, not 60),
    and what only the check needs. Every wait is timed by a :class:`~quarto_arena.arena.timecontrol.SearchClock`.
    """

    safety: float = 60.0
    """A search with only a depth or node limit, or none: the arena's safety deadline, past which a game is lost."""
    safety_time: float = 10.0
    """SPEC §4.5's safety time: a search with only a depth or node limit that takes longer gets a warning."""
    search_slack: float = 1.0
    """Allowed on top of a search's own time limit (``movetime``, ``time``), and to answer ``stop``."""
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
            newgame=self.newgame * factor,
            quit=self.quit * factor,
            safety=self.safety * factor,
            safety_time=self.safety_time * factor,
            search_slack=self.search_slack * factor,
            quiet=self.quiet * factor,
        )


class StepFailed(Exception):
    """A step's verdict: the engine does not comply. The message is one line and quotes the offending line."""


class StepSkipped(Exception):
    """The step does not apply to this engine or transport (or the engine could not be restarted for it)."""


class _Silence(StepFailed):
    """No line came before the deadline (a failure, except where silence is what a step wants)."""


class CannotStart(ArenaError):
    """The engine's process could not be started, or its endpoint is unusable."""

    status = ExitStatus.ENGINE
    reason = "cannot_start"


_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _clip(text: str, n: int = _CLIP) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _visible(text: str) -> str:
    """An engine's text as the check prints it: control characters (a terminal's escape sequences, ``\\r``) shown
    as escapes, so that what an engine sends can never drive the user's terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def quoted(line: str) -> str:
    """A line quoted for a reason."""
    return repr(_clip(line))


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
            raise StepFailed(f"cannot send {quoted(lines[0])}: {e}") from None

    async def send_bytes(self, data: bytes) -> None:
        """Sends raw bytes (lines ending in ``\n``), recorded with their undecodable bytes escaped."""
        for line in data.splitlines():
            self.recorder.add(">", line.decode("utf-8", "backslashreplace"))
        try:
            self.transport.send_bytes(data)
        except PeerGone as e:
            self.recorder.add("#", str(e))
            raise StepFailed(f"cannot send {data[:40]!r}: {e}") from None

    async def read(self, deadline: SearchClock, waiting_for: str) -> str:
        """The next line, or :class:`StepFailed` naming what was awaited when time runs out or the engine is gone."""
        left = deadline.left()
        try:
            if left <= 0:
                raise TimeoutError
            line = await asyncio.wait_for(self.transport.read_line(), left)
        except TimeoutError:
            last = self.transport.last_line
            tail = "" if last is None else f" (last line from the engine: {quoted(last)})"
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
            return await self.read(SearchClock.started(seconds), "line")
        except _Silence:
            return None

    async def lines_within(self, seconds: float) -> AsyncIterator[str]:
        """Every line that comes within ``seconds`` (a window in which lines may come, or must not)."""
        wait = SearchClock.started(seconds)
        while (left := wait.left()) > 0:
            line = await self.read_quiet(left)
            if line is None:
                return
            yield line

    async def close(self, quit_grace: float | None = None, *, quit: bool = True) -> None:
        """Ends the connection: kills the process group and reaps it, or closes the socket (after ``quit``, unless
        ``quit`` is False: it was sent already)."""
        t = self.transport
        if isinstance(t, ProcessTransport):
            await t.close(grace=0, quit=False)
            self.recorder.add("#", f"killed process group {t.pgid} ({t.exit_info()})")
        else:
            # A ZeroMQ server outlives the session: a quit lets it serve the next arena at once.
            await t.close(grace=quit_grace or 0.2, quit=quit and not t.gone)


def _parse(line: str, where: str) -> Reply:
    try:
        return parse_reply(line)
    except UqiError as e:
        raise StepFailed(f"malformed line {quoted(line)} {where}: {e}") from None


def read_reply(ck: Checker, line: str, where: str) -> Reply | None:
    """The reply on ``line``; None for a malformed ``info`` line, which an arena logs and ignores (SPEC §5.3): a
    warning here. Any other malformed line fails the step."""
    try:
        return parse_reply(line)
    except UqiError as e:
        if line.split()[0] != "info":
            raise StepFailed(f"malformed line {quoted(line)} {where}: {e}") from None
        ck.warn("§5.3", f"malformed info line {quoted(line)} {where}: {e} (an arena ignores it)")
        return None


def fail_step(reason: str) -> NoReturn:
    """Fails the running step with ``reason`` (one line)."""
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
        self.notes: list[str] = []
        """Notes of the running step."""
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

    def warn(self, section: str, message: str) -> None:
        """Records that the engine did not do what a *should* of SPEC ``section`` asks (the step goes on)."""
        line = f"{message} (SPEC {section}: should)"
        if line not in self.warnings:
            log.info("%s: warning: %s", self.config.name, line)
            self.warnings.append(line)

    def note(self, message: str) -> None:
        """Records what the engine may do and did (not a fault: ``--strict`` does not count it)."""
        if message not in self.notes:
            self.notes.append(message)

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

    async def close_link(self, *, quit: bool = True) -> None:
        """Ends the current connection, if any (the process group is killed and reaped; a ZeroMQ session is sent
        ``quit`` unless ``quit`` is False, when the step sent it itself)."""
        link, self.link = self.link, None
        if link is not None:
            await link.close(self.timeouts.quit, quit=quit)

    async def connect(self, deadline: SearchClock) -> _Link:
        """Opens the link (:meth:`open`) and completes the handshake within ``deadline``.

        An engine's ZeroMQ server switching sessions closes the socket an arena may just have reached: a connection
        to an endpoint that drops before any reply is made again while the deadline allows (SPEC §3.3), as the
        arena's own sessions do. Anything else fails as the handshake failed.
        """
        while True:
            link = await self.open()
            try:
                await self.handshake(deadline)
                return link
            except StepFailed:
                t = link.transport
                early = self.config.endpoint is not None and t.gone and t.last_line is None
                if not (early and deadline.left() > 2 * RECONNECT_PAUSE):
                    raise
            self.recorder.add("#", "dropped before any reply (the server was switching sessions): connecting again")
            await asyncio.sleep(RECONNECT_PAUSE)

    async def handshake(self, deadline: SearchClock, *, abandoning: bool = False) -> None:
        """``uqi 1`` -> ``id``/``option`` lines -> ``uqiok 1`` within ``deadline``, every line checked (§4.1).

        ``abandoning``: the ``uqi`` interrupts a search (step 8), whose ``info`` lines may still be on their way.
        """
        link = self.session
        await link.send(format_command(Uqi(PROTOCOL_VERSION)))
        name: str | None = None
        options: dict[str, OptionSpec] = {}
        stray = False
        while True:
            line = await link.read(deadline, "uqiok in answer to 'uqi 1'")
            try:
                reply = parse_reply(line)
            except UqiError as e:
                # UQI 1 (§5.5 as published) let a banner pass: an arena logs it and waits for uqiok.
                if not stray:
                    self.warn("§4.1", f"{quoted(line)} before uqiok is no UQI reply ({e}): an arena only logs it")
                stray = True
                continue
            match reply:
                case IdName(text):
                    name = text
                case IdAuthor():
                    pass
                case Info() if abandoning:
                    pass
                case OptionSpec():
                    if reply.name.lower() in options:
                        fail_step(f"option {reply.name} is declared twice: {quoted(line)}")
                    options[reply.name.lower()] = reply
                case UqiOk(version):
                    if version != PROTOCOL_VERSION:
                        fail_step(
                            f"{quoted(line)}: the engine speaks UQI {version}, the check speaks {PROTOCOL_VERSION}"
                        )
                    break
                case _:
                    fail_step(f"{quoted(line)} before uqiok: only 'id' and 'option' lines may come before it")
        if name is None:
            fail_step("no 'id name' line before uqiok")
        self.engine_id = name
        self.options = list(options.values())

    async def restart(self) -> None:
        """Starts the engine afresh with a handshake; StepSkipped when that fails (its own step reported why)."""
        try:
            await self.connect(SearchClock.started(self.timeouts.startup))
        except (StepFailed, CannotStart) as e:
            raise StepSkipped(f"the engine could not be restarted for this step: {e}") from None
        self.dirty = False

    async def run_step(self, step: Step) -> StepResult:
        """Runs one step, restarting the engine first when the previous step left it in an unknown state."""
        self.recorder.reset()
        self.warnings, self.notes = [], []
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
            if step.should:  # every rule the step tests is a should: its failure is a warning
                cited = f"{reason} (should)" if "(SPEC " in reason else f"{reason} (SPEC {step.spec}: should)"
                self.warnings.insert(0, cited)
                status, reason = Status.WARN, ""
        if status is Status.PASS and self.warnings:
            status = Status.WARN
        log.info("%s: step %d %s: %s %s", self.config.name, step.number, step.name, status.value, reason)
        warnings = self.warnings[:_MAX_WARNINGS]
        if len(self.warnings) > _MAX_WARNINGS:
            warnings.append(f"... and {len(self.warnings) - _MAX_WARNINGS} more warnings")
        if status is Status.FAIL and step.spec and "SPEC" not in reason:
            reason = f"{reason} (SPEC {step.spec})"
        return StepResult(
            step.number,
            step.name,
            status,
            reason,
            tuple(warnings),
            self.recorder.reset(),
            stderr if status is not Status.PASS else (),
            round(time.monotonic() - t0, 3),
            tuple(self.notes),
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
    spec: str = ""
    """The sections of SPEC.md the step tests (``§4.4``), named with a failure."""
    should: bool = False
    """Every rule the step tests is a *should* (rules for inputs an arena never sends, added since UQI 1 was first
    published): a failure is a warning, which ``--strict`` makes a failure again."""
