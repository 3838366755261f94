"""Times reading and rating a large PGN: 100,000 generated Quarto games among 8 players.

Run: ``python benchmarks/rate.py [--games N]``. Prints figures only; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import random
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


def write_pgn(path: Path, games: int, seed: int) -> None:
    """Writes ``games`` games with results drawn from the players' strengths."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for number in range(1, games + 1):
            white, black = rng.sample(PLAYERS, 2)
            expected = 1.0 / (1.0 + 10.0 ** ((STRENGTH[black] - STRENGTH[white]) / 400.0))
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


def main() -> None:
    """Generates the file, then reads and rates it, printing the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
