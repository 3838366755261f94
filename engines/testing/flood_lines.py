"""Hostile bot: floods the arena with one kind of line for a while, then plays on.

    python -m quarto_arena.engines.testing.flood_lines KIND [SECONDS]

``KIND`` is ``info`` (progress lines), ``error`` (error lines), ``garbage`` (lines that are no UQI reply) or
``stderr`` (standard error) — sent on the first ``go`` for ``SECONDS`` (default 5) before the turn, and on every
later ``go`` for a moment (a megabyte of standard error) — or ``option`` (distinct option declarations in the
handshake, for ``SECONDS`` before ``uqiok``).
The arena's memory must stay bounded whatever the kind: it keeps a short tail of error lines, rate-limits its
warnings, refuses more than 128 options, and caps the engine's log.
"""

from __future__ import annotations

import sys
import time

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot

_LINES = {
    "info": b"info depth 3 seldepth 5 score value 17 nodes 123456 nps 999999 time 5 pv a1b c2d d3e\n",
    "error": b"error go this engine complains about everything, over and over again, as loudly as it can\n",
    "garbage": b"this is not a reply the protocol knows and it will keep coming for a good while yet\n",
    "stderr": b"a very chatty engine writes its whole search tree to standard error, line after line\n",
}


class FloodLines(MinimalBot):
    """Floods one kind of line."""

    name = "FloodLines"

    def __init__(self, kind: str, seconds: float) -> None:
        super().__init__()
        if kind not in (*_LINES, "option"):
            raise SystemExit(f"flood_lines: unknown kind {kind!r}")
        self.kind = kind
        self.seconds = seconds

    def _flood(self, chunk: bytes, seconds: float) -> None:
        out = sys.stderr.buffer if self.kind == "stderr" else sys.stdout.buffer
        end = time.monotonic() + seconds
        written = 0
        try:
            while time.monotonic() < end or (self.kind == "stderr" and written < 1 << 20):
                out.write(chunk)
                out.flush()
                written += len(chunk)
        except OSError:
            self.exit(1)

    def on_uqi(self) -> None:
        """With ``option``: declares options for the whole flood time before ``uqiok``."""
        if self.kind != "option":
            super().on_uqi()
            return
        self.send(f"id name {self.name}")
        out = sys.stdout.buffer
        end = time.monotonic() + self.seconds
        n = 0
        try:
            while time.monotonic() < end:
                out.write(
                    b"".join(
                        b"option name Opt%d type spin min 0 max 9 default %d\n" % (n + i, i % 10) for i in range(1000)
                    )
                )
                out.flush()
                n += 1000
        except OSError:
            self.exit(1)
        self.send("uqiok 1")

    def on_go(self, go: Go) -> None:
        """Floods, then answers."""
        if self.kind != "option":
            self._flood(_LINES[self.kind] * 512, self.seconds if self.gos == 1 else 0.0)
        super().on_go(go)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    args = sys.argv[1:]
    if not args:
        raise SystemExit("usage: flood_lines KIND [SECONDS]")
    FloodLines(args[0], float(args[1]) if len(args) > 1 else 5.0).run()


if __name__ == "__main__":
    main()
