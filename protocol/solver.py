"""Exact values of Quarto positions: win, draw or loss for the player to move, in how many turns, and every best turn.

One :class:`Solver` per variant holds a transposition table, so the positions of one game are solved faster one
after the other. Its core is the C extension ``_solver`` when it was built at install, else the pure-Python mirror
``_solver_py`` (about a hundred times slower); setting ``QUARTO_ARENA_PURE_SOLVER=1`` forces the pure core. Both
search the same tree; this module adds what only the root needs: finished games, strict claims, give-only
positions, and the list of turns.

Values count turns as SPEC.md §5.3 does: both players' turns from now, the turn to play included, so a winning
placement now is ``win 1`` and a loss on the opponent's next placement is ``loss 2``. A draw's count is the turns
left until the board is full. With best play the winner wins as soon as it can and the loser holds out as long as it
can. Under strict claims a perfect player always calls, and an alignment the opponent missed is claimed at once
(``win 1``).

A search may be bounded (:class:`Limits`: nodes, seconds) and stopped from another thread (:meth:`Solver.stop`);
a search cut short reports its value as unproven and plays the best turn it has found.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, Protocol

from .rules import CLAIM, Outcome, Position, Turn, Variant, turn_of
from .symmetry import board_maps, canonical_key

__all__ = [
    "CPUS",
    "DEFAULT_TT_BITS",
    "EXACT",
    "PARALLEL_EMPTIES",
    "PURE_ENV",
    "Aim",
    "Analysis",
    "Limits",
    "Search",
    "Solver",
    "Value",
    "Verdict",
    "compiled_core_available",
]

PURE_ENV: Final = "QUARTO_ARENA_PURE_SOLVER"
"""Environment variable: set to 1 to use the pure-Python core even when the C extension is installed."""
_BIG: Final = 64
DEFAULT_TT_BITS: Final = 20
"""log2 of the transposition table's entries (16 bytes each in the C core: 16 MiB)."""
PARALLEL_EMPTIES: Final = 10
"""From this many empty squares on, every best turn is searched on two threads (below, a thread costs more than
it saves)."""
CPUS: Final = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
"""The CPUs this process may run on."""
_WORKERS: Final = min(2, CPUS)


class CoreProtocol(Protocol):
    """What the root needs from a core (``_solver.Core`` or ``_solver_py.Core``)."""

    def __init__(self, lines: Sequence[int], counted: int, maps: Sequence[Sequence[int]], tt_bits: int) -> None: ...

    nodes: int
    aborted: bool
    best_move: int

    def search(
        self,
        occupied: int,
        planes: int,
        hand: int,
        alpha: int,
        beta: int,
        max_nodes: int = 0,
        seconds: float = 0.0,
        depth: int = ...,
        win_order: bool = False,
    ) -> int: ...

    def root_turns(
        self,
        occupied: int,
        planes: int,
        hand: int,
        alpha: int,
        beta: int,
        max_nodes: int = 0,
        seconds: float = 0.0,
        depth: int = ...,
        win_order: bool = False,
    ) -> list[int] | None: ...

    def stop(self) -> None: ...

    def reset_stop(self) -> None: ...

    def clear(self) -> None: ...


def _compiled() -> tuple[type[CoreProtocol], int] | None:
    """The C core and its EXACT, or None when it was not built."""
    try:
        from . import _solver
    except ImportError:
        return None
    core: type[CoreProtocol] = _solver.Core
    return core, _solver.EXACT


_COMPILED_CORE: Final = _compiled()
_COMPILED: Final = None if _COMPILED_CORE is None else _COMPILED_CORE[0]


def _exact() -> int:
    # The C core's #define is the one source; only where it was not built does start-up import the mirror for it
    # (it holds the same, tests/test_solver.py), and then the mirror is the core anyway.
    if _COMPILED_CORE is not None:
        return _COMPILED_CORE[1]
    from . import _solver_py

    return _solver_py.EXACT


