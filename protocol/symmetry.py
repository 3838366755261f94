"""Canonical forms of positions under the symmetry group of a variant.

A symmetry is a pair of maps applied together: a permutation of the 16 squares that maps the variant's winning
groups onto themselves (a *board map*), and a map of the 16 pieces that permutes the attribute bits and then
complements some of them (a *piece map*). Every rule of the game commutes with such a pair, so perft counts,
legal-turn counts, outcomes, perfect-play values and the strict-claims state are all invariant.

Board maps are derived, not listed: :func:`line_preserving_maps` searches every permutation of the squares. The
results (see the tests): ``standard`` has 32 (the 8 rotations and reflections of the square, times the swap of
inner and outer rows and columns, times the swap of the two middle rows and columns, as known from the Quarto
literature); ``advanced`` keeps only the 8 rotations and reflections, since both swaps break 2x2 squares.

Piece maps: with all four attributes counted, any of the 24 permutations of the attribute bits, times any of the
16 complement masks. With a subset S counted, the permutation must map S onto S (``|S|! * (4 - |S|)!`` of them),
still times 16 masks. (A restricted variant has more symmetries than these -- with only colour counted, any
shuffle of the eight dark pieces among themselves is one -- but this subgroup is what the module uses; canonical
forms stay correct, they only merge fewer positions.) So ``standard`` with all attributes has
32 * 24 * 16 = 12,288 elements, and ``advanced`` with all attributes 8 * 24 * 16 = 3,072.

The canonical form of a position is its least image under the group, ordered by the position's own integer
fields: first the occupied-squares mask, then the attribute planes (``Position.planes``), then the piece in hand
(none first). Rather than build all 12,288 images, :func:`canonical` keeps only the board maps that minimise the
occupied mask (usually one), and for each of those the complement mask is forced plane by plane (each plane is
least either as mapped or complemented within the occupied squares; on an empty board the complement makes the
hand piece 0), so it scores at most 32 x 24 candidates, usually 24, each a few table lookups. Measured on a
2-core container: about 40-60 microseconds per call on random positions, a few hundred in the worst cases (very
symmetric occupancy); brute force over the whole group takes about 0.2 seconds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Final

from .rules import Attribute, Outcome, Position, Shapes, Turn, Variant, turn_of

__all__ = [
    "IDENTITY",
    "Symmetry",
    "attribute_orders",
    "board_maps",
    "canonical",
    "canonical_key",
    "canonical_key_and_symmetry",
    "canonicalize",
    "group_order",
    "line_preserving_maps",
    "symmetries",
    "transform",
    "transform_turn",
]


def line_preserving_maps(lines: Sequence[int], size: int) -> list[tuple[int, ...]]:
    """Every permutation of the points ``0..size-1`` that maps the set of ``lines`` (point masks) onto itself.

    Each result is a tuple ``image`` with point ``s`` going to ``image[s]``, in lexicographic order (identity
    first).

    The search is exhaustive: it assigns images to points 0, 1, 2, ... in turn, trying every unused point, and
    abandons a partial assignment only when no extension of it can preserve the lines, that is when one of these
    necessary conditions fails: (1) a point and its image lie on the same number of lines (a line-preserving
    permutation maps the lines through ``s`` one-to-one onto the lines through its image); (2) for every line
    through the point just assigned, the images of its assigned points lie together in some line (they lie in
    the image of the line, which must be a line), and when all its points are assigned their images are exactly
    a line. So every line-preserving permutation survives to a leaf, and every leaf is one: it maps each line to
    a line, injectively because it is a permutation, hence onto the (finite) set of lines.
    """
    line_list = list(dict.fromkeys(lines))
    line_set = frozenset(line_list)
    members = [[s for s in range(size) if m >> s & 1] for m in line_list]
    through = [[i for i, m in enumerate(line_list) if m >> s & 1] for s in range(size)]
    degree = [len(t) for t in through]
    image = [-1] * size
    found: list[tuple[int, ...]] = []

    def consistent(line: int) -> bool:
        mask = 0
        complete = True
        for s in members[line]:
            if image[s] < 0:
                complete = False
            else:
                mask |= 1 << image[s]
        if complete:
            return mask in line_set
        return any(mask & m == mask for m in line_list)

    def extend(point: int, used: int) -> None:
        if point == size:
            found.append(tuple(image))
            return
        for target in range(size):
            if used >> target & 1 or degree[target] != degree[point]:
                continue
            image[point] = target
            if all(consistent(line) for line in through[point]):
                extend(point + 1, used | 1 << target)
        image[point] = -1

    extend(0, 0)
    return found


@cache
def board_maps(shapes: Shapes) -> tuple[tuple[int, ...], ...]:
    """The square permutations that map the winning groups of ``shapes`` onto themselves (identity first)."""
    return tuple(line_preserving_maps(Variant(shapes=shapes).lines, 16))


@cache
def attribute_orders(attributes: frozenset[Attribute]) -> tuple[tuple[int, ...], ...]:
    """The permutations of the attribute planes (0 fill .. 3 color) that map the counted ones onto themselves.

    Each is a tuple ``order`` with plane ``a`` going to plane ``order[a]``; identity first.
    """
    counted = {a.plane for a in attributes}
    return tuple(
        order
        for order in itertools.permutations(range(4))
        if all((order[a] in counted) == (a in counted) for a in range(4))
    )


def _permute_bits(x: int, order: Sequence[int]) -> int:
    out = 0
    for a, t in enumerate(order):
        out |= (x >> a & 1) << t
    return out


@cache
def _piece_table(order: tuple[int, ...], flip: int) -> tuple[int, ...]:
    return tuple(_permute_bits(p, order) ^ flip for p in range(16))


@dataclass(frozen=True, slots=True)
class Symmetry:
    """One element of a variant's symmetry group: a board map and a piece map, applied together."""

    squares: tuple[int, ...] = tuple(range(16))
    """Image of each square: the piece on square ``s`` moves to ``squares[s]``."""
    order: tuple[int, ...] = (0, 1, 2, 3)
    """Attribute permutation by plane (0 fill, 1 height, 2 shape, 3 color): bit ``1 << a`` goes to ``1 << order[a]``."""
    flip: int = 0
    """Attribute bits complemented after the permutation (an XOR mask on the piece, 0..15)."""
    pieces: tuple[int, ...] = field(init=False, repr=False, compare=False)
    """Image of each piece (derived from ``order`` and ``flip``)."""

    def __post_init__(self) -> None:
        if sorted(self.squares) != list(range(16)):
            raise ValueError(f"{self.squares} is not a permutation of the 16 squares")
        if sorted(self.order) != [0, 1, 2, 3]:
            raise ValueError(f"{self.order} is not a permutation of the 4 attribute planes")
        if not 0 <= self.flip < 16:
            raise ValueError(f"complement mask {self.flip} is not 0..15")
        object.__setattr__(self, "squares", tuple(self.squares))
        object.__setattr__(self, "order", tuple(self.order))
        object.__setattr__(self, "pieces", _piece_table(self.order, self.flip))

    def square(self, square: int) -> int:
        """Where ``square`` goes."""
        return self.squares[square]

    def piece(self, piece: int) -> int:
        """What ``piece`` becomes."""
        return self.pieces[piece]

    def inverse(self) -> Symmetry:
        """The symmetry that undoes this one."""
        squares = [0] * 16
        for s, t in enumerate(self.squares):
            squares[t] = s
        order = [0] * 4
        for a, t in enumerate(self.order):
            order[t] = a
        return Symmetry(tuple(squares), tuple(order), _permute_bits(self.flip, order))

    def then(self, other: Symmetry) -> Symmetry:
        """This symmetry followed by ``other``."""
        return Symmetry(
            tuple(other.squares[t] for t in self.squares),
            tuple(other.order[t] for t in self.order),
            _permute_bits(self.flip, other.order) ^ other.flip,
        )


