"""The perfect engine: exact play wherever the solver proves the position within the time, a strong search before.

With 12 empty squares or fewer it tries to solve the position (:meth:`quarto_arena.protocol.solver.Solver.search`):
first a turn that does not lose, then whether a turn wins, the second being most of the work at a drawn position,
so the first is what it falls back on when time runs out; no unproven turn is ever played. From 11 empty squares
on, with ``Threads`` 2 and a CPU to spare, the win proof runs on two threads that share the root's turns
(:meth:`~quarto_arena.protocol.solver.Solver.search`'s ``threads``). Once the value is proven the search stops at
once and ``info`` reports ``score win N``, ``loss N`` or ``draw``; a proven win is converted by the quickest win.
At ``movetime 100`` (a 70 ms budget then) every won position tried at 11 empty squares was converted, at 12 with
one thread 19 of 20 with standard shapes from a cold table on a quiet machine (the win proof outlasts the budget at
the rest) and all with advanced ones; with SPEC §4.5's 50 ms, 15 and 17 of 20 on a machine loaded ten times over
(``benchmarks/convert.py``, figures in the README).

Before that, a deepening search of three turns proves any near win or loss, and Monte Carlo tree search with the
solver at the leaves (:mod:`.mcts`) weighs the rest, reporting its estimate as ``score value`` (never ±1000, which
SPEC §5.3 keeps for a proof). It was measured
against deepening alpha-beta all the way (``Search alphabeta``: it tries first the turns that leave the opponent
the fewest safe replies, and plays the first one it cannot refute), and never lost to it (figures in the README).

Time: it plans the SDK's budget (:func:`quarto_arena.protocol.bot.time_budget`, SPEC §4.5: a turn's limit less
50 ms kept back for a loaded machine, never more than half of it; a fair share of a clock), checks its own deadline
in the core every 64 nodes and before each step of its searches that would not end in time (:mod:`.mcts`), and
answers ``stop`` at once (the core is told through :meth:`SearchContext.on_stop`), so it never needs the arena's
margin.

Options: ``Level`` 0-10 (0 plays at random, 1 as greedy, 2-9 a search capped in nodes with a falling rate of
greedy turns, even steps of about 40 Elo: :mod:`.levels`; 10 without limit: perfect within its time),
``Hash`` (MiB of transposition table), ``Seed``, ``Search``, and ``Threads`` (1 or 2, default 1).

Run it with ``python -m quarto_arena.engines.perfect [--listen ENDPOINT]``.
"""

from __future__ import annotations

import os
import random
import time

from quarto_arena.protocol.bot import OptionValue, SearchContext
from quarto_arena.protocol.rules import Position, Turn, Variant, turn_of
from quarto_arena.protocol.solver import CPUS, EXACT, Aim, Limits, Search, Solver, Verdict
from quarto_arena.protocol.uqi import OptionSpec, OptionType, Score

from ..greedy import greedy_turn, safe_turns, winning_turns
from ..random import SEED, SeededBot
from .levels import RUNGS
from .mcts import mcts_turn

__all__ = [
    "HASH",
    "LEVEL",
    "MAX_LEVEL",
    "MCTS_ABOVE",
    "SEARCH",
    "SPLIT_FROM",
    "THREADS",
    "PerfectBot",
    "deepening_turn",
]

