#!/usr/bin/env python3
"""The floor the rules core is measured against: random Quarto games written the obvious way, on plain lists.

No bitboards, no precomputed tables beyond the winning lines, no shared objects: a list of 16 cells, the four
piece bits tested one by one, and only the lines through the square just filled. This is the code a newcomer
would write first, so a rules core that is not clearly faster than it has no reason to be as intricate as it is.
``benchmarks/rules.py`` runs it in the same process as the rules core and prints the ratio (the machine is
shared, so only ratios measured side by side mean anything).

Each game draws its turns from the same distribution as ``benchmarks/rules.py``'s: a uniformly random empty
square and a uniformly random piece left, standard shapes, all four attributes, automatic wins.

    python benchmarks/naive_playouts.py [SECONDS]
"""

from __future__ import annotations

import random
import sys
import time

ROWS = [[4 * row + column for column in range(4)] for row in range(4)]
COLUMNS = [[4 * row + column for row in range(4)] for column in range(4)]
DIAGONALS = [[0, 5, 10, 15], [3, 6, 9, 12]]
LINES = ROWS + COLUMNS + DIAGONALS
LINES_AT = [[line for line in LINES if square in line] for square in range(16)]
ATTRIBUTE_BITS = (8, 4, 2, 1)
EMPTY = -1


def shares_an_attribute(pieces: list[int]) -> bool:
    """True when the four pieces all have, or all lack, one of the four attributes."""
    for bit in ATTRIBUTE_BITS:
        having = 0
        for piece in pieces:
            if piece & bit:
                having += 1
        if having in (0, 4):
            return True
    return False


def wins(board: list[int], square: int) -> bool:
    """True when a full line through ``square`` shares an attribute."""
    for line in LINES_AT[square]:
        pieces = [board[s] for s in line]
        if EMPTY not in pieces and shares_an_attribute(pieces):
            return True
    return False


def playout(rng: random.Random) -> int:
    """Plays one random game; returns how many pieces were placed when it ended."""
    board = [EMPTY] * 16
    empty = list(range(16))
    left = list(range(16))
    piece = left.pop(int(rng.random() * len(left)))  # the first turn only gives
    for placed in range(1, 17):
        square = empty.pop(int(rng.random() * len(empty)))
        board[square] = piece
        if wins(board, square):
            return placed
        if left:
            piece = left.pop(int(rng.random() * len(left)))
    return 16


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    rng = random.Random(1)
    games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        playout(rng)
        games += 1
    print(f"naive playouts/s: {games / (time.perf_counter() - start):.0f}")


if __name__ == "__main__":
    main()
