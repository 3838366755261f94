"""Position strings, turn tokens, square and piece names, and variant options, with precise parse errors.

Position string: the board as four rows from row 4 down to row 1 separated by ``/``, each row four characters
from column a to d, ``.`` for an empty cell and one hex digit for a piece; then one space and the piece in hand,
or ``-`` when the player to move only gives. ``startpos`` is accepted as the empty board with no piece in hand.
Input is case-insensitive and surrounding white space is ignored; output is lower case.

Turn tokens: ``7`` (give only), ``b3e`` (place on b3, give piece e), ``b3`` (place only: the placement ends the
game), ``b3!`` (place and call QUARTO!), ``!`` (claim the alignment the opponent missed).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Final

from .errors import ExitStatus, QuartoError
from .rules import (
    ALL_ATTRIBUTES,
    Attribute,
    ClaimMode,
    Position,
    Shapes,
    Turn,
    Variant,
    square_name,
    turn_of,
)

__all__ = [
    "START",
    "NotationError",
    "format_piece",
    "format_position",
    "format_turn",
    "format_turns",
    "parse_attributes",
    "parse_piece",
    "parse_position",
    "parse_square",
    "parse_turn",
    "parse_turns",
    "parse_variant",
    "piece_description",
]

START: Final = "..../..../..../.... -"
_HEX: Final = "0123456789abcdef"
ATTRIBUTE_NAMES: Final = {a.name.lower(): a for a in Attribute}


class NotationError(QuartoError, ValueError):
    """Text that is not valid notation. The message names the problem and the offending text."""

    status = ExitStatus.USAGE
    reason = "notation"


def parse_square(text: str) -> int:
    """``a1`` -> 0 .. ``d4`` -> 15 (case-insensitive)."""
    t = text.strip().lower()
    if len(t) != 2 or t[0] not in "abcd" or t[1] not in "1234":
        raise NotationError(f"{text!r} is not a square (a1..d4)")
    return "abcd".index(t[0]) + 4 * (int(t[1]) - 1)


def parse_piece(text: str) -> int:
    """One hex digit ``0``..``f`` (case-insensitive) -> 0..15."""
    t = text.strip().lower()
    if len(t) != 1 or t not in _HEX:
        raise NotationError(f"{text!r} is not a piece (one hex digit 0-f)")
    return _HEX.index(t)


def format_piece(piece: int) -> str:
    """0..15 -> ``0``..``f``."""
    return _HEX[piece]


def piece_description(piece: int) -> str:
    """``b`` -> ``dark round tall hollow``."""
    return " ".join(
        (
            "dark" if piece & 8 else "light",
            "square" if piece & 4 else "round",
            "tall" if piece & 2 else "short",
            "hollow" if piece & 1 else "solid",
        )
    )


def parse_position(text: str, variant: Variant | None = None) -> Position:
    """Parses a position string (or ``startpos``) under ``variant`` (standard rules when None)."""
    variant = variant or Variant()
    raw = text.strip()
    if raw.lower() == "startpos":
        return Position.start(variant)
    fields = raw.split()
    if len(fields) != 2:
        if len(fields) == 1:
            raise NotationError(f"position {text!r} has no piece in hand: add a space and a hex digit, or '-'")
        raise NotationError(
            f"position {text!r} has {len(fields)} fields; expected the board, a space, and the piece in hand or '-'"
        )
    board_text, hand_text = fields
    rows = board_text.lower().split("/")
    if len(rows) != 4:
        raise NotationError(f"board {board_text!r} has {len(rows)} rows; expected 4 separated by '/'")
    cells: list[int | None] = [None] * 16
    seen: dict[int, str] = {}
    for i, row in enumerate(rows):
        number = 4 - i
        if len(row) != 4:
            raise NotationError(f"row {number} has {len(row)} cells; expected 4 ({row!r})")
        for column, ch in enumerate(row):
            square = (number - 1) * 4 + column
            if ch == ".":
                continue
            if ch not in _HEX:
                raise NotationError(f"{ch!r} on {square_name(square)} is not a piece (0-f) or '.'")
            piece = _HEX.index(ch)
            if piece in seen:
                raise NotationError(f"piece {ch} is on {seen[piece]} and {square_name(square)}")
            seen[piece] = square_name(square)
            cells[square] = piece
    hand: int | None = None
    if hand_text != "-":
        try:
            hand = parse_piece(hand_text)
        except NotationError:
            raise NotationError(f"{hand_text!r} is not a piece in hand (one hex digit, or '-')") from None
        if hand in seen:
            raise NotationError(f"piece {_HEX[hand]} is in hand and already on the board at {seen[hand]}")
    try:
        return Position.from_board(cells, hand, variant)
    except ValueError as e:
        raise NotationError(str(e)) from None


def format_position(position: Position) -> str:
    """The canonical (lower case) position string: ``str(position)``."""
    return str(position)


def parse_turn(token: str) -> Turn:
    """Parses one turn token (case-insensitive). Syntax only: legality is :meth:`Position.apply`'s job."""
    turn = _TOKENS.get(token)
    if turn is not None:
        return turn
    t = token.strip().lower()
    if not t:
        raise NotationError("empty turn token")
    if t == "!":
        return turn_of(claim=True)
    if len(t) == 1:
        if t in _HEX:
            return turn_of(give=_HEX.index(t))
        raise NotationError(f"turn {token!r}: {t!r} is not a piece (0-f) or a square")
    if t[0] not in "abcd" or t[1] not in "1234":
        raise NotationError(f"turn {token!r} does not start with a square (a1..d4) or a piece (0-f)")
    place = "abcd".index(t[0]) + 4 * (int(t[1]) - 1)
    rest = t[2:]
    if rest == "":
        return turn_of(place=place)
    if rest == "!":
        return turn_of(place=place, call=True)
    if rest[0] == "!":
        raise NotationError(f"turn {token!r}: a QUARTO! call ends the game, so no piece may follow the '!'")
    if len(rest) == 1 and rest in _HEX:
        return turn_of(place=place, give=_HEX.index(rest))
    raise NotationError(f"turn {token!r}: {rest!r} after the square is not a piece (one hex digit) or '!'")


