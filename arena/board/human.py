"""The person at the board, as the transport of an engine session.

A game against a person is played by :func:`~quarto_arena.arena.referee.play_game` like any other: the person's
side is an :class:`~quarto_arena.arena.engine.EngineSession` over a :class:`HumanTransport`, which answers the
handshake, ``isready`` and ``newgame`` at once, and answers ``go`` with the turn the person clicks on the page
(:meth:`HumanTransport.answer`). So the referee keeps the person's clock as an engine's (a person under a time
control loses on time as an engine does), checks the turn with the rules core, and records it; nothing of the
referee's is written again here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

from quarto_arena.protocol.uqi import PROTOCOL_VERSION

from ..transport import PeerGone, Transport

__all__ = ["HUMAN", "HUMAN_SOURCE", "HumanTransport"]

HUMAN: Final = "human"
"""The person's name in records and on the page."""
HUMAN_SOURCE: Final = "the person at the board"
"""What records say ran the person's side (an engine's command line, in the PGN's ``WhiteCommand`` tag)."""
_HELLO: Final = (f"id name {HUMAN}", f"id author {HUMAN_SOURCE}", f"uqiok {PROTOCOL_VERSION}")


class HumanTransport(Transport):
    """Lines to and from the person at the board: the handshake and the pings are answered at once (on the next
    turn of the event loop, as a process's answers come); a ``go`` waits for :meth:`answer`."""

    def __init__(self, name: str = HUMAN, on_asked: Callable[[], None] = lambda: None) -> None:
        """``on_asked`` is called (on the event loop) when a ``go`` arrives: the page is to ask the person."""
        super().__init__(name)
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self._on_asked = on_asked
        self.asked = False
        """True from a ``go`` until the person's turn is answered (or the game ends)."""
        self.asked_at = 0.0
        """``time.monotonic()`` of the last ``go``."""

    @property
    def gone(self) -> bool:
        """True once closed (the game ended, or the person lost it)."""
        return self._closed

    def _write(self, data: bytes) -> None:
        if self._closed:
            raise PeerGone(f"{self.name} has left the game")
        replies: list[str] = []
        for line in data.decode("utf-8").split("\n"):
            word = line.split(" ", 1)[0]
            if word == "uqi":
                replies.extend(_HELLO)
            elif word == "isready":
                replies.append("readyok")
            elif word == "go":
                self.asked, self.asked_at = True, time.monotonic()
                self._loop.call_soon(self._on_asked)
            # position, newgame, setoption, stop: nothing to answer (a person's turn comes when it is clicked)
        if replies:
            self._loop.call_soon(self._answer, replies)

    def _answer(self, replies: list[str]) -> None:
        if not self._closed:
            self.received_at = time.monotonic()
            for reply in replies:
                self._received(reply.encode())

    def answer(self, token: str) -> None:
        """The person's turn (a token the caller has checked is legal): the ``turn`` line of the running search.

        Raises RuntimeError when no ``go`` waits for one (the caller checks :attr:`asked` first)."""
        if not self.asked or self._closed:
            raise RuntimeError("no search waits for the person's turn")
        self.asked = False
        self.received_at = time.monotonic()  # the person's clock stops here, as an engine's at its line's arrival
        self._received(f"turn {token}".encode())

    async def close(self, *, grace: float = 1.0, quit: bool = True) -> None:
        """The person leaves the game (its end, a forfeit, or the board stopping)."""
        self._closed = True
        self.asked = False
