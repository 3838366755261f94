"""The engines loaded on the board (``--engine``): asked for their turn on any position, or playing the game.

Each engine has one desk (:class:`Desk`): idle, searching a position for a page, or playing the board's game, one
at a time (a ZeroMQ engine serves one session at a time; a person asking an engine to think while it plays would
take its time from the game). A search for a page runs on an engine session of its own, kept between searches
and ended when the engine goes to a game (which starts it afresh, as a run's first game does) or the board stops.

The ``info`` lines of a search are read on the way to the session (a :class:`~quarto_arena.arena.transport.LineSink`
between the transport and the session): the last :data:`MAX_INFO` of each search are kept, each cut to
:data:`INFO_CHARS` characters, control characters replaced.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from quarto_arena.protocol.notation import parse_turns
from quarto_arena.protocol.rules import IllegalTurn, Position, Variant
from quarto_arena.protocol.text import safe_text
from quarto_arena.protocol.uqi import PositionCommand, format_command

from ..engine import Deadlines, EngineConfig, EngineError, EngineSession
from ..timecontrol import Clock, TimeControl
from . import BoardError

__all__ = ["INFO_CHARS", "MAX_INFO", "Answer", "Desk", "DeskState", "Engines"]

MAX_INFO: Final = 200
"""``info`` lines kept from one search (the last ones)."""
INFO_CHARS: Final = 300
"""Characters kept of one ``info`` line."""


class DeskState(enum.Enum):
    """What an engine is doing."""

    IDLE = "idle"
    SEARCHING = "searching"
    PLAYING = "playing"


@dataclass(frozen=True, slots=True)
class Answer:
    """What an engine said about a position."""

    engine: str
    """Its name."""
    turn: str | None
    """Its turn, or None when it failed (see :attr:`error`)."""
    ms: int
    """How long it took, on our clock."""
    score: str | None
    """The last score it reported."""
    info: tuple[str, ...]
    """Its ``info`` lines (the last :data:`MAX_INFO`), made safe to show."""
    error: str | None = None
    """Why there is no turn (a time-out, a crash, an illegal turn), one line."""

    def to_json(self) -> dict[str, Any]:
        """The page's data."""
        return {
            "engine": self.engine,
            "turn": self.turn,
            "ms": self.ms,
            "score": self.score,
            "info": list(self.info),
            "error": self.error,
        }


class _InfoTap:
    """Keeps a search's ``info`` lines on their way from the transport to the session."""

    def __init__(self, session: EngineSession) -> None:
        self.session = session
        self.lines: collections.deque[str] = collections.deque(maxlen=MAX_INFO)

    def line(self, text: str) -> None:
        if text.startswith("info"):
            self.lines.append(safe_text(text, INFO_CHARS))
        self.session.line(text)

    def bad_line(self, why: str) -> None:
        self.session.bad_line(why)

    def gone(self, why: str) -> None:
        self.session.gone(why)


class Desk:
    """One loaded engine: its configuration, what it is doing, and its session for the pages' searches."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.state = DeskState.IDLE
        self.session: EngineSession | None = None
        self.variant: Variant | None = None
        """The variant of the session's last ``newgame``."""
        self.tap: _InfoTap | None = None


