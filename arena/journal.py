"""The tournament journal: an append-only, crash-safe stream of msgpack records, one per finished game.

A game counts once its record is in the journal and on disk (``fsync``); everything else a tournament writes (PGN,
JSON Lines, tables) can be rebuilt from the journal. A tournament killed at any moment (``kill -9``, power loss)
resumes from it: the header holds the whole configuration, the game records say which scheduled games are done.

Format (version 1)::

    file    = MAGIC frame*
    MAGIC   = 89 51 41 4A 0D 0A 1A 0A          ("\\x89QAJ\\r\\n\\x1a\\n": 8 bytes, as PNG's; text-mode
                                               transfers and foreign files fail here)
    frame   = length:u32be  crc:u32be  hcrc:u32be  payload[length]
                crc  = CRC-32 of the payload
                hcrc = CRC-32 of the 8 bytes length+crc, so a damaged length is seen as damage, not trusted
    payload = one msgpack map:
        first frame:   {"kind": "header", "format": 1, "created": ISO-8601 UTC, "config": {...}}
        every other:   {"kind": "game", "id": GAME_ID, "game": GameRecord.to_dict()}

The header frame is written to a temporary file, synced and renamed into place, so a journal either exists with
its configuration or does not exist. A game frame is one ``write`` on a file opened ``O_APPEND`` followed by
``fsync``. A crash during that write leaves a *torn tail*: the last frame incomplete (fewer bytes than its header
announces, or a header cut short), or complete in length but with a bad CRC, or zero-filled (file extended,
data lost). Reading drops a torn tail with a warning, and opening for append truncates it so new frames follow
good ones. Damage anywhere else (a bad CRC with frames after it, a payload that is not the expected msgpack map,
a game id twice) is corruption: :class:`JournalError` with a one-line message, never a guess.

Only one process may append to a journal: :meth:`Journal.open` takes an exclusive ``flock`` (released by the
kernel when the process dies, even by SIGKILL).
"""

from __future__ import annotations

import datetime
import fcntl
import logging
import os
import struct
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgpack

from .errors import ArenaError, ExitStatus
from .records import GameRecord

__all__ = [
    "FORMAT_VERSION",
    "JOURNAL_NAME",
    "MAGIC",
    "Journal",
    "JournalContents",
    "JournalError",
    "encode_frame",
    "read_journal",
]

log = logging.getLogger(__name__)

MAGIC: Final = b"\x89QAJ\r\n\x1a\n"
FORMAT_VERSION: Final = 1
JOURNAL_NAME: Final = "journal.qaj"
_HEAD: Final = struct.Struct(">III")
#: No record comes near this; a larger length means damage (and would make us allocate wildly).
_MAX_FRAME: Final = 64 << 20


class JournalError(ArenaError):
    """A journal that cannot be used: foreign, corrupt, from a newer version, or in use. The message is one line."""

    status = ExitStatus.USAGE
    reason = "journal"


@dataclass(frozen=True, slots=True)
class JournalContents:
    """What a journal holds."""

    config: dict[str, Any]
    """The tournament configuration from the header."""
    records: dict[int, GameRecord] = field(default_factory=dict)
    """Finished games by game id, in journal order."""
    good_length: int = 0
    """Bytes of intact frames from the start of the file; a torn tail starts here."""
    torn: str | None = None
    """Why the tail was dropped (one line), or None when the journal ended cleanly."""


_PACKERS = threading.local()
"""One msgpack Packer per thread (``packb`` makes one per call; a Packer resets itself after each pack, and after a
failed one)."""


def encode_frame(payload: Mapping[str, Any]) -> bytes:
    """One frame: the length/CRC header and the msgpack payload."""
    packer = getattr(_PACKERS, "packer", None)
    if packer is None:
        packer = _PACKERS.packer = msgpack.Packer(use_bin_type=True)
    data: bytes = packer.pack(payload)
    head = struct.pack(">II", len(data), zlib.crc32(data))
    return head + struct.pack(">I", zlib.crc32(head)) + data


