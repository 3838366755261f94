"""The live page: an aiohttp server in the arena's own event loop, its updates pushed as Server-Sent Events.

``GET /`` is the page; ``GET /events`` the stream (``summary``: tables, plots' data, progress, last games, notices;
``boards``: the games being played; ``end``: the server is stopping); ``GET /api/summary``, ``/api/boards`` and
``/api/game/ID`` the same data as JSON; ``GET /static/...`` the script, the style and the charting library.
Nothing else: the server is read-only (any other method is refused), binds 127.0.0.1 unless told otherwise, refuses
requests for a host name it was not given (a page elsewhere cannot read it through DNS rebinding), shows engines'
names and what they said of themselves but never their command lines or paths, and sends a Content Security Policy
that allows only its own scripts.

The arena's loop times the engines, so the server stays light: each client is sent at most one summary a second
and one boards update every quarter second, built once per change for every client; a summary is one rating fit.

:func:`run_live` plays a run with the page up (``--web``); :func:`serve_directory` serves a run directory, written
or being written by another process (``quarto-arena serve``).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, Self

from aiohttp import web
from quarto_arena.protocol.text import safe_text

from ..run import Event, GamePlayer, Interrupt, Run, RunOutcome
from . import WebError
from .model import RunInfo, RunModel
from .report import asset, outcome_state, served_page
from .rundir import Follower, run_state

__all__ = ["LiveServer", "PageServer", "game_number", "page_html", "run_live", "serve_directory"]

#: Seconds between two summaries, and between two boards updates, sent to one client.
SUMMARY_EVERY: Final = 1.0
BOARDS_EVERY: Final = 0.25
#: How often a client's stream looks for changes, and sends a comment line to find a closed connection, seconds.
_TICK: Final = 0.1
_KEEPALIVE: Final = 15.0
#: How often ``serve`` reads the run directory for new games, seconds.
_POLL: Final = 0.5
IN_FLIGHT_ELSEWHERE: Final = "shown by the run's own --web"
"""Where the games in flight of a run that another process plays are shown (``serve DIR`` reads finished games)."""
_STATIC: Final = {
    "style.css": "text/css",
    "quarto.js": "text/javascript",
    "tune.js": "text/javascript",
    "board-link.js": "text/javascript",
    "vendor/chart.umd.min.js": "text/javascript",
    "vendor/chartjs-chart-matrix.min.js": "text/javascript",
    "vendor/chart.js.LICENSE.md": "text/plain",
    "vendor/chartjs-chart-matrix.LICENSE": "text/plain",
}
_HEADERS: Final = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_ANY_HOST: Final = frozenset({"0.0.0.0", "::", ""})
_MAX_ID_DIGITS: Final = 18
#: Seconds between two log lines about malformed requests (aiohttp logs each, with a traceback).
LOG_EVERY: Final = 1.0
#: Event streams (open pages) served at once; one more is answered 503.
MAX_STREAMS: Final = 256
_TITLES: Final = {"tournament": "Tournament", "match": "Match", "sprt": "SPRT", "tune": "Tune"}


def page_html(template: str, title: str, **values: str) -> str:
    """A served page: ``templates/TEMPLATE`` with ``$head`` (``templates/head.html``, the head every served page
    shares), ``$title`` and ``values`` filled in, each escaped for HTML. ``$board`` is the address of the analysis
    board running on this machine, if one is (its games' "open on the board" links: static/board-link.js)."""
    from ..board.discovery import running_board  # the standard library only

    board = values.pop("board", None)
    escaped = {k: html.escape(v) for k, v in values.items()}
    return served_page(template, title, running_board() or "" if board is None else board, **escaped)


class PageServer:
    """What every page server here shares: aiohttp in the arena's own loop, GET only, the Host check, the security
    headers, the static assets, and feeds pushed as Server-Sent Events. A subclass adds its routes
    (:meth:`routes`) and its feeds (:meth:`feeds`, :meth:`feed`); :class:`LiveServer` is the run's, the ladder's
    pages are another."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8080) -> None:
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self._hosts: frozenset[str] = frozenset()
        self._streams = 0

    @property
    def url(self) -> str:
        """Where the page is (the port actually bound, when 0 was asked for)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def routes(self, router: web.UrlDispatcher) -> None:
        """Adds the pages' routes (GET only; ``/static/...`` is added here)."""

    def feeds(self) -> dict[str, tuple[object, float]]:
        """The ``/events`` stream's feeds: name -> (a key that changes when the feed does, seconds between two)."""
        return {}

    def feed(self, name: str) -> str:
        """The JSON text of a feed now."""
        raise KeyError(name)

    async def start(self) -> None:
        """Binds and starts serving; raises :class:`WebError` when the address cannot be bound."""
        app = web.Application(middlewares=[self._guard], client_max_size=1 << 16)  # GET only: no body to take
        self.routes(app.router)
        app.router.add_get("/static/{name:.+}", self._static)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        _SERVER_LOG.addFilter(_QUIET)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            _SERVER_LOG.removeFilter(_QUIET)
            raise WebError(f"--web {self.host}:{self.port}: cannot listen there: {e.strerror or e}") from None
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        names = {self.host, "localhost", "127.0.0.1", "[::1]", f"[{self.host}]"}
        self._hosts = frozenset(f"{n}:{self.port}" for n in names) | frozenset(names)

    async def close(self) -> None:
        """Tells every open page that the server stops, then stops."""
        self._closing.set()
        if self._runner is not None:
            await asyncio.sleep(2 * _TICK)  # the streams see the flag and send "end"
            await self._runner.cleanup()
            self._runner = None
            _SERVER_LOG.removeFilter(_QUIET)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if self.host not in _ANY_HOST and request.host not in self._hosts:
            raise web.HTTPMisdirectedRequest(text="this server answers to its own address only\n")
        if request.path != "/events":
            response = await handler(request)
        elif self._streams >= MAX_STREAMS:  # an open page holds a connection and a write buffer: bounded in all
            raise web.HTTPServiceUnavailable(text=f"{MAX_STREAMS} pages are open already\n")
        else:
            self._streams += 1
            try:
                response = await handler(request)
            finally:
                self._streams -= 1
        response.headers.update(_HEADERS)
        return response

    async def _static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        kind = _STATIC.get(name)
        if kind is None:
            raise web.HTTPNotFound()
        return web.Response(text=asset(f"static/{name}"), content_type=kind, headers={"Cache-Control": "no-cache"})

    async def events(self, request: web.Request) -> web.StreamResponse:
        """The ``/events`` stream: each feed sent when its key changes, at most once per its interval."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        response.headers.update(_HEADERS)
        await response.prepare(request)
        sent: dict[str, object] = {}
        last: dict[str, float] = {}
        alive = time.monotonic()
        with contextlib.suppress(ConnectionError):  # the page was closed
            while not self._closing.is_set():
                if request.transport is None or request.transport.is_closing():
                    return response  # the page was closed: its place is free for another at once
                now = time.monotonic()
                for name, (key, every) in self.feeds().items():
                    if sent.get(name, _NEVER) != key and now - last.get(name, -every) >= every:
                        await response.write(f"event: {name}\ndata: {self.feed(name)}\n\n".encode())
                        sent[name], last[name], alive = key, now, now
                if now - alive >= _KEEPALIVE:
                    await response.write(b": keep-alive\n\n")
                    alive = now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), _TICK)
            # The last state, then the end: the page stops reconnecting and says so.
            for name in self.feeds():
                await response.write(f"event: {name}\ndata: {self.feed(name)}\n\n".encode())
            await response.write(b"event: end\ndata: {}\n\n")
        return response


def game_number(request: web.Request, key: str = "game_id") -> int:
    """A game's number from the path, or 400: isdigit() alone takes "²" and 5,000 digits, which int() refuses."""
    text = request.match_info[key]
    if not (text.isascii() and text.isdigit() and len(text) <= _MAX_ID_DIGITS):
        raise web.HTTPBadRequest(text="a game is a number of at most 18 digits\n")
    return int(text)


_NEVER: Final = object()


class LiveServer(PageServer):
    """Serves one :class:`RunModel` (which its owner may replace: :attr:`model`) until :meth:`close`."""

    def __init__(self, model: RunModel, host: str = "127.0.0.1", port: int = 8080) -> None:
        super().__init__(host, port)
        self.model = model
        self._cache: dict[str, tuple[tuple[int, int], str]] = {}

    def routes(self, router: web.UrlDispatcher) -> None:
        """The run's page, its stream and its JSON."""
        router.add_get("/", self._page)
        router.add_get("/events", self.events)
        router.add_get("/api/summary", self._api_summary)
        router.add_get("/api/boards", self._api_boards)
        router.add_get("/api/game/{game_id}", self._api_game)

    def _key(self, name: str) -> tuple[int, int]:
        model = self.model
        return (id(model), model.version if name == "summary" else model.boards_version)

    def feeds(self) -> dict[str, tuple[object, float]]:
        """The boards (four times a second at most) and the summary (once a second)."""
        return {"boards": (self._key("boards"), BOARDS_EVERY), "summary": (self._key("summary"), SUMMARY_EVERY)}

    def feed(self, name: str) -> str:
        """The summary or the boards as JSON."""
        return self._json(name)

    # --- requests

    def _json(self, name: str) -> str:
        """The summary or the boards as JSON, built once per change of the model for every client."""
        model = self.model
        key = self._key(name)
        cached = self._cache.get(name)
        if cached is None or cached[0] != key:
            value: Any = model.summary() if name == "summary" else self._boards(model)
            cached = (key, json.dumps(value, separators=(",", ":")))
            self._cache[name] = cached
        return cached[1]

    async def _page(self, request: web.Request) -> web.Response:
        info = self.model.info
        title = f"{_TITLES[info.kind.value]}: {', '.join(info.names)}"
        return web.Response(text=page_html("live.html", title), content_type="text/html")

    async def _api_summary(self, request: web.Request) -> web.Response:
        return web.Response(text=self._json("summary"), content_type="application/json")

    @staticmethod
    def _boards(model: RunModel) -> dict[str, Any]:
        """The games being played; a page that follows another process's run says where they are shown instead."""
        seen = None if model.live else IN_FLIGHT_ELSEWHERE
        return {"names": model.info.names, "games": model.boards(), "in_flight": seen}

    async def _api_boards(self, request: web.Request) -> web.Response:
        return web.Response(text=self._json("boards"), content_type="application/json")

    async def _api_game(self, request: web.Request) -> web.Response:
        number = game_number(request)
        game = self.model.game(number)
        if game is None:
            raise web.HTTPNotFound(text=f"no finished game {number}\n")
        return web.Response(text=json.dumps(game, separators=(",", ":")), content_type="application/json")


class _OncePerSecond(logging.Filter):
    """What aiohttp logs about malformed requests (one line and a traceback each, for any client to trigger):
    one line a second at most, without the traceback, with a count of the lines not shown."""

    def __init__(self) -> None:
        super().__init__()
        self._last = -LOG_EVERY
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self._last < LOG_EVERY:
            self._dropped += 1
            return False
        self._last = now
        why = "" if record.exc_info is None or record.exc_info[1] is None else f": {record.exc_info[1]!r}"
        more = f" (and {self._dropped} more in the last seconds, not shown)" if self._dropped else ""
        record.msg = safe_text(f"web: {record.getMessage()}{why}", 300) + more
        record.args, record.exc_info, record.exc_text, record.stack_info = None, None, None, None
        self._dropped = 0
        return True


_SERVER_LOG: Final = logging.getLogger("aiohttp.server")
_QUIET: Final = _OncePerSecond()


async def run_live(
    run: Run,
    on_event: Callable[[Event], None],
    address: tuple[str, int],
    *,
    interrupt: Interrupt | None = None,
    announce: Callable[[str], None] = lambda _url: None,
    player: GamePlayer | None = None,
) -> RunOutcome:
    """Plays ``run`` with the live page served at ``address`` (``announce`` receives its URL once it listens), its
    games played by ``player`` (by default on this machine, as :meth:`Run.run` does).

    ``on_event`` sees every event as without the page (turns included: it ignores what it does not know). Raises
    :class:`WebError` when the address cannot be bound (before any game), and whatever the run raises.
    """
    model = RunModel(RunInfo.of(run.spec, run.total), run.records.values(), live=True)

    def event(e: Event) -> None:
        on_event(e)
        model.event(e)

    async with LiveServer(model, *address) as server:
        announce(server.url)
        outcome = await run.run(event, interrupt=interrupt, turns=True, player=player)
        model.finish(outcome_state(outcome))
        return outcome


async def serve_directory(
    directory: Path,
    address: tuple[str, int],
    *,
    announce: Callable[[str], None] = lambda _url: None,
    warn: Callable[[str], None] = lambda _text: None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serves the live page of a run directory, following its games as they are written, until SIGINT or SIGTERM
    (or ``stop``). Raises :class:`WebError` for a directory that holds no run, or an address that cannot be bound.
    """
    follower = Follower(directory, warn)
    follower.poll()
    follower.model.state = run_state(follower.model)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled = (signal.SIGINT, signal.SIGTERM)
    for signum in handled:
        loop.add_signal_handler(signum, stop.set)
    try:
        async with LiveServer(follower.model, *address) as server:
            announce(server.url)
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    # A file read in parts (Follower.READ_PER_POLL) is read on at once, the loop answering between.
                    await asyncio.wait_for(stop.wait(), 0 if follower.behind else _POLL)
                if follower.poll():
                    follower.model.state = run_state(follower.model)
                server.model = follower.model
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
