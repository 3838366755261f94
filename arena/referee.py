"""One game between two engine sessions: clocks, validation by the rules core, forfeits -> a GameRecord.

The referee owns the truth: the position, the clocks (its own monotonic clock, never the engine's report) and the
result. Every reply is checked with the rules core; an engine that fails in any way loses the game with the
matching :class:`Termination` and a one-line detail, and is killed on the spot. A killed engine is left dead:
the caller sees ``session.alive`` is False and restarts it (``play_game`` itself starts a session that is not
running, so a restart before the next game is automatic; a failed start loses that game).
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from quarto_arena.arena import codec, turns
from quarto_arena.arena.engine import EngineError, EngineSession, SearchOutcome, new_games
from quarto_arena.arena.errors import ArenaFault
from quarto_arena.arena.memo import by_identities, by_identity, maker
from quarto_arena.arena.records import GameRecord, Result, Termination, TurnRecord, game_record, turn_record
from quarto_arena.arena.timecontrol import DEFAULT_MARGIN_MS, Clock, TimeControl, as_text
from quarto_arena.arena.transport import ProcessTransport
from quarto_arena.protocol.notation import (
    format_attributes,
    format_position,
    parse_position,
    parse_turns,
    parse_variant,
)
from quarto_arena.protocol.rules import STANDARD, IllegalTurn, Outcome, Position, Turn, Variant
from quarto_arena.protocol.text import safe_text
from quarto_arena.protocol.uqi import PositionCommand, format_command

if TYPE_CHECKING:
    from quarto_arena.arena._turns import Path, Reader
if TYPE_CHECKING:  # the solver is imported when a game is adjudicated: most runs never need it at start-up
    from quarto_arena.protocol.solver import Value

__all__ = ["MAX_ADJUDICATE", "OFFICIAL_TIME_CONTROL", "GameSpec", "adjudication", "play_game", "variant_text"]

log = logging.getLogger(__name__)
_WIN: Final = Outcome.WIN

OFFICIAL_TIME_CONTROL: Final = TimeControl.parse("st=60")
"""One minute per turn: the official tournament rule."""
MAX_ADJUDICATE: Final = 12
"""The most empty squares at which a game may be adjudicated: the solver proves such a position in about a second
at worst (benchmarks/solver.py), where at 13 or more it can take many."""
ADJUDICATION_TABLE_BITS: Final = 18
"""A 4 MiB table for each adjudication (a solver per game: games run concurrently, a solver is not shared)."""


@by_identity  # every game's record has it: looked up by identity, hashed only for a new variant object
@functools.lru_cache(maxsize=64)
def variant_text(variant: Variant) -> str:
    """``standard color,shape,height,fill auto``: the three ``newgame`` fields, as GameRecord stores them."""
    return f"{variant.shapes.value} {format_attributes(variant.attributes)} {variant.claims.value}"


_VARIANT_TEXT: Final = codec.hook(encode=variant_text, decode=lambda text, _: parse_variant(*str(text).split(" ")))
"""A variant as :func:`variant_text` (GameRecord's form)."""


@dataclass(frozen=True, slots=True)
class GameSpec:
    """Everything about a game except the engines."""

    variant: Variant = field(default=STANDARD, metadata=_VARIANT_TEXT)
    """The rules."""
    time_control: TimeControl = field(default=OFFICIAL_TIME_CONTROL, metadata=as_text())
    """The time control of both players (an engine's own ``EngineConfig.time_control`` overrides it)."""
    margin_ms: int = DEFAULT_MARGIN_MS
    """Overrun tolerated before a player loses on time, ms."""
    start: str | None = None
    """Position string the game starts from, None for the empty board. Its player to move is ``first``."""
    opening: tuple[str, ...] = ()
    """Turn tokens played from ``start`` before the engines take over (recorded with ms 0)."""
    game_id: int = 0
    """Index of the game in its schedule."""
    round: int = 1
    """Round number."""
    names: tuple[str, str] | None = None
    """Display names of first and second, when they differ from the sessions' names."""
    adjudicate: int | None = None
    """End the game when a position with at most this many empty squares (1..12) and a player to move is reached,
    with the result of perfect play from there (termination ``adjudicated``); None: play to the end."""

    def __post_init__(self) -> None:
        _check_adjudicate(self.adjudicate)


def _check_adjudicate(adjudicate: int | None) -> None:
    """Raises ValueError unless ``adjudicate`` is None or 1 to :data:`MAX_ADJUDICATE` empty squares."""
    if adjudicate is not None and not 1 <= adjudicate <= MAX_ADJUDICATE:
        raise ValueError(f"adjudication needs 1 to {MAX_ADJUDICATE} empty squares, not {adjudicate}")


_make_spec: Final = maker(GameSpec)


def new_game_spec(*, adjudicate: int | None = None, **fields: Any) -> GameSpec:
    """``GameSpec(...)``, checked as its ``__post_init__`` does, at about half the cost
    (:func:`~quarto_arena.arena.memo.maker`): a run makes one a game."""
    _check_adjudicate(adjudicate)
    return _make_spec(adjudicate=adjudicate, **fields)


_START_LINE: Final = format_command(PositionCommand(None))


def _now_text() -> str:
    """``datetime.now(UTC).isoformat(timespec="seconds")`` (a game's ``started``), formatted once a second."""
    return _second_text(int(time.time()))


@functools.lru_cache(maxsize=2)
def _second_text(second: int) -> str:
    return datetime.datetime.fromtimestamp(second, datetime.UTC).isoformat(timespec="seconds")


async def play_game(
    first: EngineSession,
    second: EngineSession,
    spec: GameSpec,
    *,
    on_abort: Callable[[GameRecord], None] | None = None,
    on_turn: Callable[[int, TurnRecord, Position], None] | None = None,
) -> GameRecord:
    """Plays one game; ``first`` gives the first piece (or moves first from ``spec.start``).

    ``on_turn``, if given, sees every turn the engines play (not the opening's): its index in the game (opening turns
    included), its record and the position after it, as soon
    as the referee has checked it: a live view of the game. It must return quickly (the clocks run on this loop).

    Never raises for an engine fault: the faulty engine loses, is killed, and the record says why. Raises
    ValueError for a bad start position or opening (the spec's fault, not an engine's). When cancelled (the run
    stopped), both engines are killed (they may be in the middle of a search), ``on_abort`` receives the game as
    far as it went (result ``*``, termination ``aborted``), and the cancellation propagates.
    """
    variant = spec.variant
    start = Position.start(variant) if spec.start is None else parse_position(spec.start, variant)
    game = _Game(first, second, spec, start, on_turn)
    if spec.opening:
        _open(game, spec)
    try:
        return await game.play()
    except asyncio.CancelledError:
        await asyncio.gather(first.kill(), second.kill())
        if on_abort is not None:
            on_abort(game.abandoned())
        raise
    except ArenaFault as e:
        # The arena's own failure is no engine's: the game is kept apart, as when the run stops.
        await asyncio.gather(first.kill(), second.kill())
        e.record = game.abandoned(f"abandoned: {e}")
        raise


def _open(game: _Game, spec: GameSpec) -> None:
    """Gives the game the state its opening's turns lead to (recorded with ms 0): every part of it is immutable but
    the two lists, which are copied, as each game appends its own turns."""
    game.position, game.position_line, played, records = _opened(spec.opening, spec.variant, spec.start)
    game.turns = list(played)
    game.records = list(records)


@by_identities
def _opened(
    opening: tuple[str, ...], variant: Variant, start: str | None
) -> tuple[Position, str, tuple[Turn, ...], tuple[TurnRecord, ...]]:
    """The position, position line, turns and records after ``opening`` played from ``start`` under ``variant``.
    Remembered: a run's openings are shared by the games of a pair, or of a round, and each is replayed once."""
    position = Position.start(variant) if start is None else parse_position(start, variant)
    replay = _Turns(position, None if start is None else format_position(position))
    for turn in parse_turns(opening):
        replay.record(turn, 0, None)
    return replay.position, replay.position_line, tuple(replay.turns), tuple(replay.records)


_Stop = None | tuple[int, "SearchOutcome | tuple[Termination, str]"]
"""Why the turns stopped: None (the game is over or to be adjudicated), or the side that loses with its failed search
or with the termination and detail of its illegal turn."""


class _Turns(turns.GameSlots):
    """The turns of a game so far: the position they lead to, its position line, the turns and their records."""

    def __init__(self, start: Position, start_text: str | None) -> None:
        self.position = start
        # The position line sent before every search, grown by one canonical token per turn: what
        # format_command(PositionCommand(start, turns)) gives, without formatting the whole game every turn.
        self.position_line = _START_LINE if start_text is None else format_command(PositionCommand(start_text))
        self.turns: list[Turn] = []
        self.records: list[TurnRecord] = []

    def record(self, turn: Turn, ms: int, score: str | None) -> None:
        """Plays a turn and records it; raises IllegalTurn when the rules do not allow it."""
        after = self.position.apply(turn)
        # A turn that wins nothing is recorded as sent (canonical only changes a winning placement's give or call).
        canonical = turn if after.outcome is not _WIN else self.position.canonical(turn, after)
        self.position = after
        token = canonical.token
        self.position_line += f" {token}" if self.turns else f" turns {token}"
        self.turns.append(canonical)
        self.records.append(turn_record(token=token, ms=ms, score=score))


class _Game(_Turns):
    """The state of one game in progress (the loop is :meth:`play`)."""

    def __init__(
        self,
        first: EngineSession,
        second: EngineSession,
        spec: GameSpec,
        start: Position,
        on_turn: Callable[[int, TurnRecord, Position], None] | None = None,
    ) -> None:
        self.players = (first, second)
        self.on_turn = on_turn
        self.names = spec.names or (first.name, second.name)
        self.spec = spec
        self.start_text = None if spec.start is None else format_position(start)
        super().__init__(start, self.start_text)
        tc, margin = spec.time_control, spec.margin_ms
        self.clocks = (Clock(first.config.time_control or tc, margin), Clock(second.config.time_control or tc, margin))
        self.started = _now_text()
        self.exit_info: dict[str, str] = {}
        self._side = 0
        """The player whose search runs."""
        self._stop: asyncio.Future[_Stop] = asyncio.get_running_loop().create_future()
        """What :meth:`play` waits for while the turns are played (see :data:`_Stop`)."""
        self._fast: Path | None = None
        """The compiled path of the usual turn (arena/turns.py), while the turns are played, where it applies."""
        self._readers: tuple[Reader, Reader] | None = None
        """The engines' compiled readers that :attr:`_fast` is attached to."""

    async def play(self) -> GameRecord:
        for side, engine in enumerate(self.players):
            if failure := await self._restart(engine):
                return await self.forfeit(side, *failure)
        # Both engines get ready at once (one wait for both answers); the first that failed loses the game.
        failures = await new_games(self.players, self.spec.variant)
        for side, failed in enumerate(failures):
            if failed is not None:
                if side == 0 and failures[1] is not None:  # not this game's loss: restarted before its next game
                    log.info("game %d: %s", self.spec.game_id, failures[1])
                    await self.players[1].kill()
                return await self.forfeit(side, failed.termination, str(failed))
        # The turns are played by callbacks, not by this coroutine: each engine's answer is checked, recorded and
        # followed by the other engine's search in the event loop's callback that read it (one pass of the loop
        # per turn, not two). This coroutine waits for what ends them: the end of the game, an adjudication, a
        # failed search or an illegal turn.
        self._fast = fast_path(self)
        try:
            self._ask()
            ended = await self._stop
        except BaseException:  # cancelled (the run stopped) or the arena's own fault: no search is followed up
            for engine in self.players:
                engine.abandon()
            raise
        finally:
            if self._fast is not None and self._readers is not None:
                detach(self._fast, self._readers)
                self._fast = self._readers = None
        if ended is None:
            if self.position.is_over:
                return self.finish()
            return await self.adjudicate()
        side, out = ended
        if isinstance(out, SearchOutcome):
            out = await self.players[side].settled(out)
            assert out.termination is not None
            return await self.forfeit(side, out.termination, out.detail)
        return await self.forfeit(side, *out)

    def _ask(self) -> None:
        """The player to move searches; or the game stops, when it is over or to be adjudicated."""
        if self.position.is_over or (
            self.spec.adjudicate is not None and 16 - self.position.placed <= self.spec.adjudicate
        ):
            self._stop.set_result(None)
            return
        side = self._side = len(self.turns) % 2
        engine, clock = self.players[side], self.clocks[side]
        go = clock.go_line(self.clocks[1 - side])
        engine.search_soon(self.position_line, go, clock.deadline(engine.deadlines.safety), self._answered)
        if self._fast is not None:  # its answer may take the compiled path (which asks the next one itself)
            self._fast.arm(side)

    def _answered(self, out: SearchOutcome) -> None:
        """The search of the player to move ended (called from the event loop's callback that ended it)."""
        stop = self._stop
        if stop.done():  # the game was already stopped (a fault below, then a late end)
            return
        try:
            side = self._side
            if out.turn is None:
                stop.set_result((side, out))
                return
            self.clocks[side].charge(out.ms)
            try:
                self.record(out.turn, out.ms, out.score)
            except IllegalTurn as e:
                reason = Termination.FALSE_CLAIM if e.false_claim else Termination.ILLEGAL_TURN
                stop.set_result((side, (reason, f"{self.names[side]}: {reason.value} {out.turn}: {e}")))
                return
            if self.on_turn is not None:
                self.on_turn(len(self.records) - 1, self.records[-1], self.position)
            self._ask()
        except Exception as e:  # the arena's own fault: raised in play(), not in the engine's reader
            if not stop.done():
                stop.set_exception(e)

    async def _restart(self, engine: EngineSession) -> tuple[Termination, str] | None:
        """Starts the engine if it is not running (a restart after a crash); the failure, if it failed."""
        try:
            if not engine.alive:
                await engine.start()
        except EngineError as e:
            return e.termination, str(e)
        return None

    async def adjudicate(self) -> GameRecord:
        """Ends the game with the result of perfect play from here (solved in a thread: other games go on)."""
        from quarto_arena.protocol.solver import Verdict

        value = await asyncio.to_thread(adjudication, self.position)
        side = len(self.turns) % 2  # the player to move
        empty = 16 - self.position.placed
        if value.verdict is Verdict.DRAW:
            return self._record(Result.DRAW, Termination.ADJUDICATED, f"adjudicated at {empty} empty: a draw")
        winner = side if value.verdict is Verdict.WIN else 1 - side
        turns = f"{value.turns} turn{'s' if value.turns != 1 else ''}"
        detail = f"adjudicated at {empty} empty: {self.names[winner]} wins with perfect play in {turns}"
        return self._record(Result.FIRST_WINS if winner == 0 else Result.SECOND_WINS, Termination.ADJUDICATED, detail)

    def abandoned(self, detail: str = "abandoned: the run stopped during the game") -> GameRecord:
        """The game as far as it went, when the run stopped during it (not scored; played again on resume)."""
        return self._record(Result.UNFINISHED, Termination.ABORTED, detail)

    def finish(self) -> GameRecord:
        if self.position.outcome is Outcome.DRAW:
            return self._record(Result.DRAW, Termination.NORMAL, "draw: the board is full")
        winner = (len(self.turns) - 1) % 2  # the player who made the last turn
        how = "claims the missed alignment" if self.turns and self.turns[-1].claim else "completes an alignment"
        result = Result.FIRST_WINS if winner == 0 else Result.SECOND_WINS
        return self._record(result, Termination.NORMAL, f"{self.names[winner]} {how}")

    async def forfeit(self, side: int, termination: Termination, detail: str) -> GameRecord:
        """The engine on ``side`` loses: its exit status is noted, then it is killed (the caller restarts it)."""
        engine = self.players[side]
        transport = engine.transport
        status = engine.exit_info() if transport is not None and transport.gone else "killed by the arena"
        last = None if transport is None else transport.last_line
        self.exit_info[self.names[side]] = f"{status}; last line {last!r}" if last is not None else str(status)
        log.info("game %d: %s", self.spec.game_id, detail)
        await engine.kill()
        return self._record(Result.SECOND_WINS if side == 0 else Result.FIRST_WINS, termination, detail)

    def _record(self, result: Result, termination: Termination, detail: str) -> GameRecord:
        spec, names, players = self.spec, self.names, self.players
        return game_record(
            first=names[0],
            second=names[1],
            result=result,
            termination=termination,
            detail=safe_text(detail, None),
            variant=variant_text(spec.variant),
            time_control=spec.time_control.text,
            start=self.start_text or "startpos",
            opening=tuple(r.token for r in self.records[: len(spec.opening)]),
            turns=tuple(self.records),
            game_id=spec.game_id,
            round=spec.round,
            started=self.started,
            exit_info=dict(self.exit_info),
            engines=(players[0].identity(), players[1].identity()),
        )


@by_identities
def _path_setup(
    control0: TimeControl, control1: TimeControl, margin0: int, margin1: int, safety0: float, safety1: float
) -> tuple[tuple[str, str], tuple[float, float]] | None:
    """The go lines and deadlines of a game's compiled path that are the same every turn: those of two controls
    without a game clock; None with one (they are asked of the game's clocks each turn). Remembered: every game of a
    run has the same settings."""
    c0, c1 = Clock(control0, margin0), Clock(control1, margin1)
    if c0.remaining_ms is not None or c1.remaining_ms is not None:
        return None
    return (c0.go_line(c1), c1.go_line(c0)), (float(c0.deadline(safety0)), float(c1.deadline(safety1)))


def fast_path(game: _Game) -> Path | None:
    """Arms the compiled turn path for a game, where it applies: two engine processes (not one playing itself)
    whose readers are compiled, without a transcript or debug log, and no live view of the game (``on_turn``).
    The engines' readers then take each usual answer in C and ask the next search themselves; the game's state
    stays this one's (see arena/turns.py). Made once a game: what depends only on the run is remembered
    (:func:`_path_setup`, :func:`turns.rules`)."""
    if game.on_turn is not None:
        return None
    first, second = game.players
    t0, t1 = first.transport, second.transport
    if first is second or not isinstance(t0, ProcessTransport) or not isinstance(t1, ProcessTransport):
        return None
    r0, r1 = t0.fast_reader, t1.fast_reader
    if r0 is None or r1 is None:
        return None
    c0, c1 = game.clocks
    safeties = (first.deadlines.safety, second.deadlines.safety)
    fixed = _path_setup(c0.control, c1.control, c0.margin_ms, c1.margin_ms, *safeties)
    path = turns.path(
        game,
        game.position.variant,
        game.players,
        (t0, t1),
        turns.rules(game.spec.variant),
        asyncio.get_running_loop(),
        game._answered,
        game.clocks,
        None if fixed is None else fixed[0],
        None if fixed is None else fixed[1],
        safeties,
        (t0.input_fd, t1.input_fd),
        -1 if game.spec.adjudicate is None else game.spec.adjudicate,
    )
    r0.attach(path, 0)
    r1.attach(path, 1)
    game._readers = (r0, r1)
    return path


def detach(path: Path, readers: tuple[Reader, Reader]) -> None:
    """The game's turns are over: its engines' readers go back to the Python path alone."""
    path.disarm()
    for reader in readers:
        reader.attach(None)


def adjudication(position: Position) -> Value:
    """The value of perfect play for the player to move (exact: no time limit, see :data:`MAX_ADJUDICATE`)."""
    from quarto_arena.protocol.solver import Solver

    found = Solver(position.variant, tt_bits=ADJUDICATION_TABLE_BITS).value(position)
    assert found.value is not None  # no limits: the solver always proves it
    return found.value
