"""CurveZMQ key pairs for bots that connect in, in the certificate format of pyzmq's ``zmq.auth``.

``quarto-arena keys new NAME --dir KEYS`` writes ``KEYS/NAME.key`` (the public key, to hand out) and
``KEYS/NAME.key_secret`` (the pair, to keep: readable by its owner only). The arena's own pair is named ``arena``:
an arena serving with ``--keys KEYS`` reads its secret ``KEYS/arena.key_secret`` and the public key
``KEYS/NAME.key`` of every bot ``remote:NAME`` of the run; a bot's author gets ``NAME.key_secret`` and
``arena.key``. A key is the bot's identity: the arena takes a connection's name from its key (SPEC §3.4).

A key file is read as a peer's input would be: at most :data:`MAX_KEY_FILE` bytes (a larger one is refused without
being read: a key is 40 characters, and zmq.auth's files hold a few lines of comments), only a regular file (never
a pipe or a device, which could block), and a standing arena (a ladder) reads its keys directory off its event
loop (:func:`keys_signature` tells when to). A key file being rewritten in place (as ``cp`` does: emptied, then
written) keeps the key it had until it can be read whole again (:func:`load_keys_directory`'s ``previous``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import zmq.auth
from zmq.utils import z85

from ..errors import ArenaError, ExitStatus
from ..roster import RosterError, check_name

__all__ = [
    "ARENA_KEY",
    "MAX_KEY_FILE",
    "KeysError",
    "ServerKeys",
    "keys_signature",
    "load_keys_directory",
    "load_server_keys",
    "new_key_pair",
    "read_key_file",
]

ARENA_KEY: Final = "arena"
"""The name of the arena's own key pair."""
MAX_KEY_FILE: Final = 8192
"""Bytes a key file may hold: zmq.auth's files are about 300 (a key of 40 characters, a few lines of comments)."""
_KEY_CHARS: Final = 40  # a Curve25519 key in Z85


class KeysError(ArenaError):
    """A key that cannot be made or used; one line naming the file and the problem."""

    status = ExitStatus.USAGE
    reason = "keys"


@dataclass(frozen=True, slots=True)
class ServerKeys:
    """What an arena serving with keys needs: its own pair, and the bots' public keys by name."""

    public: bytes
    """The arena's public key (Z85), which bots give as ``--server-key``."""
    secret: bytes
    """The arena's secret key (Z85)."""
    bots: Mapping[bytes, str]
    """Bot name by public key (Z85): the only keys let in, and the name each one connects as."""


