"""The symmetry group: its derivation, its elements, and canonical forms against brute force."""

from __future__ import annotations

import itertools
import random
from math import factorial

import pytest
from quarto_arena.protocol.notation import parse_position, parse_turn, parse_variant
from quarto_arena.protocol.rules import ALL_ATTRIBUTES, Attribute, ClaimMode, Position, Shapes, Variant
from quarto_arena.protocol.symmetry import (
    IDENTITY,
    Symmetry,
    attribute_orders,
    board_maps,
    canonical,
    canonical_key,
    canonical_key_and_symmetry,
    canonicalize,
    group_order,
    line_preserving_maps,
    symmetries,
    transform,
    transform_turn,
)

SUBSETS = [frozenset(c) for n in range(1, 5) for c in itertools.combinations(Attribute, n)]


def lines_of(shapes: Shapes) -> frozenset[int]:
    return frozenset(Variant(shapes=shapes).lines)


def preserves(image: tuple[int, ...], lines: frozenset[int]) -> bool:
    return {sum(1 << image[s] for s in range(16) if m >> s & 1) for m in lines} == lines


def grid_map(rows: tuple[int, ...], columns: tuple[int, ...], transpose: bool) -> tuple[int, ...]:
    """The square map sending (row r, column c) to (rows[r], columns[c]), then optionally transposing."""
    out = []
    for s in range(16):
        r, c = rows[s >> 2], columns[s & 3]
        out.append(c * 4 + r if transpose else r * 4 + c)
    return tuple(out)


def random_position(variant: Variant, rng: random.Random, placed: int) -> Position:
    p = Position.start(variant)
    while not p.is_over and p.placed < placed:
        p = p.apply(rng.choice(p.legal_turns()))
    return p


def order_key(p: Position) -> tuple[int, int, int]:
    return p.occupied, p.planes, p[3]


# --- the derivation ------------------------------------------------------------------------------------------------


def test_board_map_counts() -> None:
    assert len(board_maps(Shapes.STANDARD)) == 32
    assert len(board_maps(Shapes.ADVANCED)) == 8


@pytest.mark.parametrize("shapes", list(Shapes))
def test_every_board_map_preserves_the_lines(shapes: Shapes) -> None:
    maps = board_maps(shapes)
    assert maps[0] == tuple(range(16))
    assert len(set(maps)) == len(maps)
    assert all(preserves(m, lines_of(shapes)) for m in maps)
    # A group: closed under composition.
    found = set(maps)
    assert all(tuple(b[a[s]] for s in range(16)) in found for a in maps for b in maps)


@pytest.mark.parametrize("shapes", list(Shapes))
def test_search_agrees_with_brute_force_over_the_grid_maps(shapes: Shapes) -> None:
    """Every row permutation x column permutation x transpose (1,152 maps): the ones that preserve the lines are
    exactly what the search found, so the search found nothing outside this family, and missed nothing in it."""
    lines = lines_of(shapes)
    grid = {
        m
        for rows in itertools.permutations(range(4))
        for columns in itertools.permutations(range(4))
        for transpose in (False, True)
        if preserves(m := grid_map(rows, columns, transpose), lines)
    }
    assert grid == set(board_maps(shapes))


def test_standard_maps_are_the_known_ones() -> None:
    rotate = grid_map((0, 1, 2, 3), (3, 2, 1, 0), True)
    mirror = grid_map((0, 1, 2, 3), (3, 2, 1, 0), False)
    inner_outer = grid_map((1, 0, 3, 2), (1, 0, 3, 2), False)
    middle = grid_map((0, 2, 1, 3), (0, 2, 1, 3), False)
    generated = {tuple(range(16))}
    while True:
        bigger = generated | {tuple(g[m[s]] for s in range(16)) for m in generated for g in (rotate, mirror)}
        if bigger == generated:
            break
        generated = bigger
    assert len(generated) == 8
    assert set(board_maps(Shapes.ADVANCED)) == generated
    swaps = {tuple(range(16)), inner_outer, middle, tuple(inner_outer[middle[s]] for s in range(16))}
    assert len(swaps) == 4
    assert {tuple(w[d[s]] for s in range(16)) for d in generated for w in swaps} == set(board_maps(Shapes.STANDARD))
    assert inner_outer not in board_maps(Shapes.ADVANCED) and middle not in board_maps(Shapes.ADVANCED)


