"""Text from a peer (an engine's ``error`` line, ``id name``, a bot's refusal reason) made safe to show.

One function, :func:`safe_text`, stands between any string an engine or a peer chose and a terminal, a log line, a
page or a file: every character that could move the cursor, start an escape sequence (ESC, CSI, OSC, DCS and their
8-bit forms), ring the bell, return the carriage, end the line or reorder what follows it (the bidirectional
overrides and isolates) becomes U+FFFD, so that an operator sees that something was there and nothing it meant to
do. Lone surrogates (bytes that were not UTF-8) are replaced too: they would make writing to a terminal fail.
:class:`~.safelog.SafeFormatter` applies it to every log record's message (a module of its own: logging is a twentieth
of what ``show`` costs to start, and ``show`` needs only this function).

tests/test_safe_text.py greps the code for the places where text leaves the arena, so that a new one cannot skip it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["REPLACEMENT", "safe_text"]

REPLACEMENT: Final = "\ufffd"
"""What an unsafe character becomes."""

_UNSAFE: Final = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # C0 (BEL, BS, TAB, LF, CR, ESC...), DEL, C1 (CSI, OSC, DCS... in their 8-bit form)
    "\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates; zero widths
    "\u2028\u2029"  # line and paragraph separators
    "\ufeff\ufff9-\ufffb"  # byte order mark, interlinear annotations
    "\ud800-\udfff"  # lone surrogates (undecodable bytes)
    "\U000e0000-\U000e007f"  # tags
    "]"
)


def safe_text(text: str, limit: int | None = 200) -> str:
    """``text`` with every control, escape, bidi-override and line-breaking character replaced by U+FFFD, cut to
    ``limit`` characters (``...`` marks a cut; None: no cut)."""
    if limit is not None and len(text) > limit:
        text = text[:limit] + "..."
    return _UNSAFE.sub(REPLACEMENT, text)
