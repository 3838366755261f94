"""The ladder's pages (``ladder run --web``): the leaderboard, the games being played, the last games, and a page
per bot (its rating per version as games accumulated, its results against each opponent, its recent games in the
viewer).

Served by :class:`~quarto_arena.arena.web.server.PageServer`, the live page's server (GET only, the Host check,
the Content Security Policy, Server-Sent Events), with the live page's script and game viewer; what is shown is
built here as plain JSON values. Engines' strings travel as JSON and are put into the page as text only.

The ratings are the ladder's own (:attr:`Ladder.standings`: its refits, in a process of their own, stored in the
database); the pages read the database (their own connection, in a thread of their own) for a game, a bot's recent
games, its results per opponent and its ratings' history (the stored fits). The server binds before the ladder
starts, so a ``--web`` that cannot bind leaves no database behind.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from aiohttp import web

from ..output import game_comment
from ..records import GameRecord, TurnRecord
from ..run import GameEnded, GameStarted, Notice, TurnPlayed
from ..schedule import ScheduledGame
from ..web.model import game_view, replay
from ..web.server import BOARDS_EVERY, SUMMARY_EVERY, PageServer, game_number, page_html
from .db import DB_NAME, LadderDB, LadderDBError
from .service import BotsChanged, GameCounted, Ladder, LadderEvent, RatingsChanged
from .standings import Standing, opponents, shown, version_label

__all__ = ["LadderPages", "LadderView", "serve_ladder"]

_RECENT: Final = 12
_BOT_RECENT: Final = 20
_NOTICES: Final = 20

T = TypeVar("T")


@dataclass(slots=True)
class _Live:
    game: ScheduledGame
    turns: list[TurnRecord]


class LadderView:
    """What the pages show: kept from the ladder's events, its standings, and the database (its own connection)."""

    def __init__(self, ladder: Ladder) -> None:
        self.ladder = ladder
        self.version = 0
        """Bumped whenever the leaderboard, the last games or the notices change."""
        self.boards_version = 0
        """Bumped whenever a board changes."""
        self.live: dict[int, _Live] = {}
        self.recent: collections.deque[GameRecord] = collections.deque(maxlen=_RECENT)
        self.notices: collections.deque[str] = collections.deque(maxlen=_NOTICES)
        self._db: LadderDB | None = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ladder-pages")

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
            self.version += 1
        elif isinstance(e, BotsChanged | RatingsChanged):
            self.version += 1
        elif isinstance(e, Notice):
            self.notices.appendleft(e.text)
            self.version += 1

    async def start(self) -> None:
        """Opens its own connection to the ladder's database (once the ladder has it ready), and the last games."""
        self._db = await self.call(lambda: LadderDB.open(self.ladder.directory / DB_NAME, create=False))
        recent = await self.call(self._db.recent, _RECENT)
        self.recent.extend(r for r in recent if all(r.game_id != o.game_id for o in self.recent))
        self.version += 1

    async def close(self) -> None:
        """Closes its connection and its thread."""
        if self._db is not None:
            await self.call(self._db.close)
        self._thread.shutdown(wait=True)

    # --- output

    def _lines(self) -> tuple[Standing, ...]:
        standings = self.ladder.standings
        return () if standings is None else standings.lines

    def leaderboard(self) -> dict[str, Any]:
        """The leaderboard (each bot's latest version, banned bots and retired versions left out), who is online,
        the last games and the notices."""
        online, busy = self.ladder.online, self.ladder.busy()
        rows = []
        lines = shown(self._lines())
        for s in lines:
            rows.append(
                {
                    **s.as_dict(),
                    "version": s.id_name,
                    "number": s.version,
                    "online": s.bot in online,
                    "slots": online.get(s.bot),
                    "playing": busy.get(s.bot, 0),
                }
            )
        known = {s.bot for s in self._lines()}
        for name in sorted(set(online) - known):  # online, not in the last fit's bots yet
            rows.append(
                {
                    "rank": None,
                    "bot": name,
                    "player": name,
                    "version": "",
                    "number": 0,
                    "rating": None,
                    "margin": None,
                    "games": 0,
                    "score": None,
                    "provisional": True,
                    "forfeits": {},
                    "dodges": 0,
                    "opponents": 0,
                    "online": True,
                    "slots": online[name],
                    "playing": busy.get(name, 0),
                    "house": False,
                    "last_seen": "now",
                }
            )
        settings = self.ladder.settings
        standings = self.ladder.standings
        return {
            "table": rows,
            "games": standings.games if standings else 0,
            "fitted_through": standings.through if standings else 0,
            "anchor": list(standings.anchor) if standings and standings.anchor else None,
            "counted": self.ladder.counted,
            "running": len(self.live),
            "online": len(online),
            "tc": settings.game.time_control.text,
            "variant": settings.game.variant.describe(),
            "concurrency": settings.concurrency,
            "recent": [_brief(r) for r in self.recent],
            "notices": list(self.notices),
        }

    def boards(self) -> dict[str, Any]:
        """The games being played, in the viewer's encoding, with the names they index."""
        names: list[str] = []
        index: dict[str, int] = {}
        out = []
        variant = self.ladder.settings.game.variant
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
                    "tc": self.ladder.settings.game.time_control.text,
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

    def known(self, name: str) -> bool:
        """True for a bot of the last fit, or online now."""
        return name in self.ladder.online or any(s.bot == name for s in self._lines())

    def bot(self, name: str) -> dict[str, Any] | None:
        """A bot's page (on the view's thread): one rating line per version, its rating history per version, its
        results per opponent, its dodges, its recent games."""
        if self._db is None:
            return None
        db = self._db
        with db.snapshot():
            row = next((b for b in db.bots() if b.name == name), None)
            if row is None:
                return None
            tallies, _ = db.tallies(bot=name)
            history = db.history(name)
            recent = db.recent(_BOT_RECENT, name)
            dodges = db.dodges().get(name, (0, 0))
        lines = [s for s in shown(self._lines(), by_version=True, everything=True) if s.bot == name]
        series: dict[int, dict[int, tuple[float, float]]] = {}
        for games, number, rating, margin in history:
            series.setdefault(number, {})[games] = (rating, margin)
        points = sorted({g for by in series.values() for g in by})
        played = opponents(tallies, name)
        return {
            "bot": name,
            "house": row.house,
            "origin": row.origin,
            "banned": row.banned,
            "first_seen": row.first_seen,
            "last_seen": row.last_seen,
            "online": name in self.ladder.online,
            "slots": self.ladder.online.get(name),
            "versions": [
                {
                    "number": v.number,
                    "id_name": v.id_name,
                    "author": v.author,
                    "first_seen": v.first_seen,
                    "retired": v.retired,
                }
                for v in row.versions
            ],
            "rating": [s.as_dict() for s in lines],
            "dodges": {"charged": dodges[0], "let_go": dodges[1]},
            "history": {
                "games": points,
                "series": [
                    {
                        "name": version_label(name, number, len(row.versions)),
                        "rating": [None if g not in by else round(by[g][0], 1) for g in points],
                        "margin": [None if g not in by else round(by[g][1], 1) for g in points],
                    }
                    for number, by in sorted(series.items())
                ],
            },
            "opponents": {
                "headers": ["opponent", "games", "points", "wins", "draws", "losses", "forfeit_wins", "forfeit_losses"],
                "rows": [
                    [o.opponent, o.games, o.points, o.wins, o.draws, o.losses, o.forfeit_wins, o.forfeit_losses]
                    for o in played
                ],
            },
            "recent": [
                {**_brief(r), "view": game_view(r, {r.first: 0, r.second: 1}), "names": [r.first, r.second]}
                for r in recent
            ],
        }


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
        if not self.view.known(name):
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
    *,
    announce: Callable[[str], None] = lambda _url: None,
) -> None:
    """Runs ``ladder`` until ``stop`` with its pages served at ``address`` (``announce`` gets the URL). Raises
    WebError when the address cannot be bound (before the ladder starts: nothing is made), and whatever the ladder
    raises."""
    view = LadderView(ladder)
    before = ladder.on_event

    def on_event(e: LadderEvent) -> None:
        before(e)
        view.event(e)

    ladder.on_event = on_event
    pages = LadderPages(view, *address)
    await pages.start()
    try:
        announce(pages.url)

        async def open_view() -> None:
            await ladder.ready.wait()
            try:
                await view.start()
            except LadderDBError as e:
                ladder.on_event(Notice(f"the pages cannot read the database: {e}"))

        opener = asyncio.create_task(open_view())
        try:
            await ladder.run(stop)
        finally:
            opener.cancel()
            await asyncio.gather(opener, return_exceptions=True)
    finally:
        await pages.close()
        await view.close()
