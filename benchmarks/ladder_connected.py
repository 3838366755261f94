"""Issue 33's figure "1,000 bots connected (most idle, 100 playing at st=0.05)": what a ladder holding many bots costs.

    python benchmarks/ladder_connected.py [--bots 1000] [--per-process 125] [-j 50] [--tc st=0.05] [--seconds 60]
                                          [--renders 20]

``--bots`` keyed bots (benchmarks/ladder.py's swarm: the SDK's own client and ``Bot``, a random legal turn at once,
one connection, one key and one slot each, ``--stay``), ``--per-process`` of them in each process, connect over
CurveZMQ on loopback to ``quarto-arena ladder run DIR --listen tcp://127.0.0.1:PORT --keys KEYS -j J --tc TC --web
127.0.0.1:PORT``: at most 2 x J bots play at once, the others wait connected. Once every bot is welcomed (each swarm's
log says ``connected to`` once per bot) the window of ``--seconds`` starts. Printed: the time from the first swarm's
start to the last welcome; the ladder's peak RSS (and its children's, if any); its CPU per engine turn and games/s
in the window; how many bots played in the window and how many were playing at once (the 'most idle' check); the
bots' reconnections ("lost the connection" in their logs) and the ladder's connection losses; the server-side
render time of ``/`` and ``/bot/NAME`` over HTTP (median and worst of ``--renders`` each, during the window); the
file descriptors the ladder held and its ``ulimit -n``.

Figures only, no assertions; but nothing is printed past the first line if a game in the window ended otherwise than
normally (no bot here can lose on its own: each answers at once with a legal turn), if a game was abandoned, or if
the ladder's log has a traceback: those would be the arena's fault, and then the log's lines are shown instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ladder import CLI, count, cpu_seconds, drain, free_endpoint, make_keys, peak_rss_mb, query, stop_ladder, wait

LADDER_PY = str(Path(__file__).resolve().parent / "ladder.py")


def kinds(lines: list[str]) -> None:
    """Prints the ladder's lines other than its counted games, by kind (names and numbers left out), most first."""
    told = Counter(re.sub(r"\d+", "N", re.sub(r"bot\d+", "BOT", x.strip())) for x in lines if ": game " not in x)
    for line, n in told.most_common(15):
        print(f"{n:6} {line}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def swarms(endpoint: str, keys: Path, names: list[str], per: int, stagger: float, logs: Path) -> Iterator[list[Path]]:
    """``ladder.py --swarm`` processes of ``per`` bots each (one slot a bot), one every ``stagger`` s; yields their
    log files."""
    procs, files = [], []
    for i in range(0, len(names), per):
        log = logs / f"swarm{i // per}.log"
        files.append(log)
        with log.open("wb") as f:
            # Each process from an address of its own (127.0.0.2, ...; libzmq's "SOURCE;DESTINATION"), as bots on the
            # internet come: from one address, more than 32 bots connecting at once pass the arena's documented cap
            # on connections waiting for their hello per address (SPEC.md §3.4), and the oldest are closed.
            source = endpoint.replace("tcp://127.0.0.1:", f"tcp://127.0.0.{2 + i // per}:0;127.0.0.1:")
            argv = [sys.executable, LADDER_PY, "--swarm", source, str(keys), "1", ",".join(names[i : i + per])]
            procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=f, start_new_session=True))
        time.sleep(stagger)
    try:
        yield files
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def log_count(files: list[Path], needle: str) -> int:
    return sum(line.count(needle) for f in files for line in f.read_text(errors="replace").splitlines())


def children_peak_mb(pid: int) -> float:
    """The peak RSS of the ladder's child processes (house engines, helpers), summed; 0 when it has none."""
    total = 0.0
    with contextlib.suppress(FileNotFoundError):
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += peak_rss_mb(int(child))
    return total


def serving(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) == 0


