"""What a short run costs at start-up: ``--help``, ``show startpos``, ``ladder run --help`` (the command built with
its forty options, as a ladder starts) and a 2-game ``play``, each a new process.

    python benchmarks/startup.py [--runs 15] [--caches both|present|absent] [--python OTHER/.venv/bin/python]
    python benchmarks/startup.py --instructions [--python OTHER/.venv/bin/python]

Each command is run as a new process, interleaved with a bare ``python -c pass`` (the floor no Python tool gets
under on this machine), a bare ``import asyncio`` (the floor of any tool built on asyncio, as the referee is) and
the bare imports of the libraries a ``play`` cannot run without (typer, the command line; asyncio and uvloop, the
loop; msgpack, the journal), with none of the arena's own code: the floor a ``play`` built on them cannot get under,
and the median and best of ``--runs`` are printed: wall time, and the CPU time of the
command's own process and of the helpers it starts, the engine watchdog among them (``getrusage(RUSAGE_CHILDREN)``
less what the engines say they used). The 2-game ``play`` is
between two copies of the instant engine of benchmarks/peers.py (``instant_uqi.c``, built with cc; it logs its own
CPU at exit), so nearly all of its cost is the arena's. Goals (issue 24): ``--help`` and ``show startpos`` well under
120 ms of wall, the 2-game ``play`` at most 120 ms of CPU.

Bytecode caches: a normal ``pip install`` compiles every module at install time, so a user's runs read cached
bytecode. ``present`` runs every command with caches (``PYTHONPYCACHEPREFIX``, a scratch folder filled by a first
untimed run); ``absent`` runs them as this environment is (with ``PYTHONDONTWRITEBYTECODE=1`` and no caches beside
the sources, Python compiles every module it cannot find cached at each start). ``both`` (the default) does both.
``--python`` adds another checkout's interpreter (its venv, where quarto-arena is installed): its commands run
interleaved with this one's, and each line says which; ratios between the two are same-run ratios.
The imports that cost the most are listed from ``python -X importtime``. Last, where a play's own CPU goes (caches
present): the project's modules that a play imports and how many of them run code during the play (a profile hook
on every call; a module that only defines names would be an import to put off), then the CPU of importing them all
with the libraries imported before (as a play does, with the cyclic collector paused), the part of it spent making
their dataclasses (``dataclasses`` writes and compiles each class's methods as Python source), and what is left of
the play's CPU for the run itself.

``--instructions`` counts instead the instructions each command's own process executes (valgrind's callgrind, one
run each, caches present): a figure a loaded machine does not move, for comparing two checkouts. Slow (valgrind runs
the arena some 30 times slower), and the engines and the arena's helper processes are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cbuild import PEERS, compile_c

HERE = Path(__file__).resolve().parent
GOAL_MS = 120
PLAY_LIBRARIES = "import typer, asyncio, uvloop, msgpack"
"""What a ``play`` imports before any of the arena's own code runs: its command line, its loop and its journal."""


def build_engine(directory: Path) -> Path:
    return compile_c(PEERS / "instant_uqi.c", directory)


def commands(python: str, engine: Path, scratch: Path) -> dict[str, list[str]]:
    # The console script's entry point (an older checkout, compared with --python, may predate arena/console.py).
    entry = (
        "try:\n from quarto_arena.arena.console import main\n"
        "except ImportError:\n from quarto_arena.arena.cli import main\n"
        "main()"
    )
    cli = [python, "-c", entry]
    play = [*cli, "play", f"a={engine}", f"b={engine}", "--games", "2", "--tc", "st=1", "--random-openings", "0"]
    return {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import asyncio'": [python, "-c", "import asyncio"],
        f"python -c '{PLAY_LIBRARIES}'": [python, "-c", PLAY_LIBRARIES],
        "quarto-arena --help": [*cli, "--help"],
        "quarto-arena show startpos": [*cli, "show", "startpos"],
        "quarto-arena ladder run --help": [*cli, "ladder", "run", "--help"],
        "quarto-arena play, 2 games": [*play, "--out", str(scratch / "run"), "-q"],
    }


def measure(argv: list[str], env: dict[str, str], log: Path, scratch: Path) -> tuple[float, float]:
    """One run: (wall, CPU of the command's own process), in seconds."""
    shutil.rmtree(scratch / "run", ignore_errors=True)
    log.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if log.exists():  # the engines' own CPU (user and system, microseconds), as they logged it at exit
        cpu -= sum(int(a) + int(b) for a, b, *_ in (line.split() for line in log.read_text().splitlines())) / 1e6
    return wall, cpu


