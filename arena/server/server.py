"""The arena as a UQI server: bots connect in over ZeroMQ, authenticated and encrypted by CurveZMQ (SPEC §3.4).

The arena binds a ROUTER; each bot connects a DEALER, says ``hello`` with its name and the number of slots (engines)
it offers, and plays on those slots the games the arena assigns. For each game the arena begins a session on a free
slot (``begin K``, then UQI lines on channel K exactly as in SPEC §3.3) and ends it with ``quit``; the bot answers
``ready K`` once a clean engine can take the slot's next session. :meth:`Server.lease` hands such a session out as a
:class:`SlotTransport`, which an :class:`~quarto_arena.arena.engine.EngineSession` runs like any other transport.

What the server promises:

- Authentication. With keys, only the public keys of the run's remote bots get in (a ZAP handler from pyzmq's
  ``zmq.auth``), and a bot's name is its key's: it cannot take another's. A plain-text client or a wrong server key
  fails the CurveZMQ handshake. Every refusal is logged (rate-limited), and nothing of it reaches a game. Without
  keys the server is meant for loopback only (the CLI refuses anything else) and takes a name as it is said.
- Liveness. ZMTP heartbeats drop a dead bot's connection within about three seconds; its running games are lost by
  disconnect, and it is used again when it reconnects, with the slots of its new ``hello``.
- Limits per connection (:class:`Limits`): lines of at most 4096 bytes (libzmq itself drops a connection whose frame
  is over :data:`MAX_FRAME`), a rate of lines, a number of slots, a ``hello`` within a deadline of connecting. A peer
  that breaks one is cut: told ``bye``, its games lost, its connection shut down. A slot whose ``ready`` comes later
  than a deadline after its session's end is not cut for it (no deadline runs while a bot's engine starts, SPEC
  §3.4): it is set aside until its ``ready`` comes, and a game waits for a bot with no other slot up to
  ``Limits.restart``.
- Memory. ZeroMQ queues at most :data:`QUEUE` messages per connection, each frame at most :data:`MAX_FRAME` bytes;
  lines that belong to no session are dropped, and what is kept about a cut connection goes with its connection.
  ZeroMQ holds the frames of a message that never ends without any limit (a peer writing ZMTP by hand can send
  one), and delivers nothing of it: a connection that has sent more than :data:`UNSEEN` bytes beyond the whole
  messages read from it (as the kernel counts them, on TCP) is cut too, looked at every 10 ms, every 100 ms for a
  bot authenticated by its key (libzmq reads in a thread of its own, so the cut comes within what a peer can send
  in that time, not at the byte).
- Admission. Connections that have not said ``hello`` wait in a queue capped per address and in all
  (:class:`Limits`). A flood must lock no one out, so a connection past a cap is never refused: room is made by
  shutting down the oldest connection of the queue (per address, or in all) that has sent nothing at all, or the
  oldest when every one has sent something. A real client's handshake takes milliseconds and begins at once, so
  neither an attacker who keeps the queue full (from other addresses or from the bot's own, behind the same NAT) nor
  one who refills it as fast as it is emptied keeps a bot out. The connections closed before their ``hello`` are
  summed up in at most one log line a second. libzmq accepts a connection (and takes its descriptor) before the
  arena hears of it, so that is as early as a ROUTER allows.

A ROUTER cannot close one peer's connection, so the server shuts that connection's socket down itself: the descriptor
comes with every message (``ZMQ_SRCFD``) and the socket monitor reports when it closes; the socket's inode, read
through a duplicate of the descriptor, tells a descriptor since reused for another connection, which is never
touched. The monitor's events are read in batches and handled in order, never from within their own handling (a
shutdown does not read the monitor). The ZeroMQ sockets are plain (not ``zmq.asyncio``), read by the event loop
through their descriptors.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import errno
import fcntl
import itertools
import logging
import os
import socket
import struct
import termios
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import zmq
from quarto_arena.protocol.connect import (
    CONTROL,
    Begin,
    Bye,
    ConnectError,
    Ended,
    Goodbye,
    Hello,
    Kill,
    Leaving,
    Ready,
    Refused,
    Welcome,
    format_channel,
    format_control,
    parse_channel,
    parse_control,
)
from quarto_arena.protocol.uqi import MAX_LINE_BYTES, PROTOCOL_VERSION
from zmq.auth.asyncio import AsyncioAuthenticator
from zmq.utils import z85

from ..engine import Complaints, EngineConfig
from ..errors import ArenaError, ExitStatus
from ..transport import PeerGone, Transcript, Transport
from .keys import ServerKeys

__all__ = ["HEARTBEAT_MS", "MAX_FRAME", "QUEUE", "Limits", "Server", "ServerError", "SlotTransport"]

log = logging.getLogger(__name__)

MAX_FRAME: Final = 1 << 16
"""Largest frame libzmq accepts from a bot (``ZMQ_MAXMSGSIZE``); a larger one drops the connection at once."""
QUEUE: Final = 64
"""Messages ZeroMQ queues per connection, in each direction's receive side (``ZMQ_RCVHWM``)."""
SEND_QUEUE: Final = 1000
"""Messages queued for one bot; a bot that lets this many pile up does not read, and is cut."""
HEARTBEAT_MS: Final = 1000
"""Interval of the ZMTP heartbeats; a peer silent for three intervals is gone."""
ZAP_DOMAIN: Final = "quarto-arena"
_BATCH: Final = 256  # messages read per wake-up, so that a flood cannot hold off the games' deadlines
_TICK: Final = 0.1  # s between checks of the hello and ready deadlines and of the socket monitor
UNSEEN: Final = 1 << 20
"""Bytes a connection may have sent beyond the whole messages the arena has read from it: its queue of lines (64 of
at most 4 KiB) several times over. libzmq keeps about 64 bytes per frame, so even empty frames cost at most 32 MiB."""
_WATCH: Final = 0.01  # s between looks at what each connection has sent
_WIRE: Final = 256  # bytes of ZMTP and CurveZMQ framing allowed per message read, and per second (heartbeats)
_GOODBYE_LINGER_MS: Final = 300  # ms the goodbyes of a server that stops may take to leave
_BYE_DELAY: Final = 0.2  # s between telling a peer bye (or refused) and shutting its connection down
_GONE: Final = 4096  # routing ids of closed connections remembered, to drop what they still have queued
_MONITOR_SLICE: Final = 0.002  # s of monitor events handled per wake-up: a flood brings thousands a second, and the
# games' turns must not wait behind them (each costs a few system calls, a shutdown)
_MONITOR_QUEUE: Final = 1 << 16  # monitor events read ahead of their handling: libzmq's I/O thread (every bot's
# traffic) waits whenever the monitor's own queue is full, so it is read as soon as it can be
_SHED_LOOK: Final = 16  # connections of a full queue looked at, oldest first, for one that has sent nothing
_SUMMARY: Final = 1.0  # s between two log lines about connections closed before their hello
_HANDSHAKE_GRACE_MS: Final = 1000  # libzmq's own handshake deadline is this much after the hello deadline
# Plain ints for the hot path, not pyzmq's enums: an enum flag's ``&`` costs as much as the look at EVENTS itself.
_EVENTS: Final = int(zmq.EVENTS)
_POLLIN: Final = int(zmq.POLLIN)
_NOBLOCK: Final = int(zmq.NOBLOCK)
_EVENT: Final = struct.Struct("=HI")  # a monitor event's first frame (ZMQ_EVENT_* and its value), libzmq's v1 form
_TCPI_BYTES_RECEIVED: Final = 128  # offset of tcpi_bytes_received in Linux's struct tcp_info
UNREGISTERED: Final = "+"
"""The User-Id prefix of a key an open server does not know yet (no bot's name starts with it)."""
_HANDSHAKE_FAILURES: Final[dict[int, str]] = {
    int(zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH): "not the same security: a plain-text client, or keys on one side",
    int(zmq.PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC): "cryptographic error: the client does not hold the arena's public key",
}


