"""The exact solver: against a plain minimax oracle, the C core against its pure-Python mirror, the solved vectors,
limits, stopping from another thread, strict claims, and the forced fallback."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quarto_arena.protocol.notation import parse_piece, parse_position, parse_square, parse_turn, parse_variant
from quarto_arena.protocol.rules import Attribute, ClaimMode, Outcome, Position, Shapes, Turn, Variant, turn_of
from quarto_arena.protocol.symmetry import board_maps

try:
    from quarto_arena.protocol import _solver
except ImportError:  # no C core: the tests that need it skip
    _solver = None  # type: ignore[assignment]
from quarto_arena.protocol import _solver_py
from quarto_arena.protocol.solver import (
    EXACT,
    PARALLEL_EMPTIES,
    PURE_ENV,
    Aim,
    Analysis,
    Limits,
    Search,
    Solver,
    Value,
    Verdict,
    _Children,
    compiled_core_available,
)

DATA = Path(__file__).parent / "data"
SOLVED: list[dict[str, Any]] = json.loads((DATA / "solved.json").read_text())
DEEP: list[dict[str, Any]] = json.loads((DATA / "solved_deep.json").read_text())
SUBSETS = [frozenset(c) for n in range(1, 5) for c in itertools.combinations(Attribute, n)]
CORES = [pytest.param(True, id="pure"), pytest.param(False, id="compiled")]
needs_compiled = pytest.mark.skipif(not compiled_core_available(), reason="the C core is not built")


def oracle(position: Position) -> Value:
    """Plain minimax over every legal turn, straight from the definition of a value: no pruning, no table."""
    return max((turn_oracle(position, t) for t in position.legal_turns()), key=lambda v: v.rank)


def turn_oracle(position: Position, turn: Turn) -> Value:
    child = position.apply(turn)
    if child.outcome is Outcome.WIN:
        return Value(Verdict.WIN, 1)
    if child.outcome is Outcome.DRAW:
        return Value(Verdict.DRAW, 1)
    inner = oracle(child)
    flipped = {Verdict.WIN: Verdict.LOSS, Verdict.LOSS: Verdict.WIN, Verdict.DRAW: Verdict.DRAW}[inner.verdict]
    return Value(flipped, inner.turns + 1)


def random_position(variant: Variant, rng: random.Random, empties: int, *, give_only: bool = False) -> Position:
    """An unfinished position with ``empties`` empty squares or fewer, from random legal turns (missed alignments
    included under strict claims); ``give_only`` drops the piece in hand."""
    while True:
        p = Position.start(variant)
        while not p.is_over and 16 - p.placed > empties:
            p = p.apply(rng.choice(p.legal_turns()))
        if p.is_over:
            continue
        if give_only:
            p = Position.from_board(p.board(), None, variant)
            if p.is_over:
                continue
        return p


variants = st.builds(
    Variant,
    shapes=st.sampled_from(list(Shapes)),
    attributes=st.sampled_from(SUBSETS),
    claims=st.sampled_from(list(ClaimMode)),
)


def vector_id(v: dict[str, Any]) -> str:
    return f"{v['variant']}-{'+'.join(v['attributes'])}-{v['position']}"


def vector_case(v: dict[str, Any]) -> tuple[Position, Verdict, set[Turn]]:
    position = parse_position(v["position"], parse_variant(v["variant"], v["attributes"]))
    best = {
        turn_of(place=parse_square(b["place"]), give=None if b["give"] is None else parse_piece(b["give"]))
        for b in v["best_turns"]
    }
    return position, Verdict(v["value"]), best


# --- against the oracle, and the two cores against each other ----------------------------------------------------


@needs_compiled
def test_the_exact_depth_is_the_c_cores_and_the_mirror_holds_the_same() -> None:
    assert EXACT == _solver.EXACT == _solver_py.EXACT


@pytest.mark.parametrize("built", [True, False])
def test_start_up_takes_the_exact_depth_from_the_core_it_loads(built: bool) -> None:
    """With the C core, importing the solver leaves the mirror unloaded (start-up); without it, the mirror is the
    core and gives EXACT."""
    if built and _solver is None:
        pytest.skip("the C core is not built")
    hide = "" if built else "sys.modules['quarto_arena.protocol._solver'] = None  # as if it was never built\n"
    code = (
        f"import json, sys\n{hide}from quarto_arena.protocol import solver\n"
        "mirror = 'quarto_arena.protocol._solver_py' in sys.modules\n"
        "print(json.dumps([solver.EXACT, solver.compiled_core_available(), mirror]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert json.loads(out) == [_solver_py.EXACT, built, not built]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(variant=variants, seed=st.integers(0, 2**32), empties=st.integers(1, 5), give_only=st.booleans())
def test_pure_core_agrees_with_the_oracle(variant: Variant, seed: int, empties: int, give_only: bool) -> None:
    position = random_position(variant, random.Random(seed), empties, give_only=give_only)
    expected = oracle(position)
    analysis = Solver(variant, pure=True, tt_bits=8).analyse(position)
    assert analysis.value == expected
    assert analysis.best == tuple(t for t in position.legal_turns() if turn_oracle(position, t) == expected)
    by_verdict = Solver(variant, pure=True, tt_bits=8).analyse(position, keep_turns=False)
    assert by_verdict.best == tuple(
        t for t in position.legal_turns() if turn_oracle(position, t).verdict is expected.verdict
    )


@pytest.mark.slow
@needs_compiled
@settings(max_examples=200, deadline=None)
@given(
    variant=variants,
    seed=st.integers(0, 2**32),
    empties=st.integers(1, 8),
    give_only=st.booleans(),
    tt_bits=st.sampled_from([4, 8, 16]),
)
def test_compiled_core_searches_the_same_tree(
    variant: Variant, seed: int, empties: int, give_only: bool, tt_bits: int
) -> None:
    """Same value, same best turns, and the same number of nodes: the mirror is exact, small tables included."""
    position = random_position(variant, random.Random(seed), empties, give_only=give_only)
    pure = Solver(variant, pure=True, tt_bits=tt_bits).analyse(position)
    compiled = Solver(variant, pure=False, tt_bits=tt_bits).analyse(position)
    assert (compiled.value, compiled.best, compiled.nodes) == (pure.value, pure.best, pure.nodes)


@settings(max_examples=40, deadline=None)
@given(variant=variants, seed=st.integers(0, 2**32), empties=st.integers(2, 5))
def test_value_is_the_best_turn_value(variant: Variant, seed: int, empties: int) -> None:
    """value() and turn_value() agree with each other, and the turn value() names is a best one."""
    position = random_position(variant, random.Random(seed), empties)
    solver = Solver(variant)
    result = solver.value(position)
    assert result.value is not None and len(result.best) == 1
    assert solver.turn_value(position, result.best[0]) == result.value
    assert max((solver.turn_value(position, t) for t in position.legal_turns()), key=rank) == result.value


def rank(value: Value | None) -> int:
    assert value is not None
    return value.rank


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(variant=variants, seed=st.integers(0, 2**32), empties=st.integers(1, 5), give_only=st.booleans())
def test_searches_prove_what_they_aim_at(variant: Variant, seed: int, empties: int, give_only: bool) -> None:
    """At full depth each aim proves the truth; short of it, a proven win or loss is real and at most one turn
    longer than the depth (a gift that loses at once needs no search), and a turn proven safe does not lose
    within the depth."""
    position = random_position(variant, random.Random(seed), empties, give_only=give_only)
    truth = oracle(position)
    full = 16 - position.placed + (1 if position.hand is None else 0)
    solver = Solver(variant)
    value = solver.search(position, full, aim=Aim.VALUE)
    safety = solver.search(position, full, aim=Aim.SAFETY)
    win = solver.search(position, full, aim=Aim.WIN)
    assert value is not None and safety is not None and win is not None
    assert value.verdict is truth.verdict
    assert safety.safe is (truth.verdict is not Verdict.LOSS)
    assert (win.verdict is Verdict.WIN) is (truth.verdict is Verdict.WIN)
    if safety.safe:
        assert turn_oracle(position, safety.turn).verdict is not Verdict.LOSS
    if win.verdict is Verdict.WIN:
        assert turn_oracle(position, win.turn).verdict is Verdict.WIN
    for depth in range(1, full):
        for aim in Aim:
            found = Solver(variant).search(position, depth, aim=aim)
            assert found is not None and found.verdict is not Verdict.DRAW
            if found.verdict is not None:
                assert found.verdict is truth.verdict and found.turns is not None and truth.turns <= found.turns
                assert truth.turns <= depth + 1
            if found.safe:
                got = turn_oracle(position, found.turn)
                assert got.verdict is not Verdict.LOSS or got.turns > depth


@pytest.mark.slow
@needs_compiled
@settings(max_examples=40, deadline=None)
@given(variant=variants, seed=st.integers(0, 2**32), empties=st.integers(2, 10), tt_bits=st.sampled_from([4, 8, 16]))
def test_deepening_searches_the_same_tree_in_both_cores(
    variant: Variant, seed: int, empties: int, tt_bits: int
) -> None:
    """Depth 1, 2, ... to the end on one table, with windows of every kind and either root order (win_order): same
    scores, nodes and best turns; and the same root turns in the same order (root_turns, which the two-thread win
    proof shares out)."""
    rng = random.Random(seed)
    position = random_position(variant, rng, empties)
    if position.hand is None or position.claimable:
        return
    args = (variant.lines, sum(a.value for a in variant.attributes), board_maps(variant.shapes), tt_bits)
    cores = (_solver.Core(*args), _solver_py.Core(*args))
    for depth in range(1, 17 - position.placed):
        alpha = rng.randint(-3, 1)
        beta = alpha + rng.randint(1, 3)
        win_order = rng.random() < 0.5
        got = []
        for core in cores:
            score = core.search(position[1], position[2], position[3], alpha, beta, 0, 0.0, depth, win_order)
            found = (score, core.nodes, core.best_move)
            turns = core.root_turns(position[1], position[2], position[3], alpha, beta, 0, 0.0, depth, win_order)
            got.append((*found, turns))
        assert got[0] == got[1], (depth, alpha, beta, win_order)


@settings(max_examples=25, deadline=None)
@given(variant=variants, seed=st.integers(0, 2**32), empties=st.integers(7, 8), pure=st.booleans())
def test_the_win_order_changes_no_answer(variant: Variant, seed: int, empties: int, pure: bool) -> None:
    """The root's order for win proofs reaches the same side of every window as the plain order (a score inside
    it is exact, so the same), and its best turn, when a win is proven, wins too."""
    rng = random.Random(seed)
    position = random_position(variant, rng, empties)
    if position.hand is None or position.claimable:
        return
    args = (variant.lines, sum(a.value for a in variant.attributes), board_maps(variant.shapes), 16)
    core_type = _solver_py.Core if pure or _solver is None else _solver.Core
    for alpha, beta in ((0, 1), (-1, 0), (-1, 1)):
        plain, ordered = core_type(*args), core_type(*args)
        a = plain.search(position[1], position[2], position[3], alpha, beta)
        b = ordered.search(position[1], position[2], position[3], alpha, beta, win_order=True)
        assert (a <= alpha, a >= beta) == (b <= alpha, b >= beta)
        if alpha < a < beta:
            assert a == b
    solver = Solver(variant, pure=pure)
    win = solver.search(position, empties, aim=Aim.WIN)
    assert win is not None
    if win.verdict is Verdict.WIN:
        child = position.apply(win.turn)
        if child.outcome is not Outcome.WIN:
            reply = Solver(variant, pure=pure).value(child).value
            assert reply is not None and reply.verdict is Verdict.LOSS


# --- vectors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pure", CORES)
@pytest.mark.parametrize("vector", SOLVED, ids=vector_id)
def test_solved_vectors(vector: dict[str, Any], pure: bool) -> None:
    if not pure and not compiled_core_available():
        pytest.skip("the C core is not built")
    position, verdict, best = vector_case(vector)
    analysis = Solver(position.variant, pure=pure).analyse(position, keep_turns=False)
    assert analysis.value is not None and analysis.value.verdict is verdict
    assert set(analysis.best) == best


@pytest.mark.parametrize("pure", CORES)
@pytest.mark.parametrize("vector", SOLVED[:40], ids=vector_id)
def test_every_best_turn_from_a_known_value_is_what_the_solver_finds(vector: dict[str, Any], pure: bool) -> None:
    # analyse's caller (analyse FILE.pgn) knows the position's exact value already: given, it is not proven again.
    if not pure and not compiled_core_available():
        pytest.skip("the C core is not built")
    position = vector_case(vector)[0]
    found = Solver(position.variant, pure=pure).analyse(position, keep_turns=False)
    assert found.value is not None
    given = Solver(position.variant, pure=pure).analyse(position, keep_turns=False, value=found.value)
    assert (given.value, given.best) == (found.value, found.best)
    assert given.nodes <= found.nodes


@pytest.mark.slow
@needs_compiled
@pytest.mark.parametrize("vector", DEEP, ids=vector_id)
def test_deep_vectors(vector: dict[str, Any]) -> None:
    position, verdict, best = vector_case(vector)
    analysis = Solver(position.variant, pure=False).analyse(position, keep_turns=False)
    assert analysis.value is not None and analysis.value.verdict is verdict
    assert set(analysis.best) == best


@needs_compiled
@pytest.mark.parametrize("verdict", [Verdict.DRAW, Verdict.WIN])
def test_every_best_turn_on_two_threads_is_each_turn_valued_alone(verdict: Verdict) -> None:
    """From PARALLEL_EMPTIES on, a twin solver shares the root's children: the best turns, exact turn counts
    included, are those whose own value (each from a fresh solver) is the position's. While the value is searched
    the twin tests children as for a draw: at a draw that work is kept, at a win it is dropped."""
    vector = next(v for v in DEEP if 16 - vector_case(v)[0].placed == PARALLEL_EMPTIES and vector_case(v)[1] is verdict)
    position = vector_case(vector)[0]
    analysis = Solver(position.variant, pure=False).analyse(position)
    assert analysis.value is not None
    values = {t: Solver(position.variant, pure=False).turn_value(position, t) for t in position.legal_turns()}
    assert analysis.best == tuple(t for t, v in values.items() if v == analysis.value)
    assert 0 < len(analysis.best) < len(values)


def test_the_children_queue_hands_each_child_out_once_and_splits_the_last_square() -> None:
    """Each thread takes whole squares; once none is left, a thread that runs dry takes the back half of what the
    other has left of its square, so neither waits on the other's last square alone."""
    position = parse_position("..../..../..../.... 0")
    by_square: dict[int, list[tuple[int, Turn]]] = {}
    for key, turn in enumerate(position.legal_turns()):
        if turn.place in (0, 5) and turn.give is not None and turn.give <= 6:
            by_square.setdefault(turn.place, []).append((key, turn))
    work = _Children([child for square in (0, 5) for child in by_square[square]])
    first = work.take(0)
    assert first is not None
    square = first[1].place
    other = 5 if square == 0 else 0
    theirs = [work.take(1) for _ in by_square[other]]
    assert [c[1].place for c in theirs if c is not None] == [other] * len(by_square[other])
    # Taker 1 is dry with 5 of taker 0's square left: it gets the back 3, taker 0 keeps the front 2.
    stolen = [work.take(1) for _ in range(3)]
    rest = by_square[square][1:]
    assert stolen == rest[2:]
    assert [work.take(0), work.take(0)] == rest[:2]
    assert work.take(0) is None and work.take(1) is None


