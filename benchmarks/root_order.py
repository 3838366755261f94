#!/usr/bin/env python3
"""The root order of win proofs (the core's ``win_order``), counted in nodes: no clock, so load does not enter.

For won positions sampled as benchmarks/convert.py does (``--seed``; the benchmark's own positions are seed 1),
each on a fresh table: the nodes ``perfect``'s exact search takes to prove the win, the safety proof (window
(-1, 0)) then the win proof (window (0, 1)), once with the root's plain order (the opponent's mobility, fewest
first) and once with ``win_order`` (each piece left that already wins somewhere after the placement counts
against the turn too: ``WIN_ORDER_DEADLY`` in protocol/_solver.c). Both must prove the win. Prints each position,
the sums and medians, and how many positions each proves within each budget of nodes (a quiet machine's 70 ms
turn is roughly 60,000-70,000 nodes: about 0.9 M a second in these proofs, measured on this 2-core machine).
WIN_ORDER_DEADLY was chosen on seed 2.

    python benchmarks/root_order.py [--empties 12] [--positions 20] [--variant standard] [--seed 1]
                                    [--budgets 40000,50000,60000,70000]
"""

from __future__ import annotations

import statistics

from convert import print_within, proof_nodes, sampled_won_positions
from quarto_arena.protocol.notation import format_position


def main() -> None:
    args, positions = sampled_won_positions(__doc__, "40000,50000,60000,70000")
    rows = []
    for index, position in enumerate(positions):
        plain, ordered = sum(proof_nodes(position, False)), sum(proof_nodes(position, True))
        rows.append((plain, ordered))
        line = f"plain {plain:>9,}  win_order {ordered:>9,}  {ordered / plain:5.2f}"
        print(f"{index:3}  {format_position(position):24} {line}")
    plains = [p for p, _ in rows]
    ordereds = [o for _, o in rows]
    print(
        f"nodes in all: plain {sum(plains):,}, win_order {sum(ordereds):,} ({sum(ordereds) / sum(plains):.3f}); "
        f"median {statistics.median(plains):,.0f} -> {statistics.median(ordereds):,.0f}; "
        f"fewer at {sum(o < p for p, o in rows)}, more at {sum(o > p for p, o in rows)} of {len(rows)}"
    )
    print_within(args.budgets, [("plain", plains), ("win_order", ordereds)])


if __name__ == "__main__":
    main()
