"""A bot's ZeroMQ server (SPEC §3.3): the SDK's ``--listen`` (:func:`serve_zmq`) and the bridge's
(:func:`serve_slot_sessions`). It binds a DEALER and serves one arena's session at a time, each on a fresh socket, all
of them on one warm slot."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from .endpoint import EndpointError
from .sdk import Bot
from .serving import HEARTBEAT_MS, LoopServer, Outbox, serve_until_stopped
from .session import BotSlot
from .slots import Loop, Slot, SlotFactory

__all__ = ["SessionServer", "serve_slot_sessions", "serve_zmq"]

log = logging.getLogger(__name__)


def serve_zmq(bot: Bot, endpoint: str, *, on_bound: Callable[[], None] | None = None) -> int:
    """Serves ``bot`` on a ZeroMQ endpoint (a bound DEALER, one frame per line, SPEC §3.3), session after session.

    ``quit`` ends a session, and the server waits for the next ``uqi``. Runs until stopped (:func:`serve_slot_sessions`,
    whose exit status it returns). Raises :class:`EndpointError` when the endpoint cannot be bound.
    """
    return serve_slot_sessions(lambda loop, _: BotSlot(bot, loop, copies=False), endpoint, on_bound=on_bound)


def serve_slot_sessions(make_slot: SlotFactory, endpoint: str, *, on_bound: Callable[[], None] | None = None) -> int:
    """The ZeroMQ server behind :func:`serve_zmq` and the bridge's ``--listen``: one session at a time, each on a
    new socket, all of them served by one warm slot (its engine ready before the endpoint is bound).

    A session ends (SPEC §3.3) on ``quit``, when the engine side ends it, or when the arena's connection drops
    (its process died, or three heartbeats went unanswered). Each session gets a fresh socket, and whatever an old
    session still writes is dropped: a reply from another session never reaches an arena. The first SIGINT or
    SIGTERM lets a session in progress finish, then returns 0; a second one returns 128 + the signal at once
    (:func:`~.serving.serve_until_stopped`). Raises :class:`EndpointError` when the endpoint cannot be bound.
    """
    loop = Loop()
    return serve_until_stopped(SessionServer(make_slot(loop, 1), loop, endpoint, on_bound))


class SessionServer(LoopServer):
    """The state of :func:`serve_slot_sessions`: the bound socket and its monitor, the slot, the loop.

    Only the loop's thread touches the socket; lines written from other threads (the SDK's searches) go through an
    :class:`~.serving.Outbox`. Each line carries the number of the session that wrote it, and only the current
    session's lines are sent.

    Connections are counted: a session's arena has vanished when no connection is left. An arena that quit may
    still reconnect to the fresh socket for a moment before its own socket is closed, and its disconnect must not
    end the next arena's session; a port probe (no ZeroMQ peer) comes and goes without a session.
    """

    def __init__(self, slot: Slot, loop: Loop, endpoint: str, on_bound: Callable[[], None] | None = None) -> None:
        import zmq

        super().__init__(loop)
        self.zmq = zmq
        self.slot = slot
        self.endpoint = endpoint
        self.context = zmq.Context()
        self.sock: Any = None
        self.monitor: Any = None
        self.on_bound = on_bound
        self.outbox: Outbox[int] = Outbox(loop, self._emit)
        self.generation = 0
        self.connections = 0
        self.begun = False

    def run(self) -> None:
        """Starts the slot's engine, binds once it is ready, and serves session after session until stopped."""
        if not self.warm_up({1: self.slot}, lambda _: None):
            return
        self.sock = self._bind()
        self.monitor = self._watch()
        self.slot.open(self.outbox.writer(self.generation))
        log.info("listening on %s", self.endpoint)
        if self.on_bound is not None:
            self.on_bound()
        self.serve_until_done()

    def on_leave(self) -> None:
        """The session in progress finishes, then the server stops."""
        if self.begun:
            log.warning("stopping: finishing the game in flight, taking no new one (signal again to leave at once)")
        else:
            log.info("stopping")
            self.done = True

    def _bind(self, patience: float = 0.0) -> Any:
        """A fresh DEALER bound to the endpoint, with ZMTP heartbeats."""
        zmq = self.zmq
        # ZeroMQ releases a closed socket's address in its I/O thread, a moment later: a rebind may retry a while.
        give_up = time.monotonic() + patience
        while True:
            fresh = self.context.socket(zmq.DEALER)
            fresh.setsockopt(zmq.LINGER, 0)
            fresh.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_MS)
            fresh.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3 * HEARTBEAT_MS)
            fresh.setsockopt(zmq.HEARTBEAT_TTL, 3 * HEARTBEAT_MS)
            try:
                fresh.bind(self.endpoint)
                return fresh
            except zmq.ZMQError as e:
                fresh.close()
                if e.errno != zmq.EADDRINUSE or time.monotonic() > give_up:
                    raise EndpointError(f"cannot listen on {self.endpoint}: {e}", reason="cannot_bind") from None
            time.sleep(0.01)

    def _watch(self) -> Any:
        """Reads the current socket and a monitor of its connections on the loop."""
        zmq = self.zmq
        monitor = self.sock.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self.loop.add_reader(self.sock, self._receive)
        self.loop.add_reader(monitor, self._on_monitor)
        return monitor

    def _emit(self, number: int, line: str | None) -> None:
        if number != self.generation or self.sock is None:
            return  # written by a session that is over
        if line is None:
            self._next_session("the engine ended it")
            return
        with contextlib.suppress(self.zmq.Again):
            self.sock.send(line.encode("utf-8"), self.zmq.NOBLOCK)
        self.loop.sent(self.sock)

    def _receive(self) -> None:
        """Hands every waiting line to the slot, once the monitor's waiting events are read.

        Those events are older than the lines, and the session must begin after them: a server slow to wake may
        find a port probe's connection and disconnection queued before the arena's connection, whose ``uqi`` waits
        on the socket. Read after the ``uqi``, the probe's disconnection would end the session just begun."""
        self._on_monitor()
        generation = self.generation
        while self.sock is not None and generation == self.generation:
            try:
                frames = self.sock.recv_multipart(self.zmq.NOBLOCK)
            except self.zmq.Again:
                return
            self.begun = True
            if len(frames) != 1:
                self._emit(generation, f"error message has {len(frames)} frames; UQI over ZeroMQ is one line per frame")
                continue
            if not self.slot.handle(frames[0].decode("utf-8", "replace")):
                self._next_session("quit")
                return

    def _on_monitor(self) -> None:
        """Reads the monitor: the session ends when the arena's connection dropped (its process died or its
        heartbeats stopped) and no other is left. A session that never began has nothing to end."""
        from zmq.utils.monitor import recv_monitor_message

        vanished = False
        while self.monitor is not None and self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)["event"]
            self.connections += 1 if event == self.zmq.EVENT_ACCEPTED else -1
            vanished = vanished or (self.begun and self.connections <= 0)
        if vanished:
            self._next_session("the arena's connection dropped")

    def _next_session(self, why: str) -> None:
        # A bound DEALER deals its replies round-robin to every peer it still has, so the next arena could lose
        # lines to this one's dying connection: start over with a fresh socket. Closing it is also how the arena
        # learns that a bridged engine went away (a disconnect).
        self._unbind()
        self.generation += 1
        self.slot.finish()
        log.info("session ended (%s)", why)
        if self.leaving:
            self.done = True
            return
        self.sock = self._bind(patience=5.0)
        self.monitor = self._watch()
        self.begun, self.connections = False, 0
        self.slot.open(self.outbox.writer(self.generation))
        log.info("waiting for the next uqi")

    def _unbind(self) -> None:
        for old in (self.sock, self.monitor):
            if old is not None:
                self.loop.remove_reader(old)
        if self.sock is not None:
            with contextlib.suppress(self.zmq.ZMQError):
                self.sock.disable_monitor()
            self.monitor.close(linger=0)
            self.sock.close()
        self.sock = self.monitor = None

    def close(self) -> None:
        """Ends the slot's engine and releases the socket, the context and the loop."""
        self._unbind()
        self.slot.close()
        self.context.term()
        self.loop.close()