def environment(caches: str, scratch: Path, log: Path) -> dict[str, str]:
    env = {**os.environ, "PEERS_LOG": str(log)}
    if caches == "present":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--caches", choices=("both", "present", "absent"), default="both")
    parser.add_argument("--python", action="append", default=[], help="another checkout's python, interleaved")
    parser.add_argument("--instructions", action="store_true", help="count instructions with valgrind instead")
    args = parser.parse_args()
    pythons = [sys.executable, *args.python]
    if args.instructions:
        count_instructions(pythons)
        return
    modes = ("present", "absent") if args.caches == "both" else (args.caches,)
    print(
        f"start-up, {args.runs} interleaved runs, median / best in ms; load {os.getloadavg()[0]:.2f}; "
        f"this environment's PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}"
    )
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        scratch = Path(tmp)
        log = scratch / "engines.log"
        engine = build_engine(scratch)
        argvs: dict[str, list[str]] = {}
        medians: dict[str, dict[str, float]] = {}  # CPU (s) by caches, then command
        for number, python in enumerate(pythons):
            tag = f" [{number}]" if len(pythons) > 1 else ""
            argvs |= {name + tag: argv for name, argv in commands(python, engine, scratch).items()}
        if len(pythons) > 1:
            print("  " + "; ".join(f"[{number}] {python}" for number, python in enumerate(pythons)))
        for caches in modes:
            env = environment(caches, scratch, log)
            for argv in argvs.values():  # fills the bytecode caches (when present) and fails early on an error
                measure(argv, env, log, scratch)
            walls: dict[str, list[float]] = {name: [] for name in argvs}
            cpus: dict[str, list[float]] = {name: [] for name in argvs}
            for _ in range(args.runs):
                for name, argv in argvs.items():
                    wall, cpu = measure(argv, env, log, scratch)
                    walls[name].append(wall)
                    cpus[name].append(cpu)
            floor = statistics.median(cpus[next(iter(argvs))])
            medians[caches] = {name: statistics.median(cpus[name]) for name in argvs}
            print(f"bytecode caches {caches} (load {os.getloadavg()[0]:.2f}):")
            width = max(map(len, argvs))
            print(f"  {'':<{width}} {'wall':>15}   {'CPU':>15}   {'CPU / floor':>11}")
            for name in argvs:
                wall_ms = [1000 * w for w in walls[name]]
                cpu_ms = [1000 * c for c in cpus[name]]
                goal = ""
                if name.startswith("quarto-arena play"):
                    goal = "  goal: CPU <= 120 ms " + ("(met)" if statistics.median(cpu_ms) <= GOAL_MS else "(NOT met)")
                elif not name.startswith("python"):
                    goal = "  goal: wall < 120 ms " + ("(met)" if statistics.median(wall_ms) < GOAL_MS else "(NOT met)")
                print(
                    f"  {name:<{width}} {statistics.median(wall_ms):6.1f} / {min(wall_ms):6.1f}"
                    f"   {statistics.median(cpu_ms):6.1f} / {min(cpu_ms):6.1f}"
                    f"   {statistics.median(cpus[name]) / floor:10.2f}x{goal}"
                )
        play = next(argv for name, argv in argvs.items() if name.startswith("quarto-arena play"))
        show_imports(play, environment("present", scratch, log), log, scratch)
        present = medians.get("present", {})
        libraries = next((cpu for name, cpu in present.items() if PLAY_LIBRARIES in name), None)
        played = next((cpu for name, cpu in present.items() if name.startswith("quarto-arena play")), None)
        show_anatomy(play, environment("present", scratch, log), scratch, args.runs, libraries, played)


