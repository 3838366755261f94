"""Games played on a Dask cluster: :class:`ClusterPlayer`, the runner's :class:`GamePlayer` that submits one task per
game and collects its record, and :func:`play_on_cluster`, a run played that way.

Everything but the games stays here, in the coordinating process, exactly as in a local run: the schedule, the
journal (a game counts once it is synced there), ``--resume``, PGN, JSON Lines, the engines' logs, the progress,
the tables, ``--strict`` and the SPRT's stopping rule.

Faults:

- A worker that dies during a game (killed, its machine lost): Dask gives the task to another worker, which plays
  the game again from the start; the coordinator receives one record, so the game counts once. The dead worker's
  engines die with it, as on one machine (parent-death signal and watchdog, arena/transport/supervision.py).
- The run stops (interrupt, ``--strict`` failure, the SPRT decided): no new game is submitted; games running are
  cancelled on their workers (the worker kills their engines within a fraction of a second), listed in
  ``aborted.jsonl`` without their turns, not counted, and played again on resume.
- The coordinator dies: the scheduler drops its tasks and the workers kill those games' engines likewise, and drops
  its lease, so the workers quit its idle engines too; ``--resume`` against the same cluster plays exactly the games
  the journal lacks.

Engines are kept warm on the workers between games (arena/cluster/warm.py), as the local runner keeps them.
- A game whose workers keep dying (Dask's ``allowed-failures``), a lost scheduler, or a worker that cannot run the
  task stops the run with one line (:class:`ClusterError`, exit status 3).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from quarto_arena.protocol.rules import Variant

from ..engine import Deadlines, EngineConfig
from ..records import GameRecord
from ..referee import GameSpec
from ..run import EnginesOf, Event, Interrupt, Run, RunOutcome
from ..schedule import ScheduledGame
from ..transport import DEFAULT_STDERR_LIMIT
from ..transport.process import StderrLog
from .connection import Cluster, ClusterAddress, ClusterError, WorkerFacts, overloaded_hosts
from .task import abandoned_record, game_task, play_game_on_worker

__all__ = ["ClusterPlayer", "play_on_cluster"]


class ClusterPlayer:
    """A :class:`~quarto_arena.arena.run.GamePlayer` whose games are Dask tasks: one game per worker thread."""

    def __init__(
        self,
        cluster: Cluster,
        engines: Sequence[EngineConfig],
        *,
        deadlines: Deadlines | None = None,
        log_dir: Path | None = None,
        log_limit: int = DEFAULT_STDERR_LIMIT,
        oversubscribe: bool = False,
        engines_of: EnginesOf | None = None,
    ) -> None:
        """``log_dir`` receives the engines' standard error as the workers send it back (``log_limit`` bytes per
        engine); ``oversubscribe`` allows machines with more worker threads than cores; ``engines_of``, if given,
        says each game's engines (their options change from game to game: a tune's)."""
        self.cluster = cluster
        self.configs = {e.name: e for e in engines}
        self.engines_of = engines_of
        self.deadlines = deadlines
        self.log_dir = log_dir
        self.log_limit = log_limit
        self.oversubscribe = oversubscribe
        self.workers: list[WorkerFacts] = []
        """The workers found by :meth:`start`."""
        self._token = secrets.token_hex(4)  # task keys of this coordinator only: never confused with a dead one's
        self._submitted: set[Any] = set()
        self._lease: Any = None  # while held, the workers keep this run's engines warm between games (.warm)

    @property
    def threads(self) -> int:
        """Games the workers found by :meth:`start` play at once."""
        return sum(w.threads for w in self.workers)

    async def start(self, variant: Variant) -> None:
        """Checks every engine on every worker, and that no machine runs more worker threads than it has cores
        (unless ``oversubscribe``); raises :class:`ClusterError` naming what is wrong where."""
        workers = await self.cluster.preflight(list(self.configs.values()), variant, self.deadlines)
        crowded = overloaded_hosts(workers)
        if crowded and not self.oversubscribe:
            raise ClusterError(
                f"{'; '.join(crowded)}: games would share cores while their clocks run; give each machine at most"
                " one worker thread per core (dask worker --nthreads N), or pass --oversubscribe",
                engine=False,
            )
        self.workers = workers
        await self.take_lease()

    async def take_lease(self) -> None:
        """Scatters the lease: data on every worker, dropped by the scheduler when :meth:`close` releases it or this
        process goes away, whereupon the workers quit this run's idle engines (arena/cluster/warm.py)."""
        if self._lease is None:
            self._lease = await self.cluster.client.scatter(self._token, broadcast=True, hash=False)

    async def play(self, game: ScheduledGame, spec: GameSpec, on_abort: Callable[[GameRecord], None]) -> GameRecord:
        """Submits the game and waits for its record; when cancelled, hands ``on_abort`` the game without its turns
        (the task itself is cancelled by :meth:`close`)."""
        first, second = (
            (self.configs[game.first], self.configs[game.second]) if self.engines_of is None else self.engines_of(game)
        )
        task = game_task(
            game,
            spec,
            first,
            second,
            deadlines=self.deadlines,
            log_limit=self.log_limit,
            lease=None if self._lease is None else str(self._lease.key),
        )
        key = f"quarto-arena-game-{game.game_id}-{self._token}"
        future = self.cluster.client.submit(play_game_on_worker, task, key=key, pure=False)
        self._submitted.add(future)
        try:
            result: dict[str, Any] = await future
        except asyncio.CancelledError:
            on_abort(abandoned_record(game, spec))
            raise
        except Exception as e:
            self._submitted.discard(future)
            raise _lost(game, e) from None
        self._submitted.discard(future)
        if "error" in result:
            raise ClusterError(f"game {game.game_id}: {result['error']}")
        if "record" not in result:
            raise ClusterError(f"game {game.game_id} was cancelled on worker {result.get('worker')} by another client")
        record = GameRecord.from_dict(result["record"])
        if self.log_dir is not None:
            for name, data in result.get("stderr", {}).items():
                log = StderrLog.acquire(self.log_dir / f"{name}.stderr", self.log_limit)
                log.write(data)
                log.release()
        return record

    async def close(self) -> None:
        """Cancels every task submitted and not collected (their workers kill those games' engines) and releases the
        lease (the workers quit this run's idle engines)."""
        left, self._submitted = list(self._submitted), set()
        lease, self._lease = self._lease, None
        if lease is not None:
            left.append(lease)
        if left:
            await self.cluster.client.cancel(left)


