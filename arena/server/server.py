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
  is over :data:`MAX_FRAME`), a rate of lines, a number of slots, a ``hello`` within a deadline of connecting and a
  ``ready`` within one of each session's end. A peer that breaks one is cut: told ``bye``, its games lost, its
  connection shut down.
- Memory. ZeroMQ queues at most :data:`QUEUE` messages per connection, each frame at most :data:`MAX_FRAME` bytes;
  lines that belong to no session are dropped, and what is kept about a cut connection goes with its connection.
  ZeroMQ holds the frames of a message that never ends without any limit (a peer writing ZMTP by hand can send
  one), and delivers nothing of it: a connection that has sent more than :data:`UNSEEN` bytes beyond the whole
  messages read from it (as the kernel counts them, on TCP) is cut too, looked at every 10 ms, every 100 ms for a
  bot authenticated by its key (libzmq reads in a thread of its own, so the cut comes within what a peer can send
  in that time, not at the byte).
- Admission. Connections that have not said ``hello`` are capped per address and in all (:class:`Limits`); one
  more is shut down as soon as the monitor reports it. libzmq accepts a connection (and takes its descriptor)
  before the arena hears of it, so that is as early as a ROUTER allows.

A ROUTER cannot close one peer's connection, so the server shuts that connection's socket down itself: the descriptor
comes with every message (``ZMQ_SRCFD``) and the socket monitor reports when it closes, so a descriptor since reused
for another connection is never touched. The ZeroMQ sockets are plain (not ``zmq.asyncio``), read by the event loop
through their descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import errno
import fcntl
import logging
import os
import socket
import struct
import termios
import time
from collections.abc import Callable, Iterable
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
from zmq.utils.monitor import parse_monitor_message

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
    """Lines per second per slot, sustained (control lines included)."""
    burst: int = 2000
    """Lines per slot above the rate that may come at once."""
    hello: float = 10.0
    """Seconds from connecting to ``hello``."""
    pending: int = 256
    """Connections that have not said ``hello`` yet, in all; one more is shut down at once."""
    pending_per_address: int = 32
    """Connections from one address that have not said ``hello`` yet; one more is shut down at once."""
    ready: float = 10.0
    """Seconds from the end of a session to its slot's ``ready``."""


class _State(enum.Enum):
    FREE = "free"  #: ready for a session
    BUSY = "busy"  #: a session is on
    ENDING = "ending"  #: the session ended; waiting for the client's ready


class _Slot:
    __slots__ = ("number", "since", "state", "transport")

    def __init__(self, number: int) -> None:
        self.number = number
        self.state = _State.FREE
        self.since = 0.0
        self.transport: SlotTransport | None = None


