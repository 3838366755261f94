"""quarto-arena tune, its parts alone: SPSA's gains, perturbations and update (against fishtest's formulas), the
``--param`` settings and their checks, the tuner's state rebuilt from a journal, and the engine session's option
changes between games (the hook a tune plays through) over the scripted transport."""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quarto_arena.arena.engine import Deadlines, EngineConfig, EngineError, EngineSession
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination
from quarto_arena.arena.schedule import Opening, ScheduledGame
from quarto_arena.arena.transport.testing import ScriptedTransport
from quarto_arena.arena.tune import (
    Gains,
    Param,
    TuneError,
    Tuner,
    TuneSpec,
    check_declared,
    gains_of,
    parse_param,
    parse_params,
)
from quarto_arena.arena.tune.spsa import pair_values, perturbation, updated
from quarto_arena.protocol.rules import STANDARD
from quarto_arena.protocol.uqi import OptionSpec, OptionType

# --- SPSA -----------------------------------------------------------------------------------------------------------


def fishtest_gains(p: Param, n: int, k: int, alpha: float = 0.602, gamma: float = 0.101) -> tuple[float, float]:
    """c_k and R_k as fishtest's server computes them (spsa_workflow.py), with iter = k - 1 and A = 0.1 N."""
    big_a = int(0.1 * 2 * n / 2)
    c = p.c_end * n**gamma
    a = p.r_end * p.c_end**2 * (big_a + n) ** alpha
    iter_local = k
    c_k = c / iter_local**gamma
    return c_k, a / (big_a + iter_local) ** alpha / c_k**2


@given(
    st.integers(1, 5000),
    st.floats(0.5, 50),
    st.floats(0, 0.1),
    st.data(),
)
def test_the_gains_are_fishtests_and_end_at_c_end_and_r_end(
    pairs: int, c_end: float, r_end: float, data: st.DataObject
) -> None:
    p = Param("X", 50, 0, 100, c_end, r_end)
    g = Gains(pairs * 10)  # A = a tenth of N, whole as fishtest's int()
    k = data.draw(st.integers(1, g.pairs))
    c_k, r_k = fishtest_gains(p, g.pairs, k)
    assert math.isclose(g.c(p, k), c_k, rel_tol=1e-12)
    assert math.isclose(g.r(p, k), r_k, rel_tol=1e-12, abs_tol=1e-300)
    assert math.isclose(g.c(p, g.pairs), c_end) and math.isclose(g.r(p, g.pairs), r_end, abs_tol=1e-15)
    assert g.c(p, 1) >= g.c(p, k) >= g.c(p, g.pairs)


def test_no_example_is_timed() -> None:
    """The next test once failed at load 25 on Hypothesis's 200 ms deadline (an example of a pure function took 313 ms,
    then 0.01 ms): conftest's profile times no example, nor how long examples take to make, in any property test."""
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


@given(st.integers(0, 2**31), st.integers(1, 10**6), st.integers(1, 8))
def test_a_pairs_perturbation_depends_on_the_seed_and_its_number_only(seed: int, k: int, n: int) -> None:
    a, b = perturbation(seed, k, n), perturbation(seed, k, n)
    assert a == b and len(a.signs) == len(a.draws) == n
    assert set(a.signs) <= {-1, 1} and all(0 <= u < 1 for u in a.draws)


@given(
    st.integers(-1000, 1000),
    st.integers(1, 2000),
    st.floats(0, 1),
    st.floats(0.01, 400),
    st.integers(1, 500),
    st.integers(0, 2**31),
)
def test_the_values_sent_stay_in_range_and_on_their_side(
    low: int, span: int, where: float, c_end: float, k: int, seed: int
) -> None:
    p = Param("X", low + where * span, low, low + span, min(c_end, span), 0.002)
    g = Gains(500)
    drawn = perturbation(seed, k, 1)
    (plus,), (minus,) = pair_values([p], [p.start], g, k, drawn)
    assert p.min <= plus <= p.max and p.min <= minus <= p.max
    assert isinstance(plus, int) and isinstance(minus, int)
    sign = drawn.signs[0]
    assert (plus - minus) * sign >= 0  # the + engine never gets the other side's value
    c = g.c(p, k)
    if p.min <= p.start - c and p.start + c <= p.max:  # not clipped: 2c apart, rounded one way or the other
        assert math.floor(2 * c) <= abs(plus - minus) <= math.ceil(2 * c)


