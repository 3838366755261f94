"""What a Dask worker runs: a pure description in (plain dicts and strings), plain values out.

A game task names its two engines as config dicts, the game as the referee's :class:`GameSpec` fields, the deadlines
and the log limit; the worker takes both engines from its pool (started there, kept warm for its next games: see
:mod:`.warm`), plays the game with the referee, gives them back and returns the
:class:`GameRecord` as a dict. Nothing here imports Dask at module level: the functions run in a worker's thread
(one game per thread), and ask the worker only who it is and whether the coordinator still wants the game.

Engines on a worker:

- A built-in engine is started with the worker's own Python (the coordinator's interpreter path means nothing
  there); every other command must exist on the worker (a shared file system, the same container image).
- An engine without a working directory of its own runs in the coordinator's working directory when the worker has
  that directory (a shared file system), else in the worker's.
- An engine that cannot be started at all on a worker (no such program, no permission) is the worker's fault, not
  the engine's: the game comes back as an ``engine error`` naming the worker, which stops the run (not counted;
  replayed on resume), instead of a forfeit that would score the engine for a broken machine.
- Its standard error is kept in a temporary file of the pool; what the engine wrote during a game, up to
  :data:`SHIPPED_STDERR` bytes, is shipped back with the record for the coordinator's ``logs/NAME.stderr``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import os
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from quarto_arena.engines.registry import BUILTIN
from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import Variant

from .. import codec, package_version
from ..compliance import CheckReport, CheckTimeouts, run_check
from ..engine import Deadlines, EngineConfig
from ..records import GameRecord, Result, Termination
from ..referee import GameSpec, play_game, variant_text
from ..roster import config_from_dict, config_to_dict
from ..run import EnginePool, RunError
from ..schedule import ScheduledGame
from .warm import WorkerEngines, worker_engines

__all__ = [
    "SHIPPED_STDERR",
    "abandoned_record",
    "check_on_worker",
    "check_task",
    "game_task",
    "package_version",
    "play_game_on_worker",
    "preflight_on_worker",
    "preflight_task",
    "spec_from_dict",
    "spec_to_dict",
]

SHIPPED_STDERR: Final = 256 * 1024
"""Bytes of each engine's standard error a worker sends back per game (the cut is marked, as in a local log)."""

#: How often a running game asks its worker whether the coordinator still wants it, s.
_WATCH_INTERVAL: Final = 0.2
_BUILTIN_MODULES: Final = frozenset(e.module for e in BUILTIN.values())


# ----------------------------------------------------------------------------------------------------------------
# Descriptions, built by the coordinator


def _common(engines: list[EngineConfig], deadlines: Deadlines | None) -> dict[str, Any]:
    return {
        "engines": [config_to_dict(e) for e in engines],
        "deadlines": codec.to_dict(deadlines or Deadlines()),
        "python": sys.executable,
        "cwd": os.getcwd(),
    }


def game_task(
    game: ScheduledGame,
    spec: GameSpec,
    first: EngineConfig,
    second: EngineConfig,
    *,
    deadlines: Deadlines | None = None,
    log_limit: int = SHIPPED_STDERR,
    lease: str | None = None,
) -> dict[str, Any]:
    """One game as plain data: its two engines (first, second), the :class:`GameSpec` fields, the deadlines, and
    the key of the coordinator's lease (:mod:`.warm`: its idle engines are let go when the lease is)."""
    task = _common([first, second], deadlines)
    task["game"] = spec_to_dict(replace(spec, game_id=game.game_id))
    task["stderr_limit"] = min(log_limit, SHIPPED_STDERR)
    task["lease"] = lease
    return task


def spec_to_dict(spec: GameSpec) -> dict[str, Any]:
    """Every field of a :class:`GameSpec` as plain data (the inverse of :func:`spec_from_dict`; :mod:`..codec`): a
    field the referee gains travels to the workers without being named here."""
    return codec.to_dict(spec)


def spec_from_dict(d: Mapping[str, Any]) -> GameSpec:
    """The :class:`GameSpec` of :func:`spec_to_dict`."""
    return codec.from_dict(GameSpec, d)


