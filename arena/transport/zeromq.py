"""An engine serving UQI on a ZeroMQ endpoint (SPEC §3.3): the arena connects a DEALER socket, one frame per line.

The sockets are plain (not ``zmq.asyncio``) and read by the event loop through their file descriptors, as the
process transport reads its pipes. A session begins only once ZeroMQ's handshake with the engine's server has
succeeded (an endpoint where nothing answers within a second is reported at once), is watched by ZMTP heartbeats
and the socket monitor (a vanished server is a disconnect, not a stall), and always ends with ``quit`` when the
connection still stands, so that the server can start a clean engine for the next session.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Final

import zmq
from zmq.utils.monitor import parse_monitor_message

from .base import PeerGone, Transcript, Transport

__all__ = ["CONNECT_TIMEOUT", "MAX_MESSAGE_BYTES", "ZmqTransport"]

CONNECT_TIMEOUT: Final = 1.0
"""Seconds to wait for the ZeroMQ handshake with the engine's server before reporting that nobody answers."""
MAX_MESSAGE_BYTES: Final = 1 << 20
"""Largest frame ZeroMQ accepts from an engine; a larger one makes ZeroMQ drop the connection (a disconnect).
Frames up to this size that break the line limit are malformed replies."""
HEARTBEAT_MS: Final = 1000
"""Interval of the ZMTP heartbeats; a peer silent for three intervals is gone."""
_RECEIVE_QUEUE: Final = 8  # messages ZeroMQ queues for us: with MAX_MESSAGE_BYTES, the memory bound per session
_EVENTS: Final = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CONNECT_RETRIED

_context: zmq.Context[Any] | None = None


def _zmq_context() -> zmq.Context[Any]:
    # One context for the whole arena: sockets are closed individually and the context is never terminated, so
    # closing a socket (even with a linger, to deliver a last quit) never blocks the arena.
    global _context
    if _context is None:
        _context = zmq.Context()
    return _context


class ZmqTransport(Transport):
    """A connected DEALER socket to an engine's server. Build it with :meth:`start`."""

    def __init__(self, name: str, endpoint: str, transcript: Transcript | None = None) -> None:
        super().__init__(name, transcript)
        self.endpoint = endpoint
        """The engine's endpoint, ``tcp://HOST:PORT`` or ``ipc://PATH``."""
        self._loop = asyncio.get_running_loop()
        sock: Any = _zmq_context().socket(zmq.DEALER)
        for option, value in (
            (zmq.LINGER, 0),
            (zmq.RCVHWM, _RECEIVE_QUEUE),
            (zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES),
            (zmq.RECONNECT_IVL, 100),
            (zmq.HEARTBEAT_IVL, HEARTBEAT_MS),
            (zmq.HEARTBEAT_TIMEOUT, 3 * HEARTBEAT_MS),
            (zmq.HEARTBEAT_TTL, 3 * HEARTBEAT_MS),
        ):
            sock.setsockopt(option, value)
        self._sock = sock
        self._monitor: Any = sock.get_monitor_socket(_EVENTS)
        self._connected: asyncio.Future[None] = self._loop.create_future()
        self._retries = 0
        self._disconnected = False
        self._closed = False
        self._in_multipart = False
        self._loop.add_reader(self._monitor.getsockopt(zmq.FD), self._on_monitor)
        self._loop.add_reader(sock.getsockopt(zmq.FD), self._drain)
        try:
            sock.connect(endpoint)
        except zmq.ZMQError as e:
            self._release()
            raise OSError(f"cannot connect to {endpoint}: {e}") from None
        # The descriptors signal edges only: look once for what came before the readers were registered.
        self._loop.call_soon(self._on_monitor)
        self.note(f"connecting to {endpoint}")

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
        t = cls(name, endpoint, transcript)
        await asyncio.wait((t._connected,), timeout=connect_timeout)
        if not t._connected.done():
            why = "connection refused or no such host" if t._retries else "no answer"
            t._release()
            raise OSError(f"cannot connect to {endpoint} ({why} within {connect_timeout:g} s)")
        return t

    @property
    def gone(self) -> bool:
        """True after a disconnect or close."""
        return self._disconnected or self._closed or self._ended is not None

    def exit_info(self) -> str | None:
        """``disconnected`` after the engine's server dropped the connection."""
        return "disconnected" if self._disconnected else None

    def _on_monitor(self) -> None:
        mon = self._monitor
        while not self._closed and mon.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            event = parse_monitor_message(mon.recv_multipart(zmq.NOBLOCK))["event"]
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                if not self._connected.done():
                    self._connected.set_result(None)
            elif event == zmq.EVENT_CONNECT_RETRIED:
                self._retries += 1
            elif event == zmq.EVENT_DISCONNECTED and self._connected.done():
                # ZeroMQ would reconnect silently, but a UQI session does not survive its connection.
                self._disconnected = True
                self.poll()
                self._gone(f"{self.name} at {self.endpoint} disconnected")
                return

    def _drain(self) -> None:
        # The socket's descriptor only says that something may have changed: read while ZeroMQ says there is more.
        sock = self._sock
        while not self._closed and sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            data = sock.recv(zmq.NOBLOCK)
            more = sock.getsockopt(zmq.RCVMORE)
            if self._in_multipart:
                self._in_multipart = bool(more)  # the rest of a multipart message, already reported
                continue
            self.received_at = time.monotonic()
            if more:
                self._in_multipart = True
                self._bad("a message of several frames (UQI over ZeroMQ is one line per frame)")
            elif b"\n" in data:
                self._bad("a frame holding a line break (UQI over ZeroMQ is one line per frame)")
            else:
                self._received(data)

    def poll(self) -> None:
        """Reads whatever ZeroMQ has already received."""
        if not self._closed:
            self._drain()

    def _write(self, data: bytes) -> None:
        if self.gone:
            raise PeerGone(f"{self.name} at {self.endpoint} is gone ({self.exit_info() or 'closed'})")
        try:
            for line in data.split(b"\n")[:-1]:
                self._sock.send(line, zmq.NOBLOCK)
        except zmq.ZMQError as e:
            raise PeerGone(f"{self.name} at {self.endpoint} does not take input ({e})") from None
        # Sending may have consumed the descriptor's edge for messages that arrived meanwhile.
        self._loop.call_soon(self._drain)

    def _release(self) -> None:
        self._closed = True
        with contextlib.suppress(ValueError, zmq.ZMQError):
            self._loop.remove_reader(self._sock.getsockopt(zmq.FD))
            self._loop.remove_reader(self._monitor.getsockopt(zmq.FD))
        with contextlib.suppress(zmq.ZMQError):
            self._sock.disable_monitor()
        self._monitor.close(linger=0)

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Ends the session: ``quit`` is sent whenever the connection stands (a kill included: it is how the
        server learns that the session is over) and the socket is closed without blocking."""
        if self._closed:
            return
        linger = 0
        if not self._disconnected:
            with contextlib.suppress(PeerGone):
                self.send_lines(("quit",))
                # ZeroMQ delivers the queued quit in its own thread after the close, for up to this long.
                linger = int(max(grace, 0.5) * 1000)
        self._release()
        self._sock.close(linger=linger)
        self._gone(f"{self.name} at {self.endpoint} was closed")
        self.note("closed")
