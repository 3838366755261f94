"""The SPRT loop: colour-swapped pairs of NEW against BASE, J games at once, until the GSPRT decides.

Pair ``k`` is two games from opening ``k`` (NEW gives first, then BASE gives first). When both games of a pair are
finished the pair's score for NEW (0, 1/2, 1, 3/2 or 2 points) adds one to the pentanomial counts
``[LL, LD, WL+DD, WD, WW]`` and the log-likelihood ratio is computed again by
:class:`~quarto_arena.arena.stats.Sprt`. The test stops at the first bound reached (the games still running are
abandoned and their engines killed), or when ``max_games`` games have been played without a decision.

Engine failures. By default the first game an engine loses by failing (crash, stall, illegal turn...) stops the
test with :attr:`Verdict.ENGINE_FAILURE`: in CI a crashing NEW must fail the build for that reason, not after
hundreds of forfeits. With ``lenient`` such games count as losses and the test goes on.

Nothing here prints: :func:`run_sprt` reports every finished game and every pair to callbacks.
"""

from __future__ import annotations

import asyncio
import collections
import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from quarto_arena.protocol.rules import Variant

from .engine import Deadlines, EngineConfig
from .records import GameRecord
from .referee import play_game
from .schedule import Opening, ScheduledGame, seeded_opening
from .stats import Sprt, SprtDecision, SprtModel, SprtStatus, pentanomial_stats
from .timecontrol import DEFAULT_MARGIN_MS, TimeControl
from .tournament import EnginePool, GameStarted, Notice, TournamentError, game_spec, run_workers

__all__ = [
    "EXIT_CODES",
    "SprtOutcome",
    "SprtProgress",
    "SprtSettings",
    "Verdict",
    "make_sprt",
    "pair_index",
    "run_sprt",
]

#: Exit status of ``quarto-arena sprt`` for each verdict (documented in the README).
EXIT_CODES: Final = {"h1": 0, "h0": 1, "engine failure": 3, "no decision": 4}


class Verdict(enum.Enum):
    """How an SPRT run ended."""

    H1 = "h1"  #: NEW passes: the upper bound was reached
    H0 = "h0"  #: NEW fails (a regression, or not the improvement hoped for): the lower bound was reached
    ENGINE_FAILURE = "engine failure"  #: an engine failed and the run is not lenient
    NO_DECISION = "no decision"  #: max_games played, neither bound reached

    @property
    def exit_code(self) -> int:
        """The CLI's exit status: 0, 1, 3 or 4."""
        return EXIT_CODES[self.value]


@dataclass(frozen=True, slots=True)
class SprtSettings:
    """Everything an SPRT run needs besides the two engines."""

    test: Sprt
    """Bounds and error rates."""
    max_games: int = 0
    """Stop without a decision after this many games (rounded up to whole pairs); 0 means no limit."""
    concurrency: int = 1
    """Games played at the same time."""
    time_control: TimeControl = field(default_factory=lambda: TimeControl.parse("st=1"))
    """The time control of every game."""
    variant: Variant = field(default_factory=Variant)
    """The rules."""
    openings: tuple[Opening, ...] = ()
    """Openings from a file, cycled over the pairs; when empty, random openings of ``random_turns`` turns."""
    random_turns: int = 2
    """Turns of each random opening (used when ``openings`` is empty)."""
    seed: int = 0
    """Seed of the random openings."""
    margin_ms: int = DEFAULT_MARGIN_MS
    """Overrun tolerated before a player loses on time."""
    lenient: bool = False
    """Count engine failures as losses and go on, instead of stopping with ENGINE_FAILURE."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise TournamentError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.max_games < 0:
            raise TournamentError(f"--max-games cannot be negative ({self.max_games})")

    def opening(self, pair: int) -> Opening:
        """The opening of pair ``pair``."""
        if self.openings:
            return self.openings[pair % len(self.openings)]
        return seeded_opening(self.random_turns, self.variant, self.seed, pair)


@dataclass(frozen=True, slots=True)
class SprtProgress:
    """The test after a pair finished."""

    status: SprtStatus
    """LLR, bounds and decision."""
    penta: tuple[int, int, int, int, int]
    """Pair counts ``[LL, LD, WL+DD, WD, WW]`` from NEW's side."""
    wins: int
    """Games NEW won (every finished game, including the first half of a pair still being played)."""
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
            stats = pentanomial_stats(self.penta)
            text += f" | elo {stats.elo}, nelo {stats.nelo}"
        return text


