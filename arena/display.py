"""Text pictures of positions for a terminal: every attribute of every piece visible at a glance.

A piece is drawn as five characters: its outline shows the shape, the letters inside show the other three.

    [DTo]  square (brackets), Dark, Tall, hollow (o)      (Ls*)  round (parentheses), Light, short, solid (*)

Upper case marks the "bigger" value (Dark, Tall), lower case the other; ``o`` is an open (hollow) top and ``*``
a solid one. With colour (a terminal), dark pieces are also shown in reverse video.
"""

from __future__ import annotations

from quarto_arena.protocol.notation import format_piece, format_position, piece_description
from quarto_arena.protocol.rules import ClaimMode, Outcome, Position, iter_alignments, square_name

LEGEND = "[ ] square  ( ) round   D dark  L light   T tall  s short   o hollow  * solid"
_REVERSE = "\x1b[7m"
_RESET = "\x1b[0m"


def piece_glyph(piece: int, *, color: bool = False) -> str:
    """The five-character picture of a piece, e.g. ``[DTo]`` for ``f``."""
    left, right = ("[", "]") if piece & 4 else ("(", ")")
    body = ("D" if piece & 8 else "L") + ("T" if piece & 2 else "s") + ("o" if piece & 1 else "*")
    glyph = f"{left}{body}{right}"
    return f"{_REVERSE}{glyph}{_RESET}" if color and piece & 8 else glyph


def render(position: Position, *, color: bool = False) -> str:
    """A multi-line picture: the board with coordinates and hex digits, legend, hand, pieces left, state."""
    board = position.board()
    lines = ["      a        b        c        d"]
    for row in (4, 3, 2, 1):
        cells = []
        for col in range(4):
            p = board[(row - 1) * 4 + col]
            cells.append("   .   " if p is None else f"{format_piece(p)} {piece_glyph(p, color=color)}")
        lines.append(f" {row}  " + "  ".join(cells))
    lines.append("")
    lines.append(f" {LEGEND}")
    lines.append(f" position  {format_position(position)}")
    lines.append(f" variant   {position.variant.describe()}")
    hand = position.hand
    if hand is not None:
        lines.append(f" in hand   {format_piece(hand)} {piece_glyph(hand, color=color)}  {piece_description(hand)}")
    left = position.pieces_available()
    pieces = "  ".join(f"{format_piece(p)} {piece_glyph(p, color=color)}" for p in left)
    lines.append(f" left      {pieces if left else '(none)'}")
    lines.append(f" state     {_state(position)}")
    return "\n".join(lines)


def _state(position: Position) -> str:
    if position.outcome is Outcome.WIN:
        groups = ", ".join(_group_name(m) for m in iter_alignments(position))
        return f"game over: the last player to move won ({groups})" if groups else "game over: won by a claim"
    if position.outcome is Outcome.DRAW:
        return "game over: draw (the board is full)"
    if position.hand is None:
        return "to move: give a piece"
    wins = [square_name(s) for s in position.winning_squares()]
    text = f"to move: place {format_piece(position.hand)}, then give a piece"
    if position.claimable and position.variant.claims is ClaimMode.STRICT:
        text += "; the opponent's alignment may be claimed with '!'"
    if wins:
        text += f" (wins on {', '.join(wins)})"
    return text


def _group_name(mask: int) -> str:
    squares = [square_name(s) for s in range(16) if mask >> s & 1]
    return "-".join(squares)
