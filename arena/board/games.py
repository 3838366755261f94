"""Games the board opens: from a PGN file, from a run directory, or from a link on another page (its turns in the
link's query). Each is replayed by the rules core (:func:`~quarto_arena.arena.web.model.replay`, the viewer's own
replay), so a game that cannot be replayed to its end says where and why, and the games around it open as usual.

What the page gets of a game (:meth:`BoardGame.view`) is the viewer's encoding (``board``, ``hand``, ``plies``:
see :mod:`quarto_arena.arena.web.model`) plus the game's tokens, variant and start, from which the board asks the
solver about any of its positions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from quarto_arena.protocol.notation import NotationError, parse_position, parse_variant
from quarto_arena.protocol.rules import STANDARD, Variant
from quarto_arena.protocol.text import safe_text

from ..journal import JOURNAL_NAME
from ..output import game_comment
from ..pgn import PgnError, PgnGame, parse_movetext, read_games
from ..records import GameRecord, Result, TurnRecord
from ..referee import variant_text
from ..run import PGN_NAME
from ..schedule import STARTPOS
from ..web import WebError
from ..web.model import replay
from ..web.rundir import load_run
from . import BoardError

__all__ = ["MAX_GAMES", "MAX_TOKENS", "BoardGame", "Loaded", "game_from_link", "load_games", "variant_of"]

MAX_GAMES: Final = 5000
"""Games kept from one file or directory (the rest are counted in a note): a list a page can show."""
MAX_TOKENS: Final = 64
"""Turns a game may have (a game of Quarto has at most 33): more is not a game, and is not kept."""
_NAME_CHARS: Final = 64
_TIMING: Final = re.compile(r"(?:([^,;{}]+), )?(\d+)ms\b")
"""A turn's comment as pgn_text writes it: ``{win 3, 120ms}`` or ``{120ms}`` (then ``; how it ended``)."""


@dataclass(frozen=True, slots=True)
class BoardGame:
    """One game as the board holds it."""

    white: str
    """The first player's name (who gives the first piece)."""
    black: str
    """The second player's name."""
    result: str
    """``1-0``, ``0-1``, ``1/2-1/2`` or ``*``."""
    reason: str
    """How it ended, in a few words (may be empty)."""
    variant: Variant
    """The rules."""
    start: str
    """``startpos`` or the position string it started from."""
    turns: tuple[TurnRecord, ...]
    """Its turns as recorded (token, ms, score)."""
    opening: int = 0
    """Turns from an opening book at the start."""
    source: str = ""
    """Where it came from (``games.pgn:12``, ``game 12``, ``a link``)."""
    error: str | None = None
    """Why it cannot be shown whole (a bad variant tag), or None; a turn that cannot be replayed is found by
    :meth:`view`."""

    @property
    def label(self) -> str:
        """``greedy - random 1-0`` and where it came from, for the list."""
        broken = " (broken)" if self.error is not None else ""
        return f"{self.source}: {self.white} - {self.black} {self.result}{broken}"

    def view(self) -> dict[str, Any]:
        """The page's data: the viewer's encoding, with the tokens, variant and start (JSON)."""
        r = replay(self.variant, self.start, self.turns)
        error = self.error or r.error
        plies = r.plies
        return {
            "label": self.label,
            "white": self.white,
            "black": self.black,
            "result": self.result,
            "reason": self.reason,
            "variant": variant_text(self.variant),
            "start": self.start,
            "tokens": [t.token for t in self.turns[: len(plies)]],
            "board": r.board,
            "hand": r.hand,
            "plies": plies,
            "opening": min(self.opening, len(plies)),
            "error": error,
            "source": self.source,
        }

    def brief(self) -> dict[str, Any]:
        """What the list of games shows (JSON)."""
        return {"label": self.label, "turns": len(self.turns), "error": self.error}


@dataclass(frozen=True, slots=True)
class Loaded:
    """The games of one file or directory."""

    source: str
    """The path as given."""
    games: tuple[BoardGame, ...]
    """The games, in file (or journal) order."""
    notes: tuple[str, ...]
    """What could not be read, one line each (a broken game, games beyond :data:`MAX_GAMES`)."""


def load_games(path: Path) -> Loaded:
    """The games of a PGN file, or of a run directory (its journal; else its ``games.pgn``).

    A game that cannot be read or replayed is kept with its error (the others open as usual); raises
    :class:`BoardError` only when the path holds no game at all or cannot be read."""
    if path.is_dir():
        if (path / JOURNAL_NAME).is_file():
            return _load_run(path)
        if (path / PGN_NAME).is_file():
            return _load_pgn(path / PGN_NAME, str(path))
        raise BoardError(f"{path}: not a run directory (no {JOURNAL_NAME}, no {PGN_NAME}) and not a PGN file")
    if not path.exists():
        raise BoardError(f"{path}: no such file or directory")
    return _load_pgn(path, str(path))