def test_stochastic_rounding_is_unbiased() -> None:
    p = Param("X", 0, 0, 100, 3.3, 0.002)
    g = Gains(1000)
    theta = 41.37
    plus, minus = [], []
    for k in range(1, 20001):
        (a,), (b,) = pair_values([p], [theta], g, 700, perturbation(7, k, 1))
        sign = perturbation(7, k, 1).signs[0]
        plus.append(a if sign > 0 else b)
        minus.append(b if sign > 0 else a)
    c = g.c(p, 700)
    assert abs(sum(plus) / len(plus) - (theta + c)) < 0.02
    assert abs(sum(minus) / len(minus) - (theta - c)) < 0.02


@given(st.lists(st.integers(-2, 2), min_size=1, max_size=50), st.integers(0, 1000))
@settings(max_examples=50)
def test_the_update_follows_the_result_and_stays_in_range(results: list[int], seed: int) -> None:
    params = [Param("A", 50, 0, 100, 5, 0.5), Param("B", 10, 0, 20, 1, 0.01)]
    g = Gains(len(results))
    theta: tuple[float, ...] = (50.0, 10.0)
    for k, result in enumerate(results, start=1):
        signs = perturbation(seed, k, 2).signs
        after = updated(params, theta, g, k, signs, result)
        for p, before, now, sign in zip(params, theta, after, signs, strict=True):
            assert p.min <= now <= p.max
            step = g.a(p, k) / g.c(p, k) * result * sign
            assert now == p.clip(before + step)
        theta = after
    assert updated(params, theta, g, 1, (1, -1), 0) == theta


# --- --param ----------------------------------------------------------------------------------------------------


