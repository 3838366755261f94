"""Yesterday's bots: engines that follow an earlier published text of SPEC.md where a rule was added since, for an
input an arena never sends. Each plays correctly and passes ``quarto-arena check`` (with warnings naming the sections
of the shoulds it misses); ``--strict`` fails it. UQI 1 is frozen for bots: a test keeps them passing.

Run one with ``python -m quarto_arena.engines.testing.yesterday NAME`` (:func:`quarto_arena.engines.testing.command`
does it). Each bot follows one reading of :data:`READINGS` and is named after it; ``every_should_wrong`` follows them
all and gets every other should wrong as well: the bot that answers every should wrongly and still plays every game
correctly.
"""

from __future__ import annotations

import sys
import time
from typing import Final

from quarto_arena.protocol.notation import parse_position
from quarto_arena.protocol.rules import IllegalTurn, Position, Turn, turn_of
from quarto_arena.protocol.uqi import Go, PositionCommand, UqiError, parse_command

from . import YESTERDAY
from ._base import MinimalBot

READINGS: Final[dict[str, str]] = {
    "winning_give": "UQI 1 §1.1 (2026-11-25): the piece given with a winning placement is ignored, any piece; so"
    " 'turns d10' (0 on the board) ends the game, and go gets 'error go the game is over: a placement won'",
    "keeps_position": "UQI 1 §4.4 says nothing of an invalid position: the last valid one stays, and go searches it",
    "any_uqi": "UQI 1 §4.1 ('uqi [VERSION]') says nothing of a malformed uqi: every uqi line is answered with the"
    " handshake; nor of extra words: 'isready now' is isready",
    "fields_in_order": "SPEC of 2026-11-25 22:23 §4.3: the newgame fields come 'in this order': another is refused",
    "lax_values": "UQI 1 §4.2 and §4.5: the arena checks values, so the engine does not: a combo value is compared"
    " as written, a spin is clamped into its range, 'go depth 0' searches one turn",
    "silent_lines": "UQI 1 §3.1: no line is longer than 4096 bytes, and every line is UTF-8, so a line that is not"
    " is dropped without a word",
    "serves_during_search": "before §4.10 (2026-11-26): during a held 'go infinite' every command is served as at any"
    " other time",
    "no_movestogo": "before movestogo (2026-11-26 12:17): 'go ... movestogo N' has an unknown limit and is refused",
    "banner": "UQI 1 §5.5 (2026-11-25): a line that is no reply is logged outside a search, and the arena waits for"
    " the reply still due; so the bot greets 'uqi' with a banner line before its handshake",
}
"""Reading -> what a bot that follows it does, and the text it follows."""

_EXTRA: Final = frozenset({"noisy_stop", "odd_errors", "lax_newgame", "slow_movetime"})
"""What ``every_should_wrong`` gets wrong beyond the readings: an ``error`` for an idle ``stop`` (§4.6), its own error
texts (§5.4), a malformed ``newgame`` taken as the standard game (§4.3), 80 % of a ``movetime`` spent (§4.5)."""

_REFUSED_DURING_SEARCH: Final = frozenset({"position", "go", "newgame", "setoption"})
STYLE: Final = "Style"
LEVEL: Final = "Level"