@pytest.mark.slow
def test_search_is_exhaustive_on_small_hypergraphs() -> None:
    """Against all n! permutations, on random line sets over up to 7 points (including empty and degenerate)."""
    rng = random.Random(2024)
    cases: list[tuple[list[int], int]] = [([], 3), ([0b111], 3), ([0b011, 0b110, 0b101], 3)]
    for _ in range(40):
        n = rng.randint(2, 7)
        lines = [rng.randrange(1, 1 << n) for _ in range(rng.randint(1, 6))]
        cases.append((lines, n))
    for lines, n in cases:
        line_set = frozenset(lines)
        brute = [
            perm
            for perm in itertools.permutations(range(n))
            if {sum(1 << perm[s] for s in range(n) if m >> s & 1) for m in line_set} == line_set
        ]
        assert line_preserving_maps(lines, n) == brute, (lines, n)


def test_attribute_orders() -> None:
    for subset in SUBSETS:
        orders = attribute_orders(subset)
        k = len(subset)
        assert len(orders) == factorial(k) * factorial(4 - k)
        assert orders[0] == (0, 1, 2, 3)
        counted = {a.plane for a in subset}
        assert all({o[a] for a in counted} == counted for o in orders)
    assert len(attribute_orders(ALL_ATTRIBUTES)) == 24


@pytest.mark.slow
def test_group_orders() -> None:
    sizes = {
        (shapes.value, len(subset)): group_order(Variant(shapes=shapes, attributes=subset))
        for shapes in Shapes
        for subset in SUBSETS
    }
    assert sizes == {
        ("standard", 1): 32 * 6 * 16,
        ("standard", 2): 32 * 4 * 16,
        ("standard", 3): 32 * 6 * 16,
        ("standard", 4): 12_288,
        ("advanced", 1): 8 * 6 * 16,
        ("advanced", 2): 8 * 4 * 16,
        ("advanced", 3): 8 * 6 * 16,
        ("advanced", 4): 3_072,
    }
    for variant in (Variant(), parse_variant("advanced", "color,fill", "strict")):
        elements = symmetries(variant)
        assert len(elements) == len(set(elements)) == group_order(variant)
        assert elements[0] == IDENTITY


# --- elements --------------------------------------------------------------------------------------------------------


def test_symmetry_values() -> None:
    rng = random.Random(7)
    elements = symmetries(Variant())
    members = set(elements)
    assert IDENTITY.pieces == tuple(range(16))
    for _ in range(200):
        a, b = rng.choice(elements), rng.choice(elements)
        assert sorted(a.pieces) == list(range(16))
        assert a.then(a.inverse()) == IDENTITY == a.inverse().then(a)
        ab = a.then(b)
        assert all(ab.piece(p) == b.piece(a.piece(p)) for p in range(16))
        assert all(ab.square(s) == b.square(a.square(s)) for s in range(16))
        assert ab in members
    swap = Symmetry(order=(1, 0, 2, 3), flip=8)
    assert swap.piece(0b0001) == 0b1010 and swap.piece(0b0010) == 0b1001


def test_symmetry_validation() -> None:
    with pytest.raises(ValueError, match="not a permutation of the 16 squares"):
        Symmetry(squares=(0,) * 16)
    with pytest.raises(ValueError, match="not a permutation of the 4 attribute planes"):
        Symmetry(order=(0, 1, 2, 2))
    with pytest.raises(ValueError, match="complement mask 16"):
        Symmetry(flip=16)


def test_transform_rejects_foreign_symmetries() -> None:
    middle = grid_map((0, 2, 1, 3), (0, 2, 1, 3), False)
    assert transform(Position.start(), Symmetry(middle)) == Position.start()
    with pytest.raises(ValueError, match="does not preserve the winning groups"):
        transform(Position.start(parse_variant("advanced")), Symmetry(middle))
    color_fill = Symmetry(order=(3, 1, 2, 0))
    assert transform(Position.start(parse_variant("standard", "color,fill")), color_fill).is_over is False
    with pytest.raises(ValueError, match="moves a counted attribute"):
        transform(Position.start(parse_variant("standard", "color")), color_fill)


