"""The coordinator's side of a Dask cluster: the ``--cluster`` address, the connection (and the local cluster behind
``local:N``), the workers' threads and cores, and the compliance check on every worker.

Dask is an optional extra: this module imports ``distributed`` only when a cluster is used, and says which extra
to install when it is missing. The runner only submits and collects: it never starts, scales or stops the workers
of a cluster it connects to (``local:N`` is the exception: a cluster of this process's own, gone when it ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final

from quarto_arena.protocol.rules import Variant

from ..compliance import CheckReport, CheckTimeouts
from ..engine import Deadlines, EngineConfig
from ..errors import ExitStatus
from ..run import RunError
from .task import check_on_worker, check_task, package_version, preflight_on_worker, preflight_task

__all__ = [
    "CONNECT_TIMEOUT",
    "WORKER_WAIT",
    "Cluster",
    "ClusterAddress",
    "ClusterError",
    "WorkerFacts",
    "WorkerReport",
    "overloaded_hosts",
]

CONNECT_TIMEOUT: Final = 5.0
"""Seconds to reach the scheduler before giving up (a reachable one answers in milliseconds)."""
WORKER_WAIT: Final = 30.0
"""Seconds to wait for a first worker when the scheduler has none."""
#: Seconds a worker may take to answer the engine check, beyond the engines' own deadlines.
_CHECK_SLACK: Final = 30.0
_EXTRA: Final = "pip install 'quarto-arena[dask]'"


class ClusterError(RunError):
    """The cluster cannot be used: unreachable, without workers, or unable to run the games (one line).

    ``engine`` is True (exit status 3) unless the user's setting is to blame (a bad address, no Dask installed,
    more threads than cores: exit status 2).
    """

    status = ExitStatus.ENGINE
    reason = "cluster"

    def __init__(self, message: str, *, engine: bool = True) -> None:
        super().__init__(message, engine=engine)


def distributed() -> ModuleType:
    """The ``distributed`` package, or a :class:`ClusterError` naming the extra that installs it."""
    try:
        import distributed as module
    except ImportError:
        raise ClusterError(f"--cluster needs Dask distributed: {_EXTRA}", engine=False) from None
    return module


@dataclass(frozen=True, slots=True)
class ClusterAddress:
    """Where games are played: a scheduler's address, or a local cluster of this many worker processes."""

    scheduler: str | None
    """``tcp://HOST:PORT`` (or any address Dask understands), None for a local cluster."""
    local_workers: int = 0
    """Worker processes of a local cluster (one thread each)."""

    @classmethod
    def parse(cls, text: str) -> ClusterAddress:
        """``tcp://HOST:PORT`` (any ``SCHEME://`` Dask knows: ``tls://``, ``ws://``...), or ``local:N``."""
        if text.startswith("local:"):
            n = text.removeprefix("local:")
            if not n.isdigit() or int(n) < 1:
                raise ClusterError(f"--cluster {text!r}: local:N needs a number of workers, 1 or more", engine=False)
            return cls(None, int(n))
        scheme, sep, rest = text.partition("://")
        if not sep or not scheme or not rest:
            raise ClusterError(
                f"--cluster {text!r}: expected a scheduler address such as tcp://HOST:8786, or local:N", engine=False
            )
        return cls(text)

    def __str__(self) -> str:
        return self.scheduler if self.scheduler is not None else f"local:{self.local_workers}"


@dataclass(frozen=True, slots=True)
class WorkerFacts:
    """What the engine check learnt about one worker."""

    address: str
    """The worker's address (``tcp://HOST:PORT``)."""
    host: str
    """Its machine, as the scheduler sees it."""
    threads: int
    """Tasks it runs at once: games."""
    cores: int
    """Cores it may use (affinity and container quota)."""


@contextlib.contextmanager
def _children_ignore_sigint() -> Iterator[None]:
    """Processes started meanwhile ignore SIGINT: a terminal's Ctrl-C reaches the whole foreground process group,
    and the local cluster's workers must not die of it (with tracebacks) while the run stops them in order.

    Only an ignored disposition passes through exec (Python resets the signal mask and handlers of what it spawns),
    so this process ignores SIGINT too while the cluster starts: a Ctrl-C in that second is lost, the next one
    stops the run.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


async def _outcome(future: Any) -> Any:
    """A Dask future's result, or the exception it raised (as a value)."""
    try:
        return await future
    except Exception as e:
        return e


def overloaded_hosts(workers: Iterable[WorkerFacts]) -> list[str]:
    """One line per machine whose workers together run more threads (games at once) than it has cores."""
    hosts: dict[str, list[WorkerFacts]] = {}
    for w in workers:
        hosts.setdefault(w.host, []).append(w)
    out = []
    for host, group in sorted(hosts.items()):
        threads, cores = sum(w.threads for w in group), max(w.cores for w in group)
        if threads > cores:
            n = len(group)
            out.append(f"{host} runs {threads} worker threads on {cores} cores ({n} worker{'s' * (n > 1)})")
    return out


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """The compliance check of an engine on one worker."""

    worker: str
    """The worker's address."""
    report: CheckReport
    """What the check found there."""


