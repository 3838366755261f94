"""Broken bot: an invalid ``position`` (a piece twice, an illegal turn, ``STARTPOS``) kills it with a traceback.

The bug of a bot that trusts every ``position`` it reads: SPEC §4.4 wants ``error position ...``, no position held,
and the next valid position served as usual. It plays correctly otherwise.
"""

from __future__ import annotations

from quarto_arena.protocol.uqi import PositionCommand, UqiError, parse_command

from ._base import MinimalBot


class CrashOnInvalidPosition(MinimalBot):
    """Lets the rules' exception escape on a position it cannot build."""

    name = "CrashOnInvalidPosition"

    def handle(self, line: str) -> None:
        """A ``position`` is built without a guard: a bad one raises out of the bot (exit status 1)."""
        if line.split()[0] == "position" and self.held is None:
            try:
                cmd = parse_command(line)
            except UqiError as e:
                raise SystemExit(f"Traceback (most recent call last): ... UqiError: {e}") from None
            assert isinstance(cmd, PositionCommand)
            self.position = cmd.position(self.variant)  # raises IllegalTurn: the bot dies
            return
        super().handle(line)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    CrashOnInvalidPosition().run()


if __name__ == "__main__":
    main()