def preflight_task(engines: list[EngineConfig], variant: Variant, deadlines: Deadlines | None) -> dict[str, Any]:
    """The engine check before the first game, as plain data."""
    task = _common(engines, deadlines)
    task["variant"] = variant_text(variant)
    return task


def check_task(engine: EngineConfig, timeouts: CheckTimeouts, keep_going: bool) -> dict[str, Any]:
    """``quarto-arena check`` as plain data."""
    task = _common([engine], None)
    task["timeouts"] = codec.to_dict(timeouts)
    task["keep_going"] = keep_going
    return task


def abandoned_record(game: ScheduledGame, spec: GameSpec) -> GameRecord:
    """A game cancelled on the cluster when the run stopped: its turns stay on the worker (not counted)."""
    return GameRecord(
        first=game.first,
        second=game.second,
        result=Result.UNFINISHED,
        termination=Termination.ABORTED,
        detail="abandoned: the run stopped during the game (cancelled on its worker; its turns are not kept)",
        variant=variant_text(spec.variant),
        time_control=spec.time_control.text,
        start=spec.start or "startpos",
        opening=spec.opening,
        game_id=game.game_id,
        round=spec.round,
        started=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )


# ----------------------------------------------------------------------------------------------------------------
# What a worker runs


def play_game_on_worker(task: Mapping[str, Any]) -> dict[str, Any]:
    """Runs on a worker: plays the game and returns ``{"record": dict, "worker": address, "stderr": {name: bytes}}``,
    ``{"cancelled": True}`` when the coordinator gave it up meanwhile, or ``{"error": line}``. The engines come
    from the worker's pool (:mod:`~quarto_arena.arena.cluster.warm`) and go back to it after the game."""
    where = _where()
    try:
        pool = worker_engines()
        worker = _this_worker()
        if worker is not None:
            pool.watch_leases(worker.state.tasks, _lease_held(worker))
        cancelled = _cancellation_probe()
        return pool.run(lambda: _play(task, where, cancelled, pool))
    except Exception as e:  # a broken task or a bug: one line naming the worker, never a remote traceback
        return {"error": f"on worker {where}: {type(e).__name__}: {e}", "worker": where}


def preflight_on_worker(task: Mapping[str, Any]) -> dict[str, Any]:
    """Runs on a worker: starts every engine once and asks it for a new game; returns the worker's address, its
    cores, its quarto-arena version and ``problem`` (one line, or None)."""
    where = _where()
    problem = None
    try:
        asyncio.run(_preflight(task))
    except RunError as e:
        problem = str(e)
    except Exception as e:
        problem = f"{type(e).__name__}: {e}"
    return {"worker": where, "cores": _cores(), "version": package_version(), "problem": problem}


def check_on_worker(task: Mapping[str, Any]) -> dict[str, Any]:
    """Runs on a worker: the compliance check of one engine; returns the worker's address and the report."""
    where = _where()
    (config,) = _configs(task)
    timeouts = codec.from_dict(CheckTimeouts, task["timeouts"])
    report: CheckReport = asyncio.run(run_check(config, timeouts=timeouts, keep_going=bool(task["keep_going"])))
    return {"worker": where, "version": package_version(), "report": report}


