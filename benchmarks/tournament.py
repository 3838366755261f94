"""What the runner costs per turn: a round-robin of four instant bots, with the journal on disk and without one.

    python benchmarks/tournament.py [--games 1200] [--rounds 3] [--dir DIR] [--loops asyncio,uvloop] [--floors]
    python benchmarks/tournament.py --instructions [--floors]

Three set-ups are measured in interleaved rounds (the machine is shared: the best and the median round are shown):

- ``memory, j=1``: the runner in memory, one game at a time (no journal, no PGN: what ``play`` used to be);
- ``disk, j=1``: the same games in a run directory: journal with group commit, PGN, JSON Lines, logs;
- ``disk, j=2``: two games at once.

For each: wall time per engine turn, the arena's own CPU per turn (this Python process: referee, sessions, runner,
journal, records), and the disk/memory wall ratio at concurrency 1 (the goal is at most 1.15: a game counts only
once synced, yet the sync must not hold up the next game). The instant bot is engines/c/quarto_bot.c compiled with
cc: it answers every ``go`` at once, so nearly all the time measured is ours. ``--dir`` puts the run directories on
another file system (a real disk rather than tmpfs, say). ``--loops asyncio,uvloop`` measures every set-up under
both event loops, interleaved (uvloop must be installed).

``--instructions`` counts instead what load does not move: the instructions the arena's process executes per
engine turn, under valgrind's callgrind (the engines run natively: children are not traced). Each set-up runs at
two lengths (``--games`` 24 and 120 by default here) and the difference of the instructions over the difference of
the turns is printed, so start-up and imports cancel out. User-space instructions only: the kernel's share of the
CPU (pipe writes, wake-ups) is not in them. ``--floors`` adds benchmarks/floors.py's figures in the same unit: bare
round trips with an instant engine (asyncio, uvloop, a thread with blocking reads), what Python itself costs a turn.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import floors  # benchmarks/floors.py, beside this script
from cbuild import C_BOT, compile_c
from quarto_arena.arena.engine import EngineConfig
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import Run, RunKind, RunSpec
from quarto_arena.arena.schedule import OpeningBook
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.timecontrol import TimeControl

ROOT = Path(__file__).resolve().parent.parent
GAMES = 1200


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def use_loop(name: str) -> None:
    """Makes ``asyncio.run`` use this event loop from now on."""
    if name == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    else:
        asyncio.set_event_loop_policy(None)


def measure(spec: RunSpec, directory: Path | None) -> tuple[float, float, int]:
    """(wall s, arena CPU s, engine turns) of one run."""
    t0, c0 = time.perf_counter(), cpu()
    with Run.in_memory(spec) if directory is None else Run.create(spec, directory) as run:
        outcome = asyncio.run(run.run())
    wall, used = time.perf_counter() - t0, cpu() - c0
    turns = sum(len(r.turns) - len(r.opening) for r in outcome.records)
    return wall, used, turns


SETUPS = ("memory, j=1", "disk, j=1", "disk, j=2")


def make_spec(engines: tuple[EngineConfig, ...], games: int, concurrency: int) -> RunSpec:
    return RunSpec(
        RunKind.TOURNAMENT,
        engines,
        rounds=max(1, round(games / 12)),
        games=2,
        concurrency=concurrency,
        game=GameSettings(TimeControl.parse("st=1"), book=OpeningBook(random_turns=2, seed=1)),
    )


def build_bot(into: Path) -> Path:
    return compile_c(C_BOT, into)


def one_run(setup: str, loop: str, bot: Path, games: int, runs: Path) -> None:
    """A single run of one set-up (what ``--instructions`` counts under callgrind); prints its engine turns."""
    use_loop(loop)
    # Seeded, so that both lengths and every revision play the same games (instructions follow the games' lengths).
    engines = tuple(
        dataclasses.replace(e, options={"Seed": str(i)})
        for i, e in enumerate(resolve_engines([f"bot{i}={bot}" for i in range(1, 5)]), 1)
    )
    spec = make_spec(engines, games, 2 if setup.endswith("j=2") else 1)
    _, _, turns = measure(spec, None if setup.startswith("memory") else runs / "run")
    print(turns)


def instructions(loops: list[str], sizes: tuple[int, int], setups: list[str]) -> None:
    """The arena's instructions per engine turn, each set-up at two lengths under callgrind (the difference)."""
    print(f"instructions per engine turn (callgrind; runs of {sizes[0]} and {sizes[1]} games, the difference)")
    with tempfile.TemporaryDirectory() as tmp:
        bot = build_bot(Path(tmp))
        for loop in loops:
            for setup in setups:
                counts, turns = [], []
                for k, games in enumerate(sizes):
                    runs = Path(tmp) / f"{loop}-{setup[:4]}-{setup[-1]}-{k}"
                    runs.mkdir()
                    argv = [sys.executable, str(Path(__file__).resolve()), "--one", setup, "--loops", loop]
                    argv += ["--bot", str(bot), "--games", str(games), "--dir", str(runs)]
                    count, out = floors.callgrind(argv)
                    counts.append(count)
                    turns.append(int(out.split()[-1]))
                name = f"{setup}, {loop}" if len(loops) > 1 else setup
                per_turn = (counts[1] - counts[0]) / (turns[1] - turns[0])
                print(f"  {name:<21} {per_turn:9.0f} instructions per turn ({turns[1] - turns[0]} turns)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=GAMES, help="about this many games per run (multiples of 12)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the three set-ups")
    parser.add_argument("--dir", type=Path, default=None, help="where the run directories go (default: a temp dir)")
    parser.add_argument("--loops", default="asyncio", help="event loops to compare, comma-separated: asyncio,uvloop")
    parser.add_argument("--instructions", action="store_true", help="count instructions per turn with callgrind")
    parser.add_argument("--floors", action="store_true", help="also the floors of benchmarks/floors.py")
    parser.add_argument("--trips", type=int, default=20000, help="round trips per floor measurement")
    parser.add_argument("--setup", action="append", choices=SETUPS, help="with --instructions: only this set-up")
    parser.add_argument("--one", choices=SETUPS, help=argparse.SUPPRESS)  # one run, under callgrind
    parser.add_argument("--bot", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    loops = args.loops.split(",")
    if args.one is not None:
        one_run(args.one, loops[0], args.bot, args.games, args.dir)
        return
    if args.instructions:
        games = 24 if args.games == GAMES else args.games
        instructions(loops, (games, 5 * games), args.setup or list(SETUPS))
        if args.floors:
            with tempfile.TemporaryDirectory() as tmp:
                floors.print_floors(floors.build_engine(Path(tmp)), min(args.trips, 2000), 1, True)
        return
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir=args.dir) as runs:
        exe = build_bot(Path(tmp))
        engines = tuple(resolve_engines([f"bot{i}={exe}" for i in range(1, 5)]))
        base = {
            "memory, j=1": (make_spec(engines, args.games, 1), False),
            "disk, j=1": (make_spec(engines, args.games, 1), True),
            "disk, j=2": (make_spec(engines, args.games, 2), True),
        }
        setups = {
            (f"{name}, {loop}" if len(loops) > 1 else name): (s, d, loop)
            for loop in loops
            for name, (s, d) in base.items()
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
        for r in range(args.rounds):
            for k, (name, (s, on_disk, loop)) in enumerate(setups.items()):
                use_loop(loop)
                directory = Path(runs) / f"{k}-{r}" if on_disk else None
                wall, used, turns = measure(s, directory)
                results[name].append((wall / turns, used / turns))
        use_loop("asyncio")
    print(f"round-robin of 4 instant bots, {args.games} games a run, {args.rounds} interleaved rounds (best / median)")
    for name, rows in results.items():
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        print(
            f"  {name:<21} wall per turn {1e6 * min(walls):6.1f} / {1e6 * statistics.median(walls):6.1f} us"
            f"   arena CPU per turn {1e6 * min(cpus):6.1f} / {1e6 * statistics.median(cpus):6.1f} us"
        )
    for loop in loops:
        suffix = f", {loop}" if len(loops) > 1 else ""
        disk, memory = results[f"disk, j=1{suffix}"], results[f"memory, j=1{suffix}"]
        ratios = [d[0] / m[0] for d, m in zip(disk, memory, strict=True)]
        best, median = min(ratios), statistics.median(ratios)
        print(f"  disk/memory wall ratio at j=1{suffix}: best {best:.2f}, median {median:.2f} (goal <= 1.15)")
    if args.floors:
        with tempfile.TemporaryDirectory() as tmp:
            floors.print_floors(floors.build_engine(Path(tmp)), args.trips, args.rounds, False)


if __name__ == "__main__":
    main()