EXACT: Final = _exact()
"""A depth no game reaches: the search is exact (the cores' own, from the C core where it was built)."""


def _pure_core() -> type[CoreProtocol]:
    # Imported on first use: with the C core (the common case) the mirror is never needed, and compiling its module
    # is part of every start-up where no bytecode cache is kept.
    from . import _solver_py

    return _solver_py.Core


def compiled_core_available() -> bool:
    """True when the C extension was built and imports."""
    return _COMPILED is not None


class Verdict(enum.Enum):
    """The result of perfect play for the player to move."""

    WIN = "win"
    DRAW = "draw"
    LOSS = "loss"


_OPPOSITE: Final = {Verdict.WIN: Verdict.LOSS, Verdict.LOSS: Verdict.WIN, Verdict.DRAW: Verdict.DRAW}


@dataclass(frozen=True, slots=True)
class Value:
    """The exact value of a position for the player to move."""

    verdict: Verdict
    """Win, draw or loss with perfect play by both."""
    turns: int
    """Turns to the end of the game, both players' and the one to play now included (draw: until the board is full)."""

    def __str__(self) -> str:
        """``win 3``, ``loss 2`` or ``draw``: the form of a UQI ``score``."""
        return "draw" if self.verdict is Verdict.DRAW else f"{self.verdict.value} {self.turns}"

    @property
    def rank(self) -> int:
        """Orders values from the mover's point of view: sooner wins first, then draws, then later losses."""
        if self.verdict is Verdict.WIN:
            return 100 - self.turns
        if self.verdict is Verdict.LOSS:
            return self.turns - 100
        return 0

    def before(self) -> Value:
        """The value of the turn that led here, for the player who made it (the opponent of the player to move)."""
        return Value(_OPPOSITE[self.verdict], self.turns + 1)

    def after(self) -> Value:
        """The inverse of :meth:`before`: for a turn's value (for the player who made it), the value of the position
        it leads to, for the player to move there."""
        return Value(_OPPOSITE[self.verdict], self.turns - 1)


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on one request; None means no bound."""

    nodes: int | None = None
    """Nodes the core may visit, over all its searches for the request (checked every 1,024 nodes)."""
    seconds: float | None = None
    """Wall-clock seconds for the whole request."""


@dataclass(frozen=True, slots=True)
class Analysis:
    """What a request found."""

    value: Value | None
    """The exact value for the player to move, or None when the limits ended the search first (unproven)."""
    best: tuple[Turn, ...]
    """When proven, every best turn (see :meth:`Solver.analyse`), in legal-turn order; when unproven, the best turn
    found so far, alone."""
    nodes: int
    """Nodes the core visited."""
    seconds: float
    """Wall-clock time taken."""

    @property
    def proven(self) -> bool:
        """True when :attr:`value` is exact."""
        return self.value is not None


class Aim(enum.Enum):
    """What a :meth:`Solver.search` sets out to prove; the narrower the aim, the cheaper the search."""

    VALUE = "value"
    """Whether the position is won, lost, or neither (within the depth)."""
    SAFETY = "safety"
    """A turn that does not lose (within the depth), or that every turn loses. At a drawn position this costs a
    fraction of VALUE: it need not show that no turn wins."""
    WIN = "win"
    """A turn that wins (within the depth), or that none does."""


_WINDOWS: Final = {Aim.VALUE: (-1, 1), Aim.SAFETY: (-1, 0), Aim.WIN: (0, 1)}


@dataclass(frozen=True, slots=True)
class Search:
    """What :meth:`Solver.search` found within its depth."""

    turn: Turn
    """The best turn found (with the aim WIN and no win found, just a legal turn)."""
    verdict: Verdict | None
    """Win or loss when proven within the depth; draw when the aim was VALUE and the depth reached the end of the
    game; None when the search left it open."""
    safe: bool
    """True when :attr:`turn` is proven not to lose within the depth (at all, when the depth reached the end)."""
    turns: int | None
    """With a verdict, the turns to the end with best play, at most (exact for a draw)."""
    nodes: int
    """Nodes the core visited."""


class _Unproven(Exception):
    """A core search was cut short."""


class _Children:
    """The root's distinct children still to test, for one or two threads; and what was found.

    Each thread takes the children of one square after another (they share the most subtrees, so its table serves
    them best). When no square is left, a thread that runs dry takes the back half of what the other has left of
    its square, so that neither waits long for the other at the end (a square's children can take a second).
    """

    def __init__(self, children: list[tuple[int, Turn]]) -> None:
        by_square: dict[int | None, list[tuple[int, Turn]]] = {}
        for key, turn in children:
            by_square.setdefault(turn.place, []).append((key, turn))
        # The largest groups first, so that the last ones taken, while the other thread may be idle, are small.
        self._groups = collections.deque(sorted(by_square.values(), key=len, reverse=True))
        self._mine: dict[int, collections.deque[tuple[int, Turn]]] = {}
        self._lock = threading.Lock()
        self.kept: dict[int, bool] = {}
        """Child key -> whether the turn keeps the value tested."""

    def take(self, taker: int) -> tuple[int, Turn] | None:
        """The next child for ``taker`` (0 or 1), or None when none is left (or :meth:`halt` was called)."""
        with self._lock:
            mine = self._mine.get(taker)
            if not mine:
                if self._groups:
                    mine = self._mine[taker] = collections.deque(self._groups.popleft())
                else:
                    theirs = self._mine.get(1 - taker)
                    if not theirs:
                        return None
                    half = collections.deque[tuple[int, Turn]]()
                    for _ in range((len(theirs) + 1) // 2):
                        half.appendleft(theirs.pop())
                    mine = self._mine[taker] = half
            return mine.popleft()

    def halt(self) -> None:
        """Leaves nothing more to take."""
        with self._lock:
            self._groups.clear()
            self._mine.clear()


class _RootTurns:
    """The root's turns still to prove in a win proof on two threads, in order; and the best score found."""

    def __init__(self, moves: list[int]) -> None:
        self._moves = collections.deque(moves)
        self._lock = threading.Lock()
        self.won: tuple[int, int] | None = None
        """The root's score and the turn (``square << 4 | piece``) of the first win found."""
        self.best = -_BIG
        """The best fail-soft root score of the turns proven not to win."""

    def take(self) -> int | None:
        """The next turn, or None when none is left (or a win was found, or :meth:`halt` was called)."""
        with self._lock:
            return self._moves.popleft() if self._moves and self.won is None else None

    def record(self, score: int, move: int) -> bool:
        """Notes a turn's root score; True when it is the first win (the work is then over)."""
        with self._lock:
            if score >= 1:
                if self.won is None:
                    self.won = (score, move)
                    return True
                return False
            self.best = max(self.best, score)
            return False

    def halt(self) -> None:
        """Leaves nothing more to take."""
        with self._lock:
            self._moves.clear()


def _wait_quietly(future: Future[None]) -> None:
    """Waits for work whose result is no longer wanted (cut short or not)."""
    with contextlib.suppress(_Unproven):
        future.result()


class Solver:
    """Solves positions of one variant. Not thread-safe, except :meth:`stop`; make one per thread."""

    def __init__(self, variant: Variant, *, tt_bits: int = DEFAULT_TT_BITS, pure: bool | None = None) -> None:
        if pure is None:
            pure = os.environ.get(PURE_ENV, "") not in ("", "0")
        self.compiled = not pure and _COMPILED is not None
        """True when the C core is in use."""
        core_type = _COMPILED if self.compiled and _COMPILED is not None else _pure_core()
        counted = sum(a.value for a in variant.attributes)
        self.variant = variant
        """The rules this solver plays by."""
        self.core: CoreProtocol = core_type(variant.lines, counted, board_maps(variant.shapes), tt_bits)
        """The search core (C or pure Python)."""
        self._tt_bits = tt_bits
        self._nodes = 0
        self._node_limit: int | None = None
        self._deadline: float | None = None
        self._stop_requested = False
        self._twin: Solver | None = None

    def stop(self) -> None:
        """Ends the running request as soon as possible (from any thread): it reports its value as unproven, and so
        does every later request, at once, until :meth:`resume`."""
        self._stop_requested = True
        self.core.stop()
        if self._twin is not None:
            self._twin.core.stop()

    def resume(self) -> None:
        """Lets requests run again after :meth:`stop`."""
        self._stop_requested = False
        self.core.reset_stop()
        if self._twin is not None:
            self._twin.core.reset_stop()

    def clear(self) -> None:
        """Forgets every position searched so far (the transposition table)."""
        self.core.clear()
        if self._twin is not None:
            self._twin.core.clear()

    # --- requests ------------------------------------------------------------------------------------------------

    def value(self, position: Position, limits: Limits | None = None) -> Analysis:
        """The exact value of ``position`` for the player to move (``best`` holds one best turn when proven)."""
        return self._request(position, limits, every=False, keep_turns=True)

    def analyse(
        self,
        position: Position,
        limits: Limits | None = None,
        *,
        keep_turns: bool = True,
        value: Value | None = None,
        threads: int = 2,
    ) -> Analysis:
        """The exact value and every best turn: those whose value is the position's own, turn count included
        (the quickest wins, the longest losses, every drawing turn). With ``keep_turns=False`` every turn that
        keeps the verdict (win, draw or loss) counts as best, as in the project's solved vectors. ``value``, when
        the caller knows the position's exact value already, is taken as it instead of being proven again.
        ``threads`` 1 keeps the request on this thread (for a caller whose other processes use every CPU already:
        the twin's table is its own, so a second thread then only repeats work); with 2 it may use a second one
        (see :meth:`_value_and_every_best`)."""
        if threads not in (1, 2):
            raise ValueError("threads must be 1 or 2")
        return self._request(position, limits, every=True, keep_turns=keep_turns, known=value, threads=threads)

    def search(
        self,
        position: Position,
        depth: int,
        limits: Limits | None = None,
        *,
        aim: Aim = Aim.VALUE,
        threads: int = 1,
    ) -> Search | None:
        """The best turn within ``depth`` turns for ``aim``, or None when the limits ended the search first.

        Positions ``depth`` turns away count as draws, so a win or a loss this proves is exact, a draw only when
        ``depth`` reaches the end of the game. Searches of growing depth share the table: iterative deepening
        costs little more than its last step, and its last step, at a depth of the empty squares, is exact.

        With ``threads`` 2, an exact win proof without a node limit (on the C core, with two CPUs) is shared with a
        twin solver on a second thread: the two take the root's turns, in the order one thread would try them, from
        one queue, each proving its turn on its own table, and the first win found ends both (see
        :meth:`_win_on_two_threads`). Any other search runs on one thread.
        """
        if position.is_over:
            raise ValueError("the game is over: there is nothing to search")
        if depth < 1:
            raise ValueError("depth must be at least 1")
        if threads not in (1, 2):
            raise ValueError("threads must be 1 or 2")
        self._start(limits)
        try:
            return self._search_root(position, depth, aim, threads)
        except _Unproven:
            return None

    def proven_win(self, position: Position) -> Turn | None:
        """A winning turn at ``position`` that the table already proves (an earlier search's: a previous turn's proof,
        or a win found at a shallower depth), or a win on the board; None when there is none. It does not search (a
        probe of one node), so it needs no time: what a searcher plays when its time is gone before its first step.
        After :meth:`stop` (until :meth:`resume`) it finds only a win on the board."""
        found = self.search(position, EXACT, Limits(nodes=1), aim=Aim.WIN)
        return found.turn if found is not None and found.verdict is Verdict.WIN else None

    def _search_root(self, position: Position, depth: int, aim: Aim, threads: int = 1) -> Search:
        if position.claimable:
            return Search(CLAIM, Verdict.WIN, True, 1, 0)
        wins = position.winning_squares() if position.hand is not None else []
        if wins:
            return Search(turn_of(place=wins[0], call=position.variant.strict), Verdict.WIN, True, 1, self._nodes)
        empty = 16 - position.placed
        if empty == 1 and position.hand is not None:
            return Search(turn_of(place=position.empty_squares()[0]), Verdict.DRAW, True, 1, self._nodes)
        alpha, beta = _WINDOWS[aim]
        occupied, planes = position[1], position[2]
        if position.hand is not None:
            # A win proof's root tries its turns in an order of its own (the core's win_order), but never under a
            # node limit: perfect's Levels search with one, and their ladder was measured on the plain order's nodes.
            win_order = aim is Aim.WIN and self._node_limit is None
            split = None
            # Two threads when the caller asks (perfect asks by its own policy: its Threads option, the exact pass
            # from SPLIT_FROM empty squares, a CPU to spare now) and this search can split: an exact win proof
            # without a node limit, on the C core, with two CPUs. Else one thread, whoever asked.
            if win_order and threads == 2 and depth >= empty and self.compiled and _WORKERS > 1:
                split = self._win_on_two_threads(position)
            if split is None:
                score = self._search(occupied, planes, position[3], alpha, beta, depth, win_order)
                move = self.core.best_move
            else:
                score, move = split
            turn = (_core_turn(position, move) if move >= 0 else None) or self._found(position)
            extra = 0
        else:
            # Give-only: each gift is a child with a piece in hand, searched one turn less deep.
            score, turn, extra = -_BIG, position.legal_turns()[0], 1
            for gift in position.legal_turns():
                assert gift.give is not None
                child = -self._search(occupied, planes, gift.give, -beta, -max(alpha, score), depth - 1)
                if child > score:
                    score, turn = child, gift
                    if score >= beta:
                        break
        safe = score >= 0 and score > alpha
        if score >= 1:
            return Search(turn, Verdict.WIN, safe, empty - score + 1 + extra, self._nodes)
        if score <= -1:
            return Search(turn, Verdict.LOSS, safe, empty + score + 1 + extra, self._nodes)
        if aim is Aim.VALUE and depth >= empty + extra:
            return Search(turn, Verdict.DRAW, safe, empty + extra, self._nodes)
        return Search(turn, None, safe, None, self._nodes)

    def _win_on_two_threads(self, position: Position) -> tuple[int, int] | None:
        """An exact win proof's fail-soft score at ``position`` (window (0, 1)) and the turn it found, on this thread
        and a twin's; None when the root decides without trying a turn (the caller's search then does at once).

        The root's turns come in the order the core's own win proof would try them (``root_turns``); each thread
        takes the next one from the queue and proves the opponent's position after it lost, or not, on its own table.
        The first win stops the other thread. Without a win, the score is the best of the turns' fail-soft scores, as
        one thread's search returns it. Measured against the hunt it replaced (a second thread proving the
        turns in its own order): in nodes to the proven win on the slower thread, seed 2's 40 won 12-empty positions
        took 0.74 of one thread's (the hunt 0.77), seed 3's 24 0.71 (the hunt 0.94).
        """
        occupied, planes, hand = position[1], position[2], position[3]
        assert hand is not None
        seconds = 0.0 if self._deadline is None else self._deadline - time.monotonic()
        if self._deadline is not None and seconds <= 0:
            raise _Unproven
        moves = self.core.root_turns(occupied, planes, hand, 0, 1, 0, seconds, EXACT, True)
        self._nodes += self.core.nodes
        if self.core.aborted:
            raise _Unproven
        if not moves:
            return None
        twin = self._twin_solver()
        twin._nodes, twin._node_limit, twin._deadline = 0, None, self._deadline
        work = _RootTurns(moves)
        pool = ThreadPoolExecutor(1)
        theirs = pool.submit(twin._prove_turns, position, work, self)
        try:
            self._prove_turns(position, work, twin)
            theirs.result()
        except BaseException:
            if work.won is None:  # cut short (a limit, stop(), an interrupt): nothing the twin finds is wanted
                twin.core.stop()
                _wait_quietly(theirs)
                raise
            _wait_quietly(theirs)  # one thread's win stopped the other
        finally:
            work.halt()
            pool.shutdown()
            self._nodes += twin._nodes
            if not self._stop_requested:  # the stops above were this search's own
                self.core.reset_stop()
                twin.core.reset_stop()
        if work.won is not None:
            return work.won
        return work.best, moves[0]

    def _prove_turns(self, position: Position, work: _RootTurns, other: Solver) -> None:
        """Takes turn after turn of ``position`` from ``work`` and proves the opponent's position after it lost, or
        not (window (-1, 0) there); a win ends the work and stops ``other``'s search."""
        while (move := work.take()) is not None:
            child = position.apply(turn_of(place=move >> 4, give=move & 15))
            try:
                score = -self._search(child[1], child[2], child[3], -1, 0)
            except _Unproven:
                if work.won is not None:
                    return  # the other thread won: this one was stopped
                raise
            if work.record(score, move):
                other.core.stop()
                return

    def turn_value(self, position: Position, turn: Turn, limits: Limits | None = None) -> Value | None:
        """The exact value of playing ``turn`` in ``position``, for the player who plays it (None: unproven)."""
        self._start(limits)
        try:
            return self._child_value(position.apply(turn))
        except _Unproven:
            return None

    # --- the root --------------------------------------------------------------------------------------------------

    def _start(self, limits: Limits | None) -> float:
        self._nodes = 0
        now = time.monotonic()
        self._node_limit = None if limits is None else limits.nodes
        seconds = None if limits is None else limits.seconds
        self._deadline = None if seconds is None else now + seconds
        return now

    def _request(
        self,
        position: Position,
        limits: Limits | None,
        *,
        every: bool,
        keep_turns: bool,
        known: Value | None = None,
        threads: int = 2,
    ) -> Analysis:
        if position.is_over:
            raise ValueError("the game is over: there is nothing to solve")
        started = self._start(limits)
        try:
            if every:
                value, best = self._value_and_every_best(position, keep_turns, known, threads)
            else:
                value = self._value(position)
                best = (self._one_best(position, value),)
        except _Unproven:
            return Analysis(None, (self._found(position),), self._nodes, time.monotonic() - started)
        return Analysis(value, best, self._nodes, time.monotonic() - started)

    def _search(
        self, occupied: int, planes: int, hand: int, alpha: int, beta: int, depth: int = EXACT, win_order: bool = False
    ) -> int:
        """One core search within what is left of the request's limits; raises _Unproven when cut short."""
        max_nodes = 0
        if self._node_limit is not None:
            max_nodes = self._node_limit - self._nodes
            if max_nodes <= 0:
                raise _Unproven
        seconds = 0.0
        if self._deadline is not None:
            seconds = self._deadline - time.monotonic()
            if seconds <= 0:
                raise _Unproven
        score = self.core.search(occupied, planes, hand, alpha, beta, max_nodes, seconds, depth, win_order)
        self._nodes += self.core.nodes
        if self.core.aborted:
            raise _Unproven
        return score

    def _score(self, position: Position) -> int:
        """The exact core score of a position with a piece in hand: a win scores the empty squares left at the
        end plus one, a loss minus that, a draw 0. Binary search with null windows after a first (-1, 1) search."""
        occupied, planes, hand = position[1], position[2], position[3]
        empty = 16 - occupied.bit_count()
        low, high = 1 - empty, empty
        score = self._search(occupied, planes, hand, -1, 1)
        if score == 0:
            return 0
        if score > 0:
            low = score
        else:
            high = score
        while low < high:
            guess = (low + high + 1) // 2
            score = self._search(occupied, planes, hand, guess - 1, guess)
            if score >= guess:
                low = score
            else:
                high = score
        return low

    def _value(self, position: Position) -> Value:
        """The exact value of an unfinished position."""
        if position.claimable:
            return Value(Verdict.WIN, 1)
        if position.hand is None:
            return max((self._child_value(position.apply(t)) for t in position.legal_turns()), key=lambda v: v.rank)
        return _value_of(self._score(position), 16 - position.placed)

    def _child_value(self, child: Position) -> Value:
        """The value of the turn that led to ``child``, for the player who made it."""
        if child.outcome is Outcome.WIN:
            return Value(Verdict.WIN, 1)
        if child.outcome is Outcome.DRAW:
            return Value(Verdict.DRAW, 1)
        return self._value(child).before()

    def _keeps(self, position: Position, turn: Turn, value: Value, keep_turns: bool) -> bool:
        """True when ``turn`` keeps ``value`` (its turn count too, with ``keep_turns``)."""
        child = position.apply(turn)
        if child.is_over or child.claimable or child.hand is None:
            got = self._child_value(child)
            return got == value if keep_turns else got.verdict is value.verdict
        if not keep_turns and value.verdict is Verdict.LOSS:
            return True
        occupied, planes, hand = child[1], child[2], child[3]
        empty = 16 - occupied.bit_count()
        if keep_turns:
            # No turn is worth more than the position, so the child is worth at least the opposite value: a null
            # window just above it tells whether it is worth no more (about half the work of proving it exact).
            target = _score_of(value.after(), empty)
            return self._search(occupied, planes, hand, target, target + 1) <= target
        if value.verdict is Verdict.WIN:
            return self._search(occupied, planes, hand, -1, 0) < 0
        return self._search(occupied, planes, hand, -1, 1) == 0

    def _value_and_every_best(
        self, position: Position, keep_turns: bool, known: Value | None = None, threads: int = 2
    ) -> tuple[Value, tuple[Turn, ...]]:
        """The value and every legal turn that keeps it. Symmetric children have one value, so each is searched
        once. From PARALLEL_EMPTIES empty squares on, with the C core, no node limit and ``threads`` 2, a twin solver
        on a second thread shares the children with this one (the core runs without the GIL), each thread on its own
        table: they take the children square by square from one queue (the children of one square share the most
        subtrees), the last square split between them (see _Children), and while this thread finds the value, the
        twin already tests the children as if it were a draw (a drawn root is the common case and its children cost
        the most); for any other value that work is dropped."""
        turns = position.legal_turns()
        keys = [canonical_key(position.apply(turn)) for turn in turns]
        first: dict[int, Turn] = {}
        for key, turn in zip(keys, turns, strict=True):
            first.setdefault(key, turn)
        distinct = list(first.items())
        if not (
            self.compiled
            and threads > 1
            and _WORKERS > 1
            and self._node_limit is None
            and 16 - position.placed >= PARALLEL_EMPTIES
            and len(distinct) > 1
        ):
            value = known or self._value(position)
            kept = {key: self._keeps(position, turn, value, keep_turns) for key, turn in distinct}
            return value, tuple(turn for key, turn in zip(keys, turns, strict=True) if kept[key])
        twin = self._twin_solver()
        twin._nodes, twin._node_limit, twin._deadline = 0, None, self._deadline
        draw = None if position.hand is None or position.claimable else _value_of(0, 16 - position.placed)
        pool = ThreadPoolExecutor(1)
        work = _Children(distinct)
        theirs: Future[None] | None = None
        twin_stopped = False
        try:
            if draw is not None and known is None:
                theirs = pool.submit(twin._keeps_from, position, work, draw, keep_turns, 1)
            value = known or self._value(position)
            if theirs is not None and value != draw:
                work.halt()
                _wait_quietly(theirs)
                work, theirs = _Children(distinct), None
            if theirs is None:
                theirs = pool.submit(twin._keeps_from, position, work, value, keep_turns, 1)
            self._keeps_from(position, work, value, keep_turns, 0)
            theirs.result()
        except BaseException:
            # Cut short here (a limit, stop(), an interrupt): nothing the twin finds is wanted any more.
            twin.core.stop()
            twin_stopped = True
            raise
        finally:
            work.halt()
            pool.shutdown()  # the twin stops after its child, or at once when stopped
            if twin_stopped and not self._stop_requested:
                twin.core.reset_stop()
            self._nodes += twin._nodes
        return value, tuple(turn for key, turn in zip(keys, turns, strict=True) if work.kept[key])

    def _keeps_from(self, position: Position, work: _Children, value: Value, keep_turns: bool, taker: int) -> None:
        """Takes child after child from ``work`` (as ``taker``, 0 or 1) and records whether each keeps ``value``."""
        while (child := work.take(taker)) is not None:
            key, turn = child
            work.kept[key] = self._keeps(position, turn, value, keep_turns)

    def make_twin(self) -> None:
        """Makes now the twin solver that a second thread searches with (every best turn; win proofs with
        ``threads`` 2), so that its table is not made on a clock; :meth:`clear` clears it with this solver's."""
        self._twin_solver()

    def _twin_solver(self) -> Solver:
        """The solver that takes half of the root's children (made on first use, kept with its table)."""
        if self._twin is None:
            self._twin = Solver(self.variant, tt_bits=self._tt_bits, pure=False)
            if self._stop_requested:
                self._twin.core.stop()
        return self._twin

    def _one_best(self, position: Position, value: Value) -> Turn:
        """A turn that keeps ``value`` exactly: the core's own best turn when it is one, else the first that does."""
        move = self.core.best_move
        if position.hand is not None and not position.claimable and move >= 0:
            turn = _core_turn(position, move)
            if turn is not None and self._keeps(position, turn, value, True):
                return turn
        for turn in position.legal_turns():
            if self._keeps(position, turn, value, True):
                return turn
        raise AssertionError("no turn keeps the value of the position")  # the value is the best turn's value

    def _found(self, position: Position) -> Turn:
        """The best turn known after a search was cut short: a win now, else the core's best so far, else a
        turn that does not lose at once."""
        turns = position.legal_turns()
        for turn in turns:
            if (
                turn.claim
                or turn.call
                or (turn.place is not None and turn.give is None and position.wins_at(turn.place))
            ):
                return turn
        move = self.core.best_move
        if position.hand is not None and move >= 0 and (found := _core_turn(position, move)) is not None:
            return found
        return next((t for t in turns if not _loses_at_once(position, t)), turns[0])


def _value_of(score: int, empty: int) -> Value:
    """A core score at a node with ``empty`` empty squares (and a piece in hand) as a :class:`Value`."""
    if score > 0:
        return Value(Verdict.WIN, empty - score + 1)
    if score < 0:
        return Value(Verdict.LOSS, empty + score + 1)
    return Value(Verdict.DRAW, empty)


def _score_of(value: Value, empty: int) -> int:
    """The inverse of :func:`_value_of`."""
    if value.verdict is Verdict.WIN:
        return empty - value.turns + 1
    if value.verdict is Verdict.LOSS:
        return -(empty - value.turns + 1)
    return 0


def _core_turn(position: Position, move: int) -> Turn | None:
    """The turn a core move (``square << 4 | piece``) stands for in ``position``, if it is legal there."""
    square, piece = move >> 4, move & 15
    give = None if position.placed == 15 else piece
    turn = turn_of(place=square, give=give)
    try:
        position.apply(turn)
    except ValueError:
        return None
    return turn


def _loses_at_once(position: Position, turn: Turn) -> bool:
    """True when the opponent can win on the next turn after ``turn``."""
    child = position.apply(turn)
    if child.is_over:
        return False
    if child.claimable:
        return True
    hand = child.hand
    return hand is not None and bool(child.winning_squares())
