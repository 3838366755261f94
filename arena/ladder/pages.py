"""The ladder's pages (``ladder run --web``) and its read-only JSON API, served by the live page's server.

Pages, written whole on the server (:mod:`.render`; the script adds the live updates, the chart and the viewer):

- ``/``: the leaderboard, the games being played, the last games, the ladder's notes;
- ``/bot/NAME``: a bot's versions and their ratings, its rating as games accumulated (one line per version), its
  forfeits by reason, its results against each opponent, its recent games;
- ``/game/ID``: a counted game: who played, its turns, its final position, the viewer.

The JSON API, version 1 (the README describes each answer; :mod:`.views` declares them):
``/api/v1/standings``, ``/api/v1/bots/NAME``, ``/api/v1/games/ID``, ``/api/v1/games?bot=NAME&since=ID&limit=N``
(in order, at most :data:`MAX_PAGE` a page, ``next`` the ``since`` of the next page), and the event stream
``/events`` (``ladder``: the standings' answer as it changes; ``boards``: the games being played; ``end``). The
pages' own ``/api/boards`` and ``/api/game/ID`` (a game in the viewer's encoding) are theirs, not the API.

Served by :class:`~quarto_arena.arena.web.server.PageServer` (GET only, the Host check, the Content Security Policy,
Server-Sent Events). Nothing here shows how an engine was run (:func:`.views.public_record`).

Ratings are refitted from the database in a process of their own when games have been counted, at most once a
second and never more than a tenth of the time (a fit that took 0.3 s waits 3 s for the next), so the arena's loop
stays responsive at any size; each refit adds a point to every version's rating history.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import concurrent.futures
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from aiohttp import web

from ..records import GameRecord, Termination, TurnRecord
from ..run import GameEnded, GameStarted, Notice, TurnPlayed
from ..schedule import ScheduledGame
from ..stats import PlayerRating, RatingError
from ..transport.supervision import exit_with_parent
from ..web.model import game_view, replay
from ..web.server import BOARDS_EVERY, SUMMARY_EVERY, PageServer, game_number
from . import render
from .db import DB_NAME, BotRow, LadderDB, LadderDBError, ResultRow
from .service import BotsChanged, GameCounted, Ladder, LadderError, LadderEvent
from .standings import Standings, fit, version_label
from .views import (
    API_VERSION,
    BotPage,
    GamePage,
    Leaderboard,
    Live,
    bot_page,
    by_reason,
    game_page,
    leaderboard,
    plain,
    public_record,
)

__all__ = ["MAX_PAGE", "Fitted", "LadderPages", "LadderView", "fit_database", "serve_ladder"]

_RECENT: Final = 12
_BOT_RECENT: Final = 20
_HISTORY: Final = 100  # points of each version's rating history kept (every other one dropped beyond)
_START_POINTS: Final = 20  # points of the history fitted from the database when the pages start, at most
_START_SECONDS: Final = 20.0  # about the most those fits may take (none when one fit takes longer)
_NOTICES: Final = 20
_FIT_SHARE: Final = 0.1  # the most of the time the refits may take
PAGE: Final = 100
"""Games in a page of ``/api/v1/games`` unless ``limit`` says otherwise."""
MAX_PAGE: Final = 500
"""The most games in a page of ``/api/v1/games``."""

T = TypeVar("T")
History = dict[str, dict[int, list[tuple[int, float, float]]]]
"""Each bot's versions' rating histories: bot -> version number -> (games counted, rating, margin) points."""


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
        self.bots: dict[str, BotRow] = {}
        """The bots as of the last fit, by name."""
        self.ratings: dict[str, PlayerRating] = {}
        """Every version's rating in the last fit, by player name."""
        self.forfeits: dict[str, dict[str, int]] = {}
        """Games each bot lost by a forfeit, by reason (in words), as of the last fit."""
        self.history: History = {}
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
        self._board: tuple[int, Leaderboard] | None = None

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
        """Opens its own connection to the database and reads the last games (the fits come in :meth:`refresh`)."""
        self._path = directory / DB_NAME
        self._db = await self.call(LadderDB.open, self._path)
        recent = await self.call(self._db.recent, _RECENT)
        self.recent.extend(recent)

    async def close(self) -> None:
        """Closes its connection, its thread and its fitting process."""
        if self._db is not None:
            await self.call(self._db.close)
        self._thread.shutdown(wait=True)
        if self._fitter is not None:
            # A fit in progress is not waited for (the history's first fits of a large ladder take minutes).
            for process in list(self._fitter._processes.values()):
                process.kill()
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
        fitted = await asyncio.get_running_loop().run_in_executor(
            self._fitter, fit_database, str(self._path), self.anchor, points
        )
        self.take_fits(fitted, latest=points == 1)
        if points == 1:
            self.fit_seconds = time.monotonic() - began

    def take_fits(self, fitted: Fitted, *, latest: bool = True) -> None:
        """Takes fits of the database (:func:`fit_database`), each a point of the rating histories; with ``latest``
        the last one is the standings now."""
        bots = fitted.bots
        labels = {
            version_label(b.name, v.number, len(b.versions)): (b.name, v.number) for b in bots for v in b.versions
        }
        for games, standings in fitted.fits:
            self._note(standings, games, labels)
        if latest:
            last = fitted.fits[-1][1]
            self.standings, self.bots = last, {b.name: b for b in bots}
            self.forfeits = {name: by_reason(counts) for name, counts in fitted.forfeits.items()}
            self.ratings = {} if last.table is None else {p.name: p for p in last.table.players}

    def _note(self, standings: Standings, games: int, labels: dict[str, tuple[str, int]]) -> None:
        """Adds each version's rating in ``standings`` (a fit of the first ``games`` games) to its history, in the
        order of the games (the history's first points are fitted after the standings now)."""
        for p in standings.table.players if standings.table is not None else ():
            if p.rating is None or p.margin is None or p.name not in labels:
                continue
            bot, number = labels[p.name]
            points = self.history.setdefault(bot, {}).setdefault(number, [])
            at = bisect.bisect_left(points, (games,))
            if at < len(points) and points[at][0] == games:
                continue
            points.insert(at, (games, p.rating, p.margin))
            if len(points) > _HISTORY:
                thinned = points[::2]
                if thinned[-1] is not points[-1]:
                    thinned.append(points[-1])
                points[:] = thinned

    async def refresh(self, stop: asyncio.Event) -> None:
        """Fits the standings at once, then the history's first points (up to :data:`_START_POINTS` fits of the
        games so far, as many as take about :data:`_START_SECONDS`: twenty fits of a million games between a
        thousand bots would take minutes), then refits whenever games were counted, at most once a second and a
        tenth of the time. The ladder plays meanwhile."""
        self.fitted = self.counted
        await self._refit()
        self.version += 1
        points = min(_START_POINTS, int(_START_SECONDS / max(self.fit_seconds, 1e-3)))
        if points >= 2:
            await self._refit(points)
            self.version += 1
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

    # --- output (the database's reads run on the view's thread: :meth:`call`)

    def live_state(self) -> Live:
        """Who is online and what is being played now."""
        settings = self.ladder.settings
        return Live(
            self.ladder.online,
            self.ladder.busy(),
            len(self.live),
            settings.time_control.text,
            settings.spec.variant.describe(),
            settings.concurrency,
        )

    def leaderboard(self) -> Leaderboard:
        """The leaderboard now (made once per change of :attr:`version`)."""
        made = self._board
        if made is None or made[0] != self.version:
            bots = list(self.bots.values())
            board = leaderboard(self.standings, bots, self.forfeits, self.live_state(), self.recent, self.notices)
            made = self._board = (self.version, board)
        return made[1]

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

    def _versions(self) -> dict[str, int]:
        return {name: len(b.versions) for name, b in self.bots.items()}

    def game(self, number: int) -> tuple[GamePage, dict[str, Any]] | None:
        """Counted game ``number``: its public record, and the viewer's encoding of it with its two names."""
        found = None if self._db is None or number < 1 else self._db.games_after(number - 1, 1)
        if not found or found[0][0].game_id != number:
            return None
        record, first, second = found[0]
        page = game_page(record, first, second, self._versions())
        public = public_record(record)
        return page, {
            "names": [public.first, public.second],
            "game": game_view(public, {public.first: 0, public.second: 1}),
        }

    def games(self, since: int, limit: int, bot: str | None) -> list[GamePage]:
        """The first ``limit`` counted games after number ``since`` (of ``bot``), in order."""
        if self._db is None:
            return []
        versions = self._versions()
        return [game_page(r, f, s, versions) for r, f, s in self._db.games_after(since, limit, bot)]

    def bot(self, name: str) -> BotPage | None:
        """Bot ``name``'s page, or None for a bot the ladder does not know (yet: until the next fit)."""
        row = self.bots.get(name)
        if row is None or self._db is None:
            return None
        tallies = self._db.bot_tallies(name)
        recent = self._db.recent(_BOT_RECENT, name)
        return bot_page(row, self.ratings, tallies, recent, self.history.get(name, {}), self.live_state())


