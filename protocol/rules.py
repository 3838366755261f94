"""The rules of Quarto: pieces, squares, variants, positions, turns, legality, wins and claims.

Everything here is pure and immutable. A :class:`Position` is a value (hashable, comparable); applying a
:class:`Turn` returns a new position or raises :class:`IllegalTurn` with a message that says exactly why.

Representation. Squares are numbered 0..15, ``index = (row - 1) * 4 + column`` (a1 = 0, d1 = 3, a4 = 12).
A piece is a 4-bit number: bit 8 dark, 4 square, 2 tall, 1 hollow. The board is kept as bitboards: ``occupied``
(bit *s* set when square *s* holds a piece) and ``planes``, four 16-bit planes in one integer where bit
``16 * a + s`` is set when the piece on square *s* has attribute bit ``1 << a``. Four cells share an attribute
exactly when the plane, masked by their cells, is all ones or all zeros, so a win test is a few integer ANDs.

This module stands alone: :mod:`.notation` builds on it (``str(position)`` and ``str(turn)`` are already the
canonical position string and turn token; parsing text, with its precise errors, is the notation's job).

Turns are relative: a position does not know the names of its players, only whether the game is over and,
when it is, whether the player who made the last turn won (:attr:`Position.outcome`). The referee knows who that
was.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from .errors import ExitStatus, QuartoError

__all__ = [
    "ALL_ATTRIBUTES",
    "ATTRIBUTE_BITS",
    "PIECES",
    "SQUARES",
    "TURNS",
    "Attribute",
    "ClaimMode",
    "IllegalTurn",
    "Outcome",
    "Position",
    "Shapes",
    "Turn",
    "Variant",
    "perft",
    "square_name",
]

SQUARES: Final = range(16)
PIECES: Final = range(16)
FULL: Final = 0xFFFF


class Attribute(enum.Enum):
    """The four attributes of a piece; the value is the piece bit that carries it."""

    COLOR = 8  #: set: dark; clear: light
    SHAPE = 4  #: set: square; clear: round
    HEIGHT = 2  #: set: tall; clear: short
    FILL = 1  #: set: hollow; clear: solid

    @property
    def plane(self) -> int:
        """Index of the attribute's bit plane (0 for fill .. 3 for color)."""
        return self.value.bit_length() - 1


ALL_ATTRIBUTES: Final = frozenset(Attribute)
ATTRIBUTE_BITS: Final = {a: a.value for a in Attribute}


class Shapes(enum.Enum):
    """Which groups of four cells win."""

    STANDARD = "standard"  #: 4 rows, 4 columns, 2 diagonals
    ADVANCED = "advanced"  #: also the nine 2x2 squares of adjacent cells


class ClaimMode(enum.Enum):
    """How a completed alignment turns into a win."""

    AUTO = "auto"  #: the completing placement wins at once
    STRICT = "strict"  #: the placer must call QUARTO!; a missed alignment may be claimed once by the opponent


def square_name(square: int) -> str:
    """``0`` -> ``a1``, ``15`` -> ``d4``."""
    return "abcd"[square & 3] + "1234"[square >> 2]


def _cells(*names: str) -> int:
    mask = 0
    for name in names:
        mask |= 1 << ("abcd".index(name[0]) + 4 * (int(name[1]) - 1))
    return mask


def _standard_lines() -> tuple[int, ...]:
    rows = [0xF << (4 * r) for r in range(4)]
    columns = [0x1111 << c for c in range(4)]
    diagonals = [_cells("a1", "b2", "c3", "d4"), _cells("d1", "c2", "b3", "a4")]
    return tuple(rows + columns + diagonals)


def _two_by_twos() -> tuple[int, ...]:
    return tuple(0x33 << (4 * r + c) for r in range(3) for c in range(3))


STANDARD_LINES: Final = _standard_lines()
SQUARE_LINES: Final = _two_by_twos()


