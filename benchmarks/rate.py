"""Times reading and rating a large PGN: 100,000 generated Quarto games among 8 players, then (``--players``,
default 1,000) the same number of games among that many, in process and as ``quarto-arena rate FILE`` (wall and
CPU time: on a loaded machine the CPU time is the steadier figure); then ``quarto-arena rate FILE`` on a chain of
``--chain`` players (default 5,000; 0: none), each playing 4 games with the next only, the pool where the fit's
solver had the most to do, with ``--python OTHER`` (another build's interpreter) beside it as the baseline.

Run: ``python benchmarks/rate.py [--games N] [--players N] [--chain N] [--python OTHER]``. Prints figures only;
nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from quarto_arena.arena.pgn import format_game, read_results
from quarto_arena.arena.stats import rate

PLAYERS = ("Random", "Greedy", "MinimaxD2", "MinimaxD4", "MCTS1k", "MCTS10k", "Solver", "Human")
STRENGTH = {name: 150.0 * index for index, name in enumerate(PLAYERS)}
SQUARES = [f"{column}{row}" for row in "1234" for column in "abcd"]


def quarto_turns(rng: random.Random) -> list[str]:
    """A plausible turn list: give, then place-and-give, ending with a winning placement (about 12 tokens)."""
    pieces = [f"{p:x}" for p in range(16)]
    rng.shuffle(pieces)
    squares = SQUARES[:]
    rng.shuffle(squares)
    length = rng.randint(8, 16)
    turns = [pieces[0]]
    turns.extend(f"{squares[k]}{pieces[k + 1]}" for k in range(length - 2))
    turns.append(f"{squares[length - 2]}!")
    return turns


def write_pgn(path: Path, games: int, seed: int, players: int = 0) -> None:
    """Writes ``games`` games with results drawn from the players' strengths (``players`` > 0: that many generated
    players, strengths drawn from a normal law of 200 points, pairs drawn at random)."""
    rng = random.Random(seed)
    names = PLAYERS if players == 0 else tuple(f"P{n:05d}" for n in range(players))
    strength = STRENGTH if players == 0 else {name: rng.gauss(0.0, 200.0) for name in names}
    with path.open("w", encoding="utf-8") as out:
        for number in range(1, games + 1):
            white, black = rng.sample(names, 2)
            expected = 1.0 / (1.0 + 10.0 ** ((strength[black] - strength[white]) / 400.0))
            draw = rng.random() < 0.2
            result = "1/2-1/2" if draw else "1-0" if rng.random() < expected else "0-1"
            tags = {
                "Event": "benchmark",
                "Site": "localhost",
                "Date": "2026.01.01",
                "Round": str(number),
                "White": white,
                "Black": black,
                "Variant": "standard",
                "TimeControl": "10+0.1",
                "Termination": "normal",
            }
            out.write(format_game(tags, quarto_turns(rng), result))
            out.write("\n")


def write_chain(path: Path, players: int, seed: int) -> None:
    """A chain of ``players``: each plays 4 games with the next one only (colours alternating, results at random)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(players - 1):
            for k in range(4):
                pair = (f"C{i:05d}", f"C{i + 1:05d}")
                white, black = pair if k % 2 == 0 else pair[::-1]
                tags = {"White": white, "Black": black, "Variant": "standard"}
                out.write(format_game(tags, quarto_turns(rng), rng.choice(("1-0", "0-1", "1/2-1/2"))) + "\n")


def rate_cli(python: str, path: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds, and exit status, of ``quarto-arena rate FILE`` run by ``python``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(
        [python, "-c", "from quarto_arena.arena.cli import main; main()", "rate", str(path)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, out.returncode


def main() -> None:
    """Generates the file, then reads and rates it, printing the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--chain", type=int, default=5000, help="players of the chain (0: none)")
    parser.add_argument("--python", help="another build's Python, rating the chain beside this one")
    parser.add_argument("--chain-only", action="store_true", help="the chain alone")
    args = parser.parse_args()
    if args.chain:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "chain.pgn"
            write_chain(path, args.chain, args.seed)
            for name, python in [("this", sys.executable)] + ([("other", args.python)] if args.python else []):
                wall, cpu, status = rate_cli(python, path)
                what = f"chain of {args.chain:,} players, quarto-arena rate FILE, {name}"
                print(f"{what}: {wall:.2f} s wall, {cpu:.2f} s CPU, exit {status}")
    if args.chain_only:
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "games.pgn"
        started = time.perf_counter()
        write_pgn(path, args.games, args.seed)
        written = time.perf_counter() - started
        size = path.stat().st_size
        started = time.perf_counter()
        results = read_results([path])
        read = time.perf_counter() - started
        started = time.perf_counter()
        table = rate(results.games)
        rated = time.perf_counter() - started
    print(f"games:          {len(results.games):,} finished, {results.unfinished} unfinished, {size / 1e6:.1f} MB")
    print(f"write:          {written:.2f} s")
    print(f"read:           {read:.2f} s ({len(results.games) / read:,.0f} games/s, {size / 1e6 / read:.1f} MB/s)")
    print(f"rate:           {rated:.3f} s ({len(table.players)} players)")
    print(f"read + rate:    {read + rated:.2f} s")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "many.pgn"
        write_pgn(path, args.games, args.seed, args.players)
        started = time.perf_counter()
        results = read_results([path])
        read = time.perf_counter() - started
        started, cpu = time.perf_counter(), time.process_time()
        table = rate(results.games)
        rated, rated_cpu = time.perf_counter() - started, time.process_time() - cpu
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()", "rate", str(path)],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cli_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"{args.players:,} players, {len(results.games):,} games ({len(table.pairs) // 2:,} pairs who met):")
    print(f"  read:         {read:.2f} s")
    print(f"  rate:         {rated:.2f} s wall, {rated_cpu:.2f} s CPU")
    print(f"  quarto-arena rate FILE: {wall:.2f} s wall, {cli_cpu:.2f} s CPU, exit {out.returncode}")


if __name__ == "__main__":
    main()
