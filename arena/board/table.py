"""The board's game: a person against an engine (either side), two people, or two engines, one game at a time.

The game is played by :func:`~quarto_arena.arena.referee.play_game`, the referee of every run: each side is an
:class:`~quarto_arena.arena.engine.EngineSession` (a person's over :class:`~.human.HumanTransport`), so the clocks,
the checks of every turn, the forfeits (a time-out, a crash, an illegal turn, a false claim) and the record are the
run's own. An engine gets a session of its own for the game, and is ended with its process group when the game
ends (quit, then the kill). The record is appended to ``games.pgn`` and ``games.jsonl`` in the board's directory,
written as a run writes them; a game the person abandons is saved too, with the result ``*``.

:meth:`Table.state` is what the pages show (JSON): the players, the turns (the viewer's encoding), the clocks, who
is to move and whether a person is asked, and how the game ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from quarto_arena.protocol.notation import NotationError, parse_position, parse_turn, parse_turns
from quarto_arena.protocol.rules import IllegalTurn, Outcome, Position, Variant, iter_alignments
from quarto_arena.protocol.text import safe_text

from ..engine import Deadlines, EngineConfig, EngineSession
from ..errors import ArenaFault
from ..pgn import pgn_text
from ..records import GameRecord, TurnRecord, json_line
from ..referee import GameSpec, play_game, variant_text
from ..run import JSONL_NAME, PGN_NAME
from ..schedule import STARTPOS
from ..timecontrol import DEFAULT_MARGIN_MS, Clock, TimeControl
from ..web.model import replay
from . import BoardError
from .engines import Engines
from .human import HUMAN, HUMAN_SOURCE, HumanTransport

__all__ = ["EVENT", "HUMAN_SAFETY", "GameSettings", "Table", "won_lines"]

log = logging.getLogger(__name__)

EVENT: Final = "quarto-arena board"
"""The PGN Event tag of the board's games."""
ASK_WAIT: Final = 5.0
"""Seconds a person's turn sent a moment early waits for the referee's ask (see :meth:`Table.play`)."""
HUMAN_SAFETY: Final = 24 * 3600.0
"""Seconds a person without a clock may think about one turn before the game is lost on time (a page left open)."""
_UNTIMED: Final = TimeControl.parse("inf")


@dataclass(frozen=True, slots=True)
class GameSettings:
    """A game the board is asked to play."""

    players: tuple[str, str]
    """Who plays first (gives the first piece, or moves first from ``start``) and second: ``human`` or an engine."""
    variant: Variant
    """The rules."""
    time_control: TimeControl
    """The engines' time control (and the people's, with ``human_clock``)."""
    human_clock: bool = False
    """The people play under the time control too (otherwise they have no clock; see :data:`HUMAN_SAFETY`)."""
    start: str | None = None
    """The position string the game starts from; None: the empty board."""
    opening: tuple[str, ...] = ()
    """Turns played from ``start`` before the players take over (the board's line up to the position shown)."""

    def check(self) -> Position:
        """The position the players take over from; :class:`BoardError` naming a bad start or turn."""
        try:
            start = Position.start(self.variant) if self.start is None else parse_position(self.start, self.variant)
            position = start.play(parse_turns(self.opening))
        except (NotationError, IllegalTurn) as e:
            raise BoardError(f"the game's start: {e}") from None
        if position.is_over:
            raise BoardError("the game is over in that position: start from an earlier one")
        return position


