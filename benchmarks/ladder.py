"""The ladder's figures: a ladder of many simulated bots, standings on a large database, and kill -9 with restarts.

    python benchmarks/ladder.py [--bots 100] [--slots 2] [--seconds 600] [--tc st=0.02] [--standings 100000]
                                [--kills 20] [--kill-bots 10] [--stall-seconds 60] [--flood 1000] [--reads 1000]
                                [--skip live,standings,kills,stall,register,reads] [--baseline REV]

1. Live. ``--bots`` simulated bots (SDK bots that pick a random legal turn, several per process, each with its own
   key and connection, ``--slots`` each, ``--stay``) on a ladder with ``-j`` = bots x slots / 2 (every slot can
   play), for ``--seconds`` after all are online. Printed: games/s, the ladder process's CPU per turn, its peak
   RSS, database bytes per game, games per bot in the window (mean, min, max, the largest deviation from the
   mean), and halfway a key added for a new bot: the time from the key file to the bot connected (its process
   started at the same moment, so its start-up is included) and to its first game counted.
2. Standings. A ladder database of ``--standings`` games between 100 bots (random results, one transaction);
   printed: ``quarto-arena ladder standings DIR`` wall time (the goal: at most 2 s) and the fit in-process (median
   of 3 each); with ``--baseline REV`` the same for that git revision (its package from ``git archive``), interleaved.
3. Kills. ``--kill-bots`` bots playing; ``--kills`` times the ladder is killed with SIGKILL at a random moment and
   restarted with the same command. Printed: games the ladder reported counted (its ``game N`` lines, printed after
   each commit) missing from the database (lost), games found twice (the same pair and colours), and the check of
   the database's integrity.

4. Flood (issue 33's first "under attack" bar). ``--flood-bots`` bots playing on a ladder; for ``--flood-seconds``
   without an attack, then as long with half-open TCP connections (engines/testing/half_open.py, sending nothing)
   held from the bots' own address (``--flood-own``, 127.0.0.1) and from ten others (``--flood-others`` in all,
   127.0.0.2-11), each refilled as the server closes it. While the flood is on, ``--flood-joins`` new bots connect
   one after another. Printed: games/s of the bots without and with the flood (and the ratio), the new bots' time
   from their process's start to the arena's welcome (median, worst; their start-up included) and whether each
   played, the reconnections of the playing bots, the games not ended normally, the ladder's peak RSS, its lines
   about the flood (in all, and the most in one second) and its tracebacks.

5. Quiet (issue 36). A ladder of two house engines at ``--tc`` for ``--quiet-seconds``, with and without ``-q``:
   the lines it writes on stderr, per hour.
6. Stall. Four honest bots (2 slots each, the swarm's) on a fresh ladder for ``--stall-seconds`` after all are online,
   then the same with a 16-slot staller connected first (engines/testing/ladder_peer.py: it answers ``begin`` and
   never ``uqi``), then alone again. Printed: the honest bots' games per second among themselves in each run and the
   ratio with the staller to the mean of the two alone (the bar: at least 0.7), and the staller's games (all lost).
7. Register. An ``--open`` ladder where two keyed bots play; ``--registrations`` registrations in a minute from one
   address (each a key of its own), then one from another address (127.0.0.2). Printed: how many registered and were
   refused, the database's bots before and after, the keyed bots' games per second before and during the flood,
   and whether the newcomer from elsewhere registered.
8. Reads. A bot that plays under another ``id name`` every game (4 slots, engines/testing/ladder_peer.py ``rename``:
   a new version each game) against two house engines, while ``ladder standings DIR --format json`` runs ``--reads``
   times, one after another. Printed: the runs that failed (the goal: none), the versions the bot made, how many are
   on the board and how many players it is in the fit.

Figures only, no assertions. The machine may be shared and noisy: say what ran (the first line prints it).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import random
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]
HALF_OPEN = [sys.executable, "-m", "quarto_arena.engines.testing.half_open"]
PER_PROCESS = 25  # simulated bots per swarm process


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def make_keys(directory: Path, names: list[str]) -> None:
    from quarto_arena.arena.server import new_key_pair

    for name in names:
        new_key_pair(directory, name)


# ----------------------------------------------------------------------------------------------------------------
# The swarm: many SDK bots in one process, each its own client (own connection, own key, warm slots)


def swarm(endpoint: str, keys: Path, names: list[str], slots: int) -> None:
    """Serves ``names`` until killed (the benchmark's child process)."""
    from quarto_arena.protocol.bot import Bot, BotSlot
    from quarto_arena.protocol.client import Client, ConnectOptions, serve_connected
    from zmq.auth import load_certificate

    # The client's log, timed (the flood part reads when each bot was welcomed, and its reconnections).
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(created).3f %(message)s")

    class Quick(Bot):
        name = "Quick 1.0"
        author = "benchmarks/ladder.py"

        def search(self, position, ctx):  # type: ignore[no-untyped-def]
            return random.choice(position.legal_turns())

    server, _ = load_certificate(keys / "arena.key")
    threads = []
    for name in names:
        public, secret = load_certificate(keys / f"{name}.key_secret")
        options = ConnectOptions(endpoint, name, slots, public, secret, server, stay=True)

        def make_slot(loop, _number):  # type: ignore[no-untyped-def]
            return BotSlot(Quick(), loop)

        client = Client(make_slot, options)
        t = threading.Thread(target=serve_connected, args=(make_slot, options, client), daemon=True)
        threads.append(t)
        t.start()
    for t in threads:
        t.join()


@contextlib.contextmanager
def swarms(
    endpoint: str, keys: Path, names: list[str], slots: int, log: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = []
    with log.open("ab") as f:
        for i in range(0, len(names), PER_PROCESS):
            chunk = names[i : i + PER_PROCESS]
            argv = [sys.executable, __file__, "--swarm", endpoint, str(keys), str(slots), ",".join(chunk)]
            procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=f, start_new_session=True))
    try:
        yield procs
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


