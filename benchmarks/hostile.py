"""What hostile engines and a killed arena cost: the figures behind the hardening, measured with real processes.

    python benchmarks/hostile.py [--seconds 4]

Prints:

- the arena's peak resident memory (VmHWM) while an engine floods it for ``--seconds`` with info, error, garbage,
  option or standard-error lines (engines/testing/flood_lines.py), one fresh arena process per flood, next to a
  quiet game's peak in the same run;
- how long the arena takes to report a dead ZeroMQ endpoint (a closed port, an unknown host, a missing ipc path);
- how many processes an arena leaves behind when it is stopped by SIGTERM, SIGHUP or SIGKILL in the middle of a
  tournament (engines that setsid() a child included).

Figures only, no assertions (the tests assert the limits).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]

# A child arena: one game of ENGINE against greedy (standard errors logged in LOG_DIR), then its own peak memory (kB).
ARENA = """
import asyncio, sys
from pathlib import Path
from quarto_arena.arena.engine import Deadlines, EngineConfig
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.run import play_match
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.engines.registry import command
log_dir, argv = Path(sys.argv[1]), sys.argv[2:]
records = asyncio.run(play_match(
    EngineConfig("hostile", command=tuple(argv)), EngineConfig("greedy", command=tuple(command("greedy"))), 1,
    GameSpec(time_control=TimeControl.parse("st=10")), deadlines=Deadlines(startup=20, safety=30),
    log_dir=log_dir, require_start=False))
status = Path("/proc/self/status").read_text()
print(records[0].termination.value, next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmHWM:")))
"""


def peak(argv: list[str]) -> tuple[str, int]:
    with tempfile.TemporaryDirectory() as logs:
        out = subprocess.run([sys.executable, "-c", ARENA, logs, *argv], capture_output=True, text=True, timeout=120)
    termination, kb = out.stdout.rsplit(maxsplit=1)
    return termination, int(kb)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def descendants_left(marker: str) -> int:
    """Live processes (zombies included) whose command line names ``marker``."""
    n = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                n += 1
        except OSError:
            continue
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", default="4", help="how long each flood lasts (default 4)")
    args = parser.parse_args()
    flood = [sys.executable, "-m", "quarto_arena.engines.testing.flood_lines"]
    print(f"peak arena memory (VmHWM) in one game against a flood of {args.seconds} s:")
    termination, quiet = peak([sys.executable, "-m", "quarto_arena.engines.greedy"])
    print(f"  {'no flood (greedy)':<22} {quiet / 1024:6.1f} MB  ({termination})")
    for kind in ("info", "error", "garbage", "option", "stderr"):
        termination, kb = peak([*flood, kind, args.seconds])
        print(f"  {kind + ' lines':<22} {kb / 1024:6.1f} MB  ({termination})")

    print("time to report a dead endpoint (quarto-arena play greedy ENDPOINT, exit status 3 expected):")
    with tempfile.TemporaryDirectory() as tmp:
        for endpoint in (f"tcp://127.0.0.1:{free_port()}", "tcp://no-such-host.invalid:5555", f"ipc://{tmp}/none"):
            t0 = time.monotonic()
            r = subprocess.run(
                [*CLI, "play", "greedy", f"x={endpoint}", "--out", f"{tmp}/{time.monotonic_ns()}"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            print(f"  {endpoint:<36} {time.monotonic() - t0:5.2f} s, exit {r.returncode}")

    print("processes left behind by an arena stopped mid-tournament (engines that setsid() a child included):")
    with tempfile.TemporaryDirectory() as tmp:
        bot = Path(tmp) / "escaper.py"
        bot.write_text(
            "import os, subprocess, sys, time\n"
            "from quarto_arena.protocol.bot import run\n"
            f"subprocess.Popen(['sleep', '1000', '{tmp}'], start_new_session=True)\n"
            "def choose(position, ctx):\n"
            "    time.sleep(0.02)\n"
            "    return position.legal_turns()[-1]\n"
            "run(choose, [])\n"
        )
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
            out = Path(tmp) / signum.name
            engines = [f"e{i}={sys.executable} {bot}" for i in range(3)]
            proc = subprocess.Popen(
                [*CLI, "tournament", *engines, "--games", "40", "--tc", "st=1", "-j", "2", "--out", str(out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            time.sleep(3)
            running = descendants_left(tmp)  # engines and the children they hid in sessions of their own
            os.kill(proc.pid, signum)
            proc.wait(30)
            time.sleep(1.5)
            print(
                f"  {signum.name:<8} exit {proc.returncode:>4}, processes before: {running}, "
                f"left 1.5 s after: {descendants_left(tmp)}"
            )


if __name__ == "__main__":
    main()
