"""How often the README's CI recipe ("A regression test in CI") fails a change that does nothing, and how often it
fails one that makes the bot 10 Elo weaker: its false-failure rate and its power.

Run: ``python benchmarks/ci_recipe.py [--runs 2000] [--real 3] [--real-weaker 3] [--workers 2]``.

1. The example repository of the recipe (tests/ci_recipe: the README's workflow and the C example bot) is built as
   the workflow builds it, and the bot plays an identical copy of itself at the recipe's time control (``--games``):
   the pentanomial frequencies of a no-op change, made symmetric (the two are one program).
2. ``--runs`` runs of the recipe's SPRT are simulated on those frequencies with the project's own test: the bounds,
   alpha, beta, model and ``--max-games`` read from the workflow's command, ``Sprt.pentanomial`` after every pair as
   the runner calls it; each run ends as the command would (exit 0: H1, 1: H0, 4: no decision), and fails when the
   workflow's SPRT step does not pass that status (the statuses it passes are read from its ``case``). Then the same
   on the frequencies tilted to a true -10 Elo (exponentially: the closest distribution with that mean score, the
   GSPRT's own model). Wall time per run is the median games over the pairs per second measured in step 1.
3. The workflow's steps are run for real (tests/workflow.py: a git repository, the pull request checked out, every
   ``run`` step in bash): ``--real`` times on a pull request that adds a comment to bot.c, ``--real-weaker`` times on
   one that makes the bot 10 Elo weaker by construction: at each ``newgame`` it decides, with probability q, to throw
   the game (it takes no win and hands over a winning piece whenever it can). Its score is then exactly
   ``(1 - q) / 2 + q * s_thrown``, where ``s_thrown`` (its score when it throws every game) is measured first; q is
   chosen for -10 Elo.

Prints figures only; nothing here asserts a rate. Takes about 10 minutes of CPU with the defaults.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from cbuild import compile_c
from quarto_arena.arena.stats import Sprt, SprtDecision, SprtModel
from quarto_arena.arena.stats.elo import score_from_elo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from workflow import EXAMPLE, WORKFLOW, pull_request, run_job, sprt_command, steps  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]
REGRESSION_ELO = -10.0
EXIT = {SprtDecision.H1: 0, SprtDecision.H0: 1}
NO_DECISION = 4

# The example bot made to throw a game with probability THROW_PPM / 1e6, chosen at each newgame: no win taken, a
# winning piece handed over whenever there is one (bot.c's own lines, each replaced once).
THROW = (
    ("static void choose_turn(char *out) {", "static int throwing;\n\nstatic void choose_turn(char *out) {"),
    ("if (p->claimable) {", "if (p->claimable && !throwing) {"),
    ("&& !(wins >> k & 1)) cand[n++] = k;", "&& !(wins >> k & 1) != throwing) cand[n++] = k;"),
    ("&& wins_with(p, p->hand, s)) cand[n++] = s;", "&& !throwing && wins_with(p, p->hand, s)) cand[n++] = s;"),
    ("&& !(wins >> k & 1)) cand[n++] = s * 16 + k;", "&& !(wins >> k & 1) != throwing) cand[n++] = s * 16 + k;"),
    ("pos_ok = 1;\n    }", "pos_ok = 1;\n        throwing = rng_below(1000000) < THROW_PPM;\n    }"),
)


def throwing_bot(source: str, ppm: int) -> str:
    """The example bot's source, throwing a game with probability ``ppm`` per million."""
    for old, new in THROW:
        if source.count(old) != 1:
            sys.exit(f"error: bot.c no longer has the line {old.strip()!r} once: update THROW in {__file__}")
        source = source.replace(old, new)
    return f"#define THROW_PPM {ppm}\n" + source


# ----------------------------------------------------------------------------------------------------------------
# The workflow's test


def option(words: list[str], name: str, default: str) -> str:
    return words[words.index(name) + 1] if name in words else default


def recipe_test() -> tuple[Sprt, int]:
    """The SPRT of the workflow's command, and its game budget (--max-games, made even as the runner makes it)."""
    words = sprt_command()
    test = Sprt(
        float(option(words, "--elo0", "nan")),
        float(option(words, "--elo1", "nan")),
        float(option(words, "--alpha", "0.05")),
        float(option(words, "--beta", "0.05")),
        SprtModel(option(words, "--model", "normalized")),
    )
    budget = int(option(words, "--max-games", "0"))
    return test, budget + budget % 2


