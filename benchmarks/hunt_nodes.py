#!/usr/bin/env python3
"""What ``perfect``'s second thread (the hunt, engines/perfect/hunt.py) buys, counted in nodes: no clock, so the
machine's load does not enter.

For each won position (sampled as benchmarks/convert.py does, same seed, same positions), on fresh solvers and
without limits: the nodes the main search takes to prove the win (the safety proof, then the win proof: what one
thread does), and the nodes the hunt takes to prove a winning turn by itself (its ordering searches included).
With two threads on two free cores, the win is proven when the sooner of the two is done. Prints each position,
then for each budget in nodes how many positions one thread and two threads prove within it. A quiet machine's
70 ms turn is roughly 60,000-70,000 nodes (about 0.9 M a second in these proofs, measured on this 2-core machine).

    python benchmarks/hunt_nodes.py [--empties 12] [--positions 20] [--variant standard] [--seed 1]
                                    [--budgets 40000,50000,60000,70000,100000]
"""

from __future__ import annotations

import statistics

from convert import print_within, sampled_won_positions
from quarto_arena.engines.perfect.hunt import Hunt
from quarto_arena.protocol.solver import Aim, Solver


def main() -> None:
    args, positions = sampled_won_positions(__doc__, "40000,50000,60000,70000,100000")
    rows: list[tuple[int, int]] = []
    for index, position in enumerate(positions):
        solver = Solver(position.variant)
        safety = solver.search(position, args.empties, aim=Aim.SAFETY)
        win = solver.search(position, args.empties, aim=Aim.WIN)
        assert safety is not None and win is not None
        one = safety.nodes + win.nodes
        won, hunted = Hunt(Solver(position.variant), position, None, lambda: None).wait()
        assert won is not None, "the hunt proves a win at every won position, given the time"
        rows.append((one, hunted))
        print(f"{index:3}  one thread {one:>10,} nodes   the hunt {hunted:>10,}   sooner {min(one, hunted):>10,}")
    ones = [one for one, _ in rows]
    soon = [min(one, hunted) for one, hunted in rows]
    print(
        f"median nodes to a proven win: one thread {statistics.median(ones):,.0f}, two {statistics.median(soon):,.0f}; "
        f"in all {sum(soon) / sum(ones):.2f} of one thread's"
    )
    print_within(args.budgets, [("one thread", ones), ("two", soon)])


if __name__ == "__main__":
    main()
