"""SPEC §3.1's line limit at its edge, through a real engine process: 4,096 bytes is a line, 4,097 is not."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest
from quarto_arena.arena.engine import Deadlines, EngineConfig, EngineSession
from quarto_arena.arena.records import Termination
from quarto_arena.protocol.uqi import MAX_LINE_BYTES

#: An engine whose reply to go is one line of exactly SIZE bytes (before its terminator END), then a turn.
LONG_LINE_BOT = textwrap.dedent(
    """
    import sys
    size, end = int(sys.argv[1]), sys.argv[2].encode().decode("unicode_escape").encode()
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        word = line.split()[0] if line.split() else b""
        if word == b"uqi":
            out.write(b"id name Long\\nuqiok 1\\n")
        elif word == b"isready":
            out.write(b"readyok\\n")
        elif word == b"go":
            head = b"info string "
            out.write(head + b"x" * (size - len(head)) + end + b"turn 0\\n")
        elif word == b"quit":
            break
        out.flush()
    """
)

FAST = Deadlines(startup=10, ready=5, newgame=5, quit=1, safety=10)


@pytest.mark.parametrize(
    ("size", "end", "termination"),
    [
        (MAX_LINE_BYTES, "\\n", None),
        (MAX_LINE_BYTES, "\\r\\n", None),  # the optional carriage return is not part of the line
        (MAX_LINE_BYTES + 1, "\\n", Termination.MALFORMED_REPLY),
        (MAX_LINE_BYTES + 1, "\\r\\n", Termination.MALFORMED_REPLY),
    ],
)
def test_a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_malformed(
    tmp_path: Path, size: int, end: str, termination: Termination | None
) -> None:
    bot = tmp_path / "long_line.py"
    bot.write_text(LONG_LINE_BOT)
    session = EngineSession(EngineConfig("long", command=(sys.executable, str(bot), str(size), end)), deadlines=FAST)

    async def main() -> tuple[object, object]:
        await session.start()
        try:
            out = await session.search("position startpos", "go movetime 1000", 2.0)
            return out.turn, out.termination
        finally:
            await session.kill()

    turn, got = asyncio.run(main())
    assert got is termination
    assert (str(turn) == "0") is (termination is None)
