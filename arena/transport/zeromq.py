"""An engine serving UQI on a ZeroMQ endpoint (SPEC §3.3): the arena connects as a DEALER, one frame per line.

The arena speaks ZMTP 3.1 itself (RFC 37, the NULL mechanism: the engine's side is any ZeroMQ DEALER) over a plain
non-blocking socket read by the event loop, as the process transport reads its pipes. It does so to bound what an
engine can make it hold: libzmq buffers the frames of a multipart message until its last frame, without any limit
(``ZMQ_MAXMSGSIZE`` bounds one frame, ``ZMQ_RCVHWM`` counts whole messages), so an engine that never ends a message
took all the arena's memory. Here every frame is judged by its header before its body is read: a frame, or a
multipart message, over :data:`MAX_MESSAGE_BYTES` drops the connection (a disconnect); a line over the line limit
and the frames of a shorter multipart message are read only to be discarded (a malformed reply); a line is kept only
when whole, at most 4 KiB. What one session holds is its read buffer (:data:`READ_CHUNK`) and one line.

A session begins only once the ZMTP handshake with the engine's server has succeeded (an endpoint where nothing
answers within a second is reported at once), is watched by ZMTP heartbeats (a server silent for three intervals
is a disconnect, not a stall), and always ends with ``quit`` when the connection still stands, so that the server
can start a clean engine for the next session.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from typing import Final

from quarto_arena.protocol.uqi import MAX_LINE_BYTES

from .base import PeerGone, Transcript, Transport

__all__ = ["CONNECT_TIMEOUT", "MAX_MESSAGE_BYTES", "READ_CHUNK", "RECONNECT_PAUSE", "ZmqTransport", "parse_endpoint"]

CONNECT_TIMEOUT: Final = 1.0
"""Seconds to wait for the ZMTP handshake with the engine's server before reporting that nobody answers."""
RECONNECT_PAUSE: Final = 0.05
"""Seconds before connecting again when a connection dropped before any handshake reply: the server was switching
sessions and closed the socket the arena had just reached (SPEC §3.3)."""
MAX_MESSAGE_BYTES: Final = 1 << 20
"""Largest frame taken from an engine; a larger one drops the connection (a disconnect). Frames up to this size that
break the line limit are malformed replies, read only to be discarded."""
HEARTBEAT_MS: Final = 1000
"""Interval of the ZMTP heartbeats; a peer silent for three intervals is gone."""
READ_CHUNK: Final = 1 << 16
"""Bytes read from the socket at a time: with one line, what a session holds of what the engine sent."""
_READS_PER_WAKEUP: Final = 4  # a flood must not hold off the games' deadlines
_GREETING: Final = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31
_MORE, _LONG, _COMMAND = 0x01, 0x02, 0x04
_COMPATIBLE: Final = frozenset({b"DEALER", b"ROUTER", b"REP"})  # peers of a DEALER (RFC 28)


def parse_endpoint(endpoint: str) -> tuple[int, str | tuple[str, int]]:
    """The address family and address of ``tcp://HOST:PORT`` (``[v6]`` brackets allowed) or ``ipc://PATH``;
    raises OSError for anything else."""
    if endpoint.startswith("ipc://") and len(endpoint) > 6:
        return socket.AF_UNIX, endpoint[6:]
    if endpoint.startswith("tcp://"):
        host, sep, port = endpoint[6:].rpartition(":")
        if sep and host and port.isdigit() and int(port) < 65536:
            if host.startswith("[") and host.endswith("]"):
                host = host[1:-1]
            return socket.AF_INET, (host, int(port))
    raise OSError(f"cannot connect to {endpoint}: not a tcp://HOST:PORT or ipc://PATH endpoint")


def _frame(body: bytes, flags: int = 0) -> bytes:
    if len(body) < 256:
        return bytes((flags, len(body))) + body
    return bytes((flags | _LONG,)) + struct.pack(">Q", len(body)) + body


def _command(name: bytes, body: bytes = b"") -> bytes:
    return _frame(bytes((len(name),)) + name + body, _COMMAND)


_READY: Final = _command(b"READY", b"\x0bSocket-Type" + struct.pack(">I", 6) + b"DEALER")


