"""The ladder's database, checked as it is trusted: migrations from each earlier release's own database, reads that
are one snapshot while another connection writes, checksums that tell a changed game or tally, the lock, the backup,
and damaged files refused in one line. Real SQLite files, real `quarto-arena ladder` processes."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from procs import CLI, cli, wait_until
from quarto_arena.arena.ladder import LadderDB, LadderDBError, standings
from quarto_arena.arena.ladder.db import VERSIONS_KEPT
from quarto_arena.arena.ladder.schema import SCHEMA_VERSION
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.stats import ScoredGame, rate

RELEASES = Path(__file__).parent / "data" / "ladder-schemas"
"""Databases made by the ladder's earlier releases themselves (a house ladder run at each commit named, its games cut
to 60): the three variants of schema 1, and one opened by two releases in turn (both of their indexes)."""


def shape(path: Path) -> dict[str, object]:
    """A database's schema as SQLite describes it: each table's columns and each index's columns."""
    db = sqlite3.connect(path)
    try:
        out: dict[str, object] = {"version": db.execute("PRAGMA user_version").fetchone()[0]}
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            out[table] = [tuple(r[1:]) for r in db.execute(f"PRAGMA table_info({table})")]
            for _, index, unique, *_ in db.execute(f"PRAGMA index_list({table})"):
                out[f"{table}.{index}"] = (unique, [r[2] for r in db.execute(f"PRAGMA index_info({index})")])
        return out
    finally:
        db.close()


def game(first: str, second: str, result: Result, id_name: str = "A 1", turns: int = 8) -> GameRecord:
    ident = (EngineIdentity(id_name, "a", 1, f"remote:{first}"), EngineIdentity("B 1", "b", 1, f"remote:{second}"))
    moves = tuple(TurnRecord(t, 3) for t in ("a1b", "b2c", "c3d", "d4e", "a2f", "b3g", "c4h", "d1i")[:turns])
    return GameRecord(first, second, result, Termination.NORMAL, "x", turns=moves, started="2026-01-01T00:00:00Z",
                      engines=ident)  # fmt: skip


@pytest.mark.parametrize("release", sorted(p.name for p in RELEASES.glob("*.db")))
def test_a_database_of_each_earlier_release_is_migrated_after_a_backup(tmp_path: Path, release: str) -> None:
    lad = tmp_path / "lad"
    lad.mkdir()
    shutil.copy(RELEASES / release, lad / "ladder.db")
    old = sqlite3.connect(lad / "ladder.db")
    rows = old.execute(
        "SELECT g.id, f.name, s.name, fv.number, sv.number, g.result, g.turns FROM games g"
        " JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second"
        " JOIN versions fv ON fv.id = g.first_version JOIN versions sv ON sv.id = g.second_version ORDER BY g.id"
    ).fetchall()
    old.close()
    assert len(rows) == 60
    # The readers refuse an earlier schema, naming the command that migrates it; nothing is changed.
    out = cli("ladder", "standings", str(lad))
    assert out.returncode == 2 and "ladder run" in out.stderr and "earlier quarto-arena (schema 1)" in out.stderr
    assert shape(lad / "ladder.db")["version"] == 1
    # ladder run migrates it: a backup first, then the schema a new ladder gets, every game kept and checked.
    lines: list[str] = []
    db = LadderDB.open(lad / "ladder.db", migrate=True, check=True, progress=lines.append)
    db.close()
    backup = lad / "ladder.db.v1.bak"
    assert backup.is_file() and shape(backup)["version"] == 1
    assert any("a copy goes to" in line for line in lines)
    fresh = tmp_path / "fresh.db"
    LadderDB.open(fresh).close()
    assert shape(lad / "ladder.db") == shape(fresh)
    assert shape(fresh)["version"] == SCHEMA_VERSION
    db = LadderDB.open(lad / "ladder.db", create=False)
    games = list(db.games())
    state = db.state()
    report = db.check()
    db.close()
    assert report.ok, report
    assert [(r.game_id, r.first, r.second, fv, sv, r.result.value) for r, fv, sv, _ in games] == [r[:6] for r in rows]
    assert all(ok for *_, ok in games)
    # The standings of the tallies are those of the games themselves, fitted one by one.
    scores = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}
    direct = rate([ScoredGame(r[1], r[2], scores[r[5]]) for r in rows], anchor=("random", 0.0))
    table = standings(state, ("random", 0.0), fresh=True)
    assert {s.player: (round(s.rating or 0, 6), round(s.margin or 0, 6), s.games) for s in table.lines} == {
        p.name: (round(p.rating or 0, 6), round(p.margin or 0, 6), p.games) for p in direct.players
    }
    # Opened again: nothing more to do; the backup is not written twice.
    LadderDB.open(lad / "ladder.db", migrate=True).close()
    assert sorted(p.name for p in lad.iterdir() if ".bak" in p.name) == ["ladder.db.v1.bak"]


