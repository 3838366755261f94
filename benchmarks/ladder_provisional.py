"""What the provisional rule buys: how often a newcomer of median strength is shown among the top 3 of a ladder.

    python benchmarks/ladder_provisional.py [--runs 200] [--field 20] [--history 40] [--window 200] [--seed 1]

A field of ``--field`` established bots, their true strengths spread 200 Elo (normal), each two having played
``--history`` games (colour-swapped pairs; 10% draws, the rest by the logistic expectation). A newcomer whose true
strength is the field's median arrives and plays pairs against field bots chosen at random. After each pair the
standings are computed as ``ladder standings`` computes them (the ladder's own :func:`standings` on an in-memory
snapshot, anchored at the field's first bot), under two rules:

- today's rule before this change: every line ranked by its rating;
- the provisional rule: a version is provisional until it has 30 games against 5 bots and a margin of at most 100,
  and provisional lines are ranked after every established one.

Printed, over ``--runs`` newcomers: how often the newcomer was shown in the top 3 at some point before it was
established (goal: under 5%) under each rule; how many games it took to be established (median); and, under the
provisional rule, how often it was in the top 3 at some point in its first ``--window`` games (established or not).
Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from typing import Any

from quarto_arena.arena.ladder.db import BotRow, LadderState, TallyRow, TotalRow, VersionRow
from quarto_arena.arena.ladder.schema import totals_of
from quarto_arena.arena.ladder.standings import standings
from quarto_arena.arena.records import Result, Termination

RESULTS = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}


def play(rng: random.Random, a: float, b: float) -> float:
    """The first player's score in one game between true strengths ``a`` and ``b``."""
    if rng.random() < 0.1:
        return 0.5
    return 1.0 if rng.random() < 1 / (1 + 10 ** ((b - a) / 400)) else 0.0


def state(names: list[str], tallies: dict[tuple[int, int, str], int]) -> LadderState:
    """An in-memory snapshot: one version per bot (its index + 1), the tallies given (first, second, result)."""
    bots = tuple(BotRow(n, False, "", "", (VersionRow(1, n, "", ""),)) for n in names)
    rows = tuple(
        TallyRow(names[a], names[b], 1, 1, Result(r), Termination.NORMAL, n) for (a, b, r), n in tallies.items()
    )
    counts = totals_of((a + 1, b + 1, r, "normal", n) for (a, b, r), n in tallies.items())
    totals = tuple(TotalRow(names[v - 1], 1, Termination.NORMAL, *c) for (v, _), c in counts.items())
    met: dict[int, set[int]] = {}
    for a, b, _ in tallies:
        met.setdefault(a, set()).add(b)
        met.setdefault(b, set()).add(a)
    opponents = {(names[i], 1): len(o) for i, o in met.items()}
    last = sum(tallies.values())
    settings: dict[str, Any] = {"anchor": [names[0], 0.0]}
    return LadderState(settings, bots, totals, opponents, rows, len(rows), last, last, None, {})


def one(rng: random.Random, field: int, history: int, window: int) -> tuple[bool, bool, int | None, bool]:
    """One newcomer: (top 3 before established, by rating; top 3 while provisional, by the provisional rule; games
    to be established; top 3 at some point in its first ``window`` games, by the provisional rule)."""
    strengths = sorted((rng.gauss(0, 200) for _ in range(field)), reverse=True)
    names = [f"b{i:02}" for i in range(field)] + ["new"]
    strengths.append(statistics.median(strengths))
    tallies: dict[tuple[int, int, str], int] = {}
    for a in range(field):
        for b in range(a + 1, field):
            for k in range(history):
                first, second = (a, b) if k % 2 == 0 else (b, a)
                key = (first, second, RESULTS[play(rng, strengths[first], strengths[second])])
                tallies[key] = tallies.get(key, 0) + 1
    new = field
    top_by_rating = top_provisional = top_window = False
    established_at = None
    games = 0
    while games < window:
        other = rng.randrange(field)
        for first, second in ((new, other), (other, new)):
            key = (first, second, RESULTS[play(rng, strengths[first], strengths[second])])
            tallies[key] = tallies.get(key, 0) + 1
        games += 2
        table = standings(state(names, tallies), fresh=True)
        line = next(s for s in table.lines if s.bot == "new")
        by_rating = sorted((s for s in table.lines if s.rating is not None), key=lambda s: -(s.rating or 0.0))
        in_top = any(s.bot == "new" for s in by_rating[:3])
        shown_top = line.rank is not None and line.rank <= 3
        if line.provisional:
            top_by_rating |= in_top
            top_provisional |= shown_top
        elif established_at is None:
            established_at = games
        top_window |= shown_top
    return top_by_rating, top_provisional, established_at, top_window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--field", type=int, default=20)
    parser.add_argument("--history", type=int, default=40)
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"benchmarks/ladder_provisional.py on {os.cpu_count()} cores: {' '.join(sys.argv[1:]) or '(defaults)'}")
    rng = random.Random(args.seed)
    began = time.monotonic()
    runs = [one(rng, args.field, args.history, args.window) for _ in range(args.runs)]
    by_rating = sum(r[0] for r in runs) / len(runs)
    provisional = sum(r[1] for r in runs) / len(runs)
    when = [r[2] for r in runs if r[2] is not None]
    window = sum(r[3] for r in runs) / len(runs)
    never = sum(1 for r in runs if r[2] is None)
    print(
        f"provisional: {args.runs} newcomers of the median strength of {args.field} established bots"
        f" ({args.history} games each two): shown in the top 3 before established {100 * by_rating:.1f}% by today's"
        f" rule (ranked by rating), {100 * provisional:.1f}% by the provisional rule (goal < 5%); established after"
        f" {statistics.median(when) if when else float('nan'):.0f} games (median; {never} not within {args.window});"
        f" in the top 3 at some point of its first {args.window} games by the provisional rule {100 * window:.1f}%"
        f" ({time.monotonic() - began:.0f} s)"
    )


if __name__ == "__main__":
    main()
