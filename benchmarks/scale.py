"""Many games at once in one arena process: turns per second and arena memory per game as the number grows.

    python benchmarks/scale.py [--sizes 100,1000,10000] [--total 30000]

Each size runs in a fresh Python process: N pairs of in-process instant engines (``arena/transport/testing.py``:
no process, no socket; an engine answers on the next turn of the event loop) play ``--total`` games in all (at
least 3 per pair), one after the other in each pair, with the real referee and engine sessions at the official
time control, all N games at once. Printed per size: turns per second over the whole run, the arena's CPU per
turn, the wall time, and the arena's memory per game in flight (the rise of the resident set from before the
sessions were made to its peak, divided by N). Figures only, no assertions.

Each size runs twice: with Python's default garbage collector, and with it tuned the way a long-running arena
may tune it (``gc.freeze()`` once the sessions are up, so that they are never scanned again, and a first
generation of 50,000 objects instead of 700): the collector's full passes over every live game are what makes
the cost per turn grow with the number of games in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time
from pathlib import Path


def rss_kb(field: str) -> int:
    """A memory figure of this process from /proc/self/status, kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def play(n: int, games: int, tuned_gc: bool) -> dict[str, float]:
    from quarto_arena.arena.engine import EngineConfig, EngineSession
    from quarto_arena.arena.referee import GameSpec, play_game
    from quarto_arena.arena.transport.testing import InstantEngine

    before = rss_kb("VmRSS")
    pairs = []
    for i in range(n):
        a = EngineSession(EngineConfig(f"a{i}", command=("instant",)))
        b = EngineSession(EngineConfig(f"b{i}", command=("instant",)))
        await a.start(InstantEngine(a.name))
        await b.start(InstantEngine(b.name))
        pairs.append((a, b))

    async def series(a: EngineSession, b: EngineSession) -> int:
        turns = 0
        for g in range(games):
            first, second = (a, b) if g % 2 == 0 else (b, a)
            record = await play_game(first, second, GameSpec(game_id=g))
            turns += len(record.turns)
        return turns

    if tuned_gc:
        gc.freeze()
        gc.set_threshold(50_000, 10, 10)
    t0, c0 = time.perf_counter(), time.process_time()
    turns = sum(await asyncio.gather(*(series(a, b) for a, b in pairs)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = rss_kb("VmHWM")
    return {"n": n, "turns": turns, "wall": wall, "cpu": cpu, "kb_per_game": (peak - before) / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="numbers of games at once (default 100,1000,10000)")
    parser.add_argument("--total", type=int, default=30_000, help="games in all per size (default 30000)")
    parser.add_argument("--games", type=int, help=argparse.SUPPRESS)  # games per pair, in the child
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child process's own run
    parser.add_argument("--tuned-gc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(asyncio.run(play(args.one, args.games, args.tuned_gc))))
        return
    print(f"{'gc':>7}  {'games at once':>13}  {'turns/s':>9}  {'CPU us/turn':>11}  {'wall s':>7}  {'KB per game':>11}")
    for n in (int(x) for x in args.sizes.split(",")):
        for tuned in (False, True):
            child = subprocess.run(
                [sys.executable, __file__, "--one", str(n), "--games", str(max(3, args.total // n))]
                + ["--tuned-gc"] * tuned,
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(child.stdout)
            print(
                f"{'tuned' if tuned else 'default':>7}  {n:>13}  {r['turns'] / r['wall']:>9.0f}"
                f"  {1e6 * r['cpu'] / r['turns']:>11.1f}  {r['wall']:>7.2f}  {r['kb_per_game']:>11.1f}"
            )
    print(f"python {sys.version.split()[0]}; instant in-process engines; st=60; about {args.total} games per size")


if __name__ == "__main__":
    main()
