"""Times ``quarto-arena analyse FILE.pgn`` on real games: the README's 12 and 80 like them, one and two processes.

Run: ``python benchmarks/analyse.py [--games 12,80] [--jobs 1,2]``. The games are played first, as the README's
block plays them (its C example bot, ``greedy`` and ``random``, ``--tc st=0.2``, random two-turn openings, more
rounds for more games); then each file is analysed by the installed command in a fresh process, ``-j N`` for each N.
Prints the wall time, the CPU time of the command and its workers, and each time as a ratio to ``-j 1`` on the same
file in the same run (absolute figures follow the machine's load). Prints figures only; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cbuild import C_BOT, compile_c

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]


def play(directory: Path, bot: Path, games: int) -> Path:
    """A PGN of ``games`` games of the README's tournament (three engines, pairs of two: 6 games a round)."""
    rounds = -(-games // 6)
    out = directory / f"t{games}"
    subprocess.run(
        [
            *CLI,
            "tournament",
            f"mine={bot}",
            "greedy",
            "random",
            "-o",
            "greedy:Seed=7",
            "--rounds",
            str(rounds),
            "--tc",
            "st=0.2",
            "-j",
            "2",
            "-q",
            "--out",
            str(out),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    # The first ``games`` games of the file.
    text = (out / "games.pgn").read_text(encoding="utf-8")
    starts = [i for i in range(len(text)) if text.startswith("[Event ", i)]
    cut = starts[games] if games < len(starts) else len(text)
    pgn = directory / f"games{games}.pgn"
    pgn.write_text(text[:cut], encoding="utf-8")
    return pgn


def analyse(pgn: Path, jobs: int, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the command and its worker processes) of one ``analyse`` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [*CLI, "analyse", str(pgn), "-j", str(jobs), "-q", "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="12,80", help="game counts, comma-separated (default 12,80)")
    parser.add_argument("--jobs", default="1,2", help="values of -j, comma-separated (default 1,2)")
    args = parser.parse_args()
    counts = [int(x) for x in args.games.split(",")]
    jobs = [int(x) for x in args.jobs.split(",")]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        bot = compile_c(C_BOT, directory, "my_bot")
        for games in counts:
            pgn = play(directory, bot, games)
            base: tuple[float, float] | None = None
            for j in jobs:
                wall, cpu = analyse(pgn, j, directory / f"a{games}-{j}")
                base = base or (wall, cpu)
                print(
                    f"{games:4d} games  -j {j}: {wall:6.2f} s wall ({wall / base[0]:.2f} of -j {jobs[0]}),"
                    f" {cpu:6.2f} s CPU ({cpu / base[1]:.2f})"
                )


if __name__ == "__main__":
    main()
