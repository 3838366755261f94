"""The arena's own cost per turn, next to the cost of one round trip to the same engine without the arena.

Over stdio: two instances of the C bot (it answers every ``go`` at once, so a turn costs the arena's work plus one
round trip) play games with the real referee. Over ZeroMQ: two Python SDK greedy bots served on loopback.

The yardstick is a raw round trip outside the arena: a minimal loop in C (compiled here) and a bare Python loop,
each starting the same C bot on pipes and sending it the very ``position``/``go`` lines the arena sent in a game,
waiting for each ``turn``. A turn's wall time is printed as a multiple of both, measured in the same run (the
arena's ``isready`` ping, the figure used before, is still printed).

The machine this runs on may be shared and noisy, so pings and games are interleaved (a batch of pings before each
game) in several rounds, and each round gives one ping figure (the median of its pings) and one turn figure (its
games' time per turn). The headline is the best round of each, the spread is shown by the median round; both
come from the same run. A breakdown shows where a turn's time goes: the arena's own CPU and the engines' CPU
(from ``/proc/PID/schedstat``), per turn and per ping. Prints figures only (no assertions); run it as::

    python benchmarks/overhead.py [--rounds N] [--games N] [--pings N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from quarto_arena.arena.engine import EngineConfig, EngineSession
from quarto_arena.arena.referee import GameSpec, play_game
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.transport import Transcript
from quarto_arena.engines.registry import command

ROOT = Path(__file__).resolve().parent.parent
TC = TimeControl.parse("st=10")


def cpu_ns(pids: Sequence[int]) -> int:
    """CPU time the processes have used so far, ns (0 when /proc cannot tell)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


@dataclass
class Round:
    """One round's figures: pings interleaved with games."""

    pings: list[float] = field(default_factory=list)
    """Each ping's round trip, s."""
    ping_arena_s: float = 0.0
    ping_engine_ns: int = 0
    turn_s: float = 0.0
    """Wall time of the games' turns (without the newgame exchanges), s."""
    turn_arena_s: float = 0.0
    turn_engine_ns: int = 0
    turns: int = 0

    @property
    def ping_us(self) -> float:
        return statistics.median(self.pings) * 1e6

    @property
    def turn_us(self) -> float:
        return self.turn_s / self.turns * 1e6


async def play_round(sessions: list[EngineSession], engine_pids: Sequence[int], games: int, pings: int) -> Round:
    """``games`` games, each after ``pings`` pings (alternating between the two engines, as turns do)."""
    r = Round()
    for g in range(games):
        c0, a0 = cpu_ns(engine_pids), time.process_time()
        for i in range(pings):
            r.pings.append(await sessions[i % 2].ping())
        r.ping_arena_s += time.process_time() - a0
        r.ping_engine_ns += cpu_ns(engine_pids) - c0
        first, second = sessions if g % 2 == 0 else sessions[::-1]
        # play_game sends newgame+isready to both engines; the same two exchanges, timed here on their own just
        # before, are subtracted (wall time and CPU) so the figures are per turn only.
        c0, a0, t0 = cpu_ns(engine_pids), time.process_time(), time.perf_counter()
        await first.new_game(GameSpec().variant)
        await second.new_game(GameSpec().variant)
        t1, a1, c1 = time.perf_counter(), time.process_time(), cpu_ns(engine_pids)
        t2, a2 = time.perf_counter(), time.process_time()
        record = await play_game(first, second, GameSpec(time_control=TC, game_id=g))
        t3, a3, c3 = time.perf_counter(), time.process_time(), cpu_ns(engine_pids)
        if record.termination.is_failure:
            raise SystemExit(f"game {g} failed: {record.detail}")
        r.turn_s += (t3 - t2) - (t1 - t0)
        r.turn_arena_s += (a3 - a2) - (a1 - a0)
        r.turn_engine_ns += (c3 - c1) - (c1 - c0)
        r.turns += len(record.turns)
    return r


async def measure(
    a: EngineConfig, b: EngineConfig, engine_pids: Sequence[int], rounds: int, games: int, pings: int
) -> list[Round]:
    """The rounds' figures for two engines (``engine_pids``: their processes, when not the sessions' own)."""
    sessions = [EngineSession(a), EngineSession(b)]
    try:
        for s in sessions:
            await s.start()
        pids = list(engine_pids) or [s.pid for s in sessions if s.pid is not None]
        for _ in range(50):  # warm up
            await sessions[0].ping()
        await play_round(sessions, pids, 2, 10)
        return [await play_round(sessions, pids, games, pings) for _ in range(rounds)]
    finally:
        for s in sessions:
            await s.quit()