class Cluster:
    """A connection to a Dask scheduler in the running event loop, and the local cluster behind ``local:N``.

    Use :meth:`connect` as an async context manager; leaving it closes the connection (and a local cluster).
    """

    def __init__(self, address: ClusterAddress, client: Any, local: Any | None) -> None:
        """Use :meth:`connect`."""
        self.address = address
        self.client = client
        """The ``distributed.Client`` (asynchronous)."""
        self._local = local

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, address: ClusterAddress, *, timeout: float = CONNECT_TIMEOUT) -> AsyncIterator[Cluster]:
        """Connects (or starts ``local:N``: N worker processes of one thread each, on loopback); raises
        :class:`ClusterError` within ``timeout`` seconds when the scheduler cannot be reached."""
        dd = distributed()
        local = client = None
        try:
            if address.scheduler is None:
                with _children_ignore_sigint():
                    local = await dd.LocalCluster(
                        n_workers=address.local_workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address="127.0.0.1:0",  # no fixed port to collide on (8787 may be taken)
                        silence_logs=logging.CRITICAL,  # its workers' logs: ours says what went wrong
                        asynchronous=True,
                    )
                client = dd.Client(local, asynchronous=True, set_as_default=False)
            else:
                client = dd.Client(address.scheduler, asynchronous=True, timeout=timeout, set_as_default=False)
            await asyncio.wait_for(client, timeout + 1.0)
        except BaseException as e:
            # A client that never connected still wants closing, or it complains when it is collected.
            for thing in (client, local):
                if thing is not None:
                    with contextlib.suppress(Exception):
                        await thing.close()
            if isinstance(e, ValueError):
                raise ClusterError(f"--cluster {address}: {e}", engine=False) from None
            if address.scheduler is None and isinstance(e, Exception):
                what = f"{type(e).__name__}: {' '.join(str(e).split())}"
                raise ClusterError(f"cannot start a local Dask cluster ({address}): {what}") from None
            if isinstance(e, OSError | TimeoutError):
                raise ClusterError(
                    f"cannot reach the Dask scheduler at {address} within {timeout:g} s: is it running"
                    f" (dask scheduler), and is the address right?"
                ) from None
            raise
        cluster = cls(address, client, local)
        try:
            yield cluster
        finally:
            await cluster.close()

    async def close(self) -> None:
        """Closes the connection (and stops a local cluster); what was submitted and not collected is released."""
        with contextlib.suppress(Exception):
            await self.client.close()
        if self._local is not None:
            with contextlib.suppress(Exception):
                await self._local.close()

    async def workers(self, wait: float = WORKER_WAIT) -> dict[str, int]:
        """Each worker's address and threads; waits up to ``wait`` seconds for a first one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            threads: dict[str, int] = await self.client.nthreads()
            if threads:
                return threads
            if loop.time() >= deadline:
                raise ClusterError(
                    f"no worker joined the Dask scheduler at {self.address} within {wait:g} s;"
                    f" start one with: dask worker {self.address}"
                )
            await asyncio.sleep(0.1)

    async def on_each_worker(self, fn: Any, task: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
        """Runs ``fn(task)`` once on every worker (pinned there); raises :class:`ClusterError` naming a worker that
        cannot run it or does not answer within ``timeout`` seconds."""
        workers = await self.workers()
        futures = {
            address: self.client.submit(fn, task, workers=[address], allow_other_workers=False, pure=False)
            for address in workers
        }
        waiting = [asyncio.ensure_future(_outcome(f)) for f in futures.values()]
        try:
            _, late = await asyncio.wait(waiting, timeout=timeout)
        finally:
            for w in waiting:
                w.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            if unfinished := [f for f in futures.values() if not f.done()]:
                await self.client.cancel(unfinished)
        if late:
            address = next(a for a, w in zip(futures, waiting, strict=True) if w in late)
            raise ClusterError(f"worker {address} did not answer within {timeout:g} s")
        done = [w.result() for w in waiting]
        out = []
        for address, result in zip(futures, done, strict=True):
            if isinstance(result, BaseException):
                raise ClusterError(
                    f"worker {address} cannot run quarto-arena's tasks ({type(result).__name__}: {result});"
                    f" install the same quarto-arena there ({_EXTRA})"
                )
            if result.get("version") != package_version():
                raise ClusterError(
                    f"worker {address} runs quarto-arena {result.get('version')}, this machine"
                    f" {package_version()}: install the same version on every worker"
                )
            out.append(result)
        return out

    async def preflight(
        self, engines: Sequence[EngineConfig], variant: Variant, deadlines: Deadlines | None
    ) -> list[WorkerFacts]:
        """Starts every engine once on every worker and asks it for a new game; returns what each worker is.

        Raises :class:`ClusterError` naming each worker where an engine failed.
        """
        d = deadlines or Deadlines()
        timeout = len(engines) * (d.startup + d.newgame + d.quit) + _CHECK_SLACK
        threads = await self.workers()
        results = await self.on_each_worker(preflight_on_worker, preflight_task(list(engines), variant, d), timeout)
        problems = [f"{r['problem']} (on worker {r['worker']})" for r in results if r["problem"] is not None]
        if problems:
            raise ClusterError("; ".join(problems))
        dd = distributed()
        return [
            WorkerFacts(r["worker"], dd.comm.get_address_host(r["worker"]), threads.get(r["worker"], 1), r["cores"])
            for r in results
        ]

    async def check(self, engine: EngineConfig, timeouts: CheckTimeouts, keep_going: bool) -> list[WorkerReport]:
        """``quarto-arena check`` on every worker, in the order of their addresses."""
        task = check_task(engine, timeouts, keep_going)
        # The whole check of a silent engine: every step up to its deadline, generously bounded.
        timeout = 40 * max(timeouts.startup, timeouts.safety) + _CHECK_SLACK
        results = await self.on_each_worker(check_on_worker, task, timeout)
        return sorted((WorkerReport(r["worker"], r["report"]) for r in results), key=lambda w: w.worker)