@needs_compiled
@pytest.mark.parametrize("verdict", [Verdict.WIN, Verdict.DRAW, Verdict.LOSS])
def test_a_win_proof_on_two_threads_finds_what_one_thread_finds(verdict: Verdict) -> None:
    """threads=2 shares an exact win proof's root turns between two threads: the same verdict as one thread, and a
    turn it names as winning wins; on the pure core, or with a node limit, it runs on one thread (the same search)."""
    cases = [(p, v) for p, v, _ in map(vector_case, DEEP) if 9 <= 16 - p.placed <= PARALLEL_EMPTIES and v is verdict]
    assert cases
    for position, _ in cases[:3]:
        empty = 16 - position.placed
        one = Solver(position.variant, pure=False).search(position, empty, aim=Aim.WIN)
        two = Solver(position.variant, pure=False).search(position, empty, aim=Aim.WIN, threads=2)
        assert one is not None and two is not None
        assert two.verdict is one.verdict is (Verdict.WIN if verdict is Verdict.WIN else one.verdict)
        if verdict is Verdict.WIN:
            value = Solver(position.variant).turn_value(position, two.turn)
            assert value is not None and value.verdict is Verdict.WIN
        else:
            assert not two.safe and two.verdict is not Verdict.WIN
        limits = Limits(nodes=10**9)
        capped = [
            Solver(position.variant, pure=False).search(position, empty, limits, aim=Aim.WIN, threads=t) for t in (1, 2)
        ]
        assert capped[0] == capped[1]
    position = cases[0][0]
    empty = 16 - position.placed
    pure = [Solver(position.variant, pure=True).search(position, empty, aim=Aim.WIN, threads=t) for t in (1, 2)]
    assert pure[0] == pure[1]
    with pytest.raises(ValueError, match="threads"):
        Solver(position.variant).search(position, empty, aim=Aim.WIN, threads=3)


