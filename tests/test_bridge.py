"""Every pair of the Python, C and JavaScript bots plays over ZeroMQ: Python serves itself with --listen, the C
and JS bots are served by the stdio bridge. Real processes, real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from procs import STEADY_TC, free_port, tied, wait_listening, wait_until
from quarto_arena.arena.engine import Deadlines, EngineConfig, EngineSession, EngineTerminated
from quarto_arena.arena.records import Termination
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.roster import engine_config
from quarto_arena.arena.run import play_match
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.transport import Transcript
from quarto_arena.engines.registry import command
from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.uqi import Go, PositionCommand

ENGINES = Path(__file__).resolve().parent.parent / "engines"
FAST = Deadlines(startup=10, ready=5, newgame=5, quit=1, safety=10)
QUICK = TimeControl.parse("st=2")
BRIDGE = [sys.executable, "-m", "quarto_arena.protocol.bridge"]


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
    proc = subprocess.Popen(tied(argv), start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        wait_listening(endpoint, proc)
        yield endpoint
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
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
        tied([*BRIDGE, "--listen", endpoint, "--", *crash]), start_new_session=True, stderr=subprocess.DEVNULL
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


# --- sessions that really end (SPEC §3.3) ------------------------------------------------------------------------


@contextlib.contextmanager
def bridged(argv: list[str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``argv`` served by the bridge on a fresh loopback endpoint; the bridge's group is killed afterwards, and the
    kernel kills the bridge if this process dies first (:func:`procs.tied`)."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        tied([*BRIDGE, "--listen", endpoint, "--", *argv]), start_new_session=True, stderr=subprocess.DEVNULL
    )
    try:
        wait_listening(endpoint, proc)
        yield endpoint, proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _living_children(pid: int) -> list[int]:
    """The children of ``pid`` that have not ended (a zombie has ended: init reaps it)."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids if _living(int(k))]


def _living(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_bridge_takes_its_engine_along() -> None:
    """A bridge ended by SIGKILL runs no clean-up and closes no session. Its engine here ignores end of input and
    SIGTERM, so only the kernel's parent-death signal ends it: it must not serve on as an orphan."""
    stubborn = [sys.executable, "-m", "quarto_arena.engines.testing.ignores_quit"]
    with bridged(stubborn) as (_, proc):
        engines: list[int] = []
        wait_until(lambda: engines.extend(_living_children(proc.pid)) or engines, proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        try:
            wait_until(lambda: not _living(engines[0]), timeout=20)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(engines[0], signal.SIGKILL)  # when the test fails, the orphan it found


@pytest.mark.slow
def test_a_bridged_engine_that_hangs_once_loses_one_game_only(tmp_path: Path) -> None:
    hang = [sys.executable, "-m", "quarto_arena.engines.testing.hang_once", str(tmp_path / "hung")]
    with bridged(hang) as (endpoint, proc):
        hanger, good = engine_config(f"hanger={endpoint}"), engine_config("greedy")
        # The hang loses on time at any clock; at STEADY_TC no other game can (both engines answer at once).
        records = asyncio.run(
            play_match(hanger, good, 4, GameSpec(time_control=TimeControl.parse(STEADY_TC)), deadlines=FAST)
        )
        assert proc.poll() is None
    # The hung session ends with the forfeit; the bridge starts a clean engine for the next session.
    assert [r.termination for r in records] == [Termination.TIME_FORFEIT] + [Termination.NORMAL] * 3


def test_no_stale_line_reaches_the_next_session(tmp_path: Path) -> None:
    """An arena killed in the middle of a flooding search: the next arena's handshake sees only handshake lines."""
    flood = [sys.executable, "-m", "quarto_arena.engines.testing.flood_lines", "info", "30"]
    with bridged(flood) as (endpoint, _):
        first = subprocess.Popen(
            tied([sys.executable, "-c", KILLED_MID_SEARCH, endpoint]),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert first.stdout is not None
            assert first.stdout.readline().strip() == b"searching"
            time.sleep(0.3)  # info lines are flowing
        finally:
            first.kill()  # also when it never started its search: it would wait an hour
            first.communicate()

        transcript = Transcript(tmp_path / "transcript")
        second = EngineSession(EngineConfig("second", endpoint=endpoint), deadlines=FAST, transcript=transcript)

        async def handshake() -> None:
            await second.start()
            await second.quit()

        asyncio.run(handshake())
        transcript.close()
    # Lines of the old session may reach a connection made while the server switches sessions; that connection
    # is given up and the session starts on the next one, which sees only its own handshake.
    text = transcript.path.read_text()
    last = text[text.rindex("# connecting to") :]
    received = [line.split(" < ", 1)[1] for line in last.splitlines() if " < " in line]
    assert received and all(line.split()[0] in ("id", "option", "uqiok") for line in received), received[:5]


# An arena that connects, starts a search and waits to be killed (SIGKILL: no quit is ever sent).
KILLED_MID_SEARCH = """
import asyncio, sys
from quarto_arena.arena.transport import ZmqTransport

async def main() -> None:
    t = await ZmqTransport.start("first", sys.argv[1])
    t.send_lines(["uqi 1"])
    while not (await t.read_line()).startswith("uqiok"):
        pass
    t.send_lines(["newgame shapes standard attributes color,shape,height,fill claims auto", "position startpos",
                  "go movetime 60000"])
    await t.read_line()
    print("searching", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.serial
@pytest.mark.parametrize(
    "endpoint", ["tcp://127.0.0.1:{port}", "tcp://no-such-host.invalid:5555", "ipc:///nonexistent/dir/bot.sock"]
)
def test_a_dead_endpoint_is_reported_at_once(endpoint: str) -> None:
    endpoint = endpoint.format(port=free_port())
    t0 = time.monotonic()
    with pytest.raises(EngineTerminated, match=f"cannot connect to {re.escape(endpoint)}"):
        asyncio.run(EngineSession(EngineConfig("dead", endpoint=endpoint), deadlines=FAST).start())
    assert time.monotonic() - t0 < 2.0


@pytest.mark.parametrize(
    ("frames", "why"),
    [
        ([b"turn 7", b"and more"], "a message of several frames"),
        ([b"turn 7\ninfo depth 1"], "a frame holding a line break"),
        ([b"turn " + b"7" * 10_000], "line longer than 4096 bytes"),
    ],
)
def test_a_bad_frame_is_a_malformed_reply(frames: list[bytes], why: str) -> None:
    """A server that answers go with a multipart message, a frame holding a newline, or an oversized frame."""
    import zmq

    endpoint = f"tcp://127.0.0.1:{free_port()}"
    ctx = zmq.Context()
    server = ctx.socket(zmq.DEALER)
    server.bind(endpoint)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            if not server.poll(50):
                continue
            line = server.recv().decode()
            if line.startswith("uqi"):
                server.send_multipart([b"id name Bad"])
                server.send(b"uqiok 1")
            elif line == "isready":
                server.send(b"readyok")
            elif line.startswith("go"):
                server.send_multipart(frames)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def main() -> tuple[Termination | None, str]:
        s = EngineSession(EngineConfig("bad", endpoint=endpoint), deadlines=FAST)
        await s.start()
        await s.new_game(parse_variant())
        out = await s.search(PositionCommand(None), Go(movetime=1000), 2.0)
        await s.kill()
        return out.termination, out.detail

    try:
        termination, detail = asyncio.run(main())
    finally:
        stop.set()
        thread.join()
        server.close(linger=0)
        ctx.term()
    assert termination is Termination.MALFORMED_REPLY
    assert why in detail
