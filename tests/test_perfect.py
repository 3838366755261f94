"""The perfect engine: exact play where the solver proves the position, its scores, levels, time and stop."""

from __future__ import annotations

import functools
import hashlib
import json
import random
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from quarto_arena.engines import perfect
from quarto_arena.engines.greedy import safe_turns, winning_turns
from quarto_arena.engines.perfect import HASH, LEVEL, MAX_LEVEL, SEARCH, PerfectBot
from quarto_arena.engines.perfect.levels import RUNGS
from quarto_arena.engines.perfect.mcts import estimate
from quarto_arena.protocol.bot import SearchContext
from quarto_arena.protocol.notation import parse_position, parse_turns, parse_variant
from quarto_arena.protocol.rules import ClaimMode, Outcome, Position, Shapes, Turn, Variant
from quarto_arena.protocol.solver import Aim, Limits, Search, Solver, Verdict
from quarto_arena.protocol.uqi import Go, Info, Score

# No time limit but the engine's own 9 s (SPEC §4.5: 10 s): every search below finishes, deterministically.
EXACT_GO = Go(depth=16)


def safe_play(variant: Variant, rng: random.Random, empties: int) -> Position:
    """An unfinished position with a piece in hand, ``empties`` empty squares, from random safe turns."""
    while True:
        p = Position.start(variant)
        while not p.is_over and 16 - p.placed > empties:
            p = p.apply(rng.choice(safe_turns(p) or p.legal_turns()))
        if not p.is_over and p.hand is not None and 16 - p.placed == empties:
            return p


@functools.cache
def positions_of(verdict: Verdict, variant: Variant, empties: int, count: int, seed: int) -> tuple[Position, ...]:
    """Positions of that value, sampled from random safe play; a lost position is one just after a winning turn
    (random safe play rarely reaches one by itself)."""
    rng = random.Random(seed)
    solver = Solver(variant)
    out: list[Position] = []
    sample_at = empties + 1 if verdict is Verdict.LOSS else empties
    while len(out) < count:
        p = safe_play(variant, rng, sample_at)
        found = solver.value(p)
        if found.value is None or winning_turns(p):
            continue
        if verdict is Verdict.LOSS and found.value.verdict is Verdict.WIN:
            out.append(p.apply(found.best[0]))
        elif verdict is not Verdict.LOSS and found.value.verdict is verdict:
            out.append(p)
    return tuple(out)


def deep_wins() -> list[Position]:
    """The won positions of the deep vectors: advanced shapes, 9 to 12 empty squares."""
    vectors = json.loads((Path(__file__).parent / "data" / "solved_deep.json").read_text())
    return [
        parse_position(v["position"], parse_variant(v["variant"], v["attributes"]))
        for v in vectors
        if v["value"] == "win"
    ]


def bot(level: int = 10, **options: int | str) -> PerfectBot:
    return configured(PerfectBot(), level, options)


E = TypeVar("E", bound=PerfectBot)


def configured(engine: E, level: int, options: dict[str, int | str]) -> E:
    """``engine`` with its options reset, then its ``Level`` and ``options`` set."""
    engine.reset_options()
    engine.set_option(LEVEL.name, level)
    for name, value in options.items():
        engine.set_option(name, value)
    return engine


def search(engine: PerfectBot, position: Position, limits: Go = EXACT_GO) -> tuple[Turn, list[Info]]:
    infos: list[Info] = []
    engine.new_game(position.variant)
    turn = engine.search(position, SearchContext(limits, position=position, on_info=infos.append))
    assert turn in position.legal_turns()
    return turn, infos


def play_out(position: Position, engines: tuple[PerfectBot, PerfectBot]) -> tuple[Position, int]:
    """Both engines in turn, ``engines[0]`` to move first, until the game ends; the end and the turns played."""
    for engine in engines:
        engine.new_game(position.variant)
    turns = 0
    while not position.is_over:
        engine = engines[turns % 2]
        position = position.apply(engine.search(position, SearchContext(EXACT_GO, position=position)))
        turns += 1
    return position, turns


VARIANTS = [Variant(), Variant(shapes=Shapes.ADVANCED), Variant(claims=ClaimMode.STRICT)]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.describe())
def test_converts_won_positions_against_perfect_defence(variant: Variant) -> None:
    """The winner wins, the loser defending as well as the solver can."""
    for position in positions_of(Verdict.WIN, variant, 10, 2, seed=2):
        end, turns = play_out(position, (bot(), bot()))
        assert end.outcome is Outcome.WIN and turns % 2 == 1  # the last turn won, and it was the first player's