def test_transform_moves_squares_and_pieces() -> None:
    p = parse_position("..../..../.e../012. 3")
    rotate = Symmetry(grid_map((0, 1, 2, 3), (3, 2, 1, 0), True), flip=0b1000)
    image = transform(p, rotate)
    for s in range(16):
        piece = p.piece_at(s)
        assert image.piece_at(rotate.square(s)) == (None if piece is None else rotate.piece(piece))
    assert image.hand == rotate.piece(3)
    assert set(image.pieces_available()) == {rotate.piece(x) for x in p.pieces_available()}
    assert image == Position.from_board(image.board(), image.hand)
    turn = parse_turn("d1")
    assert image.apply(transform_turn(turn, rotate)) == transform(p.apply(turn), rotate)
    assert transform_turn(parse_turn("!"), rotate) == parse_turn("!")
    assert transform_turn(parse_turn("d1!"), rotate).call


def test_strict_state_survives() -> None:
    strict = parse_variant(claims="strict")
    missed = parse_position("..../..../.e../012. 3", strict).apply(parse_turn("d15"))
    assert missed.claimable
    rng = random.Random(3)
    for g in rng.sample(symmetries(strict), 50):
        image = transform(missed, g)
        assert image.claimable and image.variant.claims is ClaimMode.STRICT
        assert {transform_turn(t, g) for t in missed.legal_turns()} == set(image.legal_turns())
        assert image.apply(parse_turn("!")).is_over
    assert canonical(missed).claimable
    unclaimable = parse_position("..../..../.e../0123 5", strict)
    assert not unclaimable.claimable and unclaimable.board() == missed.board() and unclaimable.hand == missed.hand
    assert canonical_key(unclaimable) != canonical_key(missed)


# --- canonical forms -------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "count"),
    [
        (Variant(), 3),
        (parse_variant("advanced"), 6),
        (parse_variant("standard", "height,fill"), 6),
        (parse_variant("advanced", "color", "strict"), 6),
    ],
    ids=lambda x: x.describe() if isinstance(x, Variant) else str(x),
)
def test_canonical_is_the_least_image(variant: Variant, count: int) -> None:
    """Brute force: every image under the whole group, least by (occupied, planes, hand)."""
    rng = random.Random(11)
    elements = symmetries(variant)
    positions = [Position.start(variant), Position.start(variant).apply(parse_turn("9"))]
    positions += [random_position(variant, rng, rng.randrange(1, 17)) for _ in range(count)]
    for p in positions:
        images = [transform(p, g) for g in elements]
        least = min(images, key=order_key)
        c = canonical(p)
        assert c == least
        assert c == Position.from_board(c.board(), c.hand, variant) or variant.claims is ClaimMode.STRICT
        assert len({canonical_key(q) for q in images[:: max(1, len(images) // 64)]}) == 1
        same, g = canonicalize(p)
        assert same == c and transform(p, g) == c and transform(c, g.inverse()) == p
        key, g2 = canonical_key_and_symmetry(p)
        assert key == canonical_key(p) and transform(p, g2) == c


def test_canonical_key_separates_orbits() -> None:
    rng = random.Random(5)
    variant = Variant()
    positions = {random_position(variant, rng, rng.randrange(0, 6)) for _ in range(150)}
    keys = {canonical_key(p) for p in positions}
    forms = {canonical(p) for p in positions}
    assert len(keys) == len(forms)
    a = parse_position("..../..../..../0... 1")
    assert canonical_key(a) == canonical_key(parse_position("..../.f../..../.... e"))
    assert canonical_key(a) != canonical_key(parse_position("..../..../..../01.. -"))


def test_canonical_examples() -> None:
    assert canonical(parse_position("..../..../..../.... 9")) == parse_position("..../..../..../.... 0")
    assert canonical(Position.start()) == Position.start()
    # A lone piece goes to a1 as piece 0; piece maps keep how many attributes two pieces share.
    assert canonical(parse_position("..../.5../..../.... 4")) == parse_position("..../..../..../0... 1")
    assert canonical(parse_position("..../.5../..../.... a")) == parse_position("..../..../..../0... f")
    # Ties on the board are broken by the hand: 0 and 8 differ in colour only, which a piece map moves to fill.
    assert canonical(parse_position("..../..../..../0... 8")) == parse_position("..../..../..../0... 1")
    assert canonical(parse_position("7.../..../..../.... 3")) == parse_position("..../..../..../0... 1")
