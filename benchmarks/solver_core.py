#!/usr/bin/env python3
"""The solver's C core against an older revision's, on the same work: every best turn (``Solver.analyse``) of fresh
12-empty positions, one thread, a fresh solver per position; or, with ``--work proofs``, the exact search's proofs
that ``perfect`` runs at a won position (the safety proof, then the win proof in its win order, on a fresh table):
benchmarks/convert.py's positions (``--seed 1 --positions 20``), sampled once in this process.

The older core is built from ``git show REV:protocol/_solver.c`` with the same flags as setup.py (``-O3``) into a
temporary directory; the current one is the built module beside this checkout's sources. Each core runs in its own
process, the two alternating round by round, and the script prints per round the nodes and the CPU time of each,
then the ratio of the median CPU times. The node counts and the answers do not depend on the load; the CPU does, so
quote the load average (printed) with it. ``--instructions`` runs each core once under callgrind instead and prints
the instructions executed inside the core (``valgrind`` needed; about 50 times slower): a count the load does not
move. Per node, both are printed too. In ``proofs`` the nodes are part of the answers: a core that searches another
tree DISAGREES.

    python benchmarks/solver_core.py [--base 76933de] [--work analyse|proofs] [--positions N] [--empties 12]
                                     [--seed S] [--rounds 3] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a child process: loads the core at CORE in place of the installed one, then analyses the positions.
CHILD = """
import importlib.machinery, importlib.util, os, sys, time
sys.path.insert(0, {bench!r})
path = os.environ["CORE"]
loader = importlib.machinery.ExtensionFileLoader("quarto_arena.protocol._solver", path)
spec = importlib.util.spec_from_file_location("quarto_arena.protocol._solver", path, loader=loader)
module = importlib.util.module_from_spec(spec)
loader.exec_module(module)
import quarto_arena.protocol.solver as S


# The core at CORE behind this checkout's solver.py: an older core takes no win_order (analyse leaves it off).
class Core:

    def __init__(self, *args):
        self._core = module.Core(*args)

    def search(self, *args):
        return self._core.search(*(args[:8] if len(args) > 8 and not args[8] else args))

    def __getattr__(self, name):
        return getattr(self._core, name)


S._COMPILED = Core
S._WORKERS = 1
from analyse_position import sample_positions
from quarto_arena.protocol.notation import parse_position, parse_variant
variant = parse_variant("standard")
nodes, cpu, answers = 0, 0.0, []
if {proofs!r} is None:
    for position in sample_positions(variant, {empties}, {positions}, {seed}):
        solver = S.Solver(variant)
        started = time.process_time()
        result = solver.analyse(position)
        cpu += time.process_time() - started
        nodes += result.nodes
        answers.append((str(result.value), sorted(str(t) for t in result.best)))
else:
    for text in {proofs!r}:
        occupied, planes, hand = parse_position(text, variant)[1:4]
        core = S.Solver(variant).core
        started = time.process_time()
        safety = core.search(occupied, planes, hand, -1, 0)
        safety_nodes = core.nodes
        win = core.search(occupied, planes, hand, 0, 1, 0, 0.0, S.EXACT, True)
        cpu += time.process_time() - started
        nodes += safety_nodes + core.nodes
        answers.append((safety, safety_nodes, win, core.nodes))
