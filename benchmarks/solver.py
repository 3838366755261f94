#!/usr/bin/env python3
"""Speed of the exact solver: time per position by empty squares, compiled core and pure-Python fallback.

Positions come from games of random *safe* turns (never handing over a piece that wins at once, when another
piece does not), standard rules, seeded: the kind of position a real game reaches. For each count of empty
squares it prints the median and the worst time of

- ``value``: the exact value (win/draw/loss and the turns to the end), with a fresh solver per position;
- ``every``: the value and every best turn (``Solver.analyse``), again from a fresh solver;

and the core's nodes per second over all of them. The pure-Python fallback runs on fewer empty squares (it is
about a hundred times slower), and the two cores' node counts on the same positions are compared as a check.

    python benchmarks/solver.py [--empties 8,10,11,12] [--positions 15] [--pure-empties 6,8]
                                [--pure-positions 5] [--seed 1] [--variant standard]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import dataclass

from quarto_arena.engines.greedy import safe_turns
from quarto_arena.protocol.notation import format_position, parse_variant
from quarto_arena.protocol.rules import Position, Variant
from quarto_arena.protocol.solver import Solver, compiled_core_available


def sample_positions(variant: Variant, empties: int, count: int, seed: int) -> list[Position]:
    """``count`` unfinished positions with ``empties`` empty squares and a piece in hand, from random safe games."""
    rng = random.Random(f"{seed}-{empties}-{variant.describe()}")
    out: list[Position] = []
    while len(out) < count:
        p = Position.start(variant)
        while not p.is_over and 16 - p.placed > empties:
            p = p.apply(rng.choice(safe_turns(p) or p.legal_turns()))
        if not p.is_over and 16 - p.placed == empties and p.hand is not None:
            out.append(p)
    return out


@dataclass(frozen=True, slots=True)
class Row:
    """Figures for one core, one count of empty squares and one request."""

    times: list[float]
    nodes: list[int]

    def line(self, label: str) -> str:
        median, worst = statistics.median(self.times), max(self.times)
        nps = sum(self.nodes) / max(sum(self.times), 1e-9)
        return (
            f"{label:<28} median {median * 1000:9.2f} ms   max {worst * 1000:9.2f} ms   "
            f"nodes median {int(statistics.median(self.nodes)):>10,}   {nps / 1e6:6.2f} M nodes/s"
        )


def measure(variant: Variant, positions: list[Position], *, pure: bool, every: bool) -> Row:
    times: list[float] = []
    nodes: list[int] = []
    for p in positions:
        solver = Solver(variant, pure=pure)
        started = time.perf_counter()
        result = solver.analyse(p) if every else solver.value(p)
        times.append(time.perf_counter() - started)
        nodes.append(result.nodes)
        assert result.proven, format_position(p)
    return Row(times, nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--empties", default="8,10,11,12", help="empty squares for the compiled core")
    parser.add_argument("--positions", type=int, default=15, help="positions per count (compiled core)")
    parser.add_argument("--pure-empties", default="6,8", help="empty squares for the pure-Python core")
    parser.add_argument("--pure-positions", type=int, default=5, help="positions per count (pure core)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", default="standard", help="standard or advanced")
    parser.add_argument("--every-up-to", type=int, default=10, help="also time every best turn up to N empties")
    args = parser.parse_args()
    variant = parse_variant(args.variant)
    print(f"variant: {variant.describe()}; seed {args.seed}; compiled core available: {compiled_core_available()}")
    if compiled_core_available():
        for empties in (int(e) for e in args.empties.split(",") if e):
            positions = sample_positions(variant, empties, args.positions, args.seed)
            print(measure(variant, positions, pure=False, every=False).line(f"compiled value  {empties:2} empty"))
            if empties <= args.every_up_to:
                print(measure(variant, positions, pure=False, every=True).line(f"compiled every  {empties:2} empty"))
    for empties in (int(e) for e in args.pure_empties.split(",") if e):
        positions = sample_positions(variant, empties, args.pure_positions, args.seed)
        pure = measure(variant, positions, pure=True, every=False)
        print(pure.line(f"fallback value  {empties:2} empty"))
        if compiled_core_available():
            compiled = measure(variant, positions, pure=False, every=False)
            same = "same nodes" if compiled.nodes == pure.nodes else "DIFFERENT NODES"
            ratio = statistics.median(pure.times) / max(statistics.median(compiled.times), 1e-9)
            print(f"{'':28} compiled on the same: {ratio:,.0f}x faster (median), {same}")


if __name__ == "__main__":
    main()
