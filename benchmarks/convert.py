#!/usr/bin/env python3
"""Does ``perfect`` convert won endgames at a real movetime? Conversions, and the time its first search takes.

For each count of empty squares and each shape variant, samples positions from random *safe* play (seeded, as
tests/test_perfect.py does) that the solver proves won for the player to move (unbounded; positions with a win at
once are skipped). ``perfect`` (Level 10) plays the winning side at ``go movetime M`` on its own clock, through
``PerfectBot.search`` and a ``SearchContext`` as the SDK builds one at a load of 1 (its budget then: the SDK's
session keeps back more on a machine loaded beyond one process per CPU, so under load this is the engine with the
budget of a quiet machine, on a loaded machine's CPU share; each row prints the load average); the loser defends
perfectly (the solver's best turn, unbounded: the longest loss). Prints per row: conversions out of N, then for the
first search of each game (the one that must prove the win) the time used against the engine's budget (median, max),
and the worst search of any turn. With ``--phases`` it also times, on a fresh solver without limits, the steps the
engine's exact search takes at the first position: the safety proof, the win proof, the exact value after it, and
the win proof alone on another fresh solver (median and max per row, and how many outlast the budget). ``--threads``
sets the engine's ``Threads``; ``--compare`` plays every position with ``Threads`` 1 and 2 one after the other
(which goes first alternates) and prints a row for each, so the two are measured under the same load.

    python benchmarks/convert.py [--empties 11,12,13] [--positions 30] [--variants standard,advanced]
                                 [--movetime 100] [--seed 1] [--threads N | --compare] [--phases] [--verbose]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from quarto_arena.engines.greedy import safe_turns, winning_turns
from quarto_arena.engines.perfect import LEVEL, MAX_LEVEL, THREADS, PerfectBot
from quarto_arena.protocol.bot import SearchContext, time_budget
from quarto_arena.protocol.notation import format_position, parse_variant
from quarto_arena.protocol.rules import Outcome, Position, Variant
from quarto_arena.protocol.solver import Aim, Solver, Verdict
from quarto_arena.protocol.uqi import Go, Info


def sampled_won_positions(description: str | None, budgets: str) -> tuple[argparse.Namespace, list[Position]]:
    """The command line of a script that counts the nodes of win proofs on :func:`won_positions` (two_threads.py,
    root_order.py: which positions, and the budgets in nodes to count them within), and those positions."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--empties", type=int, default=12, help="empty squares of the won positions")
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--variant", default="standard")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budgets", default=budgets, help="nodes, comma-separated")
    args = parser.parse_args()
    variant = parse_variant(args.variant)
    return args, won_positions(variant, args.empties, args.positions, args.seed, Solver(variant))


def print_within(budgets: str, columns: Sequence[tuple[str, Sequence[int]]]) -> None:
    """For each budget in nodes (comma-separated), how many of each column's proofs it holds: a line a budget."""
    for budget in (int(b) for b in budgets.split(",") if b):
        counts = ", ".join(f"{label} {sum(n <= budget for n in nodes):>3}/{len(nodes)}" for label, nodes in columns)
        print(f"within {budget:>9,} nodes: {counts}")


def proof_nodes(position: Position, win_order: bool) -> tuple[int, int]:
    """Nodes of the safety proof and then of the win proof (``win_order``: the core's win order at the root) at a
    won ``position``, on a fresh table (root_order.py, two_threads.py)."""
    core = Solver(position.variant).core
    occupied, planes, hand = position[1], position[2], position[3]
    assert hand is not None
    core.search(occupied, planes, hand, -1, 0)
    safety = core.nodes
    score = core.search(occupied, planes, hand, 0, 1, win_order=win_order)
    assert score >= 1, "a won position's win proof proves the win"
    return safety, core.nodes


def won_positions(variant: Variant, empties: int, count: int, seed: int, solver: Solver) -> list[Position]:
    """``count`` positions with ``empties`` empty squares and a piece in hand, won for the player to move."""
    rng = random.Random(f"{seed}-{empties}-{variant.describe()}")
    out: list[Position] = []
    while len(out) < count:
        p = Position.start(variant)
        while not p.is_over and 16 - p.placed > empties:
            p = p.apply(rng.choice(safe_turns(p) or p.legal_turns()))
        if p.is_over or p.hand is None or 16 - p.placed != empties or winning_turns(p):
            continue
        found = solver.search(p, empties, aim=Aim.WIN)  # exact: the depth reaches the end
        if found is not None and found.verdict is Verdict.WIN:
            out.append(p)
    return out


@dataclass(frozen=True, slots=True)
class Game:
    """One conversion attempt."""

    converted: bool
    first: float
    """Seconds the engine's first search took."""
    worst: float
    """Seconds the engine's longest search took."""
    first_infos: tuple[Info, ...]


