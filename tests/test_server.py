"""Bots that connect in (SPEC §3.4): the arena serves on loopback with real key files; bots connect through the
bridge, the SDK, or as a hostile client written here. Real processes, real sockets, real journals."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zmq
import zmq.auth
from procs import CLI, STEADY_TC, cli, free_port, started, wait_listening, wait_until
from quarto_arena.arena.journal import JOURNAL_NAME, read_journal
from quarto_arena.arena.pgn import read_games
from quarto_arena.arena.server import new_key_pair
from quarto_arena.engines.registry import command
from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import Position
from quarto_arena.protocol.uqi import Go, NewGame, PositionCommand, parse_command

BRIDGE = [sys.executable, "-m", "quarto_arena.protocol.bridge"]
# An SDK bot that thinks a while over every turn, so that games last; while the file HOLD exists it also holds
# its turn (and says so by creating HOLD.seen), so that a test can act in the middle of a search.
SLOW_BOT = """
import os, sys, time
from quarto_arena.protocol.bot import run

delay, hold = float(sys.argv[1]), sys.argv[2]

def choose(position, ctx):
    if os.path.exists(hold):
        open(hold + ".seen", "a").close()
        while os.path.exists(hold) and not ctx.should_stop():
            time.sleep(0.01)
    time.sleep(delay)
    return position.legal_turns()[0]

run(choose, sys.argv[3:])
"""


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    """The arena's pair and three bots' pairs (as ``quarto-arena keys new`` makes them, tested below)."""
    directory = tmp_path / "keys"
    for name in ("arena", "alice", "bob", "mallory"):
        new_key_pair(directory, name)
    return directory


@pytest.fixture
def endpoint() -> str:
    return f"tcp://127.0.0.1:{free_port()}"


def identity(keys: Path, name: str, server: str = "arena") -> list[str]:
    """The flags that connect as ``name`` with its own key."""
    return ["--name", name, "--key", str(keys / f"{name}.key_secret"), "--server-key", str(keys / f"{server}.key")]


def serving(endpoint: str, keys: Path, out: Path, *more: str) -> list[str]:
    """The arena's options: where bots connect, with which keys, and the run directory."""
    return ["--listen", endpoint, "--keys", str(keys), "--wait", "60", "--out", str(out), *more]


def bridge(endpoint: str, flags: list[str], engine: list[str]) -> list[str]:
    return [*BRIDGE, "--connect", endpoint, *flags, "--", *engine]


def slow_bot(tmp_path: Path, seconds: float) -> list[str]:
    """SLOW_BOT's command line; it holds its turns while ``tmp_path / "hold"`` exists."""
    script = tmp_path / "slow_bot.py"
    script.write_text(SLOW_BOT)
    return [sys.executable, str(script), str(seconds), str(tmp_path / "hold")]


def records(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]


def journal_games(out: Path) -> int:
    path = out / JOURNAL_NAME
    return len(read_journal(path).records) if path.exists() else 0


# --- keys ----------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_keys_new_writes_a_zmq_auth_pair_and_never_overwrites_one(tmp_path: Path) -> None:
    directory = tmp_path / "k"
    r = cli("keys", "new", "alice", "--dir", str(directory))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(directory / "alice.key"), str(directory / "alice.key_secret")]
    public, none = zmq.auth.load_certificate(directory / "alice.key")
    same, secret = zmq.auth.load_certificate(directory / "alice.key_secret")
    assert none is None and secret is not None and public == same and len(public) == 40
    assert (directory / "alice.key_secret").stat().st_mode & 0o077 == 0  # the secret is its owner's alone
    again = cli("keys", "new", "alice", "--dir", str(directory))
    assert again.returncode == 2 and "exists already" in again.stderr
    assert zmq.auth.load_certificate(directory / "alice.key")[0] == public
    bad = cli("keys", "new", "../evil", "--dir", str(directory))
    assert bad.returncode == 2 and "not a valid name" in bad.stderr