# ----------------------------------------------------------------------------------------------------------------
# Reading the ladder


def query(directory: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    try:
        db = sqlite3.connect(f"file:{directory / 'ladder.db'}?mode=ro", uri=True, timeout=30)
    except sqlite3.OperationalError:
        return []  # not made yet
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def count(directory: Path) -> int:
    rows = query(directory, "SELECT count(*) FROM games")
    return int(rows[0][0]) if rows else 0  # type: ignore[arg-type]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_ladder(directory: Path, endpoint: str, keys: Path, tc: str, j: int) -> subprocess.Popen[str]:
    argv = [*CLI, "ladder", "run", str(directory), "--listen", endpoint, "--keys", str(keys), "--tc", tc]
    return subprocess.Popen(
        [*argv, "-j", str(j), "--random-openings", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stop_ladder(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, as its operator stops it; SIGKILL if it is not over within two minutes."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait(condition: object, timeout: float, what: str) -> float:
    began = time.monotonic()
    while not condition():  # type: ignore[operator]
        if time.monotonic() - began > timeout:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - began


def drain(proc: subprocess.Popen[str], into: list[str], times: list[float] | None = None) -> threading.Thread:
    """Reads the ladder's stderr in a thread (a full pipe would stop it); ``times`` gets when each line came."""

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            into.append(line)
            if times is not None:
                times.append(time.monotonic())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


# ----------------------------------------------------------------------------------------------------------------
# 1. Live


def live(tmp: Path, bots: int, slots: int, seconds: float, tc: str) -> None:
    names = [f"bot{i:03}" for i in range(bots)]
    keys = tmp / "keys"
    make_keys(keys, ["arena", *names])
    endpoint = free_endpoint()
    lad = tmp / "live"
    j = max(1, bots * slots // 2)
    proc = start_ladder(lad, endpoint, keys, tc, j)
    lines: list[str] = []
    drain(proc, lines)
    try:
        with swarms(endpoint, keys, names, slots, tmp / "swarm.log"):
            took = wait(
                lambda: len(query(lad, "SELECT name FROM bots WHERE house = 0")) >= bots, 300, "every bot online"
            )
            print(f"live: {bots} bots x {slots} slots online in {took:.1f} s; -j {j}; tc {tc}; window {seconds:g} s")
            t0, c0, g0 = time.monotonic(), cpu_seconds(proc.pid), count(lad)
            first_id = g0
            key_added = connected = first_game = None
            late = "late000"
            late_proc = None
            while time.monotonic() - t0 < seconds:
                time.sleep(0.05)
                now = time.monotonic() - t0
                if key_added is None and now >= seconds / 2:
                    make_keys(keys, [late])
                    key_added = time.monotonic()
                    argv = [sys.executable, __file__, "--swarm", endpoint, str(keys), str(slots), late]
                    late_proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if (
                    key_added is not None
                    and connected is None
                    and query(lad, "SELECT 1 FROM bots WHERE name=?", (late,))
                ):
                    connected = time.monotonic() - key_added
                if connected is not None and first_game is None:
                    found = query(
                        lad,
                        "SELECT 1 FROM games g JOIN bots b ON b.id IN (g.first, g.second) WHERE b.name = ? LIMIT 1",
                        (late,),
                    )
                    if found:
                        first_game = time.monotonic() - key_added
            elapsed = time.monotonic() - t0
            c1, g1 = cpu_seconds(proc.pid), count(lad)
            peak = peak_rss_mb(proc.pid)
            if late_proc is not None:
                late_proc.kill()
                late_proc.wait()
    finally:
        stop_ladder(proc)
    games = g1 - g0
    turns = (
        query(
            lad,
            "SELECT sum(json_array_length(turns) - json_array_length(opening)) FROM games WHERE id > ? AND id <= ?",
            (g0, g1),
        )[0][0]
        or 0
    )
    size = sum(p.stat().st_size for p in lad.iterdir() if p.name.startswith("ladder.db"))
    total = count(lad)
    per_bot = dict.fromkeys(names, 0)
    for name, n in query(
        lad,
        "SELECT b.name, count(*) FROM games g JOIN bots b ON b.id IN (g.first, g.second)"
        " WHERE g.id > ? AND g.id <= ? GROUP BY b.name",
        (first_id, g1),
    ):
        if name in per_bot:
            per_bot[str(name)] = int(n)  # type: ignore[call-overload]
    mean = statistics.mean(per_bot.values())
    worst = max(abs(v - mean) for v in per_bot.values()) / mean if mean else float("nan")
    print(f"live: {games} games in {elapsed:.1f} s = {games / elapsed:.1f} games/s, {turns} engine turns")
    print(
        f"live: ladder CPU {c1 - c0:.1f} s = {1e6 * (c1 - c0) / max(1, turns):.0f} µs per turn; peak RSS {peak:.0f} MB"
    )
    print(f"live: database {size / 1e6:.1f} MB for {total} games = {size / max(1, total):.0f} bytes per game")
    print(
        f"live: games per bot in the window: mean {mean:.1f}, min {min(per_bot.values())},"
        f" max {max(per_bot.values())}, largest deviation {100 * worst:.1f}% of the mean"
    )
    show = lambda v: "not seen" if v is None else f"{v:.2f} s"  # noqa: E731
    print(f"live: key added -> bot connected {show(connected)}, -> its first game counted {show(first_game)}")


# ----------------------------------------------------------------------------------------------------------------
# 4. A flood of half-open connections


def flood(tmp: Path, bots: int, seconds: float, own: int, others: int, joins: int, tc: str) -> None:
    names = [f"bot{i:03}" for i in range(bots)]
    late = [f"new{i:03}" for i in range(joins)]
    keys = tmp / "flood-keys"
    make_keys(keys, ["arena", *names, *late])
    endpoint = free_endpoint()
    lad = tmp / "flood"
    proc = start_ladder(lad, endpoint, keys, tc, max(1, bots // 2 + joins))
    lines: list[str] = []
    came: list[float] = []
    drain(proc, lines, came)
    stamped: list[tuple[float, str]] = []
    port = endpoint.rsplit(":", 1)[1]
    sources = [f"127.0.0.1={own}", *(f"127.0.0.{i}={others // 10}" for i in range(2, 12))]
    log = tmp / "flood-swarm.log"
    try:
        with swarms(endpoint, keys, names, 1, log) as players:
            wait(lambda: len(query(lad, "SELECT name FROM bots WHERE house = 0")) >= bots, 300, "every bot online")
            time.sleep(2)
            cpu = [proc.pid, *(p.pid for p in players)]
            t0, g0, c0 = time.monotonic(), count(lad), [cpu_seconds(pid) for pid in cpu]
            time.sleep(seconds)
            q1, c1 = count(lad), [cpu_seconds(pid) for pid in cpu]
            quiet = (q1 - g0) / (time.monotonic() - t0)
            quiet_cpu = [(b - a) / (time.monotonic() - t0) for a, b in zip(c0, c1, strict=True)]
            mark = len(log.read_text().splitlines())
            before = len(lines)
            # At the lowest priority: on a real attack the attacker's CPU is not the arena's machine's.
            attacker = subprocess.Popen(
                [*HALF_OPEN, f"127.0.0.1:{port}", str(seconds + 60), *sources],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=lambda: os.nice(19),
            )
            flood_began = time.monotonic()
            assert attacker.stderr is not None
            attacker.stderr.readline()  # holding: the flood is on
            time.sleep(2)
            t1, g1, c2 = time.monotonic(), count(lad), [cpu_seconds(pid) for pid in cpu]
            welcomed: list[float | None] = []
            for name in late:
                start = time.time()
                argv = [sys.executable, __file__, "--swarm", endpoint, str(keys), "1", name]
                bot = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                began = time.monotonic()
                got = None
                assert bot.stderr is not None
                while time.monotonic() - began < seconds / max(1, joins) + 30:
                    line = bot.stderr.readline()
                    if not line:
                        break
                    if " connected to " in line:
                        got = float(line.split()[0]) - start
                        break
                welcomed.append(got)
                threading.Thread(target=bot.stderr.read, daemon=True).start()
                time.sleep(max(0.0, t1 + (len(welcomed)) * seconds / max(1, joins) - time.monotonic()))
            time.sleep(max(0.0, t1 + seconds - time.monotonic()))
            f1, c3 = count(lad), [cpu_seconds(pid) for pid in cpu]
            flooded = (f1 - g1) / (time.monotonic() - t1)
            flood_cpu = [(b - a) / (time.monotonic() - t1) for a, b in zip(c2, c3, strict=True)]
            peak = peak_rss_mb(proc.pid)
            attacker.terminate()
            _, said = attacker.communicate()
            flood_lasted = time.monotonic() - flood_began
            stamped = list(zip(came[before:], lines[before:], strict=False))
            reconnects = sum("lost the connection" in line for line in log.read_text().splitlines()[mark:])
    finally:
        stop_ladder(proc)
    played = [
        bool(query(lad, "SELECT 1 FROM games g JOIN bots b ON b.id IN (g.first, g.second) WHERE b.name = ?", (n,)))
        for n in late
    ]

    def abnormal(first: int, last: int) -> object:
        sql = "SELECT termination, count(*) FROM games WHERE id > ? AND id <= ? AND termination != 'normal' GROUP BY 1"
        return dict(query(lad, sql, (first, last))) or "none"  # type: ignore[arg-type]

    told = [t for t, line in stamped if "had not said hello" in line or "closed a connection" in line]
    gap = min((b - a for a, b in itertools.pairwise(told)), default=float("nan"))
    times = sorted(t for t in welcomed if t is not None)
    opened = int(said.split()[-1]) if said.strip() else 0
    print(
        f"flood: {bots} bots playing, tc {tc}; {own} half-open connections from 127.0.0.1 and {others} from"
        f" 127.0.0.2-11, each refilled once closed (the attacker at nice 19): {opened} opened in"
        f" {flood_lasted:.0f} s = {opened / flood_lasted:.0f}/s; load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"flood: games/s without {quiet:.1f}, with the flood {flooded:.1f} ({flooded / quiet:.2f}x);"
        f" ladder peak RSS {peak:.0f} MB"
    )
    print(
        f"flood: CPU (cores) of the ladder {quiet_cpu[0]:.2f} without, {flood_cpu[0]:.2f} with the flood; of the"
        f" bots' process{'es' * (len(cpu) > 2)} {sum(quiet_cpu[1:]):.2f} without, {sum(flood_cpu[1:]):.2f} with"
    )
    if times:
        print(
            f"flood: {len(times)} of {joins} new bots welcomed, from their process's start: median"
            f" {statistics.median(times):.2f} s, worst {times[-1]:.2f} s; {sum(played)} of {joins} played"
        )
    else:
        print(f"flood: none of {joins} new bots was welcomed")
    print(
        f"flood: games not ended normally: without {abnormal(g0, q1)}, with the flood {abnormal(g1, f1)};"
        f" reconnections of the playing bots {reconnects}"
    )
    print(
        f"flood: ladder lines about the flood {len(told)} in {flood_lasted:.0f} s (shortest gap {gap:.2f} s);"
        f" tracebacks {sum('Traceback' in line for _, line in stamped)}"
    )


# ----------------------------------------------------------------------------------------------------------------
# 5. The lines of a quiet ladder


def quiet(tmp: Path, seconds: float, tc: str) -> None:
    from quarto_arena.protocol.safelog import SUMMARY_INTERVAL

    for flags in ([], ["-q"]):
        lad = tmp / f"quiet{len(flags)}"
        argv = [*CLI, "ladder", "run", str(lad), "--house", "random", "--house", "greedy", "--tc", tc, *flags]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        drain(proc, lines)
        time.sleep(seconds)
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        games = count(lad)
        routine = [line for line in lines if re.match(r"(quarto-arena: )?(game \d+:|server: .* (dis)?connected)", line)]
        summaries = [line for line in lines if " in the last " in line]
        other = len(lines) - len(routine) - len(summaries)
        print(
            f"quiet: ladder run {' '.join(flags) or '(no -q)'}: {len(lines)} lines in {seconds:g} s for {games} games:"
            f" {len(routine)} routine (a game, a connection), {len(summaries)} summaries, {other} others (start, stop);"
            f" an hour at this rate: {len(routine) * 3600 / seconds:,.0f} routine lines,"
            f" {3600 / SUMMARY_INTERVAL if flags else 0:.0f} summaries"
        )


# ----------------------------------------------------------------------------------------------------------------
# 2. Standings on a large database


def standings(tmp: Path, games: int, baseline: str | None = None) -> None:
    from quarto_arena.arena.ladder import LadderDB
    from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord

    lad = tmp / "big"
    lad.mkdir()
    db = LadderDB.open(lad / "ladder.db")
    rng = random.Random(1)
    strength = {f"bot{i:03}": rng.gauss(0, 200) for i in range(100)}
    names = list(strength)
    turns = tuple(TurnRecord(t, 5) for t in ("a1b", "b2c", "c3d", "d4e", "a2f", "b3g", "c4h", "d1i", "a3j"))
    batch: list[tuple[GameRecord, int]] = []
    began = time.monotonic()
    for k in range(games):
        a, b = rng.sample(names, 2)
        p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
        x = rng.random()
        result = Result.FIRST_WINS if x < p * 0.9 else Result.DRAW if x < p * 0.9 + 0.1 else Result.SECOND_WINS
        ident = (EngineIdentity(a.upper(), "x"), EngineIdentity(b.upper(), "x"))
        batch.append((GameRecord(a, b, result, Termination.NORMAL, turns=turns, engines=ident), k // 2 + 1))
        if len(batch) == 5000:
            db.add_games(batch)
            batch.clear()
    if batch:
        db.add_games(batch)
    made = time.monotonic() - began
    size = (lad / "ladder.db").stat().st_size + sum(p.stat().st_size for p in lad.glob("ladder.db-*"))
    t = time.monotonic()
    db.state()  # what a fit reads
    read = time.monotonic() - t
    db.close()
    print(f"standings: {games} games between 100 bots written in {made:.1f} s ({size / games:.0f} bytes per game)")
    trees = {"this tree": None}
    if baseline is not None:
        # The baseline's package from git, first on the path (ahead of the editable install): both measured in turn.
        base = tmp / "baseline" / "quarto_arena"
        base.mkdir(parents=True)
        root = Path(__file__).resolve().parent.parent
        archive = subprocess.run(["git", "-C", str(root), "archive", baseline], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        trees[f"baseline {baseline}"] = str(base.parent)
    refit_code = (
        "import sys, time; from pathlib import Path; from quarto_arena.arena.ladder import LadderDB, standings;"
        "db = LadderDB.open(Path(sys.argv[1]), create=False); s = db.state(); db.close();"
        "t = time.monotonic(); standings(s, fresh=True); print(time.monotonic() - t)"
    )
    runs: dict[str, list[float]] = {name: [] for name in trees}
    refits: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(3):  # interleaved, so that both see the same load
        for name, path in trees.items():
            env = dict(os.environ) if path is None else {**os.environ, "PYTHONPATH": path}
            t = time.monotonic()
            out = subprocess.run([*CLI, "ladder", "standings", str(lad)], capture_output=True, text=True, env=env)
            runs[name].append(time.monotonic() - t)
            if out.returncode != 0:
                sys.exit(out.stderr)
            out = subprocess.run(
                [sys.executable, "-c", refit_code, str(lad / "ladder.db")], capture_output=True, text=True, env=env
            )
            if out.returncode != 0:
                sys.exit(out.stderr)
            refits[name].append(float(out.stdout))
    for name in trees:
        print(
            f"standings ({name}): `quarto-arena ladder standings` {statistics.median(runs[name]):.2f} s"
            f" (median of 3, goal <= 2 s); fit in-process {statistics.median(refits[name]):.2f} s (median of 3)"
        )
    print(f"standings: read the tallies in-process {read:.2f} s; load average {os.getloadavg()[0]:.1f}")


# ----------------------------------------------------------------------------------------------------------------
# 3. kill -9 and restart


def kills(tmp: Path, times: int, bots: int, tc: str) -> None:
    names = [f"k{i:02}" for i in range(bots)]
    keys = tmp / "kkeys"
    make_keys(keys, ["arena", *names])
    endpoint = free_endpoint()
    lad = tmp / "kill"
    reported: dict[int, tuple[str, str]] = {}
    rng = random.Random(7)
    pattern = re.compile(r"^(?:quarto-arena: )?game (\d+): (\S+) - (\S+) ")
    with swarms(endpoint, keys, names, 2, tmp / "kswarm.log"):
        for k in range(times + 1):
            proc = start_ladder(lad, endpoint, keys, tc, bots)
            lines: list[str] = []
            reader = drain(proc, lines)
            before = count(lad)
            wait(lambda before=before: count(lad) > before, 120, "games after a restart")
            if k < times:
                time.sleep(rng.uniform(0.0, 3.0))
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.send_signal(signal.SIGTERM)
            proc.wait(120)
            reader.join(10)
            for line in lines:
                if m := pattern.match(line):
                    reported[int(m.group(1))] = (m.group(2), m.group(3))
    rows = query(
        lad,
        "SELECT g.id, f.name, s.name, g.pair FROM games g JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second",
    )
    stored = {int(r[0]): (str(r[1]), str(r[2])) for r in rows}  # type: ignore[call-overload]
    lost = [g for g, who in reported.items() if stored.get(g) != who]
    keys_seen: dict[tuple[object, ...], int] = {}
    for _, first, second, pair in rows:
        keys_seen[(pair, first, second)] = keys_seen.get((pair, first, second), 0) + 1
    twice = sum(n - 1 for n in keys_seen.values() if n > 1)
    integrity = query(lad, "PRAGMA integrity_check")[0][0]
    print(
        f"kills: {times} SIGKILLs with {bots} bots playing, each followed by the same command: {len(stored)} games"
        f" counted, {len(reported)} reported; lost {len(lost)}, counted twice {twice}; integrity {integrity}"
    )


PEER = [sys.executable, "-m", "quarto_arena.engines.testing.ladder_peer"]


def honest_games(directory: Path, hostile: str) -> int:
    rows = query(
        directory,
        "SELECT count(*) FROM games g JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second"
        " WHERE ? NOT IN (f.name, s.name)",
        (hostile,),
    )
    return int(rows[0][0]) if rows else 0  # type: ignore[call-overload]


def stall(tmp: Path, seconds: float, tc: str) -> None:
    names = [f"honest{i}" for i in range(4)]
    keys = tmp / "stall-keys"
    make_keys(keys, ["arena", *names, "staller"])
    rates: dict[str, float] = {}
    staller_games: list[tuple[object, ...]] = []
    for run in ("alone", "with a staller", "alone again"):
        lad = tmp / f"stall-{len(rates)}"
        endpoint = free_endpoint()
        proc = start_ladder(lad, endpoint, keys, tc, 4)
        lines: list[str] = []
        drain(proc, lines)
        staller = None
        try:
            if run == "with a staller":
                argv = [*PEER, "stall", endpoint, "--server-key", str(keys / "arena.key"), "--name", "staller"]
                staller = subprocess.Popen(
                    [*argv, "--key", str(keys / "staller.key_secret"), "--slots", "16"], stdout=subprocess.DEVNULL
                )
                wait(lambda lad=lad: query(lad, "SELECT 1 FROM bots WHERE name = 'staller'"), 60, "the staller")
            with swarms(endpoint, keys, names, 2, tmp / "stall-swarm.log"):
                wait(
                    lambda lad=lad: len(query(lad, "SELECT 1 FROM bots WHERE name LIKE 'honest%'")) == len(names),
                    120,
                    "the honest bots online",
                )
                g0, t0 = honest_games(lad, "staller"), time.monotonic()
                time.sleep(seconds)
                g1, t1 = honest_games(lad, "staller"), time.monotonic()
            rates[run] = (g1 - g0) / (t1 - t0)
            if staller is not None:
                staller_games = query(
                    lad,
                    "SELECT g.result = (CASE WHEN f.name = 'staller' THEN '0-1' ELSE '1-0' END), g.termination"
                    " FROM games g JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second"
                    " WHERE 'staller' IN (f.name, s.name)",
                )
        finally:
            if staller is not None:
                staller.kill()
                staller.wait()
            proc.send_signal(signal.SIGTERM)
            proc.wait(120)
    alone = (rates["alone"] + rates["alone again"]) / 2
    lost = sum(1 for won, _ in staller_games if won)
    how = sorted({str(t) for _, t in staller_games})
    print(
        f"stall: 4 honest bots x 2 slots, {seconds:g} s each run, --tc {tc}: {rates['alone']:.1f} games/s alone,"
        f" {rates['with a staller']:.1f} with a 16-slot staller, {rates['alone again']:.1f} alone again: ratio"
        f" {rates['with a staller'] / alone:.2f} (bar: >= 0.7); the staller's games {len(staller_games)}, lost"
        f" {lost} ({', '.join(how) or 'none'})"
    )


def register(tmp: Path, flood: int, tc: str) -> None:
    names = ["keyed0", "keyed1"]
    keys = tmp / "register-keys"
    make_keys(keys, ["arena", *names])
    lad = tmp / "register"
    endpoint = free_endpoint()
    argv = [*CLI, "ladder", "run", str(lad), "--listen", endpoint, "--keys", str(keys), "--tc", tc, "--open"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    drain(proc, lines)
    try:
        with swarms(endpoint, keys, names, 1, tmp / "register-swarm.log"):
            wait(lambda: len(query(lad, "SELECT 1 FROM bots")) == 2, 120, "the keyed bots online")
            time.sleep(5)
            bots0 = len(query(lad, "SELECT 1 FROM bots"))
            g0, t0 = count(lad), time.monotonic()
            time.sleep(20)
            g1, t1 = count(lad), time.monotonic()
            server_key = str(keys / "arena.key")
            out = subprocess.run(
                [
                    *PEER,
                    "register",
                    endpoint,
                    "--server-key",
                    server_key,
                    "--count",
                    str(flood),
                    "--per-minute",
                    str(flood),
                    "--wait",
                    "1",
                ],
                capture_output=True,
                text=True,
            )
            g2, t2 = count(lad), time.monotonic()
            other = endpoint.replace("tcp://", "tcp://127.0.0.2:0;")
            newcomer = subprocess.run(
                [
                    *PEER,
                    "register",
                    other,
                    "--server-key",
                    server_key,
                    "--count",
                    "1",
                    "--per-minute",
                    "60",
                    "--prefix",
                    "elsewhere",
                ],
                capture_output=True,
                text=True,
            )
            bots1 = len(query(lad, "SELECT 1 FROM bots"))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    result = json.loads(out.stdout)
    joined = json.loads(newcomer.stdout)["welcome"] == 1
    print(
        f"register: {flood} registrations in {t2 - t1:.0f} s from one address on an --open ladder: {result['welcome']}"
        f" registered, {result['refused']} refused, {result['silent']} unanswered; bots in the database {bots0} ->"
        f" {bots1} (the newcomer included); the keyed bots' games/s {(g1 - g0) / (t1 - t0):.1f} before,"
        f" {(g2 - g1) / (t2 - t1):.1f} during; a newcomer from 127.0.0.2 {'registered' if joined else 'REFUSED'}"
    )


def reads(tmp: Path, times: int, tc: str) -> None:
    keys = tmp / "reads-keys"
    make_keys(keys, ["arena", "renamer"])
    lad = tmp / "reads"
    endpoint = free_endpoint()
    argv = [*CLI, "ladder", "run", str(lad), "--listen", endpoint, "--keys", str(keys), "--tc", tc, "-j", "4"]
    argv += ["--house", "random", "--house", "greedy"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    drain(proc, lines)
    peer = [*PEER, "rename", endpoint, "--server-key", str(keys / "arena.key"), "--name", "renamer"]
    renamer = subprocess.Popen([*peer, "--key", str(keys / "renamer.key_secret")], stdout=subprocess.DEVNULL)
    failures: list[str] = []
    try:
        wait(lambda: count(lad) > 10, 120, "games")
        began = time.monotonic()
        for _ in range(times):
            out = subprocess.run([*CLI, "ladder", "standings", str(lad), "--format", "json"], capture_output=True)
            if out.returncode != 0:
                failures.append(out.stderr.decode(errors="replace").strip()[-200:])
        took = time.monotonic() - began
        versions = query(
            lad,
            "SELECT count(*), sum(v.retired IS NULL) FROM versions v JOIN bots b ON b.id = v.bot"
            " WHERE b.name = 'renamer'",
        )[0]
        table = subprocess.run(
            [*CLI, "ladder", "standings", str(lad), "--format", "json", "--by-version", "--all", "--refit"],
            capture_output=True,
            text=True,
        )
        if table.returncode != 0:
            sys.exit(f"ladder standings --refit: exit {table.returncode}: {table.stderr.strip()[-500:]}")
        players = sum(1 for row in json.loads(table.stdout) if row["bot"] == "renamer")
    finally:
        renamer.kill()
        renamer.wait()
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    print(
        f"reads: {times} `ladder standings` in {took:.0f} s while a bot renamed itself every game: {len(failures)}"
        f" failed{': ' + failures[0] if failures else ''}; the bot made {versions[0]} versions, {versions[1]} on the"
        f" board, {players} players in the fit; {count(lad)} games counted"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=100)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--tc", default="st=0.02")
    parser.add_argument("--standings", type=int, default=100_000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--kill-bots", type=int, default=10)
    parser.add_argument("--flood-bots", type=int, default=20)
    parser.add_argument("--flood-seconds", type=float, default=30.0)
    parser.add_argument("--flood-own", type=int, default=1500)
    parser.add_argument("--flood-others", type=int, default=2000)
    parser.add_argument("--flood-joins", type=int, default=5)
    parser.add_argument("--quiet-seconds", type=float, default=60.0)
    parser.add_argument("--stall-seconds", type=float, default=60.0)
    parser.add_argument("--registrations", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=1000)
    parser.add_argument(
        "--skip",
        default="",
        help="parts to skip: live, standings, kills, flood, quiet, stall, register, reads (comma-separated)",
    )
    parser.add_argument("--baseline", metavar="REV", help="standings: also time this git revision, interleaved")
    parser.add_argument("--swarm", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.swarm:
        endpoint, keys, slots, names = args.swarm
        swarm(endpoint, Path(keys), names.split(","), int(slots))
        return
    skip = set(args.skip.split(",")) - {""}
    print(f"benchmarks/ladder.py on {os.cpu_count()} cores: {' '.join(sys.argv[1:]) or '(defaults)'}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "live" not in skip:
            live(tmp, args.bots, args.slots, args.seconds, args.tc)
        if "standings" not in skip:
            standings(tmp, args.standings, args.baseline)
        if "kills" not in skip:
            kills(tmp, args.kills, args.kill_bots, args.tc)
        if "quiet" not in skip:
            quiet(tmp, args.quiet_seconds, args.tc)
        if "flood" not in skip:
            flood(
                tmp, args.flood_bots, args.flood_seconds, args.flood_own, args.flood_others, args.flood_joins, args.tc
            )
        if "stall" not in skip:
            stall(tmp, args.stall_seconds, args.tc)
        if "register" not in skip:
            register(tmp, args.registrations, args.tc)
        if "reads" not in skip:
            reads(tmp, args.reads, args.tc)


if __name__ == "__main__":
    main()
