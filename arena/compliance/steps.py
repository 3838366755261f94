"""Steps 1-12 of the check, the protocol's conversation (handshake, options, searches, stop, quit), and the exchanges
every step shares."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import IllegalTurn, Position, Turn, Variant
from quarto_arena.protocol.uqi import (
    ErrorReply,
    Go,
    Info,
    NewGame,
    OptionType,
    PositionCommand,
    ReadyOk,
    SetOption,
    TurnReply,
    format_command,
    parse_command,
)

from ..timecontrol import SearchClock
from ..transport import ProcessTransport
from .checker import (
    BARE_GO_SECONDS,
    Checker,
    StepFailed,
    StepSkipped,
    fail_step,
    quoted,
    read_reply,
)

log = logging.getLogger("quarto_arena.arena.compliance")


# --- shared exchanges ------------------------------------------------------------------------------------------


async def _ping(ck: Checker, before: Sequence[str], what: str) -> list[str]:
    """Sends ``before`` then ``isready``; returns the ``error`` lines that came before ``readyok``.

    Only ``error`` and ``info`` lines may come before ``readyok``; anything else fails the step.
    """
    await ck.session.send(*before, "isready")
    return await await_readyok(ck, f"after {what}")


async def await_readyok(ck: Checker, when: str) -> list[str]:
    """Reads up to ``readyok`` for an ``isready`` already sent; returns the ``error`` lines before it."""
    deadline = SearchClock.started(ck.timeouts.ready)
    errors: list[str] = []
    while True:
        line = await ck.session.read(deadline, f"readyok {when}")
        match read_reply(ck, line, f"while waiting for readyok {when}"):
            case ReadyOk():
                return errors
            case ErrorReply():
                errors.append(line)
            case Info() | None:
                pass
            case TurnReply():
                fail_step(f"{quoted(line)} when no search runs (a second turn for one go?), waiting for readyok {when}")
            case _:
                fail_step(f"unexpected {quoted(line)} while waiting for readyok {when}")


async def start_new_game(ck: Checker, variant: Variant) -> None:
    """``newgame`` for ``variant``, then the ``isready`` ping: any error reply fails the step."""
    line = format_command(NewGame(variant))
    errors = await _ping(ck, [line], quoted(line))
    if errors:
        fail_step(f"answered {quoted(line)} with {quoted(errors[0])}")


def _check_info(ck: Checker, info: Info, line: str, position: Position) -> None:
    """An ``info`` line parsed (§5.3): its ``pv`` should be legal from the position, and a ``win N`` or ``loss N``
    no longer than the game can last (warnings when not)."""
    score = info.score
    # Every turn but a first give-only one places a piece, and a claim ends the game.
    turns_left = 16 - position.placed + (position.hand is None)
    if score is not None and score.kind in ("win", "loss") and score.value is not None and score.value > turns_left:
        ck.warn("§5.3", f"{quoted(line)}: the game can last at most {turns_left} more turns, not {score.value}")
    if not info.pv:
        return
    try:
        position.play(info.pv)
    except IllegalTurn as e:
        ck.warn("§5.3", f"{quoted(line)}: the pv is not legal from the searched position: {e}")


def _check_turn(position: Position, turn: Turn, line: str, context: str) -> None:
    try:
        position.apply(turn)
    except IllegalTurn as e:
        kind = "false claim" if e.false_claim else "illegal turn"
        fail_step(f"{kind} {quoted(line)} {context}: {e}")


@dataclass(frozen=True, slots=True)
class Probe:
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

PROBES: Final[tuple[Probe, ...]] = (
    Probe("the start position (give only)", _AUTO, "position startpos"),
    Probe("a mid-game position", _AUTO, "position ..8./.3../..9./1... 7"),
    Probe("a position with an immediate win", _AUTO, "position ..../..../..../012. 3"),
    Probe("a full board but one square", _AUTO, "position 91eb/.4d5/f630/8ac7 2"),
    Probe("startpos plus turns", _AUTO, "position startpos turns 3 c47 d4e"),
    Probe("a position string plus turns", _AUTO, "position ..8./.3../..9./1... 7 turns b1e"),
    Probe("a strict game with a claim available", _STRICT, "position ..../..../..../012. 3 turns d14"),
    Probe("an advanced game with a 2x2 win", _ADVANCED, "position ..../..../2.../01.. 3"),
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
REORDERED_NEWGAME: Final = "newgame claims auto attributes fill,height,shape,color shapes standard"
"""The standard game, its fields and attributes in another order than an arena writes them (SPEC §4.3)."""

VARIANTS: Final[tuple[Variant, ...]] = tuple(
    parse_variant(shapes, attributes, claims)
    for shapes in ("standard", "advanced")
    for attributes in ("color,shape,height,fill", "color,fill")
    for claims in ("auto", "strict")
)
"""The ``newgame`` variants of step 5: both shapes, all attributes or a subset, both claim rules."""


@dataclass(frozen=True, slots=True)
class Searched:
    """How a search of :func:`search_probe` ended."""

    turn: Turn | None
    """The legal turn played; None when the ``go`` was refused (only with ``refusal``)."""
    line: str
    """The ``turn`` line, or the ``error`` line that refused the ``go``."""
    ms: float
    """Milliseconds, as the arena times a search: from the write of ``go`` to the chunk with the answer."""


async def search_probe(
    ck: Checker, probe: Probe, position: Position, go: Go, *, end: str = "", refusal: bool = False
) -> Searched:
    """``position`` + ``go`` -> ``info``... -> exactly one legal ``turn`` within the deadline.

    ``end`` is sent at the end of both lines, before the transport's ``\n`` (``\r`` for step 10). With ``refusal``, an
    ``error`` line instead of the turn ends the search (the caller judges it); otherwise it fails the step.
    """
    go_line = format_command(go)
    limits = [ms for ms in (go.movetime, go.time) if ms is not None]
    limit_ms = min(limits) if limits else None  # SPEC §4.5: with both, the smaller
    budget = ck.timeouts.safety if limit_ms is None else limit_ms / 1000 + ck.timeouts.search_slack
    link = ck.session
    await link.send(probe.line + end, go_line + end)
    clock = SearchClock.started(budget)  # as the arena times a search: from the write to the chunk with the turn
    where = f"after {quoted(go_line)} in {probe.label}"
    while True:
        line = await link.read(clock, f"turn {where}")
        reply = read_reply(ck, line, f"during a search ({where})")
        match reply:
            case None:
                pass
            case TurnReply(turn):
                break
            case Info():
                _check_info(ck, reply, line, position)
            case ErrorReply():
                if not refusal:
                    fail_step(f"answered {quoted(probe.line)} / {quoted(go_line)} with {quoted(line)}")
                clock.answered(link.transport.received_at)
                return Searched(None, line, clock.answer_ms())
            case _:
                fail_step(f"unexpected {quoted(line)} during a search ({where})")
    clock.answered(link.transport.received_at)
    ms = clock.answer_ms()
    _check_turn(position, turn, line, where)
    if limit_ms is not None and ms > limit_ms + ck.timeouts.margin * 1000:
        ck.warn("§4.5", f"took {ms:.0f} ms for {quoted(go_line)} (a game would be lost on time)")
    return Searched(turn, line, ms)


# --- the steps -------------------------------------------------------------------------------------------------


async def step_startup(ck: Checker) -> None:
    """1. The process starts (or the endpoint connects) and completes the handshake within the start-up deadline."""
    try:
        await ck.connect(SearchClock.started(ck.timeouts.startup))
    except StepFailed as e:
        link = ck.session
        if ck.zmq and link.transport.last_line is None:
            raise StepFailed(f"{e}: is the engine serving on {ck.config.describe()}?") from None
        raise
    ck.dirty = False


async def step_isready(ck: Checker) -> None:
    """2. ``isready`` -> ``readyok``."""
    errors = await _ping(ck, [], "'isready'")
    if errors:
        fail_step(f"answered 'isready' with {quoted(errors[0])}")


async def step_unknown_command(ck: Checker) -> None:
    """3. An unknown command gets an ``error`` line (§4.9) and the engine still answers ``isready``."""
    errors = await _ping(ck, ["frobnicate"], "'frobnicate'")
    if not errors:
        fail_step("no error line in answer to the unknown command 'frobnicate' (SPEC §4.9: answer it with 'error')")
    if errors[0].split()[1:3] != ["unknown", "command"]:
        ck.warn("§5.4", f"answered 'frobnicate' with {quoted(errors[0])}, not 'error unknown command frobnicate'")


async def step_options(ck: Checker) -> None:
    """4. Each declared option accepts its default and, a string option, the empty string (§4.2); an unknown id is
    refused. Should: a check or combo value in other letter case is accepted, and a spin refuses a value out of its
    range (an arena never sends one)."""
    for spec in ck.options:
        line = format_command(SetOption(spec.name, spec.default))
        errors = await _ping(ck, [line], quoted(line))
        if errors:
            fail_step(f"refused its own default: {quoted(line)} -> {quoted(errors[0])}")
        if spec.type is OptionType.STRING and spec.default:
            empty = format_command(SetOption(spec.name, ""))
            errors = await _ping(ck, [empty, line], quoted(empty))  # then the default again
            if errors:
                fail_step(f"refused {quoted(empty)}: {quoted(errors[0])} (SPEC §4.2: a string may be empty)")
        if spec.default is not None and spec.type in (OptionType.CHECK, OptionType.COMBO):
            other = spec.default.swapcase()
            if other != spec.default:
                bad = format_command(SetOption(spec.name, other))
                errors = await _ping(ck, [bad, line], quoted(bad))
                if errors:
                    ck.warn("§4.2", f"refused {quoted(bad)}: {quoted(errors[0])} (a {spec.type.value} in any case)")
        if spec.type is OptionType.SPIN:
            assert spec.max is not None and spec.min is not None
            bad = format_command(SetOption(spec.name, str(spec.max + 1)))
            if not await _ping(ck, [bad, line], quoted(bad)):
                ck.warn("§4.2", f"no error line for {quoted(bad)}, out of its range {spec.min}..{spec.max}")
    declared = {s.name.lower() for s in ck.options}
    unknown = next(n for n in ("NoSuchOption", "NoSuchOption_2", "NoSuchOption_3") if n.lower() not in declared)
    bad = format_command(SetOption(unknown, "1"))
    if not await _ping(ck, [bad], quoted(bad)):
        fail_step(f"no error line for the unknown option {quoted(bad)} (SPEC §4.2)")


async def step_new_games(ck: Checker) -> None:
    """5. ``newgame`` in every variant combination, then ``isready`` -> ``readyok``: the standard game is accepted,
    another refused only with ``error newgame unsupported`` (§4.3). Should: the fields in another order are the same
    game; a malformed ``newgame`` and one with an unknown value get an ``error`` line."""
    for variant in VARIANTS:
        line = format_command(NewGame(variant))
        errors = await _ping(ck, [line], quoted(line))
        if not errors:
            continue
        if variant == _AUTO:
            fail_step(f"refused the standard game: {quoted(line)} -> {quoted(errors[0])}")
        if not all(e.split()[1:3] == ["newgame", "unsupported"] for e in errors):
            fail_step(
                f"answered {quoted(line)} with {quoted(errors[0])}"
                " (an unsupported variant is 'error newgame unsupported')"
            )
        ck.unsupported.add(variant)
        ck.note(f"does not support {variant.describe()}: {quoted(errors[0])}")
    errors = await _ping(ck, [REORDERED_NEWGAME], quoted(REORDERED_NEWGAME))
    if errors:
        ck.warn("§4.3", f"refused {quoted(REORDERED_NEWGAME)}, the standard game: {quoted(errors[0])} (any order)")
    for line in (*MALFORMED_NEWGAMES, UNKNOWN_VARIANT):
        errors = await _ping(ck, [line], quoted(line))
        if not errors:
            ck.warn("§4.3", f"no error line for {quoted(line)}")
        elif line == UNKNOWN_VARIANT and errors[0].split()[1:3] != ["newgame", "unsupported"]:
            ck.warn("§4.3", f"answered {quoted(line)} with {quoted(errors[0])}, not 'error newgame unsupported ...'")


async def step_searches(ck: Checker) -> None:
    """6. Searches in positions covering every turn form, under each kind of limit: one legal ``turn`` each; a
    bare ``go`` answered within the safety deadline; a malformed ``go`` refused without a turn (§4.5)."""
    for probe in PROBES:
        if probe.variant in ck.unsupported:
            ck.note(f"{probe.label} not searched: the engine does not support {probe.variant.describe()}")
            continue
        position = probe.position()
        for go in LIMITS:
            await start_new_game(ck, probe.variant)
            await search_probe(ck, probe, position, go)
    probe = PROBES[1]
    await start_new_game(ck, probe.variant)
    t0 = time.monotonic()
    await search_probe(ck, probe, probe.position(), Go())
    if (seconds := time.monotonic() - t0) > BARE_GO_SECONDS:
        ck.warn("§4.5", f"took {seconds:.1f} s for a bare 'go' (answer within a few seconds)")
    # Should: refused without a search. A 'stop' ends a search the engine may have started for it all the same, so
    # that its turn comes now, not in the next step.
    await ck.session.send(probe.line, MALFORMED_GO, "stop", "isready")
    where = f"after {quoted(MALFORMED_GO)}, 'stop' and 'isready'"
    errors, turns = await refusals(ck, f"readyok {where}", where, lambda line: f"unexpected {quoted(line)} {where}")
    if turns:
        ck.warn("§4.5", f"answered the malformed {quoted(MALFORMED_GO)} with {quoted(turns[0])}, not 'error go'")
    elif not errors:
        ck.warn("§4.5", f"no error line for the malformed {quoted(MALFORMED_GO)}")


async def step_infinite(ck: Checker) -> None:
    """7. ``go infinite``; ``isready`` is answered during the search; ``stop`` -> one legal ``turn``; idle ``stop``.

    A ``turn`` that comes before ``stop`` passes with a warning: SPEC §4.5 says an engine should hold it until
    ``stop`` (an engine that answers every ``go`` at once included, §4.7), and that an arena accepts it.
    """
    link = ck.session
    probe = PROBES[1]
    position = probe.position()
    await start_new_game(ck, probe.variant)
    await link.send(probe.line, "go infinite")
    t0 = time.monotonic()
    turns: list[tuple[str, Turn, float]] = []

    def take(line: str, stage: str) -> None:
        match read_reply(ck, line, f"during 'go infinite' ({stage})"):
            case None:
                pass
            case TurnReply(turn):
                if turns:
                    fail_step(f"a second turn {quoted(line)} for one 'go infinite' (first: {quoted(turns[0][0])})")
                turns.append((line, turn, time.monotonic() - t0))
            case Info() as info:
                _check_info(ck, info, line, position)
            case ReadyOk() if stage == "isready":
                pass
            case _:
                fail_step(f"unexpected {quoted(line)} during 'go infinite' ({stage})")

    async for line in link.lines_within(ck.timeouts.infinite):
        take(line, "before isready")
    await link.send("isready")
    deadline = SearchClock.started(ck.timeouts.ready)
    while True:
        line = await link.read(deadline, "readyok to 'isready' during 'go infinite'")
        take(line, "isready")
        if line.split()[0] == "readyok":
            break
    await link.send("stop")
    if not turns:
        deadline = SearchClock.started(ck.timeouts.search_slack)
        while not turns:
            take(await link.read(deadline, "turn after 'stop'"), "after stop")
    else:
        line_text, _, after = turns[0]
        ck.warn("§4.5", f"answered 'go infinite' with {quoted(line_text)} after {after * 1000:.0f} ms, before 'stop'")
    line_text, turn, _ = turns[0]
    _check_turn(position, turn, line_text, "after 'go infinite' and 'stop'")
    # stop when idle: ignored, no turn (§4.6; a late second turn would show up here too) and, a should, no error.
    errors = await _ping(ck, ["stop"], "'stop' when no search runs")
    if errors:
        ck.warn("§4.6", f"answered 'stop' when no search runs with {quoted(errors[0])}, not silence")


async def _hold(ck: Checker, position: Position) -> str | None:
    """Listens to a ``go infinite`` that just started; returns a ``turn`` line that came before ``stop``, if any."""
    async for line in ck.session.lines_within(ck.timeouts.infinite):
        match read_reply(ck, line, "during 'go infinite'"):
            case TurnReply(turn):
                _check_turn(position, turn, line, "for 'go infinite'")
                ck.warn("§4.5", f"answered 'go infinite' with {quoted(line)} before 'stop': no search to test §4.10 in")
                return line
            case Info() as info:
                _check_info(ck, info, line, position)
            case None:
                pass
            case _:
                fail_step(f"unexpected {quoted(line)} during 'go infinite'")
    return None


async def step_during_search(ck: Checker) -> None:
    """8. During ``go infinite``, ``position``, ``go``, ``newgame`` and ``setoption`` get ``error`` and the search
    goes on to one legal ``turn`` at ``stop``; a ``uqi`` abandons the search: no turn comes for it (SPEC §4.10)."""
    link = ck.session
    probe = PROBES[1]
    position = probe.position()
    await start_new_game(ck, probe.variant)
    await link.send(probe.line, "go infinite")
    if await _hold(ck, position) is not None:
        return
    refused = [PROBES[0].line, format_command(Go(depth=1)), format_command(NewGame(_STRICT))]
    if ck.options:
        refused.append(format_command(SetOption(ck.options[0].name, ck.options[0].default)))
    await link.send(*refused, "isready")
    deadline = SearchClock.started(ck.timeouts.ready)
    errors: list[str] = []
    while True:
        line = await link.read(deadline, "readyok after commands sent during 'go infinite'")
        match read_reply(ck, line, "during 'go infinite'"):
            case ReadyOk():
                break
            case ErrorReply():
                errors.append(line)
            case TurnReply():
                fail_step(f"{quoted(line)} before 'stop' (SPEC §4.10: refuse 'go' during a search, do not start it)")
            case Info() | None:
                pass
            case _:
                fail_step(f"unexpected {quoted(line)} during 'go infinite'")
    named = {e.split()[1].rstrip(":") for e in errors if len(e.split()) > 1}
    missing = [c for c in refused if c.split()[0] not in named]
    if missing and len(errors) < len(refused):
        fail_step(f"no error line for {quoted(missing[0])} sent during a search (SPEC §4.10: refuse it with 'error')")
    if missing:
        ck.warn("§4.10", f"refused commands during a search with {quoted(errors[0])}, not 'error COMMAND ...'")
    await link.send("stop")
    deadline = SearchClock.started(ck.timeouts.search_slack)
    while True:
        line = await link.read(deadline, "turn after 'stop'")
        match read_reply(ck, line, "after 'stop'"):
            case TurnReply(turn):
                _check_turn(position, turn, line, f"after 'stop', for the search of {probe.label}")
                break
            case Info() | None:
                pass
            case _:
                fail_step(f"unexpected {quoted(line)} after 'stop'")
    await link.send(probe.line, "go infinite")
    if await _hold(ck, position) is not None:
        return
    ck.recorder.add("#", "a new session during the search")
    try:
        await ck.handshake(SearchClock.started(ck.timeouts.startup), abandoning=True)
    except StepFailed as e:
        fail_step(f"'uqi' during a search: {e} (SPEC §4.10: abandon the search, never send its turn)")
    # The abandoned search must stay silent, also when a stop comes; any turn shows up before readyok.
    errors = await _ping(ck, ["stop"], "'stop' after 'uqi' abandoned the search")
    if errors:
        fail_step(f"answered 'stop' when no search runs with {quoted(errors[0])} (SPEC §4.6: ignore it)")


async def step_one_reply(ck: Checker) -> None:
    """9. After a search's ``turn``, no second ``turn`` comes."""
    probe = PROBES[1]
    position = probe.position()
    await start_new_game(ck, probe.variant)
    first = (await search_probe(ck, probe, position, Go(movetime=100))).turn
    async for line in ck.session.lines_within(ck.timeouts.quiet):
        match read_reply(ck, line, "after the turn"):
            case None:
                pass
            case TurnReply():
                fail_step(f"a second turn {quoted(line)} for one 'go movetime 100' (first: 'turn {first}')")
            case Info():
                ck.warn("§5.3", f"{quoted(line)} after the turn: info belongs to a running search")
            case _:
                fail_step(f"unexpected {quoted(line)} after the turn")
    errors = await _ping(ck, [], "'isready' after a search")
    if errors:
        fail_step(f"answered 'isready' with {quoted(errors[0])}")


