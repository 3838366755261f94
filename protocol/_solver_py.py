"""The pure-Python solver core: a line-by-line mirror of ``_solver.c``, used where the C extension is not built.

Both cores search one kind of node, a position with a piece in hand, and know nothing of turns, strict claims or
give-only positions (:mod:`quarto_arena.protocol.solver` handles those at the root). The algorithm and its score
scale are described in ``_solver.c``; every decision here (turn order, transposition-table layout, hashing and
replacement) is the same as there, so that both cores search exactly the same tree and count the same nodes, which
the tests check. Only the means differ: this core tests wins group by group where the C core keeps a summary of
the groups, which is what makes it a hundred times slower.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["EXACT", "Core"]

_MASK64: Final = (1 << 64) - 1
_BIG: Final = 64
EXACT: Final = 64
"""A depth no game reaches: the search is exact. The C core's ``#define EXACT`` is the source; this mirrors it as
the mirror does all of the C core (tests/test_solver.py holds the two equal), since the mirror must run where the C
core was not built."""
TT_MIN_EMPTY: Final = 8
"""Nodes with fewer empty squares than this are not stored: their subtrees are cheaper to search again."""
TT_MIN_EMPTY_CAPPED: Final = 7
"""The same under a node cap, as when perfect's levels were calibrated (the C core says why)."""
ORDER_MIN: Final = 7
"""Nodes with fewer empty squares than this try their turns in generation order, unsorted."""
WIN_ORDER_DEADLY: Final = 5
"""At the root of a search with ``win_order``, each piece left that wins somewhere after a placement adds this much
to the mobility key of the turns that place there (_solver.c says why)."""
_CHECK_EVERY: Final = 64
_HAS: Final = tuple(sum(1 << p for p in range(16) if p >> a & 1) for a in range(4))
_HAS_NOT: Final = tuple(0xFFFF & ~h for h in _HAS)
#: ``_PIECE_PLANES[piece][square]``: the attribute planes of ``piece`` standing on ``square``.
_PIECE_PLANES: Final = tuple(
    tuple(sum(1 << (16 * a + s) for a in range(4) if p >> a & 1) for s in range(16)) for p in range(16)
)


def _bits(mask: int) -> list[int]:
    """The set bits of ``mask``, lowest first."""
    out = []
    while mask:
        out.append((mask & -mask).bit_length() - 1)
        mask &= mask - 1
    return out


class _Abort(Exception):
    """The node limit, the time limit or a stop ended the search."""


@dataclass(frozen=True, slots=True)
class _Key:
    """A canonical image of a node, and the symmetry that maps the node onto it."""

    occupied: int
    planes: int
    hand: int
    map: int
    """The board map."""
    target: tuple[int, ...]
    """Attribute plane ``a`` goes to plane ``target[a]`` ..."""
    flip: int
    """... after complementing the planes whose bit is set here."""

    @property
    def image(self) -> tuple[int, int, int]:
        return self.occupied, self.planes, self.hand


# A table entry: occupied, planes, hand (the key), lower and upper bound, depth, best turn (canonical frame) or -1.
_Entry = tuple[int, int, int, int, int, int, int]


