"""quarto_arena.arena.server: the arena as a UQI server that bots connect in to (SPEC §3.4).

- :mod:`.keys`: CurveZMQ key pairs in zmq.auth's format (``quarto-arena keys new NAME --dir KEYS``);
- :mod:`.server`: :class:`Server` (a ROUTER, CurveZMQ through a ZAP handler, heartbeats, limits per connection) and
  :class:`SlotTransport`, one session on one slot of a connected bot;
- :mod:`.player`: :class:`ServerPlayer`, the run's player when some of its engines are ``remote:NAME``.
"""

from .keys import (
    ARENA_KEY,
    MAX_KEY_FILE,
    KeysError,
    ServerKeys,
    keys_signature,
    load_keys_directory,
    load_server_keys,
    new_key_pair,
    read_key_file,
)
from .player import ServerPlayer, server_for, server_player
from .server import Limits, Server, ServerError, SlotTransport

__all__ = [
    "ARENA_KEY",
    "MAX_KEY_FILE",
    "KeysError",
    "Limits",
    "Server",
    "ServerError",
    "ServerKeys",
    "ServerPlayer",
    "SlotTransport",
    "keys_signature",
    "load_keys_directory",
    "load_server_keys",
    "new_key_pair",
    "read_key_file",
    "server_for",
    "server_player",
]