class ZmqTransport(Transport):
    """A ZMTP connection to an engine's server. Build it with :meth:`start`."""

    def __init__(self, name: str, endpoint: str, transcript: Transcript | None = None) -> None:
        super().__init__(name, transcript)
        self.endpoint = endpoint
        """The engine's endpoint, ``tcp://HOST:PORT`` or ``ipc://PATH``."""
        self._loop = asyncio.get_running_loop()
        self._sock: socket.socket | None = None
        self._handshake: asyncio.Future[None] = self._loop.create_future()
        self._greeted = False
        self._ready = False
        self._buffer = bytearray()
        self._skip = 0  # body bytes still to discard (a frame too long for a line, or part of a multipart message)
        self._in_multipart = False
        self._multipart = 0  # bytes of the multipart message being discarded
        self._outgoing = bytearray()
        self._disconnected = False
        self._closed = False
        self._heard = time.monotonic()
        self._heartbeat: asyncio.TimerHandle | None = None

    @classmethod
    async def start(
        cls,
        name: str,
        endpoint: str,
        *,
        transcript: Transcript | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> ZmqTransport:
        """Connects to ``endpoint``; raises OSError ``cannot connect to ENDPOINT`` when no server answers in time."""
        family, address = parse_endpoint(endpoint)
        t = cls(name, endpoint, transcript)
        t.note(f"connecting to {endpoint}")
        loop = t._loop
        deadline = loop.time() + connect_timeout
        refused = False
        while True:
            try:
                await asyncio.wait_for(t._connect(family, address), max(deadline - loop.time(), 0.01))
                await asyncio.wait_for(asyncio.shield(t._handshake), max(deadline - loop.time(), 0.01))
                return t
            except (OSError, TimeoutError, PeerGone) as e:
                refused = refused or isinstance(e, OSError | PeerGone)
                t._release()
                if loop.time() + 0.1 >= deadline:
                    why = "connection refused or no such host" if refused else "no answer"
                    raise OSError(f"cannot connect to {endpoint} ({why} within {connect_timeout:g} s)") from None
                await asyncio.sleep(0.1)  # as libzmq's reconnection interval
                t = cls(name, endpoint, transcript)

    async def _connect(self, family: int, address: str | tuple[str, int]) -> None:
        if isinstance(address, tuple):
            infos = await self._loop.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)
            family, address = infos[0][0], (str(infos[0][4][0]), int(infos[0][4][1]))
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        self._sock = sock
        await self._loop.sock_connect(sock, address)
        if family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._loop.add_reader(sock.fileno(), self._on_readable)
        self._send(_GREETING + _READY)

    @property
    def gone(self) -> bool:
        """True after a disconnect or close."""
        return self._disconnected or self._closed or self._ended is not None

    def exit_info(self) -> str | None:
        """``disconnected`` after the engine's server dropped the connection."""
        return "disconnected" if self._disconnected else None

    # --- reading -----------------------------------------------------------------------------------------------

    def _on_readable(self) -> None:
        for _ in range(_READS_PER_WAKEUP):
            sock = self._sock
            if sock is None or self._closed:
                return
            try:
                data = sock.recv(READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self._drop(f"connection error ({e.strerror or e})")
                return
            if not data:
                self._drop("closed the connection")
                return
            self._heard = time.monotonic()
            self._buffer += data
            self._parse()
            if len(data) < READ_CHUNK:
                return

    def _parse(self) -> None:
        buf = self._buffer
        if not self._greeted:
            if len(buf) < 64:
                if buf and buf[0] != 0xFF:
                    self._fail("not a ZeroMQ server (no ZMTP greeting)")
                return
            if buf[0] != 0xFF or buf[9] & 1 != 1 or buf[10] < 3 or bytes(buf[12:32]).rstrip(b"\0") != b"NULL":
                self._fail("not a ZeroMQ 4 server without security (ZMTP 3 greeting, NULL mechanism)")
                return
            del buf[:64]
            self._greeted = True
        at = 0
        while not self._closed:
            if self._skip:
                n = min(self._skip, len(buf) - at)
                self._skip -= n
                at += n
                if self._skip:
                    break
                continue
            if len(buf) - at < 2:
                break
            flags = buf[at]
            if flags & _LONG:
                if len(buf) - at < 9:
                    break
                size = struct.unpack_from(">Q", buf, at + 1)[0]
                head = 9
            else:
                size, head = buf[at + 1], 2
            if size > MAX_MESSAGE_BYTES:
                self._fail(f"a frame of {size} bytes (at most {MAX_MESSAGE_BYTES})")
                return
            if flags & _COMMAND:
                if len(buf) - at < head + size:
                    break
                self._on_command(bytes(buf[at + head : at + head + size]))
                at += head + size
                continue
            if not self._ready:
                self._fail("a message before the ZMTP handshake")
                return
            more = bool(flags & _MORE)
            if self._in_multipart or more:
                self._multipart += head + size  # the headers count: empty frames cost the same work
                if self._multipart > MAX_MESSAGE_BYTES:
                    self._fail(f"a message of several frames and more than {MAX_MESSAGE_BYTES} bytes")
                    return
            if self._in_multipart or more or size > MAX_LINE_BYTES:
                # Read only to be discarded, a chunk at a time: never held whole.
                if not self._in_multipart:
                    self.received_at = time.monotonic()
                    if more:
                        self._bad("a message of several frames (UQI over ZeroMQ is one line per frame)")
                    else:
                        self._bad(f"line longer than {MAX_LINE_BYTES} bytes")
                self._in_multipart = more
                if not more:
                    self._multipart = 0
                self._skip = size
                at += head
                continue
            if len(buf) - at < head + size:
                break
            data = bytes(buf[at + head : at + head + size])
            at += head + size
            self.received_at = time.monotonic()
            if b"\n" in data:
                self._bad("a frame holding a line break (UQI over ZeroMQ is one line per frame)")
            else:
                self._received(data)
        del buf[:at]

    def _on_command(self, body: bytes) -> None:
        name = body[1 : 1 + body[0]] if body else b""
        rest = body[1 + len(name) :]
        if name == b"READY" and not self._ready:
            kind = _property(rest, b"socket-type")
            if kind not in _COMPATIBLE:
                self._fail(f"the server's socket is a {kind.decode('ascii', 'replace') if kind else '?'}, not a DEALER")
                return
            self._ready = True
            self._heartbeat = self._loop.call_later(HEARTBEAT_MS / 1000, self._beat)
            if not self._handshake.done():
                self._handshake.set_result(None)
        elif name == b"PING" and len(rest) >= 2:
            self._send(_command(b"PONG", rest[2:18]))
        elif name == b"ERROR":
            self._fail(f"the server refused the connection: {rest[1 : 1 + rest[0]].decode('ascii', 'replace')}")
        # PONG and commands of later ZMTP versions: the bytes were heard, nothing else to do

    def _beat(self) -> None:
        if self._closed or self._disconnected:
            return
        if time.monotonic() - self._heard > 3 * HEARTBEAT_MS / 1000:
            self._drop("stopped answering heartbeats")
            return
        self._send(_command(b"PING", struct.pack(">H", 3 * HEARTBEAT_MS // 100)))
        self._heartbeat = self._loop.call_later(HEARTBEAT_MS / 1000, self._beat)

    def poll(self) -> None:
        """Reads whatever the kernel has already received."""
        if self._sock is not None and not self._closed:
            self._on_readable()

    # --- writing -----------------------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self.gone or self._sock is None:
            raise PeerGone(f"{self.name} at {self.endpoint} is gone ({self.exit_info() or 'closed'})")
        self._send(b"".join(_frame(line) for line in data.split(b"\n")[:-1]))

    def _send(self, data: bytes) -> None:
        sock = self._sock
        if sock is None or self._closed:
            return
        if not self._outgoing:
            try:
                n = sock.send(data)
            except (BlockingIOError, InterruptedError):
                n = 0
            except OSError as e:
                self._drop(f"connection error ({e.strerror or e})")
                return
            data = data[n:]
            if not data:
                return
            self._loop.add_writer(sock.fileno(), self._flush)
        self._outgoing += data

    def _flush(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            n = sock.send(self._outgoing)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._drop(f"connection error ({e.strerror or e})")
            return
        del self._outgoing[:n]
        if not self._outgoing:
            self._loop.remove_writer(sock.fileno())

    # --- the end -----------------------------------------------------------------------------------------------

    def _fail(self, why: str) -> None:
        """The server broke ZMTP or a limit: the connection is dropped, as libzmq drops it."""
        self._drop(f"dropped by the arena: {why}")

    def _drop(self, why: str) -> None:
        if self._disconnected or self._closed:
            return
        self.note(why)
        if not self._handshake.done():
            self._handshake.set_exception(PeerGone(why))
            self._handshake.exception()  # retrieved: start() reports the failure its own way
            self._release()
            return
        self._disconnected = True
        self._release()
        self._gone(f"{self.name} at {self.endpoint} disconnected")

    def _release(self) -> None:
        self._closed = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(sock.fileno())
                self._loop.remove_writer(sock.fileno())
            sock.close()
        self._buffer = bytearray()
        self._outgoing = bytearray()

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Ends the session: ``quit`` is sent whenever the connection stands (a kill included: it is how the
        server learns that the session is over), given up to ``grace`` seconds to leave, and the socket closed."""
        if self._closed:
            self._gone(f"{self.name} at {self.endpoint} was closed")
            return
        sock = self._sock
        if sock is not None and self._ready and not self._disconnected:
            with contextlib.suppress(PeerGone):
                self.send_lines(("quit",))
            deadline = time.monotonic() + max(grace, 0.5)
            while self._outgoing and self._sock is not None and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)  # what was sent is delivered before the connection ends
                # Unread input would make the kernel reset the connection at close, losing the quit.
                while sock.recv(READ_CHUNK):
                    pass
        self._release()
        self._gone(f"{self.name} at {self.endpoint} was closed")
        self.note("closed")


def _property(metadata: bytes, wanted: bytes) -> bytes | None:
    """The value of property ``wanted`` (case-insensitive) in ZMTP metadata, None when absent or malformed."""
    at = 0
    while at < len(metadata):
        n = metadata[at]
        name = metadata[at + 1 : at + 1 + n]
        at += 1 + n
        if at + 4 > len(metadata):
            return None
        (size,) = struct.unpack_from(">I", metadata, at)
        value = metadata[at + 4 : at + 4 + size]
        at += 4 + size
        if name.lower() == wanted:
            return value
    return None
