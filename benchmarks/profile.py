"""Where the arena's time goes in a tournament: cProfile's top costs, for this checkout or any other install.

    python benchmarks/profile.py [--games 150] [--top 15] [--python LABEL=INTERPRETER ...]

Runs ``quarto-arena tournament`` among four instant C bots (engines/c/quarto_bot.c, compiled with cc) at
concurrency 1 with a run directory, under cProfile, in each interpreter given (by default the one running this
script). A small unprofiled tournament runs first in the same process so that imports and first-use costs are not
counted. The asyncio event loop is used: with uvloop, waiting happens inside C code that cProfile charges to
whichever coroutine ran last. The profiler's clock is the process's CPU time (``time.process_time``), not the wall
clock: on a busy machine the wall clock charges a write that wakes an engine with the engine's time slice. The epoll
calls are shown apart; the rest is ranked: the top functions by own time with their share, then the shares by area:
the project's code, the event loop, other Python, and built-ins (system calls, C functions), the Python
function calls per game and the event loop's passes (``_run_once``) per engine turn (counts: the same on a busy
machine as on a quiet one; a pass per turn is the least, as each turn waits for an engine).

To compare with an older version, install it into a virtual environment of its own and name that interpreter:

    git archive REV | tar -x -C /tmp/old && python3 -m venv /tmp/oldvenv && /tmp/oldvenv/bin/pip install /tmp/old
    python benchmarks/profile.py --python new=.venv/bin/python --python old=/tmp/oldvenv/bin/python

Only the main thread is profiled (a journal sync on a worker thread is not seen); cProfile's own overhead inflates
call-heavy code, so read the shares, not the microseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cbuild import C_BOT, compile_c

ROOT = Path(__file__).resolve().parent.parent

#: Runs in the interpreter being measured: a warm-up tournament, then the profiled one.
DRIVER = r"""
import cProfile, contextlib, io, sys, time
from quarto_arena.arena.cli import main

def run(argv):
    sys.argv = ["quarto-arena", *argv]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main()
        except SystemExit as exit:
            if exit.code not in (0, None):
                raise

warm, real, stats = sys.argv[1], sys.argv[2], sys.argv[3]
run(warm.split("\x1f"))
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(run, real.split("\x1f"))
finally:
    profile.dump_stats(stats)
"""


def compile_bot(work: Path) -> Path:
    return compile_c(C_BOT, work)


def tournament_args(bot: Path, games: int, out: Path) -> list[str]:
    engines = [f"{name}={bot}" for name in "abcd"]
    return [
        "tournament",
        *engines,
        "--games",
        str(games),
        "--tc",
        "st=1",
        "--concurrency",
        "1",
        "--out",
        str(out),
    ]


def area(filename: str) -> str:
    if filename.startswith("~") or filename.startswith("<"):
        return "built-ins (system calls, C functions)"
    if "quarto_arena" in filename or filename.startswith(str(ROOT)):
        return "quarto-arena"
    if "asyncio" in filename or "uvloop" in filename:
        return "event loop (asyncio/uvloop)"
    return "other Python (stdlib, libraries)"


def label(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename == "~":
        return name
    parts = Path(filename).parts
    short = "/".join(parts[-2:]) if len(parts) >= 2 else filename
    return f"{short}:{line} {name}"


def _is_wait(func: tuple[str, int, str]) -> bool:
    return func[0] == "~" and func[2] == "<method 'poll' of 'select.epoll' objects>"


def games_played(out: Path) -> tuple[int, int]:
    """(games, engine turns) in the run's JSON Lines (opening turns are not the engines')."""
    jsonl = out / "games.jsonl"
    if not jsonl.exists():
        return 0, 0
    games = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    turns = sum(len(game.get("turns", ())) - len(game.get("opening", ())) for game in games)
    return len(games), turns


def _is_loop_pass(func: tuple[str, int, str]) -> bool:
    return func[0].endswith(os.path.join("asyncio", "base_events.py")) and func[2] == "_run_once"


def profile(tag: str, python: str, bot: Path, games: int, top: int, work: Path) -> None:
    stats_file = work / f"{tag}.prof"
    warm = tournament_args(bot, 2, work / f"{tag}-warm")
    out = work / f"{tag}-run"
    real = tournament_args(bot, games, out)
    proc = subprocess.run(
        [python, "-c", DRIVER, "\x1f".join(warm), "\x1f".join(real), str(stats_file)],
        capture_output=True,
        text=True,
        cwd=work,
        # The asyncio loop, whose waits cProfile sees as epoll calls (uvloop waits inside C, charged to a caller).
        env={**os.environ, "QUARTO_ARENA_LOOP": "asyncio"},
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"{tag}: the profiled run failed (exit {proc.returncode}): {tail}")
        return
    raw = dict(pstats.Stats(str(stats_file)).stats)  # type: ignore[attr-defined]
    # Time blocked in epoll is the engines' time (and the disk's), not the arena's: shown apart, not ranked.
    waiting = sum(entry[2] for func, entry in raw.items() if _is_wait(func))
    raw = {func: entry for func, entry in raw.items() if not _is_wait(func)}
    total = sum(entry[2] for entry in raw.values())
    calls = sum(entry[1] for entry in raw.values())
    played, turns = games_played(out)
    per_game = 1e3 * total / max(played, 1)
    passes = sum(entry[1] for func, entry in raw.items() if _is_loop_pass(func))
    print(
        f"== {tag} ({python}): {played} games, {total:.2f} s profiled ({per_game:.2f} ms per game), "
        f"{waiting:.2f} s in epoll calls, {calls / max(played, 1):.0f} function calls per game, "
        f"{passes / max(turns, 1):.2f} event loop passes per engine turn ({turns} turns)"
    )
    rows = sorted(raw.items(), key=lambda item: item[1][2], reverse=True)[:top]
    print(f"  {'own time':>9} {'share':>6} {'calls':>9}  function")
    for func, (_cc, ncalls, tottime, _cum, _callers) in rows:
        print(f"  {1e3 * tottime:7.1f}ms {100 * tottime / total:5.1f}% {ncalls:9d}  {label(func)}")
    areas: dict[str, float] = {}
    for func, entry in raw.items():
        key = area(func[0])
        areas[key] = areas.get(key, 0.0) + entry[2]
    print(
        "  by area: "
        + ", ".join(f"{name} {100 * t / total:.0f}%" for name, t in sorted(areas.items(), key=lambda kv: -kv[1]))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=150, help="games per pairing (4 bots: 6 pairings)")
    parser.add_argument("--top", type=int, default=15, help="functions listed per interpreter")
    parser.add_argument(
        "--python", action="append", default=[], metavar="LABEL=INTERPRETER", help="an interpreter to measure"
    )
    args = parser.parse_args()
    targets = [item.partition("=")[::2] for item in args.python] or [("this", sys.executable)]
    # Absolute, since the runs happen in a scratch directory (not resolved: a venv is known by its path).
    targets = [
        (tag, os.path.abspath(python) if os.sep in python else shutil.which(python) or python)
        for tag, python in targets
    ]
    with tempfile.TemporaryDirectory(prefix="qa-profile-") as tmp:
        work = Path(tmp)
        bot = compile_bot(work)
        for tag, python in targets:
            profile(tag, python, bot, args.games, args.top, work)


if __name__ == "__main__":
    main()
