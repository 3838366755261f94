#!/usr/bin/env python3
"""Speed of the rules core, as ratios against a naive baseline measured in the same process run.

Prints:
- random full games per second played through the public API (``Position.apply`` on ``Turn`` values: the code
  path the referee uses to validate and apply every turn an engine sends). Each turn places on a uniformly random
  empty square and gives a uniformly random piece left: the same distribution of games as the project's naive
  baseline, ``benchmarks/naive_playouts.py`` (plain lists, the lines through the square just filled);
- the naive baseline's games per second, run in this same process, and the ratio;
- with ``--baseline PATH`` (repeatable), the same for any other module with a ``playout(rng)`` function, for
  example an older baseline whose figures an earlier report quoted;
- the same games with tokens parsed from text first (``parse_turn``: what the referee does with a reply line);
- perft nodes per second on the project's vectors (tests/data).

    python benchmarks/rules.py [SECONDS] [--baseline PATH]...
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
NAIVE = HERE / "naive_playouts.py"
PERFT_VECTORS = sorted((HERE.parent / "tests" / "data").glob("perft*.json"))


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
        if pos.outcome is not ongoing:
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
    """The ``playout(rng)`` function of the module at ``path``."""
    if not path.is_file():
        sys.exit(f"benchmarks/rules.py: baseline not found: {path}")
    spec = importlib.util.spec_from_file_location(f"baseline_{path.stem}", path)
    if spec is None or spec.loader is None:
        sys.exit(f"benchmarks/rules.py: cannot load the baseline {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    playout = getattr(module, "playout", None)
    if not callable(playout):
        sys.exit(f"benchmarks/rules.py: {path} has no playout(rng) function")
    return playout  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seconds", nargs="?", type=float, default=3.0, help="time per measurement")
    parser.add_argument(
        "--baseline", type=Path, action="append", default=[], help="another playout(rng) module to compare with"
    )
    args = parser.parse_args()
    baselines = {"naive baseline": load_baseline(NAIVE)}
    baselines.update((str(path), load_baseline(path)) for path in args.baseline)
    start = Position.start()

    # Interleave the measurements so that load on this shared machine hits every side alike, in many short rounds
    # keeping the best of each: other processes on a shared machine only ever slow a round down.
    rounds = 10
    slice_ = args.seconds / rounds
    ours, tokens = [], []
    base: dict[str, list[float]] = {name: [] for name in baselines}
    for _ in range(rounds):
        ours.append(rate(lambda rng: random_game(rng, start), slice_))
        for name, playout in baselines.items():
            base[name].append(rate(playout, slice_))
        tokens.append(rate(lambda rng: random_game_tokens(rng, start), slice_))
    o, t, b = max(ours), max(tokens), max(base["naive baseline"])
    print(f"rules core random games/s:           {o:10.0f}")
    for name, rates in base.items():
        print(f"{name} games/s:              {max(rates):10.0f}   rules core / this: {o / max(rates):.2f}")
    print(f"with tokens parsed from text, /s:    {t:10.0f}   this / naive baseline: {t / b:.2f}")

    vectors = [v for path in PERFT_VECTORS for v in json.loads(path.read_text())]
    nodes = 0
    t0 = time.perf_counter()
    for v in vectors:
        variant = parse_variant(v["variant"], v["attributes"], v.get("claims", "auto"))
        nodes += perft(parse_position(v["position"], variant), v["depth"])
    elapsed = time.perf_counter() - t0
    if vectors:
        print(f"perft nodes/s ({len(vectors)} vectors, {nodes} nodes): {nodes / elapsed:10.0f}")


if __name__ == "__main__":
    main()
