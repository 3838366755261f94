"""The journal: round trips, torn tails dropped with a warning, corruption and foreign files refused in one line."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest
from quarto_arena.arena.journal import MAGIC, Journal, JournalError, encode_frame, read_journal
from quarto_arena.arena.records import GameRecord, Result, Termination, TurnRecord

CONFIG = {"engines": [{"name": "a"}, {"name": "b"}], "games": 2, "seed": 5}


def game(game_id: int) -> GameRecord:
    return GameRecord(
        first="a",
        second="b",
        result=Result.SECOND_WINS if game_id % 2 else Result.DRAW,
        termination=Termination.NORMAL,
        turns=(TurnRecord("3", 0), TurnRecord("c47", 12, "value 40"), TurnRecord("d4", 3, "win 1")),
        game_id=game_id,
        round=1,
        exit_info={"b": "exit 1"} if game_id == 2 else {},
    )


def make(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "journal.qaj"
    with Journal.create(path, CONFIG) as j:
        for i in range(1, n + 1):
            j.append(game(i))
    return path


def test_round_trip(tmp_path: Path) -> None:
    path = make(tmp_path, 3)
    contents = read_journal(path)
    assert contents.config == CONFIG
    assert contents.records == {i: game(i) for i in (1, 2, 3)}
    assert contents.torn is None
    assert contents.good_length == path.stat().st_size


def test_create_refuses_to_overwrite(tmp_path: Path) -> None:
    path = make(tmp_path, 1)
    with pytest.raises(JournalError, match="already exists"):
        Journal.create(path, CONFIG)
    assert len(read_journal(path).records) == 1


def test_reopen_appends_after_existing_records(tmp_path: Path) -> None:
    path = make(tmp_path, 2)
    j, contents = Journal.open(path)
    with j:
        assert sorted(contents.records) == [1, 2]
        j.append(game(3))
    assert sorted(read_journal(path).records) == [1, 2, 3]


def test_only_one_writer(tmp_path: Path) -> None:
    path = make(tmp_path, 1)
    j, _ = Journal.open(path)
    with j:
        # flock is per open file description, so a second open in this process conflicts like another process.
        with pytest.raises(JournalError, match="in use by another running quarto-arena"):
            Journal.open(path)
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from quarto_arena.arena.journal import "
                "Journal, JournalError\ntry:\n Journal.open(Path(sys.argv[1]))\nexcept JournalError as e:\n print(e)",
                str(path),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "in use" in probe.stdout
    Journal.open(path)[0].close()


def every_cut(path: Path) -> list[int]:
    """Every length at which the write of the last frame (game 3) could have been cut."""
    size = path.stat().st_size
    start = size - len(encode_frame({"kind": "game", "id": 3, "game": game(3).to_dict()}))
    return list(range(start + 1, size))


def test_every_torn_tail_is_dropped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = make(tmp_path, 3)
    data = path.read_bytes()
    for cut in every_cut(path):
        path.write_bytes(data[:cut])
        caplog.clear()
        with caplog.at_level(logging.INFO):
            contents = read_journal(path)
        assert sorted(contents.records) == [1, 2], cut
        assert contents.torn is not None
        assert "torn" in caplog.text


def test_zero_filled_and_checksum_failing_tails_are_torn(tmp_path: Path) -> None:
    path = make(tmp_path, 3)
    data = path.read_bytes()
    frame = len(encode_frame({"kind": "game", "id": 3, "game": game(3).to_dict()}))
    # Power loss after the file grew but before the data landed: zeros where the last frame should be.
    path.write_bytes(data[: len(data) - frame] + b"\x00" * frame)
    assert sorted(read_journal(path).records) == [1, 2]
    # The last frame complete in length but with a damaged byte: a sector that never got written.
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    contents = read_journal(path)
    assert sorted(contents.records) == [1, 2]
    assert "checksum" in (contents.torn or "")


def test_open_truncates_the_torn_tail_before_appending(tmp_path: Path) -> None:
    path = make(tmp_path, 3)
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    j, contents = Journal.open(path)
    with j:
        assert contents.torn is not None
        assert path.stat().st_size == contents.good_length
        j.append(game(3))
    after = read_journal(path)
    assert after.torn is None
    assert sorted(after.records) == [1, 2, 3]


def test_corruption_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = make(tmp_path, 3)
    data = bytearray(path.read_bytes())
    full = read_journal(path)
    frame3 = len(encode_frame({"kind": "game", "id": 3, "game": game(3).to_dict()}))
    middle = full.good_length - frame3 - 10  # a payload byte of game 2
    data[middle] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match=r"corrupt record at byte \d+ \(checksum mismatch\)"):
        read_journal(path)


def test_damaged_length_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = make(tmp_path, 3)
    data = bytearray(path.read_bytes())
    # The first game frame starts right after the header frame; damage its length field.
    first_game = len(MAGIC) + 12 + int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "big")
    data[first_game] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match=f"corrupt record header at byte {first_game}"):
        read_journal(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a quarto-arena journal"),
        (b'[Event "x"]\n', "not a quarto-arena journal"),
        (b"\x89PNG\r\n\x1a\n....", "not a quarto-arena journal"),
        (MAGIC, "no header record"),
        (MAGIC + encode_frame({"kind": "game", "id": 1, "game": {}}), "first record is not a journal header"),
        (MAGIC + encode_frame({"kind": "header", "format": 9, "config": {}}), "format 9 comes from a newer"),
        (MAGIC + encode_frame({"kind": "header", "format": "x", "config": {}}), "unknown journal format 'x'"),
        (MAGIC + encode_frame({"kind": "header", "format": 1}), "no configuration"),
        (
            MAGIC + encode_frame({"kind": "header", "format": 1, "config": {}}) + encode_frame({"kind": "note"}),
            "unknown kind 'note'",
        ),
        (
            MAGIC
            + encode_frame({"kind": "header", "format": 1, "config": {}})
            + encode_frame({"kind": "game", "id": 1, "game": {"first": "a"}}),
            r"game record at byte 49 is malformed \(KeyError: 'second'\)",
        ),
        (
            MAGIC
            + encode_frame({"kind": "header", "format": 1, "config": {}})
            + encode_frame({"kind": "game", "id": 2, "game": game(1).to_dict()}),
            "bad id 2",
        ),
        (
            MAGIC
            + encode_frame({"kind": "header", "format": 1, "config": {}})
            + encode_frame({"kind": "game", "id": 1, "game": game(1).to_dict()})
            + encode_frame({"kind": "game", "id": 1, "game": game(1).to_dict()}),
            "game 1 is recorded twice",
        ),
    ],
)
def test_foreign_and_bad_journals(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "journal.qaj"
    path.write_bytes(content)
    with pytest.raises(JournalError, match=message) as info:
        read_journal(path)
    assert "\n" not in str(info.value)


def test_payload_that_is_not_msgpack(tmp_path: Path) -> None:
    import struct
    import zlib

    garbage = b"\xc1\xc1\xc1"  # 0xc1 is never used in msgpack
    head = struct.pack(">II", len(garbage), zlib.crc32(garbage))
    frame = head + struct.pack(">I", zlib.crc32(head)) + garbage
    path = tmp_path / "journal.qaj"
    path.write_bytes(MAGIC + encode_frame({"kind": "header", "format": 1, "config": {}}) + frame)
    with pytest.raises(JournalError, match="is not msgpack"):
        read_journal(path)
    path.write_bytes(MAGIC + encode_frame({"kind": "header", "format": 1, "config": {}}) + encode_frame([1, 2]))  # type: ignore[arg-type]
    with pytest.raises(JournalError, match="is not a journal record"):
        read_journal(path)


def test_missing_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="no journal here"):
        read_journal(tmp_path / "journal.qaj")
    with pytest.raises(JournalError, match="no journal here"):
        Journal.open(tmp_path / "journal.qaj")
    if os.geteuid() != 0:
        path = make(tmp_path, 1)
        path.chmod(0)
        with pytest.raises(JournalError, match="cannot"):
            read_journal(path)


def test_payload_is_plain_msgpack(tmp_path: Path) -> None:
    # Other tools can read the stream with any msgpack library after skipping the 12-byte frame headers.
    path = make(tmp_path, 1)
    data = path.read_bytes()[len(MAGIC) :]
    n = int.from_bytes(data[:4], "big")
    assert msgpack.unpackb(data[12 : 12 + n])["config"] == CONFIG


def test_frames_are_packb_in_every_thread_and_after_a_failed_one() -> None:
    # encode_frame keeps one Packer per thread: its frames must be packb's, also after a payload it could not pack
    # (the Packer resets itself) and from another thread (the group commit syncs in the executor's).
    import threading
    import zlib

    payload = {"kind": "game", "id": 7, "game": {"first": "é", "turns": [["a1b", 3, None]] * 16, "x": 1.5}}

    def expected(p: dict[str, object]) -> bytes:
        data = msgpack.packb(p, use_bin_type=True)
        head = len(data).to_bytes(4, "big") + zlib.crc32(data).to_bytes(4, "big")
        return head + zlib.crc32(head).to_bytes(4, "big") + data

    assert encode_frame(payload) == expected(payload)
    with pytest.raises(TypeError):
        encode_frame({"kind": "game", "game": object()})
    assert encode_frame(payload) == expected(payload)
    other: list[bytes] = []
    thread = threading.Thread(target=lambda: other.append(encode_frame({**payload, "id": 8})))
    thread.start()
    thread.join()
    assert other == [expected({**payload, "id": 8})]
    assert encode_frame(payload) == expected(payload)