async def _play(
    task: Mapping[str, Any], where: str, cancelled: Callable[[], bool], pool: WorkerEngines
) -> dict[str, Any]:
    first, second = _configs(task)
    spec = spec_from_dict(task["game"])
    deadlines = codec.from_dict(Deadlines, task["deadlines"])
    lease = task.get("lease")
    lent = [pool.borrow(c, deadlines, None if lease is None else str(lease)) for c in (first, second)]
    sessions = [b.session for b in lent]
    # What each engine was before the game: a failure of one that was not running and could not be started here
    # is the machine's, not the engine's.
    before = [(s.alive, s.starts) for s in sessions]
    offsets = [b.log_size() for b in lent]
    try:
        # This game's option values (a warm engine's may be another game's: a tune's change every game).
        for session, config in zip(sessions, (first, second), strict=True):
            session.configure(config)
        game = asyncio.create_task(play_game(sessions[0], sessions[1], spec))
        watch = asyncio.create_task(_wait_until(cancelled))
        try:
            await asyncio.wait([game, watch], return_when=asyncio.FIRST_COMPLETED)
            if not game.done():
                game.cancel()  # play_game kills both engines
                await asyncio.gather(game, return_exceptions=True)
                return {"cancelled": True, "worker": where}
            record = game.result()
        finally:
            watch.cancel()
        limit = int(task["stderr_limit"])
        stderr = {}
        for config, borrowed, offset in zip((first, second), lent, offsets, strict=True):
            data = borrowed.read_log(offset, limit)
            if data:
                stderr[config.name] = data
    finally:
        await asyncio.gather(*(pool.give_back(b) for b in lent), return_exceptions=True)
    if record.termination.is_failure:
        side = 0 if record.result is Result.SECOND_WINS else 1
        loser, (was_alive, starts) = sessions[side], before[side]
        record = replace(record, detail=f"{record.detail} (on worker {where})")
        if not was_alive and loser.starts == starts:
            # It never ran here: the machine lacks it, which says nothing about the engine. Stop, do not score.
            record = replace(record, termination=Termination.ENGINE_ERROR)
    return {"record": record.to_dict(), "worker": where, "stderr": stderr}


async def _preflight(task: Mapping[str, Any]) -> None:
    pool = EnginePool(_configs(task), deadlines=codec.from_dict(Deadlines, task["deadlines"]))
    try:
        await pool.preflight(parse_variant(*str(task["variant"]).split(" ")))
    finally:
        await pool.close()


async def _wait_until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(_WATCH_INTERVAL)


def _configs(task: Mapping[str, Any]) -> list[EngineConfig]:
    return [_here(config_from_dict(d), str(task["python"]), str(task["cwd"])) for d in task["engines"]]


def _here(config: EngineConfig, python: str, cwd: str) -> EngineConfig:
    """The engine as this worker starts it: a built-in with this worker's Python; no directory of its own: the
    coordinator's, when this machine has it."""
    if config.endpoint is not None:
        return config
    command = config.command
    if command[0] == python and command[1:2] == ("-m",) and command[2:3] and command[2] in _BUILTIN_MODULES:
        command = (sys.executable, *command[1:])
    workdir = config.cwd
    if workdir is None and os.path.isdir(cwd):
        workdir = cwd
    return replace(config, command=command, cwd=workdir)


def _where() -> str:
    """This worker's address (the host name outside a worker)."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return socket.gethostname()


def _cores() -> int:
    """Cores this worker may use (its CPU affinity and container quota, as Dask counts them)."""
    try:
        from dask.system import CPU_COUNT

        return int(CPU_COUNT)
    except ImportError:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _this_worker() -> Any | None:
    """The Dask worker running this task (its task states show a coordinator's lease), or None outside one."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def _lease_held(worker: Any) -> Callable[[str], concurrent.futures.Future[bool]]:
    """``held(key)``: whether the scheduler still has a lease's data on any worker, asked on ``worker``'s own loop
    from any thread (the answer, a future)."""
    loop = worker.loop.asyncio_loop

    async def ask(key: str) -> bool:
        who_has = await worker.scheduler.who_has(keys=[key])
        return bool(who_has.get(key))

    return lambda key: asyncio.run_coroutine_threadsafe(ask(key), loop)


def _cancellation_probe() -> Callable[[], bool]:
    """True once the scheduler has released this task: its coordinator cancelled it, stopped, or died."""
    try:
        from distributed import get_worker

        worker = get_worker()
        key = worker.get_current_task()
        tasks = worker.state.tasks
    except (ImportError, ValueError, KeyError, AttributeError):
        return lambda: False

    def cancelled() -> bool:
        state = tasks.get(key)
        return state is None or state.state in ("cancelled", "released", "forgotten")

    return cancelled
