"""A ladder of a million games: how long its commands take to start, and how fast a ladder starting on it answers
SIGTERM.

    python benchmarks/ladder_big.py [--games 1000000] [--bots 1000] [--dir DIR] [--sigterms 20] [--skip-generate]

1. Generate. ``--games`` games between ``--bots`` bots written straight into a new ``DIR/ladder.db`` of the current
   schema (rows, checksums and tallies as the ladder writes them, by executemany: about a minute, where playing them
   would take five hours): about a hundred bots online at a time, the window sliding over the field, strengths
   spread 200 Elo, 10% draws, 2% forfeits, a tenth of the bots with two versions. Then the ladder's own refit of
   everything (what its fitting process does, in the background, after games are counted), stored.
2. Start times (goal: each within 5 s): ``ladder standings DIR`` to its table (median of 3); ``ladder export DIR
   --pgn`` to its first game written and to its end; ``ladder run DIR --house random --house greedy --web`` to its
   page announced, to its leaderboard served with every bot, and to its first game counted; then SIGTERM to exit.
3. SIGTERM at random moments of a start (``--sigterms`` times, within the first 5 s of ``ladder run --web``): the
   time from the signal to the process's exit (goal: within 1 s), median and worst, and each exit status.

Figures only, no assertions; the first line says what ran. ``ladder check DIR`` (every game read and verified) is
timed last.
"""

from __future__ import annotations

import argparse
import json
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
import urllib.request
from pathlib import Path

CLI = [sys.executable, "-c", "from quarto_arena.arena.console import main; main()"]
ONLINE = 100  # bots online at a time


def generate(directory: Path, games: int, bots: int, seed: int = 1) -> None:
    from quarto_arena.arena.ladder import LadderDB
    from quarto_arena.arena.ladder.schema import (
        GAME_FIELDS,
        MEETINGS_FROM_TALLIES,
        game_checksum,
        tally_checksum,
        total_checksum,
        totals_of,
    )

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "ladder.db"
    for stale in directory.glob("ladder.db*"):
        stale.unlink()
    LadderDB.open(path).close()
    rng = random.Random(seed)
    names = [f"bot{i:04}" for i in range(bots)]
    strength = [rng.gauss(0, 200) for _ in names]
    when = "2026-01-01T00:00:00Z"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO bots (id, name, first_seen, last_seen) VALUES (?, ?, ?, ?)",
        [(i + 1, n, when, when) for i, n in enumerate(names)],
    )
    versions: list[list[int]] = []
    engines: list[list[str]] = []
    vid = 0
    for i, n in enumerate(names):
        mine = []
        for number in range(1, 3 if i % 10 == 0 else 2):
            vid += 1
            db.execute(
                "INSERT INTO versions (id, bot, number, id_name, author, first_seen) VALUES (?, ?, ?, ?, ?, ?)",
                (vid, i + 1, number, f"{n.upper()} {number}.0", "benchmarks", when),
            )
            mine.append(vid)
        versions.append(mine)
        engines.append(
            [
                json.dumps(
                    {"name": f"{n.upper()} {k}.0", "author": "benchmarks", "protocol": 1, "source": f"remote:{n}"}
                )
                for k in (1, 2)
            ]
        )
    db.execute("COMMIT")
    turns = json.dumps(
        [[t, 5, None] for t in ("a1b", "b2c", "c3d", "d4e", "a2f", "b3g", "c4h", "d1i", "a3j")], separators=(",", ":")
    )
    tallies: dict[tuple[int, int, str, str], int] = {}
    rows = []
    sql = f"INSERT INTO games ({GAME_FIELDS}, checksum) VALUES ({', '.join('?' * 18)})"
    began = time.monotonic()
    for k in range(games):
        base = k * bots // games
        a = (base + rng.randrange(ONLINE)) % bots
        b = (base + 1 + (rng.randrange(ONLINE - 1) + a - base) % (ONLINE - 1)) % bots
        if a == b:
            b = (b + 1) % bots
        late = k > games // 2
        va = versions[a][-1] if late else versions[a][0]
        vb = versions[b][-1] if late else versions[b][0]
        p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
        x = rng.random()
        result = "1/2-1/2" if x < 0.1 else "1-0" if rng.random() < p else "0-1"
        termination = "time forfeit" if result != "1/2-1/2" and rng.random() < 0.02 else "normal"
        idents = f"[{engines[a][va != versions[a][0]]},{engines[b][vb != versions[b][0]]}]"
        fields = (
            k // 2 + 1,
            a + 1,
            b + 1,
            va,
            vb,
            result,
            termination,
            "",
            when,
            when,
            "standard",
            "st=1",
            "startpos",
            "[]",
            turns,
            "{}",
            idents,
        )
        rows.append((*fields, game_checksum(fields)))
        key = (va, vb, result, termination)
        tallies[key] = tallies.get(key, 0) + 1
        if len(rows) == 50_000:
            db.execute("BEGIN")
            db.executemany(sql, rows)
            db.execute("COMMIT")
            rows.clear()
    db.execute("BEGIN")
    db.executemany(sql, rows)
    db.executemany(
        "INSERT INTO tallies (first_version, second_version, result, termination, count, checksum)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(*key, n, tally_checksum(*key, n)) for key, n in tallies.items()],
    )
    db.executemany(
        "INSERT INTO totals (version, termination, wins, draws, losses, checksum) VALUES (?, ?, ?, ?, ?, ?)",
        [(*key, *n, total_checksum(*key, *n)) for key, n in totals_of((*k, n) for k, n in tallies.items()).items()],
    )
    db.execute(MEETINGS_FROM_TALLIES)
    db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES ('anchor', ?)", (json.dumps(None),))
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    made = time.monotonic() - began
    size = path.stat().st_size
    print(
        f"generate: {games:,} games between {bots:,} bots ({len(tallies):,} tallies) written in {made:.0f} s,"
        f" {size / 1e6:.0f} MB"
    )


