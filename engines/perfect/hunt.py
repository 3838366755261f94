"""A second thread that hunts for a winning turn while the main search proves the position.

At 11 and 12 empty squares the exact win proof is the whole cost of a won position: the root tries its turns one
after the other (the opponent's fewest safe replies first), each non-winning one must be refuted before the next,
and the one or two winning turns among forty to a hundred distinct safe ones often come late. The hunt takes the
turns in another order: on a solver of its own (its own table; the core runs without the GIL), it first searches
each turn's position two turns deep (on a small table cleared each time, so that the counts are comparable) and
sorts the turns by the nodes that took, fewest first (a few milliseconds), then proves each position lost for the
opponent or not, and stops the main search the moment one is. Measured with this code on 29 won 12-empty positions
(sampled with a seed of their own, not the benchmark's; ``benchmarks/hunt_nodes.py`` prints the same for the
benchmark's), the sooner of the two threads proves the win within 100,000 nodes at 17 (one thread: 13), within
50,000 at 5 (2), 150,000 at 20 (18); 0.89 of one thread's nodes in all. On the benchmark's own 20 positions it
gains less (8 and 8 within 100,000 nodes, 10 and 11 within 200,000; 0.91 of the nodes). Offline, with each turn
proven on a fresh solver, the legal order did about half as well and the reverse legal order less. It never
chooses a turn it has not proven to win or, as below, not to lose, so it cannot spoil a draw; at a drawn position
it only spends the second core.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from quarto_arena.protocol.rules import Position, Turn
from quarto_arena.protocol.solver import Aim, Limits, Search, Solver, Verdict

from ..greedy import safe_turns

__all__ = ["HUNT_FROM", "ORDER_DEPTH", "Helper", "Hunt", "Won"]

HUNT_FROM = 11
"""Empty squares (a piece in hand) from which the exact search starts a hunt: below, proofs take a few
milliseconds and a thread would cost more than it saves."""
ORDER_DEPTH = 2
"""Turns deep the hunt searches each turn's position to order them (see the module docstring)."""
ORDER_TT_BITS = 10
"""log2 of the entries of the small table the ordering searches use, cleared before each: a table shared by them
would make the later searches count fewer nodes (transpositions), which skews the order."""


@dataclass(frozen=True, slots=True)
class Won:
    """A turn the hunt proved to win."""

    turn: Turn
    turns: int
    """Turns to the win after ``turn``, ``turn`` included, as the proof found it (the quickest win may be sooner)."""
    nodes: int


class Hunt:
    """Proves turns of ``position`` winning one by one, in the order above, on ``solver`` in a thread of its
    own until ``deadline`` (a :func:`time.monotonic` time; None: until :meth:`finish`). ``on_win`` is called from
    that thread when a turn is proven to win (the engine stops its main search with it).

    With ``guess_from`` (a time before the deadline), a proof still running then is given up, and the rest of the
    time proves that its turn at least does not lose: that turn, :attr:`safe`, is the one the engine plays when
    nothing was proven in time. Measured as above, it won where the win was not proven in a quarter of the cases,
    the main search's safe turn at 1 of 22 positions: a win proof that is running late is one the opponent has
    not refuted yet.
    """

    def __init__(
        self,
        solver: Solver,
        position: Position,
        deadline: float | None,
        on_win: Callable[[], None],
        guess_from: float | None = None,
    ) -> None:
        self._solver = solver
        self._position = position
        self._deadline = deadline
        self._guess_from = guess_from
        self._on_win = on_win
        self._finished = threading.Event()
        self._nodes = 0
        self.won: Won | None = None
        self.safe: Turn | None = None
        """A turn proven not to lose, whose win proof was running at ``guess_from``."""
        solver.resume()
        self._thread = threading.Thread(target=self._run, name="perfect-hunt", daemon=True)
        self._thread.start()

    def finish(self) -> tuple[Won | None, int]:
        """Stops the hunt, without waiting for its thread (on a loaded machine that could take the turn tens of
        milliseconds past its time; :meth:`wait` before its solver searches again): what it proved, and the nodes
        it visited so far."""
        self._finished.set()
        self._solver.stop()
        return self.won, self._nodes

    def wait(self) -> tuple[Won | None, int]:
        """Waits until the hunt ends by itself (a win proven, every turn tried, or the deadline): as :meth:`finish`."""
        self._thread.join()
        return self.won, self._nodes

    def _run(self) -> None:
        position = self._position
        children = [(turn, child) for turn in safe_turns(position) if not (child := position.apply(turn)).is_over]
        # A win at once is left out: the main search sees it first.
        order: list[tuple[int, int]] = []
        small = Solver(self._solver.variant, tt_bits=ORDER_TT_BITS, pure=not self._solver.compiled)
        for index, (_, child) in enumerate(children):
            small.clear()
            found = self._search(child, ORDER_DEPTH, Aim.SAFETY, self._deadline, small)
            if found is None:
                return
            order.append((found.nodes, index))
        until = self._deadline if self._guess_from is None else self._guess_from
        for _, index in sorted(order):
            turn, child = children[index]
            exact = 16 - child.placed
            found = self._search(child, exact, Aim.SAFETY, until)
            if found is None:
                if until != self._deadline and not self._finished.is_set():
                    # Out of proving time: does this turn at least not lose? (The opponent cannot win.)
                    check = self._search(child, exact, Aim.WIN, self._deadline)
                    if check is not None and check.verdict is not Verdict.WIN:
                        self.safe = turn
                return
            if found.verdict is Verdict.LOSS:
                assert found.turns is not None
                self.won = Won(turn, found.turns + 1, self._nodes)
                self._on_win()
                return

    def _search(
        self, child: Position, depth: int, aim: Aim, until: float | None, solver: Solver | None = None
    ) -> Search | None:
        """The opponent's search at ``child`` within ``depth`` turns and until ``until`` (on the hunt's solver unless
        another is given); None when stopped or out of time."""
        if self._finished.is_set():
            return None
        seconds = None
        if until is not None:
            seconds = until - time.monotonic()
            if seconds <= 0:
                return None
        found = (solver or self._solver).search(child, depth, Limits(seconds=seconds), aim=aim)
        if found is not None:
            self._nodes += found.nodes
        return found


class Helper:
    """The second thread's solver, and its last hunt: each hunt's thread is waited for only when the solver is
    needed again (the next hunt, a new game), not at the end of the turn it served."""

    def __init__(self, solver: Solver) -> None:
        self.solver = solver
        self._last: Hunt | None = None

    def start(
        self, position: Position, deadline: float | None, on_win: Callable[[], None], guess_from: float | None
    ) -> Hunt:
        """A new :class:`Hunt` on the solver, once the last one has ended."""
        self.settle()
        self._last = Hunt(self.solver, position, deadline, on_win, guess_from)
        return self._last

    def settle(self) -> None:
        """Stops the last hunt, if any, and waits for its thread to end."""
        if self._last is not None:
            self._last.finish()
            self._last.wait()
            self._last = None
