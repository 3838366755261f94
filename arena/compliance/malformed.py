"""Step 20 of the check: lines an arena never sends, which SPEC asks an engine to refuse with an ``error`` line and
survive (all *shoulds*: rules added since UQI 1 was first published, for inputs no game produces)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from quarto_arena.protocol.uqi import ErrorReply, Info, ReadyOk

from ..timecontrol import SearchClock
from .checker import Checker, quoted, read_reply
from .steps import await_readyok

MALFORMED_UQI: Final = ("uqi 0", "uqi one", "uqi 1 extra")
"""A version below 1, one that is not digits, a word too many: ``error uqi ...`` and no handshake (SPEC §4.1)."""
EXTRA_WORDS: Final = ("isready now", "stop now")
"""Known commands with a word they do not take: malformed (SPEC §4.9)."""
NOT_UTF8: Final = b"\xff\xfe\xc3\x28\n"
"""A line that is not UTF-8 (SPEC §3.1)."""


async def _collect(ck: Checker, what: str, lines: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Sends ``lines`` (if any), then ``isready``; returns the ``error`` lines and the other replies (a handshake, a
    turn: anything but ``info``) that came before ``readyok``."""
    await ck.session.send(*lines, "isready")
    deadline = SearchClock.started(ck.timeouts.ready)
    errors: list[str] = []
    others: list[str] = []
    while True:
        line = await ck.session.read(deadline, f"readyok after {what}")
        match read_reply(ck, line, f"after {what}"):
            case ReadyOk():
                return errors, others
            case ErrorReply():
                errors.append(line)
            case Info() | None:
                pass
            case _:
                others.append(line)


async def step_malformed(ck: Checker) -> None:
    """20. Should: a malformed ``uqi`` (§4.1), a known command with a word it does not take (§4.9) and a line that is
    not UTF-8 (§3.1) each get an ``error`` line and change nothing; the engine carries on."""
    for line in MALFORMED_UQI:
        errors, others = await _collect(ck, quoted(line), [line])
        if others:
            ck.warn("§4.1", f"answered the malformed {quoted(line)} with {quoted(others[0])}, not 'error uqi ...'")
        elif not errors:
            ck.warn("§4.1", f"no error line for the malformed {quoted(line)}")
    for line in EXTRA_WORDS:
        errors, others = await _collect(ck, quoted(line), [line])
        if not errors:
            ck.warn("§4.9", f"no error line for {quoted(line)}: a command with a word it does not take is malformed")
        if not errors and line.startswith("isready"):
            await await_readyok(ck, "to 'isready' (the one read was the answer to 'isready now')")
    await ck.session.send_bytes(NOT_UTF8)
    errors, _ = await _collect(ck, f"the line {NOT_UTF8[:-1]!r}, which is not UTF-8")
    if not errors:
        ck.warn("§3.1", f"no error line for the line {NOT_UTF8[:-1]!r}, which is not UTF-8")
