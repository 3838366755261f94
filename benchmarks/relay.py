"""Where a turn of a bot that connects in goes: the bridge's relay profiled, next to the same games over stdio.

    python benchmarks/relay.py [--games 20] [--rounds 3] [--bridge-path DIR]... [--top 12] [--no-profile]

The C example bot plays itself with the real referee, over stdio and connected in with CurveZMQ on loopback
through a bridge (``--connect``, two slots: one per player), in interleaved rounds. The bridge runs under
cProfile; once the games are over it gets SIGTERM (it finishes and exits), and the functions that took most of its
own time are printed, with the arena's (this process's) during the remote games.

``--floor`` adds, in the same rounds, the least a Python process with pyzmq can do in the bridge's place: one loop
that polls the socket (through its descriptor, one poll(2) a wake-up) and the engines' pipes and copies each line
across (no slot states, no limits, no log): its CPU per relayed turn is the floor of this design. The CPU printed is
the scheduler's count (in ns), with the share of libzmq's I/O thread (TCP, ZMTP, CurveZMQ), which no Python change
reaches.

``--bridge-path DIR`` adds a bridge with DIR first on its PYTHONPATH, in the same rounds: an older
``quarto_arena/protocol`` unpacked there (``git archive COMMIT protocol | tar -x -C DIR/quarto_arena``), for a
before and after measured under the same load.
Figures only; the machine may be shared: compare the figures of one run with each other.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbuild import C_BOT, compile_c

if TYPE_CHECKING:
    import cProfile
    import pstats

ROOT = Path(__file__).resolve().parent.parent
# benchmarks/profile.py would shadow the standard library's profile module, which cProfile imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


# The floor: a relay with nothing of the bridge's but the copying (FLOOR ENDPOINT NAME KEY SERVER_KEY ENGINE).
FLOOR = """
import os, select, subprocess, sys, zmq, zmq.auth
endpoint, name, key, server, engine = sys.argv[1:6]
EVENTS, POLLIN, NOBLOCK, MORE = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.NOBLOCK), int(zmq.NOBLOCK | zmq.SNDMORE)
ctx = zmq.Context()
sock = ctx.socket(zmq.DEALER)
sock.curve_publickey, sock.curve_secretkey = zmq.auth.load_certificate(key)
sock.curve_serverkey = zmq.auth.load_certificate(server)[0]
sock.connect(endpoint)
sock.send_multipart([b"", b"hello version 1 slots 2 name " + name.encode()])
procs = {k: subprocess.Popen([engine], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0) for k in (b"1", b"2")}
pipes = {p.stdout.fileno(): k for k, p in procs.items()}
# One poll(2) a wake-up, the socket through its descriptor (as the bridge's loop): read until EVENTS says no more
# (after the engines' lines are sent, which may take the descriptor's signal), and one write per engine.
poller = select.poll()
for fd in (sock.getsockopt(zmq.FD), *pipes):
    poller.register(fd, select.POLLIN)
rest = dict.fromkeys(pipes, b"")
while True:
    for fd, _ in poller.poll():
        if fd in pipes:
            *lines, rest[fd] = (rest[fd] + os.read(fd, 65536)).split(b"\\n")
            for line in lines:
                sock.send(pipes[fd], MORE)
                sock.send(line, NOBLOCK)
    out = {}
    while sock.getsockopt(EVENTS) & POLLIN:
        channel, line = sock.recv_multipart(NOBLOCK)
        if channel == b"":
            if line.startswith(b"goodbye"):
                sys.exit(0)
        elif line == b"quit":
            sock.send_multipart([b"", b"ready " + channel])
        else:
            out[channel] = out.get(channel, b"") + line + b"\\n"
    for channel, data in out.items():
        os.write(procs[channel].stdin.fileno(), data)
"""


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


async def per_turn(
    first: Any, second: Any, games: int, profile: cProfile.Profile | None = None, turns_played: list[int] | None = None
) -> float:
    """Wall seconds per turn of ``games`` games between two sessions (a remote session lasts one game, as in a run);
    the turns are added to ``turns_played``."""
    from quarto_arena.arena.referee import GameSpec, play_game
    from quarto_arena.arena.timecontrol import TimeControl

    spec = GameSpec(time_control=TimeControl.parse("st=10"))
    turns, wall = 0, 0.0
    for g in range(games):
        a, b = (first, second) if g % 2 == 0 else (second, first)
        for s in (a, b):
            if not s.alive:
                await s.start()
        if profile is not None:
            profile.enable()
        t0 = time.perf_counter()
        record = await play_game(a, b, spec)
        wall += time.perf_counter() - t0
        if profile is not None:
            profile.disable()
        turns += len(record.turns)
        for s in (a, b):
            if s.config.remote is not None:
                await s.quit()
    if turns_played is not None:
        turns_played.append(turns)
    return wall / turns


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time of one process so far (not its children's: the engines behind a bridge), in nanoseconds as the
    scheduler counts it (``/proc/PID/stat`` counts 10 ms ticks, a tenth of a round's figure): in all, and in
    libzmq's I/O threads (``ZMQbg/IO/N``: the TCP and CurveZMQ work of every message)."""
    total = io = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            ns = int((task / "schedstat").read_text().split()[0])
            total += ns
            if (task / "comm").read_text().startswith("ZMQbg/IO"):
                io += ns
    return total / 1e9, io / 1e9


