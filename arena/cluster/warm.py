"""Engines kept warm on a Dask worker: one pool per worker process, keyed by the engine's configuration.

A game task borrows a session of each engine from the pool and gives it back after the game, as the local runner's
:class:`~quarto_arena.arena.run.EnginePool` does: the next game with the same engine on this worker reuses the
process (``newgame`` starts each game), and a session that died or was killed in its game is restarted by the
referee. The pool's sessions live on one event loop of their own, in a thread of the worker process, so that they
outlive the task that started them.

When the pool lets an idle engine go:

- the run is over, or its coordinator went away: the coordinator holds a *lease* (a small piece of data scattered
  to every worker, :func:`lease_key`); the scheduler drops it when the coordinator releases it or disconnects, and
  the pool then quits that coordinator's idle engines within a second. The scheduler's memory manager also drops
  the copies of data that no task waits for, all but one (every 2 s by default), and a worker that joined later
  never had one: a worker without a copy asks the scheduler whether the lease is still held anywhere
  (:data:`ASK_EVERY`) before it lets the engines go. Where it cannot ask (a game without a lease), an idle engine
  stays :data:`IDLE_UNLEASED` seconds;
- the worker leaves: its engines are its children, ended at exit, and by the parent-death signal and the watchdog
  when it is killed (arena/transport/supervision.py), as on one machine;
- an engine's log grew past :data:`RETIRE_LOG` bytes: it is quit, and a fresh one takes its place.

Engines of games that are cancelled (the coordinator stopped or died mid-game) are killed by the game itself.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

from .. import codec
from ..engine import Deadlines, EngineConfig, EngineSession
from ..roster import config_to_dict

__all__ = ["IDLE_UNLEASED", "RETIRE_LOG", "Borrowed", "WorkerEngines", "worker_engines"]

T = TypeVar("T")

IDLE_UNLEASED: Final = 2.0
"""Seconds an idle engine stays when its game came with no lease to ask the scheduler about."""
ASK_EVERY: Final = 0.5
"""Seconds between two questions to the scheduler about a lease this worker held and no longer holds a copy of."""
RETIRE_LOG: Final = 8 << 20
"""Bytes of standard error after which a pooled engine is replaced rather than reused."""
_LOG_LIMIT: Final = RETIRE_LOG + (1 << 20)  # the cap of a pooled engine's own log file
_REAP: Final = 0.2  # s between looks at the idle engines


class Borrowed:
    """A session lent to one game, with its log file and where that game's share of the log begins."""

    __slots__ = ("idle_since", "key", "lease", "log", "session")

    def __init__(self, session: EngineSession, key: str, lease: str | None, log: Path) -> None:
        self.session = session
        self.key = key
        self.lease = lease
        self.log = log
        self.idle_since = 0.0

    def log_size(self) -> int:
        try:
            return self.log.stat().st_size
        except OSError:
            return 0

    def read_log(self, offset: int, limit: int) -> bytes:
        """What the engine wrote to standard error from ``offset`` on, at most ``limit`` bytes (the cut marked)."""
        try:
            with self.log.open("rb") as f:
                f.seek(offset)
                data = f.read(limit + 1)
        except OSError:
            return b""
        if len(data) > limit:
            note = f"\n[quarto-arena: this game's share of the log was cut at {limit} bytes]\n".encode()
            data = data[:limit] + note
        return data


