"""Connect a bot to an arena that serves (SPEC §3.4): the client behind ``--connect`` in the SDK and the bridge.

    python -m quarto_arena.protocol.bridge --connect tcp://arena.example.org:5555 --name alice \\
        --key keys/alice.key_secret --server-key keys/arena.key --slots 2 -- ./my_bot

The client connects a DEALER socket to the arena, so the bot's machine needs no open port (a laptop behind NAT will
do); with keys the connection is authenticated and encrypted by CurveZMQ, the arena checked against its public key.
It says ``hello`` with the bot's name and its slots, and for each ``begin K`` runs a session on slot K with a clean
engine (a fresh process behind the bridge, a fresh copy of the bot in the SDK), which ends with the arena's ``quit``
(or the engine's own end, reported as ``ended K``); ``ready K`` follows once that engine is gone. When the connection
drops (the arena stopped, the network failed, three heartbeats went unanswered) every session ends and the client
connects again on a fresh socket and waits for the next game; nothing of an old session ever reaches a new one.

The client gives up only when the arena has said no: ``refused`` (a name that is not the key's, a bot that does not
play there), a key the arena does not know, or handshakes that keep failing (a wrong ``--server-key``). It never
sends a line over the UQI limit: an engine that writes one ends its session instead.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import zmq
import zmq.auth
from zmq.utils.monitor import parse_monitor_message

from .connect import (
    Begin,
    Bye,
    ConnectError,
    Control,
    Ended,
    Hello,
    Ready,
    Refused,
    Welcome,
    format_channel,
    format_control,
    parse_channel,
    parse_control,
)
from .errors import ExitStatus, QuartoError
from .uqi import MAX_LINE_BYTES

__all__ = [
    "ArenaRefused",
    "ClientError",
    "ConnectOptions",
    "Session",
    "SessionFactory",
    "connect_options",
    "serve_connected",
]

log = logging.getLogger(__name__)

HEARTBEAT_MS: Final = 1000
"""Interval of the ZMTP heartbeats; an arena silent for three intervals is gone."""
HANDSHAKE_TRIES: Final = 3
"""Handshakes that fail in a row (without the arena saying why) before the client gives up."""
_PENDING_LINES: Final = 1000  # lines engines may have waiting to be sent; then their writers wait
_RECONNECT_PAUSE: Final = 0.2  # s before a new connection after one dropped
_END_WAIT: Final = 5.0  # s a dropped connection's sessions get to end before the client connects again
_READY: Final = object()  # an outbox item: the slot's engine is gone, say ready


class ClientError(QuartoError, ValueError):
    """A ``--connect`` option that cannot be used (exit status 2). The message names the problem."""

    status = ExitStatus.USAGE
    reason = "connect_option"


class ArenaRefused(QuartoError):
    """The arena turned the bot down for good (exit status 3): retrying cannot help. The message says why."""

    status = ExitStatus.ENGINE
    reason = "refused"


class Session(Protocol):
    """One session on one slot: what :func:`serve_connected` drives."""

    def handle(self, line: str) -> bool:
        """Handles one line from the arena; returns False when the session ends (``quit``)."""
        ...

    def close(self) -> object:
        """Ends the session (stops a search, or the engine process behind a bridge); may block a little."""
        ...


#: ``make_session(write)``: a new session whose replies go to ``write(line)`` (thread-safe); ``write(None)`` ends the
#: session from the engine's side (an engine that exited). A session may have an ``exit_info`` attribute that says
#: how its engine ended (``exit code 1``), sent to the arena with ``ended``.
SessionFactory = Callable[[Callable[[str | None], None]], Session]


@dataclass(frozen=True, slots=True)
class ConnectOptions:
    """Where and as whom a bot connects."""

    endpoint: str
    """The arena's endpoint, ``tcp://HOST:PORT`` (or ``ipc://PATH``)."""
    name: str
    """The bot's name at the arena (with keys, the name of its key)."""
    slots: int = 1
    """Sessions it runs at once, one engine each."""
    public: bytes | None = None
    """The bot's public key (Z85), with keys."""
    secret: bytes | None = None
    """The bot's secret key (Z85), with keys."""
    server: bytes | None = None
    """The arena's public key (Z85), with keys."""


