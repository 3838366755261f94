"""The minimax engine: iterative-deepening alpha-beta to a fixed depth (option ``Depth``), with ``info`` lines.

The search only ever follows *safe* turns (turns after which the opponent has no immediate win, see
:func:`quarto_arena.engines.greedy.safe_turns`): an unsafe turn loses on the next turn, and a safe one loses no
sooner, so nothing is lost by the pruning and the tree shrinks a lot. A node whose player has no safe turn is a loss
in two turns. Positions at the depth limit are scored 0 (no heuristic). Scores are in turns to the end: ``win N``,
``loss N``, else ``value 0``. The search stops at ``stop``, at its time budget, and at ``go nodes``; it then plays
the best turn of the last depth it finished.

Run it with ``python -m quarto_arena.engines.minimax [--listen ENDPOINT]``.
"""

from __future__ import annotations

from quarto_arena.protocol.bot import SearchContext
from quarto_arena.protocol.rules import Position, Turn, turn_of
from quarto_arena.protocol.uqi import OptionSpec, OptionType, Score

from ..greedy import safe_turns, winning_turns
from ..random import SEED, SeededBot

__all__ = ["DEPTH", "MinimaxBot", "has_safe_turn"]

DEPTH = OptionSpec("Depth", OptionType.SPIN, "2", 1, 16)
"""Search depth in turns (a ``go depth N`` limit overrides it)."""

_WIN = 1000
_MATE = _WIN - 100  # scores beyond this are wins or losses in (_WIN - |score|) turns


class _Abort(Exception):
    """The search ran out of time or nodes, or was stopped."""


def has_safe_turn(position: Position) -> bool:
    """True when the player to move has a turn after which the opponent cannot win at once (early exit)."""
    pieces = position.pieces_available()
    if position.hand is None:
        return any(not position.gives_win(p) for p in pieces)
    for square in position.empty_squares():
        if position.wins_at(square):
            continue
        if not pieces:
            return True
        after = position.apply(turn_of(place=square, give=pieces[0]))
        if any(not after.gives_win(p) for p in pieces):
            return True
    return False


class _Search:
    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx
        self.nodes = 0
        self.max_nodes = ctx.limits.nodes

    def visit(self) -> None:
        self.nodes += 1
        if self.max_nodes is not None and self.nodes > self.max_nodes:
            raise _Abort
        if self.nodes & 63 == 0 and self.ctx.should_stop():
            raise _Abort

    def negamax(self, position: Position, depth: int, alpha: int, beta: int, ply: int) -> tuple[int, list[Turn]]:
        """Score for the player to move, who has no immediate win (the previous turn was safe)."""
        self.visit()
        if position.is_over:
            return 0, []  # only a board-filling placement ends a game after a safe turn: a draw
        if depth == 0:
            return 0, []
        if depth == 1:
            return (0, []) if has_safe_turn(position) else (-(_WIN - ply - 2), [])
        safe = safe_turns(position)
        if not safe:
            return -(_WIN - ply - 2), []
        best, pv = -_WIN - 1, []
        for turn in safe:
            score, line = self.negamax(position.apply(turn), depth - 1, -beta, -alpha, ply + 1)
            score = -score
            if score > best:
                best, pv = score, [turn, *line]
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best, pv


def _score(score: int) -> Score:
    if score > _MATE:
        return Score("win", _WIN - score)
    if score < -_MATE:
        return Score("loss", _WIN + score)
    return Score("value", score)


class MinimaxBot(SeededBot):
    """Alpha-beta over safe turns to ``Depth`` turns, iterative deepening, random among equal root turns."""

    name = "Minimax 1.0"
    author = "quarto-arena"
    options: tuple[OptionSpec, ...] = (SEED, DEPTH)

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """The best turn found within the depth, time and node limits."""
        wins = winning_turns(position)
        if wins:
            ctx.info(depth=1, score=Score("win", 1), nodes=1, time=0, pv=wins[:1])
            return wins[0]
        safe = safe_turns(position)
        if not safe:
            turn = self.rng.choice(position.legal_turns())
            ctx.info(depth=1, score=Score("loss", 2), nodes=1, time=0, pv=[turn])
            return turn
        self.rng.shuffle(safe)
        max_depth = ctx.limits.depth if ctx.limits.depth is not None else self.option(DEPTH.name)
        assert isinstance(max_depth, int)
        search = _Search(ctx)
        best = safe[0]
        for depth in range(1, max_depth + 1):
            try:
                score, pv = self._root(search, position, safe, best, depth)
            except _Abort:
                break  # keep the best turn of the last finished depth
            best = pv[0]
            elapsed = ctx.elapsed()
            ctx.info(
                depth=depth,
                score=_score(score),
                nodes=search.nodes,
                nps=int(search.nodes / elapsed) if elapsed > 0 else None,
                time=int(elapsed * 1000),
                pv=pv,
            )
            if score > _MATE or score < -_MATE or ctx.should_stop():
                break
        return best

    def _root(
        self, search: _Search, position: Position, safe: list[Turn], first: Turn, depth: int
    ) -> tuple[int, list[Turn]]:
        """One full-width search of the root's safe turns, the previous best first."""
        alpha, beta = -_WIN - 1, _WIN + 1
        best_score, best_pv = -_WIN - 1, [first]
        for turn in [first, *(t for t in safe if t != first)]:
            score, line = search.negamax(position.apply(turn), depth - 1, -beta, -alpha, 1)
            score = -score
            if score > best_score:
                best_score, best_pv = score, [turn, *line]
                alpha = max(alpha, score)
        return best_score, best_pv