def format_turn(turn: Turn) -> str:
    """The canonical token of a turn."""
    return str(turn)


def parse_turns(text: str | Iterable[str]) -> list[Turn]:
    """Parses white-space separated tokens (or an iterable of tokens)."""
    tokens = text.split() if isinstance(text, str) else list(text)
    out = []
    for i, tok in enumerate(tokens, start=1):
        try:
            out.append(parse_turn(tok))
        except NotationError as e:
            raise NotationError(f"turn {i}: {e}") from None
    return out


def format_turns(turns: Iterable[Turn]) -> str:
    """Tokens separated by single spaces."""
    return " ".join(str(t) for t in turns)


def parse_attributes(text: str | Iterable[str]) -> frozenset[Attribute]:
    """``color,fill`` (or a list of names) -> attributes; ``all`` means all four."""
    parts = [p.strip().lower() for p in (text.replace("+", ",").split(",") if isinstance(text, str) else text)]
    parts = [p for p in parts if p]
    if parts == ["all"]:
        return ALL_ATTRIBUTES
    if not parts:
        raise NotationError("no attributes given; choose from color, shape, height, fill (or all)")
    out = set()
    for p in parts:
        if p not in ATTRIBUTE_NAMES:
            raise NotationError(f"unknown attribute {p!r}; choose from color, shape, height, fill (or all)")
        if ATTRIBUTE_NAMES[p] in out:
            raise NotationError(f"attribute {p!r} is given twice")
        out.add(ATTRIBUTE_NAMES[p])
    return frozenset(out)


def parse_variant(shapes: str = "standard", attributes: str | Iterable[str] = "all", claims: str = "auto") -> Variant:
    """Builds a :class:`Variant` from its three option strings, with errors naming the bad value."""
    try:
        sh = Shapes(shapes.strip().lower())
    except ValueError:
        raise NotationError(f"unknown variant {shapes!r}; expected standard or advanced") from None
    try:
        cl = ClaimMode(claims.strip().lower())
    except ValueError:
        raise NotationError(f"unknown claim mode {claims!r}; expected auto or strict") from None
    return Variant(shapes=sh, attributes=parse_attributes(attributes), claims=cl)


@functools.cache  # at most 16 sets; a run formats the same one three times a game (each newgame, the record)
def format_attributes(attributes: frozenset[Attribute]) -> str:
    """``color,shape,height,fill`` order; the inverse of :func:`parse_attributes`."""
    return ",".join(a.name.lower() for a in Attribute if a in attributes)


# Every valid lower-case token, so that the referee's hot path parses a reply with one dictionary look-up.
_TOKENS: Final[dict[str, Turn]] = {}
for _s in range(17):
    for _p in range(17):
        if (_s, _p) != (16, 16):
            _TOKENS[str(turn_of(place=None if _s == 16 else _s, give=None if _p == 16 else _p))] = turn_of(
                place=None if _s == 16 else _s, give=None if _p == 16 else _p
            )
    if _s < 16:
        _TOKENS[square_name(_s) + "!"] = turn_of(place=_s, call=True)
_TOKENS["!"] = turn_of(claim=True)