print(nodes, cpu, hash(repr(answers)) & 0xFFFFFFFF)
"""


def build_core(rev: str, out: Path) -> Path:
    """The C core of revision ``rev``, compiled as setup.py compiles it."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:protocol/_solver.c"], capture_output=True, text=True, check=True
    ).stdout
    (out / "_solver.c").write_text(source)
    target = out / ("_solver" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        sys.exit("no C compiler (cc or gcc) to build the older core")
    flags = ["-shared", "-fPIC", "-O3", "-fwrapv", "-DNDEBUG", f"-I{sysconfig.get_paths()['include']}"]
    subprocess.run([compiler, *flags, str(out / "_solver.c"), "-o", str(target)], check=True)
    return target


def current_core() -> Path:
    found = sorted((ROOT / "protocol").glob("_solver*.so"))
    if not found:
        sys.exit("the C core is not built here: pip install -e . first")
    return found[0]


def won_positions(args: argparse.Namespace) -> list[str] | None:
    """``--work proofs``: convert.py's won positions as text, sampled here (the children only prove them)."""
    if args.work != "proofs":
        return None
    from convert import won_positions as sample
    from quarto_arena.protocol.notation import format_position, parse_variant
    from quarto_arena.protocol.solver import Solver

    variant = parse_variant("standard")
    return [format_position(p) for p in sample(variant, args.empties, args.positions, args.seed, Solver(variant))]


def run(
    core: Path, args: argparse.Namespace, instructions: bool, proofs: list[str] | None
) -> tuple[int, float, int, int | None]:
    code = CHILD.format(
        bench=str(ROOT / "benchmarks"), empties=args.empties, positions=args.positions, seed=args.seed, proofs=proofs
    )
    argv = [sys.executable, "-c", code]
    env = {**os.environ, "CORE": str(core), "PYTHONHASHSEED": "0"}
    counted = None
    with tempfile.TemporaryDirectory() as scratch:
        if instructions:
            out = Path(scratch) / "callgrind.out"
            argv = [
                "valgrind",
                "--tool=callgrind",
                "--toggle-collect=Core_search",
                f"--callgrind-out-file={out}",
                *argv,
            ]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            sys.exit(f"the run with {core} failed: {done.stderr.strip()[-2000:]}")
        if instructions:
            summary = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
            counted = int(summary.group(1)) if summary else None
    nodes, cpu, answers = done.stdout.split()
    return int(nodes), float(cpu), int(answers), counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--base", default="76933de", help="the older revision (default: main before issue 24's 3rd session)"
    )
    parser.add_argument(
        "--work", choices=("analyse", "proofs"), default="analyse", help="every best turn, or perfect's win proofs"
    )
    parser.add_argument("--positions", type=int, help="default: 1 (analyse), 20 (proofs)")
    parser.add_argument("--empties", type=int, default=12)
    parser.add_argument("--seed", type=int, help="default: 7 (analyse), 1 (proofs: convert.py's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind, once each")
    args = parser.parse_args()
    proofs_work = args.work == "proofs"
    if args.positions is None:
        args.positions = 20 if proofs_work else 1
    if args.seed is None:
        args.seed = 1 if proofs_work else 7
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind")
    with tempfile.TemporaryDirectory() as scratch:
        cores = {"current": current_core(), args.base: build_core(args.base, Path(scratch))}
        proofs = won_positions(args)
        work = "perfect's proofs at won" if proofs_work else "every best turn,"
        print(
            f"{work} {args.positions} position(s) at {args.empties} empties, seed {args.seed}, one thread; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        cpus: dict[str, list[float]] = {name: [] for name in cores}
        counts: dict[str, int] = {}
        seen: dict[str, tuple[int, int]] = {}
        for round_ in range(1 if args.instructions else args.rounds):
            for name, core in cores.items():
                nodes, cpu, answers, counted = run(core, args, args.instructions, proofs)
                cpus[name].append(cpu)
                seen[name] = (nodes, answers)
                if counted is not None:
                    counts[name] = counted
                extra = (
                    f", {counted / 1e9:.3f} G instructions in the core ({counted / nodes:,.0f} a node)"
                    if counted is not None
                    else ""
                )
                print(
                    f"  round {round_ + 1} {name:>8}: {nodes:>11,} nodes, CPU {cpu:6.2f} s "
                    f"({cpu / nodes * 1e9:,.0f} ns a node){extra}"
                )
        if len({answers for _, answers in seen.values()}) != 1:
            sys.exit("the cores DISAGREE on the values or best turns")
        if args.instructions:
            if len(counts) == 2:
                print(f"instructions ratio current / {args.base}: {counts['current'] / counts[args.base]:.3f}")
        else:
            base = statistics.median(cpus[args.base])
            print(f"median CPU ratio current / {args.base}: {statistics.median(cpus['current']) / base:.2f}")
        print(f"load average {os.getloadavg()[0]:.2f} at the end; the answers agree")


if __name__ == "__main__":
    main()
