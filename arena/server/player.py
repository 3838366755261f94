"""A run's games with bots that connect in: :class:`ServerPlayer` serves them before the first game and plays like
:class:`~quarto_arena.arena.run.LocalPlayer`, its remote engines' sessions leased from the :class:`Server`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from quarto_arena.protocol.rules import Variant

from ..records import GameRecord
from ..referee import GameSpec
from ..run import EnginePool, LocalPlayer, Run, RunError, ServerSpec
from ..schedule import ScheduledGame
from .keys import KeysError, load_server_keys
from .server import Limits, Server, ServerError

__all__ = ["ServerPlayer", "server_for", "server_player"]

log = logging.getLogger(__name__)


def server_for(spec: ServerSpec, bots: list[str], limits: Limits | None = None) -> Server:
    """The server a run's settings describe (keys read now); raises :class:`RunError` (a usage error) for bad keys."""
    keys = None
    if spec.keys is not None:
        try:
            keys = load_server_keys(Path(spec.keys), bots)
        except KeysError as e:
            raise RunError(str(e)) from None
    return Server(spec.endpoint, bots, keys=keys, wait=spec.wait, limits=limits)


class ServerPlayer(LocalPlayer):
    """Plays on this machine; before the first game it binds the server and waits for every remote bot."""

    def __init__(self, pool: EnginePool, server: Server, over: Callable[[], bool] | None = None) -> None:
        super().__init__(pool)
        self.server = server
        """Where the remote bots connect."""
        self.over = over
        """True once the run has nothing left to play: the bots are then told ``goodbye`` (an interrupted run says
        nothing, and its bots wait for the resume)."""

    async def serve(self) -> None:
        """Binds the server (once); :class:`RunError` when the endpoint cannot be bound."""
        try:
            await self.server.start()
        except ServerError as e:
            raise RunError(str(e)) from None

    async def start(self, variant: Variant) -> None:
        """Serves, waits up to the server's ``wait`` for every remote bot (:class:`RunError`, an engine failure,
        naming the absent ones), then checks every engine as :class:`LocalPlayer` does."""
        await self.serve()
        wait = self.server.wait
        log.info("server: waiting up to %g s for %s to connect", wait, ", ".join(self.server.absent()))
        absent = await self.server.wait_for(wait)
        if absent:
            names = ", ".join(f"remote:{name}" for name in absent)
            raise RunError(f"not connected to {self.server.endpoint} within {wait:g} s: {names}", engine=True)
        await super().start(variant)

    async def play(self, game: ScheduledGame, spec: GameSpec, on_abort: Callable[[GameRecord], None]) -> GameRecord:
        """Plays as :class:`LocalPlayer` does (serving first, when the run skipped :meth:`start`)."""
        await self.serve()
        return await super().play(game, spec, on_abort)

    async def close(self) -> None:
        """Ends every engine, then stops serving."""
        try:
            await super().close()
        finally:
            if self.over is not None and not self.over():
                self.server.farewell = None
            await self.server.close()


def server_player(run: Run, spec: ServerSpec | None = None, limits: Limits | None = None) -> ServerPlayer:
    """The player of a run with remote engines, served as ``spec`` says (default: as the run's own spec says)."""
    settings = spec or run.spec.server
    if settings is None:
        raise RunError("this run has no remote engines to serve")
    server = server_for(settings, run.spec.remote, limits)
    pool = EnginePool(
        run.spec.engines,
        deadlines=run.deadlines,
        log_dir=run.log_dir,
        log_limit=run.spec.log_limit,
        transcript=run.transcript,
        connector=server.lease,
    )
    return ServerPlayer(pool, server, over=run.decided)