async def record_messages(a: EngineConfig, b: EngineConfig, path: Path) -> list[bytes]:
    """Plays a few games with a transcript and returns the position/go pairs the arena sent."""
    transcript = Transcript(path)
    sessions = [EngineSession(a, transcript=transcript), EngineSession(b, transcript=transcript)]
    try:
        for s in sessions:
            await s.start()
        for g in range(6):
            first, second = sessions if g % 2 == 0 else sessions[::-1]
            await play_game(first, second, GameSpec(time_control=TC, game_id=g))
    finally:
        for s in sessions:
            await s.quit()
        transcript.close()
    return game_messages(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


RAW_LOOP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static int in_fd, out_fd;
static char buf[1 << 16];
static size_t have;

static void read_line(char *line, size_t cap) {  /* one line from the engine, blocking */
    for (;;) {
        char *nl = memchr(buf, '\n', have);
        if (nl) {
            size_t n = (size_t)(nl - buf);
            size_t k = n < cap - 1 ? n : cap - 1;
            memcpy(line, buf, k); line[k] = 0;
            memmove(buf, nl + 1, have - n - 1); have -= n + 1;
            return;
        }
        ssize_t r = read(out_fd, buf + have, sizeof buf - have);
        if (r <= 0) { fprintf(stderr, "engine gone\n"); exit(1); }
        have += (size_t)r;
    }
}

int main(int argc, char **argv) {  /* rawloop ENGINE MESSAGES_FILE ROUND_TRIPS */
    int to[2], from[2];
    if (pipe(to) || pipe(from)) return 1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(to[0], 0); dup2(from[1], 1);
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        execl(argv[1], argv[1], (char *)0);
        _exit(127);
    }
    close(to[0]); close(from[1]); in_fd = to[1]; out_fd = from[0];
    static char msgs[4096][512]; int m = 0;
    FILE *f = fopen(argv[2], "r");
    char a[256], b[256];
    while (m < 4096 && fgets(a, sizeof a, f) && fgets(b, sizeof b, f)) snprintf(msgs[m++], 512, "%s%s", a, b);
    fclose(f);
    long n = atol(argv[3]);
    char line[8192];
    const char *hello = "uqi 1\nnewgame shapes standard attributes color,shape,height,fill claims auto\nisready\n";
    if (write(in_fd, hello, strlen(hello)) < 0) return 1;
    do read_line(line, sizeof line); while (strcmp(line, "readyok") != 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        const char *msg = msgs[i % m];
        if (write(in_fd, msg, strlen(msg)) < 0) return 1;
        do read_line(line, sizeof line); while (strncmp(line, "turn ", 5) != 0);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n / 1e3);
    write(in_fd, "quit\n", 5);
    close(in_fd);
    waitpid(pid, 0, 0);
    return 0;
}
"""


def raw_python(engine: Path, messages: list[bytes], n: int) -> float:
    """The bare Python loop: one os.write and blocking os.read calls per round trip, us per round trip."""
    proc = subprocess.Popen([str(engine)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    out, inp = proc.stdout.fileno(), proc.stdin.fileno()
    os.write(inp, b"uqi 1\nnewgame shapes standard attributes color,shape,height,fill claims auto\nisready\n")
    pending = b""
    while b"readyok\n" not in pending:
        pending += os.read(out, 65536)
    pending = b""
    t0 = time.perf_counter()
    for i in range(n):
        os.write(inp, messages[i % len(messages)])
        while b"turn " not in pending or not pending.endswith(b"\n"):
            pending += os.read(out, 65536)
        pending = b""
    us = (time.perf_counter() - t0) / n * 1e6
    os.write(inp, b"quit\n")
    proc.stdin.close()
    proc.wait()
    return us


def game_messages(transcript: Path) -> list[bytes]:
    """The ``position``+``go`` pairs the arena sent in its games, from a ``--debug`` transcript."""
    sent = [line.split(" > ", 1)[1] for line in transcript.read_text().splitlines() if " > " in line]
    return [f"{p}\n{g}\n".encode() for p, g in itertools.pairwise(sent) if p.startswith("position")]


def raw_round_trips(engine: Path, messages: list[bytes], tmp: Path, cc: str, rounds: int) -> tuple[float, float]:
    """Best of ``rounds`` for the C loop and for the Python loop, us per round trip."""
    source, exe, lines = tmp / "rawloop.c", tmp / "rawloop", tmp / "messages.txt"
    source.write_text(RAW_LOOP_C)
    subprocess.run([cc, "-O2", "-o", str(exe), str(source)], check=True)
    lines.write_bytes(b"".join(messages))
    c_us, py_us = [], []
    for _ in range(rounds):
        out = subprocess.run([str(exe), str(engine), str(lines), "4000"], capture_output=True, text=True, check=True)
        c_us.append(float(out.stdout))
        py_us.append(raw_python(engine, messages, 4000))
    return min(c_us), min(py_us)


def report(label: str, rounds: list[Round]) -> None:
    best_ping = min(r.ping_us for r in rounds)
    best_turn = min(r.turn_us for r in rounds)
    med_ping = statistics.median(r.ping_us for r in rounds)
    med_turn = statistics.median(r.turn_us for r in rounds)
    med_ratio = statistics.median(r.turn_us / r.ping_us for r in rounds)
    npings = sum(len(r.pings) for r in rounds)
    turns = sum(r.turns for r in rounds)
    arena_turn = sum(r.turn_arena_s for r in rounds) / turns * 1e6
    engine_turn = sum(r.turn_engine_ns for r in rounds) / turns / 1e3
    arena_ping = sum(r.ping_arena_s for r in rounds) / npings * 1e6
    engine_ping = sum(r.ping_engine_ns for r in rounds) / npings / 1e3
    print(
        f"{label}: ping {best_ping:7.1f} us  turn {best_turn:7.1f} us  ratio {best_turn / best_ping:4.2f}x"
        f"   (best of {len(rounds)} rounds; median round: ping {med_ping:.1f} turn {med_turn:.1f}"
        f" ratio {med_ratio:.2f}x; {turns} turns, {npings} pings)"
    )
    print(
        f"{' ' * len(label)}  CPU per ping: arena {arena_ping:6.1f} us, engine {engine_ping:6.1f} us"
        f"   CPU per turn: arena {arena_turn:6.1f} us, engines {engine_turn:6.1f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="rounds of interleaved pings and games (default 9)")
    parser.add_argument("--games", type=int, default=30, help="games per round over stdio (default 30)")
    parser.add_argument("--pings", type=int, default=16, help="pings before each game (default 16)")
    args = parser.parse_args()
    cc = shutil.which("cc")
    if cc is None:
        raise SystemExit("no C compiler (cc)")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "quarto_bot"
        subprocess.run([cc, "-O2", "-o", str(exe), str(ROOT / "engines" / "c" / "quarto_bot.c")], check=True)
        c1 = EngineConfig("c1", command=(str(exe),))
        c2 = EngineConfig("c2", command=(str(exe),))
        messages = asyncio.run(record_messages(c1, c2, Path(tmp) / "transcript"))
        raw_before = raw_round_trips(exe, messages, Path(tmp), cc, 3)
        rounds = asyncio.run(measure(c1, c2, (), args.rounds, args.games, args.pings))
        raw_after = raw_round_trips(exe, messages, Path(tmp), cc, 3)
        report("stdio, C bot      ", rounds)
        raw_c, raw_py = min(raw_before[0], raw_after[0]), min(raw_before[1], raw_after[1])
        best_turn = min(r.turn_us for r in rounds)
        med_turn = statistics.median(r.turn_us for r in rounds)
        print(
            f"{' ' * 18}  raw round trip, same lines, same bot: C loop {raw_c:6.1f} us, "
            f"bare Python loop {raw_py:6.1f} us (best of 6)\n"
            f"{' ' * 18}  turn / raw C round trip: {best_turn / raw_c:4.2f}x best, "
            f"{med_turn / raw_c:4.2f}x median round;  turn / bare Python loop: {best_turn / raw_py:4.2f}x best"
        )

    endpoints = [f"tcp://127.0.0.1:{free_port()}" for _ in range(2)]
    servers = [subprocess.Popen([*command("greedy"), "--listen", e], start_new_session=True) for e in endpoints]
    try:
        z1 = EngineConfig("z1", endpoint=endpoints[0])
        z2 = EngineConfig("z2", endpoint=endpoints[1])
        zmq_games = max(args.games // 6, 2)
        rounds = asyncio.run(measure(z1, z2, [p.pid for p in servers], max(args.rounds // 2, 3), zmq_games, args.pings))
        report("zmq, Python greedy", rounds)
    finally:
        for p in servers:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    print(f"python {sys.version.split()[0]}; per turn = referee + one position/go round trip (engine search included)")


if __name__ == "__main__":
    main()