@needs_compiled
def test_stop_and_time_reach_both_threads_of_a_win_proof() -> None:
    """stop() from another thread ends a two-thread win proof (unproven, both threads ended); after resume(), and
    after one cut short by its time, the next two-thread proof finds its win."""
    position = parse_position("..../..../..../3c.. 9")  # 14 empty squares: its win proof takes seconds
    solver = Solver(Variant(), pure=False)
    before = set(threading.enumerate())
    results: list[Search | None] = []
    worker = threading.Thread(target=lambda: results.append(solver.search(position, 14, aim=Aim.WIN, threads=2)))
    worker.start()
    time.sleep(0.2)
    solver.stop()
    worker.join(5.0)
    assert not worker.is_alive() and results == [None]
    assert set(threading.enumerate()) <= before  # the second thread has ended
    assert solver.search(position, 14, aim=Aim.WIN, threads=2) is None  # stopped until resume()
    solver.resume()
    assert solver.search(position, 14, Limits(seconds=0.05), aim=Aim.WIN, threads=2) is None
    won = next(p for p, v, _ in map(vector_case, DEEP) if 16 - p.placed == PARALLEL_EMPTIES and v is Verdict.WIN)
    found = Solver(won.variant, pure=False).search(won, 10, aim=Aim.WIN, threads=2)
    assert found is not None and found.verdict is Verdict.WIN
    assert set(threading.enumerate()) <= before  # the second thread has ended