class ServerError(ArenaError):
    """The server cannot serve (the endpoint cannot be bound); one line."""

    status = ExitStatus.USAGE
    reason = "cannot_bind"


@dataclass(frozen=True, slots=True)
class Limits:
    """What one connection may do; a peer that goes beyond is cut (its games lost, its connection shut down)."""

    slots: int = 64
    """Slots one connection may offer."""
    rate: float = 1000.0
    """Lines per second per slot, sustained (control lines included), beyond one answer to each message the arena
    sends (:meth:`_Peer.asked`)."""
    burst: int = 2000
    """Lines per slot above the rate that may come at once."""
    hello: float = 10.0
    """Seconds from connecting to ``hello``."""
    pending: int = 256
    """Connections that have not said ``hello`` yet, in all; one more is shut down at once."""
    pending_per_address: int = 32
    """Connections from one address that have not said ``hello`` yet; past it, the oldest silent one is shut down."""
    ready: float = 10.0
    """Seconds from the end of a session to its slot's ``ready``; past them the slot is set aside (told once) until its
    ``ready`` comes, however long its engine takes to start: the bot is not cut for it."""
    restart: float = 120.0
    """Seconds a game waits for a connected bot whose every slot is set aside before it is lost by disconnect: twice
    the bridge's own deadline for an engine's start."""


class _State(enum.Enum):
    FREE = "free"  #: ready for a session
    BUSY = "busy"  #: a session is on
    ENDING = "ending"  #: the session ended; waiting for the client's ready


class _Slot:
    __slots__ = ("late", "number", "since", "state", "transport")

    def __init__(self, number: int) -> None:
        self.number = number
        self.state = _State.FREE
        self.since = 0.0
        self.transport: SlotTransport | None = None
        self.late = False
        """Not ready within the deadline (told once): set aside until its ``ready``."""

    def aside(self, now: float, ready: float) -> bool:
        """True while the slot waits for its ``ready`` longer than ``ready`` seconds (its engine restarting)."""
        return self.state is _State.ENDING and now - self.since > ready


class _Conn:
    """One accepted connection, known by its descriptor until the monitor reports it closed."""

    __slots__ = ("accepted", "address", "closing", "fd", "host", "inode", "messages", "peer", "received")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.inode = _inode(fd)
        """The socket's inode: what tells this connection from a later one on the same descriptor number."""
        self.accepted = time.monotonic()
        self.address = _peer_address(fd)
        """The peer's ``HOST:PORT``, for the log."""
        self.host = self.address.rpartition(":")[0] or self.address
        """The peer's address without its port (for the per-address cap)."""
        self.peer: _Peer | None = None
        self.closing = False
        self.messages = 0
        """Whole messages read from it."""
        self.received = 0
        """Bytes of the frames of those messages."""

    def read(self, frames: list[Any]) -> None:
        """Counts a whole message read from the connection."""
        self.messages += 1
        self.received += sum(len(f) for f in frames)

    def unseen(self) -> int:
        """Bytes the connection has sent beyond its whole messages read so far (and their framing), or 0 when the
        system cannot tell (not TCP, or no ``tcpi_bytes_received``)."""
        counts = _tcp_counts(self.fd) if self.same() else None
        if counts is None:
            return 0
        got, waiting = counts
        framing = _WIRE * (self.messages + time.monotonic() - self.accepted)
        return max(0, int(got - waiting - self.received - framing))

    def silent(self) -> bool | None:
        """True while the peer has sent nothing at all (not even a ZMTP greeting), False once it has sent something
        or when the system cannot tell (not TCP); None when the descriptor is no longer this connection's."""
        if not self.same():
            return None
        counts = _tcp_counts(self.fd)
        return counts is not None and counts[0] == 0

    def same(self) -> bool:
        """True while the descriptor is still this connection's socket."""
        return self.inode is not None and _inode(self.fd) == self.inode