def render(url: str) -> float:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        body = r.read()
        if r.status != 200 or b"<table" not in body:
            sys.exit(f"{url}: status {r.status}, no table in {len(body)} bytes")
    return 1000 * (time.perf_counter() - began)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bots", type=int, default=1000)
    p.add_argument("--per-process", type=int, default=25)
    p.add_argument("--stagger", type=float, default=1.0, help="s between two swarm processes' starts")
    p.add_argument("-j", type=int, default=50)
    p.add_argument("--tc", default="st=0.05")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--renders", type=int, default=20)
    args = p.parse_args()
    names = [f"bot{i:04}" for i in range(args.bots)]
    with tempfile.TemporaryDirectory(prefix="ladder-connected-") as t:
        tmp = Path(t)
        keys = tmp / "keys"
        make_keys(keys, ["arena", *names])
        endpoint, web = free_endpoint(), f"127.0.0.1:{free_port()}"
        lad = tmp / "lad"
        argv = [*CLI, "ladder", "run", str(lad), "--listen", endpoint, "--keys", str(keys), "-j", str(args.j)]
        argv += ["--tc", args.tc, "--web", web]
        shown = " ".join(["quarto-arena", *argv[len(CLI) :]]).replace(str(tmp), "TMP")
        print(f"connected: {shown}; {args.bots} bots, {args.per_process} a process; load {os.getloadavg()[0]:.1f}")
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        lines: list[str] = []
        drain(proc, lines)
        try:
            wait(lambda: serving(web) or proc.poll() is not None, 120, "the ladder's pages")
            began = time.monotonic()
            with swarms(endpoint, keys, names, args.per_process, args.stagger, tmp) as logs:

                def welcomed() -> bool:
                    if gave_up := log_count(logs, "ArenaRefused"):
                        kinds(lines)
                        sys.exit(
                            f"connected: {gave_up} bots gave up (the SDK's ArenaRefused); the ladder said the above"
                        )
                    return log_count(logs, " connected to ") >= args.bots

                wait(welcomed, 600, "every bot welcomed")
                took = time.monotonic() - began
                lost0 = log_count(logs, "lost the connection")
                t0, c0, g0 = time.monotonic(), cpu_seconds(proc.pid), count(lad)
                times: dict[str, list[float]] = {"/": [], f"/bot/{names[0]}": []}
                busiest, online, playing = 0, [], []
                step = args.seconds / max(1, args.renders)
                while time.monotonic() - t0 < args.seconds:
                    for page in times:
                        times[page].append(render(f"http://{web}{page}"))
                    with urllib.request.urlopen(f"http://{web}/api/v1/standings", timeout=30) as r:
                        board = json.load(r)["lines"]
                    online.append(sum(line["online"] for line in board if not line["house"]))
                    playing.append(sum(line["playing"] > 0 for line in board if not line["house"]))
                    busiest = max(busiest, len(list(Path(f"/proc/{proc.pid}/fd").iterdir())))
                    time.sleep(max(0.0, step - 0.001))
                elapsed = time.monotonic() - t0
                c1, g1 = cpu_seconds(proc.pid), count(lad)
                peak, kids = peak_rss_mb(proc.pid), children_peak_mb(proc.pid)
                lost = log_count(logs, "lost the connection") - lost0
                limit = Path(f"/proc/{proc.pid}/limits").read_text()
                nofile = next(line.split()[3] for line in limit.splitlines() if line.startswith("Max open files"))
        finally:
            stop_ladder(proc)
        bad = dict(
            query(
                lad,
                "SELECT termination, count(*) FROM games WHERE id > ? AND id <= ? AND termination != 'normal'"
                " GROUP BY 1",
                (g0, g1),
            )
        )
        abandoned = query(lad, "SELECT count(*) FROM abandoned")[0][0]
        tracebacks = [line for line in lines if "Traceback" in line]
        if bad or abandoned or tracebacks:
            print(f"connected: NO FIGURES: abnormal games {bad}, abandoned {abandoned}, tracebacks {len(tracebacks)}")
            kinds(lines)
            sys.exit(1)
        turns = (
            query(
                lad,
                "SELECT sum(json_array_length(turns) - json_array_length(opening)) FROM games WHERE id > ? AND id <= ?",
                (g0, g1),
            )[0][0]
            or 0
        )
        played = query(
            lad,
            "SELECT count(DISTINCT b.id) FROM games g JOIN bots b ON b.id IN (g.first, g.second)"
            " WHERE g.id > ? AND g.id <= ? AND b.house = 0",
            (g0, g1),
        )[0][0]
        games = g1 - g0
        n = len(names[:: args.per_process])
        print(
            f"connected: {args.bots} bots welcomed {took:.1f} s after the first of their {n} processes started"
            f" (one every {args.stagger:g} s)"
        )
        print(
            f"connected: {games} games in {elapsed:.1f} s = {games / elapsed:.1f} games/s, {turns} engine turns;"
            f" ladder CPU {c1 - c0:.1f} s = {1e3 * (c1 - c0) / max(1, turns):.2f} ms per turn"
        )
        print(f"connected: ladder peak RSS {peak:.0f} MB; its children's {kids:.0f} MB")
        print(
            f"connected: {played} of {args.bots} bots played in the window (at most {2 * args.j} at once);"
            f" bots' reconnections {lost}; games ended otherwise than normally 0, abandoned 0, tracebacks 0"
        )
        print(
            f"connected: the ladder's standings during the window: bots online min {min(online)}, max {max(online)};"
            f" bots playing at once mean {statistics.mean(playing):.0f}, max {max(playing)} ({len(online)} looks)"
        )
        for page, ms in times.items():
            print(f"connected: GET {page}: median {statistics.median(ms):.0f} ms, worst {max(ms):.0f} ms ({len(ms)})")
        print(f"connected: ladder file descriptors at most {busiest}; its limit (ulimit -n) {nofile}")


if __name__ == "__main__":
    main()
