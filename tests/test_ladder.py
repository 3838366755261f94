"""The ladder end to end: real `quarto-arena ladder` processes, real bots connecting in over CurveZMQ with real
key files, a real SQLite database; signals, kill -9 and restarts."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import procs
import pytest
from procs import cli, free_port, group_members, present, sdk_bot, started, wait_listening
from quarto_arena.arena.ladder import LadderDB, LadderDBError
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.server import new_key_pair

wait_until = functools.partial(procs.wait_until, timeout=90.0)  # a ladder's games, on a loaded machine


def counted(directory: Path, where: str = "1") -> int:
    """Games counted in the ladder's database, read as any user's sqlite3 would (read-only, alongside the ladder)."""
    path = directory / "ladder.db"
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        sql = "SELECT count(*) FROM games g JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second WHERE " + where
        return int(db.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not created yet
    finally:
        db.close()


start_ladder = procs.ladder_process
stop = procs.stop_ladder


HOUSE = ["--house", "random", "--house", "greedy", "--house", "r2=random", "-j", "2"]


def test_a_house_ladder_counts_stops_on_signals_continues_and_agrees_with_rate(tmp_path: Path) -> None:
    lad = tmp_path / "lad"
    proc = start_ladder(lad, *HOUSE)
    try:
        wait_until(lambda: counted(lad) >= 12, proc=proc)
        status, err = stop(proc, signal.SIGTERM)
    finally:
        proc.kill()
    assert status == 143, err
    # The documented way to stop a ladder is no error: one calm line, and the status of the signal.
    assert re.search(
        r"^ladder stopped by SIGTERM: \d+ games counted, \d+ abandoned in flight \(not counted\);"
        r" continue with the same command$",
        err,
        re.M,
    ), err
    assert "error" not in err
    first = counted(lad)
    # The same command continues: the games counted stay, more come; SIGINT and SIGHUP stop it as cleanly.
    for signum, code in ((signal.SIGINT, 130), (signal.SIGHUP, 129)):
        before = counted(lad)
        proc = start_ladder(lad, *HOUSE)
        try:
            wait_until(lambda before=before: counted(lad) >= before + 6, proc=proc)
            status, err = stop(proc, signum)
        finally:
            proc.kill()
        assert status == code, err
        assert "error" not in err and "interrupted" not in err, err
    assert counted(lad) >= first + 12
    # Every two house engines met, in colour-swapped pairs from one opening.
    db = sqlite3.connect(lad / "ladder.db")
    pairs = db.execute("SELECT pair, first, second, start, opening FROM games ORDER BY id").fetchall()
    db.close()
    by_pair: dict[int, list[tuple[int, int, str, str]]] = {}
    for pair, a, b, start, opening in pairs:
        by_pair.setdefault(pair, []).append((a, b, start, opening))
    swapped = [g for g in by_pair.values() if len(g) == 2]
    assert swapped
    for (a1, b1, s1, o1), (a2, b2, s2, o2) in swapped:
        assert (a1, b1) == (b2, a2) and (s1, o1) == (s2, o2)
    assert len({frozenset(g[0][:2]) for g in by_pair.values()}) == 3
    # standings and `rate` on the export give the same table: the ladder's scale is anchored at its first house
    # engine (random) at 0, which `rate` is told.
    pgn, jsonl = tmp_path / "all.pgn", tmp_path / "all.jsonl"
    out = cli("ladder", "export", str(lad), "--pgn", str(pgn), "--jsonl", str(jsonl))
    assert out.returncode == 0, out.stderr
    n = counted(lad)
    assert f"{n} games written" in out.stderr
    assert len(jsonl.read_text().splitlines()) == n
    table = json.loads(cli("ladder", "standings", str(lad), "--format", "json").stdout)
    rated = json.loads(cli("rate", str(pgn), "--format", "json", "--anchor", "random=0").stdout)
    ours = {row["player"]: (round(row["rating"], 6), round(row["margin"], 6), row["games"]) for row in table}
    theirs = {row["player"]: (round(row["rating"], 6), round(row["margin"], 6), row["games"]) for row in rated}
    assert ours == theirs and len(ours) == 3
    anchored = json.loads(cli("ladder", "standings", str(lad), "--format", "json", "--anchor", "greedy=1500").stdout)
    assert {row["player"]: row["rating"] for row in anchored}["greedy"] == 1500


def test_kill_9_loses_only_games_in_flight_and_never_counts_one_twice(tmp_path: Path) -> None:
    lad = tmp_path / "lad"
    seen: list[int] = []
    for _ in range(3):
        proc = start_ladder(lad, *HOUSE)
        try:
            before = counted(lad)
            wait_until(lambda before=before: counted(lad) >= before + 4, proc=proc)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        seen.append(counted(lad))
    db = sqlite3.connect(lad / "ladder.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    ids = [r[0] for r in db.execute("SELECT id FROM games ORDER BY id")]
    turns = db.execute("SELECT count(*) FROM games WHERE turns = '[]'").fetchone()[0]
    db.close()
    assert ids == list(range(1, len(ids) + 1)) and len(ids) == seen[-1]
    assert seen == sorted(seen)
    assert turns == 0  # every counted game was played to its end


@pytest.mark.extra("web")
def test_a_ladder_killed_by_sigkill_leaves_no_helper_process_behind(tmp_path: Path) -> None:
    """The pages' refit process (a process pool's worker) ends with the ladder, and with it multiprocessing's
    resource tracker: a pool's worker holds its own task queue's writing end and would wait on it for ever."""
    proc = start_ladder(tmp_path / "lad", *HOUSE, "--web", "127.0.0.1:0")
    try:
        # the refit worker and the resource tracker
        wait_until(lambda: len(group_members(proc.pid)) >= 2, proc=proc)
        running = group_members(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the ladder alone, as a user's kill -9 (not its group)
        proc.wait()
        wait_until(lambda: not present(running), timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def test_a_database_that_is_not_a_ladders_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ladder.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE other (x)")
    db.commit()
    db.close()
    with pytest.raises(LadderDBError, match="not a ladder database"):
        LadderDB.open(path)
    out = cli("ladder", "standings", str(tmp_path / "nowhere"))
    assert out.returncode == 2 and "no ladder here" in out.stderr
    out = cli("ladder", "run", str(tmp_path), "--house", "random", "--house", "greedy")
    assert out.returncode == 2 and "not a ladder database" in out.stderr, out.stderr


def test_the_database_keeps_every_field_of_a_game_and_its_versions(tmp_path: Path) -> None:
    db = LadderDB.open(tmp_path / "ladder.db")
    ident = EngineIdentity("Alice 1", "A. Author", 1, "remote:alice", {"Hash": "16"})
    record = GameRecord(
        "alice",
        "bob",
        Result.SECOND_WINS,
        Termination.TIME_FORFEIT,
        "alice: no turn in 120 ms",
        time_control="st=0.1",
        start="startpos",
        opening=("a1b",),
        turns=(TurnRecord("a1b", 0), TurnRecord("b2c", 12, "win 3")),
        started="2026-01-01T00:00:00Z",
        exit_info={"alice": "disconnected"},
        engines=(ident, EngineIdentity("Bob", None, 1, "remote:bob")),
    )
    number = db.add_game(record, pair=7)
    newer = replace(record, engines=(EngineIdentity("Alice 2", "A. Author", 1), record.engines[1]))
    db.add_game(newer, pair=8)
    # An engine that never finished its handshake said nothing of itself: its game is the bot's latest version's.
    db.add_game(replace(record, engines=(EngineIdentity(None, None, None, "remote:alice"), record.engines[1])), 9)
    db.close()
    db = LadderDB.open(tmp_path / "ladder.db", create=False)
    (back, fv, sv, ok), (_, fv2, sv2, _), (_, fv3, _, _) = list(db.games())
    assert ok
    assert back == replace(record, game_id=number, round=7)
    assert (fv, sv, fv2, sv2, fv3) == (1, 1, 2, 1, 2)
    bots = {b.name: b for b in db.bots()}
    assert [(v.number, v.id_name, v.author) for v in bots["alice"].versions] == [
        (1, "Alice 1", "A. Author"),
        (2, "Alice 2", "A. Author"),
    ]
    # The fit: one player per version once a bot has two; the default table shows the latest.
    tallies, damaged = db.tallies()
    assert sorted((t.first, t.first_version, t.score, t.count) for t in tallies) == [
        ("alice", 1, 0.0, 1),
        ("alice", 2, 0.0, 2),
    ]
    assert damaged == []
    db.close()
    table = json.loads(cli("ladder", "standings", str(tmp_path), "--format", "json", "--by-version").stdout)
    assert sorted(row["player"] for row in table) == ["alice#1", "alice#2", "bob"]
    table = json.loads(cli("ladder", "standings", str(tmp_path), "--format", "json").stdout)
    assert sorted(row["player"] for row in table) == ["alice#2", "bob"]


def test_bots_join_by_key_play_everyone_and_are_cut_when_their_key_goes(tmp_path: Path) -> None:
    """alice connects with two slots; bob's key is made while the ladder runs, and bob plays; alice's key is removed
    and she is cut (told why, then refused); every game is counted with who played it."""
    keys = tmp_path / "keys"
    for name in ("arena", "alice"):
        new_key_pair(keys, name)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = start_ladder(lad, "--listen", endpoint, "--keys", str(keys), "--house", "greedy", "-j", "3")
    alice_log = tmp_path / "alice.log"
    try:
        wait_listening(endpoint, proc)
        with started(sdk_bot("random", endpoint, keys, "alice", slots=2), alice_log) as alice:
            wait_until(lambda: counted(lad, "'alice' IN (f.name, s.name)") >= 4, proc=proc)
            new_key_pair(keys, "bob")
            # Started at once, most likely before the ladder has read the new key: refused, then (--stay) let in at
            # a later try.
            with started(sdk_bot("random", endpoint, keys, "bob", stay=True), tmp_path / "bob.log"):
                wait_until(lambda: counted(lad, "'bob' IN (f.name, s.name) AND 'alice' IN (f.name, s.name)") >= 1)
                wait_until(lambda: counted(lad, "'bob' IN (f.name, s.name) AND 'greedy' IN (f.name, s.name)") >= 1)
                (keys / "alice.key").unlink()
                assert alice.wait(60) != 0  # cut, then refused: her key is no longer known
        status, err = stop(proc, signal.SIGTERM)
    finally:
        proc.kill()
    assert status == 143, err
    assert "the arena cuts the connection: its key was removed" in alice_log.read_text()
    assert "key added: bob may connect" in err and "key removed: alice is cut" in err
    assert "alice" in err and "disconnected by the arena: its key was removed" in err
    db = sqlite3.connect(lad / "ladder.db")
    names = {r[0] for r in db.execute("SELECT name FROM bots")}
    # every engine that played (a game lost without play, bob killed between the two games of a pair, has none)
    sources = {e["source"] for r in db.execute("SELECT engines FROM games") for e in json.loads(r[0])}
    db.close()
    assert names == {"alice", "bob", "greedy"}
    assert "remote:alice" in sources and "remote:bob" in sources


def test_a_bot_that_leaves_cleanly_finishes_its_games_and_loses_none_by_disconnect(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    for name in ("arena", "alice"):
        new_key_pair(keys, name)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = start_ladder(lad, "--listen", endpoint, "--keys", str(keys), "--house", "greedy", "--house", "random")
    try:
        wait_listening(endpoint, proc)
        with started(sdk_bot("random", endpoint, keys, "alice", slots=2), tmp_path / "alice.log") as alice:
            wait_until(lambda: counted(lad, "'alice' IN (f.name, s.name)") >= 6, proc=proc)
            alice.send_signal(signal.SIGTERM)
            assert alice.wait(60) == 0
        status, err = stop(proc, signal.SIGINT)
    finally:
        proc.kill()
    assert status == 130, err
    assert counted(lad, "g.termination = 'disconnect'") == 0


def test_a_bot_back_with_another_engine_is_a_new_version_and_rate_agrees_on_the_export(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    for name in ("arena", "alice"):
        new_key_pair(keys, name)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = start_ladder(lad, "--listen", endpoint, "--keys", str(keys), "--house", "greedy", "--house", "random")
    alice = "'alice' IN (f.name, s.name)"
    try:
        wait_listening(endpoint, proc)
        for engine, id_name in (("random", "Random 1.0"), ("greedy", "Greedy 1.0")):
            # Games of this version of alice's: a total would be reached early by the first version's games that
            # end (lost by disconnect) after its bot has gone, and the second version might then never play.
            of_version = (
                f"{alice} AND EXISTS (SELECT 1 FROM versions v JOIN bots b ON b.id = v.bot WHERE b.name = 'alice'"
                f" AND v.id IN (g.first_version, g.second_version) AND v.id_name = '{id_name}')"
            )
            with started(sdk_bot(engine, endpoint, keys, "alice"), tmp_path / f"{engine}.log"):
                wait_until(lambda where=of_version: counted(lad, where) >= 4, proc=proc)
        status, err = stop(proc, signal.SIGTERM)
    finally:
        proc.kill()
    assert status == 143, err
    by_version = json.loads(cli("ladder", "standings", str(lad), "--format", "json", "--by-version").stdout)
    assert {(r["player"], r["id_name"]) for r in by_version if r["bot"] == "alice"} == {
        ("alice#1", "Random 1.0"),
        ("alice#2", "Greedy 1.0"),
    }
    latest = json.loads(cli("ladder", "standings", str(lad), "--format", "json").stdout)
    assert [r["player"] for r in latest if r["bot"] == "alice"] == ["alice#2"]
    pgn = tmp_path / "all.pgn"
    assert cli("ladder", "export", str(lad), "--pgn", str(pgn)).returncode == 0
    rated = json.loads(cli("rate", str(pgn), "--format", "json", "--anchor", "greedy=0").stdout)
    ours = {r["player"]: (round(r["rating"], 6), r["games"]) for r in by_version}
    assert ours == {r["player"]: (round(r["rating"], 6), r["games"]) for r in rated}


def test_a_full_disk_is_the_arenas_fault_not_a_database_error(tmp_path: Path) -> None:
    """SQLite's "database or disk is full" is an ArenaFault (exit 5: no engine is to blame, the same command
    continues); the database's own page limit stands in for a full disk."""
    from quarto_arena.arena.errors import ArenaFault

    db = LadderDB.open(tmp_path / "ladder.db")
    pages = db._db.execute("PRAGMA page_count").fetchone()[0]  # a full disk, made small
    db._db.execute(f"PRAGMA max_page_count = {pages}")
    record = GameRecord("a", "b", Result.DRAW, Termination.NORMAL, turns=(TurnRecord("a1b", 1),) * 200)
    with pytest.raises(ArenaFault, match="the disk is full"):
        for pair in range(1, 50):
            db.add_game(record, pair)
    db.close()


def test_an_os_error_while_the_ladder_runs_is_one_line_and_status_2(tmp_path: Path) -> None:
    """An OSError that no layer turns into an error of ours (the disk failing under the ladder: EIO) ends `ladder
    run` with one line naming the directory and status 2, not "internal error" and 70: the CLI caught Exception
    (re-raising all but WebError) before OSError, so this OSError went on to main."""
    code = (
        "import errno, sys\n"
        "from quarto_arena.arena.ladder import service\n"
        "async def run(self, stop):\n"
        "    raise OSError(errno.EIO, 'Input/output error')\n"
        "service.Ladder.run = run\n"
        "from quarto_arena.arena.console import main\n"
        "main()\n"
    )
    lad = tmp_path / "lad"
    out = subprocess.run(
        [sys.executable, "-c", code, "ladder", "run", str(lad), "--house", "random", "--house", "greedy"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [f"quarto-arena: error: {lad}: Input/output error"]