IDENTITY: Final = Symmetry()


@dataclass(frozen=True, slots=True)
class _Group:
    """Precomputed tables for one (shapes, attributes) pair."""

    maps: tuple[tuple[int, ...], ...]
    """Board maps."""
    tables: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    """For each board map, the images of the low and high bytes of a square mask."""
    index: dict[tuple[int, ...], int]
    """Board map -> its position in ``maps``."""
    orders: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...]
    """For each allowed attribute order: (order, source plane of each target plane, image of each piece)."""


def _byte_images(squares: Sequence[int]) -> tuple[int, ...]:
    """The image of each 8-bit mask x when bit s goes to square ``squares[s]``: x's image is that of x without its
    lowest bit, plus the image of that bit (a table built this way costs a tenth of summing each mask's bits, which
    took 30 ms of every ``analyse`` command's start)."""
    out = [0] * 256
    for x in range(1, 256):
        low = x & -x
        out[x] = out[x ^ low] | 1 << squares[low.bit_length() - 1]
    return tuple(out)


@cache
def _group(shapes: Shapes, attributes: frozenset[Attribute]) -> _Group:
    maps = board_maps(shapes)
    tables = tuple((_byte_images(m[:8]), _byte_images(m[8:])) for m in maps)
    orders = []
    for order in attribute_orders(attributes):
        source = [0] * 4
        for a, t in enumerate(order):
            source[t] = a
        orders.append((order, tuple(source), tuple(_permute_bits(p, order) for p in range(16))))
    return _Group(maps, tables, {m: i for i, m in enumerate(maps)}, tuple(orders))