class Core:
    """Exact negamax over positions with a piece in hand, with a transposition table keyed by canonical forms.

    ``lines`` are the winning groups (square masks), ``counted`` the piece bits that count for a win, ``maps`` the
    board maps of the variant's symmetry group (identity first), ``tt_bits`` the log2 of the table's entries.
    Not thread-safe, except :meth:`stop`.
    """

    def __init__(self, lines: Sequence[int], counted: int, maps: Sequence[Sequence[int]], tt_bits: int) -> None:
        if not 1 <= counted <= 15:
            raise ValueError("counted attributes must be a non-empty subset of the 4 piece bits")
        if not 4 <= tt_bits <= 30:
            raise ValueError("tt_bits must be in 4..30")
        if any(sorted(m) != list(range(16)) for m in maps):
            raise ValueError("a board map is a permutation of the 16 squares")
        self._lines = tuple(lines)
        self._planes = tuple(a for a in range(4) if counted >> a & 1)
        self._others = tuple(a for a in range(4) if not counted >> a & 1)
        self._maps = tuple(tuple(m) for m in maps)
        self._inverse = tuple(tuple(m.index(s) for s in range(16)) for m in self._maps)
        self._tables = tuple(
            (
                tuple(sum(1 << m[s] for s in range(8) if x >> s & 1) for x in range(256)),
                tuple(sum(1 << m[s + 8] for s in range(8) if x >> s & 1) for x in range(256)),
            )
            for m in self._maps
        )
        self._bits = tt_bits
        self._tt: list[_Entry | None] = [None] * (1 << tt_bits)
        self.nodes = 0
        """Nodes visited by the last search."""
        self.aborted = False
        """True when the last search was cut short by a limit or :meth:`stop` (its score means nothing)."""
        self.best_move = -1
        """``square << 4 | piece`` of the best turn the last search's root found, -1 for none (a win at once, a
        draw or a horizon found before any turn, or a score from the table that came without a turn)."""
        self._stopped = False
        self._max_nodes = 0
        self._deadline = 0.0
        self._win_order = False
        self._listing = False
        self._listed: list[int] | None = None

    def stop(self) -> None:
        """Makes a running search (or the next one) end as soon as possible, until :meth:`reset_stop`."""
        self._stopped = True

    def reset_stop(self) -> None:
        """Clears a stop request."""
        self._stopped = False

    def clear(self) -> None:
        """Empties the transposition table."""
        self._tt = [None] * (1 << self._bits)

    def search(
        self,
        occupied: int,
        planes: int,
        hand: int,
        alpha: int,
        beta: int,
        max_nodes: int = 0,
        seconds: float = 0.0,
        depth: int = EXACT,
        win_order: bool = False,
    ) -> int:
        """Fail-soft score of the position for the player to move, searched with the window (alpha, beta).

        A score strictly inside the window is exact; at or below alpha it is an upper bound, at or above beta a
        lower bound. ``max_nodes`` and ``seconds`` (0: none) bound the search; then :attr:`aborted` tells.
        ``depth`` below the empty squares makes a heuristic search: nodes that many turns away score 0.
        ``win_order`` orders the root's turns for a win proof (:data:`WIN_ORDER_DEADLY`); the score is the same.
        """
        if not (0 <= occupied < 0xFFFF and 0 <= hand <= 15):
            raise ValueError("a node has an empty square and a piece in hand (0..15)")
        self.nodes = 0
        self.aborted = False
        self.best_move = -1
        self._max_nodes = max_nodes
        self._win_order = win_order
        self._deadline = time.monotonic() + seconds if seconds > 0 else 0.0
        if self._stopped:
            self.aborted = True
            return 0
        avail = 0xFFFF & ~(1 << hand)
        for s in range(16):
            if occupied >> s & 1:
                avail &= ~(1 << self._piece_at(planes, s))
        empty = 16 - occupied.bit_count()
        try:
            return self._negamax(occupied, planes, hand, avail, empty, depth, alpha, beta, True)
        except _Abort:
            self.aborted = True
            return 0

    def root_turns(
        self,
        occupied: int,
        planes: int,
        hand: int,
        alpha: int,
        beta: int,
        max_nodes: int = 0,
        seconds: float = 0.0,
        depth: int = EXACT,
        win_order: bool = False,
    ) -> list[int] | None:
        """The root's turns (``square << 4 | piece``) in the order :meth:`search` with the same arguments would try
        them, or None when the root decides without trying any (a win at once, the table, a bound)."""
        self._listing, self._listed = True, None
        try:
            self.search(occupied, planes, hand, alpha, beta, max_nodes, seconds, depth, win_order)
        finally:
            self._listing = False
        return None if self.aborted else self._listed

    @staticmethod
    def _piece_at(planes: int, square: int) -> int:
        p = planes >> square
        return (p & 1) | (p >> 15 & 2) | (p >> 30 & 4) | (p >> 45 & 8)

    def _winning_pieces(self, occupied: int, planes: int) -> int:
        """The pieces that complete a winning group somewhere on this board."""
        out = 0
        for m in self._lines:
            x = occupied & m
            if x.bit_count() != 3:
                continue
            for a in self._planes:
                y = planes >> (16 * a) & m
                if y == x:
                    out |= _HAS[a]
                elif y == 0:
                    out |= _HAS_NOT[a]
        return out

    def _live_groups(self, occupied: int, planes: int, remaining: int) -> tuple[int, int]:
        """The groups that can still be won (not full, and enough pieces left share an attribute value with the
        pieces in it), a bit each, and the attribute bits those groups depend on."""
        out = attributes = 0
        for i, m in enumerate(self._lines):
            x = occupied & m
            need = 4 - x.bit_count()
            if need == 0:
                continue
            for a in self._planes:
                y = planes >> (16 * a) & m
                if (y == x and (remaining & _HAS[a]).bit_count() >= need) or (
                    y == 0 and (remaining & _HAS_NOT[a]).bit_count() >= need
                ):
                    out |= 1 << i
                    attributes |= 1 << a
        return out, attributes

    def _key(self, occupied: int, planes: int, hand: int) -> _Key:
        """A canonical image: least occupied mask over the board maps, then each plane complemented to its lesser
        form and the counted planes (and the others) sorted, ties by plane; the least image kept."""
        images = [lo[occupied & 0xFF] | hi[occupied >> 8] for lo, hi in self._tables]
        least = min(images)
        best: _Key | None = None
        for i, image in enumerate(images):
            if image != least:
                continue
            lo, hi = self._tables[i]
            cells = []
            flip = 0
            for a in range(4):
                p = planes >> (16 * a) & 0xFFFF
                q = lo[p & 0xFF] | hi[p >> 8]
                r = q ^ image
                h = hand >> a & 1
                if r < q or (r == q and h):
                    q, h = r, h ^ 1
                    flip |= 1 << a
                cells.append((q, h))
            target = [0] * 4
            for group in (self._planes, self._others):
                for a, source in zip(group, sorted(group, key=lambda b: cells[b]), strict=True):
                    target[source] = a
            out_planes = sum(cells[a][0] << (16 * target[a]) for a in range(4))
            out_hand = sum(cells[a][1] << target[a] for a in range(4))
            if best is None or (out_planes, out_hand) < (best.planes, best.hand):
                best = _Key(least, out_planes, out_hand, i, tuple(target), flip)
        assert best is not None
        return best

    def _to_canonical(self, key: _Key, move: int) -> int:
        piece = move & 15
        out = sum(((piece >> a & 1) ^ (key.flip >> a & 1)) << key.target[a] for a in range(4))
        return self._maps[key.map][move >> 4] << 4 | out

    def _from_canonical(self, key: _Key, move: int) -> int:
        piece = move & 15
        out = sum(((piece >> key.target[a] & 1) ^ (key.flip >> a & 1)) << a for a in range(4))
        return self._inverse[key.map][move >> 4] << 4 | out

    def _slot(self, key: _Key) -> int:
        h = (key.planes ^ (key.occupied << 48) ^ (key.hand << 40)) * 0x9E3779B97F4A7C15 & _MASK64
        return (((h ^ (h >> 29)) * 0xBF58476D1CE4E5B9 & _MASK64) >> (64 - self._bits)) & ~1

    def _negamax(
        self,
        occupied: int,
        planes: int,
        hand: int,
        avail: int,
        empty: int,
        depth: int,
        alpha: int,
        beta: int,
        root: bool,
    ) -> int:
        if self._max_nodes and self.nodes >= self._max_nodes:
            raise _Abort
        self.nodes += 1
        if self.nodes % _CHECK_EVERY == 0:
            self._check()
        if self._winning_pieces(occupied, planes) >> hand & 1:
            return empty
        if empty == 1:
            return 0
        if empty <= 3 and depth >= empty and not root:
            return self._endgame(occupied, planes, hand, avail, empty)
        if empty <= 6 and depth >= empty and not root:
            return self._small(occupied, planes, hand, avail, empty, alpha, beta)
        live, live_attributes = self._live_groups(occupied, planes, avail | 1 << hand)
        if not live or depth <= 0:
            return 0
        # Without a win now, the best is a win on the next own placement, the worst a loss on the opponent's.
        if empty - 2 <= alpha:
            return empty - 2
        if 1 - empty >= beta:
            return 1 - empty
        depth = min(depth, empty)
        slot = -1
        key: _Key | None = None
        tt_move = -1
        if empty >= (TT_MIN_EMPTY_CAPPED if self._max_nodes else TT_MIN_EMPTY):
            key = self._key(occupied, planes, hand)
            slot = self._slot(key)
            entry = self._tt[slot]
            if entry is None or entry[:3] != key.image:
                entry = self._tt[slot + 1]
            if entry is not None and entry[:3] == key.image:
                if entry[6] >= 0:
                    tt_move = self._from_canonical(key, entry[6])
                low, high = entry[3], entry[4]
                if entry[5] < depth:
                    # A shallower search's proofs still hold: a win (loss) within fewer turns is one within more.
                    low = low if low >= 1 else -_BIG
                    high = high if high <= -1 else _BIG
                if root:
                    self.best_move = tt_move
                if low >= beta:
                    return low
                if high <= alpha:
                    return high
                if low == high:
                    return low
                alpha = max(alpha, low)
                beta = min(beta, high)
        original_alpha = alpha
        best = -_BIG
        best_move = -1
        free = 0xFFFF & ~occupied
        # Squares on no live group are interchangeable: placing on one or another leaves the same live groups.
        covered = 0
        for i, m in enumerate(self._lines):
            if live >> i & 1:
                covered |= m
        dead = free & ~covered
        if dead:
            free &= covered | (dead & -dead)
        ordered = empty >= ORDER_MIN
        moves: list[tuple[int, int]] = []
        for square in _bits(free):
            occupied2 = occupied | 1 << square
            planes2 = planes | _PIECE_PLANES[hand][square]
            winners = self._winning_pieces(occupied2, planes2)
            safe = avail & ~winners
            if not safe:
                if 1 - empty > best:
                    best = 1 - empty
                    best_move = square << 4 | ((avail & -avail).bit_length() - 1)
                    if root:
                        self.best_move = best_move
                continue
            # A win proof's root: the pieces left that win somewhere after the placement weigh in too (_solver.c).
            deadly = WIN_ORDER_DEADLY * (avail & winners).bit_count() if root and self._win_order else 0
            # Pieces that agree on every live attribute are interchangeable: give one of them.
            classes = 0
            for piece in _bits(safe):
                cls = 1 << (piece & live_attributes)
                if classes & cls:
                    continue
                classes |= cls
                mobility = deadly
                if ordered:
                    # Mobility: the opponent's turns that do not lose at once; fewest first.
                    rest = avail & ~(1 << piece)
                    for reply in _bits(0xFFFF & ~occupied2):
                        winners = self._winning_pieces(occupied2 | 1 << reply, planes2 | _PIECE_PLANES[piece][reply])
                        mobility += (rest & ~winners).bit_count()
                moves.append((mobility, square << 4 | piece))
        if ordered:
            moves.sort(key=lambda move: move[0])
        order = [move for _, move in moves]
        if tt_move in order:  # the table's best turn first
            order.remove(tt_move)
            order.insert(0, tt_move)
        if root and self._listing:
            self._listed = order
            return 0
        for move in order:
            square, piece = move >> 4, move & 15
            score = -self._negamax(
                occupied | 1 << square,
                planes | _PIECE_PLANES[hand][square],
                piece,
                avail & ~(1 << piece),
                empty - 1,
                depth - 1,
                -beta,
                -alpha,
                False,
            )
            if score > best:
                best = score
                best_move = move
                if root:
                    self.best_move = best_move
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        if key is not None:
            self._store(slot, key, depth, best, original_alpha, beta, best_move)
        return best

    def _small(self, occupied: int, planes: int, hand: int, avail: int, empty: int, alpha: int, beta: int) -> int:
        """The exact score of a node below the root with four to six empty squares, its children unvisited,
        fail-soft: every placement and every safe gift in board order (no table, no ordering, no merging of
        interchangeable turns), until a score reaches beta or the most the node can score. From five, each reply is
        searched within (-beta, -max(alpha, best)); at four, each reply is the closed form at three, whose window
        does not matter (``small`` in the C core)."""
        best = 1 - empty
        for square in _bits(0xFFFF & ~occupied):
            occupied2 = occupied | 1 << square
            planes2 = planes | _PIECE_PLANES[hand][square]
            safe = avail & ~self._winning_pieces(occupied2, planes2)
            for piece in _bits(safe):
                rest = avail & ~(1 << piece)
                if empty == 4:
                    score = -self._endgame(occupied2, planes2, piece, rest, 3)
                else:
                    score = -self._small(occupied2, planes2, piece, rest, empty - 1, -beta, -max(alpha, best))
                if score > best:
                    best = score
                    if best >= beta or best == empty - 2:
                        return best
        return best

    def _endgame(self, occupied: int, planes: int, hand: int, avail: int, empty: int) -> int:
        """The exact score of a node below the root with two or three empty squares, its children unvisited: at
        two a safe gift draws (the last piece wins nothing); at three the opponent holds the draw when the last
        piece is safe on one of its squares, and else loses on our next placement."""
        best = 1 - empty
        for square in _bits(0xFFFF & ~occupied):
            occupied2 = occupied | 1 << square
            planes2 = planes | _PIECE_PLANES[hand][square]
            safe = avail & ~self._winning_pieces(occupied2, planes2)
            if not safe:
                continue
            if empty == 2:
                return 0
            for piece in _bits(safe):
                last = avail & ~(1 << piece)
                if not any(
                    last & ~self._winning_pieces(occupied2 | 1 << reply, planes2 | _PIECE_PLANES[piece][reply])
                    for reply in _bits(0xFFFF & ~occupied2)
                ):
                    return 1
                best = 0
        return best

    def _store(self, slot: int, key: _Key, depth: int, best: int, alpha: int, beta: int, move: int) -> None:
        """Records what a search of ``depth`` turns (at most the empty squares) found below a node."""
        low, high = -_BIG, _BIG
        index = -1
        for i in (slot, slot + 1):
            entry = self._tt[i]
            if entry is not None and entry[:3] == key.image:
                index = i
                if depth < entry[5]:
                    return  # a deeper search's bounds are worth more
                low, high = entry[3], entry[4]
                if depth > entry[5]:
                    # Of a shallower search only its proofs hold (see _negamax).
                    low = low if low >= 1 else -_BIG
                    high = high if high <= -1 else _BIG
        if index < 0:
            # The first entry keeps the deeper search; whatever it displaces goes to the second.
            first = self._tt[slot]
            if first is None or depth >= first[5]:
                self._tt[slot + 1] = first
                index = slot
            else:
                index = slot + 1
        if best <= alpha:
            high = min(high, best)
        elif best >= beta:
            low = max(low, best)
        else:
            low = high = best
        stored = self._to_canonical(key, move) if move >= 0 else -1
        entry = self._tt[index]
        proven_win = best <= alpha and low >= 1 and not self._max_nodes
        if proven_win and entry is not None and entry[:3] == key.image and entry[6] >= 0:
            # A search that failed low proves nothing of its best turn: an entry that proves a win keeps its winning
            # turn, which a later search for a quicker win that fails would otherwise overwrite (the table's turn is
            # what a root whose entry proves the win plays: perfect's next turns after its proof). Not under a node
            # cap: perfect's levels search with one, and their ladder was measured on the table as it was.
            stored = entry[6]
        self._tt[index] = (*key.image, low, high, depth, stored)

    def _check(self) -> None:
        if self._stopped or (self._deadline and time.monotonic() >= self._deadline):
            raise _Abort
