"""The log of a standing service (the bridge's and ``ladder run``'s ``-q`` and ``--log FILE``): routine lines summed
up, the rest shown, a file rotated by size. The setup alone on real files, then a real ladder and a real bridge."""

from __future__ import annotations

import json
import logging
import re
import signal
import subprocess
import sys
from pathlib import Path

from procs import CLI, STEADY_TC, free_port, started, wait_until
from quarto_arena.engines.registry import command
from quarto_arena.protocol.safelog import LOG_FILES, Quiet, service_log

BRIDGE = [sys.executable, "-m", "quarto_arena.protocol.bridge"]


def test_quiet_counts_the_routine_lines_and_says_the_rest(tmp_path: Path) -> None:
    log = tmp_path / "service.log"
    logs = service_log(["test.service"], "%(message)s", quiet=Quiet({"game %d: %s": "games"}), path=str(log))
    try:
        logger = logging.getLogger("test.service")
        for n in range(500):
            logger.info("game %d: %s", n, "1-0")
        logger.info("listening on %s", "tcp://127.0.0.1:1")
        logger.warning("game %d: %s", 7, "a warning is never routine")
    finally:
        logs.close()  # the last summary
    assert log.read_text().splitlines() == [
        "listening on tcp://127.0.0.1:1",
        "game 7: a warning is never routine",
        "in the last 0 min: 500 games",
    ]


def test_a_log_file_is_rotated_by_size(tmp_path: Path) -> None:
    log = tmp_path / "deep" / "service.log"  # its folder is made
    logs = service_log(["test.rotated"], "%(message)s", path=str(log), max_bytes=10_000)
    try:
        for n in range(2_000):
            logging.getLogger("test.rotated").warning("line %05d %s", n, "x" * 40)
    finally:
        logs.close()
    files = sorted(p.name for p in log.parent.iterdir())
    assert files == ["service.log", *(f"service.log.{k}" for k in range(1, LOG_FILES))]
    assert all((log.parent / f).stat().st_size <= 10_000 for f in files)
    assert log.read_text().splitlines()[-1].startswith("line 01999")


def _games_counted(ladder: Path) -> int:
    r = subprocess.run([*CLI, "ladder", "standings", str(ladder), "--format", "json"], capture_output=True, text=True)
    return sum(row["games"] for row in json.loads(r.stdout)) // 2 if r.returncode == 0 else 0


def test_a_quiet_ladder_logs_no_line_per_game(tmp_path: Path) -> None:
    """``ladder run -q --log FILE``: a summary instead of a line per game, in the file; the games are counted."""
    log = tmp_path / "ladder.log"
    argv = [*CLI, "ladder", "run", str(tmp_path / "lad"), "--tc", "st=0.02", "--house", "random", "--house", "greedy"]
    proc = subprocess.Popen([*argv, "-q", "--log", str(log)], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (tmp_path / "lad" / "ladder.db").exists(), timeout=60, proc=proc)
        # The table lists the house engines before their first game: wait for games counted, not for rows.
        wait_until(lambda: _games_counted(tmp_path / "lad") >= 2, timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    text = log.read_text()
    assert not re.search(r"game \d+:", text), text
    stopped = re.search(r"ladder stopped by SIGTERM: ([\d,]+) games counted", err)
    assert stopped, err
    counted = int(stopped.group(1).replace(",", ""))
    assert counted >= 2
    assert re.search(rf"quarto-arena: in the last \d+ min: {counted:,} games counted", text), text
    assert not re.search(r"game \d+:", err)


def test_a_quiet_bridge_logs_no_line_per_session(tmp_path: Path) -> None:
    """The bridge's ``-q --log FILE``: no line per session or engine process, a summary of them when it stops."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    log, out = tmp_path / "bridge.log", tmp_path / "run"
    bot = [*BRIDGE, "--connect", endpoint, "--name", "b", "-q", "--log", str(log), "--", *command("random")]
    with started(bot, tmp_path / "bridge.stderr") as bridge:
        r = subprocess.run(
            [
                *CLI,
                "play",
                "remote:b",
                "greedy",
                "--games",
                "4",
                "--tc",
                STEADY_TC,  # a time forfeit would start a second engine process
                "--listen",
                endpoint,
                "--out",
                str(out),
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert bridge.wait(30) == 0
    text = log.read_text()
    assert "session begins" not in text and "session ends" not in text and "(pid " not in text, text
    summary = re.search(r"bridge: in the last \d+ min: (.*)", text)
    assert summary is not None, text
    counts = {kind: int(n) for n, kind in (item.split(" ", 1) for item in summary.group(1).split(", "))}
    # The arena's check of the bot, then the four games; one process for them all.
    assert counts["sessions begun"] == counts["sessions ended"] == 5, counts
    assert counts["engine processes started"] == 1, counts
    assert (tmp_path / "bridge.stderr").read_text() == ""