class _Conn:
    """One accepted connection, known by its descriptor until the monitor reports it closed."""

    __slots__ = ("accepted", "closing", "fd", "host", "inode", "messages", "peer", "received")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.inode = _inode(fd)
        """The socket's inode: what tells this connection from a later one on the same descriptor number."""
        self.accepted = time.monotonic()
        self.host = ""
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
        got = _bytes_received(self.fd) if self.same() else None
        if got is None:
            return 0
        framing = _WIRE * (self.messages + time.monotonic() - self.accepted)
        return max(0, int(got - self.received - framing))

    def same(self) -> bool:
        """True while the descriptor is still this connection's socket."""
        return self.inode is not None and _inode(self.fd) == self.inode


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
            (zmq.HANDSHAKE_IVL, int(self.limits.hello * 1000)),
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
        """The bots connected now, with their slots (``leaving=False``: not those that said ``leaving``, on which
        no session begins)."""
        return {
            name: len(peer.slots)
            for name, peer in self._bots.items()
            if peer is not None and (leaving or not peer.leaving)
        }

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

        Waits for a slot as long as the bot is connected (its slots free up as its games end); a bot that is absent
        is waited for until it has been absent for :attr:`wait` seconds, then OSError says so (the game is lost by
        disconnect, and later games of the bot fail at once until it is back).
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
            else:
                timeout = self.wait - (time.monotonic() - self._absent_since[name])
                if timeout <= 0:
                    gone = "leaving" if peer is not None else "not connected"
                    raise OSError(f"remote:{name} is {gone} (absent for {self.wait:g} s or more)")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

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
            self._sock.send_multipart([peer.rid, channel, line], zmq.NOBLOCK)
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
        self._on_monitor()  # a connection's ACCEPTED must be known before its first message
        for _ in range(_BATCH):
            if self._sock is None or not sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                return
            self._message(sock.recv_multipart(zmq.NOBLOCK, copy=False))
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
                peer.slots[number - 1].state = _State.FREE
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
        self._on_monitor()
        conn = self._conns.get(fd)
        if conn is None:
            # So this message outlived its connection, whose descriptor must not be touched.
            log.debug("dropped a message from a connection that is closed")
            return
        conn.read(frames)
        address = _peer_address(fd)
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
        conn.closing = True
        assert self._loop is not None
        self._loop.call_later(_BYE_DELAY, self._shutdown, conn)

    def _shutdown(self, conn: _Conn) -> None:
        if self._sock is None:
            return
        conn.closing = True
        self._on_monitor()  # a connection that closed meanwhile must be known as closed before its descriptor is used
        if self._conns.get(conn.fd) is not conn or not conn.same():
            self._forget(conn)  # closed already: the descriptor may now be another connection's
            return
        try:
            with socket.socket(fileno=conn.fd) as s:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                finally:
                    s.detach()  # the descriptor is libzmq's: it closes it when it sees the connection end
        except OSError as e:
            log.debug("shutting down descriptor %d: %s", conn.fd, e)

    # --- the monitor and the deadlines -----------------------------------------------------------------------------

    def _on_monitor(self) -> None:
        mon = self._monitor
        while self._sock is not None and mon.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            message = parse_monitor_message(mon.recv_multipart(zmq.NOBLOCK))
            event, value = message["event"], int(message["value"])
            if event == zmq.EVENT_ACCEPTED:
                accepted = self._conns[value] = _Conn(value)
                self._admit(accepted)
            elif event == zmq.EVENT_DISCONNECTED:
                conn = self._conns.pop(value, None)
                if conn is not None:
                    peer = conn.peer
                    if peer is not None:
                        log.info("server: %s disconnected", peer.describe())
                        self._drop(peer, f"{peer.name} disconnected", "disconnected")
                    self._forget(conn)
            elif event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
                why = _HANDSHAKE_FAILURES.get(value, _protocol_error(value))
                self.complaints.warn(f"refused a connection: the CurveZMQ/ZMTP handshake failed: {why}")
            elif event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                # Typically the client saw the mismatch first and hung up: no keys, or a wrong server key.
                why = f"the client gave up the handshake ({os.strerror(value)}): no keys, or not the arena's key?"
                self.complaints.warn(f"refused a connection: {why}")
            # EVENT_HANDSHAKE_FAILED_AUTH: the ZAP handler has logged it, with the key

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
        Looked at every :data:`_WATCH` seconds (every tenth time for a bot authenticated by its key), so a connection
        is cut within that time of passing :data:`UNSEEN`."""
        if self._sock is None:
            return
        assert self._loop is not None
        self._watcher = self._loop.call_later(_WATCH, self._watch)
        self._watches += 1
        # Authenticated bots (with keys) are looked at every tenth time: three system calls per connection add up.
        everyone = self.keys is None or self._watches % 10 == 0
        for conn in list(self._conns.values()):
            if conn.closing or not (everyone or conn.peer is None):
                continue
            unseen = conn.unseen()
            if unseen > UNSEEN:
                why = f"{unseen / (1 << 20):.1f} MiB sent that never made a whole message (at most {UNSEEN >> 20} MiB)"
                if conn.peer is not None:
                    self._cut_peer(conn.peer, why)
                else:
                    self.complaints.warn(f"closed a connection from {_peer_address(conn.fd)}: {why}")
                    self._shutdown(conn)

    def _admit(self, conn: _Conn) -> None:
        """Connections that have not said hello (nor shown a key, without keys) are capped per address and in all:
        past a cap, a new one is shut down at once, before it can hold its descriptor until the hello deadline."""
        pending = [c for c in self._conns.values() if c.peer is None and not c.closing]
        address = _peer_address(conn.fd)
        host = address.rpartition(":")[0] or address
        if len(pending) > self.limits.pending:
            why = f"{len(pending) - 1} connections already wait for their hello (at most {self.limits.pending})"
        elif sum(1 for c in pending if c.host == host) >= self.limits.pending_per_address:
            why = f"{self.limits.pending_per_address} connections from {host} already wait for their hello"
        else:
            conn.host = host
            return
        conn.host = host
        self.complaints.warn(f"refused a connection from {address}: {why}")
        self._shutdown(conn)

    def _check_deadlines(self) -> None:
        if self._sock is None:
            return
        assert self._loop is not None
        self._tick = self._loop.call_later(_TICK, self._check_deadlines)
        self._on_monitor()
        now = time.monotonic()
        for conn in list(self._conns.values()):
            if conn.closing:
                continue
            if conn.peer is None and now - conn.accepted > self.limits.hello:
                address = _peer_address(conn.fd)
                self.complaints.warn(f"closed a connection from {address}: no hello within {self.limits.hello:g} s")
                self._shutdown(conn)
        for peer in list(self._peers.values()):
            for slot in peer.slots:
                if slot.state is _State.ENDING and now - slot.since > self.limits.ready:
                    self._cut_peer(peer, f"slot {slot.number} was not ready within {self.limits.ready:g} s of its end")
                    break


def _bytes_received(fd: int) -> int | None:
    """What libzmq has read from a TCP connection's descriptor: what the kernel received (``tcpi_bytes_received``,
    Linux 4.1 on) less what still waits in the socket's receive queue (which the kernel bounds)."""
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
    return int(struct.unpack_from("=Q", info, _TCPI_BYTES_RECEIVED)[0]) - int(waiting)


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