# --- a tournament with remote bots, and the clients that are turned away -------------------------------------------


@pytest.mark.slow
def test_a_tournament_with_two_remote_bots_and_a_local_engine(tmp_path: Path, keys: Path, endpoint: str) -> None:
    """alice: the bridge in front of a built-in engine (2 slots); bob: an SDK bot; greedy: local. Meanwhile a wrong
    key, no key, another bot's name and a wrong server key all knock; each is refused and the tournament is not
    touched."""
    out = tmp_path / "t"
    arena = subprocess.Popen(
        [
            *CLI,
            "tournament",
            "remote:alice",
            "remote:bob",
            "greedy",
            "--tc",
            STEADY_TC,
            "-j",
            "2",
            *serving(endpoint, keys, out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    intruders = {
        "unknown key": bridge(endpoint, identity(keys, "mallory"), command("greedy")),
        "no key": bridge(endpoint, ["--name", "alice"], command("greedy")),
        # bob's own key, saying it is alice
        "another's name": [*command("random"), "--connect", endpoint, "--name", "alice", *identity(keys, "bob")[2:]],
        "wrong server key": bridge(endpoint, identity(keys, "alice", server="bob"), command("greedy")),
    }
    try:
        # They knock while the arena waits for its bots (all at once), then the bots come and the games are played.
        knocking = {
            what: subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for what, argv in intruders.items()
        }
        try:
            refused = {what: (proc.wait(60), proc.communicate()[1]) for what, proc in knocking.items()}
        finally:
            for proc in knocking.values():  # one that got in would serve on
                proc.kill()
                proc.wait()
        with (
            started(bridge(endpoint, [*identity(keys, "alice"), "--slots", "2"], command("greedy")), tmp_path / "a"),
            started([*command("random"), "--connect", endpoint, *identity(keys, "bob")], tmp_path / "b"),
        ):
            stdout, stderr = arena.communicate(timeout=120)
    finally:
        arena.kill()
        arena.wait()
    assert arena.returncode == 0, stderr
    for what, (status, err) in refused.items():
        assert status == 3, (what, err)
    assert "does not accept our key" in refused["unknown key"][1]
    assert "it serves with keys (give --key and --server-key)" in refused["no key"][1]
    assert "refused alice: it says it is 'alice', but it holds the key of 'bob'" in refused["another's name"][1]
    assert "is --server-key the arena's public key (its arena.key)" in refused["wrong server key"][1]
    # The arena logged every refusal, and the connections of the real bots.
    assert "unknown key" in stderr and "but it holds the key of 'bob'" in stderr
    # A client without keys or with a wrong server key fails the handshake; which side notices first varies.
    assert len(re.findall("refused a connection", stderr)) >= 4
    assert re.search(r"server: alice \(127\.0\.0\.1:\d+\) connected with 2 slots", stderr)
    games = records(out)
    assert len(games) == 6 and all(g["termination"] == "normal" for g in games), games
    sources = {e["source"] for g in games for e in g["engines"]}  # type: ignore[attr-defined]
    assert sources == {"remote:alice", "remote:bob", " ".join(command("greedy"))}
    tags = {g.tags["WhiteCommand"] for g in read_games(out / "games.pgn")}
    assert {"remote:alice", "remote:bob"} <= tags
    assert "alice" in stdout and "bob" in stdout  # the standings


@pytest.mark.slow
def test_a_run_plays_while_a_flood_of_half_open_connections_is_on(tmp_path: Path, keys: Path, endpoint: str) -> None:
    """Issue 33: the attacker already holds far more half-open connections than the arena lets wait for their
    hello, from the bots' own address and from others, refilling each one closed, when alice and bob connect with
    their keys: both get in, every game is played to its end, the flood is told in at most a line a second, and no
    traceback.

    At st=1: the flood's own CPU and the connections it makes the arena handle slow every relayed turn (an instant
    bot's charged time, median and 90th percentile, went from 0-2 and 1-4 ms to 4-17 and 13-43 ms at load 8), and at
    st=0.1 with another CI run beside it (load 9-12) a game was lost on time. The subject here is admission."""
    out = tmp_path / "r"
    port = endpoint.rsplit(":", 1)[1]
    arena = subprocess.Popen(
        [*CLI, "play", "remote:alice", "remote:bob", "--games", "4", "--tc", "st=1", *serving(endpoint, keys, out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    sources = ["127.0.0.1=600", *(f"127.0.0.{i}=100" for i in range(2, 6))]
    # The flood begins once the arena listens: before, its connections are refused, and the bots could be let in and
    # play the four games before any was made (0 lines about it, in CI at load).
    wait_listening(endpoint, arena)
    began = time.monotonic()
    flood = subprocess.Popen(
        [sys.executable, "-m", "quarto_arena.engines.testing.half_open", f"127.0.0.1:{port}", "300", *sources],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert flood.stderr is not None and flood.stderr.readline() == "holding\n"
        with (
            started(bridge(endpoint, identity(keys, "alice"), command("greedy")), tmp_path / "a"),
            started([*command("random"), "--connect", endpoint, *identity(keys, "bob")], tmp_path / "b"),
        ):
            _, stderr = arena.communicate(timeout=240)
        lasted = time.monotonic() - began
    finally:
        flood.terminate()
        flood.wait()
        arena.kill()
        arena.wait()
    assert arena.returncode == 0, stderr[-3000:]
    assert [g["termination"] for g in records(out)] == ["normal"] * 4
    # The first closure is told at once, alone ('closed a connection from HOST: why'); those after it in a line a
    # second ('closed N connections that had not said hello'). Four games of instant bots may be over in less than that
    # second: then the first line is all there is (counting only the second form, the test failed so 4 runs in 4).
    told = [
        line for line in stderr.splitlines() if re.search(r"server: closed (a connection from|\d+ connections)", line)
    ]
    assert 1 <= len(told) <= lasted + 1, (len(told), lasted)  # the flood was on, and told a line a second at most
    assert "Traceback" not in stderr and "RecursionError" not in stderr


def test_with_stay_failed_handshakes_are_told_and_waited_out(keys: Path, endpoint: str, tmp_path: Path) -> None:
    """A bridge with --stay whose handshakes fail (here a program that hangs up holds the port; on a busy ladder, the
    full queue of connections not yet past hello) says why once and tries again, and plays once an arena answers.
    It gave up for good after three failures, even with --stay: 158 of 1,000 bots joining a ladder at once."""
    port = int(endpoint.rsplit(":", 1)[1])
    other = socket.create_server(("127.0.0.1", port))

    def hang_up() -> None:
        while True:
            try:
                conn, _ = other.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    log, out = tmp_path / "bridge.log", tmp_path / "r"
    with started(bridge(endpoint, [*identity(keys, "alice"), "--stay"], command("greedy")), log) as bot:
        try:
            wait_until(lambda: "trying again (--stay)" in log.read_text(), 120, proc=bot)
            assert bot.poll() is None, log.read_text()
            assert f"nothing answered the handshake: another server may be listening on {endpoint}" in log.read_text()
        finally:
            other.close()
        r = cli("play", "remote:alice", "greedy", *serving(endpoint, keys, out), "--games", "2", "--tc", STEADY_TC)
        assert r.returncode == 0, r.stderr
        assert [g["termination"] for g in records(out)] == ["normal"] * 2
        assert bot.poll() is None  # --stay: it waits for the next run


def test_a_bridge_told_when_another_server_holds_the_port_rather_than_its_keys(keys: Path, endpoint: str) -> None:
    """Issue 36: with something else on the arena's port, the bridge says so; the keys are blamed only where a
    ZeroMQ server with keys answered (the test above, a wrong --server-key)."""
    port = int(endpoint.rsplit(":", 1)[1])
    web = socket.create_server(("127.0.0.1", port))  # another program: answers in HTTP, then hangs up

    def serve_http() -> None:
        while True:
            try:
                conn, _ = web.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve_http, daemon=True).start()
    try:
        r = subprocess.run(
            bridge(endpoint, identity(keys, "alice"), command("greedy")), capture_output=True, text=True, timeout=120
        )
    finally:
        web.close()
    assert r.returncode == 3, r.stderr
    assert f"nothing answered the handshake: another server may be listening on {endpoint}" in r.stderr
    assert "server-key" not in r.stderr
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    context: zmq.Context[Any] = zmq.Context()
    plain = context.socket(zmq.ROUTER)  # another ZeroMQ program, without keys
    plain.bind(endpoint)
    try:
        r = subprocess.run(
            bridge(endpoint, identity(keys, "alice"), command("greedy")), capture_output=True, text=True, timeout=120
        )
    finally:
        plain.close(linger=0)
        context.term()
    assert r.returncode == 3, r.stderr
    assert "the server there serves plain ZeroMQ, without keys: another server may be listening on" in r.stderr


@pytest.mark.slow
def test_a_bot_killed_mid_game_loses_it_by_disconnect_and_plays_on_when_back(
    tmp_path: Path, keys: Path, endpoint: str
) -> None:
    out = tmp_path / "m"
    engine = slow_bot(tmp_path, 0.15)
    alice = bridge(endpoint, identity(keys, "alice"), engine)
    arena = subprocess.Popen(
        [*CLI, "play", "remote:alice", "greedy", "--games", "4", "--tc", "st=5", *serving(endpoint, keys, out, "-q")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log, hold = tmp_path / "alice.log", tmp_path / "hold"
    hold.touch()
    try:
        with started(alice, log) as first:
            wait_until((tmp_path / "hold.seen").exists)  # alice is thinking over her first turn of game 1
            os.killpg(first.pid, signal.SIGKILL)
        hold.unlink()
        with started(alice, log):
            _, stderr = arena.communicate(timeout=120)
    finally:
        arena.kill()
        arena.wait()
    assert arena.returncode == 0, stderr
    games = records(out)
    assert [g["termination"] for g in games] == ["disconnect", "normal", "normal", "normal"], games
    assert games[0]["result"] == "0-1" and "alice" in str(games[0]["detail"])
    assert "disconnected" in str(games[0]["exit_info"])


@pytest.mark.slow
def test_a_frozen_bot_is_noticed_by_heartbeats_not_by_its_clock(tmp_path: Path, keys: Path, endpoint: str) -> None:
    """SIGSTOP: the TCP connection stays up, only the heartbeats stop. With 30 s a turn, a time forfeit would
    need 30 s; the heartbeats end the game as a disconnect long before."""
    out = tmp_path / "m"
    alice = bridge(endpoint, identity(keys, "alice"), slow_bot(tmp_path, 0.15))
    arena = subprocess.Popen(
        [*CLI, "play", "remote:alice", "greedy", "--games", "2", "--tc", "st=30", *serving(endpoint, keys, out, "-q")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log, hold = tmp_path / "alice.log", tmp_path / "hold"
    hold.touch()
    try:
        with started(alice, log) as proc:
            wait_until((tmp_path / "hold.seen").exists)  # alice is thinking over her first turn of game 1
            os.killpg(proc.pid, signal.SIGSTOP)
            wait_until(lambda: journal_games(out) >= 1)
            hold.unlink()
            os.killpg(proc.pid, signal.SIGCONT)  # it finds its connection gone, connects again, and plays game 2
            _, stderr = arena.communicate(timeout=120)
    finally:
        arena.kill()
        arena.wait()
    assert arena.returncode == 0, stderr
    games = records(out)
    assert [g["termination"] for g in games] == ["disconnect", "normal"], games


def session_overlap(log: Path) -> int:
    """The most sessions the bridge ran at once, from its log."""
    active: set[str] = set()
    most = 0
    for line in log.read_text().splitlines():
        if m := re.search(r"slot (\d+): session (begins|ends)", line):
            (active.add if m.group(2) == "begins" else active.discard)(m.group(1))
            most = max(most, len(active))
    return most


@pytest.mark.slow
@pytest.mark.parametrize("slots", [2, 1])
def test_slots_let_a_bot_play_games_at_once(tmp_path: Path, keys: Path, endpoint: str, slots: int) -> None:
    """With --slots 2 at -j 2 a bot plays two games at once; with one slot its games wait for it, one at a time."""
    out = tmp_path / "g"
    alice = bridge(endpoint, [*identity(keys, "alice"), "--slots", str(slots)], slow_bot(tmp_path, 0.05))
    log = tmp_path / "alice.log"
    with started(alice, log):
        r = cli(
            "tournament",
            "remote:alice",
            "greedy",
            "random",
            "--gauntlet",
            "--games",
            "2",
            "-j",
            "2",
            "--tc",
            "st=2",
            "--listen",
            endpoint,
            "--keys",
            str(keys),
            "--out",
            str(out),
        )
    assert r.returncode == 0, r.stderr
    assert [g["termination"] for g in records(out)] == ["normal"] * 4
    assert session_overlap(log) == slots


# --- a hostile client ------------------------------------------------------------------------------------------------


class Hostile(threading.Thread):
    """A client holding mallory's valid key that plays its sessions correctly, except that at the first ``go`` of
    session N it does ``acts[N]``: ``junk`` (a message of three frames), ``huge`` (a 64 MiB frame), ``long`` (a
    line of 5000 bytes), ``flood`` (up to 100,000 lines of 4 kB at once), or nothing special. Cut, it connects again."""

    def __init__(self, endpoint: str, keys: Path, acts: dict[int, str]) -> None:
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.public, self.secret = zmq.auth.load_certificate(keys / "mallory.key_secret")
        self.server = zmq.auth.load_certificate(keys / "arena.key")[0]
        self.acts = acts
        # Made before the games: the bot's clock runs while it sends, and the test is not about how fast it can.
        self.huge = b"x" * (64 << 20) if "huge" in acts.values() else b""
        self.sessions = 0
        self.sent = 0
        self.connections = 0
        self.stop = threading.Event()
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()

    def connect(self) -> tuple[zmq.Socket[bytes], zmq.Socket[bytes]]:
        sock = self.context.socket(zmq.DEALER)
        sock.linger = 0
        sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = self.public, self.secret, self.server
        # A name of its own for each connection: the default (from the descriptor) may still be bound by the last
        # connection's monitor, which libzmq reaps after close returns.
        self.connections += 1
        monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED, f"inproc://hostile-monitor-{self.connections}")
        sock.connect(self.endpoint)
        sock.send_multipart([b"", b"hello version 1 slots 1 name mallory"])
        return sock, monitor

    def run(self) -> None:
        sock, monitor = self.connect()
        position: Position | None = None
        variant = parse_variant()
        gone = False
        while not self.stop.is_set():
            if monitor.poll(0):
                sock.close()
                monitor.close()
                sock, monitor = self.connect()
            if not sock.poll(50):
                continue
            channel, raw = sock.recv_multipart()
            line = raw.decode()
            if channel == b"":
                if line.startswith("begin"):
                    self.sessions += 1
                    gone = False
                continue
            cmd = parse_command(line) if not line.startswith(("uqi", "isready", "quit")) else None
            if line.startswith("uqi"):
                sock.send_multipart([channel, b"id name Mallory"])
                sock.send_multipart([channel, b"uqiok 1"])
            elif line == "isready":
                sock.send_multipart([channel, b"readyok"])
            elif line == "quit":
                sock.send_multipart([b"", b"ready " + channel])
            elif isinstance(cmd, NewGame):
                variant = cmd.variant
            elif isinstance(cmd, PositionCommand):
                position = cmd.position(variant)
            elif isinstance(cmd, Go) and position is not None and not gone:
                act = self.acts.get(self.sessions, "")
                gone = act != ""
                self.misbehave(sock, channel, act, monitor)
                if not gone:
                    sock.send_multipart([channel, f"turn {position.legal_turns()[0]}".encode()])
        sock.close()
        monitor.close()
        self.context.term()

    def misbehave(self, sock: zmq.Socket[bytes], channel: bytes, act: str, monitor: zmq.Socket[bytes]) -> None:
        """Does ``act``; ``monitor`` tells that the arena has closed the connection (its event is left for the loop
        to read)."""
        if act == "junk":
            sock.send_multipart([channel, b"turn a1", b"and a third frame"])
        elif act == "huge":
            sock.send_multipart([channel, self.huge])
            self.sent += len(self.huge)
        elif act == "long":
            sock.send_multipart([channel, b"info string " + b"x" * 5000])
        elif act == "flood":
            line = b"info string " + b"f" * 4000
            sock.sndtimeo = 2000  # until the arena cuts the connection (sending then blocks: Again)
            for n in range(100_000):
                # Until the arena cuts it: libzmq's DEALER connects again by itself and would take the rest of the
                # 400 MB into a connection that never said hello. At load 9 that outlasted the arena's 60 s wait for
                # mallory's next game (absent, not the flood's subject).
                if n % 64 == 0 and monitor.poll(0):
                    break
                try:
                    sock.send_multipart([channel, line])
                except zmq.Again:
                    break
                self.sent += len(line)


def peak_memory(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.slow
def test_junk_huge_frames_and_floods_forfeit_the_game_and_memory_stays_bounded(
    tmp_path: Path, keys: Path, endpoint: str
) -> None:
    out = tmp_path / "m"
    acts = {3: "junk", 4: "huge", 5: "long", 6: "flood"}  # session 1 is the check before the games, 2 is game 1
    hostile = Hostile(endpoint, keys, acts)
    # st=30: the huge frame's game races the bot's own work against its clock, CurveZMQ encrypting 64 MiB (some
    # 0.3 s of processor time) before its frame's header reaches the arena and the connection drops. At st=5 a loaded
    # machine once stretched that past the clock, and the game ended as a time forfeit, not a disconnect. The other
    # games end at once but for a flood the arena reads too slowly to cut (below).
    argv = [*CLI, "play", "remote:mallory", "greedy", "--games", "6", "--tc", "st=30"]
    arena = subprocess.Popen(
        [*argv, *serving(endpoint, keys, out, "-q")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    hostile.start()
    try:
        wait_until(lambda: journal_games(out) >= 1)
        before = peak_memory(arena.pid)
        wait_until(lambda: journal_games(out) >= 5, timeout=150, proc=arena)
        after = peak_memory(arena.pid)
        _, stderr = arena.communicate(timeout=120)
    finally:
        hostile.stop.set()
        hostile.join(10)
        arena.kill()
        arena.wait()
    assert arena.returncode == 0, stderr
    games = records(out)
    terminations = [g["termination"] for g in games]
    # The flood (game 5) is cut by the rate limit when the arena reads faster than the limit; on a loaded machine it
    # reads slower, ZeroMQ's high-water marks hold the rest back in the bot, and the flooder, which never sends a
    # turn, loses on time instead (st=30). Either way it loses, and its memory bound is checked below.
    flood = games[4]["termination"]
    assert flood in ("disconnect", "time forfeit"), (flood, games[4]["detail"])
    expected = ["normal", "disconnect", "disconnect", "malformed reply", flood, "normal"]
    assert terminations == expected, [(g["termination"], g["detail"]) for g in games]
    for g in games[1:5]:
        assert "mallory" in str(g["detail"]) and (g["result"] == "0-1") == (g["first"] == "mallory")
    assert "a message of 2 frames" not in stderr  # two is right; three frames is the junk
    assert "a message of 3 frames" in stderr
    if flood == "disconnect":  # the cut names the limit (a cut after a forfeit by the clock may name it too)
        assert "lines per second" in stderr, stderr[-2000:]
    # The 64 MiB frame and the flood up to its cut came at the arena (some 100 MB; how much of the flood depends on
    # when the cut comes: 97 MB once at load 7); its peak memory hardly moved.
    assert hostile.sent > len(hostile.huge) + (1 << 20)
    assert after - before < 40 << 20, (before, after)


# --- resume, absence, usage ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_resumed_run_waits_for_its_remote_bots_again(tmp_path: Path, keys: Path, endpoint: str) -> None:
    """Stopped by SIGTERM mid-run and resumed with --resume DIR and a new --wait: the journal knows where the bots
    connect and with which keys, and what is not given again stays as it was."""
    out = tmp_path / "t"
    alice = bridge(endpoint, identity(keys, "alice"), slow_bot(tmp_path, 0.02))
    args = ["tournament", "remote:alice", "greedy", "random", "--games", "4", *serving(endpoint, keys, out, "-q")]
    with started(alice, tmp_path / "alice.log"):
        first = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: journal_games(out) >= 3)
            first.send_signal(signal.SIGTERM)
            _, stderr = first.communicate(timeout=60)
        finally:
            first.kill()
            first.wait()
        assert first.returncode == 143, stderr
        done = journal_games(out)
        assert done < 12
        r = cli("tournament", "--resume", str(out), "--wait", "30")
    assert r.returncode == 0, r.stderr
    assert f"listening on {endpoint} (CurveZMQ)" in r.stderr and "waiting up to 30 s for alice" in r.stderr
    assert sorted(read_journal(out / JOURNAL_NAME).records) == list(range(1, 13))
    assert len(list(read_games(out / "games.pgn"))) == 12
    assert all(g["termination"] == "normal" for g in records(out))


@pytest.mark.slow
def test_a_run_without_remote_bots_takes_no_listen_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "m"
    assert cli("play", "random", "greedy", "--games", "2", "--tc", "st=0.1", "--out", str(out)).returncode == 0
    r = cli("play", "--resume", str(out), "--listen", "tcp://127.0.0.1:5555")
    assert r.returncode == 2 and "this run has none" in r.stderr, r.stderr


def test_an_interrupt_does_not_wait_for_the_bots(tmp_path: Path, keys: Path, endpoint: str) -> None:
    """Ctrl-C while the run waits up to 60 s for its remote bots stops it at once, as during the games."""
    out = tmp_path / "m"
    arena = subprocess.Popen(
        [*CLI, "play", "remote:alice", "greedy", *serving(endpoint, keys, out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert arena.stderr is not None
    try:
        while "waiting up to 60 s for alice" not in arena.stderr.readline():
            assert arena.poll() is None
        arena.send_signal(signal.SIGINT)
        _, stderr = arena.communicate(timeout=20)  # not 60
    finally:
        arena.kill()
        arena.wait()
    assert arena.returncode == 130, stderr
    assert f"interrupted by SIGINT after 0 games; continue with: quarto-arena play --resume {out}" in stderr


def test_an_absent_bot_stops_the_run_before_any_game_with_exit_3(tmp_path: Path, keys: Path, endpoint: str) -> None:
    r = cli("play", "remote:alice", "greedy", *serving(endpoint, keys, tmp_path / "m", "--wait", "1"))
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().endswith(f"not connected to {endpoint} within 1 s: remote:alice")
    assert journal_games(tmp_path / "m") == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["remote:alice", "greedy"], "remote:alice connects in: give --listen"),
        (["greedy", "random", "--listen", "{endpoint}"], "--listen serves remote:NAME engines, and none is given"),
        (["remote:alice", "greedy", "--listen", "tcp://0.0.0.0:5555"], "serving other machines takes --keys DIR"),
        (["remote:alice", "greedy", "--keys", "{keys}"], "--keys goes with --listen"),
        (["remote:ghost", "greedy", "--listen", "{endpoint}", "--keys", "{keys}"], "no key for remote:ghost"),
        (["remote:arena", "greedy", "--listen", "{endpoint}", "--keys", "{keys}"], "the arena's own key"),
        (["remote:alice", "greedy", "--listen", "{endpoint}", "--keys", "/nonexistent"], "no such directory"),
        (["remote:bad/name", "greedy", "--listen", "{endpoint}"], "is not a valid name"),
        (["remote:alice", "remote:alice", "--listen", "{endpoint}"], "given twice"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, keys: Path, endpoint: str, args: list[str], message: str) -> None:
    words = [a.format(endpoint=endpoint, keys=keys) for a in args]
    r = cli("play", *words, "--out", str(tmp_path / "m"))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.slow
def test_a_remote_bot_can_be_checked_and_plain_zeromq_serves_loopback(tmp_path: Path, endpoint: str) -> None:
    """``check remote:NAME`` without keys: plain ZeroMQ on 127.0.0.1, an SDK bot that connects in."""
    bot = [*command("greedy"), "--connect", endpoint, "--name", "greedy-bot"]
    with started(bot, tmp_path / "bot.log"):
        r = cli("check", "remote:greedy-bot", "--listen", endpoint, "--wait", "30")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "greedy-bot complies with UQI 1" in r.stdout
    assert "skipped" in r.stdout  # the steps only a process can take (\r\n, end of input)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*BRIDGE, "--", "true"], "give --listen ENDPOINT or --connect ENDPOINT"),
        ([*BRIDGE, "--connect", "tcp://127.0.0.1:1", "--", "true"], "--connect needs --name"),
        ([*BRIDGE, "--connect", "tcp://127.0.0.1:1", "--name", "a", "--key", "k", "--", "true"], "give both --key"),
        ([*BRIDGE, "--connect", "127.0.0.1:1", "--name", "a", "--", "true"], "expected tcp://HOST:PORT"),
        ([*BRIDGE, "--connect", "tcp://127.0.0.1:1", "--name", "a", "--", "/no/such/bot"], "cannot start"),
        ([*command("greedy"), "--connect", "tcp://127.0.0.1:1", "--listen", "5555", "--name", "a"], "not both"),
        ([*command("greedy"), "--name", "a"], "go with --connect"),
        ([*command("greedy"), "--slots", "2"], "go with --connect"),
        ([*BRIDGE, "--listen", "tcp://127.0.0.1:1", "--slots", "2", "--", "true"], "go with --connect"),
        (
            [*command("greedy"), "--connect", "tcp://1.2.3.4:1", "--name", "a", "--key", "/k", "--server-key", "/s"],
            "not a readable key file",
        ),
    ],
)
def test_client_usage_errors_exit_2(argv: list[str], message: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr


def test_a_bot_that_claims_another_bots_name_is_refused_and_the_real_one_plays(
    tmp_path: Path, keys: Path, endpoint: str
) -> None:
    """bob's own key, saying it is alice: refused before it can take alice's games (exit 3, naming both)."""
    out = tmp_path / "m"
    arena = subprocess.Popen(
        [*CLI, "play", "remote:alice", "remote:bob", "--tc", "st=0.05", *serving(endpoint, keys, out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        impostor = [*command("random"), "--connect", endpoint, "--name", "alice", *identity(keys, "bob")[2:]]
        # An impostor let in would serve alice's games until killed: the timeout is then the failure.
        refused = subprocess.run(impostor, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 3, refused.stderr
        assert "refused alice: it says it is 'alice', but it holds the key of 'bob'" in refused.stderr
        with (
            started(bridge(endpoint, identity(keys, "alice"), command("greedy")), tmp_path / "a.log"),
            started([*command("random"), "--connect", endpoint, *identity(keys, "bob")], tmp_path / "b.log"),
        ):
            _, stderr = arena.communicate(timeout=120)
    finally:
        arena.kill()
        arena.wait()
    assert arena.returncode == 0, stderr
    assert "but it holds the key of 'bob'" in stderr
    assert {e["source"] for g in records(out) for e in g["engines"]} == {"remote:alice", "remote:bob"}  # type: ignore[attr-defined]
