"""A tune's live page (``--web``; the ``web`` extra): the run's live server with the tune's sections, one feed
more, ``tune`` (also ``GET /api/tune``): :class:`~.pages.TuneHistory`'s summary, sent at most once a second."""

from __future__ import annotations

import json
from collections.abc import Callable

from aiohttp import web

from ..run import Event, Interrupt, RunOutcome
from ..web.model import RunInfo, RunModel
from ..web.report import outcome_state
from ..web.server import LiveServer, page_html
from .pages import TuneHistory
from .tune import Tune

__all__ = ["TuneServer", "play_live"]

#: Seconds between two ``tune`` feeds sent to one client.
TUNE_EVERY = 1.0


class TuneServer(LiveServer):
    """The run's live page with the tune's sections (``templates/tune.html``)."""

    def __init__(self, model: RunModel, history: TuneHistory, host: str = "127.0.0.1", port: int = 8080) -> None:
        super().__init__(model, host, port)
        self.history = history
        self._tune_json: tuple[int, str] | None = None

    def routes(self, router: web.UrlDispatcher) -> None:
        """The run's routes, and ``/api/tune``."""
        super().routes(router)
        router.add_get("/api/tune", self._api_tune)

    def feeds(self) -> dict[str, tuple[object, float]]:
        """The run's feeds and ``tune``."""
        return {**super().feeds(), "tune": (self.history.version, TUNE_EVERY)}

    def feed(self, name: str) -> str:
        """A feed's JSON text."""
        return self._tune() if name == "tune" else super().feed(name)

    def _tune(self) -> str:
        """The tune's summary as JSON, built once per change for every client."""
        version = self.history.version
        if self._tune_json is None or self._tune_json[0] != version:
            self._tune_json = (version, json.dumps(self.history.summary(), separators=(",", ":")))
        return self._tune_json[1]

    async def _page(self, request: web.Request) -> web.Response:
        t = self.history.tuner.tune
        title = f"Tune: {t.engine} over {', '.join(t.names)}"
        return web.Response(text=page_html("tune.html", title), content_type="text/html")

    async def _api_tune(self, request: web.Request) -> web.Response:
        return web.Response(text=self._tune(), content_type="application/json")


async def play_live(
    tune: Tune,
    on_event: Callable[[Event], None],
    address: tuple[str, int],
    *,
    interrupt: Interrupt | None = None,
    announce: Callable[[str], None] = lambda _url: None,
) -> RunOutcome:
    """Plays the tune with its live page served at ``address`` (``announce`` receives its URL once it listens).
    Raises :class:`~quarto_arena.arena.web.WebError` when the address cannot be bound, and what the run raises."""
    run = tune.run
    model = RunModel(RunInfo.of(run.spec, run.total), run.records.values(), live=True)
    history = TuneHistory(tune.tuner)
    tune.listeners.append(history.add)

    def event(e: Event) -> None:
        on_event(e)
        model.event(e)

    async with TuneServer(model, history, *address) as server:
        announce(server.url)
        outcome = await tune.play(event, interrupt=interrupt, turns=True)
        model.finish(outcome_state(outcome))
        return outcome