class Yesterday(MinimalBot):
    """MinimalBot with the ``readings`` of :data:`READINGS` (and :data:`_EXTRA` for ``every_should_wrong``)."""

    def __init__(self, readings: frozenset[str]) -> None:
        super().__init__()
        self.readings = readings
        self.name = "Yesterday " + "+".join(sorted(readings))
        self.style = "calm"
        self.level = 3

    def has(self, reading: str) -> bool:
        return reading in self.readings

    def run(self) -> None:
        """Reads byte lines: a line over 4096 bytes or not UTF-8 is dropped silently with ``silent_lines``."""
        self.on_start()
        for raw in iter(sys.stdin.buffer.readline, b""):
            data = raw.rstrip(b"\r\n")
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError:
                if self.has("silent_lines"):
                    continue
                line = data.decode("utf-8", "replace")
            if len(data) > 4096 and self.has("silent_lines"):
                continue
            if line.strip():
                self.handle(line.strip())
        self.on_eof()

    def send(self, line: str) -> None:
        if self.has("odd_errors") and line.startswith("error "):
            line = "error huh?"
        super().send(line)

    def on_uqi(self) -> None:
        if self.has("banner"):
            self.send(f"{self.name}, (c) 2026: ready to play")
        self.send(f"id name {self.name}")
        if self.has("lax_values"):
            self.send(f"option name {STYLE} type combo var calm var wild default calm")
            self.send(f"option name {LEVEL} type spin min 1 max 5 default 3")
        self.send("uqiok 1")

    def handle(self, line: str) -> None:
        words = line.split()
        command = words[0]
        if self.has("any_uqi") and command == "uqi":
            self.held = None
            self.on_uqi()
            return
        if self.has("any_uqi") and command in ("isready", "stop", "quit") and len(words) > 1:
            self.handle(command)
            return
        if self.has("noisy_stop") and line == "stop" and self.held is None:
            self.send("error stop: no search is running")
            return
        if self.has("no_movestogo") and command == "go" and "movestogo" in words:
            self.send("error go unknown limit movestogo")
            return
        if self.has("lax_values") and command == "go" and words[1:] == ["depth", "0"]:
            line = "go depth 1"
        if self.has("lax_values") and command == "setoption":
            self.set_option(words)
            return
        if self.held is not None and self.has("serves_during_search") and command in _REFUSED_DURING_SEARCH:
            held, self.held = self.held, None  # served as at any other time
            self.handle(line)
            if command != "go":  # a new search replaces the held one; anything else leaves it
                self.held = self.held or held
            return
        if command == "newgame" and self.answer_newgame(words):
            return
        if command == "position" and self.held is None:
            self.set_position(line)
            return
        super().handle(line)

    def set_option(self, words: list[str]) -> None:
        name = words[2] if len(words) > 2 else ""
        value = words[4] if len(words) > 4 else ""
        if name.lower() == STYLE.lower() and value in ("calm", "wild"):  # as written: 'CALM' is refused
            self.style = value
        elif name.lower() == LEVEL.lower() and value.lstrip("-").isdigit():
            self.level = min(max(int(value), 1), 5)
        else:
            self.send(f"error setoption cannot set {name[:40]} to {value[:40]}")

    def answer_newgame(self, words: list[str]) -> bool:
        """True when the line was answered here (refused, or taken as the standard game)."""
        fields = words[1::2]
        written = ["shapes", "attributes", "claims"]
        if self.has("fields_in_order") and sorted(fields) == sorted(written) and fields != written:
            self.send("error newgame the fields go in the order shapes, attributes, claims")
            return True
        if self.has("lax_newgame"):
            try:
                parse_command(" ".join(words))
            except UqiError:
                self.handle("newgame shapes standard attributes color,shape,height,fill claims auto")
                return True
        return False

    def set_position(self, line: str) -> None:
        try:
            cmd = parse_command(line)
            assert isinstance(cmd, PositionCommand)
            self.position = self.replay(cmd)
        except (UqiError, ValueError) as e:
            if not self.has("keeps_position"):
                self.position = None
            self.send(f"error position {e}")

    def replay(self, cmd: PositionCommand) -> Position:
        """The position after the turns; with ``winning_give`` a winning placement's give is dropped, whatever it."""
        position = Position.start(self.variant) if cmd.start is None else parse_position(cmd.start, self.variant)
        for turn in cmd.turns:
            try:
                position = position.apply(turn)
            except IllegalTurn:
                if not self.has("winning_give") or not self.wins(position, turn):
                    raise
                position = position.apply(turn_of(place=turn.place))
        return position

    def wins(self, position: Position, turn: Turn) -> bool:
        return (
            not self.variant.strict
            and turn.place is not None
            and position.hand is not None
            and position.wins_at(turn.place)
        )

    def on_go(self, go: Go) -> None:
        if self.position is not None and self.position.is_over and self.has("winning_give"):
            self.send("error go the game is over: a placement won")
            return
        playable = self.position is not None and not self.position.is_over
        if self.has("slow_movetime") and go.movetime is not None and go.time is None and playable:
            time.sleep(0.8 * go.movetime / 1000)
        super().on_go(go)


def bot(name: str) -> Yesterday:
    """Yesterday's bot ``name`` (a key of :data:`~quarto_arena.engines.testing.YESTERDAY`)."""
    return Yesterday(frozenset(READINGS) | _EXTRA if name == "every_should_wrong" else frozenset({name}))


def main() -> None:
    """Runs yesterday's bot named on the command line."""
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in YESTERDAY:
        sys.exit(f"usage: python -m quarto_arena.engines.testing.yesterday NAME; NAME: {', '.join(YESTERDAY)}")
    bot(name).run()


if __name__ == "__main__":
    main()
