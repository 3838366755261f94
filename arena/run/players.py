"""Where games are played: the :class:`GamePlayer` interface, and :class:`LocalPlayer`, which plays them on this
machine with engine sessions from an :class:`EnginePool` (one session per running game per engine, reused; a remote
bot's session lasts one game, on one of the slots it offers)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Protocol

from quarto_arena.protocol.rules import Position, Variant

from ..engine import Connector, Deadlines, EngineConfig, EngineError, EngineSession
from ..records import GameRecord, TurnRecord
from ..referee import GameSpec, play_game
from ..schedule import ScheduledGame
from ..transport import DEFAULT_STDERR_LIMIT, Transcript
from .events import TurnPlayed
from .spec import RunError, RunSpec

#: Engines started at once by the check before the first game (a large roster must not start all at once).
_PREFLIGHT_AT_ONCE: Final = 8


# ----------------------------------------------------------------------------------------------------------------
# Engines


class EnginePool:
    """Engine sessions for concurrent games: one session per running game per engine, reused between games.

    A session that died in a game is handed out again as it is: :func:`play_game` restarts a session that is not
    running, so a crashed engine is restarted for its next game (and a failed restart loses that game). A remote
    engine's session is ended when it is given back (:meth:`give_back`) and started again, on any free slot of the
    bot, by its next game: the bot's slots are its own to offer, and a slot kept by an idle session would leave a
    game that waits for one waiting.
    """

    def __init__(
        self,
        engines: Sequence[EngineConfig],
        *,
        deadlines: Deadlines | None = None,
        log_dir: Path | None = None,
        log_limit: int = DEFAULT_STDERR_LIMIT,
        transcript: Transcript | None = None,
        connector: Connector | None = None,
    ) -> None:
        """Sessions are created on demand; ``log_dir`` receives each engine's standard error (``log_limit`` bytes);
        ``connector`` gives the sessions of remote engines (a server's :meth:`lease`)."""
        self.configs = {e.name: e for e in engines}
        self.deadlines = deadlines
        self.log_dir = log_dir
        self.log_limit = log_limit
        self.transcript = transcript
        self.connector = connector
        self._idle: dict[str, list[EngineSession]] = {e.name: [] for e in engines}
        self._all: list[EngineSession] = []

    def _new(self, name: str) -> EngineSession:
        stderr = None if self.log_dir is None else self.log_dir / f"{name}.stderr"
        session = EngineSession(
            self.configs[name],
            deadlines=self.deadlines,
            stderr_path=stderr,
            stderr_limit=self.log_limit,
            transcript=self.transcript,
            connector=self.connector,
        )
        self._all.append(session)
        return session

    def add(self, config: EngineConfig) -> None:
        """Adds an engine, or changes one for its sessions from now on (a ladder's bots come and go)."""
        self.configs[config.name] = config
        self._idle.setdefault(config.name, [])

    def acquire(self, name: str) -> EngineSession:
        """An idle session of engine ``name``, or a new (not yet started) one."""
        idle = self._idle[name]
        return idle.pop() if idle else self._new(name)

    def release(self, session: EngineSession) -> None:
        """Gives a session back after its game."""
        self._idle[session.name].append(session)

    async def give_back(self, session: EngineSession) -> None:
        """Gives a session back after its game, ending it first when its engine is remote (its slot is freed)."""
        if session.config.remote is not None:
            await session.quit()
        self.release(session)

    @property
    def sessions(self) -> list[EngineSession]:
        """Every session ever created."""
        return list(self._all)

    def restarts(self) -> int:
        """Engine starts beyond the first of each session: how often a failed engine was restarted."""
        return sum(max(0, s.starts - 1) for s in self._all)

    async def preflight(self, variant: Variant) -> None:
        """Starts every engine once and asks it for a new game: a configuration error stops us before any game.

        At most a few engines start at once. Raises :class:`RunError` (an engine failure) naming every engine that
        could not start.
        """
        gate = asyncio.Semaphore(_PREFLIGHT_AT_ONCE)
        sessions = [self.acquire(name) for name in self.configs]

        async def check(session: EngineSession) -> None:
            async with gate:
                await session.start()
                await session.new_game(variant)

        results = await asyncio.gather(*(check(s) for s in sessions), return_exceptions=True)
        problems = []
        for session, result in zip(sessions, results, strict=True):
            await self.give_back(session)
            if isinstance(result, EngineError):
                problems.append(str(result))
            elif isinstance(result, BaseException):
                raise result
        if problems:
            raise RunError("; ".join(problems), engine=True)

    async def close(self) -> None:
        """Quits every session (kill after the quit deadline) and reaps every process."""
        await asyncio.gather(*(s.quit() for s in self._all), return_exceptions=True)


class GamePlayer(Protocol):
    """Where and how a run's games are played: on this machine (:class:`LocalPlayer`), or elsewhere."""

    async def start(self, variant: Variant) -> None:
        """Checks every engine before the first game; raises :class:`RunError` (engine=True) naming the failures."""

    async def play(self, game: ScheduledGame, spec: GameSpec, on_abort: Callable[[GameRecord], None]) -> GameRecord:
        """Plays one game to its record; when cancelled, hands the game as far as it went to ``on_abort``."""
        ...

    async def close(self) -> None:
        """Ends every engine (none survives, none is left a zombie)."""


EnginesOf = Callable[[ScheduledGame], tuple[EngineConfig, EngineConfig]]
"""The two engines of a game, first and second, as they are to play it: for a run whose engines' options change
from game to game (a tune's)."""


class LocalPlayer:
    """Games played here, by the referee, with engine sessions from an :class:`EnginePool`; ``on_turn``, if given,
    sees every turn of every game as it is played (:class:`TurnPlayed`); ``engines_of``, if given, says each game's
    engines, which the sessions take before it (:meth:`EngineSession.configure`)."""

    def __init__(
        self,
        pool: EnginePool,
        on_turn: Callable[[TurnPlayed], None] | None = None,
        engines_of: EnginesOf | None = None,
    ) -> None:
        self.pool = pool
        self.on_turn = on_turn
        self.engines_of = engines_of

    async def start(self, variant: Variant) -> None:
        """:meth:`EnginePool.preflight`."""
        await self.pool.preflight(variant)

    async def play(self, game: ScheduledGame, spec: GameSpec, on_abort: Callable[[GameRecord], None]) -> GameRecord:
        """Plays the game with an idle session of each engine (restarted first if it died in its last game)."""
        first, second = self.pool.acquire(game.first), self.pool.acquire(game.second)
        report = self.on_turn
        on_turn = None
        if report is not None:
            game_id = game.game_id

            def on_turn(ply: int, turn: TurnRecord, position: Position) -> None:
                report(TurnPlayed(game_id, ply, turn, position))

        try:
            if self.engines_of is not None:
                configs = self.engines_of(game)
                first.configure(configs[0])
                second.configure(configs[1])
            return await play_game(first, second, spec, on_abort=on_abort, on_turn=on_turn)
        finally:
            await self.pool.give_back(first)
            await self.pool.give_back(second)

    async def close(self) -> None:
        """:meth:`EnginePool.close`."""
        await self.pool.close()


def game_spec(game: ScheduledGame, spec: RunSpec) -> GameSpec:
    """The referee's view of a scheduled game."""
    return spec.game.game(game.opening, game_id=game.game_id, round=game.round)
