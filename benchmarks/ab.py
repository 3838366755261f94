"""This checkout against an older revision, on a benchmark that prints figures: runs alternated, medians side by side.

    python benchmarks/ab.py --base REV [--runs 3] [--script benchmarks/tournament.py] [-- SCRIPT ARGS...]

The revision ``REV`` (a commit, a tag, ``main``...) is exported with ``git archive`` into a temporary directory and
imported from there (``PYTHONPATH``, ahead of this checkout's editable install; compiled modules are copied from this
checkout); the script itself is this checkout's, run by this interpreter. Runs alternate old, new, old, new... so
that a machine shared with others loads both alike. Every number of the script's output is collected by line and
position; the best (smallest) and the median of each are printed for both, with their ratios (new/old): on a loaded
machine the best is the steadier. Only for scripts whose output lines
are the same from run to run apart from their numbers (benchmarks/tournament.py, the default).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def export(rev: str, into: Path) -> None:
    """``git archive REV`` unpacked as ``into/quarto_arena``, with this checkout's compiled modules."""
    package = into / "quarto_arena"
    package.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(package)], input=archive, check=True)
    for built in ROOT.glob("**/*.so"):
        if ".venv" not in built.parts:
            target = package / built.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, target)


def run(script: str, args: list[str], pythonpath: str | None) -> str:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, script, *args], check=True, capture_output=True, text=True, env=env).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base", required=True, help="the older revision (git)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each, alternated")
    parser.add_argument("--script", default=str(ROOT / "benchmarks" / "tournament.py"))
    parser.add_argument("args", nargs="*", help="the script's own arguments (after --)")
    args = parser.parse_args()
    outputs: dict[str, list[str]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        export(args.base, Path(tmp))
        for _ in range(args.runs):
            outputs["old"].append(run(args.script, args.args, tmp))
            outputs["new"].append(run(args.script, args.args, None))
    template = outputs["new"][0].splitlines()
    print(f"{args.runs} alternated runs each of {Path(args.script).name} {' '.join(args.args)}; old = {args.base}")
    print("each measured number as old>new (new/old): the best of the runs, then the median")
    for i, line in enumerate(template):
        old_runs, new_runs = (
            [[float(x) for x in NUMBER.findall(out.splitlines()[i])] for out in outputs[k]] for k in outputs
        )
        count = len(new_runs[0])
        if any(len(r) != count for r in old_runs + new_runs):
            print(f"  {line}")
            continue
        pairs = [([r[k] for r in old_runs], [r[k] for r in new_runs]) for k in range(count)]
        measured = [not (min(o) == max(o) == min(n) == max(n)) for o, n in pairs]
        if not any(measured):  # settings only (a heading)
            print(f"  {line}")
            continue
        for label, pick in (("best  ", min), ("median", statistics.median)):
            cells = iter(
                f"{pick(o):g}>{pick(n):g}" + (f" ({pick(n) / pick(o):.2f})" if pick(o) else "") if m else None
                for (o, n), m in zip(pairs, measured, strict=True)
            )
            print(f"  {label} " + NUMBER.sub(lambda match, cells=cells: next(cells) or match.group(), line.strip()))


if __name__ == "__main__":
    main()