@needs_compiled
def test_stop_reaches_both_threads_of_every_best_turn() -> None:
    position = parse_position(HARD)
    solver = Solver(Variant(), pure=False)
    assert solver.value(position).proven  # the value is now in the table: analyse goes on to the best turns at once
    results: list[Analysis] = []
    worker = threading.Thread(target=lambda: results.append(solver.analyse(position)))
    worker.start()
    time.sleep(0.2)
    solver.stop()
    worker.join(5.0)
    assert not worker.is_alive()
    assert results and not results[0].proven
    solver.resume()
    easy = parse_position("2fcd/46../53.9/8.1. 0")
    assert solver.analyse(easy).proven


@needs_compiled
def test_a_request_cut_short_leaves_the_twin_ready() -> None:
    """A time limit that ends every best turn (the twin stopped with it) leaves both threads able to serve the
    next request, which finds the vector's best turns."""
    solver = Solver(Variant(), pure=False)
    cut = solver.analyse(parse_position(HARD), Limits(seconds=0.3))
    assert not cut.proven
    vector = next(v for v in DEEP if 16 - vector_case(v)[0].placed == PARALLEL_EMPTIES)
    position, verdict, best = vector_case(vector)
    analysis = solver.analyse(position, keep_turns=False)
    assert analysis.value is not None and analysis.value.verdict is verdict
    assert set(analysis.best) == best


