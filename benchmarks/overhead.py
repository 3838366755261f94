"""The arena's own cost per turn, next to the cost of one ``isready`` round trip to the same engine.

Over stdio: two instances of the C bot (it answers every ``go`` at once, so a turn costs the arena's work plus one
round trip) play games with the real referee. Over ZeroMQ: two Python SDK greedy bots served on loopback. Prints
figures only (no assertions); run it as::

    python benchmarks/overhead.py [--games N] [--pings N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from quarto_arena.arena.engine import EngineConfig, EngineSession
from quarto_arena.arena.referee import GameSpec, play_game
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.engines.registry import command

ROOT = Path(__file__).resolve().parent.parent
TC = TimeControl.parse("st=10")


async def measure(a: EngineConfig, b: EngineConfig, games: int, pings: int) -> tuple[float, float, int]:
    """(µs per ping, µs per turn, turns) for two engines."""
    sessions = [EngineSession(a), EngineSession(b)]
    try:
        for s in sessions:
            await s.start()
        for _ in range(50):  # warm up
            await sessions[0].ping()
        ping_s = [await sessions[0].ping() for _ in range(pings)]
        turns = 0
        elapsed = 0.0
        for g in range(games):
            first, second = sessions if g % 2 == 0 else sessions[::-1]
            # play_game sends newgame+isready to both engines; the same two exchanges, timed here on their own,
            # are subtracted so the figure is per turn only.
            t0 = time.perf_counter()
            await first.new_game(GameSpec().variant)
            await second.new_game(GameSpec().variant)
            newgame = time.perf_counter() - t0
            t0 = time.perf_counter()
            record = await play_game(first, second, GameSpec(time_control=TC, game_id=g))
            elapsed += time.perf_counter() - t0 - newgame
            turns += len(record.turns)
            if record.termination.is_failure:
                raise SystemExit(f"game {g} failed: {record.detail}")
        return statistics.median(ping_s) * 1e6, elapsed / turns * 1e6, turns
    finally:
        for s in sessions:
            await s.quit()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def report(label: str, ping_us: float, turn_us: float, turns: int) -> None:
    ratio = turn_us / ping_us
    print(f"{label}: ping {ping_us:8.1f} us   turn {turn_us:8.1f} us   ratio {ratio:5.2f}x   ({turns} turns)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--pings", type=int, default=2000)
    args = parser.parse_args()
    cc = shutil.which("cc")
    if cc is None:
        raise SystemExit("no C compiler (cc)")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "quarto_bot"
        subprocess.run([cc, "-O2", "-o", str(exe), str(ROOT / "engines" / "c" / "quarto_bot.c")], check=True)
        c1 = EngineConfig("c1", command=(str(exe),))
        c2 = EngineConfig("c2", command=(str(exe),))
        report("stdio, C bot       ", *asyncio.run(measure(c1, c2, args.games, args.pings)))

    endpoints = [f"tcp://127.0.0.1:{free_port()}" for _ in range(2)]
    servers = [subprocess.Popen([*command("greedy"), "--listen", e], start_new_session=True) for e in endpoints]
    try:
        z1 = EngineConfig("z1", endpoint=endpoints[0])
        z2 = EngineConfig("z2", endpoint=endpoints[1])
        label = "zmq, Python greedy "
        report(label, *asyncio.run(measure(z1, z2, max(args.games // 4, 10), max(args.pings // 4, 100))))
    finally:
        for p in servers:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    print(f"python {sys.version.split()[0]}; per turn = referee + one position/go round trip (engine search included)")


if __name__ == "__main__":
    main()
