"""The ladder's pages (``ladder run --web``) and its read-only JSON API, served by the live page's server.

Pages, written whole on the server (:mod:`.render`; the script adds the live updates, the chart and the viewer):

- ``/``: the leaderboard, the games being played, the last games, the ladder's notes;
- ``/bot/NAME``: a bot's versions and their ratings (provisional and retired ones marked), its rating in each of
  the ladder's stored fits (one line per version), its forfeits by reason, its dodges, its results against each
  opponent, its recent games, and why it is banned when it is (its ratings then hidden);
- ``/game/ID``: a counted game: who played, its turns, its final position, the viewer.

The JSON API, version 1 (the README describes each answer; :mod:`.views` declares them):
``/api/v1/standings``, ``/api/v1/bots/NAME``, ``/api/v1/games/ID``, ``/api/v1/games?bot=NAME&since=ID&limit=N``
(in order, at most :data:`MAX_PAGE` a page, ``next`` the ``since`` of the next page), and the event stream
``/events`` (``ladder``: the standings' answer as it changes; ``boards``: the games being played; ``end``). The
pages' own ``/api/boards`` and ``/api/game/ID`` (a game in the viewer's encoding) are theirs, not the API.

Served by :class:`~quarto_arena.arena.web.server.PageServer` (GET only, the Host check, the Content Security Policy,
Server-Sent Events). Nothing here shows how an engine was run (:func:`.views.public_record`).

The ratings are the ladder's own (:attr:`Ladder.standings`: its refits, in a process of their own, stored in the
database: :mod:`.refit`); the pages read the database (their own connection, in a thread of their own) for a game,
a page of games, a bot's versions, recent games, results per opponent and its ratings' history (the stored fits).
The server binds before the ladder starts, so a ``--web`` that cannot bind leaves no database behind.
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

from ..records import GameRecord, TurnRecord
from ..run import GameEnded, GameStarted, Notice, TurnPlayed
from ..schedule import ScheduledGame
from ..web.model import game_view, replay
from ..web.server import BOARDS_EVERY, SUMMARY_EVERY, PageServer, game_number
from . import render
from .db import DB_NAME, BotRow, LadderDB, LadderDBError
from .service import BotsChanged, GameCounted, Ladder, LadderEvent, RatingsChanged
from .standings import labels
from .views import (
    API_VERSION,
    BotPage,
    GamePage,
    Leaderboard,
    Live,
    bot_page,
    game_page,
    leaderboard,
    plain,
    public_record,
)

__all__ = ["MAX_PAGE", "PAGE", "LadderPages", "LadderView", "api", "serve_ladder"]

_RECENT: Final = 12
_BOT_RECENT: Final = 20
_NOTICES: Final = 20
PAGE: Final = 100
"""Games in a page of ``/api/v1/games`` unless ``limit`` says otherwise."""
MAX_PAGE: Final = 500
"""The most games in a page of ``/api/v1/games``."""

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
        self.bots: dict[str, BotRow] = {}
        """The ladder's bots as last read (at start, after each refit, and when a game names a version not yet
        read): their versions' authors and player names."""
        self._players: dict[tuple[str, int], str] = {}
        self.live: dict[int, _Live] = {}
        self.recent: collections.deque[GameRecord] = collections.deque(maxlen=_RECENT)
        self.notices: collections.deque[str] = collections.deque(maxlen=_NOTICES)
        self._db: LadderDB | None = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ladder-pages")
        self._board: tuple[int, Leaderboard] | None = None
        self._reads: set[asyncio.Task[None]] = set()

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
        elif isinstance(e, BotsChanged):
            self.version += 1
        elif isinstance(e, RatingsChanged):
            self.version += 1
            self._reread_bots()
        elif isinstance(e, Notice):
            self.notices.appendleft(e.text)
            self.version += 1

    async def start(self) -> None:
        """Opens its own connection to the ladder's database (once the ladder has it ready), the last games and the
        bots."""
        self._db = await self.call(lambda: LadderDB.open(self.ladder.directory / DB_NAME, create=False))
        recent = await self.call(self._db.recent, _RECENT)
        self.recent.extend(r for r in recent if all(r.game_id != o.game_id for o in self.recent))
        await self.call(self._read_bots)
        self.version += 1

    async def close(self) -> None:
        """Closes its connection and its thread."""
        for task in list(self._reads):
            task.cancel()
        await asyncio.gather(*self._reads, return_exceptions=True)
        if self._db is not None:
            await self.call(self._db.close)
        self._thread.shutdown(wait=True)

    def _read_bots(self) -> None:
        """Reads the bots (on the view's thread)."""
        assert self._db is not None
        bots = self._db.bots()
        self.bots, self._players = {b.name: b for b in bots}, labels(bots)

    def _reread_bots(self) -> None:
        """Reads the bots again after a refit (a version retired, a bot new since the last read), in the background:
        the leaderboard is made again once they are read."""
        if self._db is None:
            return

        async def read() -> None:
            try:
                await self.call(self._read_bots)
            except LadderDBError:
                return  # the bots as they were read last; the next refit reads them again
            self.version += 1

        task = asyncio.get_running_loop().create_task(read())
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)

    # --- output (the database's reads run on the view's thread: :meth:`call`)

    def live_state(self) -> Live:
        """Who is online and what is being played now."""
        settings = self.ladder.settings
        return Live(
            self.ladder.online,
            self.ladder.busy(),
            len(self.live),
            settings.game.time_control.text,
            settings.game.variant.describe(),
            settings.concurrency,
        )

    def leaderboard(self) -> Leaderboard:
        """The leaderboard now (made once per change of :attr:`version`)."""
        made = self._board
        if made is None or made[0] != self.version:
            bots = list(self.bots.values())
            board = leaderboard(self.ladder.standings, bots, self.live_state(), self.recent, self.notices)
            made = self._board = (self.version, board)
        return made[1]

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

    def _players_of(self, games: list[tuple[GameRecord, int, int, bool]]) -> dict[tuple[str, int], str]:
        """The player names of these games' versions (on the view's thread), the bots read again when one is new."""
        if any((r.first, f) not in self._players or (r.second, s) not in self._players for r, f, s, _ in games):
            self._read_bots()
        return self._players

    def game(self, number: int) -> tuple[GamePage, dict[str, Any]] | None:
        """Counted game ``number``: its public record, and the viewer's encoding of it with its two names; None for
        no such game (or one whose checksum fails: it is not shown as it now reads)."""
        found = None if self._db is None or number < 1 else self._db.games_after(number - 1, 1)
        if not found or found[0][0].game_id != number or not found[0][3]:
            return None
        record, first, second, _ = found[0]
        page = game_page(record, first, second, self._players_of(found))
        public = public_record(record)
        return page, {
            "names": [public.first, public.second],
            "game": game_view(public, {public.first: 0, public.second: 1}),
        }

    def games(self, since: int, limit: int, bot: str | None) -> tuple[list[GamePage], int | None]:
        """The first ``limit`` counted games after number ``since`` (of ``bot``), in order (those whose checksum
        fails left out), and the ``since`` of the next page (None after the last)."""
        if self._db is None:
            return [], None
        found = self._db.games_after(since, limit, bot)
        players = self._players_of(found)
        pages = [game_page(r, f, s, players) for r, f, s, ok in found if ok]
        return pages, found[-1][0].game_id if len(found) == limit else None

    def bot(self, name: str, live: Live) -> BotPage | None:
        """Bot ``name``'s page (on the view's thread; ``live``: :meth:`live_state`, taken on the loop), or None for a
        bot the ladder does not know."""
        if self._db is None:
            return None
        db = self._db
        with db.snapshot():  # its versions, tallies, ratings and games as of one moment
            row = next((b for b in db.bots() if b.name == name), None)
            if row is None:
                return None
            tallies, _ = db.tallies(bot=name)
            history = db.history(name)
            recent = db.recent(_BOT_RECENT, name)
        standings = self.ladder.standings
        lines = () if standings is None else standings.lines
        return bot_page(row, lines, tallies, recent, history, live)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def api(view: Any) -> dict[str, Any]:
    """A view as the API's answer: its fields, and the API's version."""
    return {"api": API_VERSION, **plain(view)}


