#!/usr/bin/env python3
"""``perfect``'s search times on a loaded machine, as an arena sees them: from writing ``go`` to reading ``turn``;
with ``--forfeits``, the time forfeits of whole runs of the arena under load, per 10,000 games.

Plays ``--games`` games of ``perfect`` against itself from the standard start at ``go movetime M``, ``--concurrency``
games at a time, each engine its own process over stdio (``python -m quarto_arena.engines.perfect``, started once
per player and reused, ``newgame`` + ``isready`` before each game, as the arena does; with ``--fresh`` started
anew for each game), while ``--burners`` processes
spin on the CPU. Prints, for each interpreter given: every search's time (median, 99th percentile, max), the
engines' first search of a game (max), and the searches over the arena's allowance (movetime + 50 ms margin: a time
forfeit). Nothing here is asserted: the figures are for reading.

To compare with an older version, install it into a virtual environment of its own and name that interpreter:

    git archive REV | tar -x -C /tmp/old && python3 -m venv /tmp/oldvenv && /tmp/oldvenv/bin/pip install /tmp/old
    python benchmarks/loaded.py --python new=.venv/bin/python --python old=/tmp/oldvenv/bin/python

    python benchmarks/loaded.py [--games 40] [--concurrency 2] [--burners 2] [--movetime 100] [--fresh]
                                [--python L=PY ...]

**Forfeits** (``--forfeits``): each engine named by ``--engine`` (a built-in name, or ``starter:LANG``, which writes
and builds that starter with ``quarto-arena new-bot``'s commands) plays ``--games`` games against ``greedy`` under
each ``--tc``, as a user runs them (``quarto-arena play ENGINE greedy --games N --tc TC -j J``, default flags
otherwise), while ``--burners`` processes spin on the CPU. Printed per engine and time control: the games, the time
forfeits of the engine and of ``greedy`` (which barely searches: its forfeits are the machine's and the arena's
delays alone), per 10,000 games, its slowest turn, and the load average while it ran. SPEC §4.5 and the issue's
goal: none for ``perfect`` at any ``st`` of 0.05 or more, ``-j`` up to the cores, two burners on two cores.

    python benchmarks/loaded.py --forfeits [--games 10000] [--tc st=0.05 --tc 2+0.05] [--engine perfect ...]
                                [--concurrency 2] [--burners 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from quarto_arena.arena.options import DEFAULT_MARGIN_MS
from quarto_arena.protocol.notation import parse_turn
from quarto_arena.protocol.rules import Position, Turn, Variant
from quarto_arena.protocol.uqi import Go, NewGame, PositionCommand, format_command

MARGIN_MS = DEFAULT_MARGIN_MS
"""The arena's default time margin."""
BURNER = "while True: pass"


class Engine:
    """One engine process over pipes."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, "-m", "quarto_arena.engines.perfect"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.send("uqi")
        self.wait_for("uqiok")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_for(self, word: str) -> str:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the engine ended while we waited for {word}")
            head = line.split()[0] if line.strip() else ""
            if head == word:
                return line.strip()
            if head == "error":
                raise RuntimeError(f"the engine said: {line.strip()}")

    def new_game(self, variant: Variant) -> None:
        self.send(format_command(NewGame(variant)))
        self.send("isready")
        self.wait_for("readyok")

    def search(self, turns: list[Turn], movetime: int) -> tuple[str, float]:
        """The engine's turn and the seconds from writing ``go`` to reading it."""
        self.send(format_command(PositionCommand(None, tuple(turns))))
        started = time.monotonic()
        self.send(format_command(Go(movetime=movetime)))
        line = self.wait_for("turn")
        return line.split()[1], time.monotonic() - started

    def close(self) -> None:
        self.send("quit")
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Times:
    """Search times, ms."""

    every: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def play(python: str, games: int, movetime: int, fresh: bool, times: Times) -> None:
    """``games`` games between two engine processes, colours alternating (new processes for each game when
    ``fresh``: every game's first searches are then a process's first)."""
    engines: tuple[Engine, ...] = ()
    try:
        for g in range(games):
            if fresh or not engines:
                for e in engines:
                    e.close()
                engines = (Engine(python), Engine(python))
            order = engines if g % 2 == 0 else engines[::-1]
            for e in order:
                e.new_game(Variant())
            position, turns, searched = Position.start(), list[Turn](), set[int]()
            while not position.is_over:
                engine = order[len(turns) % 2]
                token, seconds = engine.search(turns, movetime)
                turn = parse_turn(token)
                with times.lock:
                    times.every.append(seconds * 1000)
                    if id(engine) not in searched:
                        times.first.append(seconds * 1000)
                searched.add(id(engine))
                turns.append(turn)
                position = position.apply(turn)
    finally:
        for e in engines:
            e.close()


def measure(python: str, args: argparse.Namespace) -> Times:
    times = Times()
    share = [len(range(i, args.games, args.concurrency)) for i in range(args.concurrency)]
    workers = [threading.Thread(target=play, args=(python, n, args.movetime, args.fresh, times)) for n in share]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return times


CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]
OPPONENT = "greedy"