class _Waiting:
    """The connections that have not said ``hello`` yet, oldest first: in all, and per address."""

    __slots__ = ("_all", "_by_host")

    def __init__(self) -> None:
        self._all: dict[_Conn, None] = {}
        self._by_host: dict[str, dict[_Conn, None]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[_Conn]:
        return iter(list(self._all))

    def add(self, conn: _Conn) -> None:
        self._all[conn] = None
        self._by_host.setdefault(conn.host, {})[conn] = None

    def remove(self, conn: _Conn) -> None:
        """Takes ``conn`` out of the queue (it said hello, or is closing); nothing when it is not in it."""
        if self._all.pop(conn, 0) is None:  # it was in the queue (its value is None)
            host = self._by_host[conn.host]
            del host[conn]
            if not host:
                del self._by_host[conn.host]

    def from_host(self, host: str) -> list[_Conn]:
        """The connections from ``host`` that wait, oldest first."""
        return list(self._by_host.get(host, ()))

    def oldest(self, n: int, host: str | None = None) -> list[_Conn]:
        """The ``n`` oldest connections that wait (from ``host`` only, when given)."""
        pool = self._all if host is None else self._by_host.get(host, {})
        return list(itertools.islice(pool, n))

    def count(self, host: str) -> int:
        return len(self._by_host.get(host, ()))


class _Closures:
    """Connections the arena closed before their ``hello``, summed up in at most one log line a second (a flood of
    half-open connections is thousands a second: one line each would drown the log)."""

    __slots__ = ("_first", "_hosts", "_last", "_log", "_reasons", "_since")

    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._last = -_SUMMARY  # when a line was logged last
        self._since = 0.0  # when the first closure not logged yet came
        self._first = ""  # and its address
        self._hosts: dict[str, int] = {}
        self._reasons: dict[str, int] = {}

    def note(self, conn: _Conn, reason: str) -> None:
        """One connection closed, and why (connections closed for the same reason are counted together)."""
        if not self._hosts:
            self._since, self._first = time.monotonic(), conn.address
        self._hosts[conn.host] = self._hosts.get(conn.host, 0) + 1
        self._reasons[reason] = self._reasons.get(reason, 0) + 1
        self.flush()

    def flush(self) -> None:
        """Logs what was noted, unless a line was logged less than :data:`_SUMMARY` seconds ago."""
        now = time.monotonic()
        if not self._hosts or now - self._last < _SUMMARY:
            return
        n = sum(self._hosts.values())
        if n == 1:
            self._log.warning(
                "server: closed a connection from %s: %s", self._first, next(iter(self._reasons)), extra={"told": now}
            )
        else:
            top = sorted(self._hosts.items(), key=lambda kv: -kv[1])
            hosts = ", ".join(f"{h} ({k})" for h, k in top[:3]) + (f" and {len(top) - 3} more" if len(top) > 3 else "")
            why = ", ".join(f"{k} {reason}" for reason, k in sorted(self._reasons.items(), key=lambda kv: -kv[1]))
            self._log.warning(
                "server: closed %d connections that had not said hello, in %.1f s: %s; from %s",
                n,
                now - self._since,
                why,
                hosts,
                extra={"told": now},  # the clock by which lines are _SUMMARY apart at least
            )
        self._last = now
        self._hosts, self._reasons = {}, {}


def _inode(fd: int) -> int | None:
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None


class _Peer:
    """A connection that said hello: a bot and its slots."""

    __slots__ = ("_last", "_rate", "_tokens", "address", "burst", "conn", "leaving", "name", "rid", "slots")

    def __init__(self, rid: bytes, conn: _Conn, hello: Hello, address: str, limits: Limits) -> None:
        self.rid = rid
        self.conn = conn
        self.name = hello.name
        self.address = address
        self.slots = [_Slot(k) for k in range(1, hello.slots + 1)]
        self.burst = float(limits.burst * hello.slots)
        self._rate = limits.rate * hello.slots
        self._tokens = self.burst
        self._last = time.monotonic()
        self.leaving = False
        """The bot said ``leaving``: no session begins on it any more."""

    def asked(self) -> None:
        """The arena sent the peer a message: one line of answer is owed to it, outside the rate limit (an honest
        bot answering an instant engine's games as fast as the arena asks sent over 1000 lines a second and was
        cut for it); what a peer sends unasked still drains the bucket."""
        self._tokens = min(self.burst + 1.0, self._tokens + 1.0)

    def take(self) -> bool:
        """One message against the rate limit; False once the peer is over it."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        self._tokens -= 1
        return self._tokens >= 0

    def describe(self) -> str:
        return f"{self.name} ({self.address})"


class _Gate(AsyncioAuthenticator):
    """The ZAP handler: a CurveZMQ client gets in only with the public key of one of the run's remote bots, and its
    messages then carry that bot's name as their User-Id. An open server (:attr:`Server.register`) lets an unknown
    key in too, its User-Id :data:`UNREGISTERED` and the key: its hello then registers it, or is refused."""

    def __init__(self, context: zmq.Context[Any], keys: ServerKeys, complaints: Complaints, server: Server) -> None:
        super().__init__(context, log=logging.getLogger(f"{__name__}.zap"))
        self._names = dict(keys.bots)
        self._complaints = complaints
        self._server = server
        self._address = "?"
        self.configure_curve_callback(ZAP_DOMAIN, self)

    async def handle_zap_message(self, msg: list[bytes]) -> None:
        """Notes the client's address for the log, then lets zmq.auth answer the request."""
        self._address = msg[3].decode("utf-8", "replace") if len(msg) > 3 else "?"
        await super().handle_zap_message(msg)

    def admit(self, names: dict[bytes, str]) -> None:
        """The keys let in from now on (a connection already in is not asked again)."""
        self._names = names

    def callback(self, domain: str, key: bytes) -> bool:
        """True for a known key (or any, on an open server); an unknown one is refused and logged."""
        if key in self._names or self._server.register is not None:
            return True
        self._complaints.warn(f"refused a connection from {self._address}: unknown key {key.decode('ascii')}")
        return False

    def curve_user_id(self, client_public_key: bytes) -> str:
        """The bot's name: the User-Id of every message on the connection (an unknown key's: the key, marked)."""
        key = z85.encode(client_public_key)
        name = self._names.get(key)
        return name if name is not None else UNREGISTERED + key.decode("ascii")


class SlotTransport(Transport):
    """One session on one slot of a connected bot. Lines go out as ``[slot, line]`` messages on the bot's connection;
    the server delivers the bot's lines on that slot here. Build it with :meth:`Server.lease`."""

    def __init__(self, name: str, server: Server, peer: _Peer, slot: _Slot, transcript: Transcript | None) -> None:
        super().__init__(name, transcript)
        self._server = server
        self._peer = peer
        self._slot = slot
        self._channel = format_channel(slot.number)
        self._closed = False
        self._exit: str | None = None
        self.note(f"session on slot {slot.number} of {peer.describe()}")

    @property
    def bot(self) -> str:
        """The connected bot's name."""
        return self._peer.name

    @property
    def slot(self) -> int:
        """The slot number."""
        return self._slot.number

    def exit_info(self) -> str | None:
        """How the session ended from the bot's side (``disconnected``, ``the engine ended: exit code 1``)."""
        return self._exit

    def _write(self, data: bytes) -> None:
        if self.gone:
            raise PeerGone(f"{self.name} is gone ({self._exit or 'closed'})")
        for line in data.split(b"\n")[:-1]:
            self._server.send(self._peer, self._channel, line)
            if self.gone:  # the bot could not take it: its connection is gone, or cut
                raise PeerGone(self.describe_end())

    def poll(self) -> None:
        """Reads whatever ZeroMQ has already received (for every bot)."""
        self._server.drain()

    def deliver(self, line: bytes) -> None:
        """A line from the bot on this slot."""
        self.received_at = time.monotonic()
        self._received(line)

    def deliver_bad(self, why: str) -> None:
        """A frame on this slot that is no UQI line."""
        self.received_at = time.monotonic()
        self._bad(why)

    def end(self, why: str, exit_info: str) -> None:
        """The session ended from the bot's side (or the connection did)."""
        if self._exit is None:
            self._exit = exit_info
        self._gone(why)

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Ends the session: ``quit`` on the slot whenever the bot can still be reached (a kill included: it is how
        the bot learns that the session is over); the client ends its engine. Never waits."""
        if self._closed:
            return
        self._closed = True
        self._server.end_session(self._peer, self._slot, self, kill=not quit or grace <= 0)
        self._gone(f"{self.name} (slot {self._slot.number} of {self._peer.name}) was closed")
        self.note("closed")


class Server:
    """Accepts bots on ``endpoint`` (a ROUTER) and hands out sessions on their slots. ``await start()`` binds;
    ``await close()`` ends every session and the socket.

    ``bots`` are the names that may connect (the run's ``remote:NAME`` engines); ``keys`` turns on CurveZMQ (None:
    plain ZeroMQ); ``wait`` is how long :meth:`lease` waits for an absent bot before its game is lost.
    """

    def __init__(
        self,
        endpoint: str,
        bots: Iterable[str],
        *,
        keys: ServerKeys | None = None,
        wait: float = 60.0,
        limits: Limits | None = None,
    ) -> None:
        self.endpoint = endpoint
        """Where the server binds."""
        self.keys = keys
        """The keys (None: plain ZeroMQ)."""
        self.wait = wait
        """Seconds a game waits for an absent bot."""
        self.limits = limits or Limits()
        """What one connection may do."""
        self.complaints = Complaints("server", log)
        """Rate-limited warnings: refusals and cuts."""
        now = time.monotonic()
        self._bots: dict[str, _Peer | None] = dict.fromkeys(bots)
        self._absent_since = dict.fromkeys(self._bots, now)
        self._peers: dict[bytes, _Peer] = {}
        self._conns: dict[int, _Conn] = {}
        self._waiting = _Waiting()
        self._closures = _Closures(log)
        self._events: collections.deque[tuple[int, int]] = collections.deque()
        """Monitor events read and not handled yet: (event, value)."""
        self._closed_fds: dict[int, int] = {}
        """Descriptors with a disconnection among :attr:`_events`: an earlier acceptance on one is a connection that
        is closed already (its descriptor may be another connection's by now)."""
        self._failure: str | None = None
        """A handshake failure reported by the monitor, told with the disconnection that follows it."""
        self._monitoring = False
        self._cut: dict[bytes, _Conn] = {}
        self._gone: dict[bytes, None] = {}
        self._changed = asyncio.Event()
        self._context: zmq.Context[Any] | None = None
        self._sock: Any = None
        self._monitor: Any = None
        self._gate: _Gate | None = None
        self._tick: asyncio.TimerHandle | None = None
        self._watcher: asyncio.TimerHandle | None = None
        self._watches = 0
        self._draining = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._peers_said_goodbye = False
        self.register: Callable[[str, str, str], str | None] | None = None
        """An open server's registration (a ladder's ``--open``): ``register(name, key, address)`` for the hello of
        a key it does not know; returns None once the name is the key's (it has called :meth:`allow` with it), or
        why the hello is refused. None: only the known keys get in."""
        self.barred: dict[str, str] = {}
        """Bots refused at their hello, with the reason (a ladder's bans); see :meth:`bar`."""
        self.left: set[str] = set()
        """Bots whose last connection said ``leaving`` (until they connect again): they left cleanly, where a bot
        that is simply gone did not (a ladder's dodging rule tells the two apart)."""
        self.farewell: str | None = "the run is over"
        """What the arena's ``goodbye`` says to every bot when it stops serving; None: no goodbye (an interrupted
        run, to be resumed: the bots connect again and wait)."""

    # --- lifetime ------------------------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """True once bound (and not closed)."""
        return self._sock is not None

    async def start(self) -> None:
        """Binds the ROUTER (with the ZAP handler first, when there are keys); raises :class:`ServerError`."""
        if self._sock is not None:
            return
        loop = self._loop = asyncio.get_running_loop()
        # A context of its own: ZAP is one handler per context, and the arena's outgoing ZeroMQ sessions (SPEC §3.3)
        # must not be put through it.
        context: zmq.Context[Any] = zmq.Context()
        sock: Any = context.socket(zmq.ROUTER)
        for option, value in (
            (zmq.LINGER, 0),
            (zmq.ROUTER_MANDATORY, 1),
            (zmq.RCVHWM, QUEUE),
            (zmq.SNDHWM, SEND_QUEUE),
            (zmq.MAXMSGSIZE, MAX_FRAME),
            # The hello deadline closes a connection first, and counts it with the others closed before their hello.
            (zmq.HANDSHAKE_IVL, int(self.limits.hello * 1000) + _HANDSHAKE_GRACE_MS),
            (zmq.HEARTBEAT_IVL, HEARTBEAT_MS),
            (zmq.HEARTBEAT_TIMEOUT, 3 * HEARTBEAT_MS),
            (zmq.HEARTBEAT_TTL, 3 * HEARTBEAT_MS),
        ):
            sock.setsockopt(option, value)
        if self.keys is not None:
            self._gate = _Gate(context, self.keys, self.complaints, self)
            self._gate.start()
            sock.curve_server = True
            sock.curve_secretkey = self.keys.secret
            sock.curve_publickey = self.keys.public
            sock.zap_domain = ZAP_DOMAIN.encode()
        events = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
        events |= zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        self._monitor = sock.get_monitor_socket(events)
        try:
            sock.bind(self.endpoint)
        except zmq.ZMQError as e:
            self._monitor.close(linger=0)
            sock.close(linger=0)
            if self._gate is not None:
                self._gate.stop()
            context.term()
            raise ServerError(f"cannot listen on {self.endpoint}: {e}") from None
        self._context, self._sock = context, sock
        loop.add_reader(self._monitor.getsockopt(zmq.FD), self._on_monitor)
        loop.add_reader(sock.getsockopt(zmq.FD), self.drain)
        self._tick = loop.call_later(_TICK, self._check_deadlines)
        self._watcher = loop.call_later(_WATCH, self._watch)
        secure = "CurveZMQ" if self.keys is not None else "plain ZeroMQ, no keys"
        log.info("server: listening on %s (%s) for %s", self.endpoint, secure, ", ".join(self._bots))

    async def close(self) -> None:
        """Ends every session (their games see a disconnect) and closes the socket. May be called more than once."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        self._peers_said_goodbye = bool(self._peers) and self.farewell is not None
        for peer in list(self._peers.values()):
            if self.farewell is not None:
                with contextlib.suppress(zmq.ZMQError):
                    goodbye = format_control(Goodbye(self.farewell)).encode()
                    sock.send_multipart([peer.rid, CONTROL, goodbye], zmq.NOBLOCK)
            self._drop(peer, f"{peer.name}: the arena stopped serving", "the arena stopped serving")
        if self._tick is not None:
            self._tick.cancel()
        if self._watcher is not None:
            self._watcher.cancel()
        assert self._loop is not None and self._context is not None
        with contextlib.suppress(ValueError, zmq.ZMQError):
            self._loop.remove_reader(sock.getsockopt(zmq.FD))
            self._loop.remove_reader(self._monitor.getsockopt(zmq.FD))
        with contextlib.suppress(zmq.ZMQError):
            sock.disable_monitor()
        self._monitor.close(linger=0)
        # A moment for the goodbyes to leave (the context's end waits for them, at most this long).
        sock.close(linger=_GOODBYE_LINGER_MS if self._peers_said_goodbye else 0)
        if self._gate is not None:
            self._gate.stop()
        self._context.term()
        self._notify()

    # --- what the run asks -----------------------------------------------------------------------------------------

    def allow(self, bots: Iterable[str], keys: ServerKeys | None = None) -> list[str]:
        """Changes who may connect while serving (a ladder's keys directory): ``bots`` are the names let in from now
        on, with ``keys`` their public keys (as the server was built: with keys, or without). A bot no longer listed,
        or whose key changed, is cut at once (told ``bye``, its games lost by disconnect); returns those names."""
        if (keys is None) != (self.keys is None):
            raise ValueError("a server with keys is given keys, and one without none")
        names = list(dict.fromkeys(bots))
        old = {} if self.keys is None else {name: key for key, name in self.keys.bots.items()}
        new = {} if keys is None else {name: key for key, name in keys.bots.items()}
        if keys is not None:
            self.keys = keys
            if self._gate is not None:
                self._gate.admit(dict(keys.bots))
        cut = [name for name in self._bots if name not in names or old.get(name) != new.get(name)]
        now = time.monotonic()
        for name in names:
            if name not in self._bots:
                self._bots[name] = None
                self._absent_since[name] = now
        for name in cut:
            peer = self._bots.get(name)
            if peer is not None:
                self._cut_peer(peer, "its key was removed" if name not in names else "its key was changed")
            if name not in names:
                self._bots.pop(name, None)
                self._absent_since.pop(name, None)
        self._notify()
        return cut

    def bar(self, name: str, reason: str | None) -> None:
        """Refuses bot ``name`` at its hello from now on, saying ``reason``, and cuts its connection (a ban); None
        lets it in again."""
        if reason is None:
            self.barred.pop(name, None)
            return
        self.barred[name] = reason
        peer = self._bots.get(name)
        if peer is not None:
            self._cut_peer(peer, f"banned: {reason}")

    def connected(self, *, leaving: bool = True) -> dict[str, int]:
        """The bots connected now, with their slots (``leaving=False``: only the slots a session can begin on, soon
        if not now: not those of a bot that said ``leaving``, nor those set aside while their engine restarts)."""
        if leaving:
            return {name: len(peer.slots) for name, peer in self._bots.items() if peer is not None}
        now, ready = time.monotonic(), self.limits.ready
        usable = {
            name: sum(not slot.aside(now, ready) for slot in peer.slots)
            for name, peer in self._bots.items()
            if peer is not None and not peer.leaving
        }
        return {name: n for name, n in usable.items() if n}

    def absent(self) -> list[str]:
        """The bots not connected now."""
        return [name for name, peer in self._bots.items() if peer is None]

    def busy(self, name: str) -> int:
        """Slots of bot ``name`` that hold a session now."""
        peer = self._bots.get(name)
        return 0 if peer is None else sum(s.state is _State.BUSY for s in peer.slots)

    def free(self, name: str) -> int:
        """Slots of bot ``name`` that can take a session now (0 when it is not connected)."""
        peer = self._bots.get(name)
        return 0 if peer is None else sum(s.state is _State.FREE for s in peer.slots)

    async def changed(self, timeout: float | None = None) -> None:
        """Returns once a bot connects or leaves or a slot frees up, or after ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    async def wait_for(self, timeout: float) -> list[str]:
        """Waits up to ``timeout`` seconds until every bot is connected; returns the names still absent."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while absent := self.absent():
            left = deadline - loop.time()
            if left <= 0 or self._sock is None:
                return absent
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)
        return []

    async def lease(self, config: EngineConfig, transcript: Transcript | None = None) -> Transport:
        """A new session on a free slot of the bot ``config.remote`` (the engine sessions' connector).

        Waits for a slot as long as the bot is connected (its slots free up as its games end), and up to
        ``limits.restart`` seconds once every slot of it is set aside (its engines restarting); a bot that is absent
        is waited for until it has been absent for :attr:`wait` seconds. Then OSError says so (the game is lost by
        disconnect, and later games of the bot fail at once until it is back or has a slot ready).
        """
        name = config.remote
        while True:
            if name not in self._bots:
                raise OSError(f"remote:{name} is not a bot of this server")
            if self._sock is None:
                raise OSError(f"remote:{name}: the arena does not serve (any more)")
            peer = self._bots[name]
            timeout: float | None = None
            if peer is not None and not peer.leaving:
                slot = next((s for s in peer.slots if s.state is _State.FREE), None)
                if slot is not None:
                    t = SlotTransport(config.name, self, peer, slot, transcript)
                    slot.state, slot.transport = _State.BUSY, t
                    self.send(peer, CONTROL, format_control(Begin(slot.number)).encode())
                    if not t.gone:
                        return t
                    continue
                since = self._unready_since(peer)
                if since is not None:
                    timeout = self.limits.restart - (time.monotonic() - since)
                    if timeout <= 0:
                        raise OSError(f"remote:{name} has had no slot ready for {self.limits.restart:g} s")
            else:
                timeout = self.wait - (time.monotonic() - self._absent_since[name])
                if timeout <= 0:
                    gone = "leaving" if peer is not None else "not connected"
                    raise OSError(f"remote:{name} is {gone} (absent for {self.wait:g} s or more)")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

    def _unready_since(self, peer: _Peer) -> float | None:
        """Since when every slot of ``peer`` is set aside (None while one is not)."""
        now, ready = time.monotonic(), self.limits.ready
        if not all(slot.aside(now, ready) for slot in peer.slots):
            return None
        return max(slot.since for slot in peer.slots) + ready

    def _notify(self) -> None:
        """Wakes everything that waits for a bot or a slot (each one looks again)."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # --- sending ---------------------------------------------------------------------------------------------------

    def send(self, peer: _Peer, channel: bytes, line: bytes) -> None:
        """Sends one message to a connected bot, never blocking; a bot that cannot take it is dropped or cut."""
        if self._sock is None or self._peers.get(peer.rid) is not peer:
            return
        try:
            self._sock.send_multipart([peer.rid, channel, line], _NOBLOCK)
            peer.asked()
        except zmq.Again:
            self._cut_peer(peer, f"it does not read what the arena sends ({SEND_QUEUE} messages waiting)")
        except zmq.ZMQError as e:
            if e.errno != errno.EHOSTUNREACH:
                raise
            self._drop(peer, f"{peer.name} disconnected", "disconnected")
        if not self._draining:
            # Sending may have consumed the descriptor's edge for messages that arrived meanwhile.
            self._draining = True
            assert self._loop is not None
            self._loop.call_soon(self.drain)

    def end_session(self, peer: _Peer, slot: _Slot, transport: SlotTransport, *, kill: bool = False) -> None:
        """The arena ends a session: ``quit`` on its slot (after ``kill K`` when the arena kills it, as it kills a
        local engine: the bot then gives the slot a fresh engine), which then waits for the bot's ``ready``."""
        if slot.transport is not transport:
            return  # the bot ended it first, or its connection did
        slot.state, slot.transport, slot.since = _State.ENDING, None, time.monotonic()
        if kill:
            self.send(peer, CONTROL, format_control(Kill(slot.number)).encode())
        self.send(peer, format_channel(slot.number), b"quit")

    # --- receiving -------------------------------------------------------------------------------------------------

    def drain(self) -> None:
        """Reads what the bots sent, a batch at a time (the rest after the event loop's other work)."""
        self._draining = False
        sock = self._sock
        if sock is None:
            return
        for _ in range(_BATCH):
            if self._sock is None or not sock.getsockopt(_EVENTS) & _POLLIN:
                return
            self._message(sock.recv_multipart(_NOBLOCK, copy=False))
        self._draining = True
        assert self._loop is not None
        self._loop.call_soon(self.drain)

    def _message(self, frames: list[Any]) -> None:
        rid: bytes = frames[0].bytes
        if rid in self._cut or rid in self._gone:
            return  # a connection being shut down, or over
        peer = self._peers.get(rid)
        if peer is None:
            self._greet(rid, frames)
            return
        peer.conn.read(frames)
        if not peer.take():
            limit = f"{self.limits.rate * len(peer.slots):g} lines per second"
            self._cut_peer(peer, f"it sends more than {limit}")
            return
        if len(frames) != 3:
            self._cut_peer(peer, f"a message of {len(frames) - 1} frames (two are allowed: channel and line)")
            return
        try:
            number = parse_channel(frames[1].bytes)
        except ConnectError as e:
            self._cut_peer(peer, str(e))
            return
        line: bytes = frames[2].bytes
        if number is not None and not 1 <= number <= len(peer.slots):
            self._cut_peer(peer, f"a line on slot {number}; it has {len(peer.slots)}")
            return
        slot = None if number is None else peer.slots[number - 1]
        if len(line) > MAX_LINE_BYTES:
            if slot is not None and slot.transport is not None:
                slot.transport.deliver_bad(f"line longer than {MAX_LINE_BYTES} bytes")
            self._cut_peer(peer, f"a line of {len(line)} bytes (at most {MAX_LINE_BYTES})")
            return
        if slot is None:
            self._control(peer, line)
        elif slot.transport is not None:
            slot.transport.deliver(line)
        # else: a line of a session that is over (sent before the bot saw its end): dropped

    def _control(self, peer: _Peer, raw: bytes) -> None:
        try:
            message = parse_control(raw.decode("utf-8"))
        except (UnicodeDecodeError, ConnectError) as e:
            self._cut_peer(peer, f"a bad control line: {e}")
            return
        match message:
            case Ready(number) if number <= len(peer.slots) and peer.slots[number - 1].state is _State.ENDING:
                slot = peer.slots[number - 1]
                if slot.late:
                    log.info("server: %s: slot %d is ready again", peer.describe(), number)
                slot.state, slot.late = _State.FREE, False
                self._notify()
            case Leaving():
                # From now on the bot counts as absent for new games: they wait --wait for it to come back.
                peer.leaving = True
                self._absent_since[peer.name] = time.monotonic()
                self.left.add(peer.name)
                log.info("server: %s is leaving once its games are over", peer.describe())
                self.send(peer, CONTROL, format_control(Goodbye("no more games for this connection")).encode())
            case Ended(number, text) if number <= len(peer.slots) and peer.slots[number - 1].state is not _State.FREE:
                slot = peer.slots[number - 1]
                t = slot.transport
                if t is not None:  # not already ended by the arena
                    slot.state, slot.transport, slot.since = _State.ENDING, None, time.monotonic()
                    how = text or "the engine ended"
                    t.end(f"{t.name}: the engine behind slot {number} of {peer.name} ended ({how})", how)
            case _:
                self._cut_peer(peer, f"an unexpected control line {raw[:80].decode('utf-8', 'replace')!r}")

    def _greet(self, rid: bytes, frames: list[Any]) -> None:
        """The first message of a connection: a hello, or the connection is refused."""
        fd = frames[-1].get(zmq.SRCFD)
        # libzmq reports a connection to the monitor (and the end of the one that had its descriptor before) before
        # its first message can be read; it may have come while this batch was being read.
        conn = self._conns.get(fd)
        while (conn is None or conn.closing) and self._on_monitor(again=False):
            conn = self._conns.get(fd)
        if conn is None or conn.closing:
            # So this message outlived its connection (or came as it was being closed to make room), whose
            # descriptor must not be touched.
            log.debug("dropped a message from a connection that is closed")
            return
        conn.read(frames)
        address = conn.address
        try:
            if len(frames) != 3 or frames[1].bytes != CONTROL:
                raise ConnectError("the first message must be hello on the control channel")
            message = parse_control(frames[2].bytes.decode("utf-8"))
            if not isinstance(message, Hello):
                raise ConnectError(f"the first message must be hello, not {type(message).__name__.lower()}")
        except (UnicodeDecodeError, ConnectError) as e:
            self._refuse(rid, conn, address, str(e))
            return
        why = self._refusal(message, frames[2], address)
        if why is not None:
            self._refuse(rid, conn, address, why)
            return
        old = self._bots[message.name]
        if old is not None:
            self._cut_peer(old, "the bot connected again (a new connection replaces the old one)")
        peer = _Peer(rid, conn, message, address, self.limits)
        conn.peer = peer
        self._waiting.remove(conn)
        self._peers[rid] = peer
        self._bots[peer.name] = peer
        self.left.discard(peer.name)
        self.send(peer, CONTROL, format_control(Welcome(len(peer.slots))).encode())
        log.info("server: %s connected with %d slot%s", peer.describe(), len(peer.slots), "s" * (len(peer.slots) != 1))
        self._notify()

    def _refusal(self, hello: Hello, frame: Any, address: str) -> str | None:
        """Why a hello is refused, or None (an unknown key let in by an open server is registered here)."""
        if hello.version != PROTOCOL_VERSION:
            return f"it speaks UQI {hello.version}; the arena speaks {PROTOCOL_VERSION}"
        if not 1 <= hello.slots <= self.limits.slots:
            return f"{hello.slots} slots asked for; a bot may offer 1 to {self.limits.slots}"
        if self.keys is not None:
            owner = str(frame.get("User-Id"))
            if owner.startswith(UNREGISTERED) and self.register is not None:
                why = self.register(hello.name, owner.removeprefix(UNREGISTERED), address)
                if why is not None:
                    return why
            elif hello.name != owner:
                return f"it says it is {hello.name!r}, but it holds the key of {owner!r}"
        barred = self.barred.get(hello.name)
        if barred is not None:
            return f"{hello.name} is banned: {barred}"
        if hello.name not in self._bots:
            return f"{hello.name!r} does not play here (remote engines: {', '.join(self._bots)})"
        return None

    def _refuse(self, rid: bytes, conn: _Conn, address: str, why: str) -> None:
        self.complaints.warn(f"refused a connection from {address}: {why}")
        with contextlib.suppress(zmq.ZMQError):
            self._sock.send_multipart([rid, CONTROL, format_control(Refused(why)).encode()], zmq.NOBLOCK)
        self._shut(rid, conn)

    def _cut_peer(self, peer: _Peer, why: str) -> None:
        """Cuts a peer that broke the protocol or a limit: ``bye``, its games lost, its connection shut down."""
        if self._peers.get(peer.rid) is not peer:
            return
        self.complaints.warn(f"{peer.describe()} disconnected by the arena: {why}")
        with contextlib.suppress(zmq.ZMQError):
            self._sock.send_multipart([peer.rid, CONTROL, format_control(Bye(why)).encode()], zmq.NOBLOCK)
        self._drop(peer, f"{peer.name} was disconnected by the arena: {why}", f"disconnected by the arena: {why}")
        self._shut(peer.rid, peer.conn)

    def _drop(self, peer: _Peer, why: str, exit_info: str) -> None:
        """Forgets a peer: its sessions end (their games see a disconnect), its bot is absent from now."""
        if self._peers.get(peer.rid) is not peer:
            return
        del self._peers[peer.rid]
        self._bury(peer.rid)
        peer.conn.peer = None
        if self._bots.get(peer.name) is peer:
            self._bots[peer.name] = None
            self._absent_since[peer.name] = time.monotonic()
        for slot in peer.slots:
            t, slot.transport = slot.transport, None
            slot.state = _State.ENDING
            if t is not None:
                t.end(why, exit_info)
        self._notify()

    def _shut(self, rid: bytes, conn: _Conn) -> None:
        """Drops the connection's messages from now on, and shuts it down in a moment (after the bye or refusal)."""
        self._cut[rid] = conn
        self._closing(conn)
        assert self._loop is not None
        self._loop.call_later(_BYE_DELAY, self._shutdown, conn)

    def _closing(self, conn: _Conn) -> None:
        conn.closing = True
        self._waiting.remove(conn)

    def _shutdown(self, conn: _Conn) -> None:
        """Shuts the connection's socket down (libzmq then closes it and the monitor reports it), unless its
        descriptor is no longer its socket: the check and the shutdown go through a duplicate of the descriptor,
        which holds the socket it names, so a descriptor reused meanwhile for another connection is never touched.
        Never reads the monitor (it may be handling it)."""
        self._closing(conn)
        if self._sock is None or self._conns.get(conn.fd) is not conn:
            return  # closed already
        try:
            dup = os.dup(conn.fd)
        except OSError as e:  # out of descriptors: it waits for its hello deadline, or libzmq's
            log.debug("cannot look at descriptor %d: %s", conn.fd, e)
            return
        try:
            with socket.socket(fileno=dup) as s:
                if os.fstat(dup).st_ino == conn.inode:
                    s.shutdown(socket.SHUT_RDWR)
        except OSError as e:
            log.debug("shutting down descriptor %d: %s", conn.fd, e)

    # --- the monitor and the deadlines -----------------------------------------------------------------------------

    def _on_monitor(self, *, again: bool = True) -> bool:
        """Reads the socket monitor's events and handles them in order, for :data:`_MONITOR_SLICE` seconds at most;
        the rest after the event loop's other work (``again``) or at the next call. Never runs within itself: what a
        handler does (a shutdown, a peer dropped) may make events, which are read after it. Returns True when it
        handled an event."""
        if self._monitoring or self._sock is None:
            return False
        self._monitoring = True
        handled = 0
        try:
            self._read_monitor()
            until = time.monotonic() + _MONITOR_SLICE
            while self._events and self._sock is not None:
                event, value = self._events.popleft()
                self._on_event(event, value)
                handled += 1
                if handled % 8 == 0 and time.monotonic() > until:
                    break
        finally:
            self._monitoring = False
        if self._events and again and self._sock is not None:
            assert self._loop is not None
            self._loop.call_soon(self._on_monitor)
        return handled > 0

    def _read_monitor(self) -> None:
        """Moves the monitor's waiting events to :attr:`_events` (up to :data:`_MONITOR_QUEUE` not handled yet)."""
        mon = self._monitor
        while len(self._events) < _MONITOR_QUEUE and mon.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            frames = mon.recv_multipart(zmq.NOBLOCK)
            if len(frames) != 2 or len(frames[0]) != _EVENT.size:
                log.debug("a monitor message of an unknown form: %r", frames[:2])
                continue
            # Unpacked here rather than by zmq.utils.monitor, whose enums cost more than the rest (a flood makes
            # thousands of events a second).
            event, value = _EVENT.unpack(frames[0])
            self._events.append((event, value))
            if event == zmq.EVENT_DISCONNECTED:
                self._closed_fds[value] = self._closed_fds.get(value, 0) + 1

    def _on_event(self, event: int, value: int) -> None:
        if event == zmq.EVENT_ACCEPTED:
            if self._closed_fds.get(value):
                return  # closed already (its disconnection is read): its descriptor may be another's by now
            old = self._conns.pop(value, None)
            if old is not None:  # never seen closed: the descriptor is another socket's now
                self._closed(old)
            conn = self._conns[value] = _Conn(value)
            self._admit(conn)
        elif event == zmq.EVENT_DISCONNECTED:
            left = self._closed_fds.pop(value, 1) - 1
            if left:
                self._closed_fds[value] = left
            failure, self._failure = self._failure, None
            gone = self._conns.pop(value, None)
            if gone is None:
                if failure is not None:
                    # Accepted, refused and closed before the arena handled its acceptance (the arena was busy): the
                    # refusal is told all the same, without the address, which no one can read any more.
                    self.complaints.warn(f"refused a connection (closed before its address was read): {failure}")
            else:
                if failure is not None and not gone.closing:
                    self.complaints.warn(f"refused a connection from {gone.address}: {failure}")
                self._closed(gone)
        elif event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
            why = _HANDSHAKE_FAILURES.get(value, _protocol_error(value))
            self._failure = f"the CurveZMQ/ZMTP handshake failed: {why}"
        elif event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
            # Typically the client saw the mismatch first and hung up: no keys, or a wrong server key. Told only for
            # a connection that the arena did not close itself (to make room, or at the hello deadline).
            self._failure = f"the client gave up the handshake ({os.strerror(value)}): no keys, or not the arena's key?"
        # EVENT_HANDSHAKE_FAILED_AUTH: the ZAP handler has logged it, with the key

    def _closed(self, conn: _Conn) -> None:
        """A connection is closed: its peer, if any, is gone; what was kept about it goes."""
        self._waiting.remove(conn)
        peer = conn.peer
        if peer is not None:
            log.info("server: %s disconnected", peer.describe())
            self._drop(peer, f"{peer.name} disconnected", "disconnected")
        self._forget(conn)

    def _forget(self, conn: _Conn) -> None:
        """What was kept about a connection that is closed: the routing ids whose messages were dropped."""
        for rid in [r for r, c in self._cut.items() if c is conn]:
            del self._cut[rid]
            self._bury(rid)

    def _bury(self, rid: bytes) -> None:
        """A routing id whose connection is over: what it still has queued is read and dropped (a ROUTER delivers a
        closed connection's last messages after the monitor reported it closed). Routing ids are never reused."""
        self._gone[rid] = None
        if len(self._gone) > _GONE:
            del self._gone[next(iter(self._gone))]

    def _watch(self) -> None:
        """libzmq delivers only whole messages, and holds the frames of one that never ends (each frame under
        MAXMSGSIZE) without limit, in its own thread: what the kernel counts as received tells such a connection.
        Looked at every :data:`_WATCH` seconds without keys, every tenth time with keys: then only a connection
        authenticated by its key can send a message at all (the CurveZMQ handshake's commands are bounded), and
        three system calls per connection add up. A connection is cut within that time of passing :data:`UNSEEN`."""
        if self._sock is None:
            return
        assert self._loop is not None
        self._watcher = self._loop.call_later(_WATCH, self._watch)
        self._watches += 1
        if self.keys is not None and self._watches % 10:
            return
        for conn in list(self._conns.values()):
            if conn.closing:
                continue
            unseen = conn.unseen()
            if unseen > UNSEEN:
                why = f"{unseen / (1 << 20):.1f} MiB sent that never made a whole message (at most {UNSEEN >> 20} MiB)"
                if conn.peer is not None:
                    self._cut_peer(conn.peer, why)
                else:
                    self._closures.note(conn, why)
                    self._shutdown(conn)

    def _admit(self, conn: _Conn) -> None:
        """A new connection waits for its hello. Past the cap of its address, or the cap in all, room is made: the
        oldest connection (of that address, or of all) that has sent nothing is shut down, or the oldest when
        every one has sent something. The new one is never refused for the others: whoever keeps the queue full
        must not keep everyone out (a real client's handshake begins at once and takes milliseconds)."""
        self._waiting.add(conn)
        limits = self.limits
        if self._waiting.count(conn.host) > limits.pending_per_address:
            self._shed(conn.host, f"to make room ({limits.pending_per_address} may wait per address)")
        while len(self._waiting) > limits.pending:
            self._shed(None, f"to make room ({limits.pending} may wait in all)")

    def _shed(self, host: str | None, why: str) -> None:
        """Shuts down one waiting connection (from ``host``, or from anywhere): the oldest of the first
        :data:`_SHED_LOOK` that has sent nothing, else the oldest. One found closed meanwhile leaves the queue."""
        victim: _Conn | None = None
        for conn in self._waiting.oldest(_SHED_LOOK, host):
            silent = conn.silent()
            if silent is None:  # its descriptor is another socket's: closed, its disconnection still to come
                self._closing(conn)
                return
            if victim is None or silent:
                victim = conn
            if silent:
                break
        if victim is not None:
            self._closures.note(victim, why)
            self._shutdown(victim)

    def _check_deadlines(self) -> None:
        if self._sock is None:
            return
        assert self._loop is not None
        self._tick = self._loop.call_later(_TICK, self._check_deadlines)
        self._on_monitor()
        now = time.monotonic()
        for conn in self._waiting:  # oldest first
            if now - conn.accepted <= self.limits.hello:
                break
            self._closures.note(conn, f"no hello within {self.limits.hello:g} s")
            self._shutdown(conn)
        self._closures.flush()
        for peer in self._peers.values():
            for slot in peer.slots:
                if not slot.late and slot.aside(now, self.limits.ready):
                    # SPEC §3.4: no deadline runs while a bot's engine starts. Its slot waits; its games take its
                    # other slots, or wait for it as for an absent bot (--wait) when it has none.
                    slot.late = True
                    log.info(
                        "server: %s: slot %d not ready %g s after its session's end (its engine restarting?): no"
                        " game begins on it until it is",
                        peer.describe(),
                        slot.number,
                        self.limits.ready,
                    )
                    self._notify()


def _tcp_counts(fd: int) -> tuple[int, int] | None:
    """What a TCP connection's descriptor has received in all (``tcpi_bytes_received``, Linux 4.1 on) and what of it
    still waits in the socket's receive queue (which the kernel bounds); None when not TCP (ipc://)."""
    try:
        with socket.socket(fileno=fd) as s:
            try:
                info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
                waiting = struct.unpack("i", fcntl.ioctl(s.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
            finally:
                s.detach()
    except (OSError, AttributeError):  # not TCP (ipc://), or no TCP_INFO on this system
        return None
    if len(info) < _TCPI_BYTES_RECEIVED + 8:
        return None
    return int(struct.unpack_from("=Q", info, _TCPI_BYTES_RECEIVED)[0]), int(waiting)


def _peer_address(fd: int) -> str:
    """``HOST:PORT`` of the peer of a connection's descriptor, for the log (``?`` when it cannot be told)."""
    try:
        with socket.socket(fileno=fd) as s:
            try:
                name = s.getpeername()
            finally:
                s.detach()
    except OSError:
        return "?"
    if isinstance(name, tuple):
        return f"{name[0]}:{name[1]}"
    return str(name) or "a local socket"


def _protocol_error(code: int) -> str:
    for attr in dir(zmq):
        if attr.startswith("PROTOCOL_ERROR_") and getattr(zmq, attr) == code:
            return attr.removeprefix("PROTOCOL_ERROR_").lower().replace("_", " ")
    return f"code {code}"
