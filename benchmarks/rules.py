#!/usr/bin/env python3
"""Speed of the rules core, as ratios against a naive baseline measured in the same process run.

Prints:
- random full games per second played through the public API (``Position.apply`` on ``Turn`` values: the code
  path the referee uses to validate and apply every turn an engine sends). Each turn places on a uniformly random
  empty square and gives a uniformly random piece left: the same distribution of games as
  ../shared/baselines/naive_playouts.py, which draws them by shuffling both lists up front where we draw one
  random number per turn;
- the naive baseline's games per second, run in this same process, and the ratio (target: at least 1.5);
- the same games with tokens parsed from text first (``parse_turn``: what the referee does with a reply line);
- perft nodes per second on the shared vectors.

    python benchmarks/rules.py [SECONDS] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from quarto_arena.protocol.notation import parse_position, parse_turn, parse_variant
from quarto_arena.protocol.rules import TURNS, Outcome, Position, perft

HERE = Path(__file__).resolve().parent
DEFAULT_BASELINE = HERE.parent.parent / "shared" / "baselines" / "naive_playouts.py"
PERFT_VECTORS = HERE.parent / "tests" / "data" / "perft.json"


def _pick(items: list[int], rnd: Callable[[], float]) -> int:
    """Removes and returns a uniformly random element (swap with the last, pop)."""
    i = int(rnd() * len(items))
    item = items[i]
    items[i] = items[-1]
    items.pop()
    return item


#: For each turn after the first: every (square index, piece index) pair when n + 1 squares are empty and n
#: pieces are left (n = 15 down to 1), and how many there are.
STEPS = [([(i, j) for i in range(n + 1) for j in range(n)], (n + 1) * n) for n in range(15, 0, -1)]


def random_game(rng: random.Random, start: Position) -> Position:
    """One random game through the public API: a random empty square, a random piece left, every turn."""
    rnd = rng.random
    squares = list(range(16))
    pieces = list(range(16))
    pos = start.apply(TURNS[16][pieces.pop(int(rnd() * 16))])
    ongoing = Outcome.ONGOING
    for pairs, count in STEPS:
        # One draw picks the (square, piece) pair uniformly among those possible.
        i, j = pairs[int(rnd() * count)]
        # With automatic claims a winning placement ends the game and the piece given with it is ignored.
        pos = pos.apply(TURNS[squares.pop(i)][pieces.pop(j)])
        if pos[6] is not ongoing:
            return pos
    return pos.apply(TURNS[squares[0]][16])  # the sixteenth placement


def random_game_tokens(rng: random.Random, start: Position) -> Position:
    """The same, but every turn goes through its text token first, as a reply line from an engine would."""
    rnd = rng.random
    squares = list(range(16))
    pieces = list(range(16))
    pos = start.apply(parse_turn("0123456789abcdef"[_pick(pieces, rnd)]))
    while True:
        square = "abcd"[(s := _pick(squares, rnd)) & 3] + "1234"[s >> 2]
        if not pieces:
            return pos.apply(parse_turn(square))
        pos = pos.apply(parse_turn(square + "0123456789abcdef"[_pick(pieces, rnd)]))
        if pos.outcome is not Outcome.ONGOING:
            return pos


def rate(play: Callable[[random.Random], object], seconds: float) -> float:
    rng = random.Random(1)
    games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        play(rng)
        games += 1
    return games / (time.perf_counter() - start)


def load_baseline(path: Path) -> Callable[[random.Random], object]:
    spec = importlib.util.spec_from_file_location("naive_playouts", path)
    if spec is None or spec.loader is None:
        sys.exit(f"benchmarks/rules.py: cannot load the baseline {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.playout  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seconds", nargs="?", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE, help="naive_playouts.py")
    args = parser.parse_args()
    if not args.baseline.exists():
        sys.exit(f"benchmarks/rules.py: baseline not found: {args.baseline} (use --baseline PATH)")
    naive = load_baseline(args.baseline)
    start = Position.start()

    # Interleave the measurements so that load on this shared machine hits both sides alike.
    ours, base, tokens = [], [], []
    # Many short rounds and the best of each: other processes on a shared machine only ever slow a round down.
    rounds = 10
    for _ in range(rounds):
        ours.append(rate(lambda rng: random_game(rng, start), args.seconds / rounds))
        base.append(rate(naive, args.seconds / rounds))
        tokens.append(rate(lambda rng: random_game_tokens(rng, start), args.seconds / rounds))
    o, b, t = max(ours), max(base), max(tokens)
    print(f"rules core random games/s:           {o:10.0f}")
    print(f"naive baseline games/s:              {b:10.0f}")
    print(f"ratio (rules core / naive):          {o / b:10.2f}   (target >= 1.5)")
    print(f"with tokens parsed from text, /s:    {t:10.0f}   ratio {t / b:.2f}")

    vectors = json.loads(PERFT_VECTORS.read_text()) if PERFT_VECTORS.exists() else []
    nodes = 0
    t0 = time.perf_counter()
    for v in vectors:
        pos = parse_position(v["position"], parse_variant(v["variant"], v["attributes"]))
        nodes += perft(pos, v["depth"])
    elapsed = time.perf_counter() - t0
    if vectors:
        print(f"perft nodes/s ({len(vectors)} vectors, {nodes} nodes): {nodes / elapsed:10.0f}")


if __name__ == "__main__":
    main()