@needs_compiled
def test_deep_vectors_cover_what_they_claim() -> None:
    empties = {16 - vector_case(v)[0].placed for v in DEEP}
    assert empties == {9, 10, 11, 12}
    assert {v["variant"] for v in DEEP} == {"standard", "advanced"}


# --- values and turns counted as SPEC §5.3 counts them ---------------------------------------------------------


def test_turn_counts() -> None:
    solver = Solver(Variant())
    # Row 1 holds 0 1 2; piece 3 completes it on d1: a win now.
    now = solver.analyse(parse_position("..../..../.e../012. 3"))
    assert now.value == Value(Verdict.WIN, 1)
    assert [str(t) for t in now.best] == ["d1"]
    assert str(now.value) == "win 1"
    assert str(Value(Verdict.LOSS, 2)) == "loss 2" and str(Value(Verdict.DRAW, 7)) == "draw"
    assert Value(Verdict.WIN, 3).before() == Value(Verdict.LOSS, 4)
    assert Value(Verdict.LOSS, 4).after() == Value(Verdict.WIN, 3)
    for v in (Value(Verdict.WIN, 3), Value(Verdict.DRAW, 5), Value(Verdict.LOSS, 2)):
        assert v.before().after() == v
    assert Value(Verdict.WIN, 1).rank > Value(Verdict.WIN, 3).rank > 0 > Value(Verdict.LOSS, 4).rank
    assert Value(Verdict.LOSS, 4).rank > Value(Verdict.LOSS, 2).rank


