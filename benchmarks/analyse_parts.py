"""Where ``analyse``'s time goes on real games, and what the parts would buy: CPU by kind of request, and a bound.

Run: ``python benchmarks/analyse_parts.py --pgn NIGHT.pgn [--games 300] [--skip 0]``. The games are the first N
after ``--skip`` of a night's PGN (benchmarks/analyse.py says how to play one). They are analysed in this process,
on one thread, as one ``-j`` worker analyses them (``Analyser(threads=1)``), twice:

1. as ``analyse`` does, the solver's CPU split by request: the value of each game's first position (at 12 empty
   squares by default), the value of each turn played (the chain of positions after it), and every best turn at a
   mistake, by the empty squares there;
2. with each first position's value known beforehand (solved by another solver, untimed), as a table of first
   positions would give it: the bound on what any speed-up of the first positions alone can buy.

Both passes must give the same analysis of every game (else it refuses to print the bound). Each prints the CPU
per game and, at that rate, 18,000 games on two worker processes (a night at ``-j 2``: the goal of issue 36 is 5
minutes). A sample reuses fewer first positions than a whole night (about 5,000 of 18,000 are met again there), so
the projection is a little high; compare the two passes of one run with each other. Figures only.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quarto_arena.arena.analysis import Analyser, GameAnalysis, Replay
from quarto_arena.arena.pgn import PgnGame, read_games
from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import Variant
from quarto_arena.protocol.solver import Solver
from quarto_arena.protocol.symmetry import canonical_key

NIGHT: int = 18_000


def timed(analyser: Analyser, spent: defaultdict[str, float]) -> None:
    """Wraps the analyser's three kinds of request so that their CPU is added up in ``spent`` by kind."""

    def wrap(name: str, kind: Callable[..., str]) -> None:
        method = getattr(analyser, name)

        def measured(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                spent[kind(*args, **kwargs)] += time.process_time() - started

        setattr(analyser, name, measured)

    wrap("_value", lambda *a, first=False, **k: "first positions' values" if first else "turns' values")
    wrap("_turn_value", lambda *a, **k: "turns' values")
    empties = lambda position: 16 - position.placed  # noqa: E731
    wrap("_best_turns", lambda solver, position, value: f"best turns at mistakes, {empties(position):2d} empty")


def run(
    games: list[PgnGame], variant: Variant, known: dict[int, Any] | None, from_empties: int
) -> tuple[float, dict[str, float], str]:
    """CPU seconds of the whole pass, by kind of request, and a digest of every game's analysis."""
    analyser = Analyser(threads=1)
    if known is not None:
        analyser.solver(variant)
        for key, value in known.items():
            analyser._values[variant].put(key, value)
    spent: defaultdict[str, float] = defaultdict(float)
    timed(analyser, spent)
    digest = hashlib.sha256()
    started = time.process_time()
    for game in games:
        result: GameAnalysis = analyser.game(game, variant, from_empties)
        digest.update(repr([(t.turn, str(t.before), str(t.after), t.best) for t in result.analysed]).encode())
    return time.process_time() - started, dict(spent), digest.hexdigest()


def _rank(kind: str) -> tuple[int, int]:
    """The order of the lines: the first positions, the turns, then the mistakes from the most empty squares down."""
    kinds = ("first positions' values", "turns' values")
    return (kinds.index(kind), 0) if kind in kinds else (2, -int(kind.split(",")[1].split()[0]))


def report(title: str, cpu: float, spent: dict[str, float], games: int) -> None:
    per_game = cpu / games
    print(
        f"{title}: {cpu:.1f} s CPU, {per_game * 1000:.1f} ms a game; {NIGHT:,} games on 2 workers at this rate: "
        f"{per_game * NIGHT / 2 / 60:.1f} min"
    )
    for kind, seconds in sorted(spent.items(), key=lambda kv: _rank(kv[0])):
        print(f"    {kind:40s} {seconds:7.2f} s  {seconds / cpu:6.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pgn", type=Path, required=True, help="a night's games (see benchmarks/analyse.py)")
    parser.add_argument("--games", type=int, default=300, help="games analysed (default 300)")
    parser.add_argument("--skip", type=int, default=0, help="games of the file skipped first (default 0)")
    parser.add_argument("--from", dest="from_empties", type=int, default=12, help="empty squares (default 12)")
    args = parser.parse_args()
    variant = parse_variant("standard", "color,shape,height,fill", "auto")
    games = list(itertools.islice(read_games(args.pgn), args.skip, args.skip + args.games))
    if not games:
        sys.exit(f"no games in {args.pgn} after the first {args.skip}")
    print(
        f"{len(games)} games of {args.pgn}, from {args.from_empties} empty squares; load average "
        f"{os.getloadavg()[0]:.1f}"
    )

    cpu, spent, plain = run(games, variant, None, args.from_empties)
    report("as analyse does it", cpu, spent, len(games))

    solver = Solver(variant)
    known: dict[int, Any] = {}
    for game in games:
        first = Replay.of(game, variant).first(args.from_empties)
        if first is not None:
            value = solver.value(first).value
            if value is not None:
                known[canonical_key(first)] = value
    cpu_known, spent_known, bound = run(games, variant, known, args.from_empties)
    if bound != plain:
        sys.exit("the two passes analysed the games differently: no figure printed")
    report("with every first position's value known beforehand", cpu_known, spent_known, len(games))
    print(f"the bound: {cpu / cpu_known:.2f}x faster at most from the first positions alone")


if __name__ == "__main__":
    main()