def _group_of(variant: Variant) -> _Group:
    return _group(variant.shapes, variant.attributes)


def group_order(variant: Variant) -> int:
    """Number of elements of the symmetry group of ``variant``."""
    g = _group_of(variant)
    return len(g.maps) * len(g.orders) * 16


def symmetries(variant: Variant) -> tuple[Symmetry, ...]:
    """Every element of the symmetry group of ``variant`` (identity first); cached per shapes and attributes."""
    return _symmetries(variant.shapes, variant.attributes)


@cache
def _symmetries(shapes: Shapes, attributes: frozenset[Attribute]) -> tuple[Symmetry, ...]:
    return tuple(
        Symmetry(m, order, flip)
        for m in board_maps(shapes)
        for order in attribute_orders(attributes)
        for flip in range(16)
    )


def _mask_image(mask: int, pieces: Sequence[int]) -> int:
    out = 0
    for p in range(16):
        if mask >> p & 1:
            out |= 1 << pieces[p]
    return out


def transform(position: Position, sym: Symmetry) -> Position:
    """The image of ``position`` under ``sym``: squares moved, pieces renamed, claim state and outcome kept.

    Raises ValueError when ``sym`` is not in the variant's group (its board map would break a winning group,
    or its attribute order would swap a counted attribute with one that does not count).
    """
    variant = position.variant
    group = _group_of(variant)
    i = group.index.get(sym.squares)
    if i is None:
        raise ValueError(f"the board map {sym.squares} does not preserve the winning groups of {variant.describe()}")
    counted = {a.plane for a in variant.attributes}
    if any((sym.order[a] in counted) != (a in counted) for a in range(4)):
        raise ValueError(f"the attribute order {sym.order} moves a counted attribute of {variant.describe()}")
    lo, hi = group.tables[i]
    _, occupied, planes, hand, available, claimable, outcome = position
    occupied2 = lo[occupied & 0xFF] | hi[occupied >> 8]
    planes2 = 0
    for a in range(4):
        p = planes >> (16 * a) & 0xFFFF
        q = lo[p & 0xFF] | hi[p >> 8]
        t = sym.order[a]
        if sym.flip >> t & 1:
            q ^= occupied2
        planes2 |= q << (16 * t)
    hand2 = sym.pieces[hand] if hand >= 0 else -1
    available2 = _mask_image(available, sym.pieces)
    return tuple.__new__(Position, (variant, occupied2, planes2, hand2, available2, claimable, outcome))


def transform_turn(turn: Turn, sym: Symmetry) -> Turn:
    """The image of ``turn`` under ``sym``: legal in ``transform(p, sym)`` exactly when ``turn`` is legal in ``p``."""
    if turn.claim:
        return turn
    return turn_of(
        place=None if turn.place is None else sym.squares[turn.place],
        give=None if turn.give is None else sym.pieces[turn.give],
        call=turn.call,
    )


