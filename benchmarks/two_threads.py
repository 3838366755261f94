#!/usr/bin/env python3
"""What ``perfect``'s second thread (``Threads`` 2: the win proof's root turns shared by two threads, see
``Solver.search``'s ``threads``) buys, counted in nodes: no clock, so the machine's load does not enter.

For each won position (sampled as benchmarks/convert.py does, same seed, same positions), on fresh solvers and
without limits, the exact search's safety proof and then:
- one thread: the win proof (window (0, 1)), as ``Threads`` 1 runs it;
- two threads: the root's turns in the order the win proof tries them (``Core.root_turns``), each proven on its own
  thread's table as the two-thread search does, the two threads modelled on clocks of nodes (the one that has
  visited fewer takes the next turn); the win is proven when the thread that proves a winning turn has visited
  that many nodes: the wall time of two free cores, in nodes.
Prints each position, the sums, and how many positions each proves within each budget of nodes (a quiet machine's
70 ms turn is roughly 60,000-70,000 nodes: about 0.9 M a second in these proofs, measured on this 2-core machine).

    python benchmarks/two_threads.py [--empties 12] [--positions 20] [--variant standard] [--seed 1]
                                     [--budgets 40000,50000,60000,70000,100000]
"""

from __future__ import annotations

import statistics

from convert import print_within, proof_nodes, sampled_won_positions
from quarto_arena.protocol.rules import Position, turn_of
from quarto_arena.protocol.solver import Solver


def two_threads(position: Position, safety: int) -> int:
    """Nodes to the proven win with two threads sharing the root's turns (on node clocks): the main thread starts
    after the safety proof's ``safety`` nodes, the twin waits for it as the solver does."""
    main, twin = Solver(position.variant), Solver(position.variant)
    occupied, planes, hand = position[1], position[2], position[3]
    assert hand is not None
    main.core.search(occupied, planes, hand, -1, 0)
    moves = main.core.root_turns(occupied, planes, hand, 0, 1, win_order=True)
    assert moves, "a won position's win proof tries its turns"
    cores, clocks = [main.core, twin.core], [0, 0]
    for move in moves:
        taker = 0 if clocks[0] <= clocks[1] else 1
        child = position.apply(turn_of(place=move >> 4, give=move & 15))
        score = cores[taker].search(child[1], child[2], child[3], -1, 0)
        clocks[taker] += cores[taker].nodes
        if score <= -1:
            return safety + clocks[taker]
    raise AssertionError("a won position has a winning turn")


def main() -> None:
    args, positions = sampled_won_positions(__doc__, "40000,50000,60000,70000,100000")
    rows: list[tuple[int, int]] = []
    for index, position in enumerate(positions):
        safety, win = proof_nodes(position, win_order=True)
        one, two = safety + win, two_threads(position, safety)
        rows.append((one, two))
        print(f"{index:3}  one thread {one:>10,} nodes   two threads {two:>10,}   {two / one:5.2f}")
    ones = [one for one, _ in rows]
    twos = [two for _, two in rows]
    print(
        f"nodes to a proven win: one thread {sum(ones):,} (median {statistics.median(ones):,.0f}), two threads "
        f"{sum(twos):,} (median {statistics.median(twos):,.0f}): {sum(twos) / sum(ones):.3f} of one thread's"
    )
    print_within(args.budgets, [("one thread", ones), ("two", twos)])


if __name__ == "__main__":
    main()