class LadderPages(PageServer):
    """The ladder's pages, its JSON API and its event stream (see the module's documentation)."""

    def __init__(self, view: LadderView, host: str = "127.0.0.1", port: int = 8080) -> None:
        super().__init__(host, port)
        self.view = view
        self._cache: dict[str, tuple[int, str]] = {}

    def routes(self, router: web.UrlDispatcher) -> None:
        """The pages, the API, the stream, and the pages' own JSON."""
        router.add_get("/", self._index)
        router.add_get("/bot/{name}", self._bot_page)
        router.add_get("/game/{game_id}", self._game_page)
        router.add_get("/events", self.events)
        router.add_get("/api/v1/standings", self._api_standings)
        router.add_get("/api/v1/bots/{name}", self._api_bot)
        router.add_get("/api/v1/games", self._api_games)
        router.add_get("/api/v1/games/{game_id}", self._api_game)
        router.add_get("/api/boards", self._api_boards)
        router.add_get("/api/game/{game_id}", self._viewer_game)

    def _key(self, name: str) -> int:
        return self.view.version if name == "ladder" else self.view.boards_version

    def feeds(self) -> dict[str, tuple[object, float]]:
        """The boards (four times a second at most) and the leaderboard (once a second)."""
        return {"boards": (self._key("boards"), BOARDS_EVERY), "ladder": (self._key("ladder"), SUMMARY_EVERY)}

    def feed(self, name: str) -> str:
        """A feed as JSON, built once per change for every client."""
        if name == "ladder":
            return self._cached(name, lambda: _json(api(self.view.leaderboard())))
        return self._cached(name, lambda: _json(self.view.boards()))

    def _cached(self, name: str, make: Callable[[], str]) -> str:
        """What ``make`` makes, made once per change of the feed it depends on (``name``: boards or the rest)."""
        key = self._key("boards" if name == "boards" else "ladder")
        cached = self._cache.get(name)
        if cached is None or cached[0] != key:
            cached = self._cache[name] = (key, make())
        return cached[1]

    @staticmethod
    def _html(text: str) -> web.Response:
        return web.Response(text=text, content_type="text/html")

    @staticmethod
    def _answer(text: str) -> web.Response:
        return web.Response(text=text, content_type="application/json")

    async def _index(self, request: web.Request) -> web.Response:
        return self._html(self._cached("page", lambda: render.leaderboard_html(self.view.leaderboard())))

    async def _bot(self, request: web.Request) -> BotPage:
        page = await self.view.call(self.view.bot, request.match_info["name"], self.view.live_state())
        if page is None:
            raise web.HTTPNotFound(text="no such bot on this ladder\n")
        return page

    async def _bot_page(self, request: web.Request) -> web.Response:
        return self._html(render.bot_html(await self._bot(request)))

    async def _game(self, request: web.Request) -> tuple[GamePage, dict[str, Any]]:
        number = game_number(request)
        found = await self.view.call(self.view.game, number)
        if found is None:
            raise web.HTTPNotFound(text=f"no counted game {number}\n")
        return found

    async def _game_page(self, request: web.Request) -> web.Response:
        return self._html(render.game_html(*await self._game(request)))

    async def _api_standings(self, request: web.Request) -> web.Response:
        return self._answer(self.feed("ladder"))

    async def _api_bot(self, request: web.Request) -> web.Response:
        return self._answer(_json(api(await self._bot(request))))

    async def _api_game(self, request: web.Request) -> web.Response:
        page, _ = await self._game(request)
        return self._answer(_json(api(page)))

    async def _api_games(self, request: web.Request) -> web.Response:
        since = _count_query(request, "since", 0, None)
        limit = _count_query(request, "limit", PAGE, MAX_PAGE)
        bot = request.query.get("bot")
        if bot is not None and bot not in self.view.bots:
            raise web.HTTPNotFound(text="no such bot on this ladder\n")
        pages, following = await self.view.call(self.view.games, since, limit, bot)
        games = [plain(p) for p in pages]
        return self._answer(_json({"api": API_VERSION, "games": games, "next": following}))

    async def _api_boards(self, request: web.Request) -> web.Response:
        return self._answer(self.feed("boards"))

    async def _viewer_game(self, request: web.Request) -> web.Response:
        _, viewer = await self._game(request)
        return self._answer(_json(viewer))


def _count_query(request: web.Request, key: str, default: int, most: int | None) -> int:
    """A whole number from the query (``default`` when absent), or 400 naming the parameter."""
    text = request.query.get(key)
    if text is None:
        return default
    low = 1 if most is not None else 0
    if not (text.isascii() and text.isdigit() and len(text) <= 18) or int(text) < low or (most and int(text) > most):
        bound = f"from {low} to {most}" if most is not None else "of at most 18 digits"
        raise web.HTTPBadRequest(text=f"{key}: expected a whole number {bound}, not {text[:40]!r}\n")
    return int(text)


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
