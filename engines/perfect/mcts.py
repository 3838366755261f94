"""Monte Carlo tree search with the solver at the leaves: the search ``perfect`` plays before the exact endgame.

UCT over the turns that do not lose at once (or every turn, when all do). A new leaf is valued by a playout of
greedy turns (a win when there is one, else a uniformly random safe turn) down to :data:`LEAF_EMPTY` empty
squares, where the solver values the position exactly within :data:`LEAF_NODES` nodes (a position it cannot
prove in that many counts as even). The turn visited most is played.

Its score is an estimate, never a proof: ``score value`` 1000 x (2s - 1) (SPEC §5.3) where s is the turn's mean
score with one win and one loss added to its playouts, (wins + 1) / (visits + 2). Short searches run a handful of
playouts, and the plain mean of one lost playout would read ``value -1000``, which SPEC keeps for a proven result;
the added pair pulls a few playouts towards even, and s never reaches 0 or 1.

Time: an iteration (a new node's turns, a playout, a leaf's solve) costs milliseconds of Python, twice as many on a
loaded machine, and no new one starts when the slowest so far would not end before the deadline.
"""

from __future__ import annotations

import math
import random
import time

from quarto_arena.protocol.bot import SearchContext
from quarto_arena.protocol.rules import Outcome, Position, Turn, turn_of
from quarto_arena.protocol.solver import EXACT, Aim, Limits, Solver, Verdict
from quarto_arena.protocol.uqi import Score

from ..greedy import safe_turns, winning_turns

__all__ = ["LEAF_EMPTY", "LEAF_NODES", "estimate", "mcts_turn"]

LEAF_EMPTY = 10
"""Playouts stop at this many empty squares, where the solver takes over."""
LEAF_NODES = 20_000
"""Nodes the solver may spend on one leaf."""
PLAYOUT_TRIES = 24
"""Random turns drawn before a playout lists the safe turns instead (only when nearly every turn loses)."""
LEAST_TIME = 0.01
"""Seconds MCTS needs left to be worth starting: the root's turns and one playout are milliseconds of Python (ten times
as long on a machine loaded ten times over), and a playout or two decide nothing the prepass's turn would not."""
UNPROVEN_MAX = 999
"""The largest ``score value`` an estimate sends: ±1000 means a proven result (SPEC §5.3)."""
EXPLORATION = 1.0
"""The UCT constant (values are scores in 0..1)."""
_SCORE = {Verdict.WIN: 1.0, Verdict.DRAW: 0.5, Verdict.LOSS: 0.0}


class _Node:
    """A position in the tree; ``wins`` are counted for the player who made the turn into it."""

    __slots__ = ("children", "position", "untried", "visits", "wins")

    def __init__(self, position: Position, rng: random.Random) -> None:
        self.position = position
        self.children: dict[Turn, _Node] = {}
        self.untried: list[Turn] = [] if position.is_over else _candidates(position)
        rng.shuffle(self.untried)
        self.visits = 0
        self.wins = 0.0


def _candidates(position: Position) -> list[Turn]:
    wins = winning_turns(position)
    if wins:
        return wins[:1]
    return safe_turns(position) or position.legal_turns()


def _playout_turn(position: Position, rng: random.Random) -> Turn:
    """A greedy turn (a win, else a uniformly random safe turn), drawn by rejection: far cheaper than listing
    every safe turn, since most turns are safe until the last few."""
    wins = winning_turns(position)
    if wins:
        return wins[0]
    squares, pieces = position.empty_squares(), position.pieces_available()
    if not pieces:
        return turn_of(place=squares[0])
    for _ in range(PLAYOUT_TRIES):
        turn = turn_of(place=rng.choice(squares), give=rng.choice(pieces))
        if not position.apply(turn).winning_squares():
            return turn
    return rng.choice(safe_turns(position) or position.legal_turns())


def _value(position: Position, solver: Solver, rng: random.Random, deadline: float | None) -> float:
    """A playout's score for the player to move in ``position`` (0.5 when the deadline cuts its solve short)."""
    flips = 0
    while not position.is_over and 16 - position.placed > LEAF_EMPTY:
        position = position.apply(_playout_turn(position, rng))
        flips += 1
    if position.is_over:
        # The player who made the last turn won, or the board is full.
        score = 0.5 if position.outcome is Outcome.DRAW else 0.0
    else:
        seconds = None if deadline is None else max(deadline - time.monotonic(), 0.0001)
        found = solver.search(position, EXACT, Limits(nodes=LEAF_NODES, seconds=seconds), aim=Aim.VALUE)
        score = 0.5 if found is None or found.verdict is None else _SCORE[found.verdict]
    return score if flips % 2 == 0 else 1.0 - score


def estimate(wins: float, visits: int) -> Score:
    """A turn's ``score value`` after ``visits`` playouts that scored ``wins`` (see the module docstring): strictly
    between -1000 and 1000, which only a proof may reach (rounding alone would reach them after thousands)."""
    value = round(1000 * (2 * (wins + 1) / (visits + 2) - 1))
    return Score("value", max(-UNPROVEN_MAX, min(UNPROVEN_MAX, value)))


def mcts_turn(
    position: Position,
    ctx: SearchContext,
    solver: Solver,
    deadline: float | None,
    rng: random.Random,
    fallback: Turn | None = None,
) -> Turn:
    """The most visited root turn when the deadline (or ``stop``) comes; ``fallback`` (else a turn that does not lose
    at once) when not one iteration fitted in the time, or less than :data:`LEAST_TIME` is left to start with."""
    started = time.monotonic()
    if fallback is not None and deadline is not None and started + LEAST_TIME > deadline:
        return fallback
    root = _Node(position, rng)
    if len(root.untried) == 1:
        return root.untried[0]
    slowest = time.monotonic() - started  # the root's expansion, the first part of every iteration's cost
    iterations = 0
    while not ctx.stopped:
        began = time.monotonic()
        if deadline is not None and began + slowest >= deadline:
            break
        node, path = root, [root]
        while not node.untried and node.children:
            log_n = math.log(node.visits)
            node = max(
                node.children.values(),
                key=lambda c: c.wins / c.visits + EXPLORATION * math.sqrt(log_n / c.visits),
            )
            path.append(node)
        if node.untried:
            turn = node.untried.pop()
            child = _Node(node.position.apply(turn), rng)
            node.children[turn] = child
            node = child
            path.append(node)
        if node.position.is_over:
            score = 0.5 if node.position.outcome is Outcome.DRAW else 0.0
        else:
            score = _value(node.position, solver, rng, deadline)
        for visited in reversed(path):
            visited.visits += 1
            visited.wins += 1.0 - score
            score = 1.0 - score
        iterations += 1
        slowest = max(slowest, time.monotonic() - began)
    if not root.children:
        return root.untried[-1] if fallback is None else fallback
    turn, best = max(root.children.items(), key=lambda item: item[1].visits)
    elapsed = ctx.elapsed()
    ctx.info(
        depth=1,
        score=estimate(best.wins, best.visits),
        nodes=iterations,
        time=int(elapsed * 1000),
        pv=[turn],
    )
    return turn