@dataclass(frozen=True, slots=True)
class Variant:
    """The three independent choices that make a Quarto variant."""

    shapes: Shapes = Shapes.STANDARD
    """Which groups of four cells win."""
    attributes: frozenset[Attribute] = ALL_ATTRIBUTES
    """Attributes that count for a win; fewer than four is the beginners' rule. Never empty."""
    claims: ClaimMode = ClaimMode.AUTO
    """Whether wins are automatic or must be called."""
    lines: tuple[int, ...] = field(init=False, repr=False, compare=False)
    """Every winning group of four cells, as square masks (derived)."""
    through: tuple[tuple[tuple[int, tuple[int, ...]], ...], ...] = field(init=False, repr=False, compare=False)
    """For each square, the winning groups that contain it (derived): pairs of the group's square mask and that
    mask moved into each counted attribute's plane. A full group wins when the planes, masked by one of those,
    are all zeros or all ones."""
    groups: tuple[tuple[int, tuple[int, ...]], ...] = field(init=False, repr=False, compare=False)
    """Every winning group as in :attr:`through`, each once, in the order of :attr:`lines` (derived)."""
    strict: bool = field(init=False, repr=False, compare=False)
    """``claims is ClaimMode.STRICT`` (derived; read on every turn)."""

    def __post_init__(self) -> None:
        if not self.attributes:
            raise ValueError("a variant needs at least one attribute that counts")
        attributes = frozenset(self.attributes)
        lines = STANDARD_LINES + (SQUARE_LINES if self.shapes is Shapes.ADVANCED else ())
        object.__setattr__(self, "attributes", attributes)
        object.__setattr__(self, "lines", lines)
        shifts = sorted(16 * a.plane for a in attributes)
        groups = tuple((m, tuple(m << sh for sh in shifts)) for m in lines)
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "through", tuple(tuple(g for g in groups if g[0] >> s & 1) for s in SQUARES))
        object.__setattr__(self, "strict", self.claims is ClaimMode.STRICT)

    @property
    def attribute_names(self) -> list[str]:
        """Counted attributes, lower case, in the canonical order color, shape, height, fill."""
        return [a.name.lower() for a in Attribute if a in self.attributes]

    def describe(self) -> str:
        """Short human description, e.g. ``standard, color+fill, strict claims``."""
        attrs = "all attributes" if self.attributes == ALL_ATTRIBUTES else "+".join(self.attribute_names)
        return f"{self.shapes.value}, {attrs}, {self.claims.value} claims"


STANDARD: Final = Variant()


class IllegalTurn(QuartoError, ValueError):
    """A turn that the rules do not allow in this position. The message says why."""

    status = ExitStatus.USAGE
    reason = "illegal_turn"

    def __init__(self, message: str, *, false_claim: bool = False) -> None:
        super().__init__(message)
        self.false_claim = false_claim
        """True when the turn called or claimed QUARTO! with no alignment to show for it."""