def _key(path: str, what: str) -> tuple[bytes, bytes | None]:
    try:
        return zmq.auth.load_certificate(path)
    except (OSError, ValueError) as e:
        raise ClientError(f"{what} {path}: not a readable key file ({e})") from None


def connect_options(args: argparse.Namespace) -> ConnectOptions | None:
    """The options of :func:`~quarto_arena.protocol.connect.add_arguments`, checked (the key files read); None
    without ``--connect``. Raises :class:`ClientError`."""
    if args.connect is None:
        if args.name or args.key or args.server_key or args.slots != 1:
            raise ClientError("--name, --key, --server-key and --slots go with --connect")
        return None
    endpoint = args.connect.strip()
    if not endpoint.startswith(("tcp://", "ipc://")) or len(endpoint) <= len("tcp://"):
        raise ClientError(f"--connect {args.connect!r}: expected tcp://HOST:PORT or ipc://PATH")
    if not args.name or any(c.isspace() for c in args.name):
        raise ClientError("--connect needs --name NAME (a name without spaces: the bot's name at the arena)")
    if not 1 <= args.slots <= 1000:
        raise ClientError(f"--slots {args.slots}: give 1 or more")
    if (args.key is None) != (args.server_key is None):
        raise ClientError("give both --key (the bot's NAME.key_secret) and --server-key (arena.key), or neither")
    if args.key is None:
        return ConnectOptions(endpoint, args.name, args.slots)
    public, secret = _key(args.key, "--key")
    if secret is None:
        raise ClientError(f"--key {args.key}: holds no secret key (give NAME.key_secret, not NAME.key)")
    server, _ = _key(args.server_key, "--server-key")
    return ConnectOptions(endpoint, args.name, args.slots, public, secret, server)


def serve_connected(make_session: SessionFactory, options: ConnectOptions) -> None:
    """Connects to the arena and serves sessions on the bot's slots, connection after connection, until interrupted.

    Raises :class:`ArenaRefused` when the arena turns the bot down for good.
    """
    client = _Client(make_session, options)
    try:
        client.run()
    finally:
        client.close()


