"""What Python itself costs per engine turn: bare round trips with an instant engine, no arena code at all.

    python benchmarks/floors.py [--trips 20000] [--rounds 3] [--instructions]

Each floor plays one game's exchange the way the arena does, stripped to the least: two instant engines
(benchmarks/peers/instant_uqi.c, compiled with cc), one line each way per turn (``go`` -> ``turn 9``), the answer
of one engine followed at once by the other's ``go``. The floors:

- ``asyncio protocol``: ``loop.subprocess_exec`` with a minimal SubprocessProtocol (asyncio's own pipe transports);
- ``asyncio reader``: ``loop.add_reader`` on the raw pipe with ``os.read``/``os.write`` (the arena's transport);
- the same two under uvloop, when it is installed;
- ``thread+poll``: one thread for the game doing blocking ``os.write``, ``select.poll`` with the deadline as its
  timeout, ``os.read`` (what fastchess does in C++, and the issue's suggestion), started from an asyncio program
  whose loop sits idle meanwhile.

Printed: this process's CPU per round trip (user + system: the kernel's pipe work and wake-ups included), best /
median over interleaved rounds. With ``--instructions``, each floor runs under valgrind's callgrind at two lengths
instead, and the difference of the instructions counted over the difference of round trips is printed (start-up
cancels out; user-space instructions only, so the kernel's share of the CPU figure is not in it; load does not move
it). benchmarks/tournament.py ``--floors`` prints these beside the arena's own figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

from cbuild import PEERS, compile_c

HERE = Path(__file__).resolve().parent
GO = b"go\n"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def build_engine(into: Path) -> Path:
    """benchmarks/peers/instant_uqi.c compiled into ``into``."""
    return compile_c(PEERS / "instant_uqi.c", into)


def _pipes(exe: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    """An engine with raw pipes: (process, its stdin's fd, its stdout's fd)."""
    proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    return proc, proc.stdin.fileno(), proc.stdout.fileno()


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()


def floor_thread(exe: Path, trips: int) -> float:
    """Round trips by one thread with blocking writes and a poll() deadline; this process's CPU over them."""
    procs = [_pipes(exe) for _ in range(2)]
    polls = []
    for _, _, out in procs:
        p = select.poll()
        p.register(out, select.POLLIN)
        polls.append(p)
    ins = [fd for _, fd, _ in procs]
    outs = [out for _, _, out in procs]
    deadline_ms = 1000
    used = [0.0]

    def game() -> None:
        c0 = cpu()
        for k in range(trips):
            side = k & 1
            os.write(ins[side], GO)
            if not polls[side].poll(deadline_ms):
                raise RuntimeError("no answer within the deadline")
            data = os.read(outs[side], 4096)
            if not data.endswith(b"\n"):  # the instant engine's line comes whole; a real reader would buffer
                raise RuntimeError(f"partial line {data!r}")
        used[0] = cpu() - c0

    async def main() -> None:
        thread = threading.Thread(target=game)
        thread.start()
        await asyncio.to_thread(thread.join)  # the loop idles meanwhile, as the arena's would

    asyncio.run(main())
    _reap([proc for proc, _, _ in procs])
    return used[0]


def floor_reader(exe: Path, trips: int) -> float:
    """Round trips driven by ``loop.add_reader`` callbacks on raw pipes (the arena's transport, bare)."""
    procs = [_pipes(exe) for _ in range(2)]
    ins = [fd for _, fd, _ in procs]
    outs = [out for _, _, out in procs]
    for fd in ins + outs:
        os.set_blocking(fd, False)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[float] = loop.create_future()
        count = [0]
        c0 = cpu()

        def readable(side: int) -> None:
            data = os.read(outs[side], 4096)
            if not data.endswith(b"\n"):
                raise RuntimeError(f"partial line {data!r}")
            count[0] += 1
            if count[0] == trips:
                done.set_result(cpu() - c0)
                return
            os.write(ins[1 - side], GO)

        for side in (0, 1):
            loop.add_reader(outs[side], readable, side)
        os.write(ins[0], GO)
        used = await done
        for fd in outs:
            loop.remove_reader(fd)
        return used

    used = asyncio.run(main())
    _reap([proc for proc, _, _ in procs])
    return used


class _Engine(asyncio.SubprocessProtocol):
    """A minimal protocol: each chunk of the engine's output is one answer; the other engine's ``go`` follows."""

    def __init__(self, on_answer: Callable[[], None]) -> None:
        self.on_answer = on_answer
        self.exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if not data.endswith(b"\n"):
            raise RuntimeError(f"partial line {data!r}")
        self.on_answer()

    def process_exited(self) -> None:
        self.exited.set_result(None)


