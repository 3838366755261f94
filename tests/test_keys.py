"""Key files read as a peer's input is (issue 34): bounded, never blocking, and a key rewritten in place keeps its bot
in. The reader alone on real files, then a real ladder whose keys directory is tampered with while it plays."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from procs import CLI, STEADY_MARGIN, free_port, started, wait_listening, wait_until
from quarto_arena.arena.server import (
    MAX_KEY_FILE,
    KeysError,
    keys_signature,
    load_keys_directory,
    new_key_pair,
    read_key_file,
)
from quarto_arena.engines.registry import command


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    directory = tmp_path / "keys"
    for name in ("arena", "alice", "bob"):
        new_key_pair(directory, name)
    return directory


def test_a_key_file_is_read_as_zmq_auth_reads_it(keys: Path) -> None:
    import zmq.auth

    for name in ("alice.key", "alice.key_secret", "arena.key_secret"):
        assert read_key_file(keys / name) == zmq.auth.load_certificate(keys / name)


def test_a_huge_or_sparse_key_file_is_refused_without_being_read(keys: Path) -> None:
    sparse = keys / "sparse.key"
    with sparse.open("wb") as f:
        f.truncate(4 << 30)  # 4 GiB of nothing: reading it whole would take the arena's memory
    comments = keys / "comments.key"
    comments.write_bytes(b"#\n" * (MAX_KEY_FILE // 2) + (keys / "bob.key").read_bytes())
    for path, size in ((sparse, 4 << 30), (comments, comments.stat().st_size)):
        with pytest.raises(KeysError, match=f"{size} bytes, not read: a key file holds at most {MAX_KEY_FILE}"):
            read_key_file(path)


def test_a_pipe_or_a_device_named_like_a_key_never_blocks(keys: Path) -> None:
    os.mkfifo(keys / "fifo.key")  # no writer: a plain open() would wait for one, for ever
    (keys / "zero.key").symlink_to("/dev/zero")  # endless
    for name in ("fifo.key", "zero.key"):
        with pytest.raises(KeysError, match="not a regular file"):
            read_key_file(keys / name)
    loaded, problems = load_keys_directory(keys)
    assert sorted(loaded.bots.values()) == ["alice", "bob"]
    assert sorted(p.split(": ")[1].rsplit("/", 1)[1] for p in problems) == ["fifo.key", "zero.key"]


def test_a_key_rewritten_in_place_keeps_the_key_it_had_until_it_is_whole(keys: Path, tmp_path: Path) -> None:
    first, _ = load_keys_directory(keys)
    alice = (keys / "alice.key").read_bytes()
    signature = keys_signature(keys)
    new_key_pair(tmp_path / "other", "alice")
    fresh = (tmp_path / "other" / "alice.key").read_bytes()
    (keys / "alice.key").write_bytes(b"")  # cp has opened it (emptied it) and not written yet
    assert keys_signature(keys) != signature
    during, problems = load_keys_directory(keys, first.bots)
    assert during.bots == first.bots
    assert problems == [
        f"alice keeps its key until its file can be read: {keys / 'alice.key'}: not a key file (no public key in it)"
    ]
    (keys / "alice.key").write_bytes(fresh[: len(fresh) // 2])  # half written: the key is cut short
    assert load_keys_directory(keys, first.bots)[0].bots == first.bots
    (keys / "alice.key").write_bytes(fresh)
    after, problems = load_keys_directory(keys, first.bots)
    assert problems == []
    assert sorted(after.bots.values()) == ["alice", "bob"] and after.bots != first.bots
    # Without what was read before (a ladder's start), an unreadable key is left out, as it always was.
    (keys / "alice.key").write_bytes(alice[:10])
    assert sorted(load_keys_directory(keys)[0].bots.values()) == ["bob"]


def counted(directory: Path, name: str) -> int:
    path = directory / "ladder.db"
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        sql = "SELECT count(*) FROM games g JOIN bots f ON f.id = g.first JOIN bots s ON s.id = g.second"
        return int(db.execute(f"{sql} WHERE ? IN (f.name, s.name)", (name,)).fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def ladder(directory: Path, endpoint: str, keys: Path) -> subprocess.Popen[str]:
    # A margin of 1 s: a stall of the arena's own while it reads the keys directory (the bug: 86 s on a key of comment
    # lines) still forfeits a game, a loaded machine's delay to a bot's 50 ms search does not (with the default 50 ms,
    # alice lost a game on time in a full parallel run: 'no turn in 101 ms').
    argv = [*CLI, "ladder", "run", str(directory), "--tc", "st=0.05", *STEADY_MARGIN]
    argv += ["--listen", endpoint, "--keys", str(keys)]
    return subprocess.Popen(
        [*argv, "--house", "greedy", "--house", "random", "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def bot(endpoint: str, keys: Path, name: str) -> list[str]:
    identity = ["--name", name, "--key", str(keys / f"{name}.key_secret"), "--server-key", str(keys / "arena.key")]
    return [*command("random"), "--connect", endpoint, *identity]


@pytest.mark.slow
def test_a_ladder_plays_on_whatever_is_put_in_its_keys_directory(tmp_path: Path, keys: Path) -> None:
    """While alice plays: her key file is rewritten in place, slowly (emptied, then written a second and a half
    later: the ladder reads it in between) and fast, over and over; a 4 GiB sparse key, a key of comment lines past
    the bound and a pipe are put beside it. alice is never cut, each bad file is told in one line, and no game is
    lost on time by the arena's own stall: the house engines' games go on."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    lad = tmp_path / "lad"
    proc = ladder(lad, endpoint, keys)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr or []), daemon=True)
    reader.start()
    alice_log = tmp_path / "alice.log"
    key = keys / "alice.key"
    content = key.read_bytes()
    try:
        wait_listening(endpoint, proc)
        with started(bot(endpoint, keys, "alice"), alice_log) as alice:
            wait_until(lambda: counted(lad, "alice") >= 2, timeout=90)
            with key.open("r+b") as f:  # as cp does: the same file, emptied, then written
                f.truncate(0)
                f.flush()
                time.sleep(1.5)
                f.write(content)
            for _ in range(300):
                with key.open("r+b") as f:
                    f.truncate(0)
                    f.write(content)
            with (keys / "sparse.key").open("wb") as f:
                f.truncate(4 << 30)
            (keys / "comments.key").write_bytes(b"# a comment\n" * 1000 + content)
            os.mkfifo(keys / "fifo.key")
            bad = ("sparse.key", "comments.key", "fifo.key")
            wait_until(lambda: all(any(name in line for line in lines) for name in bad), timeout=60)
            new_key_pair(keys, "carol")  # the directory changes again: what was told is not told again
            wait_until(lambda: any("key added: carol" in line for line in lines), timeout=60)
            games = counted(lad, "greedy")
            wait_until(lambda: counted(lad, "greedy") >= games + 10, timeout=90)
            wait_until(lambda: counted(lad, "alice") >= 6, timeout=90)
            assert alice.poll() is None
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        proc.kill()
        proc.wait()
    reader.join(10)
    err = "".join(lines)
    assert "cuts the connection" not in alice_log.read_text()
    assert "disconnected by the arena" not in err and "key removed" not in err
    assert "alice keeps its key until its file can be read" in err
    for name in bad:
        assert sum(name in line for line in lines) == 1, [line for line in lines if name in line]
    db = sqlite3.connect(lad / "ladder.db")
    forfeits = db.execute("SELECT count(*) FROM games WHERE termination = 'time forfeit'").fetchone()[0]
    db.close()
    assert forfeits == 0