@dataclass(frozen=True, slots=True)
class Fitted:
    """What the fitting process sends back (:func:`fit_database`)."""

    fits: list[tuple[int, Standings]]
    """The fits of the first k games, for growing k: (k, standings)."""
    bots: list[BotRow]
    """The ladder's bots."""
    forfeits: dict[str, dict[Termination, int]]
    """Games each bot lost by a forfeit, by reason."""


def fit_database(path: str, anchor: tuple[str, float] | None, points: int) -> Fitted:
    """The fits of the first N/points, 2N/points... N counted games of the ladder at ``path`` (the last is the fit
    of all), its bots and their forfeits: what the pages' fitting process does. An anchor that is no player is
    ignored."""
    db = LadderDB.open(Path(path), create=False)
    try:
        # One point: the tallies suffice (a few rows); the history's first points need the games in order.
        results, bots, forfeits = db.results() if points > 1 else db.tallies(), db.bots(), db.forfeits()
    finally:
        db.close()
    players = {version_label(b.name, v.number, len(b.versions)) for b in bots for v in b.versions}
    anchored = anchor if anchor is not None and anchor[0] in players else None
    if points > 1:
        n = len(results)
        steps = sorted({n * i // points for i in range(1, points + 1)} | {n})
        prefixes = list(_prefix_tallies(results, steps))
    else:
        prefixes = [(sum(r.count for r in results), results)]
    fits = []
    for k, tallied in prefixes:
        try:
            fits.append((k, fit(tallied, bots, anchor=anchored)))
        except RatingError:  # the anchor has no game yet among the first k
            fits.append((k, fit(tallied, bots)))
    return Fitted(fits, bots, forfeits)


def _prefix_tallies(results: Sequence[ResultRow], steps: Sequence[int]) -> Any:
    """The first k games of ``results`` tallied (one row per two versions, colours and result), for each k of
    ``steps``: a fit of a million games is then a fit of a few thousand rows."""
    counts: collections.Counter[tuple[str, str, int, int, float]] = collections.Counter()
    done = 0
    for k in steps:
        counts.update((r.first, r.second, r.first_version, r.second_version, r.score) for r in results[done:k])
        done = k
        yield k, [ResultRow(0, a, b, fv, sv, score, n) for (a, b, fv, sv, score), n in counts.items()]


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
        page = await self.view.call(self.view.bot, request.match_info["name"])
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
        pages = await self.view.call(self.view.games, since, limit, bot)
        games = [plain(p) for p in pages]
        following = pages[-1].id if len(pages) == limit else None
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
            refresh.cancel()  # a fit in progress is not waited for
            await asyncio.gather(refresh, return_exceptions=True)
    finally:
        await pages.close()
        await view.close()
