"""The ladder's pages (``ladder run --web``): the leaderboard, the games being played, the last games, and a page
per bot (its rating as games accumulated, its results against each opponent, its recent games in the viewer).

Served by :class:`~quarto_arena.arena.web.server.PageServer`, the live page's server (GET only, the Host check,
the Content Security Policy, Server-Sent Events), with the live page's script and game viewer; what is shown is
built here as plain JSON values. Engines' strings travel as JSON and are put into the page as text only.

Ratings are refitted from the database in a process of their own when games have been counted, at most once a
second and never more than a tenth of the time (a fit that took 0.3 s waits 3 s for the next), so the arena's loop
stays responsive at any size; each refit adds a point to every bot's rating history.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import json
import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from aiohttp import web

from ..output import game_comment
from ..records import GameRecord, TurnRecord
from ..run import GameEnded, GameStarted, Notice, TurnPlayed
from ..schedule import ScheduledGame
from ..stats import RatingError
from ..transport.supervision import exit_with_parent
from ..web.model import game_view, replay
from ..web.server import BOARDS_EVERY, SUMMARY_EVERY, PageServer, game_number, page_html
from .db import DB_NAME, BotRow, LadderDB, LadderDBError
from .service import BotsChanged, GameCounted, Ladder, LadderError, LadderEvent
from .standings import Standings, fit, version_label

__all__ = ["LadderPages", "LadderView", "serve_ladder"]

_RECENT: Final = 12
_BOT_RECENT: Final = 20
_HISTORY: Final = 100  # points of each bot's rating history kept (every other one dropped beyond)
_START_POINTS: Final = 20  # points of the history fitted from the database when the pages start
_NOTICES: Final = 20
_FIT_SHARE: Final = 0.1  # the most of the time the refits may take

T = TypeVar("T")


@dataclass(slots=True)
class _Live:
    game: ScheduledGame
    turns: list[TurnRecord]


class LadderView:
    """What the pages show, kept from the ladder's events and refitted from the database (its own connection)."""

    def __init__(self, ladder: Ladder, anchor: tuple[str, float] | None = None) -> None:
        self.ladder = ladder
        self.anchor = anchor
        self.version = 0
        """Bumped whenever the leaderboard, the last games or the notices change."""
        self.boards_version = 0
        """Bumped whenever a board changes."""
        self.standings: Standings | None = None
        self.bots: list[BotRow] = []
        self.history: dict[str, list[tuple[int, float, float]]] = {}
        self.fit_seconds = 0.0
        """How long the last refit took."""
        self.fitted = -1
        self.counted = 0
        self.live: dict[int, _Live] = {}
        self.recent: collections.deque[GameRecord] = collections.deque(maxlen=_RECENT)
        self.notices: collections.deque[str] = collections.deque(maxlen=_NOTICES)
        self._db: LadderDB | None = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ladder-pages")
        self._fitter: concurrent.futures.ProcessPoolExecutor | None = None
        self._path = Path(DB_NAME)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Runs ``fn`` on the view's own thread (its database connection is used there only)."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    # --- input

    def event(self, e: LadderEvent) -> None:
        """One event of the ladder."""
        if isinstance(e, TurnPlayed):
            live = self.live.get(e.game_id)
            if live is not None:
                live.turns.append(e.turn)
                self.boards_version += 1
        elif isinstance(e, GameStarted):
            opening = e.game.opening
            self.live[e.game.game_id] = _Live(e.game, [TurnRecord(t, 0) for t in opening.turns])
            self.boards_version += 1
        elif isinstance(e, GameEnded):
            if self.live.pop(e.game.game_id, None) is not None:
                self.boards_version += 1
        elif isinstance(e, GameCounted):
            self.recent.appendleft(e.record)
            self.counted += 1
            self.version += 1
        elif isinstance(e, BotsChanged):
            self.version += 1
        elif isinstance(e, Notice):
            self.notices.appendleft(e.text)
            self.version += 1

    async def start(self, directory: Path) -> None:
        """Opens its own connection to the database, and fits the history so far (a few points)."""
        self._path = directory / DB_NAME
        self._db = await self.call(LadderDB.open, self._path)
        recent = await self.call(self._db.recent, _RECENT)
        self.recent.extend(recent)
        await self._refit(_START_POINTS)

    async def close(self) -> None:
        """Closes its connection, its thread and its fitting process."""
        if self._db is not None:
            await self.call(self._db.close)
        self._thread.shutdown(wait=True)
        if self._fitter is not None:
            self._fitter.shutdown(wait=False, cancel_futures=True)

    async def _refit(self, points: int = 1) -> None:
        """Refits in a process of its own (the fit is pure Python: in a thread it would hold the arena's loop)."""
        if self._fitter is None:
            self._fitter = concurrent.futures.ProcessPoolExecutor(
                1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=exit_with_parent,  # a ladder killed by SIGKILL must not leave it behind
                initargs=(os.getpid(),),
            )
        began = time.monotonic()
        fits, bots = await asyncio.get_running_loop().run_in_executor(
            self._fitter, fit_database, str(self._path), self.anchor, points
        )
        for games, standings in fits:
            self._note(standings, games)
        self.standings, self.bots = fits[-1][1], bots
        self.fit_seconds = (time.monotonic() - began) / len(fits)  # one fit's share (the first call makes several)

    def _note(self, standings: Standings, games: int) -> None:
        for line in standings.lines:
            if line.rating is None or line.margin is None:
                continue
            points = self.history.setdefault(line.bot, [])
            if points and points[-1][0] == games:
                continue
            points.append((games, line.rating, line.margin))
            if len(points) > _HISTORY:
                thinned = points[::2]
                if thinned[-1] is not points[-1]:
                    thinned.append(points[-1])
                points[:] = thinned

    async def refresh(self, stop: asyncio.Event) -> None:
        """Refits whenever games were counted, at most once a second and a tenth of the time."""
        last = time.monotonic()
        while not stop.is_set():
            wait = max(SUMMARY_EVERY, self.fit_seconds / _FIT_SHARE) - (time.monotonic() - last)
            if wait > 0:
                try:
                    await asyncio.wait_for(stop.wait(), wait)
                    return
                except TimeoutError:
                    pass
            if self.counted != self.fitted:
                self.fitted = self.counted
                await self._refit()
                self.version += 1
            last = time.monotonic()

    # --- output

    def leaderboard(self) -> dict[str, Any]:
        """The leaderboard, who is online, the last games and the notices."""
        online, busy = self.ladder.online, self.ladder.busy()
        rows = []
        lines = self.standings.lines if self.standings else ()
        for s in lines:
            rows.append(
                {
                    "rank": s.rank,
                    "bot": s.bot,
                    "player": s.player,
                    "version": s.id_name,
                    "rating": s.rating,
                    "margin": s.margin,
                    "games": s.games,
                    "score": s.score,
                    "online": s.bot in online,
                    "slots": online.get(s.bot),
                    "playing": busy.get(s.bot, 0),
                    "house": s.house,
                    "last_seen": s.last_seen,
                }
            )
        known = {s.bot for s in lines}
        for name in sorted(set(online) - known):  # online, no game yet, not in the database's bots yet
            rows.append(
                {
                    "rank": None,
                    "bot": name,
                    "player": name,
                    "version": "",
                    "rating": None,
                    "margin": None,
                    "games": 0,
                    "score": None,
                    "online": True,
                    "slots": online[name],
                    "playing": busy.get(name, 0),
                    "house": False,
                    "last_seen": "now",
                }
            )
        settings = self.ladder.settings
        return {
            "table": rows,
            "games": self.standings.games if self.standings else 0,
            "counted": self.ladder.counted,
            "running": len(self.live),
            "online": len(online),
            "tc": settings.time_control.text,
            "variant": settings.spec.variant.describe(),
            "concurrency": settings.concurrency,
            "recent": [_brief(r) for r in self.recent],
            "notices": list(self.notices),
        }

    def boards(self) -> dict[str, Any]:
        """The games being played, in the viewer's encoding, with the names they index."""
        names: list[str] = []
        index: dict[str, int] = {}
        out = []
        variant = self.ladder.settings.spec.variant
        for game_id in sorted(self.live):
            g = self.live[game_id]
            for n in (g.game.first, g.game.second):
                if n not in index:
                    index[n] = len(names)
                    names.append(n)
            r = replay(variant, g.game.opening.start, g.turns)
            out.append(
                {
                    "id": game_id,
                    "label": f"pair {g.game.pair}",  # a game's number is given when it is counted
                    "round": g.game.round,
                    "players": [index[g.game.first], index[g.game.second]],
                    "result": "*",
                    "reason": "in progress",
                    "termination": "",
                    "detail": "",
                    "variant": "",
                    "tc": self.ladder.settings.time_control.text,
                    "board": r.board,
                    "hand": r.hand,
                    "opening": len(g.game.opening.turns),
                    "plies": r.plies,
                    "lines": [],
                    "error": r.error,
                    "values": None,
                }
            )
        return {"names": names, "games": out}

    def game(self, number: int) -> dict[str, Any] | None:
        """A counted game for the viewer, with its two names."""
        record = None if self._db is None else self._db.game(number)
        if record is None:
            return None
        return {"names": [record.first, record.second], "game": game_view(record, {record.first: 0, record.second: 1})}

    def bot(self, name: str) -> dict[str, Any] | None:
        """A bot's page: its lines of the standings, its rating history, its results per opponent, recent games."""
        row = next((b for b in self.bots if b.name == name), None)
        if row is None or self._db is None:
            return None
        standings = self.standings
        labels = {version_label(b.name, v.number, len(b.versions)): b.name for b in self.bots for v in b.versions}
        mine = {version_label(name, v.number, len(row.versions)) for v in row.versions}
        opponents: dict[str, list[float]] = {}
        if standings is not None and standings.table is not None:
            for pr in standings.table.pairs:
                if pr.player in mine:
                    o = opponents.setdefault(labels.get(pr.opponent, pr.opponent), [0.0, 0, 0])
                    o[0] += pr.points
                    o[1] += pr.games
                    o[2] += pr.draws
        lines = [s for s in standings.lines if s.bot == name] if standings else []
        recent = self._db.recent(_BOT_RECENT, name)
        points = self.history.get(name, [])
        return {
            "bot": name,
            "house": row.house,
            "first_seen": row.first_seen,
            "last_seen": row.last_seen,
            "online": name in self.ladder.online,
            "slots": self.ladder.online.get(name),
            "versions": [
                {"number": v.number, "id_name": v.id_name, "author": v.author, "first_seen": v.first_seen}
                for v in row.versions
            ],
            "rating": [
                {"player": s.player, "rating": s.rating, "margin": s.margin, "games": s.games, "score": s.score}
                for s in lines
            ],
            "history": {
                "games": [p[0] for p in points],
                "series": [
                    {
                        "name": name,
                        "rating": [round(p[1], 1) for p in points],
                        "margin": [round(p[2], 1) for p in points],
                    }
                ],
            },
            "opponents": {
                "headers": ["opponent", "games", "points", "draws", "score"],
                "rows": [
                    [o, int(v[1]), v[0], int(v[2]), v[0] / v[1] if v[1] else None] for o, v in sorted(opponents.items())
                ],
            },
            "recent": [
                {**_brief(r), "view": game_view(r, {r.first: 0, r.second: 1}), "names": [r.first, r.second]}
                for r in recent
            ],
        }