def top(stats: pstats.Stats, n: int) -> str:
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(n)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(lines[start : start + n + 1])


async def main_async(args: argparse.Namespace, directory: Path, c_bot: str) -> None:
    import cProfile
    import pstats

    from quarto_arena.arena.engine import EngineConfig, EngineSession
    from quarto_arena.arena.server import Server, load_server_keys, new_key_pair

    variants = {"this checkout": None, **{path: path for path in args.bridge_path}}
    if args.floor:
        variants["the floor (--floor)"] = FLOOR
    names = [f"bot{k}" for k in range(len(variants))]
    keys = directory / "keys"
    for name in ("arena", *names):
        new_key_pair(keys, name)
    endpoint = free_endpoint()
    server = Server(endpoint, names, keys=load_server_keys(keys, names))
    await server.start()
    bridges: list[subprocess.Popen[bytes]] = []
    profiles: list[Path] = []
    for name, path in zip(names, variants.values(), strict=True):
        env = dict(os.environ)
        if path is not None and path != FLOOR:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH")) if p)
        identity = ["--name", name, "--key", str(keys / f"{name}.key_secret"), "--server-key", str(keys / "arena.key")]
        profiles.append(directory / f"{name}.prof")
        profiled = [sys.executable, "-m", "cProfile", "-o", str(profiles[-1]), "-m", "quarto_arena.protocol.bridge"]
        if args.no_profile:
            profiled = [sys.executable, "-m", "quarto_arena.protocol.bridge"]
        argv = [*profiled, "--connect", endpoint, *identity, "--slots", "2", "--", c_bot]
        if path == FLOOR:
            env.pop("PYTHONPATH", None)
            argv = [sys.executable, "-c", FLOOR, endpoint, name, *identity[3::2], c_bot]
        bridges.append(
            subprocess.Popen(
                argv,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        )
    arena_profile = cProfile.Profile()
    rounds: dict[str, list[float]] = {"stdio": [], **{label: [] for label in variants}}
    turns: dict[str, list[int]] = {label: [] for label in variants}
    cpu = dict.fromkeys(variants, 0.0)
    io_cpu = dict.fromkeys(variants, 0.0)
    try:
        if await server.wait_for(60):
            raise SystemExit("a bridge did not connect")
        local = [EngineSession(EngineConfig(f"l{i}", command=(c_bot,))) for i in (1, 2)]
        remote = {
            label: [EngineSession(EngineConfig(f"{name}-{i}", remote=name), connector=server.lease) for i in (1, 2)]
            for label, name in zip(variants, names, strict=True)
        }
        for _ in range(args.rounds):
            rounds["stdio"].append(await per_turn(*local, args.games))
            for (label, sessions), bridge in zip(remote.items(), bridges, strict=True):
                before, io_before = cpu_seconds(bridge.pid)
                rounds[label].append(await per_turn(*sessions, args.games, turns_played=turns[label]))
                after, io_after = cpu_seconds(bridge.pid)
                cpu[label] += after - before
                io_cpu[label] += io_after - io_before
        await per_turn(*remote["this checkout"], args.games, arena_profile)  # profiled apart: not in the figures
        for s in (*local, *(s for pair in remote.values() for s in pair)):
            await s.quit()
    finally:
        # One signal: a bridge takes no new game and leaves, writing its profile (an older one may just die).
        for bridge in bridges:
            bridge.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        while any(b.poll() is None for b in bridges) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for bridge in bridges:
            if bridge.poll() is None:
                bridge.kill()
                bridge.wait()
        await server.close()
    stdio = statistics.median(rounds["stdio"]) * 1e6
    print(f"per turn, C bot against itself, {args.rounds} interleaved rounds of {args.games} games each way (median):")
    print(f"  stdio {stdio:.0f} us")
    for label in variants:
        b = statistics.median(rounds[label]) * 1e6
        print(f"  connected in with CurveZMQ through the bridge of {label}: {b:.0f} us, {b / stdio:.2f}x stdio")
        own = cpu[label] / sum(turns[label]) * 1e6
        profiled = "" if args.no_profile else " (under cProfile: give --no-profile for the figure)"
        in_io = io_cpu[label] / sum(turns[label]) * 1e6
        print(f"    the bridge's own CPU per relayed turn: {own:.0f} us{profiled}")
        print(f"      of which libzmq's I/O thread (TCP, ZMTP, CurveZMQ): {in_io:.0f} us")
    for label, path in zip(variants, profiles, strict=True):
        if path.exists() and path.stat().st_size:
            print(f"the bridge of {label}: its own time, top {args.top} (cProfile, its whole life):")
            print(top(pstats.Stats(str(path)), args.top))
    print(f"the arena's own time in one more round through this checkout's bridge (not timed), top {args.top}:")
    print(top(pstats.Stats(arena_profile), args.top))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=20, help="games per round and way")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument(
        "--bridge-path",
        action="append",
        default=[],
        help="also a bridge with this directory first on its PYTHONPATH (an older version); may be repeated",
    )
    parser.add_argument("--top", type=int, default=12, help="functions shown per profile")
    parser.add_argument("--no-profile", action="store_true", help="time the bridges without cProfile")
    parser.add_argument("--floor", action="store_true", help="also the least relay a Python process can be")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quarto-relay-") as tmp:
        directory = Path(tmp)
        c_bot = str(compile_c(C_BOT, directory))
        asyncio.run(main_async(args, directory, c_bot))


if __name__ == "__main__":
    main()
