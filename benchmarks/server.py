"""Bots that connect in: what a remote bot costs per turn, and how many one arena holds.

    python benchmarks/server.py [--rounds N] [--idle N] [--at-once N] [--games N] [--skip cost,idle,at-once]

1. Cost per turn. The C example bot (it answers every ``go`` at once, so a turn costs the arena's work plus the
   round trip) plays itself with the real referee, over stdio and as a remote bot on loopback with CurveZMQ (the
   bridge, ``--connect``, in front of the same binary; one process per player either way), in alternating
   rounds; then the same with the SDK's greedy bot (stdio against ``--connect`` itself). A session lasts one game,
   on the slot's warm engine, as in a run; only the games' own turns are timed. Printed: wall time per
   turn each way, the difference (the cost of connecting in), and the ratio, from the median round. And in the
   same rounds, the floor of any remote turn in this design: one round trip of a two-frame message to another
   process over CurveZMQ on loopback, pyzmq at both ends, echoed at once (no arena, no bridge, no bot), as a
   ratio to the C bot's stdio turn too.
2. Idle connections. An arena process serving ``--idle`` bots (200) with CurveZMQ; as many raw clients connect,
   say hello and stay idle. Printed: the arena's resident memory before and after (per connection), and its CPU
   while they idle (ZMTP heartbeats every second each), next to the same arena with no connection.
3. Games at once. ``--at-once`` games (50) at the same time, ``--games`` (200) in all, between two remote C bots
   (two bridges with that many slots each) and, in the same run, between two local C bots. Printed: turns per
   second each way, and the ratio.

Figures only, no assertions. The machine may be shared and noisy: compare the figures of one run with each other.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cbuild import C_BOT, compile_c

ROOT = Path(__file__).resolve().parent.parent
BRIDGE = [sys.executable, "-m", "quarto_arena.protocol.bridge"]


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def compile_c_bot(directory: Path) -> str:
    return str(compile_c(C_BOT, directory))


def make_keys(directory: Path, names: Sequence[str]) -> None:
    from quarto_arena.arena.server import new_key_pair

    for name in ("arena", *names):
        new_key_pair(directory, name)


@contextlib.contextmanager
def connected(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """A bot process that connects in; its whole group is killed afterwards."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def identity(keys: Path, name: str) -> list[str]:
    return ["--name", name, "--key", str(keys / f"{name}.key_secret"), "--server-key", str(keys / "arena.key")]


