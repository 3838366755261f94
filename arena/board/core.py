"""The board itself, behind its page: what each request of the page does (:class:`Board`), with no HTTP in it.

Every request is a JSON object in and a JSON object out; a bad one raises :class:`~quarto_arena.arena.board.BoardError`
with the line the page shows. The positions a page asks about are given as a start (``startpos`` or a position
string) and the turns played from it, so that a strict-claims position whose alignment may be claimed (which a
position string cannot say) is the same position here as in the game that reached it.

:meth:`Board.state` and :meth:`Board.games` are the two feeds every open page follows (Server-Sent Events): the
engines and the game, and the games opened from files. Each is JSON built once per change.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from quarto_arena.protocol.notation import NotationError, parse_position, parse_turn
from quarto_arena.protocol.rules import IllegalTurn, Position, Variant
from quarto_arena.protocol.text import safe_text

from ..analysis import TurnAnalysis
from ..engine import Deadlines, EngineConfig
from ..schedule import STARTPOS
from ..timecontrol import TimeControl
from . import BoardError
from .engines import Engines
from .games import MAX_TOKENS, BoardGame, Loaded, game_from_link, load_games, variant_of
from .human import HUMAN
from .solving import AUTO_EMPTIES, WANT_SECONDS, Job, SolverPool, value_json
from .table import GameSettings, Table, won_lines

__all__ = ["MAX_POLLS", "POLL_SECONDS", "PROGRESS_SECONDS", "Board"]

POLL_SECONDS: Final = 10.0
"""The longest a request for the solver's values waits for a new one before it answers with what there is."""
PROGRESS_SECONDS: Final = 0.25
"""Once a new value is found, how long a request waits for more before it answers (the page's progress)."""
MAX_POLLS: Final = 128
"""Requests for the solver's values waiting at once (every tab has one at most); more are refused."""
_TAB: Final = re.compile(r"[A-Za-z0-9_-]{1,40}\Z")


def _text(body: Mapping[str, Any], key: str, default: str | None = None, limit: int = 200) -> str:
    value = body.get(key, default)
    if not isinstance(value, str) or len(value) > limit:
        if value is None:
            raise BoardError(f"{key} is missing")
        raise BoardError(f"{key}: expected a text of at most {limit} characters")
    return value


def _tokens(body: Mapping[str, Any], key: str) -> list[str]:
    value = body.get(key, [])
    if not isinstance(value, list) or len(value) > MAX_TOKENS or not all(isinstance(t, str) for t in value):
        raise BoardError(f"{key}: expected a list of at most {MAX_TOKENS} turn tokens")
    return [t[:8] for t in value]


def line_position(variant: Variant, start: str, tokens: Sequence[str]) -> tuple[Position, list[Position]]:
    """The position after ``tokens`` from ``start``, and every position on the way (the start first).

    :class:`BoardError` with the notation's own message for a typo in the start (``row 3 has 5 cells...``), and the
    turn's number and the rules' reason for a turn that does not apply."""
    try:
        position = parse_position(start, variant)  # startpos too
    except NotationError as e:
        raise BoardError(str(e)) from None
    line = [position]
    for i, token in enumerate(tokens, start=1):
        try:
            position = position.apply(parse_turn(token))
        except (NotationError, IllegalTurn) as e:
            raise BoardError(f"turn {i} ({safe_text(token, 8)}): {e}") from None
        line.append(position)
    return position, line


def position_json(position: Position) -> dict[str, Any]:
    """What the page needs to draw a position and take a click on it (JSON)."""
    return {
        "position": str(position),
        "board": [-1 if p is None else p for p in position.board()],
        "hand": -1 if position.hand is None else position.hand,
        "claimable": position.claimable,
        "outcome": position.outcome.value,
        "empty": 16 - position.placed,
        "legal": [t.token for t in position.legal_turns()],
        "lines": won_lines(position),
    }


