"""The control lines of bots that connect in (SPEC §3.4): pure functions, no I/O (and no ZeroMQ to import).

A bot's client and an arena that serves exchange messages of exactly two frames, a *channel* and a *line*. The empty
channel is the connection's own: it carries the control lines below. Channel ``K`` (``1``, ``2``, ...) is slot K: it
carries the UQI lines of the session on that slot, exactly as in SPEC §3.3.

Client to arena: ``hello version 1 slots N name NAME``, ``ready K``, ``ended K [TEXT...]``, ``leaving``.
Arena to client: ``welcome version 1 slots N``, ``refused TEXT...``, ``begin K``, ``kill K``, ``bye TEXT...``,
``goodbye TEXT...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .errors import ExitStatus, QuartoError
from .uqi import MAX_LINE_BYTES, PROTOCOL_VERSION

__all__ = [
    "CONTROL",
    "MAX_CHANNEL_BYTES",
    "Begin",
    "Bye",
    "ConnectError",
    "Control",
    "Ended",
    "Goodbye",
    "Hello",
    "Kill",
    "Leaving",
    "Ready",
    "Refused",
    "Welcome",
    "format_channel",
    "format_control",
    "parse_channel",
    "parse_control",
]

CONTROL: Final = b""
"""The channel of the connection's own control lines."""
MAX_CHANNEL_BYTES: Final = 8
"""A channel frame is at most this long (a slot number)."""
_MAX_SLOT: Final = 10**6


class ConnectError(QuartoError, ValueError):
    """A frame or control line that breaks SPEC §3.4. The message names the problem."""

    status = ExitStatus.ENGINE
    reason = "connect"


@dataclass(frozen=True, slots=True)
class Hello:
    """The client's first message: who it is and how many sessions it can run at once."""

    name: str
    """The bot's name (with keys, the name of its key)."""
    slots: int
    """Sessions it can run at once, one engine each."""
    version: int = PROTOCOL_VERSION
    """The UQI version it speaks."""


@dataclass(frozen=True, slots=True)
class Welcome:
    """The arena accepts the connection; every slot is free."""

    slots: int
    """The slots the arena will use."""
    version: int = PROTOCOL_VERSION
    """The UQI version of the sessions."""


@dataclass(frozen=True, slots=True)
class Refused:
    """The arena turns the connection down for good (then closes it): retrying cannot help."""

    text: str
    """Why."""


@dataclass(frozen=True, slots=True)
class Begin:
    """The arena starts a session on a free slot: UQI lines follow on that slot's channel."""

    slot: int


@dataclass(frozen=True, slots=True)
class Ready:
    """The client's slot has ended its last session and a clean engine can take the next one."""

    slot: int


@dataclass(frozen=True, slots=True)
class Ended:
    """The client ended the session on a slot from its side (the engine exited); ``ready`` follows."""

    slot: int
    text: str = ""
    """How (``exit code 1``), if known."""


@dataclass(frozen=True, slots=True)
class Bye:
    """The arena cuts the connection because the client broke a limit; the client may connect again."""

    text: str


@dataclass(frozen=True, slots=True)
class Kill:
    """The arena ends slot K's session as it kills a local engine (the engine broke a limit, or the game was cut
    short mid-search): the slot's next session needs a fresh engine. ``quit`` on the slot follows."""

    slot: int


@dataclass(frozen=True, slots=True)
class Leaving:
    """The client takes no new sessions: it finishes the ones running, then disconnects."""


@dataclass(frozen=True, slots=True)
class Goodbye:
    """No session will begin on this connection any more (the run is over, or the client said ``leaving``)."""

    text: str


Control = Hello | Welcome | Refused | Begin | Ready | Ended | Bye | Kill | Leaving | Goodbye
"""Any control line."""


def format_channel(slot: int | None) -> bytes:
    """The channel frame of slot ``slot`` (None: the control channel)."""
    return CONTROL if slot is None else str(slot).encode("ascii")


def parse_channel(frame: bytes) -> int | None:
    """The slot a channel frame names (None for the control channel); raises :class:`ConnectError`."""
    if frame == CONTROL:
        return None
    if len(frame) > MAX_CHANNEL_BYTES or not frame.isdigit() or frame.startswith(b"0"):
        raise ConnectError(f"channel {frame[:MAX_CHANNEL_BYTES]!r} is neither empty nor a slot number")
    return int(frame)


def format_control(message: Control) -> str:
    """The line of a control message."""
    match message:
        case Hello(name, slots, version):
            return f"hello version {version} slots {slots} name {name}"
        case Welcome(slots, version):
            return f"welcome version {version} slots {slots}"
        case Refused(text):
            return f"refused {text}"
        case Begin(slot):
            return f"begin {slot}"
        case Ready(slot):
            return f"ready {slot}"
        case Ended(slot, text):
            return f"ended {slot} {text}".rstrip()
        case Bye(text):
            return f"bye {text}"
        case Kill(slot):
            return f"kill {slot}"
        case Leaving():
            return "leaving"
        case Goodbye(text):
            return f"goodbye {text}".rstrip()


def _number(word: str, what: str, line: str) -> int:
    if not word.isdigit() or len(word) > 7:
        raise ConnectError(f"{what} {word[:20]!r} is not a number in {line[:60]!r}")
    return int(word)


def _slot(word: str, line: str) -> int:
    slot = _number(word, "slot", line)
    if not 1 <= slot <= _MAX_SLOT:
        raise ConnectError(f"slot {slot} out of range in {line[:60]!r}")
    return slot


def parse_control(line: str) -> Control:
    """Parses a control line (either direction); raises :class:`ConnectError` naming what is wrong."""
    if len(line.encode("utf-8", "surrogateescape")) > MAX_LINE_BYTES:
        raise ConnectError(f"control line longer than {MAX_LINE_BYTES} bytes")
    words = line.split(maxsplit=2)
    if not words:
        raise ConnectError("empty control line")
    word, rest = words[0], line.split(maxsplit=1)[1] if len(words) > 1 else ""
    match word:
        case "hello" | "welcome":
            fields = rest.split(maxsplit=5)
            keys = ["version", "slots"] + (["name"] if word == "hello" else [])
            if len(fields) != 2 * len(keys) or fields[0::2] != keys:
                expected = " ".join(f"{k} {k.upper()}" for k in keys)
                raise ConnectError(f"expected '{word} {expected}', got {line[:80]!r}")
            version = _number(fields[1], "version", line)
            slots = _number(fields[3], "slots", line)
            if word == "welcome":
                return Welcome(slots, version)
            name = fields[5]
            if any(c.isspace() for c in name):
                raise ConnectError(f"the name {name[:40]!r} holds white space")
            return Hello(name, slots, version)
        case "refused" | "bye":
            return Refused(rest) if word == "refused" else Bye(rest)
        case "goodbye":
            return Goodbye(rest)
        case "leaving":
            if len(words) != 1:
                raise ConnectError(f"expected 'leaving', got {line[:80]!r}")
            return Leaving()
        case "begin" | "ready" | "kill":
            if len(words) != 2:
                raise ConnectError(f"expected '{word} SLOT', got {line[:80]!r}")
            slot = _slot(words[1], line)
            return Begin(slot) if word == "begin" else Ready(slot) if word == "ready" else Kill(slot)
        case "ended":
            if len(words) < 2:
                raise ConnectError(f"expected 'ended SLOT [TEXT]', got {line[:80]!r}")
            return Ended(_slot(words[1], line), words[2] if len(words) > 2 else "")
    raise ConnectError(f"unknown control line {line[:80]!r}")
