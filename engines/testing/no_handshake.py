"""Broken bot: answers ``uqi`` with ``id name`` but never sends ``uqiok``.

It keeps reading (and exits on ``quit`` or end of input), so only the missing end of the handshake is wrong.
The arena must give up at its start-up deadline (``stall``) and kill the process group.
"""

from __future__ import annotations

from ._base import MinimalBot


class NoHandshake(MinimalBot):
    """Never ends the handshake."""

    name = "NoHandshake"

    def on_uqi(self) -> None:
        """Identifies itself and stops there."""
        self.send(f"id name {self.name}")


def main() -> None:
    """Runs the bot on stdin/stdout."""
    NoHandshake().run()


if __name__ == "__main__":
    main()