def fit_database(
    path: str, anchor: tuple[str, float] | None, points: int
) -> tuple[list[tuple[int, Standings]], list[BotRow]]:
    """The fits of the first N/points, 2N/points... N counted games of the ladder at ``path`` (the last is the fit
    of all), and its bots: what the pages' fitting process does. An anchor that is no player is ignored."""
    db = LadderDB.open(Path(path), create=False)
    try:
        # One point: the tallies suffice (a few rows); the history's first points need the games in order.
        results, bots = db.results() if points > 1 else db.tallies(), db.bots()
    finally:
        db.close()
    players = {version_label(b.name, v.number, len(b.versions)) for b in bots for v in b.versions}
    anchored = anchor if anchor is not None and anchor[0] in players else None
    n = len(results) if points > 1 else sum(r.count for r in results)
    ks = sorted({n * i // points for i in range(1, points + 1)} | {n}) if points > 1 else [n]
    fits = []
    for k in ks:
        try:
            fits.append((k, fit(results[:k] if points > 1 else results, bots, anchor=anchored)))
        except RatingError:  # the anchor has no game yet among the first k
            fits.append((k, fit(results[:k] if points > 1 else results, bots)))
    return fits, bots


def _brief(r: GameRecord) -> dict[str, Any]:
    return {"id": r.game_id, "first": r.first, "second": r.second, "result": r.result.value, "reason": game_comment(r)}


class LadderPages(PageServer):
    """The ladder's pages: ``/`` (the leaderboard, live boards, last games), ``/bot/NAME``, ``/events`` (feeds
    ``ladder`` and ``boards``), ``/api/ladder``, ``/api/boards``, ``/api/game/N``, ``/api/bot/NAME``."""

    def __init__(self, view: LadderView, host: str = "127.0.0.1", port: int = 8080) -> None:
        super().__init__(host, port)
        self.view = view
        self._cache: dict[str, tuple[int, str]] = {}

    def routes(self, router: web.UrlDispatcher) -> None:
        """The pages, the stream and the JSON."""
        router.add_get("/", self._index)
        router.add_get("/bot/{name}", self._bot_page)
        router.add_get("/events", self.events)
        router.add_get("/api/ladder", self._api("ladder"))
        router.add_get("/api/boards", self._api("boards"))
        router.add_get("/api/game/{game_id}", self._api_game)
        router.add_get("/api/bot/{name}", self._api_bot)

    def _key(self, name: str) -> int:
        return self.view.version if name == "ladder" else self.view.boards_version

    def feeds(self) -> dict[str, tuple[object, float]]:
        """The boards (four times a second at most) and the leaderboard (once a second)."""
        return {"boards": (self._key("boards"), BOARDS_EVERY), "ladder": (self._key("ladder"), SUMMARY_EVERY)}

    def feed(self, name: str) -> str:
        """A feed as JSON, built once per change for every client."""
        key = self._key(name)
        cached = self._cache.get(name)
        if cached is None or cached[0] != key:
            value = self.view.leaderboard() if name == "ladder" else self.view.boards()
            cached = (key, json.dumps(value, separators=(",", ":")))
            self._cache[name] = cached
        return cached[1]

    def _api(self, name: str) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(text=self.feed(name), content_type="application/json")

        return handler

    def _page(self, template: str, title: str, bot: str = "") -> web.Response:
        return web.Response(text=page_html(template, title, bot=bot), content_type="text/html")

    async def _index(self, request: web.Request) -> web.Response:
        return self._page("ladder.html", "Ladder")

    async def _bot_page(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if not any(b.name == name for b in self.view.bots):
            raise web.HTTPNotFound(text="no such bot on this ladder\n")
        return self._page("bot.html", f"Ladder: {name}", name)

    async def _api_game(self, request: web.Request) -> web.Response:
        number = game_number(request)
        game = await self.view.call(self.view.game, number)
        if game is None:
            raise web.HTTPNotFound(text=f"no counted game {number}\n")
        return web.Response(text=json.dumps(game, separators=(",", ":")), content_type="application/json")

    async def _api_bot(self, request: web.Request) -> web.Response:
        data = await self.view.call(self.view.bot, request.match_info["name"])
        if data is None:
            raise web.HTTPNotFound(text="no such bot on this ladder\n")
        return web.Response(text=json.dumps(data, separators=(",", ":")), content_type="application/json")


async def serve_ladder(
    ladder: Ladder,
    stop: asyncio.Event,
    address: tuple[str, int],
    anchor: tuple[str, float] | None = None,
    *,
    announce: Callable[[str], None] = lambda _url: None,
) -> None:
    """Runs ``ladder`` until ``stop`` with its pages served at ``address`` (``announce`` gets the URL). Raises
    WebError when the address cannot be bound (before any game), and whatever the ladder raises."""
    view = LadderView(ladder, anchor)
    before = ladder.on_event

    def on_event(e: LadderEvent) -> None:
        before(e)
        view.event(e)

    ladder.on_event = on_event
    try:
        ladder.directory.mkdir(parents=True, exist_ok=True)
        await view.start(ladder.directory)
    except (OSError, LadderDBError) as e:
        await view.close()
        raise LadderError(str(e)) from None
    pages = LadderPages(view, *address)
    try:
        await pages.start()
        announce(pages.url)
        refresh = asyncio.create_task(view.refresh(stop))
        try:
            await ladder.run(stop)
        finally:
            stop.set()
            await asyncio.gather(refresh, return_exceptions=True)
    finally:
        await pages.close()
        await view.close()
