"""How UQI lines move between the arena and an engine: one :class:`Transport` interface, several implementations.

- :class:`ProcessTransport` (``process``): the engine is a child process leading its own session, spoken to over
  its standard input and output; standard error goes to a capped log.
- :class:`ZmqTransport` (``zeromq``): the engine serves UQI on a ZeroMQ endpoint; the arena connects a DEALER.
- ``testing``: in-process engines (a scripted one for protocol tests, an instant one for the scale benchmark).
- ``supervision``: nothing an engine starts outlives the arena (parent-death signal, child subreaper, watchdog),
  and :func:`kill_all`/:func:`shutdown` end every engine at once.

A transport knows nothing of UQI beyond lines: it enforces the line-length limit and strict UTF-8, logs every line
at DEBUG with the engine's name, copies it to a :class:`Transcript` when ``--debug`` asks for one, and hands it to
the :class:`LineSink` that owns the engine's output at the moment. Deadlines belong to the caller.

A new transport (say, a connection accepted by a server that engines connect to) subclasses :class:`Transport`:
it implements ``_write(bytes)`` (one write, never blocking), calls ``_received(raw_line)`` for each line it reads,
``_bad(why)`` for an unreadable one and ``_gone(why)`` once at the end, and implements ``close()``; optionally
``poll()`` (read what is already there, used before a time forfeit) and ``wait_exit()``. An
:class:`~quarto_arena.arena.engine.EngineSession` accepts any such transport in ``start(transport)``.
"""

from __future__ import annotations

from .base import BadLine, LineSink, PeerGone, Transcript, Transport, TransportError, describe_exit
from .process import DEFAULT_STDERR_LIMIT, ProcessTransport
from .supervision import kill_all, shutdown
from .zeromq import ZmqTransport

__all__ = [
    "DEFAULT_STDERR_LIMIT",
    "BadLine",
    "LineSink",
    "PeerGone",
    "ProcessTransport",
    "Transcript",
    "Transport",
    "TransportError",
    "ZmqTransport",
    "describe_exit",
    "kill_all",
    "shutdown",
]
