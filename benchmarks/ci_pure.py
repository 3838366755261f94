"""The CI's pure-solver part (.ci/run), as it was and as it is: wall time of each, alternated, and their ratio.

    python benchmarks/ci_pure.py [--runs 1]

Before: ``tests/test_solver.py`` and ``tests/test_analysis.py`` whole, on one process, with the pure core forced.
After: the same without the tests that name their core (they run the same in the main part), on two workers, then
the time-limit test alone. Runs alternate before, after, before... so that a machine shared with others loads both
alike; the load average is printed with each figure. A CPU-bound part: on a quiet 2-core machine the two workers
count fully, on a loaded one they do not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ["tests/test_solver.py", "tests/test_analysis.py"]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
BEFORE = [[*PYTEST, *FILES]]
NAMED_CORE = "not test_pure_core_agrees_with_the_oracle and not same_tree"
AFTER = [
    [*PYTEST, "-n", "2", "-m", "not serial", "-k", NAMED_CORE, *FILES],
    [*PYTEST, "-m", "serial", *FILES],
]


def timed(commands: list[list[str]]) -> float:
    """Seconds to run ``commands`` one after the other (each must pass)."""
    env = {**os.environ, "QUARTO_ARENA_PURE_SOLVER": "1"}
    began = time.monotonic()
    for command in commands:
        subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="pairs of runs (default 1)")
    runs = parser.parse_args().runs
    before, after = [], []
    for _ in range(runs):
        before.append(timed(BEFORE))
        print(f"before: {before[-1]:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
        after.append(timed(AFTER))
        print(f"after:  {after[-1]:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    ratio = statistics.median(after) / statistics.median(before)
    print(f"after/before (medians of {runs}): {ratio:.2f}")


if __name__ == "__main__":
    main()
