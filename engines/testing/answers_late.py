"""Hostile-but-legal bot: answers every ``go movetime N`` as late as it may, at N (or the time left on its clock, when
less) minus one millisecond.

    python -m quarto_arena.engines.testing.answers_late [EARLY_MS]

It measures its own time from the moment the ``go`` line was read and writes the turn ``EARLY_MS`` (default 1)
before ``movetime`` ends, sleeping most of the wait and spinning the last milliseconds. Within the arena's time
margin, it must never lose on time, however loaded the machine is.
"""

from __future__ import annotations

import sys
import time

from quarto_arena.protocol.uqi import Go

from ._base import MinimalBot


class AnswersLate(MinimalBot):
    """Uses its whole time."""

    name = "AnswersLate"

    def __init__(self, early_ms: float) -> None:
        super().__init__()
        self.early = early_ms / 1000

    def on_go(self, go: Go) -> None:
        """Waits until ``movetime`` (or the clock's ``time`` left, when less) minus the early margin, then answers."""
        if go.movetime is not None:
            # As late as it may: a movetime beyond the time left on the clock would lose a game on time (check's step
            # 6 sends both; taking the movetime there left 150 ms to its deadline, and at load 10 it missed it).
            limit = go.movetime if go.time is None else min(go.movetime, go.time)
            until = time.monotonic() + limit / 1000 - self.early
            if until - time.monotonic() > 0.005:
                time.sleep(until - time.monotonic() - 0.004)
            while time.monotonic() < until:
                pass
        super().on_go(go)
        # When the turn was written, on the machine's monotonic clock (the arena's too): a test can tell its own
        # lateness under load from the arena's.
        print(f"answered at {time.monotonic():.6f}", file=sys.stderr, flush=True)


def main() -> None:
    """Runs the bot on stdin/stdout."""
    AnswersLate(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0).run()


if __name__ == "__main__":
    main()
