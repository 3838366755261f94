#!/usr/bin/env python3
"""``perfect``'s search times on a loaded machine, as an arena sees them: from writing ``go`` to reading ``turn``.

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
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=2, help="games at a time")
    parser.add_argument("--burners", type=int, default=2, help="processes spinning on the CPU meanwhile")
    parser.add_argument("--movetime", type=int, default=100, help="go movetime, ms")
    parser.add_argument("--fresh", action="store_true", help="new engine processes for every game")
    parser.add_argument("--python", action="append", default=[], help="LABEL=INTERPRETER (default: this one)")
    args = parser.parse_args()
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