def test_reads_are_one_snapshot_while_another_connection_adds_versions(tmp_path: Path) -> None:
    """A bot renaming itself every game (a new version each time) while the standings are read again and again: every
    read sees bots, versions and tallies of one moment (without the snapshot, a tally read after its version was
    added, but the versions read before, came out as unknown)."""
    path = tmp_path / "ladder.db"
    LadderDB.open(path).close()
    done = threading.Event()
    failures: list[BaseException] = []

    def rename() -> None:
        writer = LadderDB.open(path, create=False)
        try:
            for i in range(400):
                writer.add_game(game("renamer", "steady", Result.FIRST_WINS, id_name=f"R {i}"), i + 1)
        except BaseException as e:
            failures.append(e)
        finally:
            writer.close()
            done.set()

    thread = threading.Thread(target=rename)
    thread.start()
    reader = LadderDB.open(path, create=False)
    reads = 0
    try:
        while not done.is_set() or reads < 5:
            state = reader.state()
            assert state.damaged == (), state.damaged
            assert sum(t.count for t in state.tallies) == state.counted
            assert sum(t.wins + t.draws + t.losses for t in state.totals) == 2 * state.counted
            table = standings(state, fresh=True)
            assert sum(s.games for s in table.lines if s.bot == "steady") in (0, state.counted)
            reads += 1
    finally:
        reader.close()
        thread.join()
    assert not failures, failures
    assert reads >= 5


def test_versions_beyond_the_cap_retire_the_oldest_and_the_fit_stays_bounded(tmp_path: Path) -> None:
    db = LadderDB.open(tmp_path / "ladder.db")
    for i in range(3 * VERSIONS_KEPT):
        db.add_game(game("renamer", "steady", Result.SECOND_WINS, id_name=f"R {i}"), i + 1)
    # An earlier version comes back: it is on the board again, and another goes.
    db.add_game(game("renamer", "steady", Result.SECOND_WINS, id_name="R 0"), 99)
    state = db.state()
    db.close()
    (bot,) = [b for b in state.bots if b.name == "renamer"]
    on_board = [v.number for v in bot.versions if v.retired is None]
    assert len(bot.versions) == 3 * VERSIONS_KEPT and len(on_board) == VERSIONS_KEPT
    assert on_board == [1, *range(3 * VERSIONS_KEPT - VERSIONS_KEPT + 2, 3 * VERSIONS_KEPT + 1)]
    table = standings(state, fresh=True, by_version=True, everything=True)
    players = {s.player for s in table.lines if s.bot == "renamer"}
    assert players == {"renamer#retired", *(f"renamer#{n}" for n in on_board)}
    assert sum(s.games for s in table.lines if s.bot == "renamer") == 3 * VERSIONS_KEPT + 1


