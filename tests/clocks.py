"""A controlled clock for the tests that check what a turn is charged: the arena's readings of its monotonic clock
(a search's start, an answer's read) come from it instead of the machine's, so the times charged do not depend on
how loaded the machine is.

Only the readings that time a search are taken over: ``SearchClock``'s (arena/timecontrol.py), the transports' time
of a read (arena/transport/process.py and testing.py), and the compiled turn path's (``turns.use_clock``). The event
loop keeps the real clock: a timer still fires at its real time, and then finds (on the controlled clock) that its
deadline has not passed, and waits on.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Iterator

import pytest
from quarto_arena.arena import timecontrol, turns
from quarto_arena.arena.transport import process, testing


class VirtualClock:
    """Seconds that move only by :meth:`advance`, and by ``step`` at every reading."""

    def __init__(self, step: float = 0.0, start: float = 1000.0) -> None:
        self.now = start
        self.step = step
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += self.step
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    @contextlib.contextmanager
    def installed(self) -> Iterator[VirtualClock]:
        """The clock of every search while the block runs (the compiled path's too, where it is built)."""
        shim = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("__")})
        shim.monotonic = self
        with pytest.MonkeyPatch.context() as patch:
            for module in (timecontrol, process, testing):
                patch.setattr(module, "time", shim)
            if turns._turns is not None:
                turns.use_clock(self)
            try:
                yield self
            finally:
                if turns._turns is not None:
                    turns.use_clock(None)