class Board:
    """The engines, the solver's workers, the game and the opened games of one board."""

    def __init__(
        self,
        engines: Sequence[EngineConfig],
        directory: Path,
        *,
        deadlines: Deadlines | None = None,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        """Made on the event loop that serves it (the solver's workers report to it). ``directory`` receives the
        games played (made with the first); ``on_change`` is called when a feed changes."""
        self._on_change = on_change
        self.version = 0
        """Bumped when :meth:`state` changes."""
        self.games_version = 0
        """Bumped when :meth:`games` changes."""
        self.engines = Engines(engines, deadlines=deadlines, on_change=self._changed)
        self.table = Table(self.engines, directory, on_change=self._changed)
        self.pool = SolverPool()
        self.directory = directory
        self.loaded: Loaded | None = None
        self._polls = 0
        self._cache: dict[str, tuple[int, str]] = {}
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    def _changed(self) -> None:
        self.version += 1
        self._on_change()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(WANT_SECONDS / 4)
            self.pool.expire()

    async def close(self) -> None:
        """Abandons the game in play, ends every engine's session and the solver's threads."""
        self._sweeper.cancel()
        await self.table.close()
        await self.engines.close()
        await asyncio.to_thread(self.pool.close)

    # --- the feeds

    def state(self) -> str:
        """The engines and the game (JSON text, built once per change)."""
        return self._json("state", self.version, lambda: {"engines": self.engines.states(), "game": self.table.state()})

    def games(self) -> str:
        """The games opened from a file or directory: where from, the list, and what could not be read."""

        def build() -> dict[str, Any]:
            loaded = self.loaded
            if loaded is None:
                return {"source": None, "games": [], "notes": []}
            return {"source": loaded.source, "games": [g.brief() for g in loaded.games], "notes": list(loaded.notes)}

        return self._json("games", self.games_version, build)

    def _json(self, name: str, version: int, build: Callable[[], Any]) -> str:
        cached = self._cache.get(name)
        if cached is None or cached[0] != version:
            cached = (version, json.dumps(build(), separators=(",", ":")))
            self._cache[name] = cached
        return cached[1]

    # --- positions and the solver

    async def position(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A position of the page's line (``variant``, ``start``, ``turns``): its drawing and legal turns, and, with
        ``solve``, the solver's values of its turns so far (waiting up to :data:`POLL_SECONDS` for more than the
        page has seen: ``seen``). With ``game`` (``start``, ``turns`` of a game in the same variant), the values
        before and after each of its turns from :data:`AUTO_EMPTIES` empty squares down, and its first mistake.

        The tab (``tab``) then wants these positions solved; ``deep`` lets the shown one be solved however many empty
        squares it has."""
        tab = _text(body, "tab", limit=40)
        if not _TAB.match(tab):
            raise BoardError("tab: expected 1-40 letters, digits, _ or -")
        if self._polls >= MAX_POLLS:
            raise BoardError(f"{MAX_POLLS} requests are waiting for the solver already: close some tabs")
        variant = variant_of(_text(body, "variant"))
        position, _ = line_position(variant, _text(body, "start"), _tokens(body, "turns"))
        shown = position_json(position)
        if not body.get("solve"):
            self.pool.want(tab, ())
            return {"position": shown, "solver": None, "game": None, "seen": ""}
        job = self.pool.job(position)
        game = body.get("game")
        plies: list[tuple[Job | None, str]] = []
        if isinstance(game, Mapping):
            plies = self._game_jobs(variant, game)
        jobs = [job, *(j for j, _ in plies if j is not None and j is not job)]
        self.pool.want(tab, jobs, deep=bool(body.get("deep")))
        seen = str(body.get("seen", ""))[:80]
        self._polls += 1
        try:
            key = await self._wait(job, jobs, seen)
        finally:
            self._polls -= 1
        with self.pool.lock:  # the workers write the values as they find them
            return {
                "position": shown,
                "solver": job.snapshot(),
                "game": None if not plies else _marks(plies),
                "seen": key,
            }

    def _game_jobs(self, variant: Variant, game: Mapping[str, Any]) -> list[tuple[Job | None, str]]:
        """Each turn of a game: the job of the position before it (from AUTO_EMPTIES empty squares down, else None),
        and the turn's token as recorded (canonical)."""
        tokens = _tokens(game, "turns")
        _, line = line_position(variant, _text(game, "start"), tokens)
        out: list[tuple[Job | None, str]] = []
        for before, after, token in zip(line, line[1:], tokens, strict=False):
            job = self.pool.job(before) if 16 - before.placed <= AUTO_EMPTIES else None
            out.append((job, before.canonical(parse_turn(token), after).token))
        return out

    async def _wait(self, job: Job, jobs: Sequence[Job], seen: str) -> str:
        """Returns the new mark of the values' progress: at once for a page that has seen nothing of them (it draws
        the position now); else once they move past ``seen`` and everything is done, or :data:`PROGRESS_SECONDS`
        after they moved (a progress report, not one request per value), or after :data:`POLL_SECONDS`."""

        def mark() -> str:
            return f"{job.version}.{sum(j.version for j in jobs)}"

        if not seen:
            return mark()
        end = time.monotonic() + POLL_SECONDS
        moved = False
        while True:
            key = mark()
            done = all(j.done or not j.deep for j in jobs)
            if done or (key != seen and not moved):
                if done:
                    return key
                moved = True
                end = min(end, time.monotonic() + PROGRESS_SECONDS)
            left = end - time.monotonic()
            if left <= 0:
                return key
            await self.pool.wait(left)

    # --- engines

    async def ask(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Engine ``engine``'s turn and ``info`` lines in a position of the page's line, under ``limit`` (a ``go``
        limit as ``--tc`` writes it: ``st=1``, ``depth=4``, ``nodes=5000``, ``inf``...)."""
        variant = variant_of(_text(body, "variant"))
        start, _ = line_position(variant, _text(body, "start"), ())
        try:
            limit = TimeControl.parse(_text(body, "limit", "st=1", 80))
        except ValueError as e:
            raise BoardError(str(e)) from None
        answer = await self.engines.ask(_text(body, "engine", limit=64), start, _tokens(body, "turns"), limit)
        return answer.to_json()

    async def stop(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Tells engine ``engine`` to stop its search now."""
        await self.engines.stop(_text(body, "engine", limit=64))
        return {}

    # --- the game

    async def new_game(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Starts a game from a position of the page's line: ``mover`` plays the side to move there and ``other``
        the other one (``human`` or an engine's name), under ``tc`` (``human_clock``: the people too)."""
        variant = variant_of(_text(body, "variant"))
        start = _text(body, "start")
        turns = _tokens(body, "turns")
        line_position(variant, start, turns)  # a bad start or turn is named here, before anything starts
        try:
            control = TimeControl.parse(_text(body, "tc", "st=1", 80))
        except ValueError as e:
            raise BoardError(str(e)) from None
        mover, other = _text(body, "mover", HUMAN, 64), _text(body, "other", HUMAN, 64)
        players = (mover, other) if len(turns) % 2 == 0 else (other, mover)
        settings = GameSettings(
            players,
            variant,
            control,
            human_clock=bool(body.get("human_clock")),
            start=None if start.strip().lower() == STARTPOS else start,
            opening=tuple(turns),
        )
        await self.table.start(settings)
        return {}

    async def turn(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The person's turn (``turn``) at turn number ``ply`` of the game."""
        ply = body.get("ply")
        if not isinstance(ply, int) or isinstance(ply, bool):
            raise BoardError("ply: expected the number of turns played before this one")
        await self.table.play(_text(body, "turn", limit=8), ply)
        return {}

    async def abandon(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Ends the game in play."""
        await self.table.abandon()
        return {}

    # --- games from files and links

    async def load(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Opens the games of a PGN file or a run directory (``path``): the list every page shows."""
        path = Path(_text(body, "path", limit=4096)).expanduser()
        self.open_games(await asyncio.to_thread(load_games, path))
        return {}

    def open_games(self, loaded: Loaded) -> None:
        """Makes ``loaded`` the list of games the pages show."""
        self.loaded = loaded
        self.games_version += 1
        self._on_change()

    async def open(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Game number ``index`` of the list, replayed for the page."""
        index = body.get("index")
        games = () if self.loaded is None else self.loaded.games
        if not isinstance(index, int) or not 0 <= index < len(games):
            raise BoardError(f"no game {safe_text(str(index), 12)} in the list ({len(games)} games)")
        return games[index].view()

    async def link(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A game from another page's "open on the board" link, replayed for the page."""
        game: BoardGame = game_from_link(body)
        return game.view()


def _marks(plies: Sequence[tuple[Job | None, str]]) -> dict[str, Any]:
    """Per turn of a game: the value before it and the value of the turn played (for its player), and whether it
    threw a win or a draw away (``analyse``'s own test, :attr:`TurnAnalysis.mistake`); the first such turn."""
    marks: list[dict[str, Any] | None] = []
    first = None
    done = True
    for ply, (job, token) in enumerate(plies):
        best = None if job is None else job.best()
        if job is None or best is None:
            done = done and job is None
            marks.append(None)
            continue
        after = job.values[token]
        mistake = TurnAnalysis(ply, "", token, job.empty, best, after, ()).mistake
        if mistake is not None and first is None:
            first = ply
        kept = job.keeping(best.verdict) if mistake is not None else []
        marks.append({"before": value_json(best), "after": value_json(after), "mistake": mistake, "best": kept})
    return {"marks": marks, "first": first, "done": done}
