"""How far fishtest's normalized-Elo margin is from the real spread of the estimate, by simulation.

fishtest and fastchess give normalized Elo the margin ``z * 800 / ln 10 / sqrt(games)`` whatever the result: the
t-value's standard error at t = 0 with the spread taken as known. This draws many matches from a fixed outcome
distribution, measures the standard deviation of the nElo that :func:`trinomial_stats` reports, and prints it in
units of that margin's standard error (1.0 means the margin is right).

Run: ``python benchmarks/nelo_margin.py [--games N] [--matches M] [--seed S]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from quarto_arena.arena.stats import NELO_PER_T, trinomial_stats

# (win, draw, loss) probabilities: from equal engines to a lopsided match.
DISTRIBUTIONS = (
    (0.5, 0.0, 0.5),
    (0.3, 0.4, 0.3),
    (0.6, 0.0, 0.4),
    (0.8, 0.0, 0.2),
    (0.6, 0.3, 0.1),
    (0.95, 0.0, 0.05),
)


def main() -> None:
    """Prints one line per outcome distribution: its score, nElo, and the measured/fishtest spread ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000, help="games per simulated match")
    parser.add_argument("--matches", type=int, default=1000, help="simulated matches per distribution")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    fishtest_sd = NELO_PER_T / math.sqrt(args.games)
    print(f"{args.games} games per match, {args.matches} matches; fishtest's nElo sd = {fishtest_sd:.2f}")
    print(f"{'W/D/L':>16} {'score':>6} {'nElo':>7} {'measured sd / fishtest sd':>26}")
    for win, draw, loss in DISTRIBUTIONS:
        estimates = []
        for _ in range(args.matches):
            outcomes = rng.choices(("w", "d", "l"), weights=(win, draw, loss), k=args.games)
            stats = trinomial_stats(outcomes.count("w"), outcomes.count("l"), outcomes.count("d"))
            if math.isfinite(stats.nelo.value):
                estimates.append(stats.nelo.value)
        score = win + draw / 2
        nelo = (score - 0.5) / math.sqrt(win * (1 - score) ** 2 + draw * (0.5 - score) ** 2 + loss * score**2)
        ratio = statistics.pstdev(estimates) / fishtest_sd
        print(f"{win:>5.2f}/{draw:.2f}/{loss:.2f} {score:>6.3f} {nelo * NELO_PER_T:>+7.1f} {ratio:>26.2f}")


if __name__ == "__main__":
    main()