def _decode(path: Path, offset: int, data: bytes) -> dict[str, Any]:
    try:
        obj = msgpack.unpackb(data, raw=False)
    except Exception as e:  # msgpack raises several unrelated types for bad input
        raise JournalError(f"{path}: record at byte {offset} is not msgpack ({type(e).__name__})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        raise JournalError(f"{path}: record at byte {offset} is not a journal record")
    return obj


def read_journal(path: Path) -> JournalContents:
    """Reads and checks a whole journal; drops a torn tail (its description is returned in ``torn``, to be shown).

    Raises :class:`JournalError` for a missing, foreign, corrupt or newer journal.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise JournalError(f"{path}: no journal here (is this a tournament directory?)") from None
    except OSError as e:
        raise JournalError(f"{path}: cannot read the journal: {e.strerror}") from None
    if not raw.startswith(MAGIC):
        raise JournalError(f"{path}: not a quarto-arena journal (the file does not start with the journal magic)")
    frames: list[tuple[int, dict[str, Any]]] = []
    offset = len(MAGIC)
    torn: str | None = None
    size = len(raw)
    while offset < size:
        rest = size - offset
        if rest < _HEAD.size:
            torn = f"the last record is cut short ({rest} bytes of a record header)"
            break
        length, crc, hcrc = _HEAD.unpack_from(raw, offset)
        if zlib.crc32(raw[offset : offset + 8]) != hcrc:
            if not raw[offset:].strip(b"\x00"):
                torn = f"the file ends in {rest} zero bytes (space allocated, record never written)"
                break
            raise JournalError(f"{path}: corrupt record header at byte {offset}")
        if length > _MAX_FRAME:
            raise JournalError(f"{path}: corrupt record header at byte {offset} (length {length})")
        end = offset + _HEAD.size + length
        if end > size:
            torn = f"the last record is cut short ({size - offset - _HEAD.size} of {length} bytes)"
            break
        payload = raw[offset + _HEAD.size : end]
        if zlib.crc32(payload) != crc:
            if end == size:
                torn = "the last record fails its checksum (a write cut short)"
                break
            raise JournalError(f"{path}: corrupt record at byte {offset} (checksum mismatch)")
        frames.append((offset, _decode(path, offset, payload)))
        offset = end
    good = offset
    if not frames:
        raise JournalError(f"{path}: the journal has no header record")
    _, head = frames[0]
    if head.get("kind") != "header":
        raise JournalError(f"{path}: the first record is not a journal header")
    version = head.get("format")
    if version != FORMAT_VERSION:
        if isinstance(version, int) and version > FORMAT_VERSION:
            raise JournalError(
                f"{path}: journal format {version} comes from a newer quarto-arena (this one reads {FORMAT_VERSION})"
            )
        raise JournalError(f"{path}: unknown journal format {version!r}")
    config = head.get("config")
    if not isinstance(config, dict):
        raise JournalError(f"{path}: the journal header holds no configuration")
    records: dict[int, GameRecord] = {}
    for offset, frame in frames[1:]:
        if frame["kind"] != "game":
            raise JournalError(f"{path}: record at byte {offset} has unknown kind {frame['kind']!r}")
        game_id = frame.get("id")
        try:
            record = GameRecord.from_dict(frame["game"])
        except (KeyError, ValueError, TypeError) as e:
            raise JournalError(f"{path}: game record at byte {offset} is malformed ({type(e).__name__}: {e})") from None
        if not isinstance(game_id, int) or game_id != record.game_id:
            raise JournalError(f"{path}: game record at byte {offset} has a bad id {game_id!r}")
        if game_id in records:
            raise JournalError(f"{path}: game {game_id} is recorded twice (second at byte {offset})")
        records[game_id] = record
    if torn is not None:
        # INFO, not WARNING: the caller shows ``torn`` to the user; logging it as a warning too would say it twice.
        log.info("%s: dropped a torn last record: %s", path, torn)
    return JournalContents(config=config, records=records, good_length=good, torn=torn)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """A journal open for appending (exclusively locked). Use :meth:`create` or :meth:`open`; close when done."""

    def __init__(self, path: Path, fd: int) -> None:
        """Wraps an open, locked descriptor; use :meth:`create` or :meth:`open` instead."""
        self.path = path
        self._fd: int | None = fd

    @staticmethod
    def _lock(path: Path) -> int:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise JournalError(f"{path}: the journal is in use by another running quarto-arena") from None
        return fd

    @classmethod
    def create(cls, path: Path, config: Mapping[str, Any]) -> Journal:
        """Writes a new journal holding only the header; refuses to overwrite an existing one."""
        if path.exists():
            raise JournalError(f"{path}: a journal already exists (resume it with --resume, or choose another --out)")
        header = {
            "kind": "header",
            "format": FORMAT_VERSION,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "config": dict(config),
        }
        tmp = path.with_name(path.name + ".tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(MAGIC + encode_frame(header))
                f.flush()
                os.fsync(f.fileno())
            # Rename after the sync: the journal appears complete with its header, or not at all.
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        except OSError as e:
            raise JournalError(f"{path}: cannot create the journal: {e.strerror}") from None
        return cls(path, cls._lock(path))

    @classmethod
    def open(cls, path: Path) -> tuple[Journal, JournalContents]:
        """Opens an existing journal to append to it: reads it, locks it and cuts off a torn tail."""
        try:
            fd = cls._lock(path)
        except FileNotFoundError:
            raise JournalError(f"{path}: no journal here (is this a tournament directory?)") from None
        except OSError as e:
            raise JournalError(f"{path}: cannot open the journal: {e.strerror}") from None
        try:
            contents = read_journal(path)
            if contents.torn is not None:
                # New frames must follow intact ones, or the torn bytes would become corruption in the middle.
                os.ftruncate(fd, contents.good_length)
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd), contents

    def append(self, record: GameRecord) -> None:
        """Appends one finished game and syncs it to disk; the game counts once this returns."""
        self.append_many((record,))

    def append_many(self, records: Sequence[GameRecord], dicts: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Appends finished games in one write and one sync (group commit); they count once this returns.

        ``dicts``, when given, are the records' :meth:`~.records.GameRecord.to_dict` already made (a record is
        formatted once, for the journal and the JSON Lines file alike). A crash during the write leaves a torn tail
        at worst: the games before it are whole, the rest are played again on resume.
        """
        if self._fd is None:
            raise JournalError(f"{self.path}: the journal is closed")
        if dicts is None:
            dicts = [r.to_dict() for r in records]
        data = b"".join(
            encode_frame({"kind": "game", "id": r.game_id, "game": d}) for r, d in zip(records, dicts, strict=True)
        )
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    @staticmethod
    def discard(path: Path) -> None:
        """Deletes the journal at ``path`` unless a running process holds it (``--force``: start over)."""
        try:
            fd = Journal._lock(path)
        except FileNotFoundError:
            return
        try:
            path.unlink()
        finally:
            os.close(fd)

    @staticmethod
    def discard_if_unplayed(path: Path) -> bool:
        """Deletes the journal at ``path`` when it counts no game and no process holds it; True if it did.

        A run that failed before its first game (an unknown option, an engine that cannot start) leaves a journal
        with nothing in it worth keeping: the corrected command may take its directory. The lock is held while the
        journal is read, so a run that is still going (or counts a game meanwhile) is never taken.
        """
        try:
            fd = Journal._lock(path)
        except FileNotFoundError:
            return True
        try:
            try:
                contents = read_journal(path)
            except JournalError:
                return False  # damaged or foreign: not ours to delete without --force
            if contents.records or contents.torn is not None:
                return False
            path.unlink()
            return True
        finally:
            os.close(fd)

    def close(self) -> None:
        """Releases the lock and the descriptor (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
