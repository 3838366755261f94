"""How long the tool takes to start: ``quarto-arena --help`` and ``quarto-arena show startpos``, wall time.

    python benchmarks/startup.py [--runs 20]

Each command is run as a new process, interleaved with a bare ``python -c pass`` (the floor no Python tool gets
under on this machine), and the median and best of ``--runs`` are printed with the goal (at most 120 ms for both
commands). The imports that cost the most at start-up are listed from ``python -X importtime``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "quarto-arena --help": [sys.executable, "-c", "from quarto_arena.arena.cli import main; main(['--help'])"],
    "quarto-arena show startpos": [
        sys.executable,
        "-c",
        "from quarto_arena.arena.cli import main; main(['show', 'startpos'])",
    ],
}
GOAL_MS = 120


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, argv in COMMANDS.items():
            times[name].append(wall(argv))
    print(f"start-up wall time, {args.runs} interleaved runs (median / best), goal <= {GOAL_MS} ms")
    for name, values in times.items():
        median, best = 1000 * statistics.median(values), 1000 * min(values)
        verdict = "" if name.startswith("python") else ("  ok" if median <= GOAL_MS else "  OVER THE GOAL")
        print(f"  {name:<28} {median:6.1f} / {best:6.1f} ms{verdict}")
    out = subprocess.run(
        [sys.executable, "-X", "importtime", *COMMANDS["quarto-arena show startpos"][1:]],
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print("largest cumulative imports of `show startpos` (us):")
    for cumulative, module in sorted(rows, reverse=True)[:8]:
        print(f"  {cumulative:7d}  {module}")


if __name__ == "__main__":
    main()