def flip(path: Path, old: bytes, new: bytes, times: int) -> int:
    """Changes ``times`` occurrences of ``old`` in the file's bytes (as a disk or a hand would), from the end, once
    every committed page is in the file (no connection of this process may be open on it: SQLite's locks are the
    process's, and closing any descriptor of the file drops them)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    done = 0
    at = len(data)
    while done < times:
        at = data.rfind(old, 0, at)
        if at < 0:
            break
        data[at : at + len(old)] = new
        done += 1
    path.write_bytes(bytes(data))
    return done


def test_changed_results_are_reported_and_not_counted(tmp_path: Path) -> None:
    lad = tmp_path / "lad"
    lad.mkdir()
    db = LadderDB.open(lad / "ladder.db")
    db.add_games([(game("alice", "bob", Result.FIRST_WINS), n) for n in range(1, 41)])
    db.close()
    before = cli("ladder", "standings", str(lad), "--format", "json", "--refit")
    assert before.returncode == 0, before.stderr
    # Five result bytes changed in the games' rows (1-0 to 0-1, the result and termination columns side by side in
    # SQLite's record), as in a damaged or edited copy.
    assert flip(lad / "ladder.db", b"1-0normal", b"0-1normal", 5) == 5
    after = cli("ladder", "standings", str(lad), "--format", "json", "--refit")
    assert after.returncode == 0 and after.stdout == before.stdout  # the tallies hold what was counted
    export = cli("ladder", "export", str(lad), "--pgn", str(tmp_path / "out" / "all.pgn"))
    assert export.returncode == 0 and "35 games written" in export.stderr
    assert "5 games fail their checksum" in export.stderr
    check = cli("ladder", "check", str(lad))
    assert check.returncode == 1, check.stderr
    assert check.stderr.count("changed since it was counted") == 5
    # The tally (and each side's totals) hold the 40 games counted; 35 of them verify now.
    assert "damaged: 5 games changed, 3 tallies or totals wrong" in check.stderr.splitlines()[-1]
    # A tally changed by hand (its count, without its checksum): left out and said so; --repair counts it again
    # from the games that verify, so the changed games are not counted.
    db = sqlite3.connect(lad / "ladder.db")
    db.execute("UPDATE tallies SET count = count + 100")
    db.commit()
    db.close()
    left_out = cli("ladder", "standings", str(lad), "--format", "json", "--refit")
    assert left_out.returncode == 0 and "tallies or totals fail their checksum and are left out" in left_out.stderr
    repaired = cli("ladder", "check", str(lad), "--repair")
    assert repaired.returncode == 1 and "the tallies are counted again" in repaired.stderr
    db = LadderDB.open(lad / "ladder.db", create=False)
    state = db.state()
    db.close()
    assert state.damaged == () and sum(t.count for t in state.tallies) == 35


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"not a database at all" * 100), id="garbage"),
        pytest.param(
            lambda p: p.write_bytes(p.read_bytes()[:4096] + b"\xff" * 8192 + p.read_bytes()[12288:]), id="pages"
        ),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
    ],
)
def test_a_damaged_database_is_one_line_and_status_2_for_every_command(tmp_path: Path, damage: object) -> None:
    lad = tmp_path / "lad"
    lad.mkdir()
    db = LadderDB.open(lad / "ladder.db")
    db.add_games([(game("alice", "bob", Result.FIRST_WINS), n) for n in range(1, 200)])
    db.close()
    flip(lad / "ladder.db", b"", b"", 0)  # every page in the file, no connection open
    damage(lad / "ladder.db")  # type: ignore[operator]
    size = (lad / "ladder.db").stat().st_size
    # A ladder starts only on a database that passes quick_check; `ladder check` reads everything (exit 1 when what
    # it reads is damaged, 2 when it cannot read it).
    for args in (["run", str(lad), "--house", "random", "--house", "greedy"], ["check", str(lad)]):
        out = cli("ladder", *args)
        assert out.returncode in ((2,) if args[0] == "run" else (1, 2)), (args, out.stderr)
        assert str(lad / "ladder.db") in out.stderr.strip().splitlines()[-1], (args, out.stderr)
        assert "Traceback" not in out.stderr
    # The other commands read what they need: damage they meet is one line naming the file and status 2.
    for args in (
        ["standings", str(lad)],
        ["export", str(lad), "--pgn", str(tmp_path / "x.pgn")],
        ["ban", str(lad), "alice"],
        ["backup", str(lad), str(tmp_path / "copy.db")],
    ):
        out = cli("ladder", *args)
        assert "Traceback" not in out.stderr and out.returncode in (0, 2), (args, out.stderr)
        if out.returncode:
            assert len(out.stderr.strip().splitlines()) == 1 and str(lad / "ladder.db") in out.stderr, out.stderr
    assert (lad / "ladder.db").stat().st_size == size  # never replaced by a new, empty ladder


def house_ladder(directory: Path, tc: str) -> subprocess.Popen[bytes]:
    """`ladder run DIR --house random --house greedy` in its own session (stderr dropped: a pipe nobody reads would
    fill with a line per game and stop the ladder)."""
    argv = [*CLI, "ladder", "run", str(directory), "--house", "random", "--house", "greedy", "--tc", tc]
    return subprocess.Popen(argv, stderr=subprocess.DEVNULL, start_new_session=True)


def test_a_second_ladder_on_one_directory_is_refused_and_the_lock_goes_with_the_first(tmp_path: Path) -> None:
    lad = tmp_path / "lad"
    first = house_ladder(lad, "st=0.05")
    try:
        wait_until(lambda: (lad / "ladder.db").exists() and (lad / "ladder.lock").exists(), proc=first)
        wait_until(lambda: (lad / "ladder.lock").read_text().strip() == str(first.pid), proc=first)
        second = cli("ladder", "run", str(lad), "--house", "random", "--house", "greedy")
        assert second.returncode == 2
        assert second.stderr.strip() == (  # one line: no header for a ladder that does not start
            f"quarto-arena: error: {lad}: another ladder runs on this directory (pid {first.pid}): stop it first"
        )
        repair = cli("ladder", "check", str(lad), "--repair")
        assert repair.returncode == 2 and "another ladder runs" in repair.stderr
    finally:
        first.terminate()
        first.communicate(timeout=60)
    assert first.returncode == 143
    third = cli("ladder", "check", str(lad), "--repair")
    assert third.returncode == 0, third.stderr


def test_a_backup_while_the_ladder_writes_is_a_ladder_that_continues(tmp_path: Path) -> None:
    lad = tmp_path / "lad"
    proc = house_ladder(lad, "st=0.01")
    copy = tmp_path / "copy" / "lad"
    copy.mkdir(parents=True)
    try:
        wait_until(lambda: _count(lad) >= 10, proc=proc)
        out = cli("ladder", "backup", str(lad), str(copy / "ladder.db"))
        assert out.returncode == 0, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "a copy of" in out.stderr
        # Bad targets: a folder that does not exist, a file in place of a folder: one line, status 2.
        for target in (tmp_path / "nowhere" / "x.db", tmp_path / "copy" / "lad" / "ladder.db" / "x.db"):
            bad = cli("ladder", "backup", str(lad), str(target))
            assert bad.returncode == 2 and str(target) in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    db = LadderDB.open(copy / "ladder.db", create=False)
    report = db.check()
    db.close()
    assert report.ok and report.games >= 10
    # Restoring is starting a ladder on it.
    proc = house_ladder(copy, "st=0.01")
    try:
        wait_until(lambda: _count(copy) >= report.games + 4, proc=proc)
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_a_full_backup_target_is_one_line(tmp_path: Path) -> None:
    """A file size limit stands in for a full disk (the backup is refused with one line, nothing left behind)."""
    import resource
    import signal

    lad = tmp_path / "lad"
    lad.mkdir()
    db = LadderDB.open(lad / "ladder.db")
    db.add_games([(game("alice", "bob", Result.FIRST_WINS), n) for n in range(1, 2000)])
    db.close()

    def small() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    out = subprocess.run(
        [*CLI, "ladder", "backup", str(lad), str(tmp_path / "b.db")],
        capture_output=True,
        text=True,
        preexec_fn=small,
    )
    assert out.returncode == 2, out.stderr
    assert (
        out.stderr.strip().splitlines()[-1].startswith(f"quarto-arena: error: {tmp_path / 'b.db'}: the backup failed")
    )
    assert not (tmp_path / "b.db").exists() and not (tmp_path / ".b.db.partial").exists()


def _count(directory: Path) -> int:
    path = directory / "ladder.db"
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return int(db.execute("SELECT count(*) FROM games").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def test_a_ladder_that_did_not_start_leaves_no_database(tmp_path: Path) -> None:
    """A --web that cannot bind (its port taken), a --listen that cannot: the ladder never started, and neither
    the directory nor ladder.db it would have made is left behind (an existing directory keeps what it held)."""
    import socket

    pytest.importorskip("aiohttp")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        lad = tmp_path / "new"
        out = cli("ladder", "run", str(lad), "--house", "random", "--house", "greedy", "--web", f"127.0.0.1:{port}")
        assert out.returncode == 2 and "has not started" in out.stderr, out.stderr
        assert not lad.exists()
        kept = tmp_path / "kept"
        kept.mkdir()
        (kept / "notes.txt").write_text("mine")
        keys = tmp_path / "keys"
        from quarto_arena.arena.server import new_key_pair

        new_key_pair(keys, "arena")
        out = cli("ladder", "run", str(kept), "--listen", f"tcp://127.0.0.1:{port}", "--keys", str(keys))
        assert out.returncode == 2 and "cannot listen" in out.stderr, out.stderr
        assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]


def test_the_state_counts_dodges_and_the_journal_holds_moderation(tmp_path: Path) -> None:
    db = LadderDB.open(tmp_path / "ladder.db")
    number = db.add_game(replace(game("alice", "bob", Result.SECOND_WINS), termination=Termination.DISCONNECT), 1)
    db.add_dodge("alice", "bob", 1, number)
    db.add_dodge("alice", "bob", 2, None)
    assert db.ban("alice", "trading results") and not db.ban("nobody", "x")
    assert db.retire("bob", 1) and not db.retire("bob", 7)
    assert db.unban("alice")
    assert [(r.action, r.name, r.detail) for r in db.journal()] == [
        ("ban", "alice", "trading results"),
        ("retire", "bob#1", ""),
        ("unban", "alice", ""),
    ]
    state = db.state()
    db.close()
    assert state.dodges == {"alice": (1, 1)}
    table = standings(state, fresh=True, everything=True)
    (alice,) = [s for s in table.lines if s.bot == "alice"]
    assert alice.forfeits == {"disconnect": 1} and alice.dodges == 1


def test_an_interrupted_read_is_a_ladder_db_error(tmp_path: Path) -> None:
    db = LadderDB.open(tmp_path / "ladder.db")
    db.interrupt()  # nothing runs: no effect
    db.add_game(game("a", "b", Result.DRAW), 1)
    assert db.count() == 1
    db.close()
    with pytest.raises(LadderDBError, match="no ladder here"):
        LadderDB.open(tmp_path / "none" / "ladder.db", create=False)
