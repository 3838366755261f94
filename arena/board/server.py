"""The board's page and its API: :class:`BoardServer`, the pages' server
(:class:`~quarto_arena.arena.web.server.PageServer`: the Host check, the security headers, the static files,
Server-Sent Events) with requests that change things.

``GET /`` is the page; ``GET /events`` its two feeds (``state``: the engines and the game; ``games``: the games
opened from a file), also as ``GET /api/state`` and ``/api/games``; ``GET /static/board.js`` and ``board.css`` its
script and style (beside the viewer's). Every
``POST /api/...`` takes and gives a JSON object (see :class:`~.core.Board`): ``position`` (the drawing, the legal
turns and the solver's values of a position), ``engine/go`` and ``engine/stop``, ``game/new``, ``game/turn`` and
``game/abandon``, ``games/load``, ``games/open`` and ``games/link``. A request the board cannot carry out is
answered 400 with ``{"error": "one line"}``, which the page shows where the request was made.

Who may ask. The board starts engines, reads files and plays games, so it serves this machine only: it binds a
loopback address (another is refused at start-up), answers only to its own host names (a page elsewhere cannot
reach it through DNS rebinding: the pages' Host check), and takes a POST only from its own page: the request must
carry the board's token (a random value in the page, which no other site can read), and an ``Origin`` or
``Sec-Fetch-Site`` header, when the browser sends one, must say the request came from the board's own page. Every
body is at most :data:`MAX_BODY` bytes of JSON.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import secrets
import signal
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from ..engine import Deadlines, EngineConfig
from ..web import WebError
from ..web.report import asset
from ..web.server import PageServer, page_html
from . import BoardError
from .core import Board
from .discovery import forget, tell
from .games import Loaded

__all__ = ["MAX_BODY", "TOKEN_HEADER", "BoardServer", "check_loopback", "serve_board"]

MAX_BODY: Final = 16 << 10
"""Bytes a request's JSON may have (a position, a game's turns, a path)."""
TOKEN_HEADER: Final = "X-Board-Token"
"""The header that carries the board's token (the page reads it from its ``<body data-token>``)."""
STATE_EVERY: Final = 0.05
"""Seconds between two updates of the engines and the game sent to one page (the stream's tick is the bound)."""
GAMES_EVERY: Final = 1.0
"""Seconds between two updates of the list of games sent to one page."""
_ASSETS: Final = {"board.js": "text/javascript", "board.css": "text/css"}
_JSON: Final = "application/json"

Handler = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


def check_loopback(host: str) -> None:
    """Raises :class:`WebError` unless ``host`` is a loopback address (or ``localhost``): the board serves this
    machine only."""
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise WebError(
            f"--web {host}: the board serves this machine only (it starts engines and reads files):"
            " give a loopback address, e.g. 127.0.0.1:8080"
        )


class BoardServer(PageServer):
    """Serves one :class:`~.core.Board`."""

    def __init__(self, board: Board, host: str = "127.0.0.1", port: int = 8080) -> None:
        check_loopback(host)
        super().__init__(host, port)
        self.board = board
        self.token = secrets.token_urlsafe(24)
        """What a POST must carry: the page has it, no other site can read it."""

    def routes(self, router: web.UrlDispatcher) -> None:
        """The page, its stream, its assets, and the API."""
        router.add_get("/", self._page)
        router.add_get("/events", self.events)
        for name in _ASSETS:
            router.add_get(f"/static/{name}", self._asset)
        router.add_get("/api/state", self._feed_json("state"))
        router.add_get("/api/games", self._feed_json("games"))
        api: dict[str, Handler] = {
            "position": self.board.position,
            "engine/go": self.board.ask,
            "engine/stop": self.board.stop,
            "game/new": self.board.new_game,
            "game/turn": self.board.turn,
            "game/abandon": self.board.abandon,
            "games/load": self.board.load,
            "games/open": self.board.open,
            "games/link": self.board.link,
        }
        for path, handler in api.items():
            router.add_post(f"/api/{path}", self._api(handler))

    def feeds(self) -> dict[str, tuple[object, float]]:
        """The engines and the game; the games opened."""
        return {"state": (self.board.version, STATE_EVERY), "games": (self.board.games_version, GAMES_EVERY)}

    def feed(self, name: str) -> str:
        """A feed's JSON."""
        return self.board.state() if name == "state" else self.board.games()

    def _feed_json(self, name: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def answer(request: web.Request) -> web.Response:
            return web.Response(text=self.feed(name), content_type=_JSON)

        return answer

    async def _page(self, request: web.Request) -> web.Response:
        text = page_html("board.html", "analysis board", token=self.token)
        return web.Response(text=text, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def _asset(self, request: web.Request) -> web.Response:
        name = request.path.rsplit("/", 1)[1]
        headers = {"Cache-Control": "no-cache"}
        return web.Response(text=asset(f"static/{name}"), content_type=_ASSETS[name], headers=headers)

    def _api(self, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def answer(request: web.Request) -> web.Response:
            body = await self._body(request)
            try:
                out = await handler(body)
            except BoardError as e:
                return web.json_response({"error": str(e)}, status=400)
            return web.json_response(out, dumps=_dumps)

        return answer

    async def _body(self, request: web.Request) -> Mapping[str, Any]:
        """The request's JSON object, once it is known to come from the board's own page (403 otherwise)."""
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"http://{request.host}":
            raise web.HTTPForbidden(text="refused: a request from another site\n")
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site != "same-origin":
            raise web.HTTPForbidden(text=f"refused: a request from another site ({site})\n")
        if not secrets.compare_digest(request.headers.get(TOKEN_HEADER, ""), self.token):
            raise web.HTTPForbidden(text="refused: not from this board's page (reload it: was the board restarted?)\n")
        if request.content_type != _JSON:
            raise web.HTTPUnsupportedMediaType(text="expected application/json\n")
        if request.content_length is None or request.content_length > MAX_BODY:
            raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=request.content_length or 0)
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            raise web.HTTPBadRequest(text="expected a JSON object\n") from None
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(text="expected a JSON object\n")
        return body


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


async def serve_board(
    engines: list[EngineConfig],
    directory: Path,
    address: tuple[str, int],
    *,
    games: Loaded | None = None,
    deadlines: Deadlines | None = None,
    announce: Callable[[str], None] = lambda _url: None,
    stop: Any = None,
) -> None:
    """Serves the board until SIGINT or SIGTERM (or ``stop``, an asyncio.Event, is set); then the game in play is
    abandoned (and saved), every engine is ended with its process group, and the solver's threads stop.

    Raises :class:`WebError` for an address that is not loopback or cannot be bound."""
    import asyncio

    check_loopback(address[0])
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled = (signal.SIGINT, signal.SIGTERM)
    for signum in handled:
        loop.add_signal_handler(signum, stop.set)
    board = Board(engines, directory, deadlines=deadlines)
    if games is not None:
        board.open_games(games)
    try:
        async with BoardServer(board, *address) as server:
            told = tell(server.url)
            try:
                announce(server.url)
                await stop.wait()
            finally:
                if told is not None:
                    forget(server.url)
    finally:
        await board.close()
        for signum in handled:
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(signum)
