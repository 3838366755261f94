"""Games per second on a Dask cluster of 1 and 2 workers on loopback against the local runner, and what a game
costs to go through Dask.

    python benchmarks/cluster.py [--games 12] [--rounds 3] [--think 0.05]

Needs the dask extra (``pip install -e ".[dask]"``). Two bots that think ``--think`` seconds per turn (a sleep:
the engines' time, not our CPU) play ``--games`` games a run; four set-ups are measured in interleaved rounds (the
machine is shared: the best and the median round are shown):

- ``local, j=1`` and ``local, j=2``: the runner on this machine, one and two games at once (engines reused);
- ``cluster, 1 worker`` and ``cluster, 2 workers``: the same games as Dask tasks on a LocalCluster of worker
  processes with one thread each, on loopback (each worker keeps its engines warm between the games of a run, and
  lets them go when the run is over, as the local runner does). The clusters are started, and their engines
  checked, before the clock starts; each run takes a lease of its own, so it starts its engines as a local run
  does.

Then the per-game overhead of Dask: the wall time per game on 1 worker minus the local runner's at j=1, and two
costs measured alone: an empty task's round trip, and starting two engines, one after the other as the referee
does, and quitting them (what a worker did for every game before it kept its engines warm; now once a run, as the
local runner).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from quarto_arena.arena.cluster import Cluster, ClusterAddress, ClusterPlayer
from quarto_arena.arena.engine import EngineConfig, EngineSession
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import Run, RunKind, RunSpec
from quarto_arena.arena.schedule import OpeningBook
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.protocol.rules import Variant

BOT = textwrap.dedent(
    """
    import random, sys, time
    from quarto_arena.protocol.bot import run

    rng = random.Random(int(sys.argv[1]))
    think = float(sys.argv[2])

    def choose(position, ctx):
        time.sleep(think)
        return rng.choice(position.legal_turns())

    run(choose, [])
    """
)


async def timed(play: Callable[[], Awaitable[int]]) -> float:
    """Games per second of one run."""
    t0 = time.perf_counter()
    games = await play()
    return games / (time.perf_counter() - t0)


async def main_async(args: argparse.Namespace, bot: Path) -> None:
    words = [f"{name}={sys.executable} {bot} {seed} {args.think}" for seed, name in enumerate("ab")]
    engines = tuple(resolve_engines(words))
    spec = RunSpec(
        RunKind.MATCH,
        engines,
        games=args.games,
        game=GameSettings(TimeControl.parse("st=5"), book=OpeningBook(random_turns=2, seed=1)),
    )

    async def local(concurrency: int) -> int:
        with Run.in_memory(spec) as run:
            outcome = await run.run(concurrency=concurrency)
        assert outcome.complete
        return len(outcome.records)

    async with (
        Cluster.connect(ClusterAddress(None, 1)) as one,
        Cluster.connect(ClusterAddress(None, 2)) as two,
    ):
        checked = {}
        for cluster in (one, two):
            player = ClusterPlayer(cluster, engines)
            await player.start(spec.game.variant)
            checked[cluster] = player.workers
            await player.close()

        async def on(cluster: Cluster) -> int:
            player = ClusterPlayer(cluster, engines)
            player.workers = checked[cluster]
            await player.take_lease()
            with Run.in_memory(spec) as run:
                outcome = await run.run(player=player, preflight=False, concurrency=player.threads)
            assert outcome.complete
            return len(outcome.records)

        setups: dict[str, Callable[[], Awaitable[int]]] = {
            "local, j=1": lambda: local(1),
            "local, j=2": lambda: local(2),
            "cluster, 1 worker": lambda: on(one),
            "cluster, 2 workers": lambda: on(two),
        }
        rates: dict[str, list[float]] = {name: [] for name in setups}
        for _ in range(args.rounds):
            for name, play in setups.items():
                rates[name].append(await timed(play))
        round_trip = await empty_task_round_trip(one, 30)
    start_quit = await engine_start_and_quit(engines, 10)

    print(
        f"match of 2 bots thinking {1000 * args.think:g} ms a turn, {args.games} games a run,"
        f" {args.rounds} interleaved rounds (best / median)"
    )
    for name, values in rates.items():
        print(f"  {name:<19} {max(values):5.2f} / {statistics.median(values):5.2f} games/s")
    for cluster, local_name in (("cluster, 1 worker", "local, j=1"), ("cluster, 2 workers", "local, j=2")):
        ratios = [c / r for c, r in zip(rates[cluster], rates[local_name], strict=True)]
        print(f"  {cluster} / {local_name}: best {max(ratios):.2f}, median {statistics.median(ratios):.2f}")
    per_game = [1 / c - 1 / r for c, r in zip(rates["cluster, 1 worker"], rates["local, j=1"], strict=True)]
    print(
        f"  overhead per game through Dask (1 worker vs local j=1): median {1000 * statistics.median(per_game):.0f} ms,"
        f" of which an empty task's round trip {1000 * round_trip:.1f} ms"
        f" and starting and quitting the two engines {1000 * start_quit:.0f} ms"
    )


async def empty_task_round_trip(cluster: Cluster, n: int) -> float:
    """Median seconds to submit a task that does nothing and get its result, one at a time."""
    times = []
    for k in range(n):
        t0 = time.perf_counter()
        await cluster.client.submit(abs, -k, pure=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def engine_start_and_quit(engines: tuple[EngineConfig, ...], n: int) -> float:
    """Median seconds to start two engines and ask each for a new game, one after the other as the referee does,
    then quit both (here: the same on a worker)."""
    times = []
    for _ in range(n):
        sessions = [EngineSession(e) for e in engines]
        t0 = time.perf_counter()
        for s in sessions:
            await s.start()
            await s.new_game(Variant())
        await asyncio.gather(*(s.quit() for s in sessions))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=12, help="games a run (even: whole colour-swapped pairs)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the four set-ups")
    parser.add_argument("--think", type=float, default=0.05, help="seconds each bot thinks per turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bot = Path(tmp) / "thinking_bot.py"
        bot.write_text(BOT)
        asyncio.run(main_async(args, bot))


if __name__ == "__main__":
    main()