def engine_command(spec: str, workdir: Path) -> str:
    """The ENGINE word for ``play``: a built-in name as it is, ``starter:LANG`` written and built in ``workdir``."""
    if not spec.startswith("starter:"):
        return spec
    from quarto_arena.engines.starters import STARTERS, write_starter

    language = spec.split(":", 1)[1]
    directory = workdir / f"starter-{language}"
    if not directory.exists():
        starter = write_starter(language, directory)
        for step in starter.build:
            subprocess.run(step, shell=True, cwd=directory, check=True, capture_output=True, timeout=900)
    starter = STARTERS[language]
    return f"{language}={shlex.join(starter.command(directory, sys.executable))}"


@dataclass(frozen=True, slots=True)
class Forfeits:
    """What one run printed."""

    games: int
    ours: int
    opponents: int
    slowest_ms: int
    load: float


def forfeit_run(engine: str, tc: str, games: int, concurrency: int, out: Path) -> Forfeits:
    """``quarto-arena play ENGINE greedy`` as a user runs it; the time forfeits of each side, from games.jsonl."""
    load_before = os.getloadavg()[0]
    cmd = [*CLI, "play", engine, OPPONENT, "--games", str(games), "--tc", tc, "-j", str(concurrency)]
    done = subprocess.run([*cmd, "--out", str(out), "--force", "-q"], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{shlex.join(cmd)} ended with {done.returncode}: {done.stderr.strip()[-400:]}")
    name = engine.split("=", 1)[0]
    ours = theirs = played = slowest = 0
    for line in (out / "games.jsonl").read_text().splitlines():
        game = json.loads(line)
        played += 1
        for i, (_, ms, _) in enumerate(game["turns"]):  # from the empty board: the first player's turns are even
            if game["first" if i % 2 == 0 else "second"] == name:
                slowest = max(slowest, ms)
        if game["termination"] == "time forfeit":
            loser = game["second"] if game["result"] == "1-0" else game["first"]
            if loser == name:
                ours += 1
            else:
                theirs += 1
    return Forfeits(played, ours, theirs, slowest, (load_before + os.getloadavg()[0]) / 2)


def forfeits(args: argparse.Namespace) -> None:
    """``--forfeits``: whole runs of the arena under load (see the module docstring)."""
    tcs = args.tc or ["st=0.05", "2+0.05"]
    engines = args.engine or ["perfect"]
    workdir = Path(args.out or tempfile.mkdtemp(prefix="quarto-loaded-"))
    workdir.mkdir(parents=True, exist_ok=True)
    commands = {spec: engine_command(spec, workdir) for spec in engines}
    burners = [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(args.burners)]
    try:
        print(
            f"{args.games} games of each engine against {OPPONENT}, -j {args.concurrency}, {args.burners} CPU "
            f"burners, {os.cpu_count()} CPUs; runs in {workdir}",
            flush=True,
        )
        for spec, command in commands.items():
            for tc in tcs:
                label = f"{spec} {tc}"
                run_dir = workdir / label.replace(":", "-").replace(" ", "_").replace("/", "-")
                f = forfeit_run(command, tc, args.games, args.concurrency, run_dir)
                print(
                    f"{label:<28} {f.games:6d} games: forfeits {f.ours:4d} ({f.ours * 10000 / max(f.games, 1):7.1f}"
                    f" per 10,000), {OPPONENT}'s {f.opponents:3d}; slowest turn {f.slowest_ms} ms; load {f.load:.1f}",
                    flush=True,
                )
    finally:
        for b in burners:
            b.kill()
            b.wait()
        if args.out is None:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--forfeits", action="store_true", help="time forfeits of whole arena runs (see above)")
    parser.add_argument("--engine", action="append", default=[], help="--forfeits: NAME or starter:LANG (repeat)")
    parser.add_argument("--tc", action="append", default=[], help="--forfeits: a time control (repeat)")
    parser.add_argument("--out", help="--forfeits: keep the runs' directories here")
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=2, help="games at a time")
    parser.add_argument("--burners", type=int, default=2, help="processes spinning on the CPU meanwhile")
    parser.add_argument("--movetime", type=int, default=100, help="go movetime, ms")
    parser.add_argument("--fresh", action="store_true", help="new engine processes for every game")
    parser.add_argument("--python", action="append", default=[], help="LABEL=INTERPRETER (default: this one)")
    args = parser.parse_args()
    if args.forfeits:
        forfeits(args)
        return
    pythons = [p.split("=", 1) for p in args.python] or [["this", sys.executable]]
    allowance = args.movetime + MARGIN_MS
    burners = [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(args.burners)]
    try:
        print(
            f"{args.games} games of perfect v perfect at go movetime {args.movetime}, {args.concurrency} at a time, "
            f"{args.burners} CPU burners; allowance {allowance} ms"
        )
        for label, python in pythons:
            t = measure(python, args)
            ordered = sorted(t.every)
            p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
            over = sum(ms > allowance for ms in t.every)
            print(
                f"{label:<8} {len(t.every)} searches: median {statistics.median(t.every):6.1f} ms  p99 {p99:6.1f} ms  "
                f"max {max(t.every):6.1f} ms;  first of a game max {max(t.first):6.1f} ms;  over {allowance} ms: {over}"
            )
    finally:
        for b in burners:
            b.kill()
            b.wait()


if __name__ == "__main__":
    main()
