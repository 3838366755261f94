"""What writing one game's PGN costs: ``pgn_text`` on records shaped like a run's, in microseconds per game.

    python benchmarks/pgn_write.py [--games 2000] [--rounds 7] [--seed 1]
    python benchmarks/pgn_write.py --instructions [--games 300]
    python benchmarks/ab.py --base REV --script benchmarks/pgn_write.py --runs 5 [-- --instructions]   # vs REV

A run writes each game's PGN once, as it counts it. The records are generated (seeded): two book turns, then
engine turns of plausible tokens, a third of them with a ``score`` (``win 3``, ``value -40``...), both engines
identified (name, author, command, options), a detail on the last turn; one game in ten starts from a position. The
best and the median of ``--rounds`` timed passes over all records are printed (CPU time of this process). Prints
figures only; nothing here asserts a time.

``--instructions`` counts instead what load does not move: the instructions of one ``pgn_text`` under valgrind's
callgrind (the same records written in 1 and in 3 rounds: the difference over the calls it adds).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import floors  # benchmarks/floors.py, beside this script
from quarto_arena.arena.pgn import pgn_text
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord

SQUARES = [f"{column}{row}" for row in "1234" for column in "abcd"]
SCORES = ("win 3", "loss 2", "draw", "value -40", "value 7")


def record(rng: random.Random, game_id: int) -> GameRecord:
    """A finished game as a run records it (tokens are plausible, not replayed: only the writer is measured)."""
    pieces = [f"{p:x}" for p in range(16)]
    rng.shuffle(pieces)
    squares = SQUARES[:]
    rng.shuffle(squares)
    length = rng.randint(8, 17)
    tokens = [pieces[0], *(f"{squares[k]}{pieces[k + 1]}" for k in range(length - 2)), f"{squares[length - 2]}!"]
    turns = tuple(
        TurnRecord(t, rng.randint(0, 40), rng.choice(SCORES) if i >= 2 and rng.random() < 0.33 else None)
        for i, t in enumerate(tokens)
    )
    engines = tuple(
        EngineIdentity(f"Bot {k} 1.0", "someone", 1, f"/usr/local/bin/bot{k}", {"Seed": str(game_id), "Hash": "16"})
        for k in (1, 2)
    )
    first, second = ("alpha", "beta") if game_id % 2 else ("beta", "alpha")
    return GameRecord(
        first,
        second,
        rng.choice(list(Result)[:3]),
        Termination.NORMAL,
        detail=f"{first} completes an alignment",
        time_control="10+0.1",
        start="startpos" if game_id % 10 else "..../..../..../.... -",
        opening=tokens[:2],
        turns=turns,
        game_id=game_id,
        round=game_id // 2 + 1,
        started="2026-11-26T20:56:11+00:00",
        engines=engines,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--instructions", action="store_true", help="count instructions per game with callgrind")
    args = parser.parse_args()
    if args.instructions:
        games = min(args.games, 300)  # callgrind is slow; the count per game does not need more
        argv = [sys.executable, str(Path(__file__).resolve()), "--games", str(games), "--seed", str(args.seed)]
        one, three = (floors.callgrind([*argv, "--rounds", str(n)])[0] for n in (1, 3))
        print(f"{games} games, {args.seed} seed, callgrind")
        print(f"pgn_text per game: {(three - one) / (2 * games):.0f} instructions")
        return
    rng = random.Random(args.seed)
    records = [record(rng, n) for n in range(1, args.games + 1)]
    turns = sum(len(r.turns) for r in records)
    times = []
    for _ in range(args.rounds):
        started = time.process_time()
        for r in records:
            pgn_text(r, "benchmark")
        times.append((time.process_time() - started) / len(records) * 1e6)
    print(f"{len(records)} games, {turns / len(records):.1f} turns a game, {args.rounds} rounds")
    print(f"pgn_text per game: best {min(times):.2f} us, median {statistics.median(times):.2f} us")


if __name__ == "__main__":
    main()