def convert(position: Position, engine: PerfectBot, defender: Solver, movetime: int) -> Game:
    """``engine`` plays ``position`` (won for it) out against ``defender``'s best turns."""
    engine.new_game(position.variant)
    times: list[float] = []
    first_infos: list[Info] = []
    ours = True
    while not position.is_over:
        if ours:
            on_info = first_infos.append if not times else None
            ctx = SearchContext(Go(movetime=movetime), position=position, on_info=on_info)
            turn = engine.search(position, ctx)
            times.append(time.monotonic() - ctx.started)
        else:
            found = defender.value(position)
            assert found.value is not None
            if found.value.verdict is not Verdict.LOSS:
                return Game(False, times[0], max(times), tuple(first_infos))  # the engine let the win go
            turn = found.best[0]
        position = position.apply(turn)
        ours = not ours
    # The engine made the last turn when ``ours`` flipped to False after it.
    converted = position.outcome is Outcome.WIN and not ours
    return Game(converted, times[0], max(times), tuple(first_infos))


def phases(position: Position) -> tuple[str, float]:
    """The exact search's steps at ``position`` on a fresh solver, unbounded: what each costs; and the seconds the
    win proof alone takes on another fresh solver."""
    solver = Solver(position.variant)
    empty = 16 - position.placed
    out = []
    for label, run in (
        ("safety", lambda: solver.search(position, empty, aim=Aim.SAFETY)),
        ("win", lambda: solver.search(position, empty, aim=Aim.WIN)),
        ("value", lambda: solver.value(position)),
    ):
        started = time.perf_counter()
        found = run()
        spent = time.perf_counter() - started
        nodes = getattr(found, "nodes", 0)
        out.append(f"{label} {spent * 1000:6.1f} ms {nodes:>9,} nodes")
    win = Solver(position.variant)
    started = time.perf_counter()
    win.search(position, empty, aim=Aim.WIN)
    alone = time.perf_counter() - started
    out.append(f"win alone {alone * 1000:6.1f} ms")
    return "; ".join(out), alone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--empties", default="11,12,13", help="empty squares of the won positions")
    parser.add_argument("--positions", type=int, default=30, help="won positions per count and variant")
    parser.add_argument("--variants", default="standard,advanced", help="shape variants, comma-separated")
    parser.add_argument("--movetime", type=int, default=100, help="go movetime, ms")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, choices=(1, 2), help="the engine's Threads (default: its default)")
    parser.add_argument("--compare", action="store_true", help="Threads 1 and 2 interleaved, a row for each")
    parser.add_argument("--phases", action="store_true", help="time the exact search's steps at each position")
    parser.add_argument("--verbose", action="store_true", help="print every position not converted, and its infos")
    args = parser.parse_args()
    budget = time_budget(Go(movetime=args.movetime), Position.start())
    assert budget is not None
    print(
        f"perfect (Level {MAX_LEVEL}) at go movetime {args.movetime}: budget {budget * 1000:.0f} ms, seed {args.seed}"
    )
    for name in args.variants.split(","):
        variant = parse_variant(name)
        sampler, defender = Solver(variant), Solver(variant)
        for empties in (int(e) for e in args.empties.split(",") if e):
            positions = won_positions(variant, empties, args.positions, args.seed, sampler)
            engines: dict[str, PerfectBot] = {}
            for threads in (1, 2) if args.compare else (args.threads,):
                engine = PerfectBot()
                engine.reset_options()
                engine.set_option(LEVEL.name, MAX_LEVEL)
                if threads is not None:
                    engine.set_option(THREADS.name, threads)
                engines[f" Threads {engine.option(THREADS.name)}" if args.compare else ""] = engine
            games: dict[str, list[Game]] = {label: [] for label in engines}
            alone: list[float] = []
            for index, p in enumerate(positions):
                labels = list(engines)
                for label in labels[index % len(labels) :] + labels[: index % len(labels)]:
                    game = convert(p, engines[label], defender, args.movetime)
                    games[label].append(game)
                    if args.verbose and not game.converted:
                        print(f"  not converted{label}: {format_position(p)}")
                        for info in game.first_infos:
                            print(f"    depth {info.depth} score {info.score} nodes {info.nodes} time {info.time}")
                if args.phases:
                    marks = " ".join("ok  " if games[label][-1].converted else "MISS" for label in engines)
                    steps, seconds = phases(p)
                    alone.append(seconds * 1000)
                    print(f"  {marks} first {games[labels[0]][-1].first * 1000:6.1f} ms  {steps}")
            for label, played in games.items():
                firsts = [g.first * 1000 for g in played]
                converted = sum(g.converted for g in played)
                print(
                    f"{name:<9} {empties:2} empty{label}: converted {converted:>3}/{len(played):<3} "
                    f"first search median {statistics.median(firsts):6.1f} ms  max {max(firsts):6.1f} ms  "
                    f"(budget {budget * 1000:.0f} ms)   worst search {max(g.worst for g in played) * 1000:6.1f} ms"
                    f"   load {os.getloadavg()[0]:.1f}"
                )
            if alone:
                print(
                    f"{'':19} the win proof alone: median {statistics.median(alone):6.1f} ms  max {max(alone):6.1f} ms"
                    f"  over the budget: {sum(ms > budget * 1000 for ms in alone)}/{len(alone)}"
                )


if __name__ == "__main__":
    main()