def new_key_pair(directory: Path, name: str) -> tuple[Path, Path]:
    """Writes ``directory/NAME.key`` and ``directory/NAME.key_secret`` (the secret readable by its owner only).

    Refuses to overwrite a key (a new pair would lock the bot that holds the old one out). Raises
    :class:`KeysError`.
    """
    try:
        check_name(name, "key name")
    except RosterError as e:
        raise KeysError(str(e)) from None
    public, secret = directory / f"{name}.key", directory / f"{name}.key_secret"
    for path in (public, secret):
        if path.exists():
            raise KeysError(f"{path} exists already: a new pair would lock out whoever holds it (delete both files)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # The secret file must never be readable by others, not even for the moment between writing and chmod.
        mask = os.umask(0o077)
        try:
            zmq.auth.create_certificates(directory, name)
        finally:
            os.umask(mask)
        public.chmod(0o644)
    except OSError as e:
        raise KeysError(f"{directory}: cannot write the keys: {e.strerror or e}") from None
    return public, secret


def read_key_file(path: Path) -> tuple[bytes, bytes | None]:
    """The public key and the secret key (None when it holds none) of a certificate file in zmq.auth's format, as
    ``zmq.auth.load_certificate`` reads it, but safely: a file that is not a regular file, or that holds more than
    :data:`MAX_KEY_FILE` bytes, is refused without being read (neither a 4 GiB file nor a pipe can hold the caller).
    Raises :class:`KeysError` naming the file and the problem."""
    try:
        # O_NONBLOCK: opening a pipe (a FIFO named like a key) must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise KeysError(f"{path}: cannot read it: {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeysError(f"{path}: not a regular file")
        if info.st_size > MAX_KEY_FILE:
            raise KeysError(f"{path}: {info.st_size} bytes, not read: a key file holds at most {MAX_KEY_FILE}")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_KEY_FILE:  # it may grow while it is read
            chunk = os.read(fd, MAX_KEY_FILE + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise KeysError(f"{path}: cannot read it: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if size > MAX_KEY_FILE:
        raise KeysError(f"{path}: more than {MAX_KEY_FILE} bytes, not read further: not a key file")
    public: bytes | None = None
    secret: bytes | None = None
    for raw in b"".join(chunks).splitlines():
        line = raw.strip()
        if line.startswith(b"#"):
            continue
        if line.startswith(b"public-key") and b"=" in line:
            public = line.split(b"=", 1)[1].strip(b" \t'\"")
        elif line.startswith(b"secret-key") and b"=" in line:
            secret = line.split(b"=", 1)[1].strip(b" \t'\"")
    if not public:
        raise KeysError(f"{path}: not a key file (no public key in it)")
    return public, secret or None


def _read(path: Path, *, secret: bool) -> tuple[bytes, bytes | None]:
    public, secret_key = read_key_file(path)
    for key in (public, secret_key):
        if key is not None and (len(key) != _KEY_CHARS or len(_decoded(key, path)) != 32):
            raise KeysError(f"{path}: not a Curve25519 key in Z85 ({len(key)} characters)")
    if secret and secret_key is None:
        raise KeysError(f"{path}: holds no secret key")
    return public, secret_key


def _decoded(key: bytes, path: Path) -> bytes:
    try:
        return z85.decode(key)
    except (ValueError, KeyError, IndexError):
        raise KeysError(f"{path}: not a Curve25519 key in Z85") from None


def load_server_keys(directory: Path, bots: Iterable[str]) -> ServerKeys:
    """The arena's pair (``arena.key_secret``) and the public key of each bot in ``bots`` (``NAME.key``).

    Raises :class:`KeysError` for a missing or unreadable file, for a bot named ``arena``, and for one key given
    to two bots (either could then connect as the other).
    """
    if not directory.is_dir():
        raise KeysError(f"--keys {directory}: no such directory (make keys with: quarto-arena keys new NAME --dir DIR)")
    public, secret = _read(directory / f"{ARENA_KEY}.key_secret", secret=True)
    assert secret is not None
    names: dict[bytes, str] = {}
    for name in bots:
        if name == ARENA_KEY:
            raise KeysError(f"remote:{ARENA_KEY}: '{ARENA_KEY}' is the arena's own key, not a bot's")
        path = directory / f"{name}.key"
        if not path.is_file():
            raise KeysError(
                f"{path}: no key for remote:{name}: make one with 'quarto-arena keys new {name} --dir {directory}'"
                f" and give the bot {name}.key_secret"
            )
        key, _ = _read(path, secret=False)
        if key == public:
            raise KeysError(f"{path}: this is the arena's own public key, not the bot's")
        if key in names:
            raise KeysError(f"{path}: the same key as {names[key]}.key: each bot needs its own key")
        names[key] = name
    return ServerKeys(public, secret, names)


def keys_signature(directory: Path) -> tuple[tuple[str, int, int, int], ...] | None:
    """What changes when a key file of ``directory`` is added, removed or written (its name, inode, size and time of
    change); None when the directory cannot be read. Compare two to know when to read the keys again."""
    try:
        with os.scandir(directory) as entries:
            seen = []
            for entry in entries:
                if not entry.name.endswith(".key"):
                    continue
                with contextlib.suppress(OSError):  # gone meanwhile
                    info = entry.stat()
                    seen.append((entry.name, info.st_ino, info.st_size, info.st_mtime_ns))
    except OSError:
        return None
    return tuple(sorted(seen))


def load_keys_directory(directory: Path, previous: Mapping[bytes, str] | None = None) -> tuple[ServerKeys, list[str]]:
    """The arena's pair and every bot's public key in ``directory`` (each ``NAME.key`` but the arena's): who may play
    on a ladder. Raises :class:`KeysError` when the arena's own pair cannot be read; a bot's key that cannot be used
    (unreadable, too large, a bad name, the arena's key, a key two files share) is left out, and the second value
    says why. With ``previous`` (the keys read last time), a file that cannot be read now keeps the key it had: a
    key being rewritten in place is read once it is whole, and its bot is not cut meanwhile."""
    if not directory.is_dir():
        raise KeysError(f"--keys {directory}: no such directory (make keys with: quarto-arena keys new NAME --dir DIR)")
    public, secret = _read(directory / f"{ARENA_KEY}.key_secret", secret=True)
    assert secret is not None
    had = {name: key for key, name in (previous or {}).items()}
    names: dict[bytes, str] = {}
    problems: list[str] = []
    try:
        paths = sorted(p for p in directory.iterdir() if p.suffix == ".key" and p.stem != ARENA_KEY)
    except OSError as e:
        raise KeysError(f"--keys {directory}: cannot read it: {e.strerror or e}") from None
    for path in paths:
        try:
            check_name(path.stem, "key name")
            key, _ = _read(path, secret=False)
        except RosterError as e:
            problems.append(f"{path}: left out: {e}")
            continue
        except KeysError as e:
            old = had.get(path.stem)
            if old is None:
                problems.append(f"left out: {e}")
                continue
            problems.append(f"{path.stem} keeps its key until its file can be read: {e}")
            key = old
        if key == public:
            problems.append(f"{path}: left out: this is the arena's own public key")
        elif key in names:
            problems.append(f"{path}: left out: the same key as {names[key]}.key")
        else:
            names[key] = path.stem
    return ServerKeys(public, secret, names), problems