def _load_run(directory: Path) -> Loaded:
    try:
        loaded = load_run(directory)
    except WebError as e:
        raise BoardError(str(e)) from None
    notes = [] if loaded.torn is None else [f"journal: dropped a torn last record ({loaded.torn})"]
    games = [_from_record(r) for r in loaded.records[:MAX_GAMES]]
    if len(loaded.records) > MAX_GAMES:
        notes.append(f"{len(loaded.records) - MAX_GAMES} games after the first {MAX_GAMES} are not listed")
    if not games:
        raise BoardError(f"{directory}: the run has no game yet")
    return Loaded(str(directory), tuple(games), tuple(notes))


def _from_record(record: GameRecord) -> BoardGame:
    error = None
    try:
        variant = parse_variant(*record.variant.split(" "))
    except (NotationError, TypeError):
        variant, error = STANDARD, f"unknown variant {record.variant!r}"
    return BoardGame(
        record.first,
        record.second,
        record.result.value,
        game_comment(record) if record.result is not Result.UNFINISHED else record.detail,
        variant,
        record.start,
        record.turns[:MAX_TOKENS],
        len(record.opening),
        f"game {record.game_id}",
        error,
    )


def _load_pgn(path: Path, source: str) -> Loaded:
    notes: list[str] = []
    games: list[BoardGame] = []
    extra = 0
    try:
        for game in read_games(path, skip=lambda e: notes.append(f"{e} (that game is skipped)")):
            if len(games) < MAX_GAMES:
                games.append(_from_pgn(game))
            else:
                extra += 1
    except PgnError as e:
        if not games:
            raise BoardError(str(e)) from None
        notes.append(f"{e} (the games after it were not read)")
    if extra:
        notes.append(f"{extra} games after the first {MAX_GAMES} are not listed")
    if not games:
        raise BoardError(f"{source}: no game in this file")
    return Loaded(source, tuple(games), tuple(notes))


def _from_pgn(game: PgnGame) -> BoardGame:
    tags = game.tags
    tokens, comments = parse_movetext(game.movetext)
    error = None
    variant = STANDARD
    text = tags.get("Variant")
    if text is not None:
        try:
            variant = variant_of(text, "Variant tag")
        except BoardError as e:
            error = str(e)
    if len(tokens) > MAX_TOKENS:
        error = error or f"{len(tokens)} turns: a game has at most 33"
    turns = []
    for i, token in enumerate(tokens[:MAX_TOKENS]):
        m = _TIMING.match(comments.get(i, ""))
        turns.append(TurnRecord(token, int(m.group(2)) if m else 0, m.group(1) if m and m.group(1) else None))
    opening = sum(1 for i in range(len(tokens)) if comments.get(i, "").startswith("book"))
    return BoardGame(
        _name(tags.get("White", "?")),
        _name(tags.get("Black", "?")),
        game.result,
        safe_text(tags.get("Termination", ""), 120),
        variant,
        tags.get("StartPosition", STARTPOS),
        tuple(turns),
        opening,
        f"{Path(game.path).name}:{game.line}",
        error,
    )


def _name(text: str) -> str:
    return safe_text(text, _NAME_CHARS) or "?"


def game_from_link(values: Mapping[str, Any]) -> BoardGame:
    """A game from another page's "open on the board" link (``variant``, ``start``, ``turns`` space-separated,
    ``white``, ``black``, ``result``, ``reason``); raises :class:`BoardError` naming a bad field."""
    variant = variant_of(str(values.get("variant") or variant_text(STANDARD)), "the link's variant")
    start = str(values.get("start") or STARTPOS)
    if start != STARTPOS:
        try:
            parse_position(start, variant)
        except NotationError as e:
            raise BoardError(f"the link's start position: {e}") from None
    tokens = str(values.get("turns") or "").split()
    if len(tokens) > MAX_TOKENS:
        raise BoardError(f"the link has {len(tokens)} turns: a game has at most 33")
    result = str(values.get("result") or "*")
    if result not in {r.value for r in Result}:
        raise BoardError(f"the link's result {safe_text(result, 20)!r} is not 1-0, 0-1, 1/2-1/2 or *")
    return BoardGame(
        _name(str(values.get("white") or "?")),
        _name(str(values.get("black") or "?")),
        result,
        safe_text(str(values.get("reason") or ""), 200),
        variant,
        start,
        tuple(TurnRecord(t[:8], 0) for t in tokens),
        0,
        "a link",
    )


def variant_of(text: str, what: str = "variant") -> Variant:
    """``standard color,shape,height,fill auto`` (the records' form) as a Variant; :class:`BoardError` naming
    ``what`` and the bad field."""
    fields = text.split()
    if len(fields) != 3:
        raise BoardError(f"{what} {safe_text(text, 80)!r}: expected SHAPES ATTRIBUTES CLAIMS")
    try:
        return parse_variant(*fields)
    except NotationError as e:
        raise BoardError(f"{what}: {e}") from None
