"""The arena's own helper processes (a process pool's workers) end with it, even when it is killed by SIGKILL: a
pool's worker holds its task queue's writing end itself, and would otherwise wait on it for ever. The ladder's refit
process is tested in tests/test_ladder.py; here, the workers of ``analyse -j 2``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from procs import CLI, cli, group_members, present, wait_until


def test_analyse_killed_by_sigkill_leaves_no_worker_behind(tmp_path: Path) -> None:
    played = cli("play", "random", "random", "--games", "4", "--tc", "st=0.05", "--out", str(tmp_path / "m"), "-q")
    assert played.returncode == 0, played.stderr
    games = tmp_path / "games.pgn"
    games.write_text("\n".join([(tmp_path / "m" / "games.pgn").read_text()] * 100))  # minutes of work for two
    proc = subprocess.Popen(
        [*CLI, "analyse", str(games), "-j", "2", "--out", str(tmp_path / "a")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: len(group_members(proc.pid)) >= 2)
        running = group_members(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the command alone, as a user's kill -9 (not its group)
        proc.wait()
        wait_until(lambda: not present(running), timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
