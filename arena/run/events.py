"""What a run reports as it goes (:class:`GameStarted`, :class:`GameFinished`, :class:`SprtUpdate`,
:class:`Notice`, and when asked :class:`TurnPlayed`) and where it stands when it returns (:class:`RunOutcome`, with
an SPRT's :class:`Verdict`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from quarto_arena.protocol.rules import Position

from ..records import GameRecord, TurnRecord
from ..schedule import ScheduledGame
from ..stats import SprtDecision, SprtStatus, named, pentanomial_stats, trinomial_stats
from .spec import RunSpec


class Verdict(enum.Enum):
    """How an SPRT run ended."""

    H1 = "h1"  #: NEW passes: the upper bound was reached
    H0 = "h0"  #: NEW fails (a regression, or not the improvement hoped for): the lower bound was reached
    ENGINE_FAILURE = "engine failure"  #: an engine failed and the run is not lenient
    NO_DECISION = "no decision"  #: the maximum number of games played, neither bound reached


# ----------------------------------------------------------------------------------------------------------------
# Events


@dataclass(frozen=True, slots=True)
class GameStarted:
    """A game began."""

    game: ScheduledGame
    """The scheduled game."""


@dataclass(frozen=True, slots=True)
class GameEnded:
    """A game's last turn was played; it counts once it is synced (:class:`GameFinished` follows)."""

    game: ScheduledGame
    """The scheduled game."""


@dataclass(frozen=True, slots=True)
class GameFinished:
    """A game ended and is in the journal (it counts)."""

    record: GameRecord
    """The game."""
    done: int
    """Games now in the journal."""
    total: int | None
    """Games in the schedule (None: open-ended)."""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that is not a game: an engine failure, a dropped torn record."""

    text: str
    """One line."""
    failure: GameRecord | None = None
    """The game an engine lost by failing, when that is what the notice is about."""


@dataclass(frozen=True, slots=True)
class SprtProgress:
    """The test after a pair finished."""

    status: SprtStatus
    """LLR, bounds and decision."""
    penta: tuple[int, int, int, int, int]
    """Pair counts ``[LL, LD, WL+DD, WD, WW]`` from NEW's side."""
    wins: int
    """Games NEW won (every counted game, including the first half of a pair still being played)."""
    losses: int
    """Games NEW lost."""
    draws: int
    """Games drawn."""

    @property
    def pairs(self) -> int:
        """Pairs finished."""
        return sum(self.penta)

    def line(self) -> str:
        """One line for logs: LLR and bounds, NEW's W-L-D over all games, pentanomial counts, the Elo estimate."""
        s = self.status
        text = (
            f"LLR {s.llr:.3f} ({s.lower:.3f}, {s.upper:.3f}) | games {self.wins + self.losses + self.draws}: "
            f"W {self.wins} L {self.losses} D {self.draws} | pairs {self.pairs}: penta {list(self.penta)}"
        )
        if self.pairs >= 2:
            # The figures of the match line (output.match_figures): Elo from the games, nElo from the pairs.
            trinomial = trinomial_stats(self.wins, self.losses, self.draws)
            by_pairs = pentanomial_stats(self.penta)
            text += f" | elo {named(trinomial.elo, 'trinomial')}, nelo {named(by_pairs.nelo, 'pentanomial')}"
        return text


@dataclass(frozen=True, slots=True)
class SprtUpdate:
    """A pair finished and counts: where the test stands now."""

    progress: SprtProgress
    """The test's state."""


@dataclass(frozen=True, slots=True)
class TurnPlayed:
    """A running game's engine played a turn and the referee accepted it (reported only when a run is asked for
    turns: a live view of the boards)."""

    game_id: int
    """The game."""
    ply: int
    """Index of the turn in the game, opening turns included (0: the first turn)."""
    turn: TurnRecord
    """The turn as recorded: token, time, the engine's score."""
    position: Position
    """The position after the turn."""


Event = GameStarted | GameEnded | GameFinished | Notice | SprtUpdate | TurnPlayed


@dataclass(frozen=True, slots=True, repr=False)
class RunOutcome:
    """Where a run stands when :meth:`Run.run` returns.

    Its repr is a summary: asyncio formats the result of a run's main task when it restores the signal handlers
    at the end of ``asyncio.run``, and the full repr of 20,000 records takes seconds.
    """

    spec: RunSpec
    """The run."""
    records: tuple[GameRecord, ...]
    """Every counted game, resumed ones included, in journal order."""
    total: int | None
    """Games in the schedule (None: open-ended)."""
    failure: GameRecord | None = None
    """With ``strict``: the game whose engine failure stopped the run (not counted)."""
    sprt: SprtProgress | None = None
    """SPRT runs: the test's state at the end."""
    interrupted: int | None = None
    """The signal that stopped the run early (SIGINT, SIGTERM, SIGHUP), if one did."""
    aborted: tuple[GameRecord, ...] = ()
    """Games abandoned as far as they went when the run stopped (not counted; played again on resume)."""

    def __repr__(self) -> str:
        state = "interrupted" if self.interrupted is not None else "complete" if self.complete else "stopped"
        return f"RunOutcome({self.spec.kind.value}, {len(self.records)} of {self.total} games, {state})"

    @property
    def complete(self) -> bool:
        """True when every scheduled game is counted."""
        return self.total is not None and len(self.records) == self.total

    @property
    def verdict(self) -> Verdict | None:
        """SPRT runs: H1, H0, engine failure or no decision (None when interrupted, or not an SPRT)."""
        if self.spec.sprt is None:
            return None
        if self.failure is not None:
            return Verdict.ENGINE_FAILURE
        decision = None if self.sprt is None else self.sprt.status.decision
        if decision is SprtDecision.H1:
            return Verdict.H1
        if decision is SprtDecision.H0:
            return Verdict.H0
        if self.interrupted is not None:
            return None
        return Verdict.NO_DECISION
