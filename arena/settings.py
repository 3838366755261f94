"""The settings every game of a run or a ladder shares, declared once: :class:`GameSettings`, built from the command
line's options by :func:`game_settings`.

A run (:class:`~quarto_arena.arena.run.RunSpec`, whose ``game`` they are; its journal keeps their fields flat beside
the run's own, as it always has) and a ladder (:class:`~quarto_arena.arena.ladder.service.LadderSettings`) both take
their games' settings from here, so that ``--tc``, ``--variant``, ``--openings``, ``--random-openings``, ``--seed``,
``--timemargin`` and ``--adjudicate`` mean, and are checked, the same in ``play``, ``tournament``, ``sprt`` and
``ladder run``. A game itself is a :class:`~quarto_arena.arena.referee.GameSpec`: these settings with its opening and
its number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from quarto_arena.protocol.notation import format_attributes, parse_variant
from quarto_arena.protocol.rules import STANDARD, Variant

from . import codec
from .options import RunOptions
from .referee import MAX_ADJUDICATE, GameSpec, new_game_spec
from .schedule import STARTPOS, Opening, OpeningBook, load_openings, opening_from_text
from .timecontrol import DEFAULT_MARGIN_MS, TimeControl, as_text

__all__ = ["GameSettings", "game_settings"]

_VARIANT: Final = codec.hook(
    encode=lambda v: {
        "shapes": v.shapes.value,
        "attributes": format_attributes(v.attributes),
        "claims": v.claims.value,
    },
    decode=lambda v, _: parse_variant(v["shapes"], v["attributes"], v["claims"]),
)
"""A variant as its three ``newgame`` fields, named."""


def _book(o: Mapping[str, Any], earlier: Mapping[str, Any]) -> OpeningBook:
    variant: Variant = earlier["variant"]
    return OpeningBook(
        tuple(opening_from_text(str(t), variant) for t in o["openings"]),
        random_turns=int(o["random_turns"]),
        seed=int(o["seed"]),
        variant=variant,
        source=str(o["source"]),
    )


_BOOK: Final = codec.hook("openings", encode=OpeningBook.identity, decode=_book)
"""An opening book as its identity (what the schedule's digest hashes), read under the games' variant."""


@dataclass(frozen=True, slots=True)
class GameSettings:
    """What every game of a run or a ladder shares: the clock, the rules, the openings, the margin, adjudication."""

    time_control: TimeControl = field(default_factory=lambda: TimeControl.parse("st=1"), metadata=as_text("tc"))
    """Every game's time control (an engine's own overrides it)."""
    variant: Variant = field(default=STANDARD, metadata=_VARIANT)
    """The rules."""
    book: OpeningBook = field(default_factory=OpeningBook, metadata=_BOOK)
    """The openings: the N-th game pair opens with opening N."""
    margin_ms: int = DEFAULT_MARGIN_MS
    """Overrun tolerated before a player loses on time, ms."""
    adjudicate: int | None = None
    """Adjudicate each game by the solver at this many empty squares (1..12); None: play every game out."""

    def __post_init__(self) -> None:
        if self.adjudicate is not None and not 1 <= self.adjudicate <= MAX_ADJUDICATE:
            raise ValueError(f"--adjudicate takes 1 to {MAX_ADJUDICATE} empty squares, not {self.adjudicate}")

    def game(self, opening: Opening, *, game_id: int, round: int) -> GameSpec:
        """The referee's view of one game with these settings, from ``opening`` (a run's, a ladder's, the same
        way)."""
        return new_game_spec(
            variant=self.variant,
            time_control=self.time_control,
            margin_ms=self.margin_ms,
            start=None if opening.start == STARTPOS else opening.start,
            opening=opening.turns,
            game_id=game_id,
            round=round,
            adjudicate=self.adjudicate,
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