def test_converts_the_deep_vectors_wins() -> None:
    wins = deep_wins()
    assert {16 - p.placed for p in wins} == {9, 10, 11, 12}
    for position in wins:
        end, turns = play_out(position, (bot(), bot()))
        assert end.outcome is Outcome.WIN and turns % 2 == 1


@pytest.mark.parametrize("verdict", list(Verdict))
def test_reports_the_exact_value(verdict: Verdict) -> None:
    solver = Solver(Variant())
    for position in positions_of(verdict, Variant(), 9, 2, seed=7):
        value = solver.value(position).value
        assert value is not None
        turn, infos = search(bot(), position)
        expected = Score("draw") if verdict is Verdict.DRAW else Score(verdict.value, value.turns)
        assert infos[-1].score == expected
        assert infos[-1].pv[0] == turn
        # The turn keeps the value: the quickest win, the draw, the longest loss.
        assert solver.turn_value(position, turn) == value


def test_the_winner_wins_as_soon_as_it_can() -> None:
    solver = Solver(Variant())
    for position in positions_of(Verdict.WIN, Variant(), 10, 2, seed=3):
        value = solver.value(position).value
        assert value is not None
        assert play_out(position, (bot(), bot()))[1] == value.turns


def test_keeps_greedys_promises() -> None:
    rng = random.Random(5)
    engine = bot()
    for _ in range(10):
        position = safe_play(Variant(), rng, rng.randint(6, 14))
        turn, _ = search(engine, position, Go(movetime=100))
        after = position.apply(turn)
        if winning_turns(position):
            assert after.is_over
        elif safe_turns(position):
            assert not winning_turns(after), f"{turn} hands over a win in {position!r}"


def test_takes_a_win_and_claims_a_missed_alignment() -> None:
    position = parse_position("..../..../.e../012. 3")
    assert str(search(bot(), position)[0]) == "d1"
    strict = Variant(claims=ClaimMode.STRICT)
    position = parse_position("..../..../.e../012. 3", strict)
    assert str(search(bot(), position)[0]) == "d1!"
    missed = position.apply(Turn(place=3, give=15))
    turn, infos = search(bot(), missed)
    assert str(turn) == "!" and infos[-1].score == Score("win", 1)


def test_stops_when_the_search_is_finished() -> None:
    """A proven position ends the search: the last info is the exact depth, not more."""
    position = positions_of(Verdict.DRAW, Variant(), 8, 1, seed=11)[0]
    _, infos = search(bot(), position, Go(infinite=False, depth=16))
    assert [i.depth for i in infos][-1] == 8
    assert infos[-1].score == Score("draw")
    assert all(i.depth is not None and i.depth <= 8 for i in infos)


class CountingSolver(Solver):
    """A solver that adds up the nodes of every search, those cut short by a limit included."""

    total = 0

    def search(
        self, position: Position, depth: int, limits: Limits | None = None, *, aim: Aim = Aim.VALUE, threads: int = 1
    ) -> Search | None:
        try:
            return super().search(position, depth, limits, aim=aim, threads=threads)
        finally:
            self.total += self._nodes


class CountingBot(PerfectBot):
    def _make_solver(self, variant: Variant) -> Solver:
        return CountingSolver(variant)


def counting_bot(level: int, **options: int | str) -> CountingBot:
    return configured(CountingBot(), level, options)


def test_random_and_greedy_levels_do_not_search() -> None:
    position = safe_play(Variant(), random.Random(9), 14)
    for level in (0, 1):
        _, infos = search(bot(level), position, Go(movetime=50))
        assert infos == []


def test_the_ladder_climbs() -> None:
    """Each level searches at least as many nodes as the one below and plays plain turns no more often."""
    assert sorted(RUNGS) == list(range(2, MAX_LEVEL))
    for level in range(2, MAX_LEVEL - 1):
        below, above = RUNGS[level], RUNGS[level + 1]
        assert below.nodes <= above.nodes and below.plain >= above.plain and below != above


