"""The settings every game of a run or a ladder shares, declared once: :class:`GameSettings`, built from the command
line's options by :func:`game_settings`.

A run (:class:`~quarto_arena.arena.run.RunSpec`, whose journal form keeps these fields flat beside the run's own)
and a ladder (:class:`~quarto_arena.arena.ladder.service.LadderSettings`) both take their games' settings from
here, so that ``--tc``, ``--variant``, ``--openings``, ``--random-openings``, ``--seed``, ``--timemargin`` and
``--adjudicate`` mean, and are checked, the same in ``play``, ``tournament``, ``sprt`` and ``ladder run``. A game
itself is a :class:`~quarto_arena.arena.referee.GameSpec`: these settings with its opening and its number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import STANDARD, Variant

from .options import RunOptions
from .referee import MAX_ADJUDICATE, GameSpec, new_game_spec
from .schedule import STARTPOS, Opening, OpeningBook, load_openings
from .timecontrol import DEFAULT_MARGIN_MS, TimeControl

__all__ = ["GameSettings", "Shared", "game_settings", "game_spec"]


@dataclass(frozen=True, slots=True)
class GameSettings:
    """What every game of a run or a ladder shares: the clock, the rules, the openings, the margin, adjudication."""

    time_control: TimeControl = field(default_factory=lambda: TimeControl.parse("st=1"))
    """Every game's time control (an engine's own overrides it)."""
    variant: Variant = STANDARD
    """The rules."""
    book: OpeningBook = field(default_factory=OpeningBook)
    """The openings: the N-th game pair opens with opening N."""
    margin_ms: int = DEFAULT_MARGIN_MS
    """Overrun tolerated before a player loses on time, ms."""
    adjudicate: int | None = None
    """Adjudicate each game by the solver at this many empty squares (1..12); None: play every game out."""

    def __post_init__(self) -> None:
        if self.adjudicate is not None and not 1 <= self.adjudicate <= MAX_ADJUDICATE:
            raise ValueError(f"--adjudicate takes 1 to {MAX_ADJUDICATE} empty squares, not {self.adjudicate}")

    def game(self, opening: Opening, *, game_id: int, round: int) -> GameSpec:
        """The referee's view of one game with these settings, from ``opening``."""
        return game_spec(self, opening, game_id=game_id, round=round)


class Shared(Protocol):
    """What a game takes from its run's or its ladder's settings (:class:`GameSettings`; a RunSpec keeps the same
    fields flat, its journal's form)."""

    @property
    def variant(self) -> Variant: ...
    @property
    def time_control(self) -> TimeControl: ...
    @property
    def margin_ms(self) -> int: ...
    @property
    def adjudicate(self) -> int | None: ...


def game_spec(settings: Shared, opening: Opening, *, game_id: int, round: int) -> GameSpec:
    """The referee's view of one game with ``settings``, from ``opening`` (a run's, a ladder's, the same way)."""
    return new_game_spec(
        variant=settings.variant,
        time_control=settings.time_control,
        margin_ms=settings.margin_ms,
        start=None if opening.start == STARTPOS else opening.start,
        opening=opening.turns,
        game_id=game_id,
        round=round,
        adjudicate=settings.adjudicate,
    )


def game_settings(o: RunOptions) -> GameSettings:
    """The games' settings from the command line's values; a ValueError, NotationError or ScheduleError naming a
    bad one. ``--openings FILE`` and ``--random-openings K`` exclude each other."""
    if o.openings is not None and o.random_openings is not None:
        raise ValueError("give --openings FILE or --random-openings K, not both")
    variant = parse_variant(o.variant, o.attributes, o.claim)
    control = TimeControl.parse(o.tc)
    if o.openings is not None:
        path = Path(o.openings)
        book = OpeningBook(tuple(load_openings(path, variant)), variant=variant, source=str(path))
    else:
        turns = o.random_openings or 0
        book = OpeningBook(
            random_turns=turns, seed=o.seed, variant=variant, source=f"random {turns}" if turns else STARTPOS
        )
    return GameSettings(control, variant, book, o.timemargin, o.adjudicate)
