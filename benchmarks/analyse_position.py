#!/usr/bin/env python3
"""What a user waits for: ``quarto-arena analyse POSITION --json`` (the value and every best turn), start-up included.

Positions are fresh: random games of safe turns (never handing over a piece that wins at once, when another does
not) from a seed, by default one drawn from the clock and printed, so each run meets positions no table or cache
of the project has seen. Each position is analysed once per command, the commands interleaved position by position
so that a busy machine slows them alike; the script prints each command's median and worst wall time and its median
CPU time (user and system, the command's whole process: under load CPU time moves less than wall time), with two
commands the ratios of their medians, and the load average before and after; it checks that the commands agree on
the value and the best turns.

Bytecode caches (``--caches``): ``absent`` (the default) runs the commands as this environment is; where it sets
``PYTHONDONTWRITEBYTECODE=1`` and no caches lie beside the sources, every start compiles the project's modules
again (about 0.1 s here). ``present`` runs them as a user's install does (pip compiles the modules as it installs
them, and Python writes the caches of an editable install on its first run): the caches go to a scratch folder
(``PYTHONPYCACHEPREFIX``), filled by one untimed run of each command first.

    python benchmarks/analyse_position.py [--empties 12] [--positions 9] [--seed N] [--variant standard]
                                 [--caches absent|present]
                                 [--command .venv/bin/quarto-arena] [--command /other/venv/bin/quarto-arena]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from quarto_arena.engines.greedy import safe_turns
from quarto_arena.protocol.notation import format_position, parse_variant
from quarto_arena.protocol.rules import Position, Variant


def sample_positions(variant: Variant, empties: int, count: int, seed: int) -> list[Position]:
    """``count`` unfinished positions with ``empties`` empty squares and a piece in hand, from random safe games."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        p = Position.start(variant)
        while not p.is_over and 16 - p.placed > empties:
            p = p.apply(rng.choice(safe_turns(p) or p.legal_turns()))
        if not p.is_over and 16 - p.placed == empties and p.hand is not None:
            out.append(p)
    return out


def default_command() -> str:
    """The quarto-arena of the Python running this script (its venv's, beside the interpreter), else the one on PATH,
    else the CLI's entry point run by this Python (the cli package has no ``__main__``)."""
    beside = Path(sys.executable).parent / "quarto-arena"
    if beside.is_file():
        return shlex.quote(str(beside))
    found = shutil.which("quarto-arena")
    if found:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -c 'from quarto_arena.arena.cli import main; main()'"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--empties", type=int, default=12)
    parser.add_argument("--positions", type=int, default=9)
    parser.add_argument("--seed", type=int, default=None, help="default: drawn from the clock, and printed")
    parser.add_argument("--variant", default="standard", help="standard or advanced")
    parser.add_argument(
        "--command",
        action="append",
        default=None,
        help="the CLI to time (repeatable; default: the quarto-arena beside this Python)",
    )
    parser.add_argument("--caches", choices=("absent", "present"), default="absent", help="bytecode caches")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else time.time_ns() % 1_000_000_007
    commands = args.command or [default_command()]
    variant = parse_variant(args.variant)
    positions = sample_positions(variant, args.empties, args.positions, seed)
    print(f"{args.positions} positions, {args.empties} empty squares, {variant.describe()}, seed {seed}")
    times: list[list[float]] = [[] for _ in commands]
    cpus: list[list[float]] = [[] for _ in commands]
    env = dict(os.environ)
    if args.caches == "present":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        scratch = tempfile.TemporaryDirectory(prefix="analyse-position-")  # removed at exit, however it ends
        env["PYTHONPYCACHEPREFIX"] = scratch.name
        small = format_position(sample_positions(variant, 4, 1, seed)[0])  # next to no search
        for command in commands:
            run = [*shlex.split(command), "analyse", small, "--variant", args.variant]
            subprocess.run(run, capture_output=True, env=env, check=False)
    print(f"bytecode caches {args.caches}; load average {os.getloadavg()[0]:.2f} at the start")
    for position in positions:
        text = format_position(position)
        answers = []
        for i, command in enumerate(commands):
            argv = [*shlex.split(command), "analyse", text, "--json", "--variant", args.variant]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            times[i].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[i].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if done.returncode != 0:
                sys.exit(f"{command} failed on {text!r}: {done.stderr.strip()}")
            answers.append(json.loads(done.stdout))
        first = answers[0]
        line = f"  {text:<24} {first['value']} {first['turns']:>2}, {len(first['best']):>3} best turns  "
        line += "  ".join(f"{t[-1]:6.2f} s" for t in times)
        if any((a["value"], a["turns"], a["best"]) != (first["value"], first["turns"], first["best"]) for a in answers):
            line += "  DISAGREE"
        print(line)
    for command, t, c in zip(commands, times, cpus, strict=True):
        print(
            f"{command}: median {statistics.median(t):.2f} s, worst {max(t):.2f} s (wall, start-up included); "
            f"CPU median {statistics.median(c):.2f} s"
        )
    if len(commands) > 1:
        base, base_cpu = statistics.median(times[-1]), statistics.median(cpus[-1])
        for command, t, c in zip(commands[:-1], times[:-1], cpus[:-1], strict=True):
            print(
                f"median ratio {command} / {commands[-1]}: wall {statistics.median(t) / base:.2f}, "
                f"CPU {statistics.median(c) / base_cpu:.2f}"
            )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