async def step_crlf(ck: Checker) -> None:
    """10. Commands ending in ``\\r\\n`` are understood (§3.1): ``isready``, ``newgame``, a search."""
    if ck.zmq:
        raise StepSkipped("ZeroMQ frames carry no line terminator")
    # The transport ends each line with "\n": a trailing "\r" makes it "\r\n" on the wire.
    link = ck.session
    await link.send("isready\r")
    errors = await await_readyok(ck, "to 'isready\\r\\n'")
    probe = PROBES[4]
    newgame = format_command(NewGame(probe.variant)) + "\r"
    await link.send(newgame, "isready\r")
    errors += await await_readyok(ck, "to 'newgame ...\\r\\n'")
    if errors:
        fail_step(f"answered a command ending in \\r\\n with {quoted(errors[0])}")
    crlf = Probe(probe.label + " (lines ending in \\r\\n)", probe.variant, probe.line)
    await search_probe(ck, crlf, probe.position(), Go(depth=1), end="\r")


async def step_quit(ck: Checker) -> None:
    """11. ``quit``: a process exits within the quit deadline; a ZeroMQ server then serves a new session."""
    link = ck.session
    if isinstance(link.transport, ProcessTransport):
        proc = link.transport
        await link.send("quit")
        deadline = SearchClock.started(ck.timeouts.quit)
        while proc.returncode is None and deadline.left() > 0:
            await asyncio.sleep(0.01)
        if proc.returncode is None:
            fail_step(f"still running {deadline.seconds:.3g} s after 'quit' (SPEC §3.2: exit at once)")
        ck.recorder.add("#", f"exited ({proc.exit_info()})")
        await ck.close_link()
        return
    if ck.config.endpoint is None:  # a bot connected in: the slot's session ends
        ck.recorder.add(">", "quit")
        await ck.close_link()
    else:
        # The session ends, and the server closes its socket to bind a fresh one (SPEC §3.3): wait (up to the quit
        # deadline) for that close, so that the next connection reaches the fresh socket. One that still lands on
        # the closing socket (a server slower than that) is made again by connect.
        await link.send("quit")
        with contextlib.suppress(StepFailed):
            async for _ in link.lines_within(ck.timeouts.quit):
                pass
        await ck.close_link(quit=False)
    ck.recorder.add("#", "reconnecting for a second session")
    try:
        await ck.connect(SearchClock.started(ck.timeouts.startup))
    except StepFailed as e:
        fail_step(f"after 'quit', a new session got no handshake: {e}")
    await step_isready(ck)