def count_instructions(pythons: list[str]) -> None:
    """Each command's instructions (callgrind's count of its own process), for each interpreter in turn."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("error: --instructions needs valgrind")
    print(
        f"instructions executed by each command's own process (millions; caches present; load {os.getloadavg()[0]:.2f})"
    )
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        scratch = Path(tmp)
        log = scratch / "engines.log"
        engine = build_engine(scratch)
        env = environment("present", scratch, log)
        for number, python in enumerate(pythons):
            print(f"  [{number}] {python}")
            for name, argv in commands(python, engine, scratch).items():
                measure(argv, env, log, scratch)  # fills the caches
                shutil.rmtree(scratch / "run", ignore_errors=True)
                out = subprocess.run(
                    [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                    check=False,
                )
                found = [line.split()[-1] for line in out.stderr.splitlines() if "Collected :" in line]
                if out.returncode != 0 or not found:
                    sys.exit(f"failed under valgrind ({out.returncode}): {' '.join(argv)}\n{out.stderr[-2000:]}")
                print(f"    {name:<28} {int(found[0]) / 1e6:9.1f}")


def show_imports(argv: list[str], env: dict[str, str], log: Path, scratch: Path) -> None:
    """The largest cumulative imports of a 2-game play (``python -X importtime``; times inflated by the tracing)."""
    shutil.rmtree(scratch / "run", ignore_errors=True)
    out = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, capture_output=True, text=True, check=False)
    rows = []
    modules = 0
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            modules += 1
            rows.append((int(parts[1]), parts[2].rstrip()))
    print(f"a 2-game play imports {modules} modules; the largest cumulative imports (us):")
    for cumulative, module in sorted(rows, reverse=True)[:12]:
        print(f"  {cumulative:7d}  {module}")


# Run in a child with the play's argv: the project's modules the play imports, in import order, and those that ran a
# function (a profile hook on every call, in every thread) while it did.
_TRACE = """
import json, sys, threading
ran = set()
def hook(frame, event, arg):
    if event == "call" and frame.f_code.co_name != "<module>":
        ran.add(frame.f_globals.get("__name__"))
    elif event == "c_call":  # a compiled module's function, or a method of one of its types
        owner = getattr(arg, "__objclass__", None)
        ran.add(getattr(arg, "__module__", None) or getattr(owner, "__module__", None))
sys.setprofile(hook)
threading.setprofile(hook)
sys.argv = ["quarto-arena", *sys.argv[1:]]
from quarto_arena.arena.console import main
try:
    main()
except SystemExit:
    pass
sys.setprofile(None)
own = [m for m in sys.modules if m.startswith("quarto_arena")]
packages = [m for m in own if hasattr(sys.modules[m], "__path__")]
print(json.dumps({"own": own, "ran": sorted(ran & set(own)), "packages": packages}))
"""

# Run in a child with the modules to import: the CPU of importing them after the play's libraries, and of the
# dataclasses made meanwhile (seconds).
_IMPORTS = f"""
import dataclasses, gc, importlib, json, sys, time
{PLAY_LIBRARIES}
made = [0.0, 0]
process_class = dataclasses._process_class
def timed(cls, *args, **kwargs):
    started = time.process_time()
    try:
        return process_class(cls, *args, **kwargs)
    finally:
        made[0] += time.process_time() - started
        made[1] += 1
dataclasses._process_class = timed
gc.disable()
started = time.process_time()
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps({{"cpu": time.process_time() - started, "dataclasses": made[0], "classes": made[1]}}))
"""


def child_json(python: str, code: str, args: list[str], env: dict[str, str], what: str) -> Any:
    """The JSON that ``python -c CODE ARGS`` prints on its last line; exits naming ``what`` when the child fails."""
    done = subprocess.run([python, "-c", code, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{what} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def show_anatomy(
    play: list[str], env: dict[str, str], scratch: Path, runs: int, libraries: float | None, played: float | None
) -> None:
    """Where a 2-game play's own CPU goes: the project's modules it imports (and whether each runs code in the
    play), the CPU of importing them and of making their dataclasses (median of ``runs``); with the medians of the
    library floor and of the play (seconds, caches present), what is left for the run, and what 1.3x the floor
    (issue 39's goal) would leave above it."""
    python, argv = play[0], play[play.index("play") :]
    shutil.rmtree(scratch / "run", ignore_errors=True)
    found = child_json(python, _TRACE, argv, env, "the traced play")
    own, ran = found["own"], set(found["ran"]) | set(found["packages"])
    # A package's __init__ only gathers names: it runs nothing of its own, and its submodules are what it is for.
    idle = [m for m in own if m not in ran]
    print(
        f"a 2-game play imports {len(own)} of the project's modules; {len(own) - len(idle)} run code in the play "
        f"(or are packages), {len(idle)} only define names{': ' + ', '.join(idle) if idle else ''}"
    )
    cpus, made, classes = [], [], 0
    for _ in range(runs):
        figures = child_json(python, _IMPORTS, own, env, "importing the play's modules")
        cpus.append(1000 * figures["cpu"])
        made.append(1000 * figures["dataclasses"])
        classes = figures["classes"]
    print(
        f"importing them after the play's libraries: {statistics.median(cpus):.1f} ms of CPU (median of {runs}), "
        f"{statistics.median(made):.1f} ms of it making their {classes} dataclasses"
    )
    if libraries is not None and played is not None:
        above, imports = 1000 * (played - libraries), statistics.median(cpus)
        print(
            f"the play's CPU above its libraries' floor: {above:.1f} ms = {imports:.1f} importing its own modules + "
            f"{above - imports:.1f} for the rest (parsing, engines, games, files); 1.3x the floor leaves "
            f"{300 * libraries:.1f} ms above it"
        )


if __name__ == "__main__":
    main()
