"""Throughput of the tournament runner: a round-robin of four instant bots, concurrency 2.

    python benchmarks/tournament.py [--games 2000] [--concurrency 2]

Prints games per second and the arena's own CPU time per turn (the Python process: referee, engine sessions,
journal with an fsync per game, PGN and JSON Lines), and the engines' CPU per turn for scale. The instant bot is
engines/c/quarto_bot.c compiled with cc: it answers every ``go`` at once, so nearly all the time measured is ours.
When benchmarks/overhead.py exists its single-game figure is printed next to ours: the difference is what the
tournament layer (pool, journal, records) adds per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from quarto_arena.arena.enginesfile import engine_from_arg
from quarto_arena.arena.schedule import random_openings
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.tournament import Tournament, TournamentSpec
from quarto_arena.protocol.rules import Variant

ROOT = Path(__file__).resolve().parent.parent


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000, help="about this many games (a multiple of 12 is played)")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    cc = shutil.which("cc")
    if cc is None:
        sys.exit("needs a C compiler (cc) for the instant bot")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "quarto_bot"
        subprocess.run([cc, "-O2", "-o", str(exe), str(ROOT / "engines" / "c" / "quarto_bot.c")], check=True)
        engines = tuple(engine_from_arg(f"bot{i}={exe}") for i in range(1, 5))
        # 6 encounters, in colour-swapped pairs: games come in multiples of 12 per round.
        rounds = max(1, round(args.games / 12))
        spec = TournamentSpec(
            engines=engines,
            rounds=rounds,
            games=2,
            concurrency=args.concurrency,
            time_control=TimeControl.parse("st=1"),
            openings=tuple(random_openings(2, rounds, Variant(), seed=1)),
        )
        t0, c0 = time.perf_counter(), cpu(resource.RUSAGE_SELF)
        with Tournament.create(spec, Path(tmp) / "t") as t:
            outcome = asyncio.run(t.run())
        wall, arena_cpu = time.perf_counter() - t0, cpu(resource.RUSAGE_SELF) - c0
        engines_cpu = cpu(resource.RUSAGE_CHILDREN)  # the bots are reaped by now; cc's share is tiny
    games = len(outcome.records)
    turns = sum(len(r.turns) - len(r.opening) for r in outcome.records)
    print(f"round-robin of 4 instant bots: {games} games, {turns} engine turns, concurrency {args.concurrency}")
    print(f"  {games / wall:.1f} games/s ({wall:.1f} s wall)")
    print(f"  arena CPU per turn:   {1e6 * arena_cpu / turns:.0f} us  ({arena_cpu:.2f} s in all)")
    print(f"  wall per turn:        {1e6 * wall / turns:.0f} us  (throughput, {args.concurrency} games at once)")
    print(f"  engines CPU per turn: {1e6 * engines_cpu / turns:.0f} us  (all four bots, for scale)")
    overhead = ROOT / "benchmarks" / "overhead.py"
    if overhead.exists():
        print("benchmarks/overhead.py (one game at a time, no journal):")
        single = subprocess.run([sys.executable, str(overhead)], capture_output=True, text=True, check=False)
        for line in (single.stdout or single.stderr).strip().splitlines():
            print(f"  {line}")
    else:
        print("benchmarks/overhead.py is not there yet: no single-game figure to compare with")


if __name__ == "__main__":
    main()