class _Client:
    """The loop of :func:`serve_connected`: one thread owns the socket; engines' threads queue their lines."""

    def __init__(self, make_session: SessionFactory, options: ConnectOptions) -> None:
        self.make_session = make_session
        self.options = options
        self.context: zmq.Context[Any] = zmq.Context()
        self.thread = threading.get_ident()
        # Items (connection, slot, generation, line, held): engines' lines, None (the engine ended), or _READY.
        # Engines' threads wait for space (``held``: they took a place), so a flooding engine is slowed down, not
        # buffered; this thread never waits, since it drains the queue.
        self.outbox: queue.SimpleQueue[tuple[int, int, int, object, bool]] = queue.SimpleQueue()
        self.space = threading.BoundedSemaphore(_PENDING_LINES)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.sessions: dict[int, tuple[int, Session]] = {}
        self.generations = dict.fromkeys(range(1, options.slots + 1), 0)
        self.connection = 0
        self.closed = False
        self.welcomed = False
        self.failures = 0
        self.poller = zmq.Poller()
        self.poller.register(self.wake_r, zmq.POLLIN)
        self.sock: Any = None
        self.monitor: Any = None
        self._connect()

    # --- the connection ------------------------------------------------------------------------------------------

    def _connect(self) -> None:
        """A fresh socket, its hello queued first: nothing of an earlier connection can follow it."""
        o = self.options
        sock: Any = self.context.socket(zmq.DEALER)
        for option, value in (
            (zmq.LINGER, 0),
            (zmq.RECONNECT_IVL, 100),
            (zmq.RECONNECT_IVL_MAX, 2000),
            (zmq.HEARTBEAT_IVL, HEARTBEAT_MS),
            (zmq.HEARTBEAT_TIMEOUT, 3 * HEARTBEAT_MS),
            (zmq.HEARTBEAT_TTL, 3 * HEARTBEAT_MS),
        ):
            sock.setsockopt(option, value)
        if o.secret is not None:
            sock.curve_publickey = o.public
            sock.curve_secretkey = o.secret
            sock.curve_serverkey = o.server
        events = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
        events |= zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        self.monitor = sock.get_monitor_socket(events)
        try:
            sock.connect(o.endpoint)
        except zmq.ZMQError as e:
            self.monitor.close(linger=0)
            sock.close(linger=0)
            raise ClientError(f"--connect {o.endpoint}: {e}") from None
        self.sock = sock
        self.connection += 1
        self.welcomed = False
        self.poller.register(sock, zmq.POLLIN)
        self.poller.register(self.monitor, zmq.POLLIN)
        self._send(None, format_control(Hello(o.name, o.slots)))
        log.info("connecting to %s as %s with %d slot%s", o.endpoint, o.name, o.slots, "s" * (o.slots != 1))

    def _disconnect(self) -> None:
        for s in (self.sock, self.monitor):
            with contextlib.suppress(KeyError):
                self.poller.unregister(s)
        with contextlib.suppress(zmq.ZMQError):
            self.sock.disable_monitor()
        self.monitor.close(linger=0)
        self.sock.close(linger=0)

    def _reconnect(self, why: str) -> None:
        """The connection is gone: every session ends, then a fresh connection says hello again."""
        if self.sessions:
            log.warning("%s; ending %d session(s) and connecting again", why, len(self.sessions))
        elif self.welcomed:
            log.info("%s; connecting again", why)
        self._end_all()
        self._disconnect()
        time.sleep(_RECONNECT_PAUSE)
        self._connect()

    def close(self) -> None:
        """Ends every session and the connection."""
        self._end_all()
        self._disconnect()
        self.context.term()
        self.closed = True
        os.close(self.wake_r)
        os.close(self.wake_w)

    # --- the loop --------------------------------------------------------------------------------------------------

    def run(self) -> None:
        while True:
            events = dict(self.poller.poll())
            if self.sock in events:
                self._read()
            if self.monitor in events:
                self._watch()
            self._flush()

    def _read(self) -> None:
        while True:
            try:
                frames = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) != 2:
                log.warning("ignored a message of %d frames from the arena", len(frames))
                continue
            try:
                slot = parse_channel(frames[0])
                line = frames[1].decode("utf-8")
                if slot is None:
                    self._control(parse_control(line))
                elif slot in self.sessions and not self.sessions[slot][1].handle(line):
                    self._end(slot, None)  # quit
            except (ConnectError, UnicodeDecodeError) as e:
                log.warning("ignored a message from the arena: %s", e)

    def _control(self, message: Control) -> None:
        match message:
            case Welcome(slots):
                self.welcomed = True
                self.failures = 0
                log.info("connected to %s: %d slot%s ready", self.options.endpoint, slots, "s" * (slots != 1))
            case Refused(text):
                raise ArenaRefused(f"the arena at {self.options.endpoint} refused {self.options.name}: {text}")
            case Begin(slot) if slot in self.generations:
                self._begin(slot)
            case Bye(text):
                log.warning("the arena cuts the connection: %s", text)
            case _:
                log.warning("ignored the control line %r from the arena", format_control(message))

    def _watch(self) -> None:
        while self.monitor.poll(0):
            message = parse_monitor_message(self.monitor.recv_multipart())
            event, value = message["event"], int(message["value"])
            if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                raise ArenaRefused(
                    f"the arena at {self.options.endpoint} does not accept our key (status {value}): its keys"
                    f" directory needs our public key as {self.options.name}.key"
                )
            if event in (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
                # Which side notices a mismatch first varies, and the one that does not just sees the other hang
                # up: a mismatch is sure at once, anything else after a few tries in a row.
                self.failures += 1
                mismatch = value == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
                if mismatch or self.failures >= HANDSHAKE_TRIES:
                    raise ArenaRefused(self._handshake_failed())
            elif event == zmq.EVENT_DISCONNECTED:
                self._reconnect(f"lost the connection to {self.options.endpoint}")
                return

    def _handshake_failed(self) -> str:
        where = f"the handshake with the arena at {self.options.endpoint} failed"
        if self.options.secret is None:
            return f"{where}: it serves with keys (give --key and --server-key), or it is no arena"
        return f"{where}: is --server-key the arena's public key (its arena.key), and does it serve with --keys?"

    # --- sessions --------------------------------------------------------------------------------------------------

    def _writer(self, slot: int, generation: int) -> Callable[[str | None], None]:
        connection = self.connection

        def write(line: str | None) -> None:
            held = threading.get_ident() != self.thread
            if held:
                self.space.acquire()
            self.outbox.put((connection, slot, generation, line, held))
            self._wake()

        return write

    def _wake(self) -> None:
        """Wakes the loop (from any thread); nothing once the client is closed, as its pipe may be another's now."""
        if not self.closed:
            with contextlib.suppress(BlockingIOError, OSError):  # a full pipe already holds a wake-up
                os.write(self.wake_w, b"\0")

    def _begin(self, slot: int) -> None:
        if slot in self.sessions:
            self._end(slot, "the arena began a new session")
        generation = self.generations[slot] = self.generations[slot] + 1
        try:
            session = self.make_session(self._writer(slot, generation))
        except OSError as e:
            log.error("slot %d: cannot start the engine: %s", slot, e.strerror or e)
            self._send(None, format_control(Ended(slot, f"cannot start the engine: {e.strerror or e}")))
            self._send(None, format_control(Ready(slot)))
            return
        self.sessions[slot] = (generation, session)
        log.info("slot %d: session begins", slot)

    def _end(self, slot: int, why: str | None) -> None:
        """Ends slot ``slot``'s session (``why``: it ended on our side, and the arena is told so); ``ready`` follows
        once its engine is gone, from a thread of its own so that the other slots' games go on meanwhile."""
        entry = self.sessions.pop(slot, None)
        if entry is None:
            return
        self.generations[slot] += 1  # whatever the old engine still writes is dropped
        session = entry[1]
        if why is not None:
            self._send(None, format_control(Ended(slot, why)))
        log.info("slot %d: session ends (%s)", slot, why or "quit")
        connection = self.connection

        def finish() -> None:
            try:
                session.close()
            finally:
                self.outbox.put((connection, slot, 0, _READY, False))
                self._wake()

        threading.Thread(target=finish, name=f"end-slot-{slot}", daemon=True).start()

    def _end_all(self) -> None:
        """Ends every session at once (the connection is gone, or we stop) and waits a little for their engines."""
        ending = []
        for slot, (_, session) in sorted(self.sessions.items()):
            self.generations[slot] += 1
            thread = threading.Thread(target=session.close, name=f"end-slot-{slot}", daemon=True)
            thread.start()
            ending.append(thread)
        self.sessions.clear()
        deadline = time.monotonic() + _END_WAIT
        for thread in ending:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _flush(self) -> None:
        """Sends what the engines queued, a batch at a time, never blocking."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_r, 4096):
                pass
        for _ in range(_PENDING_LINES):
            try:
                connection, slot, generation, item, held = self.outbox.get_nowait()
            except queue.Empty:
                return
            if held:
                self.space.release()
            if connection != self.connection:
                continue  # written for a connection that is gone
            if item is _READY:
                if slot not in self.sessions:
                    self._send(None, format_control(Ready(slot)))
                continue
            entry = self.sessions.get(slot)
            if entry is None or entry[0] != generation:
                continue  # written by a session that is over
            if item is None:
                self._end(slot, getattr(entry[1], "exit_info", None) or "the engine ended the session")
                continue
            data = str(item).encode("utf-8")
            if len(data) > MAX_LINE_BYTES:
                self._end(slot, f"the engine wrote a line longer than {MAX_LINE_BYTES} bytes")
                continue
            self._send(slot, data)
        self._wake()  # more is queued: come back after a look at the socket

    def _send(self, slot: int | None, line: str | bytes) -> None:
        data = line.encode("utf-8") if isinstance(line, str) else line
        # A line the connection cannot take now (the arena is gone, or reads nothing) is dropped: the connection's
        # end, which ends its sessions, follows.
        with contextlib.suppress(zmq.Again):
            self.sock.send_multipart([format_channel(slot), data], zmq.NOBLOCK)
