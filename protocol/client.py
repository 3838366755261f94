"""Connect a bot to an arena that serves (SPEC §3.4): the client behind ``--connect`` in the SDK and the bridge.

    python -m quarto_arena.protocol.bridge --connect tcp://arena.example.org:5555 --name alice \\
        --key keys/alice.key_secret --server-key keys/arena.key --slots 2 -- ./my_bot

The client connects a DEALER socket to the arena, so the bot's machine needs no open port (a laptop behind NAT will
do); with keys the connection is authenticated and encrypted by CurveZMQ, the arena checked against its public key.
Each slot keeps one warm engine (:mod:`~quarto_arena.protocol.slots`: one process behind the bridge, one copy of
the bot in the SDK), ready before the client says ``hello``. For each ``begin K`` a session runs on slot K's engine
and ends with the arena's ``quit`` (or the engine's own end, reported as ``ended K``); ``ready K`` follows once the
engine is clean again (or a fresh one is, after ``kill K``). When the connection drops (the arena stopped, the
network failed, three heartbeats went unanswered) every session ends and the client connects again on a fresh
socket, one log line per attempt with its pause; nothing of an old session ever reaches a new one.

The client stops when the arena says ``goodbye`` (the run is over; ``stay`` keeps it connecting for the next run),
when :meth:`leave` is called (it says ``leaving``, finishes the games in flight and takes no new ones), or for good
when the arena has said no: ``refused`` (a name that is not the key's, a bot that does not play there), a key the
arena does not know, or handshakes that keep failing (a wrong ``--server-key``; with ``stay`` they are told and
tried again with growing pauses, as a busy ladder closes handshakes it has no room for). It never sends a line
over the UQI limit: an engine that writes one ends its session instead.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import socket
from dataclasses import dataclass
from typing import Any, Final

import zmq
import zmq.auth
from zmq.utils.monitor import parse_monitor_message

from .connect import (
    Begin,
    Bye,
    ConnectError,
    Control,
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
from .errors import ExitStatus, QuartoError
from .serving import HEARTBEAT_MS, LoopServer, Outbox, serve_until_stopped
from .slots import Loop, Slot, SlotFactory
from .uqi import MAX_LINE_BYTES

__all__ = [
    "ArenaRefused",
    "ClientError",
    "ConnectOptions",
    "connect_options",
    "serve_connected",
    "serve_connected_until_stopped",
]

log = logging.getLogger(__name__)

HANDSHAKE_MS: Final = 10_000
"""How long one handshake may take (libzmq's default is 30 s)."""
HANDSHAKE_TRIES: Final = 3
"""Handshakes that fail in a row (without the arena saying why) before the client gives up."""
_RECONNECT_PAUSE: Final = 0.2  # s before a new connection after one dropped
_REFUSED_PAUSE: Final = 1.0  # s before trying a refused key again (--stay): a ladder reads its keys every second
_RECONNECT_MAX_MS: Final = 5000  # the longest pause between two attempts to reach an arena that is not there
# Plain ints, not pyzmq's enums: an enum flag's ``&`` costs as much as the look at EVENTS itself.
_EVENTS: Final = int(zmq.EVENTS)
_POLLIN: Final = int(zmq.POLLIN)
_NOBLOCK: Final = int(zmq.NOBLOCK)
_MORE: Final = int(zmq.NOBLOCK | zmq.SNDMORE)
_GOODBYE_WAIT: Final = 3.0  # s a client that said leaving waits for the arena's goodbye once its games are over


class ClientError(QuartoError, ValueError):
    """A ``--connect`` option that cannot be used (exit status 2). The message names the problem."""

    status = ExitStatus.USAGE
    reason = "connect_option"


class ArenaRefused(QuartoError):
    """The arena turned the bot down for good (exit status 3): retrying cannot help. The message says why."""

    status = ExitStatus.ENGINE
    reason = "refused"


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
    stay: bool = False
    """Keep connecting after the arena's ``goodbye`` (a standing ladder's next run), instead of stopping."""


def _key(path: str, what: str) -> tuple[bytes, bytes | None]:
    try:
        return zmq.auth.load_certificate(path)
    except (OSError, ValueError) as e:
        raise ClientError(f"{what} {path}: not a readable key file ({e})") from None


def connect_options(args: argparse.Namespace) -> ConnectOptions | None:
    """The options of :func:`~quarto_arena.protocol.bot.add_connect_arguments`, checked (the key files read); None
    without ``--connect``. Raises :class:`ClientError`."""
    if args.connect is None:
        if args.name or args.key or args.server_key or args.slots != 1 or getattr(args, "stay", False):
            raise ClientError("--name, --key, --server-key, --slots and --stay go with --connect")
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
    stay = bool(getattr(args, "stay", False))
    if args.key is None:
        return ConnectOptions(endpoint, args.name, args.slots, stay=stay)
    public, secret = _key(args.key, "--key")
    if secret is None:
        raise ClientError(f"--key {args.key}: holds no secret key (give NAME.key_secret, not NAME.key)")
    server, _ = _key(args.server_key, "--server-key")
    return ConnectOptions(endpoint, args.name, args.slots, public, secret, server, stay)


class Client(LoopServer):
    """The loop of :func:`serve_connected`: one thread owns the socket, the slots' pipes and their timers; the SDK's
    search threads queue their lines. Build it, then :meth:`run` it; :meth:`leave` (from a signal handler too) asks
    it to finish the games in flight and stop."""

    def __init__(self, make_slot: SlotFactory, options: ConnectOptions) -> None:
        super().__init__(Loop())
        self.options = options
        self.context: zmq.Context[Any] = zmq.Context()
        self.slots: dict[int, Slot] = {k: make_slot(self.loop, k) for k in range(1, options.slots + 1)}
        # Each slot's channel frame, both ways: a relayed line is not parsed or formatted again.
        self.channels: dict[int | None, bytes] = {k: format_channel(k) for k in (None, *self.slots)}
        self.numbers: dict[bytes, int | None] = {channel: k for k, channel in self.channels.items()}
        self.generations = dict.fromkeys(self.slots, 0)
        self.open: set[int] = set()
        """Slots with a session on."""
        self.owed: set[int] = set()
        """Slots whose ``ready`` the arena waits for (on this connection)."""
        self.kills: set[int] = set()
        """Slots whose session the arena killed: a fresh engine for them."""
        # Lines of engines' threads (the SDK's searches), keyed by (slot, generation); the loop's own writes go
        # straight to the socket.
        self.outbox: Outbox[tuple[int, int]] = Outbox(self.loop, self._emit_keyed)
        self.connection = 0
        self.welcomed = False
        self.shaken = False
        """This connection's ZeroMQ handshake succeeded."""
        self.counted = False
        """This connection's failed handshake is counted in :attr:`failures`."""
        self.failures = 0
        self.stopping = False
        """The arena said goodbye (without ``stay``), or the bot is leaving: stop once no session is on."""
        self.said_goodbye = False
        self.sock: Any = None
        self.monitor: Any = None
        self._goodbye_timer: Any = None

    # --- the connection ------------------------------------------------------------------------------------------

    def _connect(self) -> None:
        """A fresh socket, its hello queued first: nothing of an earlier connection can follow it."""
        o = self.options
        sock: Any = self.context.socket(zmq.DEALER)
        for option, value in (
            (zmq.LINGER, 0),
            (zmq.RECONNECT_IVL, 100),
            (zmq.RECONNECT_IVL_MAX, _RECONNECT_MAX_MS),
            (zmq.HEARTBEAT_IVL, HEARTBEAT_MS),
            (zmq.HEARTBEAT_TIMEOUT, 3 * HEARTBEAT_MS),
            (zmq.HEARTBEAT_TTL, 3 * HEARTBEAT_MS),
            # An arena answers in milliseconds; a server that does not (not ZeroMQ) fails the try sooner.
            (zmq.HANDSHAKE_IVL, HANDSHAKE_MS),
        ):
            sock.setsockopt(option, value)
        if o.secret is not None:
            sock.curve_publickey = o.public
            sock.curve_secretkey = o.secret
            sock.curve_serverkey = o.server
        events = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
        events |= zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        events |= zmq.EVENT_CONNECT_RETRIED
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
        self.shaken = self.counted = False
        self.loop.add_reader(sock, self._read)
        self.loop.add_reader(self.monitor, self._watch)
        self._send(None, format_control(Hello(o.name, o.slots)))
        log.info("connecting to %s as %s with %d slot%s", o.endpoint, o.name, o.slots, "s" * (o.slots != 1))

    def _disconnect(self) -> None:
        if self.sock is None:
            return
        self.loop.remove_reader(self.sock)
        self.loop.remove_reader(self.monitor)
        with contextlib.suppress(zmq.ZMQError):
            self.sock.disable_monitor()
        self.monitor.close(linger=0)
        self.sock.close(linger=0)
        self.sock = None

    def _reconnect(self, why: str, pause: float = _RECONNECT_PAUSE) -> None:
        """The connection is gone: every session ends (the slots stay warm), then a fresh connection says hello."""
        if self.open:
            log.warning("%s; ending %d session(s)", why, len(self.open))
        else:
            log.info("%s", why)
        self._end_all()
        self._disconnect()
        if self.stopping or self.leaving:
            self.done = True
            return
        log.info("connecting again to %s in %g s", self.options.endpoint, pause)
        self.loop.call_later(pause, self._connect)

    def close(self) -> None:
        """Ends every session, every engine and the connection."""
        self._end_all()
        self._disconnect()
        for slot in self.slots.values():
            with contextlib.suppress(Exception):
                slot.close()
        self.context.term()
        self.loop.close()

    # --- the loop --------------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Starts the slots' engines, connects once every one is ready, and serves until stopped."""
        if not self.warm_up(self.slots, self._slot_ready):
            return
        n = len(self.slots)
        log.info("%d engine%s ready", n, "s" * (n != 1))
        self._connect()
        self.serve_until_done()

    def on_leave(self) -> None:
        """Says ``leaving``, takes no new session, and stops once those in flight are over."""
        self.stopping = True
        n = len(self.open)
        log.warning(
            "stopping: finishing %d game%s in flight, taking no new ones (signal again to leave at once)",
            n,
            "s" * (n != 1),
        )
        if self.sock is None or not self.welcomed:
            self.done = True
            return
        self._send(None, format_control(Leaving()))
        self._check_done()

    def _check_done(self) -> None:
        """Stops once no session is on, when stopping (after the arena's goodbye, or a while without one)."""
        if not self.stopping or self.open or self.done:
            return
        if self.said_goodbye or self.sock is None:
            self.done = True
        elif self._goodbye_timer is None:
            self._goodbye_timer = self.loop.call_later(_GOODBYE_WAIT, self._give_up_goodbye)

    def _give_up_goodbye(self) -> None:
        if not self.open:
            self.done = True

    def _read(self) -> None:
        # Whether a message waits is asked, not tried: a zmq.Again raised at the end of every wake-up costs more
        # than the rest of a relayed line.
        while self.sock is not None and self.sock.getsockopt(_EVENTS) & _POLLIN:
            frames = self.sock.recv_multipart(_NOBLOCK)
            if len(frames) != 2:
                log.warning("ignored a message of %d frames from the arena", len(frames))
                continue
            try:
                channel = frames[0]
                slot = self.numbers[channel] if channel in self.numbers else parse_channel(channel)
                line = frames[1].decode("utf-8")
                if slot is None:
                    self._control(parse_control(line))
                elif slot in self.open and not self.slots[slot].handle(line):
                    self._end(slot, None)  # quit
            except (ConnectError, UnicodeDecodeError) as e:
                log.warning("ignored a message from the arena: %s", e)

    def _control(self, message: Control) -> None:
        match message:
            case Welcome(slots):
                self.welcomed = True
                self.failures = 0
                log.info("connected to %s: %d slot%s ready", self.options.endpoint, slots, "s" * (slots != 1))
                if self.leaving:
                    self._send(None, format_control(Leaving()))
            case Refused(text):
                raise ArenaRefused(f"the arena at {self.options.endpoint} refused {self.options.name}: {text}")
            case Begin(slot) if slot in self.slots:
                self._begin(slot)
            case Kill(slot) if slot in self.open:
                self.kills.add(slot)
            case Goodbye(text):
                self.said_goodbye = True
                if self.leaving:
                    log.info("the arena says goodbye: %s", text or "no more games")
                elif self.options.stay:
                    log.info("the arena says goodbye (%s); staying for its next run", text or "no more games")
                else:
                    log.info("the arena says goodbye (%s); stopping once the games in flight are over", text)
                    self.stopping = True
                self._check_done()
            case Bye(text):
                log.warning("the arena cuts the connection: %s", text)
            case _:
                log.warning("ignored the control line %r from the arena", format_control(message))

    def _watch(self) -> None:
        while self.sock is not None and self.monitor.poll(0):
            message = parse_monitor_message(self.monitor.recv_multipart())
            event, value = message["event"], int(message["value"])
            if event == zmq.EVENT_CONNECT_RETRIED:
                log.info("no arena at %s yet; trying again in %.1f s", self.options.endpoint, value / 1000)
            elif event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                refused = (
                    f"the arena at {self.options.endpoint} does not accept our key (status {value}): its keys"
                    f" directory needs our public key as {self.options.name}.key"
                )
                if not self.options.stay:
                    raise ArenaRefused(refused)
                # A standing arena (a ladder) reads its keys directory as it runs: a bot started before its key
                # was added gets in once it is, so with --stay a refusal is waited out like an absent arena.
                self._reconnect(f"{refused}; trying again (--stay)", _REFUSED_PAUSE)
                return
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.shaken = True
            elif event in (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
                # Which side notices a mismatch first varies, and the one that does not just sees the other hang
                # up: a mismatch is sure at once, anything else after a few tries in a row.
                self._failed_handshake(value == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
            elif event == zmq.EVENT_DISCONNECTED:
                pause = _RECONNECT_PAUSE
                if not self.shaken:  # a server that is not ZeroMQ hangs up without a failure told
                    pause = self._failed_handshake(False)
                self._reconnect(f"lost the connection to {self.options.endpoint}", pause)
                return

    def _failed_handshake(self, sure: bool) -> float:
        """This connection's handshake failed (counted once): the bot gives up when ``sure`` (the security differs)
        or after :data:`HANDSHAKE_TRIES` such connections in a row; with ``stay``, only when ``sure``. The seconds to
        wait before the next connection."""
        if self.counted:
            return _RECONNECT_PAUSE
        self.counted = True
        self.failures += 1
        if not sure and self.failures < HANDSHAKE_TRIES:
            return _RECONNECT_PAUSE
        why = self._handshake_failed()
        if sure or not self.options.stay:
            raise ArenaRefused(why)
        # --stay: a standing bot waits out an arena too busy to finish its handshake (a ladder whose queue of
        # connections not yet past hello is full closes the oldest of them: 1,000 bots joining at once lost 158 of
        # theirs for good), as it waits out an absent one; the diagnosis is told, and the pauses grow.
        extra = self.failures - HANDSHAKE_TRIES
        if extra % 10 == 0:
            log.warning("%s; trying again (--stay)", why)
        return float(min(_RECONNECT_MAX_MS / 1000, _REFUSED_PAUSE * 2.0**extra))

    def _handshake_failed(self) -> str:
        """Why the handshakes failed, as far as the server's own ZMTP greeting tells: no ZeroMQ server at all (another
        program holds the port), one without keys, or one with keys that are not ours to use."""
        endpoint = self.options.endpoint
        where = f"the handshake with the arena at {endpoint} failed"
        mechanism = zmtp_mechanism(endpoint)
        if mechanism is None:
            return f"nothing answered the handshake: another server may be listening on {endpoint} (not an arena)"
        if self.options.secret is None:
            if mechanism == "NULL":
                return f"{where}: a ZeroMQ server without keys answered, but not as an arena does: another server?"
            return f"{where}: it serves with keys (give --key and --server-key), or it is no arena"
        if mechanism == "NULL":
            return (
                f"{where}: the server there serves plain ZeroMQ, without keys: another server may be listening on"
                f" {endpoint}, or it is an arena without --keys (then give neither --key nor --server-key)"
            )
        return f"{where}: is --server-key the arena's public key (its arena.key), and does it serve with --keys?"

    # --- sessions --------------------------------------------------------------------------------------------------

    def _emit_keyed(self, key: tuple[int, int], line: str | None) -> None:
        self._emit(*key, line)

    def _emit(self, slot: int, generation: int, line: str | None) -> None:
        """A line of slot ``slot``'s engine (None: it ended the session), sent if its session is still on."""
        if self.generations[slot] != generation or slot not in self.open:
            return  # written by a session that is over
        if line is None:
            self._end(slot, self.slots[slot].exit_info() or "the engine ended the session")
            return
        data = line.encode("utf-8")
        if len(data) > MAX_LINE_BYTES:
            self.kills.add(slot)
            self._end(slot, f"the engine wrote a line longer than {MAX_LINE_BYTES} bytes")
            return
        self._send(slot, data)

    def _slot_ready(self, slot: int) -> None:
        """Slot ``slot``'s engine is clean again: the arena may begin the next session there."""
        if slot in self.owed:
            self.owed.discard(slot)
            self._send(None, format_control(Ready(slot)))

    def _begin(self, slot: int) -> None:
        if slot in self.open:
            self._end(slot, "the arena began a new session")
        self.generations[slot] += 1
        self.open.add(slot)
        self.owed.discard(slot)
        self.kills.discard(slot)
        self.slots[slot].open(self.outbox.writer((slot, self.generations[slot])))
        log.info("slot %d: session begins", slot)

    def _end(self, slot: int, why: str | None) -> None:
        """Ends slot ``slot``'s session (``why``: it ended on our side, and the arena is told so); ``ready`` follows
        once its engine is clean again."""
        if slot not in self.open:
            return
        self.open.discard(slot)
        self.generations[slot] += 1  # whatever the engine still writes for it is dropped
        if why is not None:
            self._send(None, format_control(Ended(slot, why)))
        log.info("slot %d: session ends (%s)", slot, why or "quit")
        fresh = slot in self.kills
        self.kills.discard(slot)
        self.owed.add(slot)
        self.slots[slot].finish(fresh=fresh)
        self._check_done()

    def _end_all(self) -> None:
        """Ends every session at once (the connection is gone, or we stop); no ``ready`` is owed any more."""
        for slot in sorted(self.open):
            self.open.discard(slot)
            self.generations[slot] += 1
            fresh = slot in self.kills
            self.kills.discard(slot)
            self.slots[slot].finish(fresh=fresh)
        self.owed.clear()

    def _send(self, slot: int | None, line: str | bytes) -> None:
        if self.sock is None:
            return
        data = line.encode("utf-8") if isinstance(line, str) else line
        sock = self.sock
        # Two sends rather than send_multipart, whose Python layer costs more than the rest of a relayed line. A line
        # the connection cannot take now (the arena is gone, or reads nothing) is dropped: the connection's end, which
        # ends its sessions, follows.
        try:
            sock.send(self.channels[slot], _MORE)
            sock.send(data, _NOBLOCK)
        except zmq.Again:
            pass
        self.loop.sent(sock)


def zmtp_mechanism(endpoint: str, timeout: float = 1.0) -> str | None:
    """The security mechanism (``NULL``, ``CURVE``, ``PLAIN``) a ZeroMQ server at ``endpoint`` says it speaks in its
    ZMTP 3 greeting, answering ours; None when nothing there answers as ZeroMQ does (nothing at all, or another
    protocol). One connection, closed at once; at most ``timeout`` seconds."""
    # Only the signature and the major version: a ZeroMQ server then sends the rest of its greeting and waits for
    # ours (whole, it might see a mismatch and reset the connection, taking its greeting with it).
    greeting = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03"
    try:
        if endpoint.startswith("ipc://"):
            family, address = socket.AF_UNIX, endpoint.removeprefix("ipc://")
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(address)
        else:
            host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
            sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except (OSError, ValueError):
        return None
    answer = b""
    try:
        with sock:
            sock.sendall(greeting)
            while len(answer) < 32:
                chunk = sock.recv(64 - len(answer))
                if not chunk:
                    break
                answer += chunk
    except OSError:
        pass
    if len(answer) < 32 or answer[0] != 0xFF or answer[9] != 0x7F or answer[10] < 3:
        return None
    return answer[12:32].rstrip(b"\0").decode("ascii", "replace") or None


def serve_connected(make_slot: SlotFactory, options: ConnectOptions, client: Client | None = None) -> None:
    """Connects to the arena and serves sessions on the bot's slots, connection after connection, until the arena
    says goodbye (without ``stay``) or :meth:`Client.leave` is called and the games in flight are over.

    Raises :class:`ArenaRefused` when the arena turns the bot down for good.
    """
    client = client or Client(make_slot, options)
    try:
        client.run()
    finally:
        client.close()


def serve_connected_until_stopped(make_slot: SlotFactory, options: ConnectOptions) -> int:
    """Serves the arena's sessions (:func:`serve_connected`) until stopped: the SDK's and the bridge's ``--connect``.

    Returns 0 when the arena said goodbye (the run is over) or after a first SIGINT or SIGTERM once the games in
    flight are over; 128 + the signal when a second one came (leaving at once: the games in flight are lost by
    disconnect); 3 (:attr:`ArenaRefused.status`) when the arena turned the bot down for good (the reason logged).
    """
    try:
        status = serve_until_stopped(Client(make_slot, options))
    except ArenaRefused as e:
        log.error("%s", e)
        return int(e.status)
    if status == ExitStatus.OK:
        log.info("stopped")
    return status
