"""In-process engines for tests and benchmarks: no process, no socket, the same :class:`Transport` interface.

- :class:`ScriptedTransport` follows a script (``expect`` a line, answer with lines): protocol unit tests.
- :class:`InstantEngine` plays like an instant bot (the first empty square, the lowest piece): the scale
  benchmark runs thousands of games in one arena process with it.

Replies arrive on the next turn of the event loop, as a real engine's would, never inside the send.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import time
from collections.abc import Iterable

from quarto_arena.protocol.notation import parse_turn
from quarto_arena.protocol.rules import STANDARD, Position, Turn, Variant
from quarto_arena.protocol.uqi import NewGame, PositionCommand, parse_command

from .base import BadLine, PeerGone, Transcript, Transport

__all__ = ["InstantEngine", "ScriptedTransport"]


class ScriptedTransport(Transport):
    """An in-memory engine that follows a script, for protocol unit tests where no process is needed.

    ``expect(line, replies)`` says that the arena's next line must be ``line`` and that the engine then answers
    ``replies``; ``feed(replies)`` queues replies unprompted; ``hang_up()`` ends the output. A reply may be a
    :class:`BadLine` (an unreadable line) or a :class:`PeerGone` (the end). A line the script did not expect fails
    the test with AssertionError.
    """

    def __init__(self, name: str = "scripted", transcript: Transcript | None = None) -> None:
        super().__init__(name, transcript)
        self._expected: collections.deque[tuple[str, tuple[str | BaseException, ...]]] = collections.deque()
        self._closed = False
        self.sent: list[str] = []
        """Every line the arena sent, in order."""

    def expect(self, line: str, replies: Iterable[str | BaseException] = ()) -> None:
        """The arena must send ``line`` next; the engine answers ``replies``."""
        self._expected.append((line, tuple(replies)))

    def feed(self, replies: Iterable[str | BaseException]) -> None:
        """Queues replies: they arrive on the next turn of the event loop."""
        items = tuple(replies)
        if items:
            asyncio.get_running_loop().call_soon(self._deliver, items)

    def hang_up(self) -> None:
        """The engine goes away: right after the replies to the last expected line (or now), the output ends."""
        end = PeerGone(f"{self.name} closed its output (scripted)")
        if self._expected:
            self._expected.append(("", (end,)))
        else:
            self.feed((end,))

    def assert_done(self) -> None:
        """Fails when expected lines were never sent."""
        assert not self._expected, f"expected lines never sent: {[e[0] for e in self._expected]}"

    @property
    def gone(self) -> bool:
        """True after close or the end of the output."""
        return self._closed or self._ended is not None

    def _deliver(self, items: tuple[str | BaseException, ...]) -> None:
        self.received_at = time.monotonic()  # what the session times a reply by, as for a real engine
        for item in items:
            if isinstance(item, PeerGone):
                self._gone(str(item))
            elif isinstance(item, BadLine):
                self._bad(str(item))
            elif isinstance(item, BaseException):
                raise item
            else:
                self._received(item.encode())

    def _write(self, data: bytes) -> None:
        if self._closed:
            raise PeerGone(f"{self.name} is closed")
        for line in data.decode().split("\n")[:-1]:
            self.sent.append(line)
            self.on_line(line)

    def on_line(self, line: str) -> None:
        """Checks one line the arena sent against the script and answers it (subclasses may accept more)."""
        assert self._expected, f"unexpected line sent: {line!r}"
        want, replies = self._expected.popleft()
        assert line == want, f"expected {want!r}, sent {line!r}"
        self.feed(replies)
        if self._expected and self._expected[0][0] == "":  # a hang-up queued right after this exchange
            self.feed(self._expected.popleft()[1])

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Marks the transport closed (a ``quit`` is recorded in :attr:`sent`, not checked)."""
        if not self._closed and quit:
            self.sent.append("quit")
        self._closed = True


@functools.cache
def _variant_of(newgame: bytes) -> Variant:
    """The variant of a ``newgame`` line (parsed once per distinct line: a Variant is costly to build)."""
    cmd = parse_command(newgame.decode())
    assert isinstance(cmd, NewGame)
    return cmd.variant


class InstantEngine(Transport):
    """An engine inside the arena process that answers every command at once, like an instant bot.

    Its turn is the first empty square and the lowest piece left (or the placement alone when nothing is left to
    give): always legal, never a search. It follows a game by applying only the turns it has not seen yet, so a
    turn costs it a few microseconds.
    """

    def __init__(self, name: str = "instant") -> None:
        super().__init__(name)
        self._loop = asyncio.get_running_loop()
        self._variant = STANDARD
        self._position = Position.start(self._variant)
        self._seen = 0
        self._closed = False

    @property
    def gone(self) -> bool:
        """True after close."""
        return self._closed

    def _write(self, data: bytes) -> None:
        if self._closed:
            raise PeerGone(f"{self.name} is closed")
        replies: list[bytes] = []
        for line in data.split(b"\n")[:-1]:
            word = line[:3]
            if word == b"pos":
                self._follow(line.decode())
            elif word == b"go ":
                replies.append(b"turn " + self._choose().encode())
            elif word == b"isr":
                replies.append(b"readyok")
            elif word == b"uqi":
                replies += (b"id name " + self.name.encode(), b"uqiok 1")
            elif word == b"new":
                self._variant = _variant_of(line)
        if replies:
            self._loop.call_soon(self._answer, replies)

    def _answer(self, replies: list[bytes]) -> None:
        if not self._closed:
            for reply in replies:
                self._received(reply)

    def _follow(self, line: str) -> None:
        words = line.split()
        if words[1] != "startpos":
            cmd = parse_command(line)
            assert isinstance(cmd, PositionCommand)
            self._position, self._seen = cmd.position(self._variant), -1
            return
        tokens = words[3:]
        if self._seen < 0 or len(tokens) < self._seen or len(tokens) == 0:
            self._position, self._seen = Position.start(self._variant), 0
        position = self._position
        for token in tokens[self._seen :]:
            position = position.apply(parse_turn(token))
        self._position, self._seen = position, len(tokens)

    def _choose(self) -> str:
        p = self._position
        available = p.available
        give = (available & -available).bit_length() - 1 if available else None
        if p.hand is None:
            return Turn(give=give).token
        free = ~p.occupied & 0xFFFF
        square = (free & -free).bit_length() - 1
        return Turn(square, None if p.wins_at(square) else give).token

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """Ends the engine."""
        self._closed = True