@pytest.mark.parametrize("level", range(2, MAX_LEVEL))
def test_a_level_searches_within_its_node_cap(level: int) -> None:
    """Every level's search stops at its node cap, whatever the go command allows; ``go nodes`` lowers it."""
    rung = RUNGS[level]
    rng = random.Random(level)
    capped = 0
    for empties in (15, 14, 13, 12, 10):
        position = safe_play(Variant(), rng, empties)
        for go, cap in ((EXACT_GO, rung.nodes), (Go(nodes=rung.nodes // 3), rung.nodes // 3)):
            for seed in range(1, 100):  # the first seed whose turn here is a search, not a plain turn
                engine = counting_bot(level, Seed=seed)
                engine.new_game(position.variant)
                infos: list[Info] = []
                engine.search(position, SearchContext(go, position=position, on_info=infos.append))
                if infos:
                    break
            assert infos, "no seed searched"
            assert isinstance(engine._solver, CountingSolver)
            assert engine._solver.total <= cap
            assert all(i.nodes is not None and i.nodes <= cap for i in infos)
            capped += engine._solver.total == cap
    assert capped  # the cap is what ended some of these searches


def test_a_level_without_plain_turns_plays_the_capped_search() -> None:
    """The top rung is the full engine's deepening alpha-beta search with ``go nodes`` at the rung's cap."""
    top = max(RUNGS)
    assert RUNGS[top].plain == 0.0
    rng = random.Random(3)
    for empties in (14, 13, 12, 11):
        position = safe_play(Variant(), rng, empties)
        ladder, _ = search(bot(top), position)
        full, _ = search(bot(MAX_LEVEL, Search="alphabeta"), position, Go(nodes=RUNGS[top].nodes))
        assert ladder == full


def test_a_level_repeats_its_choices_with_a_seed() -> None:
    """Plain turns are drawn from the seeded generator: the same seed plays the same game, another seed another."""
    level = min(level for level, rung in RUNGS.items() if rung.plain > 0)

    def game(seed: int) -> list[Turn]:
        return self_play(counting_bot(level, Seed=seed), counting_bot(level, Seed=seed + 1))

    assert game(5) == game(5)
    assert game(5) != game(7)


def self_play(first: PerfectBot, second: PerfectBot, on_info: Callable[[Info], None] | None = None) -> list[Turn]:
    """The turns of a whole game from the start, ``first`` moving first, each turn searched with ``EXACT_GO``."""
    engines = (first, second)
    position = Position.start()
    for engine in engines:
        engine.new_game(position.variant)
    turns: list[Turn] = []
    while not position.is_over:
        context = SearchContext(EXACT_GO, position=position, on_info=on_info)
        turn = engines[len(turns) % 2].search(position, context)
        turns.append(turn)
        position = position.apply(turn)
    return turns


#: sha1 of the games below (each turn, and the depth, nodes and score each search reported) as levels 2-9 play on
#: the solver their steps were measured with (benchmarks/levels.py, README "perfect and its levels"): their
#: strength rests on what their node cap reaches.
CALIBRATED_LADDER = "0b6fa75c5e05cb1788ecde75ac003d8332658f9f"


def test_the_levels_search_as_when_the_ladder_was_measured() -> None:
    """A tripwire, as an engine's bench signature: a solver change that makes a node reach further or less far, or a
    change to a rung, changes what levels 2-9 search and play, and the measured steps may no longer hold. Then match
    the caps again on the new solver, re-run benchmarks/levels.py, and put the new hash here with the figures."""
    digest = hashlib.sha1()

    def seen(info: Info) -> None:  # not the time: it varies
        digest.update(f"{info.depth} {info.nodes} {info.score}".encode())

    for level in sorted(RUNGS):
        for seed in range(1, 4):
            for turn in self_play(bot(level, Seed=seed), bot(level, Seed=seed + 100), seen):
                digest.update(str(turn).encode())
    assert digest.hexdigest() == CALIBRATED_LADDER, "levels 2-9 search differently from the measured ladder"


def test_a_level_is_exact_in_the_endgame() -> None:
    """Near the end the exact solve fits in the cap: the top rung proves a win at 9 empty squares."""
    won = positions_of(Verdict.WIN, Variant(), 9, 1, seed=4)[0]
    _, infos = search(bot(max(RUNGS)), won)
    assert infos and infos[-1].score.kind == "win"  # type: ignore[union-attr]


def test_stop_ends_an_infinite_search() -> None:
    position = parse_position("..../..../..../.... 3")
    engine = bot()
    engine.new_game(position.variant)
    ctx = SearchContext(Go(infinite=True), position=position)
    turns: list[Turn] = []
    worker = threading.Thread(target=lambda: turns.append(engine.search(position, ctx)))
    worker.start()
    time.sleep(0.2)
    assert worker.is_alive()  # 15 empty squares: far from solved
    ctx.stop()
    worker.join(5.0)
    assert not worker.is_alive()
    assert turns and turns[0] in position.legal_turns()


def test_mcts_search_plays_legal_safe_turns() -> None:
    rng = random.Random(12)
    engine = bot(**{SEARCH.name: "mcts"})
    for _ in range(3):
        position = safe_play(Variant(), rng, 14)
        turn, infos = search(engine, position, Go(movetime=200))
        assert infos and infos[-1].nodes
        score = infos[-1].score
        assert score is not None and score.kind == "value" and score.value is not None
        assert -1000 <= score.value <= 1000  # SPEC §5.3: 1000 x (2s - 1)
        if safe_turns(position):
            assert not winning_turns(position.apply(turn))


@given(st.integers(min_value=1, max_value=10**7), st.floats(min_value=0.0, max_value=1.0))
def test_an_estimate_is_never_a_proof(visits: int, rate: float) -> None:
    # SPEC §5.3: value ±1000 is a proven result; an MCTS estimate stays strictly inside, whatever its playouts.
    score = estimate(rate * visits, visits)
    assert score.kind == "value" and score.value is not None and -1000 < score.value < 1000


def test_an_estimate_of_few_playouts_leans_to_even() -> None:
    assert estimate(0.0, 1) == Score("value", -333)  # one lost playout: not a proven loss
    assert estimate(1.0, 1) == Score("value", 333)
    assert estimate(50.0, 100) == Score("value", 0)
    assert estimate(0.0, 1000).value == -998


def test_short_searches_report_no_proof_they_do_not_have() -> None:
    # At st=0.05 MCTS runs a handful of playouts; their plain mean read 'value -1000' (one lost playout) in
    # positions the engine then drew or won. A value of ±1000 may come only from a proof, which MCTS never makes.
    rng = random.Random(3)
    engine = bot(**{SEARCH.name: "mcts"})
    values = []
    for _ in range(24):
        position = safe_play(Variant(), rng, rng.randrange(13, 16))
        _, infos = search(engine, position, Go(movetime=50))
        values += [i.score.value for i in infos if i.score is not None and i.score.kind == "value"]
    assert values and all(v is not None and -1000 < v < 1000 for v in values), values


def test_hash_option_sizes_the_table() -> None:
    engine = bot(**{HASH.name: 1})
    engine.new_game(Variant())
    turn, _ = search(engine, parse_position("2fcd/46../53.9/8.1. 0"))
    assert str(turn)


def test_the_table_is_in_memory_before_the_first_search() -> None:
    """A new engine's table is touched at ``newgame``, not page by page on the first search's clock (a page fault
    each 4 KiB of the 16 MiB: slow on a loaded machine). Counted in page faults, not timed."""
    engine = bot()
    engine.new_game(Variant())
    position = parse_position("..../..../..../.... 3")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    engine.search(position, SearchContext(Go(movetime=100), position=position))
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert faults < 1000  # 16 MiB of table is 4,096 pages; the search itself needs a few at most


@pytest.mark.serial  # a wall-clock bound: run alone (.ci/run), not beside three other test workers
def test_the_search_keeps_to_the_sdks_budget() -> None:
    # SPEC §4.5's numbers, kept by the SDK's budget: perfect's searches plan what SearchContext.budget says.
    engine = bot()
    engine.new_game(Variant())
    position = parse_position("..8./.3../..9./1... 7")
    ctx = SearchContext(Go(movetime=100), position=position)
    assert ctx.budget == pytest.approx(0.05)
    engine.search(position, ctx)
    assert ctx.elapsed() < 0.1


def test_two_threads_split_only_exact_win_proofs_and_end_with_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``Threads`` 2, the exact win proof from SPLIT_FROM empty squares on asks the solver for two threads
    (here from 10, so that these positions are quick to sample), only when a CPU is to spare, and the second thread
    has ended when the turn is played."""
    monkeypatch.setattr(perfect, "SPLIT_FROM", 10)
    monkeypatch.setattr(perfect, "spare_cpu", lambda: True)  # a loaded test machine would keep one thread
    asked: list[tuple[int, Aim, int]] = []
    plain = Solver.search

    def counted(solver: Solver, position: Position, depth: int, *args: Any, **kwargs: Any) -> Search | None:
        asked.append((16 - position.placed, kwargs.get("aim", Aim.VALUE), kwargs.get("threads", 1)))
        return plain(solver, position, depth, *args, **kwargs)

    monkeypatch.setattr(Solver, "search", counted)
    variant = Variant()
    before = set(threading.enumerate())
    engine = bot(Threads=2)
    wins = positions_of(Verdict.WIN, variant, 10, 2, seed=2)
    for position in wins:
        turn, infos = search(engine, position, Go(movetime=2000))
        assert set(threading.enumerate()) <= before  # the second thread has ended
        assert infos[-1].score.kind == "win"  # type: ignore[union-attr]
        value = Solver(variant).turn_value(position, turn)
        assert value is not None and value.verdict is Verdict.WIN
    split = [(empty, aim) for empty, aim, threads in asked if threads == 2]
    assert split == [(10, Aim.WIN)] * len(wins)
    assert all(threads == 1 for empty, aim, threads in asked if empty < 10 or aim is not Aim.WIN)
    asked.clear()
    monkeypatch.setattr(perfect, "spare_cpu", lambda: False)  # a busy machine: one thread
    for position in wins:
        search(engine, position, Go(movetime=2000))
    assert asked and all(threads == 1 for _, _, threads in asked)
    asked.clear()
    search(bot(), wins[0], Go(movetime=2000))  # Threads 1, the default
    assert asked and all(threads == 1 for _, _, threads in asked)


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_convert_and_keep_draws(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """With one thread or two, a won position is won and a drawn one kept against perfect defence (the two threads
    share the win proof from 9 empty squares here)."""
    monkeypatch.setattr(perfect, "SPLIT_FROM", 9)
    monkeypatch.setattr(perfect, "spare_cpu", lambda: True)
    variant = Variant()
    for verdict, empties in ((Verdict.WIN, 10), (Verdict.DRAW, 9)):
        for position in positions_of(verdict, variant, empties, 2, seed=2):
            engine, defender = bot(Threads=threads), bot()
            engine.new_game(variant)
            defender.new_game(variant)
            p, turns = position, 0
            while not p.is_over:
                mover = engine if turns % 2 == 0 else defender
                p = p.apply(mover.search(p, SearchContext(EXACT_GO, position=p)))
                turns += 1
            if verdict is Verdict.WIN:
                assert p.outcome is Outcome.WIN and turns % 2 == 1
            else:
                assert p.outcome is Outcome.DRAW or turns % 2 == 1  # never lost


def test_stop_ends_a_win_proof_on_two_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """``stop`` during the two-thread win proof of a drawn 12-empty position ends both threads at once, and the turn
    played is one proven not to lose."""
    monkeypatch.setattr(perfect, "spare_cpu", lambda: True)
    split: list[Position] = []
    started = threading.Event()
    plain = Solver._win_on_two_threads

    def counted(solver: Solver, position: Position) -> tuple[int, int] | None:
        split.append(position)
        started.set()
        return plain(solver, position)

    monkeypatch.setattr(Solver, "_win_on_two_threads", counted)
    variant = Variant()
    position = positions_of(Verdict.DRAW, variant, 12, 1, seed=3)[0]
    engine = bot(Threads=2)
    engine.new_game(variant)
    before = set(threading.enumerate())
    infos: list[Info] = []
    ctx = SearchContext(Go(infinite=True), position=position, on_info=infos.append)
    turns: list[Turn] = []
    worker = threading.Thread(target=lambda: turns.append(engine.search(position, ctx)))
    worker.start()
    assert started.wait(10.0)
    time.sleep(0.01)  # the proof takes about 0.1 s on two quiet cores
    ctx.stop()
    worker.join(5.0)
    assert not worker.is_alive()
    assert split == [position]  # stopped in the win proof, on two threads
    assert set(threading.enumerate()) <= before | {worker}
    assert turns
    value = Solver(variant).turn_value(position, turns[0])
    assert value is not None and value.verdict is Verdict.DRAW


def test_a_win_on_the_board_is_played_when_the_time_is_gone_at_once() -> None:
    # On a loaded machine the budget can be spent before the first search step; the turn played then is the
    # fallback, which must still take a win (SPEC §7.2's b4), not the first safe turn.
    position = parse_position("startpos").play(parse_turns(["3", "c47", "d4e", "d35", "a41"]))
    engine = bot()
    engine.new_game(Variant())
    turn = engine.search(position, SearchContext(Go(movetime=300), position=position, budget=0.0))
    assert turn == Turn(place=13)


def test_a_win_proven_on_an_earlier_turn_is_played_when_the_time_is_gone_at_once() -> None:
    # Once the engine has proven a win, its table holds the proof of every defence: on a loaded machine the next
    # turn's budget can be spent before its first search step, and the turn played then must be the table's win,
    # not the first safe turn (a won position's winning turns are few: the first safe one seldom is one).
    defender = Solver(Variant())
    for position in positions_of(Verdict.WIN, Variant(), 10, 4, seed=2):
        engine = bot()
        turn, infos = search(engine, position)  # new_game, then the proof (the whole game's time)
        assert infos[-1].score is not None and infos[-1].score.kind == "win"
        reply = defender.value(position.apply(turn)).best[0]
        ours = position.apply(turn).apply(reply)
        turn = engine.search(ours, SearchContext(Go(movetime=100), position=ours, budget=0.0))
        value = defender.turn_value(ours, turn)
        assert value is not None and value.verdict is Verdict.WIN