def floor_protocol(exe: Path, trips: int) -> float:
    """Round trips through asyncio's subprocess transports and a minimal protocol."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[float] = loop.create_future()
        count = [0]
        stdins: list[asyncio.WriteTransport] = []
        c0 = [0.0]

        def answered(side: int) -> None:
            count[0] += 1
            if count[0] == trips:
                done.set_result(cpu() - c0[0])
                return
            stdins[1 - side].write(GO)

        engines = []
        for side in (0, 1):
            transport, protocol = await loop.subprocess_exec(
                lambda side=side: _Engine(lambda: answered(side)),  # type: ignore[misc]
                str(exe),
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            pipe = transport.get_pipe_transport(0)
            assert pipe is not None
            stdins.append(cast(asyncio.WriteTransport, pipe))  # uvloop's is not a subclass
            engines.append((transport, protocol))
        c0[0] = cpu()
        stdins[0].write(GO)
        used = await done
        for transport, protocol in engines:
            transport.get_pipe_transport(0).close()  # type: ignore[union-attr]
            await protocol.exited
            transport.close()
        return used

    return asyncio.run(main())


def use_loop(name: str) -> None:
    if name == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    else:
        asyncio.set_event_loop_policy(None)


FLOORS: dict[str, tuple[Callable[[Path, int], float], str]] = {
    "asyncio protocol": (floor_protocol, "asyncio"),
    "asyncio reader": (floor_reader, "asyncio"),
    "uvloop protocol": (floor_protocol, "uvloop"),
    "uvloop reader": (floor_reader, "uvloop"),
    "thread+poll": (floor_thread, "asyncio"),
}


def available() -> list[str]:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return [name for name in FLOORS if not name.startswith("uvloop")]
    return list(FLOORS)


def run_floor(name: str, exe: Path, trips: int) -> float:
    """CPU seconds per round trip of one floor."""
    function, loop = FLOORS[name]
    use_loop(loop)
    try:
        return function(exe, trips) / trips
    finally:
        use_loop("asyncio")


def callgrind(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Instructions callgrind counts in the process ``argv`` runs (children not traced), and what it printed; run in
    ``cwd``, with ``env`` added to the environment."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("error: --instructions needs valgrind")
    out = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {}), "PYTHONHASHSEED": "0"},  # the same dict and set layouts: repeatable counts
    )
    found = [line.split()[-1] for line in out.stderr.splitlines() if "Collected :" in line]
    if out.returncode != 0 or not found:
        sys.exit(f"failed under valgrind ({out.returncode}): {' '.join(argv)}\n{out.stderr[-2000:]}")
    return int(found[0]), out.stdout


def floor_instructions(name: str, exe: Path, trips: int) -> float:
    """Instructions per round trip of one floor: two lengths under callgrind, the difference over the difference."""
    script = str(Path(__file__).resolve())
    counts = [
        callgrind([sys.executable, script, "--one", name, "--engine", str(exe), "--trips", str(n)])[0]
        for n in (trips, 2 * trips)
    ]
    return (counts[1] - counts[0]) / trips


def print_floors(exe: Path, trips: int, rounds: int, instructions: bool) -> None:
    names = available()
    if instructions:
        print(f"floors: instructions per round trip (callgrind, {trips} and {2 * trips} round trips, difference)")
        for name in names:
            print(f"  {name:<21} {floor_instructions(name, exe, trips):9.0f} instructions per round trip")
        return
    results: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            results[name].append(run_floor(name, exe, trips))
    print(
        f"floors: this process's CPU per round trip, {trips} round trips, {rounds} interleaved rounds (best / median)"
    )
    for name, rows in results.items():
        print(f"  {name:<21} CPU per round trip {1e6 * min(rows):6.1f} / {1e6 * statistics.median(rows):6.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trips", type=int, default=20000, help="round trips per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind instead")
    parser.add_argument("--one", choices=list(FLOORS), help=argparse.SUPPRESS)  # a single run (under callgrind)
    parser.add_argument("--engine", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        run_floor(args.one, args.engine, args.trips)
        return
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_engine(Path(tmp))
        trips = min(args.trips, 2000) if args.instructions else args.trips
        print_floors(exe, trips, args.rounds, args.instructions)


if __name__ == "__main__":
    main()