MAX_LEVEL = 10
LEVEL = OptionSpec("Level", OptionType.SPIN, str(MAX_LEVEL), 0, MAX_LEVEL)
"""Strength: 0 random, 1 greedy, 2-9 a search capped in nodes with fewer greedy turns at each level (:mod:`.levels`),
10 perfect within the time."""
HASH = OptionSpec("Hash", OptionType.SPIN, "16", 1, 1024)
"""MiB of transposition table (rounded down to a power of two entries of 16 bytes); with two ``Threads``, the
second thread has a table of its own of the same size."""
SPLIT_FROM = 11
"""Empty squares (a piece in hand) from which the exact win proof runs on two threads with ``Threads`` 2: below,
proofs take a few milliseconds and a thread would cost more than it saves."""
THREADS = OptionSpec("Threads", OptionType.SPIN, "1", 1, 2)
"""Threads of the exact win proof from :data:`SPLIT_FROM` empty squares on: with 2 (when a CPU is to spare:
:func:`spare_cpu`), two threads share the root's turns, each on a table of its own. One by default, as engines do:
an arena that plays ``-j N`` games gives each engine one of N cores, and a second thread per engine only splits that
core (``benchmarks/convert.py --compare`` plays both)."""


SEARCH = OptionSpec("Search", OptionType.COMBO, "mcts", vars=("mcts", "alphabeta"))
"""The search before the exact endgame: Monte Carlo tree search (stronger, measured: see the README), or the
deepening alpha-beta search alone."""

EXACT_GAP = 4
"""Once the depth comes within this many turns of the end, the next step is the exact solve: the last few depths
cost more than solving outright, since the exact search cuts where a horizon cannot."""
EXACT_FROM = 12
"""At this many empty squares or fewer the exact solve comes right after depth :data:`SHALLOW`: proving a safe turn
exactly takes tens of milliseconds there."""
SHALLOW = 2
PREPASS_DEPTH = 3
"""Turns the deepening searches before MCTS takes over."""
PREPASS_SHARE = 0.25
"""Share of the turn's time the deepening before MCTS may take."""
MCTS_ABOVE = 12
"""With ``Search mcts``, positions with more empty squares than this are searched by MCTS, the rest as usual."""


def spare_cpu() -> bool:
    """True when the machine has a CPU to spare for the second thread: the load average of the last minute is below
    the CPUs this process may run on. On a busy machine a second thread only splits the engine's own share of the
    CPU (measured here with the second thread of an earlier design, at a load of 7-11 on 2 CPUs: 2 of 29 won positions
    converted with it, 3-5 without)."""
    try:
        return os.getloadavg()[0] < CPUS
    except (AttributeError, OSError):  # no load average on this platform
        return CPUS > 1


