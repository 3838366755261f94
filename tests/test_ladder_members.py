"""A ladder against its own members: a staller, a dodger, strangers registering (--open) and a flood of them, bans;
real `quarto-arena ladder run` processes, real SDK bots, and hostile clients written by hand
(engines/testing/ladder_peer.py) where the SDK cannot misbehave enough."""

from __future__ import annotations

import functools
import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import procs
import pytest
from procs import cli, free_port, sdk_bot, started, wait_listening
from quarto_arena.arena.server import new_key_pair

wait_until = functools.partial(procs.wait_until, timeout=120.0)
PEER = [sys.executable, "-m", "quarto_arena.engines.testing.ladder_peer"]


def query(directory: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    path = directory / "ladder.db"
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def games_of(directory: Path, name: str, where: str = "1") -> int:
    rows = query(
        directory,
        "SELECT count(*) FROM games g JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second"
        f" WHERE ? IN (f.name, s.name) AND {where}",
        (name,),
    )
    return int(rows[0][0]) if rows else 0  # type: ignore[call-overload]


def ladder(directory: Path, *args: str) -> subprocess.Popen[str]:
    return procs.ladder_process(directory, *args)


def stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM; what the ladder wrote on stderr in this run."""
    status, err = procs.stop_ladder(proc)
    assert status == 143, err
    return err


def peer(kind: str, endpoint: str, keys: Path, name: str, *more: str) -> list[str]:
    key = ["--key", str(keys / f"{name}.key_secret"), "--name", name]
    return [*PEER, kind, endpoint, "--server-key", str(keys / "arena.key"), *key, *more]


@pytest.mark.slow
def test_a_staller_holds_one_opponent_at_a_time_loses_what_it_stalls_and_is_benched(tmp_path: Path) -> None:
    """A 16-slot bot that answers begin and never uqi, connected before the honest bots arrive: it is given one game
    at a time (slots are earned), loses each by stall (counted, never abandoned), is benched after each, and the
    honest bots play on. Another one leaves just before the start-up deadline: that game is lost by disconnect,
    counted, not abandoned."""
    keys = tmp_path / "keys"
    for name in ("arena", "staller", "quitter", "alice", "bob"):
        new_key_pair(keys, name)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = ladder(lad, "--listen", endpoint, "--keys", str(keys), "-j", "4")
    staller_log = tmp_path / "staller.out"
    try:
        wait_listening(endpoint, proc)
        with staller_log.open("w") as out:
            staller = subprocess.Popen(peer("stall", endpoint, keys, "staller", "--slots", "16"), stdout=out)
        try:
            wait_until(lambda: query(lad, "SELECT 1 FROM bots WHERE name = 'staller'"), proc=proc)
            with (
                started(sdk_bot("random", endpoint, keys, "alice", slots=2), tmp_path / "alice.log"),
                started(sdk_bot("random", endpoint, keys, "bob", slots=2), tmp_path / "bob.log"),
                started(peer("stall", endpoint, keys, "quitter", "--slots", "4", "--leave-after", "8"), tmp_path / "q"),
            ):
                wait_until(lambda: games_of(lad, "staller") >= 2, proc=proc)
                wait_until(lambda: games_of(lad, "quitter") >= 1, proc=proc)
                honest = games_of(lad, "alice", "'bob' IN (f.name, s.name)")
                wait_until(lambda: games_of(lad, "alice", "'bob' IN (f.name, s.name)") >= honest + 10, proc=proc)
        finally:
            staller.kill()
            staller.wait()
        err = stop(proc)
    finally:
        proc.kill()
    # One game at a time: a session begins only once the one before has ended.
    events = staller_log.read_text().split("\n")
    running = peak = 0
    for event in events:
        running += 1 if event.startswith("begin") else -1 if event.startswith("quit") else 0
        peak = max(peak, running)
    assert peak == 1, events
    assert "staller stalled (stall): given no game for 30 s" in err
    # Every game of the staller against an honest bot counted, lost by stall; none abandoned.
    rows = query(
        lad,
        "SELECT g.termination, g.result, f.name FROM games g JOIN bots f ON f.id = g.first JOIN bots s"
        " ON s.id = g.second WHERE 'staller' IN (f.name, s.name) AND 'quitter' NOT IN (f.name, s.name)",
    )
    assert rows and all(t == "stall" for t, _, _ in rows), rows
    assert all((r == "0-1") == (first == "staller") for _, r, first in rows), rows
    assert not query(
        lad, "SELECT 1 FROM abandoned a JOIN bots b ON b.id IN (a.first, a.second) WHERE b.name = 'staller'"
    )
    # The quitter, gone just before the deadline, lost its game by disconnect: counted, not abandoned.
    quits = query(
        lad,
        "SELECT g.termination FROM games g JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second"
        " WHERE 'quitter' IN (f.name, s.name)",
    )
    assert quits and quits[0][0] == "disconnect", quits
    assert not query(
        lad, "SELECT 1 FROM abandoned a JOIN bots b ON b.id IN (a.first, a.second) WHERE b.name = 'quitter'"
    )


def test_a_bot_gone_between_the_games_of_its_pair_loses_the_second(tmp_path: Path) -> None:
    """A dodger plays its first game and disconnects as soon as it is over: the second game of the pair is lost by
    disconnect, counted, and the dodge is recorded (the standings show it)."""
    keys = tmp_path / "keys"
    for name in ("arena", "dodger"):
        new_key_pair(keys, name)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = ladder(lad, "--listen", endpoint, "--keys", str(keys), "--house", "greedy")
    try:
        wait_listening(endpoint, proc)
        with started(peer("dodge", endpoint, keys, "dodger"), tmp_path / "dodger.log") as dodger:
            assert dodger.wait(120) == 0
            wait_until(lambda: games_of(lad, "dodger") >= 2, proc=proc)
        stop(proc)
    finally:
        proc.kill()
    rows = query(
        lad,
        "SELECT g.pair, f.name, g.result, g.termination, g.detail FROM games g JOIN bots f ON f.id = g.first"
        " JOIN bots s ON s.id = g.second WHERE 'dodger' IN (f.name, s.name) ORDER BY g.id",
    )
    (pair, first, _, normal, _), (pair2, first2, result2, termination2, detail2) = rows
    assert pair == pair2 and first != first2 and normal != "disconnect"
    assert termination2 == "disconnect" and result2 == ("0-1" if first2 == "dodger" else "1-0")
    assert "dodger left before the second game of its pair" in str(detail2)
    assert query(lad, "SELECT d.charged, d.pair FROM dodges d JOIN bots b ON b.id = d.bot WHERE b.name = 'dodger'") == [
        (1, pair)
    ]
    table = json.loads(cli("ladder", "standings", str(lad), "--format", "json").stdout)
    (line,) = [r for r in table if r["bot"] == "dodger"]
    assert line["dodges"] == 1 and line["forfeits"] == {"disconnect": 1} and line["provisional"]


@pytest.mark.slow
def test_strangers_join_an_open_ladder_by_their_own_key_and_names_are_kept(tmp_path: Path) -> None:
    """--open: a bot whose key the ladder never saw registers the name it says, first come first served, and plays;
    the keys directory's names are reserved; another key claiming a taken name, or a house engine's, is refused with
    one line on both sides; the registration is in the log and in the database, and survives a restart."""
    keys = tmp_path / "keys"
    new_key_pair(keys, "arena")
    new_key_pair(keys, "reserved")  # the operator's: its key in the keys directory
    own = tmp_path / "own"  # the authors make their own pairs; the ladder never sees the secrets
    for name in ("carol", "thief", "greedy2"):
        new_key_pair(own, name)
    (own / "arena.key").write_bytes((keys / "arena.key").read_bytes())
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    args = ("--listen", endpoint, "--keys", str(keys), "--open", "--house", "greedy")
    proc = ladder(lad, *args)
    try:
        wait_listening(endpoint, proc)
        with started(sdk_bot("random", endpoint, own, "carol"), tmp_path / "carol.log"):
            wait_until(lambda: games_of(lad, "carol") >= 2, proc=proc)
        # Another key saying it is carol, or reserved, or greedy's look-alike: refused, told why.
        claims = tmp_path / "claims"
        claims.mkdir()
        (claims / "arena.key").write_bytes((keys / "arena.key").read_bytes())
        for name, claim, why in (
            ("thief", "carol", "the name 'carol' belongs to another key"),
            ("thief", "reserved", "the name 'reserved' belongs to another key"),
            ("greedy2", "greedy2", "the name 'greedy2' passes for 'greedy'"),
        ):
            (claims / f"{claim}.key_secret").write_bytes((own / f"{name}.key_secret").read_bytes())
            out = subprocess.run(sdk_bot("random", endpoint, claims, claim), capture_output=True, text=True, timeout=60)
            assert out.returncode != 0 and why in out.stderr, out.stderr
        err = stop(proc)
    finally:
        proc.kill()
    assert "registered: carol (key" in err
    assert "refused a connection from 127.0.0.1" in err and "the name 'carol' belongs to another key" in err
    rows = query(lad, "SELECT name, origin, address, key IS NOT NULL FROM bots WHERE origin = 'open'")
    assert rows == [("carol", "open", "127.0.0.1", 1)]
    assert [r[:2] for r in query(lad, "SELECT action, name FROM journal")] == [("register", "carol")]
    # After a restart carol is known by her key and plays again.
    proc = ladder(lad, *args)
    try:
        wait_listening(endpoint, proc)
        before = games_of(lad, "carol")
        with started(sdk_bot("random", endpoint, own, "carol"), tmp_path / "carol2.log"):
            wait_until(lambda: games_of(lad, "carol") >= before + 2, proc=proc)
        err = stop(proc)
    finally:
        proc.kill()
    assert "registered" not in err


@pytest.mark.slow
@pytest.mark.parametrize("open_", [False, True], ids=["closed", "open"])
def test_a_flood_of_registrations_from_one_address_holds_to_the_limit(tmp_path: Path, open_: bool) -> None:
    """A thousand new keys a minute from one address (a burst of 200 here): five register, the database grows by
    five; a bot of the keys directory still joins and plays meanwhile. On a closed ladder none registers."""
    keys = tmp_path / "keys"
    for name in ("arena", "alice"):
        new_key_pair(keys, name)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = ladder(lad, "--listen", endpoint, "--keys", str(keys), "--house", "greedy", *(["--open"] if open_ else []))
    try:
        wait_listening(endpoint, proc)
        with started(sdk_bot("random", endpoint, keys, "alice", stay=True), tmp_path / "alice.log"):
            count = "200" if open_ else "20"  # a closed ladder answers an unknown key with nothing: 1 s each
            server_key = str(keys / "arena.key")
            argv = [*PEER, "register", endpoint, "--server-key", server_key, "--count", count]
            flood = subprocess.run(
                [*argv, "--per-minute", "1000", "--wait", "1"],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert flood.returncode == 0, flood.stderr
            # A new bot from another address (127.0.0.2) still registers.
            other = endpoint.replace("tcp://", "tcp://127.0.0.2:0;")
            argv = [*PEER, "register", other, "--server-key", server_key, "--count", "1", "--prefix", "elsewhere"]
            # Its answer comes as soon as the ladder gives it: a wait of 30 s (not the peer's 5) costs nothing, and
            # a loaded machine (load 7 beside another CI run) once took longer than 5 s.
            newcomer = subprocess.run(
                [*argv, "--per-minute", "60", "--wait", "30"], capture_output=True, text=True, timeout=90
            )
            assert json.loads(newcomer.stdout)["welcome"] == (1 if open_ else 0), newcomer.stdout
            before = games_of(lad, "alice")
            wait_until(lambda: games_of(lad, "alice") >= before + 2, proc=proc)
        err = stop(proc)
    finally:
        proc.kill()
    result = json.loads(flood.stdout)
    if open_:
        assert result["welcome"] == 5 and result["refused"] == 195, result
        assert result["reasons"] == {"5 new bots from 127.0.0.1 in 60 minutes at most": 195}, result
        assert len(query(lad, "SELECT 1 FROM bots WHERE origin = 'open'")) == 6
        assert err.count("registered: newbot") == 5 and "registered: elsewhere0" in err and "from 127.0.0.2)" in err
    else:
        assert result == {"welcome": 0, "refused": 0, "silent": 20, "reasons": {}}, result  # unknown keys: no answer
        assert not query(lad, "SELECT 1 FROM bots WHERE origin = 'open'")
        assert "unknown key" in err


@pytest.mark.slow
def test_ban_unban_and_retire_on_a_running_ladder(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    for name in ("arena", "alice"):
        new_key_pair(keys, name)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = ladder(lad, "--listen", endpoint, "--keys", str(keys), "--house", "greedy", "--house", "random", "-j", "2")
    alice_log = tmp_path / "alice.log"
    try:
        wait_listening(endpoint, proc)
        with started(sdk_bot("random", endpoint, keys, "alice", slots=2, stay=True), alice_log) as alice:
            wait_until(lambda: games_of(lad, "alice") >= 6, proc=proc)
            out = cli("ladder", "ban", str(lad), "alice", "--reason", "trading results")
            assert out.returncode == 0 and out.stderr.strip().splitlines() == [
                f"alice is banned (trading results): its games stay; ladder unban {lad} alice undoes it"
            ], out.stderr
            # Cut within a moment; refused at its next hello (--stay: it tries again), and it stops for good.
            assert alice.wait(60) != 0
            kept = games_of(lad, "alice")
        text = alice_log.read_text()
        assert "banned: trading results" in text and "alice is banned: trading results" in text
        table = json.loads(cli("ladder", "standings", str(lad), "--format", "json").stdout)
        assert "alice" not in {r["bot"] for r in table}
        table = json.loads(cli("ladder", "standings", str(lad), "--format", "json", "--all").stdout)
        assert [r["banned"] for r in table if r["bot"] == "alice"] == ["trading results"]
        assert games_of(lad, "alice") == kept  # its games stay
        out = cli("ladder", "retire", str(lad), "random#1")
        assert out.returncode == 0 and out.stderr.strip() == "random#1 is retired: off the board, its games kept"
        out = cli("ladder", "unban", str(lad), "alice")
        assert out.returncode == 0 and out.stderr.strip() == "alice may play again"
        # A running ladder sees it within a second, and says so: alice connecting before that is refused, and
        # without --stay she does not try again (in CI at load, she was refused 5 ms after `ladder unban`).
        wait_until(lambda: "unbanned: alice" in procs.ladder_log(lad).read_text(), proc=proc)
        with started(sdk_bot("random", endpoint, keys, "alice"), tmp_path / "alice2.log") as again:
            wait_until(lambda: games_of(lad, "alice") >= kept + 2, proc=proc)
            # She leaves cleanly: killed between a pair's two games, she would be charged a dodge of her own.
            again.send_signal(signal.SIGTERM)
            assert again.wait(60) == 0
        err = stop(proc)
    finally:
        proc.kill()
    for line in ("banned: alice (trading results)", "retired: random#1", "unbanned: alice"):
        assert f"quarto-arena: {line}\n" in err, err
    # A ban is the arena's doing: the pairs it cut short are abandoned, never a dodge of the bot's. (Leaving cleanly
    # between the two games of a pair, as alice does at the end, is recorded as a dodge let go, not charged.)
    assert not query(lad, "SELECT 1 FROM dodges WHERE pair IN (SELECT pair FROM abandoned) OR charged")
    table = json.loads(cli("ladder", "standings", str(lad), "--format", "json", "--by-version", "--all").stdout)
    assert {(r["player"], r["retired"]) for r in table if r["bot"] == "random"} == {("random#retired", True)}
    # Bad input: one line, status 2.
    for args, why in (
        (["ban", str(lad), "nobody"], "no bot 'nobody' on the ladder"),
        (["unban", str(lad), "nobody"], "no bot 'nobody' on the ladder"),
        (["retire", str(lad), "alice#9"], "no version 'alice#9' on the ladder"),
        (["retire", str(lad), "alice"], "give a version as NAME#N"),
        (["ban", str(tmp_path / "none"), "alice"], "no ladder here"),
    ):
        out = cli("ladder", *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and why in out.stderr, out.stderr