def _lost(game: ScheduledGame, e: Exception) -> ClusterError:
    """The one line for a game the cluster could not play."""
    kind = type(e).__name__
    text = " ".join(str(e).split())
    if kind == "KilledWorker":
        return ClusterError(f"game {game.game_id}: every worker that tried it died during it ({text})")
    if kind == "FutureCancelledError":
        return ClusterError(f"game {game.game_id}: the cluster dropped it ({text}); is the scheduler still running?")
    return ClusterError(f"game {game.game_id}: the cluster cannot play it ({kind}: {text})")


async def play_on_cluster(
    run: Run,
    address: ClusterAddress,
    on_event: Callable[[Event], None] | None = None,
    *,
    interrupt: Interrupt | None = None,
    oversubscribe: bool = False,
    engines_of: EnginesOf | None = None,
) -> RunOutcome:
    """:meth:`Run.run` with its games played on the cluster at ``address``: as many at once as the workers have
    threads (or the run's concurrency, when larger: the rest wait on the scheduler for workers to come);
    ``engines_of`` as :class:`ClusterPlayer`'s.

    Raises :class:`ClusterError` (a :class:`~quarto_arena.arena.run.RunError`) when the cluster cannot be reached
    or used, before or during the run.
    """
    if run.decided():
        return await run.run(on_event, interrupt=interrupt)
    async with Cluster.connect(address) as cluster:
        player = ClusterPlayer(
            cluster,
            run.spec.engines,
            deadlines=run.deadlines,
            log_dir=run.log_dir,
            log_limit=run.spec.log_limit,
            oversubscribe=oversubscribe,
            engines_of=engines_of,
        )
        starting = asyncio.ensure_future(player.start(run.spec.game.variant))
        waits: list[asyncio.Future[Any]] = [starting]
        if interrupt is not None:
            waits.append(asyncio.ensure_future(interrupt.event.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()  # the check, when an interrupt came first: the run below then stops at once
            await asyncio.gather(*waits, return_exceptions=True)
        if not starting.cancelled():
            starting.result()
        concurrency = max(run.spec.concurrency, player.threads)
        return await run.run(on_event, interrupt=interrupt, player=player, preflight=False, concurrency=concurrency)
