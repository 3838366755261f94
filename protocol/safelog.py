"""Log records made safe to show (:class:`SafeFormatter`, apart from :mod:`.text`, whose users need no logging), and
the log of a standing service (:func:`service_log`): the bridge's and a ladder's ``-q`` and ``--log FILE``."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

from .text import safe_text

__all__ = ["LOG_BYTES", "LOG_FILES", "SUMMARY_INTERVAL", "Quiet", "SafeFormatter", "ServiceLog", "service_log"]

SUMMARY_INTERVAL: Final = 600.0
"""Seconds between two summary lines of a quiet log (``-q``)."""
LOG_BYTES: Final = 10 << 20
"""Bytes a ``--log FILE`` grows to before it is rotated (``FILE.1`` ... ``FILE.4`` keep the previous ones)."""
LOG_FILES: Final = 5
"""Files of a rotated log kept in all: the current one and four before it (about 50 MB)."""


class SafeFormatter(logging.Formatter):
    """A :class:`logging.Formatter` whose formatted message (not the traceback it may carry) is :func:`safe_text`."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return safe_text(super().formatMessage(record), None)


class Quiet(logging.Filter):
    """``-q``: the routine lines (a session begun or ended, a game counted, a bot connected: one a game or a session)
    are not shown but counted, and every ``interval`` seconds one line says how many of each kind there were; every
    other line passes (warnings, errors, what happens once). ``kinds`` names each routine line by its message's
    template and says what it counts (``"slot %d: session begins"`` -> ``"sessions begun"``)."""

    def __init__(self, kinds: Mapping[str, str], interval: float = SUMMARY_INTERVAL) -> None:
        super().__init__()
        self.kinds = dict(kinds)
        self.interval = interval
        self.handler: logging.Handler | None = None
        """Where the summary goes (set by :func:`service_log`)."""
        self._counts: dict[str, int] = {}
        self._since = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        kind = self.kinds.get(str(record.msg)) if record.levelno < logging.WARNING else None
        if kind is None:
            return True
        with self._lock:
            self._counts[kind] = self._counts.get(kind, 0) + 1
        return False

    def start(self) -> None:
        """Says the summary every :attr:`interval` seconds, from a thread of its own (a quiet service is often idle:
        the lines counted must not wait for the next one)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._every, name="log-summary", daemon=True)
            self._thread.start()

    def _every(self) -> None:
        while not self._stop.wait(self.interval):
            self.summary()

    def summary(self) -> None:
        """Logs what was not shown since the last summary (nothing when nothing was)."""
        with self._lock:
            counts, self._counts = self._counts, {}
            began, self._since = self._since, time.monotonic()
        if not counts or self.handler is None:
            return
        told = ", ".join(f"{n:,} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        minutes = (time.monotonic() - began) / 60
        record = logging.LogRecord(
            "summary", logging.INFO, __file__, 0, "in the last %.0f min: %s", (minutes, told), None
        )
        self.handler.handle(record)

    def close(self) -> None:
        """Stops the thread and says the last summary."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.summary()


class ServiceLog:
    """The handler :func:`service_log` set up; :meth:`close` it when the service stops."""

    def __init__(self, handler: logging.Handler, loggers: list[logging.Logger], quiet: Quiet | None) -> None:
        self.handler = handler
        self.loggers = loggers
        self.quiet = quiet

    def close(self) -> None:
        """Says the last summary (``-q``), then detaches and closes the handler."""
        if self.quiet is not None:
            self.quiet.close()
        for logger in self.loggers:
            logger.removeHandler(self.handler)
        self.handler.close()


def service_log(
    names: Iterable[str],
    fmt: str,
    *,
    quiet: Quiet | None = None,
    path: str | None = None,
    level: int = logging.INFO,
    max_bytes: int = LOG_BYTES,
) -> ServiceLog:
    """The log of the loggers ``names``: on standard error, or in ``path`` rotated by size (``max_bytes``, then
    ``path.1`` ... as logrotate names them, :data:`LOG_FILES` in all), each line made safe (:class:`SafeFormatter`);
    with ``quiet``, routine lines are counted and summed up instead. Raises OSError when ``path`` cannot be opened."""
    handler: logging.Handler
    if path is None:
        handler = logging.StreamHandler(sys.stderr)
    else:
        # Only a service's log file rotates: every run command imports this module, and logging.handlers costs
        # a 2-game play 2 ms of its start-up.
        from logging.handlers import RotatingFileHandler

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=max_bytes, backupCount=LOG_FILES - 1)
    handler.setFormatter(SafeFormatter(fmt))
    if quiet is not None:
        handler.addFilter(quiet)
        quiet.handler = handler
        quiet.start()
    loggers = []
    for name in names:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False
        loggers.append(logger)
    return ServiceLog(handler, loggers, quiet)
