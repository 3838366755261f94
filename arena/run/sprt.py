"""The SPRT's stopping rule: pentanomial counts of NEW, fed with games in journal order, and the test's state."""

from __future__ import annotations

from ..records import GameRecord
from ..stats import Sprt, SprtDecision
from .events import SprtProgress

# ----------------------------------------------------------------------------------------------------------------
# The SPRT's stopping rule


class SprtTracker:
    """Pentanomial counts of NEW (the first engine) and the test's state, fed with games in journal order."""

    def __init__(self, test: Sprt, new: str) -> None:
        self.test = test
        self.new = new
        self._halves: dict[int, float] = {}
        self._penta = [0, 0, 0, 0, 0]
        self._wdl = [0, 0, 0]
        self.progress = SprtProgress(test.pentanomial(self._penta), (0, 0, 0, 0, 0), 0, 0, 0)
        """The test after the last complete pair."""

    @property
    def decided(self) -> bool:
        """True once a bound is reached."""
        return self.progress.status.decision is not SprtDecision.CONTINUE

    def add(self, record: GameRecord) -> SprtProgress | None:
        """Counts one game; returns the test's new state when the game completes its pair, else None."""
        score = record.result.first_score
        points = 0.5 if score is None else score if record.first == self.new else 1.0 - score
        self._wdl[0 if points == 1.0 else 1 if points == 0.0 else 2] += 1
        pair = (record.game_id - 1) // 2
        first_half = self._halves.pop(pair, None)
        if first_half is None:
            self._halves[pair] = points
            return None
        self._penta[round(2 * (first_half + points))] += 1
        a, b, c, d, e = self._penta
        self.progress = SprtProgress(self.test.pentanomial(self._penta), (a, b, c, d, e), *self._wdl)
        return self.progress
