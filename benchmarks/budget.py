"""What the arena costs in a run users make, the yardstick of CONTRIBUTING.md's budget for speed devices.

    python benchmarks/budget.py [--games 24] [--tc st=0.1] [--engines minimax,perfect] [--device-us 10]

Plays a round-robin of engines that search (the built-in ``minimax`` and ``perfect`` by default, at ``st=0.1``: each
uses its time), in a run directory (journal, PGN, JSON Lines, logs), one game at a time, as ``quarto-arena
tournament`` does. Prints the wall time per game and per engine turn, and the arena's own CPU (this process:
referee, sessions, runner, journal, records) per game and per turn, and as a share of the wall time. With
``--device-us``, also what a device saving that many microseconds of the arena's CPU per game is worth: its share
of the arena's CPU and of the wall time of such a run. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

from quarto_arena.arena.engine import EngineConfig
from quarto_arena.arena.run import Run, RunKind, RunSpec
from quarto_arena.arena.schedule import OpeningBook
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.engines.registry import command


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=24)
    parser.add_argument("--tc", default="st=0.1")
    parser.add_argument("--engines", default="minimax,perfect", help="built-in engines, comma-separated")
    parser.add_argument("--device-us", type=float, help="a device's saving, in us of the arena's CPU per game")
    args = parser.parse_args()
    engines = tuple(EngineConfig(name, tuple(command(name))) for name in args.engines.split(","))
    spec = RunSpec(
        RunKind.TOURNAMENT,
        engines,
        games=args.games,
        game=GameSettings(TimeControl.parse(args.tc), book=OpeningBook(random_turns=2, seed=1)),
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), cpu()
        with Run.create(spec, Path(tmp) / "run") as run:
            outcome = asyncio.run(run.run())
        wall, used = time.perf_counter() - t0, cpu() - c0
    games = len(outcome.records)
    turns = sum(len(r.turns) - len(r.opening) for r in outcome.records)
    print(f"{games} games, {turns} engine turns of {args.engines} at {args.tc} (python benchmarks/budget.py)")
    print(f"  wall        {wall / games * 1000:9.1f} ms a game   {wall / turns * 1000:8.2f} ms a turn")
    print(f"  arena CPU   {used / games * 1000:9.2f} ms a game   {used / turns * 1e6:8.1f} us a turn")
    print(f"  arena CPU / wall: {used / wall:.2%}")
    if args.device_us is not None:
        saved = args.device_us / 1e6
        print(
            f"  a device saving {args.device_us:g} us a game: {saved * games / used:.3%} of the arena's CPU,"
            f" {saved * games / wall:.4%} of the wall time"
        )


if __name__ == "__main__":
    main()