class Engines:
    """The loaded engines, by name (the roster's settled names)."""

    def __init__(
        self,
        configs: Sequence[EngineConfig],
        *,
        deadlines: Deadlines | None = None,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        """``on_change`` is called when an engine's state changes (the pages show it)."""
        self.desks = {c.name: Desk(c) for c in configs}
        self.deadlines = deadlines or Deadlines()
        self._on_change = on_change

    def names(self) -> list[str]:
        """The engines' names, in the order given."""
        return list(self.desks)

    def states(self) -> list[dict[str, str]]:
        """Each engine's name and state (JSON)."""
        return [{"name": name, "state": d.state.value} for name, d in self.desks.items()]

    def desk(self, name: str) -> Desk:
        """The desk of engine ``name``; :class:`BoardError` when no engine has that name."""
        desk = self.desks.get(name)
        if desk is None:
            known = ", ".join(self.desks) or "none (start the board with --engine)"
            raise BoardError(f"no engine is named {safe_text(name, 64)!r} (loaded: {known})")
        return desk

    def _set(self, desk: Desk, state: DeskState) -> None:
        desk.state = state
        self._on_change()

    async def ask(self, name: str, start: Position, turns: Sequence[str], limit: TimeControl) -> Answer:
        """Engine ``name``'s turn in the position after ``turns`` from ``start``, under ``limit`` (a ``go``: movetime,
        depth, nodes, a clock, or ``inf``, which runs until :meth:`stop` or the safety deadline).

        Raises :class:`BoardError` when the engine is busy or the turns do not apply; an engine that fails (cannot
        start, times out, crashes, answers nonsense or an illegal turn) is an :class:`Answer` with its error, and
        its session is ended, as a referee ends a failed engine's."""
        desk = self.desk(name)
        if desk.state is not DeskState.IDLE:
            doing = "playing the game: ask it once the game is over" if desk.state is DeskState.PLAYING else "searching"
            raise BoardError(f"{name} is {doing}")
        try:
            played = tuple(parse_turns(turns))
            position = start.play(played)
        except (ValueError, IllegalTurn) as e:
            raise BoardError(f"the position to search: {e}") from None
        if position.is_over:
            raise BoardError("the game is over in this position: there is nothing to search")
        self._set(desk, DeskState.SEARCHING)
        try:
            return await self._search(desk, PositionCommand(str(start), played), position, limit)
        finally:
            self._set(desk, DeskState.IDLE)

    async def _search(self, desk: Desk, command: PositionCommand, position: Position, limit: TimeControl) -> Answer:
        name = desk.config.name
        try:
            session = await self._session(desk, position.variant)
        except EngineError as e:
            return Answer(name, None, 0, None, (), str(e))
        tap = desk.tap
        assert tap is not None  # made with the session
        tap.lines.clear()
        clock = Clock(limit)
        go, deadline = clock.go_line(Clock(limit)), clock.deadline(self.deadlines.safety)
        out = await session.search(format_command(command), go, deadline)
        info = tuple(tap.lines)
        if out.turn is None:
            await self._end(desk)
            return Answer(name, None, out.ms, out.score, info, out.detail)
        try:
            after = position.apply(out.turn)
        except IllegalTurn as e:
            await self._end(desk)
            return Answer(name, str(out.turn), out.ms, out.score, info, f"{name}: illegal turn {out.turn}: {e}")
        return Answer(name, str(position.canonical(out.turn, after)), out.ms, out.score, info)

    async def _session(self, desk: Desk, variant: Variant) -> EngineSession:
        session = desk.session
        if session is None or not session.alive:
            session = desk.session = EngineSession(desk.config, deadlines=self.deadlines)
            desk.variant = None
            await session.start()
            transport = session.transport
            assert transport is not None  # started
            desk.tap = _InfoTap(session)
            transport.attach(desk.tap)
        if desk.variant != variant:
            try:
                await session.new_game(variant)
            except EngineError:
                await session.kill()
                raise
            desk.variant = variant
        return session

    async def stop(self, name: str) -> None:
        """Tells engine ``name`` to end its search now (``stop``: it still answers with its turn)."""
        desk = self.desk(name)
        if desk.state is DeskState.SEARCHING and desk.session is not None:
            await desk.session.stop()

    async def _end(self, desk: Desk) -> None:
        if desk.session is not None:
            await desk.session.kill()
        desk.session = desk.tap = desk.variant = None

    async def to_game(self, name: str, stderr: Callable[[str], Any] | None = None) -> EngineSession:
        """A new session of engine ``name`` for the board's game (its page session is ended first); the engine is
        playing until :meth:`from_game`. ``stderr(name)`` gives the path its standard error is appended to.
        Raises :class:`BoardError` when it is searching or already playing."""
        desk = self.desk(name)
        if desk.state is not DeskState.IDLE:
            raise BoardError(f"{name} is {desk.state.value}: wait until it is done")
        self._set(desk, DeskState.PLAYING)
        if desk.session is not None:
            await desk.session.quit()
            desk.session = desk.tap = desk.variant = None
        path = None if stderr is None else stderr(name)
        return EngineSession(desk.config, deadlines=self.deadlines, stderr_path=path)

    def from_game(self, name: str) -> None:
        """Engine ``name``'s game is over (its session was ended by the game)."""
        self._set(self.desk(name), DeskState.IDLE)

    async def close(self) -> None:
        """Ends every page session (quit, then the kill of its process group)."""
        for desk in self.desks.values():
            if desk.session is not None:
                await desk.session.quit()
                desk.session = desk.tap = desk.variant = None