class PerfectBot(SeededBot):
    """Exact play whenever the solver proves the position in time; a deepening search before; strength levels."""

    name = "Perfect 1.0"
    author = "quarto-arena"
    options: tuple[OptionSpec, ...] = (SEED, LEVEL, HASH, SEARCH, THREADS)

    def __init__(self) -> None:
        super().__init__()
        self._solver: Solver | None = None

    def set_option(self, name: str, value: OptionValue) -> None:
        """Drops the solver when ``Hash`` or ``Threads`` changes (the next game builds it anew)."""
        super().set_option(name, value)
        if name in (HASH.name, THREADS.name):
            self._solver = None

    def new_game(self, variant: Variant) -> None:
        """Every variant is played; a new game starts with an empty table.

        The table is cleared even when just made: a fresh one is memory the system has only promised, and the
        first search of the game would otherwise fault it in page by page on its own clock (6,000 page faults in
        the first search of an engine's first game, measured, slow on a loaded machine); here, before
        ``readyok``, it costs the search nothing.
        """
        if self._solver is None or self._solver.variant != variant:
            self._solver = self._make_solver(variant)
        if self._two_threads():
            self._solver.make_twin()  # the second thread's table, faulted in by the clear below
        self._solver.clear()

    def _two_threads(self) -> bool:
        return self.option(THREADS.name) == 2 and CPUS > 1

    def _make_solver(self, variant: Variant) -> Solver:
        mib = self.option(HASH.name)
        assert isinstance(mib, int)
        return Solver(variant, tt_bits=(mib * 2**20 // 16).bit_length() - 1)

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """The turn to play: see the module docstring."""
        level = self.option(LEVEL.name)
        assert isinstance(level, int)
        if level == 0:
            return self.rng.choice(position.legal_turns())
        if level == 1:
            return greedy_turn(position, self.rng)
        if self._solver is None or self._solver.variant != position.variant:
            self._solver = self._make_solver(position.variant)
        if level < MAX_LEVEL:  # the ladder: a search capped in nodes, and plain turns by chance (.levels)
            rung = RUNGS[level]
            if rung.plays_plain(self.rng):
                return greedy_turn(position, self.rng)
            ctx.limits = rung.limits(ctx.limits)
            return deepening_turn(position, ctx, self._solver, EXACT, self.rng)
        mcts = self.option(SEARCH.name) == "mcts" and 16 - position.placed > MCTS_ABOVE
        threads = 2 if self._two_threads() else 1
        return deepening_turn(position, ctx, self._solver, EXACT, self.rng, mcts=mcts, threads=threads)


def deepening_turn(
    position: Position,
    ctx: SearchContext,
    solver: Solver,
    max_depth: int,
    rng: random.Random,
    *,
    mcts: bool = False,
    threads: int = 1,
) -> Turn:
    """The turn a search of at most ``max_depth`` turns (:data:`EXACT`: no limit) chooses within the time.

    A ``go depth`` limit lowers ``max_depth``. With ``mcts`` (and no ``go depth`` or ``nodes`` limit, which only
    the deepening search counts in) a deepening of :data:`PREPASS_DEPTH` turns comes first, then
    :func:`mcts_turn` decides whatever that did not prove. With ``threads`` 2 (and no ``go nodes`` limit), the
    exact win proof from :data:`SPLIT_FROM` empty squares on runs on two threads when a CPU is to spare.
    """
    if position.hand is None and position.placed == 0:
        # Every first gift is the same one up to symmetry: no search can prefer one.
        turn = turn_of(give=rng.randrange(16))
        ctx.info(depth=1, score=Score("value", 0), nodes=0, time=0, pv=[turn])
        return turn
    deadline = ctx.deadline  # the SDK's time budget (SPEC §4.5's move overhead kept back)
    solver.resume()
    # Before a stop can reach the solver: the table's proof needs no time. Not under a node cap (the levels, go
    # nodes), which counts every node the solver visits, the probe's one too.
    fallback = _fallback(position, solver if ctx.limits.nodes is None else None)
    ctx.on_stop(solver.stop)
    if ctx.stopped:
        return fallback
    if mcts and ctx.limits.depth is None and ctx.limits.nodes is None:
        # A short deepening first proves what is near (a win or loss within a few turns); MCTS weighs the rest.
        prepass = None if deadline is None else ctx.started + PREPASS_SHARE * (deadline - ctx.started)
        turn, proven = _deepen(position, ctx, solver, PREPASS_DEPTH, prepass, fallback)
        return turn if proven is not None else mcts_turn(position, ctx, solver, deadline, rng, turn)
    if ctx.limits.depth is not None:
        max_depth = min(max_depth, ctx.limits.depth)
    if ctx.limits.nodes is not None:
        threads = 1  # nodes are counted one search after the other
    return _deepen(position, ctx, solver, max_depth, deadline, fallback, threads)[0]


def _fallback(position: Position, solver: Solver | None) -> Turn:
    """A turn without search: a win, on the board or proven in ``solver``'s table (a previous turn's proof), else a
    safe turn if there is one. On a loaded machine the time can be gone before the first search step: a win must
    never be thrown away for it."""
    won = solver.proven_win(position) if solver is not None else next(iter(winning_turns(position)), None)
    return won or (safe_turns(position) or position.legal_turns())[0]


def _limits(ctx: SearchContext, deadline: float | None, nodes_used: int) -> Limits | None:
    """What is left of the turn's time and nodes; None when nothing is."""
    seconds = None
    if deadline is not None:
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            return None
    nodes = None
    if ctx.limits.nodes is not None:
        nodes = ctx.limits.nodes - nodes_used
        if nodes <= 0:
            return None
    return Limits(nodes=nodes, seconds=seconds)


def _deepen(
    position: Position,
    ctx: SearchContext,
    solver: Solver,
    max_depth: int,
    deadline: float | None,
    fallback: Turn,
    threads: int = 1,
) -> tuple[Turn, Search | None]:
    """Iterative deepening to ``max_depth`` turns (exact near the end), within the deadline and the nodes; the
    turn (``fallback`` when no step ends in time), and what was proven (None: nothing).

    Each depth first proves a turn safe (it does not lose within the depth), then looks for a win: at a drawn
    position the second costs most, and the first is what keeps the draw. With ``threads`` 2, the exact depth's win
    proof from :data:`SPLIT_FROM` empty squares on runs on two threads (when a CPU is to spare: :func:`spare_cpu`).
    """
    empty = 16 - position.placed + (1 if position.hand is None else 0)
    exact_allowed = max_depth >= empty
    best = fallback
    proven: Search | None = None
    nodes = 0
    depth = 0
    spent = False
    while proven is None and not spent and depth < min(max_depth, empty):
        depth += 1
        if exact_allowed and ((depth > SHALLOW and empty <= EXACT_FROM) or depth >= empty - EXACT_GAP):
            depth = empty
        safe = _step(solver, position, depth, ctx, deadline, nodes, Aim.SAFETY)
        if safe is not None:
            nodes += safe.nodes
            best = safe.turn
            if safe.verdict is not None:
                proven = safe
            else:
                # The gate has two layers, each with its own half: here when perfect wants a second thread (the
                # exact pass, from SPLIT_FROM empty squares, a CPU to spare now); Solver.search then checks that the
                # search can split (no node limit, the C core, two CPUs) and runs on one thread otherwise.
                split = threads == 2 and depth == empty and empty >= SPLIT_FROM and spare_cpu()
                win = _step(solver, position, depth, ctx, deadline, nodes, Aim.WIN, 2 if split else 1)
                if win is None:
                    spent = True  # cut short: the time or the nodes are all spent (its nodes are not in ``nodes``)
                else:
                    nodes += win.nodes
                    if win.verdict is Verdict.WIN:
                        best, proven = win.turn, win
                    elif depth >= empty:
                        proven = Search(best, Verdict.DRAW, True, empty, nodes)  # safe, and no turn wins
        if safe is None and proven is None:
            break
        score = _score(proven)
        if proven is not None and proven.verdict is not Verdict.DRAW and exact_allowed:
            # Proven: the exact value names the quickest win (or longest loss), when there is time to find it.
            limits = _limits(ctx, deadline, nodes)
            exact = None if limits is None else solver.value(position, limits)
            if exact is not None and exact.value is not None:
                nodes += exact.nodes
                best = exact.best[0]
                score = Score(exact.value.verdict.value, exact.value.turns)
        elapsed = ctx.elapsed()
        ctx.info(
            depth=depth,
            score=score,
            nodes=nodes,
            nps=int(nodes / elapsed) if elapsed > 0 else None,
            time=int(elapsed * 1000),
            pv=[best],
        )
    return best, proven


def _step(
    solver: Solver,
    position: Position,
    depth: int,
    ctx: SearchContext,
    deadline: float | None,
    nodes: int,
    aim: Aim,
    threads: int = 1,
) -> Search | None:
    """One search within what is left of the turn's time and nodes; None when nothing is left or it ran out."""
    limits = _limits(ctx, deadline, nodes)
    return None if limits is None else solver.search(position, depth, limits, aim=aim, threads=threads)


def _score(found: Search | None) -> Score:
    if found is None or found.verdict is None:
        return Score("value", 0)
    if found.verdict is Verdict.DRAW:
        return Score("draw")
    return Score(found.verdict.value, found.turns)