class Table:
    """The one game in play (or the last one played), and its record once over."""

    def __init__(self, engines: Engines, directory: Path, *, on_change: Callable[[], None]) -> None:
        """Games are saved in ``directory`` (made with the first game); ``on_change`` is called at every change."""
        self.engines = engines
        self.directory = directory
        self._on_change = on_change
        self.version = 0
        """Bumped by every change of :meth:`state`."""
        self._task: asyncio.Task[None] | None = None
        self._settings: GameSettings | None = None
        self._sessions: tuple[EngineSession, EngineSession] | None = None
        self._engines: tuple[str, ...] = ()
        """The engines playing the game (each taken from its desk once)."""
        self._humans: tuple[HumanTransport | None, HumanTransport | None] = (None, None)
        self._records: list[TurnRecord] = []
        self._position: Position | None = None
        self._clocks: tuple[Clock, Clock] | None = None
        self._asked_at = 0.0
        self._record: GameRecord | None = None
        self._saved: str | None = None
        self._aborted: GameRecord | None = None
        self._games = _saved_games(directory)
        self._starting = False
        self._ask = asyncio.Event()
        """Set while a person is asked for a turn (cleared by every turn played)."""

    @property
    def playing(self) -> bool:
        """True while a game is in play."""
        return self._task is not None and not self._task.done()

    def _changed(self) -> None:
        self.version += 1
        self._on_change()

    # --- starting, playing, abandoning

    async def start(self, settings: GameSettings) -> None:
        """Starts a game (:class:`BoardError` when one is in play, or the settings are bad); returns once both
        sides are ready to play (an engine that cannot start loses the game, as in a run)."""
        if self.playing or self._starting:
            raise BoardError("a game is in play: abandon it first")
        position = settings.check()
        for name in settings.players:
            if name != HUMAN:
                self.engines.desk(name)  # a name that is no engine's is refused before anything starts
        self._starting = True  # two tabs asking at once start one game: the sessions below take a moment
        try:
            await self._start(settings, position)
        finally:
            self._starting = False

    async def _start(self, settings: GameSettings, position: Position) -> None:
        spec = GameSpec(
            variant=settings.variant,
            time_control=settings.time_control,
            margin_ms=DEFAULT_MARGIN_MS,
            start=settings.start,
            opening=settings.opening,
            game_id=self._games + 1,
        )
        sessions: list[EngineSession] = []
        humans: list[HumanTransport | None] = []
        taken: dict[str, EngineSession] = {}
        try:
            for name in settings.players:
                human = None
                if name == HUMAN:
                    human, session = await self._person(settings)
                elif name in taken:  # an engine playing itself: one session for both sides, as in a run
                    session = taken[name]
                else:
                    session = taken[name] = await self.engines.to_game(name, self._stderr)
                humans.append(human)
                sessions.append(session)
        except BaseException:
            for session in sessions:
                await session.kill()
            for name in taken:
                self.engines.from_game(name)
            raise
        first, second = sessions
        control = settings.time_control
        self._games = spec.game_id
        self._settings = settings
        self._sessions = (first, second)
        self._engines = tuple(taken)
        self._humans = (humans[0], humans[1])
        self._records = [TurnRecord(t.token, 0) for t in parse_turns(settings.opening)]
        self._position = position
        self._clocks = (
            Clock(first.config.time_control or control, DEFAULT_MARGIN_MS),
            Clock(second.config.time_control or control, DEFAULT_MARGIN_MS),
        )
        self._record = self._saved = self._aborted = None
        self._asked_at = time.monotonic()
        self._ask.clear()
        self._task = asyncio.create_task(self._play(spec))
        self._changed()

    async def _person(self, settings: GameSettings) -> tuple[HumanTransport, EngineSession]:
        """A person's side: a session over a :class:`HumanTransport`, started (the handshake is answered at once)."""
        control = None if settings.human_clock else _UNTIMED
        config = EngineConfig(HUMAN, command=(HUMAN_SOURCE,), time_control=control)
        human = HumanTransport(HUMAN, self._asked)
        session = EngineSession(config, deadlines=Deadlines(safety=HUMAN_SAFETY))
        await session.start(human)
        return human, session

    def _stderr(self, name: str) -> Path:
        logs = self.directory / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        return logs / f"{name}.stderr"

    async def play(self, token: str, ply: int) -> None:
        """The person's turn ``token`` at turn number ``ply`` of the game (0: the first); :class:`BoardError` when
        no person is to move there, or the turn is not legal.

        The page may send it a moment before the referee has asked the person (the game has just started, or the
        page drew the position before the news that the person was asked): it then waits for the ask, a few
        seconds at most. ``ply`` makes sure a turn is played in the position it was chosen in, never in a later one."""
        side = ply % 2
        human = self._humans[side]
        if not self.playing or human is None or ply != len(self._records):
            raise BoardError("no game waits for your turn")
        if not human.asked:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ask.wait(), ASK_WAIT)
        if not self.playing or ply != len(self._records) or not human.asked or self._position is None:
            raise BoardError("no game waits for your turn")
        try:
            turn = parse_turn(token)
            self._position.apply(turn)
        except (NotationError, IllegalTurn) as e:
            raise BoardError(f"{safe_text(token, 12)}: {e}") from None
        human.answer(turn.token)

    def _asked_human(self) -> HumanTransport | None:
        if not self.playing:
            return None
        human = self._humans[len(self._records) % 2]
        return human if human is not None and human.asked else None

    def _asked(self) -> None:
        self._asked_at = time.monotonic()
        self._ask.set()
        self._changed()

    async def abandon(self) -> None:
        """Ends the game in play at once (both sides' sessions ended); it is saved with the result ``*``."""
        task = self._task
        if task is None or task.done():
            raise BoardError("no game is in play")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def close(self) -> None:
        """Abandons the game in play, if any (the board is stopping)."""
        if self.playing:
            await self.abandon()

    # --- the referee's side

    async def _play(self, spec: GameSpec) -> None:
        sessions = self._sessions
        assert sessions is not None
        first, second = sessions
        record: GameRecord | None = None
        try:
            record = await play_game(first, second, spec, on_turn=self._turn, on_abort=self._abort)
        except asyncio.CancelledError:
            record = self._aborted
            self._aborted = None
            if record is not None:
                record = _abandoned(record)
        except ArenaFault as e:
            record = e.record if isinstance(e.record, GameRecord) else None
        finally:
            for session in sessions:
                await session.quit()  # quit, then the process group's kill: nothing of the game's engines is left
            for name in self._engines:
                self.engines.from_game(name)
        self._record = record
        if record is not None:
            self._saved = self._save(record)
        self._changed()

    def _turn(self, ply: int, turn: TurnRecord, position: Position) -> None:
        clocks = self._clocks
        if clocks is not None:
            clocks[ply % 2].charge(turn.ms)
        self._records.append(turn)
        self._position = position
        self._asked_at = time.monotonic()
        self._ask.clear()
        self._changed()

    def _abort(self, record: GameRecord) -> None:
        self._aborted = record

    def _save(self, record: GameRecord) -> str:
        """Appends the game to the directory's PGN and JSON Lines; what the page says of it."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with (self.directory / PGN_NAME).open("a", encoding="utf-8") as pgn:
                pgn.write(("\n" if pgn.tell() else "") + pgn_text(record, EVENT))
            with (self.directory / JSONL_NAME).open("a", encoding="utf-8") as jsonl:
                jsonl.write(json_line(record) + "\n")
        except OSError as e:
            log.warning("board: game %d not saved: %s", record.game_id, e.strerror or e)
            return f"not saved: {e.strerror or e}"
        return f"saved in {self.directory / PGN_NAME} and {JSONL_NAME}"

    # --- what the pages show

    def state(self) -> dict[str, Any] | None:
        """The game in play or the last one (JSON), None before the first."""
        settings = self._settings
        if settings is None:
            return None
        start = settings.start or STARTPOS
        r = replay(settings.variant, start, self._records)
        record = self._record
        playing = self.playing
        side = len(self._records) % 2
        human = self._asked_human()
        clocks = self._clocks or ()
        return {
            "id": self._games,
            "playing": playing,
            "players": list(settings.players),
            "humans": [h is not None for h in self._humans],
            "variant": variant_text(settings.variant),
            "tc": settings.time_control.text,
            "human_clock": settings.human_clock,
            "start": start,
            "tokens": [t.token for t in self._records],
            "board": r.board,
            "hand": r.hand,
            "plies": r.plies,
            "opening": len(settings.opening),
            "to_move": side if playing else None,
            "asked": human is not None,
            "thinking_ms": round(1000 * (time.monotonic() - self._asked_at)) if playing else 0,
            "clocks": [{"remaining_ms": c.remaining_ms, "movetime_ms": c.control.movetime_ms} for c in clocks],
            "result": None if record is None else record.result.value,
            "termination": None if record is None else record.termination.value,
            "detail": None if record is None else record.detail,
            "saved": self._saved,
            "lines": [] if r.position is None or playing else won_lines(r.position),
        }


def won_lines(position: Position) -> list[int]:
    """The alignments that won the game (square masks), or none while it goes on or after a draw."""
    return list(iter_alignments(position)) if position.outcome is Outcome.WIN else []


def _abandoned(record: GameRecord) -> GameRecord:
    """The referee's aborted record, with the board's reason."""
    return replace(record, detail="abandoned at the board")


def _saved_games(directory: Path) -> int:
    """Games already in the directory's JSON Lines (the next game's number follows them)."""
    try:
        with (directory / JSONL_NAME).open("rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0
