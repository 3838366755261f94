#!/usr/bin/env python3
"""The ``Level`` ladder of ``perfect``: how much stronger is each level than the one below? Resumable.

Each step ``k`` (level k+1 against level k) is played by the arena itself, ``quarto-arena tournament`` with the
built-in ``perfect`` twice (``Level`` k+1 and k, names ``level-K``), colour-swapped pairs from random openings of
``--openings`` turns (the runner's own openings, a seed per step and chunk, so games differ). Levels 0-9 play at
``--tc`` (default ``st=10``: their node caps, not the clock, end every turn, so the results do not depend on the
machine's load); level 10 at ``--top-tc`` (default ``st=0.1``: it is "perfect within its time"). A late reply is
tolerated up to ``--timemargin`` (default 500 ms: the engines keep their own clocks; the margin only keeps a
loaded scheduler from forfeiting games). Everything runs under ``nice -n 19``.

A step plays ``--games`` games, or what ``--step-games`` gives it: the steps with fewer draws (lower levels)
have wider margins for the same games, so the default plays those more (see ``STEP_GAMES``). The games are played
in chunks of ``--chunk`` games, each step's chunks spread over the run in proportion to its games, so a run stopped
early has played about the same share of every step; each chunk is a run directory ``OUT/step-K/chunk-C`` (its
openings' seed is ``100000 * --seed + 1000 * K + C``) and a rerun of the same command skips the finished chunks and
resumes an unfinished one (``tournament --resume``). ``--report`` only prints what is there. The CPU time of the
games and the arena, and the load average, are printed as the run goes.

Printed per step: games, level k+1's wins, draws and losses, its Elo difference over level k with the 95% margin
(the project's statistics, :mod:`quarto_arena.arena.stats.match`): from the colour-swapped pairs (pentanomial,
the games of a pair share an opening) and from the games (trinomial), forfeits, and whether the step is at least
``--goal`` Elo (the estimate, and the lower end of its interval).

    python benchmarks/levels.py [--games 1100] [--step-games 1-7=4400] [--chunk 200] [--steps 0-9] [--seed 1]
                                [--out out/levels] [-j 2] [--openings 3] [--tc st=10] [--top-tc st=0.1]
                                [--goal 25] [--report]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from quarto_arena.arena.records import GameRecord
from quarto_arena.arena.results import summarize
from quarto_arena.arena.stats.match import Estimate, pentanomial_stats, trinomial_stats
from quarto_arena.engines.perfect import MAX_LEVEL

STEP_GAMES = "1-6=8800,7=6600,8=4400,9=2200"
"""The default games of particular steps (see ``--step-games``): enough that a step of about 37 Elo (greedy to
level 9 is about 300 Elo head to head, in eight steps) has a 95% margin of about 6 or less: 2 v 1 to 7 v 6 draw
least and need the most games."""

CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]


def parse_steps(text: str, option: str = "--steps") -> list[int]:
    """``0-9`` or ``2,5,9``: the lower levels of the steps."""
    steps: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.partition("-")
            steps.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        steps = []
    if not steps or min(steps) < 0 or max(steps) >= MAX_LEVEL:
        raise SystemExit(f"{option}: lower levels from 0 to {MAX_LEVEL - 1}, not {text!r}")
    return sorted(set(steps))


def parse_step_games(text: str, default: int) -> dict[int, int]:
    """``0=1100,1-7=4400``: games per step where it differs from ``--games``."""
    games = dict.fromkeys(range(MAX_LEVEL), default)
    for part in filter(None, text.split(",") if text else []):
        steps, _, count = part.partition("=")
        if not count.isdigit() or int(count) < 2:
            raise SystemExit(f"--step-games: STEPS=GAMES with GAMES at least 2, not {part!r}")
        for step in parse_steps(steps, "--step-games"):
            games[step] = int(count)
    return games


def schedule(steps: list[int], games: dict[int, int], chunk: int) -> list[tuple[int, int, int]]:
    """(step, chunk number, games in it) in playing order: each step's chunks spread over the run in proportion to
    its games, so that a run stopped early has played about the same share of every step."""
    plan = []
    for step in steps:
        chunks = -(-games[step] // chunk)
        for number in range(1, chunks + 1):
            size = min(chunk, games[step] - (number - 1) * chunk)
            plan.append((number / chunks, step, number, size + size % 2))
    return [(step, number, size) for _, step, number, size in sorted(plan)]


def engines_file(directory: Path, step: int, tc: str, top_tc: str) -> Path:
    """An engines file naming ``level-K`` and ``level-K+1``, each with its time control."""
    path = directory / "levels.toml"
    entries = []
    for level in (step + 1, step):
        entries.append(
            f'[[engine]]\nname = "level-{level}"\ncommand = "perfect"\n'
            f'tc = "{top_tc if level == MAX_LEVEL else tc}"\n[engine.options]\nLevel = {level}\n'
        )
    path.write_text("\n".join(entries))
    return path


def chunk_done(run: Path, games: int) -> bool:
    return run.is_dir() and len(read_games(run)) >= games


def play_chunk(run: Path, step: int, chunk: int, games: int, args: argparse.Namespace) -> None:
    """Plays (or resumes) one chunk; the tournament's own output goes to ``run``'s sibling log."""
    log = run.with_suffix(".log")
    if (run / "journal.qaj").exists():
        command = [*CLI, "tournament", "--resume", str(run)]
    else:
        run.parent.mkdir(parents=True, exist_ok=True)
        spec = engines_file(run.parent, step, args.tc, args.top_tc)
        command = [
            *CLI,
            "tournament",
            "--engines",
            str(spec),
            "--games",
            str(games),
            "--random-openings",
            str(args.openings),
            "--seed",
            str(100_000 * args.seed + 1000 * step + chunk),
            "-j",
            str(args.concurrency),
            "--timemargin",
            str(args.timemargin),
            "--out",
            str(run),
            "-q",
        ]
    with log.open("a") as out:
        status = subprocess.run(["nice", "-n", "19", *command], stdout=out, stderr=subprocess.STDOUT).returncode
    if status not in (0, 1):  # 1: games ended in an engine failure (counted as forfeits below)
        raise SystemExit(f"step {step} chunk {chunk}: tournament exited with {status}, see {log}")


def read_games(run: Path) -> list[GameRecord]:
    path = run / "games.jsonl"
    if not path.exists():
        return []
    return [GameRecord.from_dict(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def elo(estimate: Estimate) -> str:
    return str(estimate)


def report(out: Path, steps: list[int], goal: float) -> list[str]:
    """One line per step, from every chunk there is."""
    lines = [
        f"{'step':>7} {'games':>6} {'W-D-L (upper level)':>20} {'Elo (pairs)':>17} {'Elo (games)':>17} "
        f"{'forfeits':>8} {'>= ' + str(goal):>6} {'low >= ' + str(goal):>10}"
    ]
    for step in steps:
        upper, lower = f"level-{step + 1}", f"level-{step}"
        wins = draws = losses = 0
        penta = [0, 0, 0, 0, 0]
        forfeits = 0
        for run in sorted((out / f"step-{step}").glob("chunk-*")):
            if not run.is_dir():
                continue
            s = summarize(read_games(run), upper, lower)
            wins, draws, losses = wins + s.wins, draws + s.draws, losses + s.losses
            penta = [a + b for a, b in zip(penta, s.pentanomial, strict=True)]
            forfeits += sum(sum(c.values()) for c in s.forfeits.values())
        games = wins + draws + losses
        if not games:
            lines.append(f"{step + 1:>2} v {step:<2} {0:>6}  (not played)")
            continue
        by_games = trinomial_stats(wins, losses, draws).elo
        by_pairs = pentanomial_stats(penta).elo if sum(penta) else by_games
        lines.append(
            f"{step + 1:>2} v {step:<2} {games:>6} {f'{wins}-{draws}-{losses}':>20} {elo(by_pairs):>17} "
            f"{elo(by_games):>17} {forfeits:>8} {'yes' if by_pairs.value >= goal else 'NO':>6} "
            f"{'yes' if by_pairs.low >= goal else 'no':>10}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--games", type=int, default=1100, help="games per step (default 1100)")
    parser.add_argument(
        "--step-games",
        default=STEP_GAMES,
        help=f"games of particular steps, e.g. 0=1100,1-7=4400 (default {STEP_GAMES}; '' for none)",
    )
    parser.add_argument("--chunk", type=int, default=200, help="games per run directory (even; default 200)")
    parser.add_argument("--seed", type=int, default=1, help="openings' seed base (default 1; the first runs used 0)")
    parser.add_argument("--steps", default=f"0-{MAX_LEVEL - 1}", help="lower levels of the steps, e.g. 0-9 or 3,5")
    parser.add_argument("--out", type=Path, default=Path("out/levels"))
    parser.add_argument("-j", "--concurrency", type=int, default=2)
    parser.add_argument("--openings", type=int, default=3, help="random opening turns (default 3)")
    parser.add_argument("--tc", default="st=10", help="time control of levels 0-9 (default st=10)")
    parser.add_argument("--top-tc", default="st=0.1", help="time control of level 10 (default st=0.1)")
    parser.add_argument("--timemargin", type=int, default=500, help="ms (default 500)")
    parser.add_argument("--goal", type=float, default=25.0, help="Elo a step should reach (default 25)")
    parser.add_argument("--report", action="store_true", help="only print what has been played")
    args = parser.parse_args()
    if args.chunk < 2 or args.chunk % 2:
        raise SystemExit("--chunk: an even number of games, at least 2")
    steps = parse_steps(args.steps)
    games = parse_step_games(args.step_games, args.games)
    plan = ", ".join(f"{step + 1} v {step}: {games[step]}" for step in steps)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; games per step {plan}", flush=True)
    start = time.monotonic()
    if not args.report:
        chunks = schedule(steps, games, args.chunk)
        for done, (step, chunk, size) in enumerate(chunks, 1):
            run = args.out / f"step-{step}" / f"chunk-{chunk}"
            if not chunk_done(run, size):
                play_chunk(run, step, chunk, size, args)
                used = resource.getrusage(resource.RUSAGE_CHILDREN)
                print(
                    f"{done}/{len(chunks)} chunks ({step + 1} v {step} #{chunk}), {time.monotonic() - start:.0f} s, "
                    f"CPU {used.ru_utime + used.ru_stime:.0f} s, load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    print("\n".join(report(args.out, steps, args.goal)))
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"this run: {time.monotonic() - start:.0f} s, CPU {used.ru_utime + used.ru_stime:.0f} s (games and arena); "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
