"""What hostile engines and a killed arena cost: the figures behind the hardening, measured with real processes.

    python benchmarks/hostile.py [--seconds 4]

Prints:

- the arena's peak resident memory (VmHWM) while an engine floods it for ``--seconds`` with info, error, garbage,
  option or standard-error lines (engines/testing/flood_lines.py), one fresh arena process per flood, next to a
  quiet game's peak in the same run;
- how long the arena takes to report a dead ZeroMQ endpoint (a closed port, an unknown host, a missing ipc path);
- how many processes an arena leaves behind when it is stopped by SIGTERM, SIGHUP or SIGKILL in the middle of a
  tournament (engines that setsid() a child included);
- with ``--attacks`` only the second round's attacks (SPEC §6), each against a fresh arena process whose peak RSS
  is read from /proc while it runs: a message that never ends (multipart frames, empty frames, a 1 GiB frame) from
  an engine's server the arena connects to and from a client of its keyless ``--listen``; 2,000 half-open
  connections to ``--listen``; 500 clients of the live page's event stream; 1,500 half-open connections at an
  open-file limit of 1,024 (soft and hard: nothing to raise), counting the games scored against an engine for the
  arena's own shortage; and the escape bytes that reach the terminal from an engine's strings.

- with ``--keys`` only a ladder's keys directory read as it is read while the ladder runs (every change): the
  time and the memory it takes with 100 bots' keys, then with a 4 GiB sparse key file, a key file of 150 million
  comment lines and a pipe named like a key put beside them (issue 34: 3 GB, an 86 s stall).

Figures only, no assertions (the tests assert the limits).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def watch_peak(proc: subprocess.Popen[Any], during: Callable[[], None] = lambda: None) -> int:
    """Runs ``during`` (the attack) while reading the process's VmHWM; returns the last value read, in kB."""
    peak = 0
    done = threading.Event()

    def poll() -> None:
        nonlocal peak
        while not done.is_set() and proc.poll() is None:
            try:
                status = Path(f"/proc/{proc.pid}/status").read_text()
            except OSError:
                break
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
            time.sleep(0.02)

    watcher = threading.Thread(target=poll)
    watcher.start()
    try:
        during()
    finally:
        done.set()
        watcher.join()
    return peak


