"""What the pages cost: report.html's size and time to write for runs of growing length, and the live page's work
on the arena's event loop (per turn, per game, per summary sent).

    python benchmarks/report.py [--games 100,1000,10000]

Games are random legal games between four names (no engines: the page's cost is what is measured). Each figure is
printed next to a baseline measured in the same run: the report against ``write_standings`` (what every run
already writes at its end) plus the JSON Lines of the same games; the live page's per-turn work against applying
the turn with the rules core (the least the referee does per turn). Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from quarto_arena.arena.output import rate_run, write_standings
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import RunKind, RunOutcome, RunSpec, TurnPlayed
from quarto_arena.arena.schedule import Opening, ScheduledGame
from quarto_arena.arena.web.model import RunInfo, RunModel
from quarto_arena.arena.web.report import write_report
from quarto_arena.protocol.notation import parse_turn
from quarto_arena.protocol.rules import Outcome, Position

ENGINES = ("greedy", "random", "minimax", "other=greedy")
NAMES = ("greedy", "random", "minimax", "other")


def random_game(rng: random.Random, game_id: int) -> GameRecord:
    first, second = rng.sample(NAMES, 2)
    position = Position.start()
    turns = []
    while not position.is_over:
        turn = rng.choice(position.legal_turns())
        after = position.apply(turn)
        turns.append(TurnRecord(position.canonical(turn, after).token, rng.randrange(200), "value 10"))
        position = after
    if position.outcome is Outcome.DRAW:
        result = Result.DRAW
    else:
        result = Result.FIRST_WINS if len(turns) % 2 else Result.SECOND_WINS
    ident = EngineIdentity(id_name="Bot 1.0", author="someone", protocol=1)
    return GameRecord(
        first,
        second,
        result,
        Termination.NORMAL,
        "done",
        turns=tuple(turns),
        game_id=game_id,
        engines=(ident, ident),
    )


def best_of(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def baseline(directory: Path, outcome: RunOutcome) -> None:
    """What every run writes at its end already: the standings (its ratings fitted once), and the games as JSON
    Lines."""
    write_standings(directory, outcome, rate_run(outcome))
    text = "".join(json.dumps(r.to_dict()) + "\n" for r in outcome.records)
    (directory / "games.jsonl").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(1)
    sizes = [int(n) for n in args.games.split(",")]
    records = [random_game(rng, i + 1) for i in range(max(sizes))]
    spec = RunSpec(RunKind.TOURNAMENT, tuple(resolve_engines(list(ENGINES))), games=None)
    print(f"{'games':>7} {'report':>10} {'write':>9} {'baseline':>9} {'ratio':>6} {'summary':>9}")
    for n in sizes:
        outcome = RunOutcome(spec, tuple(records[:n]), n)
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            report = best_of(functools.partial(write_report, directory, outcome), args.runs)
            base = best_of(functools.partial(baseline, directory, outcome), args.runs)
            size = (directory / "report.html").stat().st_size
        model = RunModel(RunInfo.of(spec, n), records[:n])
        summary = best_of(model.summary, args.runs)
        print(
            f"{n:>7} {size / 1e6:>8.2f}MB {1000 * report:>7.0f}ms {1000 * base:>7.0f}ms {report / base:>6.1f}"
            f" {1000 * summary:>7.1f}ms"
        )

    # The live page's work per turn on the arena's loop, against applying the turn with the rules core.
    model = RunModel(RunInfo.of(spec, None))
    per_turn, per_rules = [], []
    for record in records[:300]:
        model.started(ScheduledGame(record.game_id, 1, 0, record.first, record.second, Opening()))
        position = Position.start()
        for ply, t in enumerate(record.turns):
            t0 = time.perf_counter()
            after = position.apply(parse_turn(t.token))
            t1 = time.perf_counter()
            model.event(TurnPlayed(record.game_id, ply, t, after))
            t2 = time.perf_counter()
            per_rules.append(t1 - t0)
            per_turn.append(t2 - t1)
            position = after
        model.add(record)
    rules_us, page_us = 1e6 * statistics.median(per_rules), 1e6 * statistics.median(per_turn)
    ratio = page_us / rules_us
    print(f"live page per turn: {page_us:.1f} us (median), rules core's parse+apply: {rules_us:.1f} us, {ratio:.1f}x")


if __name__ == "__main__":
    main()