@dataclass(frozen=True, slots=True)
class SprtOutcome:
    """How the run ended."""

    verdict: Verdict
    """H1, H0, engine failure or no decision."""
    last: SprtProgress
    """The test's state at the end."""
    records: tuple[GameRecord, ...]
    """Every finished game, in the order they finished."""
    failure: GameRecord | None = None
    """The game whose engine failure stopped the run (ENGINE_FAILURE only)."""


def pair_index(new_points: float) -> int:
    """Index in ``[LL, LD, WL+DD, WD, WW]`` of a pair in which NEW scored ``new_points`` (0, 0.5, .. 2)."""
    return round(2 * new_points)


def _games(settings: SprtSettings, new: str, base: str) -> Iterator[ScheduledGame]:
    pair = 0
    while not settings.max_games or 2 * pair < settings.max_games:
        opening = settings.opening(pair)
        yield ScheduledGame(2 * pair + 1, pair + 1, pair, new, base, opening)
        yield ScheduledGame(2 * pair + 2, pair + 1, pair, base, new, opening)
        pair += 1


async def run_sprt(
    new: EngineConfig,
    base: EngineConfig,
    settings: SprtSettings,
    *,
    on_game: Callable[[GameRecord], None] | None = None,
    on_pair: Callable[[SprtProgress], None] | None = None,
    on_event: Callable[[GameStarted | Notice], None] | None = None,
    deadlines: Deadlines | None = None,
) -> SprtOutcome:
    """Plays pairs until the SPRT decides, ``max_games`` is reached or (unless lenient) an engine fails.

    Raises :class:`TournamentError` when an engine cannot be started at all. Every engine process is killed and
    reaped before this returns or raises.
    """
    if new.name == base.name:
        raise TournamentError(f"both engines are named {new.name!r}; name them with NEW=... and BASE=...")
    pool = EnginePool([new, base], deadlines=deadlines)
    games = _games(settings, new.name, base.name)
    halves: dict[int, float] = {}
    penta = [0, 0, 0, 0, 0]
    wdl: collections.Counter[str] = collections.Counter()
    records: list[GameRecord] = []
    state = SprtProgress(settings.test.pentanomial(penta), (0, 0, 0, 0, 0), 0, 0, 0)
    failure: GameRecord | None = None
    done = asyncio.Event()

    def count(record: GameRecord) -> None:
        nonlocal state
        records.append(record)
        score = record.result.first_score
        new_points = 0.5 if score is None else score if record.first == new.name else 1.0 - score
        wdl["w" if new_points == 1.0 else "l" if new_points == 0.0 else "d"] += 1
        if on_game is not None:
            on_game(record)
        pair = (record.game_id - 1) // 2
        if pair not in halves:
            halves[pair] = new_points
            return
        penta[pair_index(halves.pop(pair) + new_points)] += 1
        state = SprtProgress(settings.test.pentanomial(penta), _five(penta), wdl["w"], wdl["l"], wdl["d"])
        if on_pair is not None:
            on_pair(state)
        if state.status.decision is not SprtDecision.CONTINUE:
            done.set()

    async def worker() -> None:
        nonlocal failure
        for game in games:
            if done.is_set():
                return
            first, second = pool.acquire(game.first), pool.acquire(game.second)
            if on_event is not None:
                on_event(GameStarted(game))
            spec = game_spec(game, settings.variant, settings.time_control, settings.margin_ms)
            try:
                record = await play_game(first, second, spec)
            finally:
                pool.release(first)
                pool.release(second)
            if done.is_set():
                return
            if record.termination.is_failure:
                if on_event is not None:
                    on_event(Notice(f"game {record.game_id}: {record.termination.value}: {record.detail}"))
                if not settings.lenient:
                    failure = record
                    done.set()
                    return
            count(record)

    try:
        await pool.preflight(settings.variant)
        await run_workers(worker, settings.concurrency, done)
    finally:
        # Shielded: a second Ctrl-C during the clean-up must not leave an engine behind.
        await asyncio.shield(pool.close())
    if failure is not None:
        verdict = Verdict.ENGINE_FAILURE
    elif state.status.decision is SprtDecision.H1:
        verdict = Verdict.H1
    elif state.status.decision is SprtDecision.H0:
        verdict = Verdict.H0
    else:
        verdict = Verdict.NO_DECISION
    return SprtOutcome(verdict, state, tuple(records), failure)


def _five(counts: Sequence[int]) -> tuple[int, int, int, int, int]:
    a, b, c, d, e = counts
    return a, b, c, d, e


def make_sprt(elo0: float, elo1: float, alpha: float, beta: float, model: str) -> Sprt:
    """The test from the CLI's options; raises :class:`TournamentError` naming a bad value."""
    try:
        return Sprt(elo0, elo1, alpha, beta, SprtModel(model))
    except ValueError as e:
        raise TournamentError(str(e)) from None
