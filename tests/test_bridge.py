"""Every pair of the Python, C and JavaScript bots plays over ZeroMQ: Python serves itself with --listen, the C
and JS bots are served by the stdio bridge. Real processes, real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from procs import wait_listening
from quarto_arena.arena.engine import Deadlines
from quarto_arena.arena.match import engine_config, play_match
from quarto_arena.arena.records import Termination
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.engines.registry import command

ENGINES = Path(__file__).resolve().parent.parent / "engines"
FAST = Deadlines(startup=10, ready=5, newgame=5, quit=1, safety=10)
QUICK = TimeControl.parse("st=2")
BRIDGE = [sys.executable, "-m", "quarto_arena.protocol.bridge"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def stdio_bots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    bots: dict[str, list[str]] = {}
    if shutil.which("cc"):
        exe = tmp_path_factory.mktemp("cbot") / "quarto_bot"
        subprocess.run(["cc", "-O2", "-o", str(exe), str(ENGINES / "c" / "quarto_bot.c")], check=True)
        bots["c"] = [str(exe)]
    if node := shutil.which("node"):
        bots["js"] = [node, str(ENGINES / "js" / "quarto_bot.js")]
    return bots


@contextlib.contextmanager
def served(kind: str, stdio_bots: dict[str, list[str]]) -> Iterator[str]:
    """The bot ``kind`` serving UQI on a fresh loopback endpoint; its whole process group is killed afterwards."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    if kind == "python":
        argv = [*command("greedy"), "--listen", endpoint]
    else:
        if kind not in stdio_bots:
            pytest.skip(f"no toolchain for the {kind} bot here")
        argv = [*BRIDGE, "--listen", endpoint, "--", *stdio_bots[kind]]
    proc = subprocess.Popen(argv, start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        wait_listening(endpoint, proc)
        yield endpoint
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize(("a", "b"), [("python", "c"), ("python", "js"), ("c", "js"), ("c", "c")])
def test_pairs_play_full_games_over_zeromq(stdio_bots: dict[str, list[str]], a: str, b: str) -> None:
    with served(a, stdio_bots) as ea, served(b, stdio_bots) as eb:
        first, second = engine_config(f"{a}-zmq={ea}"), engine_config(f"{b}-zmq-2={eb}")
        records = asyncio.run(play_match(first, second, 2, GameSpec(time_control=QUICK), deadlines=FAST))
    assert [(r.first, r.second) for r in records] == [(first.name, second.name), (second.name, first.name)]
    for r in records:
        assert r.termination is Termination.NORMAL, r.detail
        assert len(r.turns) >= 5  # a Quarto game needs at least four placements after the first gift


def test_bridged_engine_that_exits_is_a_disconnect(tmp_path: Path) -> None:
    """The bridge closes its socket when the engine dies, so the arena records a disconnect, not a stall."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    crash = [sys.executable, "-m", "quarto_arena.engines.testing.crash_on_go"]
    proc = subprocess.Popen(
        [*BRIDGE, "--listen", endpoint, "--", *crash], start_new_session=True, stderr=subprocess.DEVNULL
    )
    try:
        wait_listening(endpoint, proc)
        bad, good = engine_config(f"crasher={endpoint}"), engine_config("greedy")
        records = asyncio.run(play_match(bad, good, 2, GameSpec(time_control=QUICK), deadlines=FAST))
        assert [r.termination for r in records] == [Termination.DISCONNECT, Termination.DISCONNECT]
        assert all(r.loser == "crasher" for r in records)
        assert proc.poll() is None  # the bridge serves on
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_bad_endpoint_and_missing_engine_exit_2() -> None:
    out = subprocess.run([*BRIDGE, "--listen", "tcp://0.0.0.0:1", "--", "true"], capture_output=True, text=True)
    assert out.returncode == 2 and "not a loopback address" in out.stderr
    port = free_port()
    out = subprocess.run(
        [*BRIDGE, "--listen", f"tcp://127.0.0.1:{port}", "--", "/nonexistent/bot"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2 and "cannot start '/nonexistent/bot'" in out.stderr