def refit(directory: Path) -> None:
    """The ladder's refit of everything, stored (what its fitting process does after games are counted)."""
    from quarto_arena.arena.ladder import LadderDB, standings
    from quarto_arena.arena.ladder.standings import stored_ratings

    db = LadderDB.open(directory / "ladder.db", create=False)
    t = time.monotonic()
    state = db.state()
    read = time.monotonic() - t
    t = time.monotonic()
    fitted = standings(state, fresh=True, by_version=True, everything=True)
    took = time.monotonic() - t
    assert fitted.table is not None
    db.save_fit(fitted.through, fitted.games, None, stored_ratings(fitted.table, state.bots))
    db.close()
    print(
        f"refit: the ladder's fit of everything (in its own process, in the background): read {read:.1f} s,"
        f" fit {took:.1f} s; stored"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(argv: list[str]) -> float:
    t = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True)
    took = time.monotonic() - t
    if out.returncode != 0:
        sys.exit(f"{' '.join(argv[3:])}: exit {out.returncode}: {out.stderr[-500:]}")
    return took


def starts(directory: Path) -> None:
    runs = [timed([*CLI, "ladder", "standings", str(directory)]) for _ in range(3)]
    shown = json.loads(
        subprocess.run(
            [*CLI, "ladder", "standings", str(directory), "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    rated = sum(1 for row in shown if row["rating"] is not None)
    print(f"standings: `quarto-arena ladder standings` {statistics.median(runs):.2f} s (median of 3; goal <= 5 s)")
    pgn = directory.parent / "export" / "all.pgn"
    t = time.monotonic()
    proc = subprocess.Popen([*CLI, "ladder", "export", str(directory), "--pgn", str(pgn)], stderr=subprocess.PIPE)
    first = None
    while proc.poll() is None:
        if first is None and pgn.exists() and pgn.stat().st_size > 0:
            first = time.monotonic() - t
        time.sleep(0.02)
    total = time.monotonic() - t
    first_text = "not seen" if first is None else f"{first:.2f} s"
    print(
        f"export: first game written at {first_text} (goal <= 5 s), every game at {total:.1f} s,"
        f" {pgn.stat().st_size / 1e6:.0f} MB of PGN"
    )
    pgn.unlink()
    port = free_port()
    argv = [*CLI, "ladder", "run", str(directory), "--house", "random", "--house", "greedy", "--tc", "st=0.05"]
    t = time.monotonic()
    proc = subprocess.Popen(
        [*argv, "--web", f"127.0.0.1:{port}"], stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    marks: dict[str, float] = {}
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            now = time.monotonic() - t
            if line.startswith("ladder page:"):
                marks.setdefault("page", now)
            elif line.startswith("Ladder in"):
                marks.setdefault("started", now)
            elif re.match(r"game \d+:", line):
                marks.setdefault("game", now)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    board = None
    while time.monotonic() - t < 120 and proc.poll() is None:
        if "page" in marks:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/standings", timeout=5) as r:
                    table = json.loads(r.read())["lines"]
                if board is None and sum(1 for row in table if row["rating"] is not None) >= rated:
                    board = time.monotonic() - t
            except OSError:
                pass
        if board is not None and "game" in marks:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    s = time.monotonic()
    proc.wait(60)
    stopped = time.monotonic() - s
    reader.join(5)
    show = lambda v: "not seen" if v is None else f"{v:.2f} s"  # noqa: E731
    print(
        f"run --web: page announced {show(marks.get('page'))}, started {show(marks.get('started'))}, leaderboard"
        f" of {rated:,} rated bots served {show(board)}, first game counted {show(marks.get('game'))} (goal <= 5 s);"
        f" SIGTERM -> exit {stopped:.2f} s (status {proc.returncode})"
    )
    if proc.returncode != 143:
        print("".join(lines[-5:]))


def sigterms(directory: Path, times: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    waits = []
    statuses = []
    for _ in range(times):
        port = free_port()
        argv = [
            *CLI,
            "ladder",
            "run",
            str(directory),
            "--house",
            "random",
            "--house",
            "greedy",
            "--tc",
            "st=0.05",
            "--web",
            f"127.0.0.1:{port}",
        ]
        proc = subprocess.Popen(argv, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.2, 5.0))
        proc.send_signal(signal.SIGTERM)
        s = time.monotonic()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        waits.append(time.monotonic() - s)
        statuses.append(proc.returncode)
    print(
        f"sigterm: {times} SIGTERMs at random moments of the first 5 s of `ladder run --web`: exit within"
        f" {statistics.median(waits):.2f} s (median), {max(waits):.2f} s (worst; goal <= 1 s);"
        f" statuses {sorted(set(statuses))}"
    )


def check(directory: Path) -> None:
    t = time.monotonic()
    out = subprocess.run([*CLI, "ladder", "check", str(directory)], capture_output=True, text=True)
    print(
        f"check: `quarto-arena ladder check` {time.monotonic() - t:.1f} s, exit {out.returncode}:"
        f" {out.stderr.strip().splitlines()[-1]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--dir", type=Path, help="where the ladder goes (kept); default: a temporary directory")
    parser.add_argument("--sigterms", type=int, default=20)
    parser.add_argument("--skip-generate", action="store_true", help="use the ladder already in --dir")
    args = parser.parse_args()
    print(
        f"benchmarks/ladder_big.py on {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}:"
        f" {' '.join(sys.argv[1:]) or '(defaults)'}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        directory = (args.dir or Path(tmp)) / "lad"
        if not args.skip_generate:
            generate(directory, args.games, args.bots)
            refit(directory)
        starts(directory)
        sigterms(directory, args.sigterms)
        check(directory)


if __name__ == "__main__":
    main()