async def step_end_of_input(ck: Checker) -> None:
    """12. A fresh process whose input is closed in the middle of a search exits within the quit deadline."""
    if ck.zmq:
        raise StepSkipped("end of input applies to standard input only (§3.2)")
    await ck.close_link()
    deadline = SearchClock.started(ck.timeouts.startup)
    link = await ck.open()
    await ck.handshake(deadline)
    probe = PROBES[1]
    await start_new_game(ck, probe.variant)
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
        fail_step(
            f"still running {ck.timeouts.quit:.3g} s after its standard input was closed (SPEC §3.2: exit on EOF)"
        )


async def refusals(
    ck: Checker, expected: str, where: str, unexpected: Callable[[str], str]
) -> tuple[list[str], list[str]]:
    """What an engine answered to a command it should refuse, sent with ``stop`` and ``isready`` after it: the
    ``error`` lines and the ``turn`` lines up to ``readyok`` (and the turns within the quiet time after it, when
    none came before). ``expected`` and ``where`` name the wait and the lines read in a failure; a reply of another
    kind fails the step with ``unexpected(line)``."""
    deadline = SearchClock.started(ck.timeouts.ready + ck.timeouts.search_slack)
    errors: list[str] = []
    turns: list[str] = []
    while True:
        line = await ck.session.read(deadline, expected)
        match read_reply(ck, line, where):
            case ReadyOk():
                break
            case ErrorReply():
                errors.append(line)
            case TurnReply():
                turns.append(line)
            case Info() | None:
                pass
            case _:
                fail_step(unexpected(line))
    if not turns:
        turns = [line async for line in ck.session.lines_within(ck.timeouts.quiet) if line.split()[0] == "turn"]
    return errors, turns