def test_strict_claims() -> None:
    strict = Variant(claims=ClaimMode.STRICT)
    solver = Solver(strict)
    before = parse_position("..../..../.e../012. 3", strict)
    # A perfect player calls: the call is the only best turn; placing there without the call loses to the claim.
    analysis = solver.analyse(before)
    assert analysis.value == Value(Verdict.WIN, 1)
    assert [str(t) for t in analysis.best] == ["d1!"]
    missed = parse_turn("d1f")
    assert solver.turn_value(before, missed) == Value(Verdict.LOSS, 2)
    after = before.apply(missed)
    claim = solver.analyse(after)
    assert claim.value == Value(Verdict.WIN, 1)
    assert [str(t) for t in claim.best] == ["!"]
    # A dead alignment on the board (strict position strings cannot say it was just made) wins nothing.
    dead = parse_position("..5./.9a7/cbe./0123 4", strict)
    assert not dead.is_over
    assert solver.value(dead).value == oracle(dead)


def test_finished_games_are_refused() -> None:
    won = parse_position("..../..../.e../012. 3").apply(parse_turn("d1"))
    with pytest.raises(ValueError, match="the game is over"):
        Solver(Variant()).value(won)


# --- limits, stop, fallback ------------------------------------------------------------------------------------

# Twelve empty squares: far more than a few thousand nodes for either core.
HARD = "2.../..../.4../3c.. 9"


@pytest.mark.parametrize("pure", CORES)
def test_node_limit_reports_unproven_with_a_legal_turn(pure: bool) -> None:
    if not pure and not compiled_core_available():
        pytest.skip("the C core is not built")
    position = parse_position(HARD)
    result = Solver(Variant(), pure=pure).analyse(position, Limits(nodes=5_000))
    assert not result.proven and result.value is None
    assert len(result.best) == 1 and result.best[0] in position.legal_turns()
    assert 5_000 <= result.nodes < 5_000 + 1024


@pytest.mark.serial
@pytest.mark.parametrize("pure", CORES)
def test_time_limit(pure: bool) -> None:
    if not pure and not compiled_core_available():
        pytest.skip("the C core is not built")
    position = parse_position(HARD)
    started = time.monotonic()
    result = Solver(Variant(), pure=pure).value(position, Limits(seconds=0.05))
    assert not result.proven and result.best[0] in position.legal_turns()
    assert time.monotonic() - started < 2.0  # generous: the bound is 50 ms, checked every 1,024 nodes


@pytest.mark.parametrize("pure", CORES)
def test_stop_from_another_thread(pure: bool) -> None:
    if not pure and not compiled_core_available():
        pytest.skip("the C core is not built")
    position = parse_position(HARD)
    solver = Solver(Variant(), pure=pure)
    results: list[Analysis] = []
    worker = threading.Thread(target=lambda: results.append(solver.value(position)))
    worker.start()
    time.sleep(0.05)
    solver.stop()
    worker.join(5.0)
    assert not worker.is_alive()
    assert results and not results[0].proven
    # Later requests end at once too, until resumed.
    easy = parse_position("2fcd/46../53.9/8.1. 0")
    assert not solver.value(easy).proven
    solver.resume()
    assert solver.value(easy).proven


def test_pure_core_is_forced_by_the_environment() -> None:
    code = "from quarto_arena.protocol.solver import Solver, Variant; print(Solver(Variant()).compiled)"
    env = {**os.environ, PURE_ENV: "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    if compiled_core_available():
        env[PURE_ENV] = "0"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "True"


@needs_compiled
def test_a_core_runs_one_search_at_a_time() -> None:
    solver = Solver(Variant(), pure=False)
    position = parse_position(HARD)
    worker = threading.Thread(target=lambda: solver.value(position))
    worker.start()
    time.sleep(0.05)
    try:
        with pytest.raises(RuntimeError, match="already running"):
            solver.core.search(position[1], position[2], 9, -1, 1)
    finally:
        solver.stop()
        worker.join(5.0)


@pytest.mark.parametrize("pure", CORES)
def test_bad_core_arguments(pure: bool) -> None:
    if not pure and not compiled_core_available():
        pytest.skip("the C core is not built")
    with pytest.raises(ValueError, match="tt_bits"):
        Solver(Variant(), pure=pure, tt_bits=2)