def _least(position: Position) -> tuple[int, int, int, int, tuple[int, ...], int]:
    """(occupied, planes, hand, board map index, attribute order, flip) of the least image of ``position``."""
    _, occupied, planes, hand, _, _, _ = position
    group = _group_of(position.variant)
    if occupied == 0:
        # Only the hand can differ between images; the complement mask makes it piece 0.
        return 0, 0, -1 if hand < 0 else 0, 0, group.orders[0][0], max(hand, 0)
    images = [lo[occupied & 0xFF] | hi[occupied >> 8] for lo, hi in group.tables]
    least_occupied = min(images)
    best: tuple[int, int, int, int, tuple[int, ...], int] | None = None
    source_planes = [planes >> (16 * a) & 0xFFFF for a in range(4)]
    for i, image in enumerate(images):
        if image != least_occupied:
            continue
        lo, hi = group.tables[i]
        # Each plane is least either as mapped or complemented within the occupied squares (these differ since
        # the board is not empty), which fixes the complement bit of whatever target plane it lands on.
        least = []
        flips = []
        for p in source_planes:
            q = lo[p & 0xFF] | hi[p >> 8]
            r = q ^ image
            least.append(min(q, r))
            flips.append(int(r < q))
        for order, source, pieces in group.orders:
            s0, s1, s2, s3 = source
            planes2 = least[s0] | least[s1] << 16 | least[s2] << 32 | least[s3] << 48
            if best is not None and planes2 > best[1]:
                continue
            flip = flips[s0] | flips[s1] << 1 | flips[s2] << 2 | flips[s3] << 3
            hand2 = pieces[hand] ^ flip if hand >= 0 else -1
            if best is None or (planes2, hand2) < (best[1], best[2]):
                best = (image, planes2, hand2, i, order, flip)
    assert best is not None  # some board map attains the least occupied mask
    return best


def canonicalize(position: Position) -> tuple[Position, Symmetry]:
    """The canonical form of ``position`` and a symmetry that maps ``position`` onto it.

    Use the symmetry's :meth:`Symmetry.inverse` with :func:`transform_turn` to bring a turn found for the
    canonical form (say, from an opening book) back to ``position``.
    """
    _, sym = canonical_key_and_symmetry(position)
    return transform(position, sym), sym


def canonical(position: Position) -> Position:
    """The least image of ``position`` under its variant's group (see the module docstring for the order)."""
    occupied, planes, hand, _, order, flip = _least(position)
    pieces = [_permute_bits(p, order) ^ flip for p in range(16)]
    variant, _, _, _, available, claimable, outcome = position
    return tuple.__new__(
        Position, (variant, occupied, planes, hand, _mask_image(available, pieces), claimable, outcome)
    )


_OUTCOME_CODE: Final = {Outcome.ONGOING: 0, Outcome.WIN: 1, Outcome.DRAW: 2}


def canonical_key(position: Position) -> int:
    """A compact key, equal for two positions of one variant exactly when they are symmetric.

    Bits 0-15 the occupied mask, 16-79 the planes, 80-84 the hand plus one, 85 the strict-claims flag, 86-87 the
    outcome, all of the canonical form. The variant is not part of the key: do not mix variants in one table.
    """
    occupied, planes, hand, _, _, _ = _least(position)
    return _key(position, occupied, planes, hand)


def canonical_key_and_symmetry(position: Position) -> tuple[int, Symmetry]:
    """:func:`canonical_key` and :func:`canonicalize`'s symmetry from one search of the least image: for a caller
    that keeps something by the key in the canonical frame (turns, say) and maps it back through the symmetry."""
    occupied, planes, hand, i, order, flip = _least(position)
    return _key(position, occupied, planes, hand), Symmetry(_group_of(position.variant).maps[i], order, flip)


def _key(position: Position, occupied: int, planes: int, hand: int) -> int:
    """The key of ``position`` from its least image's occupied mask, planes and hand."""
    return (
        occupied
        | planes << 16
        | (hand + 1) << 80
        | int(position.claimable) << 85
        | _OUTCOME_CODE[position.outcome] << 86
    )