def test_a_param_with_its_defaults() -> None:
    p = parse_param("Aggression=50,0,100")
    assert p == Param("Aggression", 50.0, 0, 100, 5.0, 0.002)
    assert parse_param(" Margin=120,0,400,20,0.002 ") == Param("Margin", 120.0, 0, 400, 20.0, 0.002)
    assert parse_param("M=-3.5,-10,10,1") == Param("M", -3.5, -10, 10, 1.0, 0.002)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Aggression", "expected NAME=START,MIN,MAX"),
        ("A=1,2", "2 values; expected NAME=START,MIN,MAX"),
        ("A=x,0,10", "START 'x' is not a number"),
        ("A=5,0.5,10", "MIN '0.5' must be an integer"),
        ("A=5,10,10", "MIN 10 must be below MAX 10"),
        ("A=5,20,10", "MIN 20 must be below MAX 10"),
        ("A=11,0,10", "START 11 is outside [0, 10]"),
        ("A=5,0,10,11", "C_END 11 must be above 0 and at most the range MAX - MIN = 10"),
        ("A=5,0,10,0", "C_END 0 must be above 0"),
        ("A=5,0,10,1,-0.1", "R_END -0.1 cannot be negative"),
        ("A=nan,0,10", "START must be a finite number"),
        ("A=5,0,10,1,0.1,3", "6 values"),
    ],
)
def test_bad_params_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(TuneError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
        parse_param(text)
    assert "\n" not in str(e.value) and e.value.status == 2


def test_params_are_given_once_and_at_least_once() -> None:
    with pytest.raises(TuneError, match="at least one --param"):
        parse_params([])
    with pytest.raises(TuneError, match="--param a is given twice"):
        parse_params(["A=1,0,10", "a=2,0,10"])


def test_params_against_the_declared_options() -> None:
    declared = {
        "aggression": OptionSpec("Aggression", OptionType.SPIN, "50", 0, 100),
        "style": OptionSpec("Style", OptionType.COMBO, "a", vars=("a", "b")),
    }
    (p,) = check_declared([parse_param("aggression=5,0,10")], declared, {}, "bot")
    assert p.name == "Aggression"  # as declared
    with pytest.raises(TuneError, match="bot declares no option Nope \\(its spin options: Aggression\\)"):
        check_declared([parse_param("Nope=5,0,10")], declared, {}, "bot")
    with pytest.raises(TuneError, match="option Style is a combo; tune takes spin options"):
        check_declared([parse_param("Style=5,0,10")], declared, {}, "bot")
    with pytest.raises(TuneError, match="the range \\[-1, 10\\] is outside the declared one \\[0, 100\\]"):
        check_declared([parse_param("Aggression=5,-1,10")], declared, {}, "bot")
    with pytest.raises(TuneError, match="also set with -o"):
        check_declared([parse_param("Aggression=5,0,10")], declared, {"AGGRESSION": "3"}, "bot")


def test_bad_gains() -> None:
    with pytest.raises(TuneError, match="--pairs must be at least 1, not 0"):
        gains_of(0, 0.602, 0.101, 0.1)
    with pytest.raises(TuneError, match="--spsa-a must be a number 0 or more, not -1"):
        gains_of(10, 0.602, 0.101, -1)
    assert gains_of(10, 0.602, 0.101, 0.1) == Gains(10)


def test_the_spec_goes_through_the_journal_header() -> None:
    tune = TuneSpec("bot", (Param("A", 1.5, 0, 10, 1.0, 0.01),), Gains(40, 0.6, 0.1, 0.2), 3, "./bot", None)
    assert TuneSpec.from_header({"tune": tune.to_dict()}, "d") == tune
    with pytest.raises(TuneError, match="d holds a match, not a tune"):
        TuneSpec.from_header({"kind": "match"}, "d")


# --- the tuner ---------------------------------------------------------------------------------------------------


def _tune(pairs: int = 20) -> TuneSpec:
    return TuneSpec("bot", (Param("A", 40, 0, 100, 4, 0.05), Param("B", 5, 0, 10, 1, 0.05)), Gains(pairs), 9)


PLUS = EngineConfig("bot+", command=("bot",), options={"Hash": "16", "A": "40", "B": "5"})
MINUS = replace(PLUS, name="bot-")


def _game(k: int, second: bool) -> ScheduledGame:
    first, other = ("bot-", "bot+") if second else ("bot+", "bot-")
    return ScheduledGame(2 * k - 1 + second, 1, k - 1, first, other, Opening())


def _record(tuner: Tuner, game: ScheduledGame, result: Result) -> GameRecord:
    """The record of ``game`` as the runner would count it, with the options the tuner gave its engines."""
    first, second = tuner.engines_of(game)
    identities = tuple(EngineIdentity(options=dict(c.options)) for c in (first, second))
    return GameRecord(game.first, game.second, result, Termination.NORMAL, game_id=game.game_id, engines=identities)


def test_each_game_gets_its_pairs_values_and_the_other_options() -> None:
    tuner = Tuner(_tune(), PLUS, MINUS)
    first, second = tuner.engines_of(_game(1, False))
    assert (first.name, second.name) == ("bot+", "bot-")
    assert first.options["Hash"] == "16" and set(first.options) == {"Hash", "A", "B"}
    again_first, again_second = tuner.engines_of(_game(1, True))  # the pair's other game: the same values
    assert (again_first.name, again_first.options, again_second.options) == ("bot-", second.options, first.options)
    plus, minus = tuner.values(1)
    assert first.options["A"] == str(plus[0]) and second.options["B"] == str(minus[1])


def test_a_resumed_tuner_is_the_live_one_to_the_last_bit() -> None:
    rng = random.Random(5)
    live = Tuner(_tune(30), PLUS, MINUS)
    journal: list[GameRecord] = []
    # Pairs started in a shuffled order, as workers take them; games counted in another order.
    games = [_game(k, s) for k in range(1, 31) for s in (False, True)]
    started = {g.game_id: g for g in games}
    order = sorted(started, key=lambda gid: gid + rng.random() * 6)
    for gid in order:
        record = _record(live, started[gid], rng.choice(list(Result)[:3]))
        journal.append(record)
        live.count(record)
    assert live.pairs == 30
    resumed = Tuner(_tune(30), PLUS, MINUS)
    resumed.replay(journal)
    assert resumed.theta == live.theta
    assert resumed.iterations == live.iterations
    # The values each pair played with are in its records, and the iterations say so.
    for it in live.iterations:
        assert it.plus is not None and it.minus is not None


def test_a_pair_cut_in_half_replays_its_values() -> None:
    live = Tuner(_tune(), PLUS, MINUS)
    live.count(_record(live, _game(1, False), Result.FIRST_WINS))  # the pair's first game counted, then a kill
    half = live.values(1)
    resumed = Tuner(_tune(), PLUS, MINUS)
    resumed.replay([_record(live, _game(1, False), Result.FIRST_WINS)])
    resumed.count(_record(live, _game(2, False), Result.DRAW))  # another pair started meanwhile: theta unmoved
    assert resumed.values(1) == half
    first, second = resumed.engines_of(_game(1, True))
    assert first.options["A"] == str(half[1][0]) and second.options["A"] == str(half[0][0])


def test_the_result_is_the_plus_engines() -> None:
    tuner = Tuner(_tune(), PLUS, MINUS)
    tuner.count(_record(tuner, _game(1, False), Result.FIRST_WINS))  # + wins as first
    it = tuner.count(_record(tuner, _game(1, True), Result.FIRST_WINS))  # - wins as first
    assert it is not None and it.result == 0
    tuner.count(_record(tuner, _game(2, False), Result.SECOND_WINS))  # - wins as second
    it = tuner.count(_record(tuner, _game(2, True), Result.DRAW))
    assert it is not None and it.result == -1
    tuner.count(_record(tuner, _game(3, False), Result.FIRST_WINS))
    it = tuner.count(_record(tuner, _game(3, True), Result.SECOND_WINS))  # + wins as second
    assert it is not None and it.result == 2 and it.number == 3 and it.pair == 3


# --- option changes between games (EngineSession.configure) -------------------------------------------------------


def _started(script: list[tuple[str, list[str]]], **options: str) -> tuple[EngineSession, ScriptedTransport]:
    t = ScriptedTransport("bot")
    t.expect(
        "uqi 1",
        ["option name A type spin min 0 max 9 default 1", "option name B type spin min 0 max 9 default 1", "uqiok 1"],
    )
    for line, replies in script:
        t.expect(line, replies)
    s = EngineSession(EngineConfig("bot", command=("bot",), options=options), deadlines=Deadlines(startup=1, ready=1))
    return s, t


NEWGAME = "newgame shapes standard attributes color,shape,height,fill claims auto"


def test_option_changes_go_with_the_next_newgame_and_only_what_changed() -> None:
    async def main() -> None:
        s, t = _started(
            [
                ("setoption name A value 2", []),
                ("setoption name B value 3", []),
                ("isready", ["readyok"]),
                (NEWGAME, []),  # nothing changed: the newgame alone
                ("isready", ["readyok"]),
                ("setoption name B value 4", []),  # one changed (twice: the last value), in the newgame's write
                (NEWGAME, []),
                ("isready", ["readyok"]),
            ],
            A="2",
            B="3",
        )
        await s.start(t)
        s.configure(replace(s.config, options={"A": "2", "B": "3"}))
        await s.new_game(STANDARD)
        s.configure(replace(s.config, options={"A": "2", "B": "5"}))
        s.configure(replace(s.config, options={"A": "2", "B": "4"}))
        assert s.config.options == {"A": "2", "B": "4"} and s.identity().options == {"A": "2", "B": "4"}
        await s.new_game(STANDARD)
        t.assert_done()
        assert s.alive

    asyncio.run(main())


def test_a_refused_value_fails_the_newgame_and_names_the_setoption() -> None:
    async def main() -> None:
        s, t = _started(
            [
                ("setoption name A value 1", []),
                ("isready", ["readyok"]),
                ("setoption name A value 9", []),
                (NEWGAME, []),
                ("isready", ["error setoption A cannot be 9", "readyok"]),
            ],
            A="1",
        )
        await s.start(t)
        s.configure(replace(s.config, options={"A": "9"}))
        with pytest.raises(EngineError, match="refused setoption: error setoption A cannot be 9") as e:
            await s.new_game(STANDARD)
        assert e.value.termination is Termination.ENGINE_ERROR
        await asyncio.sleep(0.05)  # the readyok it still owes is read quietly
        t.assert_done()

    asyncio.run(main())


def test_a_value_its_declaration_refuses_is_not_sent() -> None:
    async def main() -> None:
        s, t = _started([("setoption name A value 1", []), ("isready", ["readyok"])], A="1")
        await s.start(t)
        s.configure(replace(s.config, options={"A": "12"}))  # declared 0..9
        with pytest.raises(EngineError, match="A") as e:
            await s.new_game(STANDARD)
        assert e.value.termination is Termination.ENGINE_ERROR
        t.assert_done()

    asyncio.run(main())


def test_an_option_dropped_starts_the_engine_afresh() -> None:
    async def main() -> None:
        s, t = _started([("setoption name A value 2", []), ("isready", ["readyok"])], A="2")
        await s.start(t)
        s.configure(replace(s.config, options={}))
        assert not s.alive and s.config.options == {}
        t.assert_done()

    asyncio.run(main())


def test_the_commands_defaults_are_the_algorithms() -> None:
    import inspect

    from quarto_arena.arena.cli import tune as command
    from quarto_arena.arena.tune import spsa

    # Written out in the command's declaration (its module imports no runner at start-up): held to the constants.
    own = inspect.signature(command.tune.own).parameters
    assert own["spsa_alpha"].default.default == spsa.ALPHA
    assert own["spsa_gamma"].default.default == spsa.GAMMA
    assert own["spsa_a"].default.default == spsa.A_RATIO
