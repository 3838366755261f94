"""What a flood of half-open connections costs the clocks of the bots that connect in, and whose CPU it is.

    python benchmarks/flood_clock.py [--games 40] [--rounds 2]

Two remote bots (the SDK's ``random``, instant, each connected in with CurveZMQ) play ``--games`` games at ``st=1``
with the arena's ``play --listen``, with and without a flood (``quarto_arena.engines.testing.half_open``: 600
connections from 127.0.0.1 and 100 from each of 127.0.0.2-5 that never say hello, each reopened as soon as the arena
closes it: the flood of tests/test_server.py). On Linux with two CPUs or more the arena runs alone on CPU 0, and the
bots and the flood on CPU 1, the flood at ``nice 19``: the bots' own turns then hardly wait for the attacker's CPU,
so what their clocks are charged beyond their quiet figure is the arena's own work on the flood (its event loop and
libzmq's I/O thread). Printed per run: the time each remote bot was charged per turn (median, 90th and 99th
percentile, most; the referee's record of each turn, in ms), the games' terminations, and the CPU the arena's
threads used. Figures only; the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from server import free_endpoint, identity

CLI = [sys.executable, "-c", "from quarto_arena.arena.console import main; main()"]
SOURCES = ["127.0.0.1=600", *(f"127.0.0.{i}=100" for i in range(2, 6))]


def can_pin() -> bool:
    """A second CPU to pin to, and taskset to pin with."""
    return len(os.sched_getaffinity(0)) >= 2 and shutil.which("taskset") is not None


def pinned(cpu: int, argv: list[str], nice: int = 0) -> list[str]:
    """``argv`` on one CPU (where :func:`can_pin`), at a niceness."""
    if not can_pin():
        return ["nice", "-n", str(nice), *argv] if nice else argv
    return [*(["nice", "-n", str(nice)] if nice else []), "taskset", "-c", str(cpu), *argv]


def threads_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of each thread of ``pid``, by thread name (summed over threads of one name)."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def run(directory: Path, games: int, flood: bool) -> str:
    keys = directory / "keys"
    for name in ("arena", "alice", "bob"):
        subprocess.run([*CLI, "keys", "new", name, "--dir", str(keys)], check=True, capture_output=True)
    endpoint = free_endpoint()
    port = int(endpoint.rsplit(":", 1)[1])
    out = directory / "out"
    arena = subprocess.Popen(
        pinned(
            0,
            [
                *CLI,
                "play",
                "remote:alice",
                "remote:bob",
                "--games",
                str(games),
                "--tc",
                "st=1",
                "--listen",
                endpoint,
                "--keys",
                str(keys),
                "--wait",
                "60",
                "--out",
                str(out),
                "-q",
            ],
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    others: list[subprocess.Popen[Any]] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the arena listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        if flood:
            attacker = subprocess.Popen(
                pinned(
                    1,
                    [
                        sys.executable,
                        "-m",
                        "quarto_arena.engines.testing.half_open",
                        f"127.0.0.1:{port}",
                        "600",
                        *SOURCES,
                    ],
                    nice=19,
                ),
                stderr=subprocess.PIPE,
                text=True,
            )
            others.append(attacker)
            assert attacker.stderr is not None
            if attacker.stderr.readline() != "holding\n":
                sys.exit("the flood did not get its connections held")
        for name in ("alice", "bob"):
            others.append(
                subprocess.Popen(
                    pinned(
                        1,
                        [
                            sys.executable,
                            "-m",
                            "quarto_arena.engines.random",
                            "--connect",
                            endpoint,
                            *identity(keys, name),
                        ],
                    ),
                    stderr=subprocess.DEVNULL,
                )
            )
        used: dict[str, float] = {}
        began = time.monotonic()
        while arena.poll() is None:
            for name, seconds in threads_cpu(arena.pid).items():
                used[name] = max(used.get(name, 0.0), seconds)
            time.sleep(0.2)
        lasted = time.monotonic() - began
        if arena.returncode != 0:
            sys.exit(f"the arena exited with {arena.returncode}: no figure")
    finally:
        for proc in others:
            proc.terminate()
        for proc in others:
            proc.wait()
        if arena.poll() is None:
            arena.kill()
            arena.wait()
    charged: list[int] = []
    ends: dict[str, int] = {}
    for line in (out / "games.jsonl").read_text().splitlines():
        game = json.loads(line)
        ends[game["termination"]] = ends.get(game["termination"], 0) + 1
        charged += [turn[1] for turn in game["turns"][len(game["opening"]) :]]  # not the opening's
    charged.sort()
    q = statistics.quantiles(charged, n=100)
    threads = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in sorted(used.items(), key=lambda kv: -kv[1]))
    return (
        f"{'flood' if flood else 'quiet'}: {len(charged)} turns charged ms median {statistics.median(charged):g},"
        f" p90 {q[89]:g}, p99 {q[98]:g}, most {charged[-1]}; games {ends} in {lasted:.1f} s; the arena's threads:"
        f" {threads}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=40, help="games per run (default 40)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of a quiet run and a flooded one (default 2)")
    args = parser.parse_args()
    where = "the arena on CPU 0, the bots and the flood (nice 19) on CPU 1" if can_pin() else "not pinned"
    print(f"{os.cpu_count()} CPUs; {where}; load average {os.getloadavg()[0]:.1f}")
    for round_ in range(args.rounds):
        for flood in (False, True):
            with tempfile.TemporaryDirectory(prefix="quarto-flood-clock-") as tmp:
                print(f"  round {round_ + 1} {run(Path(tmp), args.games, flood)}", flush=True)


if __name__ == "__main__":
    main()
