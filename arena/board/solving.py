"""The solver's value of every legal turn of the positions the board's pages look at, on worker threads.

A :class:`Job` is one position: its legal turns, and the exact value of each found so far (for the player who
plays it: win in N, draw, loss in N, as :meth:`Solver.turn_value` gives it). Turns whose positions are the same
under the game's symmetries are searched once. Values arrive one turn at a time, so a page colours the board as
they come and shows how many are left: the progress indicator.

Pages say what they want (:meth:`SolverPool.want`): each tab one list of positions, the one it shows first (and,
while a game is being analysed, the game's positions after it). The workers serve the tab that asked last first,
and a position no tab wants any more is stopped at once (:meth:`Solver.stop`), the values found so far kept: going
back to it goes on from there. A tab that stops asking is forgotten after :data:`WANT_SECONDS`. Positions with more
than :data:`AUTO_EMPTIES` empty squares are searched only when asked for explicitly (``deep``): they take minutes.

Bounded whatever the pages do: at most :data:`MAX_TABS` tabs' wishes and :data:`MAX_JOBS` positions are kept (the
least recently used are dropped), and each worker holds one solver (one transposition table) at a time.

The workers are threads: the C core searches without the GIL, so the event loop (the engines' clocks, the pages)
runs beside them; with the pure-Python core (no compiler at install) they share the GIL and the pages slow down.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any, Final

from quarto_arena.protocol.rules import Position, Turn, Variant
from quarto_arena.protocol.solver import CPUS, Solver, Value, Verdict
from quarto_arena.protocol.symmetry import canonical_key

__all__ = ["AUTO_EMPTIES", "MAX_JOBS", "MAX_TABS", "WANT_SECONDS", "Job", "SolverPool", "value_json"]

AUTO_EMPTIES: Final = 12
"""Positions with at most this many empty squares are solved as soon as a page shows them (about a second at
worst here: benchmarks/board.py); deeper ones when asked."""
MAX_JOBS: Final = 256
"""Positions whose values are kept (a few kilobytes each)."""
MAX_TABS: Final = 64
"""Tabs whose wishes are kept; the one that asked longest ago is forgotten first."""
WANT_SECONDS: Final = 30.0
"""A tab that has not asked for this long is forgotten (and its search stopped): it was closed or put away."""
WORKERS: Final = min(2, CPUS)
"""Worker threads: one per CPU, two at most (each turn's search is on one thread)."""


def value_json(value: Value) -> list[Any]:
    """``[verdict, turns, rank]``: ``["win", 3, 97]``; the rank orders values for the player (higher is better)."""
    return [value.verdict.value, value.turns, value.rank]


class Job:
    """One position's turns and the values found so far. Changed by the workers under the pool's lock, and read
    under it (:meth:`snapshot`, :meth:`best`, :meth:`keeping`: a worker may add a value at any moment)."""

    __slots__ = (
        "by_key",
        "deep",
        "empty",
        "pending",
        "position",
        "running",
        "searching",
        "seconds",
        "tokens",
        "values",
        "version",
    )

    def __init__(self, position: Position) -> None:
        turns = position.legal_turns()
        self.position = position
        """The position (a finished game has no turns)."""
        self.empty = 16 - position.placed
        """Empty squares."""
        self.tokens = [t.token for t in turns]
        """Every legal turn's token, in the rules' order."""
        self.pending: dict[int | None, collections.deque[Turn]] = {}
        """Turns not yet valued nor being searched, by the square they place on (None: a give or a claim), squares
        in the rules' order: a worker takes its turns a square at a time (see :meth:`SolverPool.next_turn`)."""
        for turn in turns:
            self.pending.setdefault(turn.place, collections.deque()).append(turn)
        self.values: dict[str, Value] = {}
        """Token -> value of the turn for its player."""
        self.by_key: dict[int, Value] = {}
        """Canonical key of a turn's result -> its value (symmetric turns are searched once)."""
        self.searching: dict[int, list[Turn]] = {}
        """Canonical key of a result being searched -> the other turns that wait for its value."""
        self.running = 0
        """Turns being searched now."""
        self.deep = self.empty <= AUTO_EMPTIES
        """Whether the workers may search it (a deep position once a page asked for it)."""
        self.seconds = 0.0
        """Seconds the workers spent on it."""
        self.version = 0
        """Bumped by every value found."""

    def found(self, turns: Sequence[Turn], value: Value, seconds: float) -> None:
        """``turns`` are worth ``value`` (under the pool's lock)."""
        for turn in turns:
            self.values[turn.token] = value
        self.seconds += seconds
        self.version += 1

    @property
    def done(self) -> bool:
        """True when every turn has its value."""
        return len(self.values) == len(self.tokens)

    def best(self) -> Value | None:
        """The position's value for the player to move (its best turn's), once every turn is valued."""
        if not self.done or not self.values:
            return None
        return max(self.values.values(), key=lambda v: v.rank)

    def keeping(self, verdict: Verdict) -> list[str]:
        """The turns whose value keeps ``verdict`` (once done)."""
        return [t for t in self.tokens if self.values[t].verdict is verdict]

    def snapshot(self) -> dict[str, Any]:
        """What a page shows of it (JSON): progress and the values so far."""
        return {
            "empty": self.empty,
            "total": len(self.tokens),
            "valued": len(self.values),
            "done": self.done,
            "deep": self.deep,
            "running": self.running > 0 or (self.deep and bool(self.pending)),
            "values": {token: value_json(v) for token, v in self.values.items()},
            "seconds": round(self.seconds, 3),
        }


class _Worker:
    """One thread and its solver (made for the variant it needs, one at a time)."""

    def __init__(self, pool: SolverPool, index: int) -> None:
        self.pool = pool
        self.solver: Solver | None = None
        self.job: Job | None = None
        """The job whose turn it searches now (under the pool's lock)."""
        self.last: tuple[Job, int | None] | None = None
        """The job and the square of the last turn it took (under the pool's lock)."""
        self.halted = False
        """Its running turn was stopped (set under the pool's lock, cleared when it takes a turn): a solver it makes
        after the stop, which :meth:`stop` could not reach, does not start."""
        self.thread = threading.Thread(target=self.run, name=f"board-solver-{index}", daemon=True)

    def solver_for(self, variant: Variant) -> Solver:
        if self.solver is None or self.solver.variant != variant:
            self.solver = None  # its table is freed before the next one is made
            self.solver = Solver(variant)
        return self.solver

    def stop(self) -> None:
        """Stops the search of the running turn (under the pool's lock, from the event loop's thread)."""
        self.halted = True
        solver = self.solver
        if solver is not None:
            solver.stop()

    def run(self) -> None:
        pool = self.pool
        while True:
            with pool.lock:
                while not pool.closed and (task := pool.next_turn(self)) is None:
                    pool.lock.wait()
                if pool.closed or task is None:
                    return
                job, turn = task
                job.running += 1
                self.job, self.halted = job, False
            found = self.search(job, turn)
            with pool.lock:
                job.running -= 1
                self.job = None
            if found:
                pool.changed()

    def search(self, job: Job, turn: Turn) -> bool:
        """Values ``turn`` in ``job``'s position, with the turns that wait for the same result (symmetric turns are
        searched once: one taken while its twin is being searched waits for it); True when values were found. A
        search that is stopped puts its turns back."""
        position = job.position
        child = position.apply(turn)
        key = None if child.is_over else canonical_key(child)
        lock = self.pool.lock
        with lock:
            known = None if key is None else job.by_key.get(key)
            if known is not None:
                job.found((turn,), known, 0.0)
                return True
            if key is not None:
                if key in job.searching:
                    job.searching[key].append(turn)
                    return False
                job.searching[key] = []
        solver = self.solver_for(position.variant)
        t0 = time.monotonic()
        value = None if self.halted else solver.turn_value(position, turn)
        seconds = time.monotonic() - t0
        if value is None:
            solver.resume()
        with lock:
            twins = job.searching.pop(key, []) if key is not None else []
            if value is None:  # stopped: the turns wait for the next time the position is wanted
                for t in (turn, *twins):
                    job.pending.setdefault(t.place, collections.deque()).appendleft(t)
                return False
            if key is not None:
                job.by_key[key] = value
            job.found((turn, *twins), value, seconds)
        return True


class SolverPool:
    """The worker threads and the positions they serve (see the module docstring). Made and used on one event
    loop; :meth:`close` ends the threads."""

    def __init__(self, workers: int = WORKERS) -> None:
        self.lock = threading.Condition()
        self.closed = False
        self._loop = asyncio.get_running_loop()
        self._found: asyncio.Future[None] = self._loop.create_future()
        """Resolved (and replaced) whenever a worker finds a value: what :meth:`wait` waits for."""
        self._jobs: collections.OrderedDict[Position, Job] = collections.OrderedDict()
        self._wants: collections.OrderedDict[str, tuple[float, tuple[Job, ...]]] = collections.OrderedDict()
        self._workers = [_Worker(self, i) for i in range(workers)]
        for w in self._workers:
            w.thread.start()

    # --- the event loop's side

    def job(self, position: Position) -> Job:
        """The job of ``position`` (made, or the one kept); the least recently used beyond :data:`MAX_JOBS` goes."""
        with self.lock:
            job = self._jobs.get(position)
            if job is None:
                job = self._jobs[position] = Job(position)
                while len(self._jobs) > MAX_JOBS:
                    old_position, old = next(iter(self._jobs.items()))
                    if old.running:  # being searched: kept until its turn ends (never more than WORKERS of them)
                        self._jobs.move_to_end(old_position)
                        break
                    del self._jobs[old_position]
            else:
                self._jobs.move_to_end(position)
            return job

    def want(self, tab: str, jobs: Sequence[Job], *, deep: bool = False) -> None:
        """Tab ``tab`` now wants ``jobs``, in that order (its shown position first); ``deep``: its first job may be
        searched however many empty squares it has. What no tab wants any more is stopped."""
        with self.lock:
            if deep and jobs:
                jobs[0].deep = True
            self._wants.pop(tab, None)
            self._wants[tab] = (time.monotonic(), tuple(jobs))
            while len(self._wants) > MAX_TABS:
                self._wants.popitem(last=False)
            self._stop_unwanted()
            self.lock.notify_all()

    def expire(self) -> None:
        """Forgets the tabs that stopped asking (:data:`WANT_SECONDS`), stopping what only they wanted."""
        with self.lock:
            old = time.monotonic() - WANT_SECONDS
            for tab in [t for t, (at, _) in self._wants.items() if at < old]:
                del self._wants[tab]
            self._stop_unwanted()

    async def wait(self, timeout: float) -> None:
        """Returns when a worker has found another value (of any position), or after ``timeout`` seconds."""
        if timeout <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._found), timeout)

    def changed(self) -> None:
        """A worker found a value (called from the worker's thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: the board is stopping
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        found, self._found = self._found, self._loop.create_future()
        found.set_result(None)

    def close(self) -> None:
        """Stops every search and ends the threads (they end within a turn's search; daemons besides)."""
        with self.lock:
            self.closed = True
            for w in self._workers:
                w.stop()
            self.lock.notify_all()
        for w in self._workers:
            w.thread.join(timeout=5)

    @property
    def busy(self) -> int:
        """Workers searching now."""
        with self.lock:
            return sum(w.job is not None for w in self._workers)

    @property
    def kept(self) -> tuple[int, int]:
        """Positions and tabs kept now (at most :data:`MAX_JOBS` and :data:`MAX_TABS`)."""
        with self.lock:
            return len(self._jobs), len(self._wants)

    # --- the workers' side (under the lock)

    def next_turn(self, worker: _Worker) -> tuple[Job, Turn] | None:
        """The next turn for ``worker``: of the tab that asked last first (its first position first), then of the
        tab before. Within a position, a worker goes on with the square it was on, else takes a square no other
        worker is on, else shares one: the turns of one square share the most positions below them, which a
        worker's table then holds (the way :class:`Solver` shares a root's children between two threads)."""
        for _, jobs in reversed(self._wants.values()):
            for job in jobs:
                if job.deep and job.pending:
                    turn = self._take(worker, job)
                    worker.last = (job, turn.place)
                    return job, turn
        return None

    def _take(self, worker: _Worker, job: Job) -> Turn:
        pending = job.pending
        last = worker.last
        square = last[1] if last is not None and last[0] is job and last[1] in pending else None
        if square is None or square not in pending:
            others = {w.last[1] for w in self._workers if w is not worker and w.last is not None and w.last[0] is job}
            square = next((s for s in pending if s not in others), next(iter(pending)))
        turns = pending[square]
        turn = turns.popleft()
        if not turns:
            del pending[square]
        return turn

    def _stop_unwanted(self) -> None:
        wanted = {id(job) for _, jobs in self._wants.values() for job in jobs}
        for w in self._workers:
            if w.job is not None and id(w.job) not in wanted:
                w.stop()