class WorkerEngines:
    """The pool of one worker process (see the module's docstring). Build it with :func:`worker_engines`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp(prefix="quarto-arena-engines-"))
        self._idle: dict[str, list[Borrowed]] = {}
        self._lent: set[Borrowed] = set()
        self._numbers = itertools.count(1)
        self._tasks: Mapping[Any, Any] | None = None
        self._held: Callable[[str], concurrent.futures.Future[bool]] | None = None
        self._leases_seen: set[str] = set()
        self._asked: dict[str, tuple[concurrent.futures.Future[bool], float]] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="quarto-arena-engines", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._reap)
        self.loop.run_forever()

    def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Runs ``work()`` on the pool's loop and waits for its result (from a task's thread)."""

        async def call() -> T:
            return await work()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result()

    def watch_leases(
        self, tasks: Mapping[Any, Any], held: Callable[[str], concurrent.futures.Future[bool]] | None = None
    ) -> None:
        """The worker's task states, where the leases of coordinators show (``memory`` while this worker has a copy),
        and ``held(key)``, the scheduler's answer to whether a lease is still held by any worker."""
        self._tasks = tasks
        self._held = held

    def counts(self) -> tuple[int, int]:
        """Idle and lent sessions (for tests and benchmarks)."""
        return sum(len(v) for v in self._idle.values()), len(self._lent)

    # --- on the pool's loop ----------------------------------------------------------------------------------------

    def borrow(self, config: EngineConfig, deadlines: Deadlines, lease: str | None) -> Borrowed:
        """An idle session of this engine (same configuration but for its options' values, same deadlines), or a
        new one not yet started. The game gives it this game's option values (:meth:`EngineSession.configure`):
        a tune's engine changes them every game and stays warm."""
        plain = config_to_dict(config)
        plain["options"] = sorted(k.lower() for k in config.options)
        key = json.dumps([plain, codec.to_dict(deadlines)], sort_keys=True)
        idle = self._idle.get(key)
        if idle:
            borrowed = idle.pop()
            borrowed.lease = lease
        else:
            log = self.dir / f"{next(self._numbers)}.stderr"
            session = EngineSession(config, deadlines=deadlines, stderr_path=log, stderr_limit=_LOG_LIMIT)
            borrowed = Borrowed(session, key, lease, log)
        self._lent.add(borrowed)
        return borrowed

    async def give_back(self, borrowed: Borrowed) -> None:
        """Keeps a session for the next game when its engine runs (else quits what is left of it)."""
        self._lent.discard(borrowed)
        if self._closed or not borrowed.session.alive or borrowed.log_size() > RETIRE_LOG:
            await self._end(borrowed)
            return
        borrowed.idle_since = time.monotonic()
        self._idle.setdefault(borrowed.key, []).append(borrowed)

    async def _end(self, borrowed: Borrowed) -> None:
        await borrowed.session.quit()
        with contextlib.suppress(OSError):
            borrowed.log.unlink()

    def _lease_state(self, lease: str | None) -> bool | None:
        """True while the lease is held (a copy here, or elsewhere as the scheduler says), False once it is gone;
        None when there is no lease, or no scheduler to ask and no copy was ever here."""
        if lease is None or self._tasks is None:
            return None
        state = self._tasks.get(lease)
        if state is not None and getattr(state, "state", None) == "memory":
            self._leases_seen.add(lease)
            self._asked.pop(lease, None)
            return True
        if self._held is not None:
            return self._held_elsewhere(lease)
        return False if lease in self._leases_seen else None

    def _held_elsewhere(self, lease: str) -> bool:
        """Whether a lease this worker has no copy of is held: the scheduler's memory manager drops all but one copy
        of data no task waits for, and a worker that joined later never had one. Asked every :data:`ASK_EVERY`
        seconds at most (without waiting: the doubt goes to the engines, which stay until the answer comes)."""
        now = time.monotonic()
        asked = self._asked.get(lease)
        if asked is not None and asked[0].done():
            try:
                held = asked[0].result()
            except Exception:  # the scheduler is gone: so is the coordinator's lease
                held = False
            if not held or now - asked[1] < ASK_EVERY:
                return held
            asked = None
        if asked is None and self._held is not None:
            self._asked[lease] = (self._held(lease), now)
        return True

    def _reap(self) -> None:
        """Quits the idle engines whose coordinator is gone (or, without a lease, that waited too long)."""
        if self._closed:
            return
        now = time.monotonic()
        for key, idle in list(self._idle.items()):
            keep = []
            for borrowed in idle:
                held = self._lease_state(borrowed.lease)
                if held is True or (held is None and now - borrowed.idle_since < IDLE_UNLEASED):
                    keep.append(borrowed)
                else:
                    self.loop.create_task(self._end(borrowed))
            if keep:
                self._idle[key] = keep
            else:
                del self._idle[key]
        self.loop.call_later(_REAP, self._reap)

    async def _close(self) -> None:
        self._closed = True
        every = [b for idle in self._idle.values() for b in idle] + list(self._lent)
        self._idle.clear()
        self._lent.clear()
        await asyncio.gather(*(b.session.kill() for b in every), return_exceptions=True)

    def close(self) -> None:
        """Kills every engine of the pool (at the worker's exit)."""
        if self._closed or not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        shutil.rmtree(self.dir, ignore_errors=True)


_pool: WorkerEngines | None = None
_pool_lock = threading.Lock()


def worker_engines() -> WorkerEngines:
    """This process's pool, made on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerEngines()
        return _pool


def lease_key(token: str) -> str:
    """The key of coordinator ``token``'s lease."""
    return f"quarto-arena-lease-{token}"
