"""quarto-arena tune's figures: how many pairs it needs, what it costs over a plain run of the same games, and what a
local Dask cluster gives against the local runner.

    python benchmarks/tune.py [--figures converge,overhead,cluster] [--seeds 5] [--pairs 2:800,6:1600] ...

Every figure comes from whole ``quarto-arena`` command lines as users run them (a subprocess each), against the
test engine ``engines/testing/tunable.py``: greedy but for random turns, their share the Euclidean distance of its
options P1..P6 from a known interior optimum divided by 400.

- ``converge``: for 2 and for 6 parameters and each seed, a start at a random-turn probability of 0.65 (distance 260
  from the optimum, in a seeded random direction); the pairs needed are the first iteration from which theta stays
  within a quarter of that distance (65) to the end of the tune (``tune.csv``); the median over the seeds is the
  figure (a seed that never got there counts as more than the pairs given).
- ``overhead``: CPU per game (the command and every engine, from the kernel's accounting of the children) of a tune
  of an engine's ``Seed`` (its games do not depend on it: the same games as the plain run's) against ``play`` of
  the engine against itself, as many games at the same ``-j``; interleaved rounds, the median ratio; for greedy
  (it answers at once: the worst case) and for minimax at depth 3 (an engine that searches).
- ``cluster``: games per second of a tune of the tunable engine thinking ``--think`` ms a turn (a searching engine's
  time, asleep) with ``--cluster local:2`` against ``-j 2`` here, whole commands (the cluster's start included) and
  the games alone (from the first game's start to the last counted pair's, in the records); interleaved rounds.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from quarto_arena.engines.testing.tunable import OPTIMUM, WIDTH

CLI = [sys.executable, "-c", "from quarto_arena.arena.console import main; main()"]
TUNABLE = f"{sys.executable} -m quarto_arena.engines.testing.tunable"
START_P = 0.65


def quarto(*args: str) -> tuple[float, float]:
    """Runs ``quarto-arena ARGS``; (wall seconds, CPU seconds of it and every process it started)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([*CLI, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"quarto-arena {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def start_values(names: Sequence[str], seed: int) -> dict[str, float]:
    """A start at distance START_P * WIDTH from the optimum, in a random direction of the tuned options."""
    rng = random.Random(f"benchmark-start:{seed}:{len(names)}")
    direction = [rng.gauss(0, 1) for _ in names]
    norm = math.sqrt(sum(d * d for d in direction))
    return {n: OPTIMUM[n] + START_P * WIDTH * d / norm for n, d in zip(names, direction, strict=True)}


def distance(values: dict[str, float]) -> float:
    return math.sqrt(sum((v - OPTIMUM[n]) ** 2 for n, v in values.items()))


def pairs_needed(directory: Path, names: Sequence[str], target: float) -> tuple[int | None, int | None]:
    """The first iteration from which theta stays within ``target`` of the optimum to the end, and the first at
    which it is within it at all; None: never."""
    with (directory / "tune.csv").open() as f:
        rows = list(csv.DictReader(f))
    needed = first = None
    for row in rows:
        inside = distance({n: float(row[n]) for n in names}) <= target
        if not inside:
            needed = None
        elif needed is None:
            needed = int(row["iteration"])
            first = first or needed
    return needed, first


def converge(args: argparse.Namespace, tmp: Path) -> None:
    print(
        f"converge: tunable, start at random-turn probability {START_P} (distance {START_P * WIDTH:g}), target"
        f" within a quarter of it; C_END {args.c_end:g}, R_END {args.r_end}, --tc {args.tc}, -j {args.jobs},"
        f" {args.seeds} seeds"
    )
    for count, pairs in args.pairs:
        names = list(OPTIMUM)[:count]
        found: list[int | None] = []
        firsts: list[int | None] = []
        finals = []
        for seed in range(1, args.seeds + 1):
            start = start_values(names, seed)
            r_end = args.r_end.get(count, args.r_end.get(0, 0.1))
            params = [f"{n}={start[n]:.3f},0,1000,{args.c_end:g},{r_end:g}" for n in names]
            out = tmp / f"converge-{count}-{seed}"
            wall, _ = quarto(
                "tune", TUNABLE, *(a for p in params for a in ("--param", p)), "--pairs", str(pairs),
                "--tc", args.tc, "-j", str(args.jobs), "--seed", str(seed), "--out", str(out), "-q",
            )  # fmt: skip
            state = json.loads((out / "tune.json").read_text())
            final = distance({n: state["values"][n] for n in names})
            needed, first = pairs_needed(out, names, START_P * WIDTH / 4)
            found.append(needed)
            firsts.append(first)
            finals.append(final)
            print(
                f"  {count} parameters, seed {seed}: pairs needed {_shown(needed)} (first within {_shown(first)});"
                f" final distance {final:.0f} (random turns {final / WIDTH:.3f}); {wall:.0f} s",
                flush=True,
            )
        print(
            f"{count} parameters: pairs needed, median of {args.seeds} seeds: {_median(found, pairs)} (first within:"
            f" {_median(firsts, pairs)}; reached by {sum(n is not None for n in found)} of {args.seeds}; {pairs} pairs"
            f" a tune; final distance median {statistics.median(finals):.0f})",
            flush=True,
        )


def _shown(n: int | None) -> str:
    return "never" if n is None else str(n)


def _median(found: Sequence[int | None], pairs: int) -> str:
    """The median, a seed that never got there counting as more than the pairs given."""
    ordered = sorted(math.inf if n is None else n for n in found)
    median = ordered[len(ordered) // 2]
    return f"more than {pairs}" if median == math.inf else f"{median:g}"


def overhead(args: argparse.Namespace, tmp: Path) -> None:
    for engine in args.overhead_engines.split(","):
        name, _, setting = engine.partition(":")
        options = ["-o", setting] if setting else []
        games = 2 * args.overhead_pairs
        ratios = []
        print(
            f"overhead: tune {engine} --param Seed (its games do not depend on it) against play {engine} {engine},"
            f" {games} games, --tc {args.tc}, -j {args.jobs}, {args.rounds} interleaved rounds; CPU per game (the"
            " command and every engine)"
        )
        for k in range(args.rounds):
            out = tmp / f"overhead-tune-{name}-{k}"
            _, tune_cpu = quarto(
                "tune", name, *options, "--param", "Seed=1000,1,2000,100,0.002", "--pairs", str(args.overhead_pairs),
                "--tc", args.tc, "-j", str(args.jobs), "--out", str(out), "-q",
            )  # fmt: skip
            out = tmp / f"overhead-play-{name}-{k}"
            _, play_cpu = quarto(
                "play", name, name, *options, "-o", "Seed=1000", "--games", str(games), "--tc", args.tc,
                "-j", str(args.jobs), "--out", str(out), "-q",
            )  # fmt: skip
            ratios.append(tune_cpu / play_cpu)
            print(
                f"  round {k + 1}: tune {1000 * tune_cpu / games:.2f} ms/game, play {1000 * play_cpu / games:.2f}"
                f" ms/game, ratio {tune_cpu / play_cpu:.3f}",
                flush=True,
            )
        print(
            f"overhead, {engine}: CPU per game, tune / play: median {statistics.median(ratios):.3f} (goal <= 1.1)",
            flush=True,
        )


def _games_rate(directory: Path) -> float:
    """Games per second from the first game's start to the last one's start plus its turns' time."""
    import datetime

    starts, ends = [], []
    for line in (directory / "games.jsonl").read_text().splitlines():
        g = json.loads(line)
        t = datetime.datetime.fromisoformat(g["started"]).timestamp()
        starts.append(t)
        ends.append(t + sum(turn[1] for turn in g["turns"]) / 1000)
    return len(starts) / (max(ends) - min(starts))


def cluster(args: argparse.Namespace, tmp: Path) -> None:
    pairs = args.cluster_pairs
    print(
        f"cluster: tunable thinking {args.think} ms a turn, 2 parameters, {pairs} pairs ({2 * pairs} games),"
        f" --tc {args.cluster_tc}; --cluster local:2 against -j 2; {args.rounds} interleaved rounds"
    )
    whole, games = [], []
    for k in range(args.rounds):
        rates = {}
        for name, where in (("local", ["-j", "2"]), ("cluster", ["--cluster", "local:2", "-j", "2"])):
            out = tmp / f"cluster-{name}-{k}"
            wall, _ = quarto(
                "tune", TUNABLE, "--param", "P1=450,0,1000,20,0.05", "--param", "P2=300,0,1000,20,0.05",
                "-o", f"Think={args.think}", "--pairs", str(pairs), "--tc", args.cluster_tc, *where,
                "--out", str(out), "-q",
            )  # fmt: skip
            rates[name] = (2 * pairs / wall, _games_rate(out))
        whole.append(rates["cluster"][0] / rates["local"][0])
        games.append(rates["cluster"][1] / rates["local"][1])
        # What a whole command spends besides its games: the start (a cluster's too), the engine check, the report.
        fixed = {n: 2 * pairs / w - 2 * pairs / g for n, (w, g) in rates.items()}
        print(
            f"  round {k + 1}: -j 2 {rates['local'][0]:.2f} games/s (games alone {rates['local'][1]:.2f}),"
            f" local:2 {rates['cluster'][0]:.2f} ({rates['cluster'][1]:.2f}); ratio {whole[-1]:.3f}"
            f" ({games[-1]:.3f}); besides the games: {fixed['local']:.1f} s and {fixed['cluster']:.1f} s",
            flush=True,
        )
    print(
        f"cluster: games/s, local:2 / -j 2: median {statistics.median(whole):.3f} whole commands,"
        f" {statistics.median(games):.3f} the games alone (goal >= 0.9)",
        flush=True,
    )


def _r_ends(text: str) -> dict[int, float]:
    """``0.1`` (0: every count of parameters) or ``2:0.1,6:0.05``."""
    out = {}
    for part in text.split(","):
        count, _, value = part.rpartition(":")
        out[int(count or 0)] = float(value)
    return out


def _pairs(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        count, _, pairs = part.partition(":")
        out.append((int(count), int(pairs)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--figures", default="converge,overhead,cluster", help="which figures, comma-separated")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of each convergence figure")
    parser.add_argument("--pairs", type=_pairs, default=_pairs("2:1000,6:3000"), help="PARAMETERS:PAIRS,...")
    parser.add_argument("--c-end", type=float, default=20.0, help="C_END of every parameter (range 0..1000)")
    parser.add_argument(
        "--r-end",
        type=_r_ends,
        default=_r_ends("2:0.1,6:0.04"),
        help="R_END of every parameter, or PARAMETERS:R_END,... (six at 0.1 wander: their noise adds up)",
    )
    parser.add_argument("--tc", default="st=1", help="time control of the converge and overhead figures")
    parser.add_argument("--jobs", type=int, default=2, help="-j of the converge and overhead figures")
    parser.add_argument("--overhead-pairs", type=int, default=1000, help="pairs of each overhead run")
    parser.add_argument(
        "--overhead-engines",
        default="greedy,minimax:Depth=3",
        help="engines of the overhead figure, each NAME[:OPTION=VALUE]: an instant one (the worst case) and one that"
        " searches",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the overhead and cluster figures")
    parser.add_argument("--cluster-pairs", type=int, default=150, help="pairs of each cluster run")
    parser.add_argument("--think", type=int, default=20, help="ms the engine takes a turn in the cluster figure")
    parser.add_argument("--cluster-tc", default="st=1", help="time control of the cluster figure")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for figure in args.figures.split(","):
            {"converge": converge, "overhead": overhead, "cluster": cluster}[figure](args, Path(tmp))
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
