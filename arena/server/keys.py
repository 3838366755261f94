"""CurveZMQ key pairs for bots that connect in, in the certificate format of pyzmq's ``zmq.auth``.

``quarto-arena keys new NAME --dir KEYS`` writes ``KEYS/NAME.key`` (the public key, to hand out) and
``KEYS/NAME.key_secret`` (the pair, to keep: readable by its owner only). The arena's own pair is named ``arena``:
an arena serving with ``--keys KEYS`` reads its secret ``KEYS/arena.key_secret`` and the public key
``KEYS/NAME.key`` of every bot ``remote:NAME`` of the run; a bot's author gets ``NAME.key_secret`` and
``arena.key``. A key is the bot's identity: the arena takes a connection's name from its key (SPEC §3.4).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import zmq.auth
from zmq.utils import z85

from ..errors import ArenaError, ExitStatus
from ..roster import RosterError, check_name

__all__ = ["ARENA_KEY", "KeysError", "ServerKeys", "load_keys_directory", "load_server_keys", "new_key_pair"]

ARENA_KEY: Final = "arena"
"""The name of the arena's own key pair."""
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


def _read(path: Path, *, secret: bool) -> tuple[bytes, bytes | None]:
    if not path.is_file():
        raise KeysError(f"{path}: no such key file")
    try:
        public, secret_key = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as e:
        raise KeysError(f"{path}: not a key file ({e})") from None
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


def load_keys_directory(directory: Path) -> tuple[ServerKeys, list[str]]:
    """The arena's pair and every bot's public key in ``directory`` (each ``NAME.key`` but the arena's): who may play
    on a ladder. Raises :class:`KeysError` when the arena's own pair cannot be read; a bot's key that cannot be used
    (unreadable, a bad name, the arena's key, a key two files share) is left out, and the second value says why."""
    if not directory.is_dir():
        raise KeysError(f"--keys {directory}: no such directory (make keys with: quarto-arena keys new NAME --dir DIR)")
    public, secret = _read(directory / f"{ARENA_KEY}.key_secret", secret=True)
    assert secret is not None
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
            problems.append(f"left out: {e}")
            continue
        if key == public:
            problems.append(f"{path}: left out: this is the arena's own public key")
        elif key in names:
            problems.append(f"{path}: left out: the same key as {names[key]}.key")
        else:
            names[key] = path.stem
    return ServerKeys(public, secret, names), problems
