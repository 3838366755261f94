"""A minimal but correct UQI engine over stdio that each broken bot bends in exactly one place.

The broken bots subclass :class:`MinimalBot` and override one hook, so every fault test exercises one fault and
nothing else. Turns are chosen with the rules core: a win when there is one, else a gift that does not lose at
once, so a game against a sensible opponent lasts long enough for the fault to show.
"""

from __future__ import annotations

import os
import random
import sys
from typing import NoReturn

from quarto_arena.protocol.rules import Outcome, Position, Turn, Variant
from quarto_arena.protocol.uqi import (
    Go,
    IsReady,
    NewGame,
    PositionCommand,
    Quit,
    SetOption,
    Stop,
    Uqi,
    UqiError,
    parse_command,
)


class MinimalBot:
    """Speaks UQI correctly; the hooks ``on_*`` are what the broken bots override."""

    name = "MinimalBot"
    """The ``id name`` sent in the handshake."""

    def __init__(self) -> None:
        self.variant = Variant()
        self.position: Position | None = Position.start(self.variant)
        self.gos = 0
        """How many ``go`` commands arrived so far in this process."""
        self.held: Turn | None = None
        """The turn of a ``go infinite``, sent when ``stop`` comes (SPEC §4.5); while one is held, a search runs."""
        # Seeded by QUARTO_ARENA_BOT_SEED when set (tests that hold two builds of the arena to the same games).
        self.rng = random.Random(os.environ.get("QUARTO_ARENA_BOT_SEED"))

    # --- I/O ---------------------------------------------------------------------------------------------------

    def send(self, line: str) -> None:
        """Writes one line and flushes (SPEC 3.2)."""
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def run(self) -> None:
        """Reads commands until end of input or ``quit``; a line that is not UTF-8 is read with its bad bytes
        replaced, so that it is answered with an ``error`` line like any line not understood (SPEC §3.1)."""
        self.on_start()
        while True:
            line = sys.stdin.buffer.readline().decode("utf-8", "replace")
            if not line:
                self.on_eof()
                return
            if line.strip():
                self.handle(line.strip())

    def handle(self, line: str) -> None:
        """Dispatches one command line to its hook."""
        try:
            cmd = parse_command(line)
        except UqiError as e:
            if line.split()[0] == "position":
                self.position = None  # SPEC §4.4: after an invalid position, none is held
            self.send(f"error {e}")
            return
        if self.held is not None and isinstance(cmd, SetOption | NewGame | PositionCommand | Go):
            self.send(f"error {line.split()[0]} a search is running (send stop first)")  # SPEC §4.10
            return
        match cmd:
            case Uqi():
                self.held = None  # a new session abandons the search without its turn
                self.on_uqi()
            case IsReady():
                self.on_isready()
            case SetOption(name):
                self.send(f"error setoption unknown option {name}")
            case NewGame(variant):
                self.variant = variant
                self.position = Position.start(variant)
            case PositionCommand():
                try:
                    self.position = cmd.position(self.variant)
                except ValueError as e:
                    self.position = None
                    self.send(f"error position {e}")
            case Go():
                self.gos += 1
                self.on_go(cmd)
            case Stop():
                # Every search here ends before the next line is read, except the held one of a go infinite.
                if self.held is not None:
                    self.send(f"turn {self.held}")
                    self.held = None
            case Quit():
                self.on_quit()

    # --- hooks -------------------------------------------------------------------------------------------------

    def on_start(self) -> None:
        """Called once before the first line is read."""

    def on_uqi(self) -> None:
        """Answers the handshake."""
        self.send(f"id name {self.name}")
        self.send("id author quarto-arena tests")
        self.send("uqiok 1")

    def on_isready(self) -> None:
        """Answers ``isready``."""
        self.send("readyok")

    def on_go(self, go: Go) -> None:
        """Answers ``go`` with one turn."""
        if self.position is None or self.position.is_over:
            self.send("error go no position to search")
            return
        turn = self.choose(self.position)
        if go.infinite:
            self.held = turn
        else:
            self.send(f"turn {turn}")

    def on_quit(self) -> None:
        """``quit``: exit at once."""
        self.exit(0)

    def on_eof(self) -> None:
        """End of input: exit (returning from :meth:`run` ends the process)."""

    # --- play --------------------------------------------------------------------------------------------------

    def choose(self, position: Position) -> Turn:
        """A winning turn if there is one, else a random turn that gives the opponent no immediate win."""
        turns = position.legal_turns()
        wins = [t for t in turns if position.apply(t).outcome is Outcome.WIN]
        if wins:
            return self.rng.choice(wins)
        safe = [t for t in turns if not _loses_at_once(position.apply(t))]
        return self.rng.choice(safe or turns)

    def exit(self, status: int) -> NoReturn:
        """Exits with ``status`` after flushing stdout."""
        sys.stdout.flush()
        sys.exit(status)


def _loses_at_once(after: Position) -> bool:
    """True when the opponent, to move in ``after``, can win with their very next turn."""
    if after.is_over:
        return False
    return after.claimable or (after.hand is not None and bool(after.winning_squares()))
