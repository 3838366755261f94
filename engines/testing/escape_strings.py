"""Hostile bot: every string it chooses is a terminal attack (SPEC §6: what an engine says is shown safely).

``python -m quarto_arena.engines.testing.escape_strings WHERE`` puts escape sequences (an OSC window title, a
clear screen, the alternate screen, a bell, a carriage return, a bidi override, 8-bit CSI) in:

- ``play``: ``id name``, ``id author``, an ``error`` line on each go, then a legal turn;
- ``newgame``: ``id name``, then refuses every ``newgame`` with an ``error`` line;
- ``uqi``: answers ``uqi`` with an ``error`` line;
- ``malformed``: answers ``go`` with a malformed turn line.
"""

from __future__ import annotations

import sys
from typing import Final

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot

ATTACK: Final = "\x1b]0;pwned\x07\x1b[2J\x1b[?1049h\x07\rX\u202eevil\x9b31m\x1bP1$r\x1b\\"
"""The escape sequences every string carries."""


class EscapeStrings(MinimalBot):
    """Plays legally, but says escape sequences wherever it chooses the words."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where
        self.name = f"esc{ATTACK}name"

    def on_uqi(self) -> None:
        if self.where == "uqi":
            self.send(f"error uqi {ATTACK}")
            return
        self.send(f"id name {self.name}")
        self.send(f"id author {ATTACK}")
        self.send("uqiok 1")

    def handle(self, line: str) -> None:
        if self.where == "newgame" and line.startswith("newgame"):
            self.send(f"error newgame unsupported {ATTACK}")
            return
        super().handle(line)

    def on_go(self, go: Go) -> None:
        if self.where == "malformed":
            self.send(f"turn {ATTACK}")
            return
        self.send(f"error {ATTACK}")
        super().on_go(go)


def main() -> None:
    """Runs the bot on stdin/stdout; the argument says where the escapes go."""
    EscapeStrings(sys.argv[1] if len(sys.argv) > 1 else "play").run()


if __name__ == "__main__":
    main()