def served_arena(tmp: str, port: int, *extra: str, limit: int | None = None) -> subprocess.Popen[str]:
    """A keyless ``play remote:alice greedy --listen`` arena (alice never comes: the arena waits for her)."""

    def lower() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return subprocess.Popen(
        [
            *CLI,
            "play",
            "remote:alice",
            "greedy",
            "--listen",
            f"tcp://127.0.0.1:{port}",
            "--wait",
            "600",
            "--games",
            "2",
            "--tc",
            "st=0.1",
            "--out",
            f"{tmp}/{time.monotonic_ns()}",
            "-q",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lower,
    )


def wait_port(port: int, timeout: float = 30.0) -> None:
    """Waits until something accepts on the port (one connection, closed at once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


def stop(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def attacks(megabytes: str) -> None:
    """The second round's attacks (see the module's documentation)."""
    flood = [sys.executable, "-m", "quarto_arena.engines.testing.zmtp_flood"]
    print(f"peak arena memory (VmHWM) under each attack, {megabytes} MB sent where it is a flood:")
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        quiet = served_arena(tmp, port)
        wait_port(port)
        kb = watch_peak(quiet, lambda: time.sleep(3))
        stop(quiet)
        print(f"  {'no attack (an arena waiting for a bot)':<58} {kb / 1024:6.1f} MB")
        for shape in ("multipart", "tiny", "huge"):
            port = free_port()
            server = subprocess.Popen(
                [*flood, "--listen", f"tcp://127.0.0.1:{port}", megabytes, shape], stderr=subprocess.PIPE, text=True
            )
            assert server.stderr is not None and server.stderr.readline() == "listening\n"
            arena = subprocess.Popen(
                [
                    *CLI,
                    "play",
                    f"x=tcp://127.0.0.1:{port}",
                    "greedy",
                    "--games",
                    "2",
                    "--tc",
                    "st=0.5",
                    "--out",
                    f"{tmp}/{time.monotonic_ns()}",
                    "-q",
                    "--lenient",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            kb = watch_peak(arena, lambda arena=arena: arena.wait(120))
            server.kill()
            server.wait()
            print(
                f"  {'engine server sends ' + shape + ' (arena connects out)':<58} {kb / 1024:6.1f} MB,"
                f" exit {arena.returncode}"
            )
        for shape in ("multipart", "tiny", "huge"):
            port = free_port()
            arena = served_arena(tmp, port)
            wait_port(port)

            def attack(port: int = port, shape: str = shape) -> None:
                subprocess.run(
                    [*flood, "--connect", f"tcp://127.0.0.1:{port}", megabytes, shape], capture_output=True, timeout=120
                )
                time.sleep(1)

            kb = watch_peak(arena, attack)
            stop(arena)
            print(f"  {'client sends ' + shape + ' to the keyless --listen':<58} {kb / 1024:6.1f} MB")
        port = free_port()
        arena = served_arena(tmp, port)
        wait_port(port)
        held: list[socket.socket] = []

        def half_open() -> None:
            for _ in range(2000):
                with contextlib.suppress(OSError):
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            time.sleep(2)

        kb = watch_peak(arena, half_open)
        fds = len(list(Path(f"/proc/{arena.pid}/fd").iterdir()))
        for s in held:
            s.close()
        stop(arena)
        print(f"  {'2,000 half-open connections to --listen':<58} {kb / 1024:6.1f} MB ({fds} descriptors open after)")
        web_port = free_port()
        bot = Path(tmp) / "slow.py"
        bot.write_text(
            "import time\nfrom quarto_arena.protocol.bot import run\n"
            "def choose(p, c):\n    time.sleep(0.05)\n    return p.legal_turns()[0]\nrun(choose, [])\n"
        )
        arena = subprocess.Popen(
            [
                *CLI,
                "play",
                f"s={sys.executable} {bot}",
                "greedy",
                "--games",
                "400",
                "--tc",
                "st=1",
                "--web",
                f"127.0.0.1:{web_port}",
                "--out",
                f"{tmp}/{time.monotonic_ns()}",
                "-q",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(web_port)
        clients: list[socket.socket] = []

        def sse() -> None:
            for _ in range(500):
                with contextlib.suppress(OSError):
                    c = socket.create_connection(("127.0.0.1", web_port), timeout=5)
                    c.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{web_port}\r\n\r\n".encode())
                    clients.append(c)  # never read: the server's writes pile up on its side
            time.sleep(10)

        kb = watch_peak(arena, sse)
        for c in clients:
            c.close()
        stop(arena)
        print(f"  {'500 event-stream clients that never read (--web)':<58} {kb / 1024:6.1f} MB")

    print("games scored against an engine for the arena's own shortage (open files 1,024, soft and hard):")
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        out = Path(tmp) / "r"

        def lower() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

        arena = subprocess.Popen(
            [
                *CLI,
                "play",
                "remote:alice",
                "greedy",
                "--listen",
                f"tcp://127.0.0.1:{port}",
                "--games",
                "200",
                "--tc",
                "st=0.05",
                "-j",
                "2",
                "--out",
                str(out),
                "-q",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lower,
        )
        wait_port(port)
        alice = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "quarto_arena.engines.greedy",
                "--connect",
                f"tcp://127.0.0.1:{port}",
                "--name",
                "alice",
                "--slots",
                "2",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        held = []
        time.sleep(2)
        for _ in range(1500):
            with contextlib.suppress(OSError):
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        try:
            _, err = arena.communicate(timeout=600)
        finally:
            for s in held:
                s.close()
            alice.kill()
            alice.wait()
        scored = ("open files", "Too many")
        games = (
            [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
            if (out / "games.jsonl").exists()
            else []
        )
        blamed = [g for g in games if any(w in str(g.get("detail")) for w in scored)]
        print(
            f"  {len(held)} hostile connections held: {len(games)} games counted, {len(blamed)} scored for the"
            f" arena's shortage, exit {arena.returncode}: {(err.strip().splitlines() or [''])[-1][:150]}"
        )

    print("escape bytes reaching the terminal from an engine's strings (id name, error, refusals, malformed turns):")
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for where in ("play", "newgame", "uqi", "malformed"):
            engine = f"esc={sys.executable} -m quarto_arena.engines.testing.escape_strings {where}"
            r = subprocess.run(
                [
                    *CLI,
                    "play",
                    engine,
                    "greedy",
                    "--games",
                    "2",
                    "--tc",
                    "st=0.1",
                    "--lenient",
                    "--out",
                    f"{tmp}/{where}",
                ],
                capture_output=True,
                timeout=120,
            )
            shown = r.stdout + r.stderr
            bad = sum(shown.count(b) for b in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b", b"\xe2\x80\xae"))
            total += bad
            print(f"  {where:<10} {bad} escape bytes in {len(shown)} bytes shown (exit {r.returncode})")
    print(f"  in all: {total}")


def keys_directory() -> None:
    """A keys directory read as the ladder reads it, before and after hostile files are put in it."""
    import statistics

    from quarto_arena.arena.server import load_keys_directory, new_key_pair

    def measure(directory: Path) -> tuple[float, float, int]:
        times = []
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(5):
            t0 = time.perf_counter()
            keys, _ = load_keys_directory(directory)
            times.append(time.perf_counter() - t0)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        return statistics.median(times), grown / 1024, len(keys.bots)

    print("a ladder's keys directory, read as the ladder reads it at each change (median of 5):")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for name in ["arena", *(f"bot{i:03}" for i in range(100))]:
            new_key_pair(directory, name)
        took, grown, n = measure(directory)
        print(f"  {n} bots' keys: {took * 1000:.1f} ms, peak memory grown {grown:.1f} MB")
        with (directory / "sparse.key").open("wb") as f:
            f.truncate(4 << 30)
        with (directory / "comments.key").open("wb") as f:
            block = b"#\n" * (1 << 20)
            for _ in range(150_000_000 // (1 << 20) + 1):
                f.write(block)
        os.mkfifo(directory / "pipe.key")
        took, grown, n = measure(directory)
        print(
            f"  with a 4 GiB sparse key, {(directory / 'comments.key').stat().st_size >> 20} MB of comment lines and a"
            f" pipe beside them: {took * 1000:.1f} ms, peak memory grown {grown:.1f} MB, {n} bots' keys kept"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", default="4", help="how long each flood lasts (default 4)")
    parser.add_argument("--attacks", action="store_true", help="only the second round's attacks")
    parser.add_argument("--keys", action="store_true", help="only a ladder's keys directory, hostile files in it")
    parser.add_argument("--megabytes", default="1000", help="what each flood of --attacks sends (default 1000)")
    args = parser.parse_args()
    if args.keys:
        keys_directory()
        return
    if args.attacks:
        attacks(args.megabytes)
        return
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