def rss_kb(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    """User + system CPU of a process so far, s."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- 1. cost per turn ---------------------------------------------------------------------------------------------


async def games_per_turn(first: Any, second: Any, games: int) -> float:
    """Wall seconds per turn of ``games`` games between two started sessions (colours alternate)."""
    from quarto_arena.arena.referee import GameSpec, play_game
    from quarto_arena.arena.timecontrol import TimeControl

    spec = GameSpec(time_control=TimeControl.parse("st=10"))
    turns, wall = 0, 0.0
    for g in range(games):
        a, b = (first, second) if g % 2 == 0 else (second, first)
        for s in (a, b):
            if not s.alive:
                await s.start()
        t0 = time.perf_counter()
        record = await play_game(a, b, spec)
        wall += time.perf_counter() - t0
        turns += len(record.turns)
        for s in (a, b):  # a remote session lasts one game, as in a run (on the slot's warm engine)
            if s.config.remote is not None:
                await s.quit()
    return wall / turns


# The far end of the transport's floor: a DEALER, CurveZMQ server, that sends each message back at once.
ECHO = """
import sys, zmq
socket = zmq.Context().socket(zmq.DEALER)
socket.curve_server = True
socket.curve_publickey, socket.curve_secretkey = sys.argv[2].encode(), sys.argv[3].encode()
socket.bind(sys.argv[1])
while True:
    message = socket.recv_multipart()
    if message[1] == b"stop":
        break
    socket.send_multipart(message)
"""
TRIPS = 2000


def transport_round_trip() -> float:
    """Wall seconds of one round trip of a two-frame message (a channel and a ``go`` line, as the arena sends a
    slot's line) between this process and another over CurveZMQ on loopback, pyzmq at both ends, echoed at once:
    the least a remote bot's turn can cost in this design (the arena's line out, the bot's line back), whatever
    the arena, the bridge and the bot do. The median of ``TRIPS`` after as many untimed."""
    import zmq

    endpoint = free_endpoint()
    public, secret = zmq.curve_keypair()
    echo = subprocess.Popen([sys.executable, "-c", ECHO, endpoint, public.decode(), secret.decode()])
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.curve_serverkey = public
    socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
    socket.connect(endpoint)
    try:
        message = [b"1", b"go time 10000 inc 0 otime 10000 oinc 0"]
        times = []
        for trip in range(2 * TRIPS):
            t0 = time.perf_counter()
            socket.send_multipart(message)
            socket.recv_multipart()
            if trip >= TRIPS:
                times.append(time.perf_counter() - t0)
        socket.send_multipart([b"1", b"stop"])
        echo.wait(10)
    finally:
        socket.close(linger=0)
        if echo.poll() is None:
            echo.kill()
            echo.wait()
    return statistics.median(times)


async def overhead(rounds: int, games: int, keys: Path, c_bot: str) -> None:
    from quarto_arena.arena.engine import EngineConfig, EngineSession
    from quarto_arena.arena.server import Server, load_server_keys
    from quarto_arena.engines.registry import command

    endpoint = free_endpoint()
    names = ["cbot1", "cbot2", "greedy1", "greedy2"]
    server = Server(endpoint, names, keys=load_server_keys(keys, names))
    await server.start()
    # One process per player each way, as over stdio: only the way the lines travel differs.
    bots = {
        "C bot (bridge)": (
            [c_bot],
            [[*BRIDGE, "--connect", endpoint, *identity(keys, n), "--", c_bot] for n in names[:2]],
        ),
        "SDK greedy (direct)": (
            command("greedy"),
            [[*command("greedy"), "--connect", endpoint, *identity(keys, n)] for n in names[2:]],
        ),
    }
    floor_rounds: list[float] = []
    c_stdio = float("nan")
    print("1. cost per turn: the same bot playing itself over stdio, and connected in (CurveZMQ, loopback)")
    print(f"   {'bot':<20} {'stdio us/turn':>13} {'remote us/turn':>14} {'difference':>11} {'ratio':>6}")
    try:
        for label, (argv, clients) in bots.items():
            c_bot_row = label.startswith("C bot")  # the floor is measured in its rounds, as a ratio to its stdio turn
            with connected(clients[0]), connected(clients[1]):
                local = [EngineSession(EngineConfig(f"l{i}", command=tuple(argv))) for i in (1, 2)]
                remote = [
                    EngineSession(
                        EngineConfig(f"r{i}", remote=client[client.index("--name") + 1]), connector=server.lease
                    )
                    for i, client in enumerate(clients)
                ]
                stdio_rounds, remote_rounds = [], []
                for _ in range(rounds):
                    stdio_rounds.append(await games_per_turn(*local, games))
                    remote_rounds.append(await games_per_turn(*remote, games))
                    if c_bot_row:
                        floor_rounds.append(transport_round_trip())
                for s in (*local, *remote):
                    await s.quit()
            a, b = statistics.median(stdio_rounds) * 1e6, statistics.median(remote_rounds) * 1e6
            print(f"   {label:<20} {a:>13.0f} {b:>14.0f} {b - a:>+11.0f} {b / a:>6.2f}")
            if c_bot_row:
                c_stdio = a
    finally:
        await server.close()
    floor = statistics.median(floor_rounds) * 1e6
    print(f"   {'round trip alone':<20} {'':>13} {floor:>14.0f} {'':>11} {floor / c_stdio:>6.2f}")
    print(f"   median of {rounds} rounds of {games} games each way, interleaved; one process per player; st=10")
    print(
        "   round trip alone: a two-frame message to another process and back over CurveZMQ, echoed at once (pyzmq"
        f" at both ends; median of {TRIPS:,} a round), the floor of a remote turn in this design; its ratio is to"
        " the C bot's stdio turn"
    )


# --- 2. idle connections ------------------------------------------------------------------------------------------


async def serve_idle(endpoint: str, keys: Path, n: int) -> None:
    """The arena side of part 2 (a child process): serve n bots, say when all are connected, serve on."""
    from quarto_arena.arena.server import Server, load_server_keys

    names = [f"b{i:03d}" for i in range(n)]
    server = Server(endpoint, names, keys=load_server_keys(keys, names))
    await server.start()
    print("bound", flush=True)
    while await server.wait_for(3600):
        pass
    print("connected", flush=True)
    await asyncio.sleep(3600)


def idle(n: int, seconds: float, keys: Path) -> None:
    import zmq
    import zmq.auth

    endpoint = free_endpoint()
    arena = subprocess.Popen(
        [sys.executable, __file__, "--serve-idle", endpoint, str(keys), str(n)], stdout=subprocess.PIPE, text=True
    )
    context: zmq.Context[Any] = zmq.Context()
    sockets = []
    try:
        assert arena.stdout is not None
        assert arena.stdout.readline().strip() == "bound"
        time.sleep(1.0)
        before_kb = rss_kb(arena.pid)
        c0 = cpu_s(arena.pid)
        time.sleep(seconds)
        empty_cpu = (cpu_s(arena.pid) - c0) / seconds
        server_key = zmq.auth.load_certificate(keys / "arena.key")[0]
        for i in range(n):
            public, secret = zmq.auth.load_certificate(keys / f"b{i:03d}.key_secret")
            sock = context.socket(zmq.DEALER)
            sock.linger = 0
            sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = public, secret, server_key
            sock.setsockopt(zmq.HEARTBEAT_IVL, 1000)
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3000)
            sock.connect(endpoint)
            sock.send_multipart([b"", f"hello version 1 slots 1 name b{i:03d}".encode()])
            sockets.append(sock)
        assert arena.stdout.readline().strip() == "connected"
        time.sleep(2.0)
        after_kb = rss_kb(arena.pid)
        c0 = cpu_s(arena.pid)
        time.sleep(seconds)
        busy_cpu = (cpu_s(arena.pid) - c0) / seconds
    finally:
        for sock in sockets:
            sock.close()
        context.term()
        arena.kill()
        arena.wait()
    print(f"2. {n} idle bot connections (CurveZMQ, heartbeats every second each), the arena process:")
    print(f"   resident memory: {before_kb / 1024:.1f} MB serving none, {after_kb / 1024:.1f} MB with {n} connected")
    print(f"   ({(after_kb - before_kb) / n:.0f} KB per connection)")
    print(
        f"   CPU while idle: {100 * empty_cpu:.2f}% of a core with none, {100 * busy_cpu:.2f}% with {n}"
        f" (over {seconds:g} s each)"
    )


# --- 3. games at once ---------------------------------------------------------------------------------------------


async def at_once(n: int, games: int, keys: Path, c_bot: str) -> None:
    from quarto_arena.arena.engine import EngineConfig
    from quarto_arena.arena.run import Run, RunKind, RunSpec, ServerSpec
    from quarto_arena.arena.schedule import OpeningBook
    from quarto_arena.arena.server import server_player
    from quarto_arena.arena.settings import GameSettings
    from quarto_arena.arena.timecontrol import TimeControl

    endpoint = free_endpoint()
    common: dict[str, Any] = {
        "games": games,
        "concurrency": n,
        "game": GameSettings(TimeControl.parse("st=10"), book=OpeningBook(random_turns=2)),
    }
    local = RunSpec(
        RunKind.MATCH, (EngineConfig("c1", command=(c_bot,)), EngineConfig("c2", command=(c_bot,))), **common
    )
    remote = RunSpec(
        RunKind.MATCH,
        (EngineConfig("r1", remote="r1"), EngineConfig("r2", remote="r2")),
        server=ServerSpec(endpoint, str(keys), 60.0),
        **common,
    )

    async def turns_per_s(spec: RunSpec, bridges: Sequence[int] = ()) -> tuple[float, float, float]:
        """Turns per second, and CPU per turn (us) of the arena process and of the bridges' processes."""
        run = Run.in_memory(spec)
        player = server_player(run) if spec.server is not None else None
        t0, c0, b0 = time.perf_counter(), time.process_time(), sum(cpu_s(pid) for pid in bridges)
        outcome = await run.run(player=player)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        relayed = sum(cpu_s(pid) for pid in bridges) - b0
        bad = [r.termination.value for r in outcome.records if r.termination.value != "normal"]
        assert not bad and len(outcome.records) == games, bad
        turns = sum(len(r.turns) for r in outcome.records)
        return turns / wall, 1e6 * cpu / turns, 1e6 * relayed / turns

    bridges = [
        [*BRIDGE, "--connect", endpoint, *identity(keys, f"r{i}"), "--slots", str(n), "--", c_bot] for i in (1, 2)
    ]
    with connected(bridges[0]) as b1, connected(bridges[1]) as b2:
        local_rate, local_cpu, _ = await turns_per_s(local)
        remote_rate, remote_cpu, bridge_cpu = await turns_per_s(remote, (b1.pid, b2.pid))
    print(f"3. {n} games at once, {games} in all, C bot against C bot (remote: two bridges of {n} slots each):")
    print(
        f"   {local_rate:.0f} turns/s over stdio, {remote_rate:.0f} turns/s connected in"
        f" ({remote_rate / local_rate:.2f}x)"
    )
    print(
        f"   the arena's CPU per turn: {local_cpu:.0f} us over stdio, {remote_cpu:.0f} us connected in;"
        f" the bridges' (Python, relaying every line): {bridge_cpu:.0f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of part 1 (default 5)")
    parser.add_argument("--games", type=int, default=4, help="games per round and way in part 1 (default 4)")
    parser.add_argument("--idle", type=int, default=200, help="idle connections in part 2 (default 200)")
    parser.add_argument("--seconds", type=float, default=10.0, help="CPU measured over this long in part 2")
    parser.add_argument("--at-once", type=int, default=50, help="games at once in part 3 (default 50)")
    parser.add_argument("--total", type=int, default=200, help="games in all in part 3 (default 200)")
    parser.add_argument("--skip", default="", help="parts to skip: cost, idle, at-once (comma-separated)")
    parser.add_argument("--serve-idle", nargs=3, help=argparse.SUPPRESS)  # the arena process of part 2
    args = parser.parse_args()
    if args.serve_idle is not None:
        endpoint, keys, n = args.serve_idle
        asyncio.run(serve_idle(endpoint, Path(keys), int(n)))
        return
    with tempfile.TemporaryDirectory(prefix="quarto-server-bench-") as tmp:
        directory = Path(tmp)
        c_bot = compile_c_bot(directory)
        keys = directory / "keys"
        make_keys(keys, ["cbot1", "cbot2", "greedy1", "greedy2", "r1", "r2", *(f"b{i:03d}" for i in range(args.idle))])
        skip = set(args.skip.split(","))
        if "cost" not in skip:
            asyncio.run(overhead(args.rounds, args.games, keys, c_bot))
        if "idle" not in skip:
            idle(args.idle, args.seconds, keys)
        if "at-once" not in skip:
            asyncio.run(at_once(args.at_once, args.total, keys, c_bot))
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs; loopback")


if __name__ == "__main__":
    main()