@dataclass(frozen=True, slots=True)
class Turn:
    """What one player does in one reply.

    The forms: give only (first turn of a game, or a position with no piece in hand); place and give; place only
    (the placement ends the game: it wins, or fills the board); and, with strict claims, the claim of a missed
    alignment, which is the whole turn.
    """

    place: int | None = None
    """Square where the piece in hand goes, or None for a give-only turn or a claim."""
    give: int | None = None
    """Piece handed to the opponent, or None when the placement ends the game or for a claim."""
    call: bool = False
    """The placer calls "QUARTO!" with the placement (token ``b3!``)."""
    claim: bool = False
    """The player claims the alignment the opponent missed with the previous placement (token ``!``)."""
    fast: int = field(init=False, repr=False, compare=False)
    """The square of a plain placement (no call, no claim), else -1: the referee's hot path tests only this."""
    token: str = field(init=False, repr=False, compare=False)
    """The canonical token (``b3e``); ``str(turn)`` returns it, computed once since turns are shared values."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "fast", -1 if self.place is None or self.call or self.claim else self.place)
        if self.claim:
            if self.place is not None or self.give is not None or self.call:
                raise ValueError("a claim is a whole turn: nothing is placed or given with it")
        elif self.place is None:
            if self.give is None:
                raise ValueError("a turn places a piece, gives a piece, or claims")
            if self.call:
                raise ValueError("QUARTO! is called with a placement")
        elif self.call and self.give is not None:
            raise ValueError("a QUARTO! call ends the game: no piece is given with it")
        if self.place is not None and not 0 <= self.place < 16:
            raise ValueError(f"square index {self.place} is off the board")
        if self.give is not None and not 0 <= self.give < 16:
            raise ValueError(f"piece {self.give} does not exist")
        token = "!" if self.claim else ""
        if self.place is not None:
            token = square_name(self.place) + ("!" if self.call else "")
        if self.give is not None:
            token += "0123456789abcdef"[self.give]
        object.__setattr__(self, "token", token)

    def __str__(self) -> str:
        return self.token


CLAIM: Final = Turn(claim=True)


class Outcome(enum.Enum):
    """State of a game, relative to the player who made the last turn."""

    ONGOING = "ongoing"
    WIN = "win"  #: the player who made the last turn won
    DRAW = "draw"


# Positions are created once per turn on the referee's hot path and by the million in searches, so Position is a
# named tuple rather than a frozen dataclass: building the next one is one C call (``_new``), its fields are read
# by C-level getters or by unpacking, and it is just as immutable.
_new: Final = tuple.__new__
_ONGOING: Final = Outcome.ONGOING
_WIN: Final = Outcome.WIN
_DRAW: Final = Outcome.DRAW


class Position(NamedTuple):
    """An immutable Quarto position: board, piece in hand, pieces left, claim state, outcome, and variant.

    Build one with :meth:`start`, :meth:`from_board` or :func:`quarto_arena.protocol.notation.parse_position`;
    ``str(position)`` is its position string (SPEC.md §2.3). The fields can also be given directly (the solver and
    the symmetry module do), but then nothing checks that they describe a reachable position.
    """

    variant: Variant
    """The rules this position is played under."""
    occupied: int
    """Mask of occupied squares (bit s for square s)."""
    planes: int
    """Attribute bit planes: bit ``16 * a + s`` is attribute bit ``1 << a`` of the piece on square s."""
    held: int
    """The piece the player to move must place, or -1 when they only give (:attr:`hand` says None instead)."""
    available: int
    """Mask of pieces that may still be given (neither on the board nor in hand)."""
    claimable: bool
    """Strict claims only: the previous placement completed an alignment nobody called, so ``!`` wins now."""
    outcome: Outcome
    """Whether the game is over and, if so, whether the last turn won it."""

    @property
    def hand(self) -> int | None:
        """The piece the player to move must place, or None when they only give."""
        held = self.held
        return None if held < 0 else held

    @property
    def is_over(self) -> bool:
        """True when no turn can follow."""
        return self.outcome is not _ONGOING

    @classmethod
    def start(cls, variant: Variant = STANDARD) -> Position:
        """The empty board; the player to move gives the first piece."""
        return _new(cls, (variant, 0, 0, -1, FULL, False, _ONGOING))

    @classmethod
    def from_board(cls, board: Iterable[int | None], hand: int | None, variant: Variant = STANDARD) -> Position:
        """A position from 16 cells (square order a1, b1, .., d4; None for empty) and the piece in hand.

        Raises ValueError when pieces repeat or the hand cannot be placed. With automatic claims, a board that
        already shows an alignment is a finished game (won by the last player to move); a full board without one
        is a draw. With strict claims an alignment already on the board is dead: it was never called.
        """
        cells = list(board)
        if len(cells) != 16:
            raise ValueError(f"a board has 16 cells, not {len(cells)}")
        occupied = planes = 0
        used = 0
        for square, piece in enumerate(cells):
            if piece is None:
                continue
            if not 0 <= piece < 16:
                raise ValueError(f"piece {piece} does not exist")
            if used >> piece & 1:
                raise ValueError(f"piece {piece:x} is on the board twice")
            used |= 1 << piece
            occupied |= 1 << square
            for a in range(4):
                if piece >> a & 1:
                    planes |= 1 << (16 * a + square)
        if hand is not None:
            if not 0 <= hand < 16:
                raise ValueError(f"piece {hand} does not exist")
            if used >> hand & 1:
                raise ValueError(f"piece {hand:x} is in hand and on the board")
            if occupied == FULL:
                raise ValueError("the board is full, so no piece can be in hand")
            used |= 1 << hand
        outcome = Outcome.ONGOING
        if variant.claims is ClaimMode.AUTO and _any_alignment(occupied, planes, variant):
            outcome = Outcome.WIN
            if hand is not None:
                raise ValueError("the board already shows a winning alignment, so no piece can be in hand")
        elif occupied == FULL:
            outcome = Outcome.DRAW
        return _new(cls, (variant, occupied, planes, -1 if hand is None else hand, FULL & ~used, False, outcome))

    def with_variant(self, variant: Variant) -> Position:
        """The same board and hand under other rules (outcome recomputed as :meth:`from_board` does)."""
        return Position.from_board(self.board(), self.hand, variant)

    def piece_at(self, square: int) -> int | None:
        """The piece on a square, or None."""
        if not self.occupied >> square & 1:
            return None
        p = self.planes >> square
        return (p & 1) | (p >> 15 & 2) | (p >> 30 & 4) | (p >> 45 & 8)

    def board(self) -> list[int | None]:
        """The 16 cells in square order (a1, b1, .., d4), None for empty."""
        return [self.piece_at(s) for s in SQUARES]

    def pieces_available(self) -> list[int]:
        """Pieces that may still be given, ascending."""
        available = self.available
        return [p for p in PIECES if available >> p & 1]

    def empty_squares(self) -> list[int]:
        """Empty squares, ascending."""
        occupied = self.occupied
        return [s for s in SQUARES if not occupied >> s & 1]

    @property
    def placed(self) -> int:
        """Number of pieces on the board."""
        return self.occupied.bit_count()

    def wins_at(self, square: int) -> bool:
        """True when placing the piece in hand on ``square`` completes an alignment of the variant."""
        variant, occupied, planes, held, _, _, _ = self
        if held < 0 or occupied >> square & 1:
            return False
        return _completes(variant.through[square], occupied | 1 << square, planes | _PIECE_PLANES[held << 4 | square])

    def winning_squares(self) -> list[int]:
        """Squares where the piece in hand completes an alignment."""
        return [s for s in self.empty_squares() if self.wins_at(s)]

    def gives_win(self, piece: int) -> bool:
        """True when ``piece``, handed to the opponent now (after this position's placement), lets them win at once."""
        variant, occupied, planes, _, _, _, _ = self
        row = piece << 4
        through = variant.through
        for s in SQUARES:
            if not occupied >> s & 1 and _completes(through[s], occupied | 1 << s, planes | _PIECE_PLANES[row | s]):
                return True
        return False

    def legal_turns(self) -> list[Turn]:
        """Every legal turn, in a fixed order (claim first, then by square, then by piece)."""
        variant, occupied, _, held, available, claimable, outcome = self
        if outcome is not _ONGOING:
            return []
        pieces = [p for p in PIECES if available >> p & 1]
        if held < 0:
            return [TURNS[16][p] for p in pieces]
        turns: list[Turn] = [CLAIM] if claimable else []
        strict = variant.strict
        last = occupied.bit_count() == 15
        for s in SQUARES:
            if occupied >> s & 1:
                continue
            if self.wins_at(s):
                if not strict:
                    turns.append(TURNS[s][16])
                    continue
                turns.append(_CALLS[s])
            if last:
                turns.append(TURNS[s][16])
            else:
                row = TURNS[s]
                turns.extend(row[p] for p in pieces)
        return turns

    def count_turns(self) -> int:
        """``len(self.legal_turns())``, without building the list."""
        variant, _, _, held, available_mask, claimable, outcome = self
        if outcome is not _ONGOING:
            return 0
        available = available_mask.bit_count()
        if held < 0:
            return available
        empty = self.empty_squares()
        last = len(empty) == 1
        wins = sum(1 for s in empty if self.wins_at(s))
        if variant.strict:
            per_square = 1 if last else available
            return int(claimable) + wins + len(empty) * per_square
        return wins + (len(empty) - wins) * (1 if last else available)

    def apply(self, turn: Turn) -> Position:
        """The position after ``turn``; raises :class:`IllegalTurn` naming the reason when it is not legal.

        With automatic claims a placement that completes an alignment wins at once; a piece given with it is
        ignored (:meth:`canonical` gives the turn as it should be recorded).
        """
        variant, occupied, planes, held, available, _, _ = self
        place = turn.fast
        # One test for both: a turn that is not a plain placement, or no piece in hand (a give-only position, or a
        # finished game, which never holds a piece) goes the slow way.
        if place | held < 0:
            return self._apply_rare(turn)
        bit = 1 << place
        if occupied & bit:
            raise IllegalTurn(f"{square_name(place)} is occupied")
        occupied |= bit
        planes |= _PIECE_PLANES[held << 4 | place]
        give = turn.give
        if _completes(variant.through[place], occupied, planes):
            if variant.strict:
                return self._missed(occupied, planes, give)
            if give is not None and not available >> give & 1:
                raise IllegalTurn(f"piece {give:x} is not available to give")
            return _new(Position, (variant, occupied, planes, -1, available, False, _WIN))
        if give is None:
            if occupied == FULL:
                return _new(Position, (variant, occupied, planes, -1, available, False, _DRAW))
            raise IllegalTurn("a piece must be given")
        given = 1 << give
        if not available & given:  # also when the board is full: then no piece is left
            if occupied == FULL:
                raise IllegalTurn("the board is full: no piece is left to give")
            if give == held:
                raise IllegalTurn(f"piece {give:x} is the piece being placed")
            raise IllegalTurn(f"piece {give:x} is already on the board")
        return _new(Position, (variant, occupied, planes, give, available ^ given, False, _ONGOING))

    def _missed(self, occupied: int, planes: int, give: int | None) -> Position:
        """Strict claims: the placement completed an alignment without a call; it stays claimable for one turn."""
        variant, _, _, held, available, _, _ = self
        if occupied == FULL:
            if give is not None:
                raise IllegalTurn("the board is full: no piece is left to give")
            return _new(Position, (variant, occupied, planes, -1, available, False, _DRAW))
        if give is None:
            raise IllegalTurn("a piece must be given, or QUARTO! called (this placement completes an alignment)")
        if not available >> give & 1:
            if give == held:
                raise IllegalTurn(f"piece {give:x} is the piece being placed")
            raise IllegalTurn(f"piece {give:x} is already on the board")
        return _new(Position, (variant, occupied, planes, give, available & ~(1 << give), True, _ONGOING))

    def _apply_rare(self, turn: Turn) -> Position:
        """The turns off the hot path: claims, calls, gives without a placement, finished games."""
        variant, occupied, planes, held, available, claimable, outcome = self
        if outcome is not _ONGOING:
            raise IllegalTurn("the game is over")
        if turn.claim:
            if not variant.strict:
                raise IllegalTurn("claims exist only with strict claims; wins are automatic in this variant")
            if not claimable:
                raise IllegalTurn(
                    "no alignment to claim: the previous placement completed none, or it was called",
                    false_claim=True,
                )
            return _new(Position, (variant, occupied, planes, -1, available, False, _WIN))
        place, give = turn.place, turn.give
        if place is None:
            assert give is not None  # Turn's constructor guarantees a give when nothing is placed
            if held >= 0:
                raise IllegalTurn(f"piece {held:x} is in hand and must be placed first")
            if not available >> give & 1:
                raise IllegalTurn(f"piece {give:x} is already on the board")
            return _new(Position, (variant, occupied, planes, give, available & ~(1 << give), False, _ONGOING))
        if held < 0:
            raise IllegalTurn("no piece in hand: this turn only gives a piece")
        # A call: the placement must complete an alignment, and then it wins.
        bit = 1 << place
        if occupied & bit:
            raise IllegalTurn(f"{square_name(place)} is occupied")
        occupied |= bit
        planes |= _PIECE_PLANES[held << 4 | place]
        if not _completes(variant.through[place], occupied, planes):
            raise IllegalTurn(f"QUARTO! called, but {square_name(place)} completes no alignment", false_claim=True)
        return _new(Position, (variant, occupied, planes, -1, available, False, _WIN))

    def canonical(self, turn: Turn, after: Position | None = None) -> Turn:
        """``turn`` as it is recorded after being applied here (``after``, if given, is ``self.apply(turn)``).

        With automatic claims a winning placement is recorded alone: a piece given with it is dropped, and a call
        (``b3!``) means the same as no call.
        """
        place = turn.place
        if place is None or self.variant.strict or (turn.give is None and not turn.call):
            return turn
        wins = after.outcome is _WIN if after is not None else turn.call or self.wins_at(place)
        return turn_of(place=place) if wins else turn

    def play(self, turns: Iterable[Turn]) -> Position:
        """Applies turns in order (raising :class:`IllegalTurn` at the first bad one)."""
        pos = self
        for turn in turns:
            pos = pos.apply(turn)
        return pos

    def __str__(self) -> str:
        """The canonical (lower case) position string of SPEC.md §2.3, e.g. ``..../..../..../.... -``."""
        cells = [".0123456789abcdef"[0 if piece is None else piece + 1] for piece in self.board()]
        rows = ("".join(cells[4 * row : 4 * row + 4]) for row in (3, 2, 1, 0))
        held = self.held
        return "/".join(rows) + " " + ("-" if held < 0 else "0123456789abcdef"[held])

    def __repr__(self) -> str:
        return f"Position({str(self)!r}, {self.variant.describe()})"


#: ``_PIECE_PLANES[piece << 4 | square]``: the attribute planes of ``piece`` standing on ``square``.
_PIECE_PLANES: Final = tuple(sum(1 << (16 * a + s) for a in range(4) if p >> a & 1) for p in PIECES for s in SQUARES)


def _completes(groups: tuple[tuple[int, tuple[int, ...]], ...], occupied: int, planes: int) -> bool:
    """True when one of ``groups`` is full and shares a counted attribute: the one win test of the rules.

    ``groups`` is :attr:`Variant.through` of a square: each winning group through it as its square mask and that
    mask moved into each counted attribute's plane. A full group wins when the planes, masked by one of the
    latter, are all zeros or all ones.
    """
    for mask, planes_masks in groups:
        if occupied & mask == mask:
            for wide in planes_masks:
                x = planes & wide
                if x == 0 or x == wide:
                    return True
    return False


def _any_alignment(occupied: int, planes: int, variant: Variant) -> bool:
    return any(_completes(variant.through[s], occupied, planes) for s in SQUARES if occupied >> s & 1)


# Every turn object exists once (flyweights): generating moves and parsing tokens allocate nothing.
#: ``TURNS[square][piece]``: the shared place-and-give turn; index 16 stands for "none" (``TURNS[16][p]`` gives
#: only, ``TURNS[s][16]`` places only). Equal to ``turn_of(place, give)`` without its checks, for hot loops.
TURNS: Final = tuple(
    tuple(
        Turn(place=None if s == 16 else s, give=None if p == 16 else p) if (s, p) != (16, 16) else CLAIM
        for p in range(17)
    )
    for s in range(17)
)
_CALLS: Final = tuple(Turn(place=s, call=True) for s in SQUARES)


def turn_of(place: int | None = None, give: int | None = None, *, call: bool = False, claim: bool = False) -> Turn:
    """The shared :class:`Turn` for these fields (validated the same way as the constructor)."""
    if claim:
        if place is not None or give is not None or call:
            raise ValueError("a claim is a whole turn: nothing is placed or given with it")
        return CLAIM
    if call:
        if place is None or give is not None:
            return Turn(place=place, give=give, call=True)  # raises with the reason
        return _CALLS[place] if 0 <= place < 16 else Turn(place=place, call=True)
    if place is None and give is None:
        raise ValueError("a turn places a piece, gives a piece, or claims")
    if (place is not None and not 0 <= place < 16) or (give is not None and not 0 <= give < 16):
        return Turn(place=place, give=give)  # raises with the reason
    return TURNS[16 if place is None else place][16 if give is None else give]


def perft(position: Position, depth: int) -> int:
    """Number of turn sequences of up to ``depth`` turns from ``position``.

    A sequence stops early only where the game ends, so a finished game counts as one sequence whatever the depth
    left (perft(p, 0) = 1, and perft(p, d) = 1 when p is over). This is the convention of the project's vectors.
    """
    if depth < 0:
        raise ValueError("depth must be at least 0")
    if depth == 0 or position.is_over:
        return 1
    if depth == 1:
        return position.count_turns()
    return sum(perft(position.apply(t), depth - 1) for t in position.legal_turns())


def iter_alignments(position: Position) -> Iterator[int]:
    """Masks of every full winning group on the board that shares a counted attribute."""
    variant, occupied, planes, _, _, _, _ = position
    for mask, wides in variant.groups:
        if occupied & mask == mask:
            for wide in wides:  # _completes for this one group (a report asks this of every game won)
                x = planes & wide
                if x == 0 or x == wide:
                    yield mask
                    break