def passing_statuses() -> set[int]:
    """The exit statuses of ``quarto-arena sprt`` that the workflow's SPRT step passes: its ``case`` arms that do
    not exit."""
    (step,) = [s for s in steps() if s.name.startswith("SPRT")]
    arms = re.findall(r"^\s*([0-9|]+)\)(.*)$", step.run or "", re.M)
    if not arms:
        sys.exit(f"error: {WORKFLOW} has no case over the SPRT's status")
    return {int(s) for statuses, body in arms if "exit" not in body for s in statuses.split("|")}


# ----------------------------------------------------------------------------------------------------------------
# Games


def play(new: Path, base: Path, games: int, out: Path, tc: str, jobs: str) -> tuple[list[int], float]:
    """Plays NEW against BASE (colour-swapped pairs, the recipe's time control and -j); pentanomial counts of NEW
    and pairs per second."""
    t0 = time.perf_counter()
    cmd = [*CLI, "play", str(new), str(base), "--games", str(games), "--tc", tc, "-j", jobs, "-q", "--out", str(out)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    penta = json.loads((out / "standings.json").read_text())["match"]["pentanomial"]
    return penta, games / 2 / wall


def tilted(frequencies: list[float], score: float) -> list[float]:
    """The distribution closest to ``frequencies`` (least relative entropy) with mean pair score ``score``:
    ``q_i`` proportional to ``p_i e^(l x_i)``, ``x_i = i / 4``."""

    def mean(lam: float) -> float:
        weights = [p * math.exp(lam * i / 4) for i, p in enumerate(frequencies)]
        return sum(w * i / 4 for i, w in enumerate(weights)) / sum(weights)

    low, high = -50.0, 50.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if mean(middle) < score else (low, middle)
    weights = [p * math.exp(low * i / 4) for i, p in enumerate(frequencies)]
    return [w / sum(weights) for w in weights]


# ----------------------------------------------------------------------------------------------------------------
# Simulated runs


SAFETY = 1.5
"""How many times the largest step one pair could make the LLR take are kept between the LLR and a bound when
pairs are drawn without looking at the LLR (see :func:`simulate`)."""


def simulate(
    frequencies: list[float], seeds: range, bounds: tuple[float, float] | None, every_pair: bool = False
) -> list[tuple[int, int]]:
    """One run of the recipe's SPRT per seed on pairs drawn from ``frequencies`` (with other Elo ``bounds``, when
    given): (exit status, games).

    The runner looks at the LLR after every pair. So does this, where the LLR is near a bound; farther away it draws
    pairs without looking, as many as cannot bring the LLR to a bound: the distance to the nearer bound over
    :data:`SAFETY` times the largest step one more pair would make (one of each extreme class added, LL and WW,
    measured again whenever the pairs have grown by a tenth). ``every_pair`` looks after every pair, to check that
    this decides the same.
    """
    test, budget = recipe_test()
    if bounds is not None:
        test = Sprt(*bounds, test.alpha, test.beta, test.model)
    lower, upper = test.bounds
    cumulative = [sum(frequencies[: i + 1]) for i in range(5)]
    done = []
    for seed in seeds:
        rng = random.Random(seed)
        penta = [0, 0, 0, 0, 0]
        status, pairs, look = NO_DECISION, 0, 1
        step, measured = 0.0, -1_000_000  # the largest step one pair makes, and when it was measured
        while status == NO_DECISION and 2 * pairs < budget:
            penta[min(bisect.bisect_right(cumulative, rng.random()), 4)] += 1
            pairs += 1
            if pairs < look and 2 * pairs < budget:
                continue
            now = test.pentanomial(penta)
            if now.decision is not SprtDecision.CONTINUE:
                status = EXIT[now.decision]
            elif every_pair:
                look = pairs + 1
            else:
                if pairs - measured > max(20, measured // 10):  # the step moves as slowly as the frequencies
                    step = max(abs(test.pentanomial(_plus(penta, c)).llr - now.llr) for c in (0, 4))
                    measured = pairs
                look = pairs + max(1, int(min(now.llr - lower, upper - now.llr) / (SAFETY * step)))
        done.append((status, 2 * pairs))
    return done


def _plus(penta: list[int], c: int) -> list[int]:
    more = list(penta)
    more[c] += 1
    return more


def simulated(
    frequencies: list[float],
    runs: int,
    workers: int,
    first_seed: int,
    bounds: tuple[float, float] | None = None,
    every_pair: bool = False,
) -> list[tuple[int, int]]:
    chunk = -(-runs // (4 * workers))
    parts = [range(s, min(s + chunk, first_seed + runs)) for s in range(first_seed, first_seed + runs, chunk)]
    n = len(parts)
    with ProcessPoolExecutor(workers) as pool:
        done = pool.map(simulate, [frequencies] * n, parts, [bounds] * n, [every_pair] * n)
        return [r for part in done for r in part]


def summary(results: list[tuple[int, int]], passing: set[int], pairs_per_second: float | None) -> str:
    failed = sum(status not in passing for status, _ in results)
    statuses = ", ".join(f"exit {s}: {sum(x == s for x, _ in results)}" for s in sorted({x for x, _ in results}))
    games = statistics.median(g for _, g in results)
    wall = f", median wall {games / 2 / pairs_per_second:.0f} s" if pairs_per_second else ""
    low, high = wilson(failed, len(results))
    return (
        f"{len(results)} runs, {failed} failed ({failed / len(results):.2%}, 95% CI {low:.2%}-{high:.2%});"
        f" {statuses}; median {games:,.0f} games{wall}"
    )


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a proportion k / n."""
    z = 1.959964
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# ----------------------------------------------------------------------------------------------------------------
# Real runs of the workflow


def real_runs(directory: Path, name: str, change: str, count: int, passing: set[int]) -> None:
    """Runs the workflow ``count`` times on a pull request whose bot.c is ``change``; prints each job."""
    results = []
    for k in range(count):
        repo = directory / f"{name}-{k}"
        base, _ = pull_request(repo, lambda tree: (tree / "bot.c").write_text(change, encoding="utf-8"), name)
        t0 = time.perf_counter()
        job = run_job(repo, base)
        wall = time.perf_counter() - t0
        sprt = job.results[-1]
        games = sum(1 for _ in (repo / "sprt" / "games.jsonl").open()) if (repo / "sprt").is_dir() else 0
        m = re.search(r"H[01] accepted[^\n]*|no decision[^\n]*", sprt.stdout + sprt.stderr)
        status = sprt_status(sprt.stdout + sprt.stderr)
        results.append((status, games))
        print(
            f"  {name} {k + 1}: job {'passed' if job.passed else f'failed (exit {job.status})'};"
            f" sprt exit {status} ({m.group(0) if m else '?'}); {games:,} games, {wall:.0f} s"
        )
    if results:
        print(f"  {name}: {summary(results, passing, None)}")


def sprt_status(log: str) -> int:
    if "H1 accepted" in log:
        return 0
    if "H0 accepted" in log:
        return 1
    if "no decision" in log.lower():
        return NO_DECISION
    return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="simulated runs of each kind (default 2000)")
    parser.add_argument("--games", type=int, default=20000, help="games of the no-op frequencies (default 20000)")
    parser.add_argument("--calibration", type=int, default=4000, help="games of the bot throwing every game")
    parser.add_argument("--real", type=int, default=3, help="real runs of the workflow on a no-op change")
    parser.add_argument("--real-weaker", type=int, default=3, help="real runs on a change 10 Elo weaker")
    parser.add_argument("--workers", type=int, default=2, help="processes for the simulated runs (default 2)")
    parser.add_argument("--seed", type=int, default=1, help="first seed of the simulated runs")
    parser.add_argument("--check", type=int, default=100, help="runs simulated both ways, every pair looked at too")
    parser.add_argument(
        "--compare",
        default="-10,0",
        help="ELO0,ELO1: also simulate a no-op change under these bounds, failing on every status but 0, as the"
        " recipe before this one did (default -10,0; '' for none)",
    )
    args = parser.parse_args()

    words = sprt_command()
    tc, jobs = option(words, "--tc", "st=1"), option(words, "--concurrency", option(words, "-j", "1"))
    test, budget = recipe_test()
    passing = passing_statuses()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"the recipe: {' '.join(words)}")
    print(
        f"  SPRT elo0 {test.elo0:g} elo1 {test.elo1:g} ({test.model.value}), alpha {test.alpha:g}, beta"
        f" {test.beta:g}, at most {budget:,} games; the workflow passes exit {', '.join(map(str, sorted(passing)))}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        source = (EXAMPLE / "bot.c").read_text(encoding="utf-8")
        new = compile_c(EXAMPLE / "bot.c", directory, "new")
        base = compile_c(EXAMPLE / "bot.c", directory, "base")
        penta, pairs_per_second = play(new, base, args.games, directory / "noop", tc, jobs)
        pairs = sum(penta)
        frequencies = [(penta[i] + penta[4 - i]) / (2 * pairs) for i in range(5)]
        print(
            f"no-op frequencies from {2 * pairs:,} games of the example bot against itself: {penta}"
            f" -> [{', '.join(f'{f:.4f}' for f in frequencies)}], {2 * pairs_per_second:.0f} games/s"
        )
        if args.check:
            fast = simulated(frequencies, args.check, args.workers, args.seed)
            exact = simulated(frequencies, args.check, args.workers, args.seed, every_pair=True)
            same = sum(a == b for a, b in zip(fast, exact, strict=True))
            print(f"pairs drawn unseen far from the bounds, against a look at every pair: {same} of {args.check} alike")
        print("simulated, a no-op change:")
        print("  " + summary(simulated(frequencies, args.runs, args.workers, args.seed), passing, pairs_per_second))
        if args.compare:
            bounds = tuple(float(x) for x in args.compare.split(","))
            assert len(bounds) == 2
            print(f"simulated, a no-op change, bounds {bounds[0]:g} {bounds[1]:g} and only exit 0 passing:")
            print(
                "  "
                + summary(simulated(frequencies, args.runs, args.workers, args.seed, bounds), {0}, pairs_per_second)
            )
        weaker = tilted(frequencies, score_from_elo(REGRESSION_ELO))
        mean = sum(q * i / 4 for i, q in enumerate(weaker))
        sigma = math.sqrt(sum(q * (i / 4 - mean) ** 2 for i, q in enumerate(weaker)))
        nelo = (mean - 0.5) / sigma / math.sqrt(2) * 800 / math.log(10)
        print(
            f"simulated, a change {REGRESSION_ELO:g} Elo weaker ({nelo:.1f} normalized Elo for this bot: 10"
            f" normalized Elo is {10 * REGRESSION_ELO / nelo:.1f} Elo):"
        )
        results = simulated(weaker, args.runs, args.workers, args.seed + args.runs)
        print("  " + summary(results, passing, pairs_per_second).replace(" failed (", " failed: caught ("))

        if args.real:
            print("real runs of the workflow, a no-op change (a comment added to bot.c):")
            real_runs(directory, "noop", source + "/* a comment */\n", args.real, passing)
        if args.real_weaker:
            thrower = directory / "thrower.c"
            thrower.write_text(throwing_bot(source, 1_000_000), encoding="utf-8")
            always = compile_c(thrower, directory, "always")
            thrown, _ = play(always, base, args.calibration, directory / "thrown", tc, jobs)
            s_thrown = sum(n * i / 4 for i, n in enumerate(thrown)) / sum(thrown)
            q = (0.5 - score_from_elo(REGRESSION_ELO)) / (0.5 - s_thrown)
            ppm = round(q * 1_000_000)
            score = 0.5 - ppm / 1e6 * (0.5 - s_thrown)
            elo = -400 * math.log10(1 / score - 1)
            print(
                f"real runs of the workflow, a change {REGRESSION_ELO:g} Elo weaker: the bot throws a game with"
                f" probability {ppm / 1e6:.4f} (it scores {s_thrown:.4f} in {sum(thrown) * 2:,} thrown games):"
                f" score {score:.4f}, {elo:.1f} Elo"
            )
            real_runs(directory, "weaker", throwing_bot(source, ppm), args.real_weaker, passing)


if __name__ == "__main__":
    main()
