"""Log records made safe to show: :class:`SafeFormatter` (apart from :mod:`.text`, whose users need no logging)."""

from __future__ import annotations

import logging

from .text import safe_text

__all__ = ["SafeFormatter"]


class SafeFormatter(logging.Formatter):
    """A :class:`logging.Formatter` whose formatted message (not the traceback it may carry) is :func:`safe_text`."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return safe_text(super().formatMessage(record), None)
