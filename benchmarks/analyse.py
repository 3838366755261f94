"""Times ``quarto-arena analyse FILE.pgn`` on real games, at the README's size and at a night's: games per second.

Run: ``python benchmarks/analyse.py [--games 120,18000] [--jobs 2] [--pgn FILE] [--python OTHER]``. The games are the
first N of ``--pgn`` (a night's tournament, say ``quarto-arena tournament random greedy minimax perfect --games 2
--rounds 1500 --tc st=0.1 -j 2``), or else played first as the README's block plays them (its C example bot,
``greedy`` and ``random``, ``--tc st=0.2``, random two-turn openings, more rounds for more games). Each file is then
analysed by the installed command in a fresh process, ``-j N`` for each N, and with ``--python OTHER`` (another
checkout's interpreter, an older build say) by that one too, alternately, as the baseline of the same run. Prints the
wall time, games per second, the CPU time of the command and its workers, and each as a ratio to the first run of
the file. Prints figures only; nothing here asserts a time.
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
MAIN = "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"
CLI = [sys.executable, "-c", MAIN]


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


def first_games(source: Path, games: int, directory: Path) -> Path:
    """The first ``games`` games of ``source``, in a file of their own."""
    pgn = directory / f"games{games}.pgn"
    count = 0
    with source.open(encoding="utf-8") as f, pgn.open("w", encoding="utf-8") as out:
        for line in f:
            if line.startswith("[Event ") and count == games:
                break
            count += line.startswith("[Event ")
            out.write(line)
    return pgn


def analyse(python: str, pgn: Path, jobs: int, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the command and its worker processes) of one ``analyse`` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [python, "-c", MAIN, "analyse", str(pgn), "-j", str(jobs), "-q", "--out", str(out)],
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
    parser.add_argument("--games", default="120,18000", help="game counts, comma-separated (default 120,18000)")
    parser.add_argument("--jobs", default="2", help="values of -j, comma-separated (default 2)")
    parser.add_argument("--pgn", type=Path, help="take the games from this PGN file instead of playing them")
    parser.add_argument("--python", help="another install's Python: its analyse on the same files, as a baseline")
    args = parser.parse_args()
    counts = [int(x) for x in args.games.split(",")]
    jobs = [int(x) for x in args.jobs.split(",")]
    builds = [("this", sys.executable)] + ([("other", args.python)] if args.python else [])
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        bot = None if args.pgn else compile_c(C_BOT, directory, "my_bot")
        for games in counts:
            if args.pgn is not None:
                pgn = first_games(args.pgn, games, directory)
            else:
                assert bot is not None
                pgn = play(directory, bot, games)
            base: tuple[float, float] | None = None
            for j in jobs:
                for name, python in builds:
                    wall, cpu = analyse(python, pgn, j, directory / f"a{games}-{j}-{name}")
                    base = base or (wall, cpu)
                    print(
                        f"{games:6d} games  -j {j}  {name:5s}: {games / wall:7.2f} games/s, {wall:8.1f} s wall"
                        f" ({wall / base[0]:.2f}), {cpu:8.1f} s CPU ({cpu / base[1]:.2f})",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
