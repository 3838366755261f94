"""An oracle for the rules: SPEC.md §1 and §2.5 written out plainly on lists, sharing no code with the rules core.

The tests hold the rules core against it (legal turns, states, perft). It reads the variant's three choices from a
:class:`Variant` but computes everything else itself: it parses position strings on its own, lists the legal turn
tokens from the text of the rules, and counts perft by brute force.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from quarto_arena.protocol.rules import Attribute, ClaimMode, Position, Shapes, Variant

HEX = "0123456789abcdef"
SQUARE_NAMES = [c + r for r in "1234" for c in "abcd"]


# --- the oracle: the rules of SPEC.md section 1, written out plainly on lists ------------------------------------


ROWS = [[4 * r + c for c in range(4)] for r in range(4)]
COLUMNS = [[4 * r + c for r in range(4)] for c in range(4)]
DIAGONALS = [[0, 5, 10, 15], [3, 6, 9, 12]]
BLOCKS = [[4 * r + c, 4 * r + c + 1, 4 * r + c + 4, 4 * r + c + 5] for r in range(3) for c in range(3)]
BITS = {Attribute.COLOR: 8, Attribute.SHAPE: 4, Attribute.HEIGHT: 2, Attribute.FILL: 1}


def oracle_lines(variant: Variant) -> list[list[int]]:
    return ROWS + COLUMNS + DIAGONALS + (BLOCKS if variant.shapes is Shapes.ADVANCED else [])


def aligned(cells: list[int | None], line: list[int], variant: Variant) -> bool:
    """Four pieces on the line, and for some counted attribute all of them have it or none has it."""
    pieces = [cells[s] for s in line]
    if any(p is None for p in pieces):
        return False
    for attribute in variant.attributes:
        have = [p is not None and p & BITS[attribute] != 0 for p in pieces]
        if all(have) or not any(have):
            return True
    return False


def completes(cells: list[int | None], square: int, variant: Variant) -> bool:
    return any(square in line and aligned(cells, line, variant) for line in oracle_lines(variant))


@dataclass
class Oracle:
    """A game state kept as plain lists and strings."""

    variant: Variant
    cells: list[int | None] = field(default_factory=lambda: [None] * 16)
    hand: int | None = None
    claimable: bool = False
    result: str = "ongoing"

    def available(self) -> list[int]:
        return [p for p in range(16) if p not in self.cells and p != self.hand]

    def turns(self) -> list[str]:
        if self.result != "ongoing":
            return []
        if self.hand is None:
            return [HEX[p] for p in self.available()]
        strict = self.variant.claims is ClaimMode.STRICT
        tokens = ["!"] if self.claimable else []
        for square in range(16):
            if self.cells[square] is not None:
                continue
            after = list(self.cells)
            after[square] = self.hand
            name = SQUARE_NAMES[square]
            wins = completes(after, square, self.variant)
            if wins and not strict:
                tokens.append(name)
                continue
            if wins:
                tokens.append(name + "!")
            if None not in after:
                tokens.append(name)
            else:
                tokens.extend(name + HEX[p] for p in self.available())
        return tokens

    def play(self, token: str) -> Oracle:
        if token == "!":
            return replace(self, hand=None, claimable=False, result="win")
        if len(token) == 1:
            return replace(self, hand=HEX.index(token), claimable=False)
        square = SQUARE_NAMES.index(token[:2])
        cells = list(self.cells)
        cells[square] = self.hand
        wins = completes(cells, square, self.variant)
        if token.endswith("!") or (wins and self.variant.claims is ClaimMode.AUTO):
            return replace(self, cells=cells, hand=None, claimable=False, result="win")
        if None not in cells:
            return replace(self, cells=cells, hand=None, claimable=False, result="draw")
        return replace(self, cells=cells, hand=HEX.index(token[2]), claimable=wins)


def same_state(position: Position, oracle: Oracle) -> bool:
    return (
        position.board() == oracle.cells
        and position.hand == oracle.hand
        and position.claimable == oracle.claimable
        and position.outcome.value == oracle.result
    )


def parse(text: str, variant: Variant) -> Oracle:
    """A position string (SPEC.md §2.3, lower case, already known to be valid) as an oracle state."""
    board, hand = text.split()
    cells: list[int | None] = [None] * 16
    for i, row in enumerate(board.split("/")):
        for column, ch in enumerate(row):
            if ch != ".":
                cells[4 * (3 - i) + column] = HEX.index(ch)
    won = variant.claims is ClaimMode.AUTO and any(aligned(cells, line, variant) for line in oracle_lines(variant))
    result = "win" if won else "draw" if None not in cells else "ongoing"
    return Oracle(variant, cells, None if hand == "-" else HEX.index(hand), result=result)


def perft(state: Oracle, depth: int) -> int:
    """SPEC.md §2.5 by brute force: every sequence of up to ``depth`` turns, ending early only where the game ends."""
    if depth == 0 or state.result != "ongoing":
        return 1
    return sum(perft(state.play(token), depth - 1) for token in state.turns())
