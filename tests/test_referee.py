"""The referee and the time controls: full games between real engines over stdio and ZeroMQ, and the verdicts on
illegal turns, false claims and overruns (engines scripted where a real one cannot misbehave on cue)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import VirtualClock
from procs import STEADY_TC, free_port, wait_listening
from quarto_arena.arena.engine import Deadlines, EngineConfig, EngineSession
from quarto_arena.arena.errors import ArenaFault
from quarto_arena.arena.records import GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.referee import GameSpec, play_game
from quarto_arena.arena.results import summarize
from quarto_arena.arena.roster import engine_config
from quarto_arena.arena.run import play_match
from quarto_arena.arena.timecontrol import Clock, SearchClock, TimeControl
from quarto_arena.arena.transport.testing import ScriptedTransport
from quarto_arena.engines.registry import command
from quarto_arena.protocol.notation import parse_position, parse_turns, parse_variant
from quarto_arena.protocol.rules import Outcome, Position
from quarto_arena.protocol.uqi import Go, PositionCommand, UqiError, parse_command

ENGINES_DIR = Path(__file__).resolve().parent.parent / "engines"
FAST = Deadlines(startup=10, ready=5, newgame=5, quit=1, safety=10)
STEADY = TimeControl.parse(STEADY_TC)
"""For games between engine processes, which answer at once."""
QUICK = TimeControl.parse("st=0.5")
"""For the scripted engines, which answer on the arena's own event loop (a stall holds the answer and the deadline
alike), and whose games end on time when their script runs out."""


def replay(record: GameRecord, variant_text: str = "standard all auto") -> Position:
    """Replays a record with the rules core and checks the verdict it records; returns the final position."""
    variant = parse_variant(*variant_text.split())
    pos = Position.start(variant) if record.start == "startpos" else parse_position(record.start, variant)
    for t in record.turns:
        turn = parse_turns([t.token])[0]
        assert pos.canonical(turn) == turn, f"{t.token} is not recorded canonically"
        pos = pos.apply(turn)
    return pos


def check_normal(record: GameRecord) -> None:
    assert record.termination is Termination.NORMAL, record.detail
    final = replay(record)
    assert final.is_over
    if final.outcome is Outcome.DRAW:
        assert record.result is Result.DRAW
    else:
        last_mover_first = len(record.turns) % 2 == 1
        assert record.result is (Result.FIRST_WINS if last_mover_first else Result.SECOND_WINS)
    assert all(t.ms >= 0 for t in record.turns)


@pytest.fixture(scope="module")
def bots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Every greedy bot that can run here: python always, C and JS when their files and tools are present."""
    out = {"python": command("greedy")}
    c_source = ENGINES_DIR / "c" / "quarto_bot.c"
    if c_source.exists() and shutil.which("cc"):
        exe = tmp_path_factory.mktemp("cbot") / "quarto_bot"
        subprocess.run(["cc", "-O2", "-o", str(exe), str(c_source)], check=True)
        out["c"] = [str(exe)]
    js_source = ENGINES_DIR / "js" / "quarto_bot.js"
    node = shutil.which("node")
    if js_source.exists() and node:
        out["js"] = [node, str(js_source)]
    return out


@pytest.mark.parametrize(("a", "b"), [("python", "c"), ("python", "js"), ("c", "js")])
def test_full_games_between_languages(bots: dict[str, list[str]], a: str, b: str) -> None:
    for kind in (a, b):
        if kind not in bots:
            pytest.skip(f"the {kind} bot is not available here")
    records = asyncio.run(
        play_match(
            EngineConfig(a, command=tuple(bots[a]), options={"Seed": "1"}),
            EngineConfig(b, command=tuple(bots[b]), options={"Seed": "2"}),
            2,
            GameSpec(time_control=STEADY),
            deadlines=FAST,
        )
    )
    assert [(r.first, r.second) for r in records] == [(a, b), (b, a)]
    for r in records:
        check_normal(r)


@pytest.fixture
def zmq_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The Python greedy bot served on a loopback ZeroMQ endpoint; killed (whole group) afterwards."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    proc = subprocess.Popen([*command("greedy"), "--listen", endpoint], start_new_session=True)
    try:
        wait_listening(endpoint, proc)
        yield endpoint, proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_games_over_zeromq(zmq_server: tuple[str, subprocess.Popen[bytes]], bots: dict[str, list[str]]) -> None:
    endpoint, _ = zmq_server
    served = engine_config(f"served={endpoint}")
    assert served.endpoint == endpoint
    local = EngineConfig("local", command=tuple(bots["python"]))
    # Two matches in a row: the server takes the next session after quit.
    for _ in range(2):
        records = asyncio.run(play_match(served, local, 2, GameSpec(time_control=STEADY), deadlines=FAST))
        assert len(records) == 2
        for r in records:
            check_normal(r)


def test_zeromq_server_that_dies_is_a_disconnect(zmq_server: tuple[str, subprocess.Popen[bytes]]) -> None:
    endpoint, proc = zmq_server

    async def main() -> None:
        s = EngineSession(EngineConfig("served", endpoint=endpoint), deadlines=FAST)
        await s.start()
        await s.new_game(parse_variant())
        # The server dies behind the session's back: the search reports a disconnect at once, not a time forfeit.
        os.killpg(proc.pid, signal.SIGKILL)
        out = await s.search(PositionCommand(None), Go(movetime=5000), 5.0)
        assert out.termination is Termination.DISCONNECT, out.detail
        assert out.detail == "served: disconnected during a search (disconnected)"
        assert out.ms < 5000
        assert not s.alive
        await s.quit()

    asyncio.run(main())


# --- verdicts (scripted engines) ------------------------------------------------------------------------------


async def answer(
    t: ScriptedTransport, batches: list[list[str]], delay: float = 0.0, clock: VirtualClock | None = None
) -> None:
    """Answers each ``go`` the arena sends with the next batch of lines, ``delay`` seconds after it (on ``clock``
    when given: it is moved on by the delay, and the answer comes at once; past the last batch, by an hour: the
    search's deadline passes when its timer fires)."""
    seen = 0
    while True:
        await asyncio.sleep(0.001)
        gos = [line for line in t.sent if line.startswith("go")]
        if len(gos) > seen:
            seen = len(gos)
            if clock is not None:
                clock.advance(delay if seen <= len(batches) else 3600)
            elif delay:
                await asyncio.sleep(delay)
            t.feed(batches[seen - 1] if seen <= len(batches) else [])


class FreeScript(ScriptedTransport):
    """A scripted engine that accepts any position/go line after the scripted prefix."""

    def on_line(self, line: str) -> None:
        if not line.startswith(("position", "go", "stop")):
            super().on_line(line)


def scripted_pair(
    claims: str = "auto", odds: tuple[TimeControl | None, TimeControl | None] = (None, None)
) -> tuple[EngineSession, FreeScript, EngineSession, FreeScript]:
    out: list[EngineSession | FreeScript] = []
    for name, tc in zip(("alpha", "beta"), odds, strict=True):
        t = FreeScript(name)
        t.expect("uqi 1", [f"id name {name}", "uqiok 1"])
        t.expect(f"newgame shapes standard attributes color,shape,height,fill claims {claims}", [])
        t.expect("isready", ["readyok"])
        out += [EngineSession(EngineConfig(name, command=(name,), time_control=tc), deadlines=FAST), t]
    return out[0], out[1], out[2], out[3]  # type: ignore[return-value]


def run_scripted(
    first: list[list[str]],
    second: list[list[str]],
    spec: GameSpec,
    *,
    delays: tuple[float, float] = (0.0, 0.0),
    odds: tuple[TimeControl | None, TimeControl | None] = (None, None),
    clock: VirtualClock | None = None,
) -> tuple[GameRecord, list[str]]:
    a, ta, b, tb = scripted_pair(spec.variant.claims.value, odds)

    async def main() -> GameRecord:
        await a.start(ta)
        await b.start(tb)
        feeders = [
            asyncio.create_task(answer(ta, first, delays[0], clock)),
            asyncio.create_task(answer(tb, second, delays[1], clock)),
        ]
        try:
            return await play_game(a, b, spec)
        finally:
            for f in feeders:
                f.cancel()

    record = asyncio.run(main())
    return record, ta.sent + tb.sent


def test_a_failing_turn_listener_aborts_the_game_with_the_turns_so_far_and_kills_both_engines() -> None:
    # The turns are played in the reader's callbacks: the listener's failure must still reach play_game's caller
    # (as an ArenaFault carrying the game so far), not the engine's reader, and no engine may be left running.
    seen: list[str] = []

    def on_turn(ply: int, turn: TurnRecord, position: Position) -> None:
        seen.append(turn.token)
        if len(seen) == 3:
            raise ArenaFault("the journal's disk is full")

    async def main() -> tuple[ArenaFault, EngineSession, EngineSession]:
        a, b = (EngineSession(EngineConfig(n, command=tuple(command("random"))), deadlines=FAST) for n in "ab")
        with pytest.raises(ArenaFault) as caught:
            await play_game(a, b, GameSpec(time_control=STEADY), on_turn=on_turn)
        return caught.value, a, b

    fault, a, b = asyncio.run(main())
    assert isinstance(fault.record, GameRecord)
    assert fault.record.termination is Termination.ABORTED and fault.record.result is Result.UNFINISHED
    assert [t.token for t in fault.record.turns] == seen
    assert not a.alive and not b.alive
    for pid in (*a.pids, *b.pids):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped: no zombie either


def test_illegal_turn_loses_with_a_detail_line() -> None:
    record, _ = run_scripted([["turn 0"], ["turn b1e"]], [["turn b1f"]], GameSpec(time_control=QUICK))
    assert record.termination is Termination.ILLEGAL_TURN
    assert record.result is Result.SECOND_WINS and record.loser == "alpha"
    assert record.detail == "alpha: illegal turn b1e: b1 is occupied"
    assert [t.token for t in record.turns] == ["0", "b1f"]
    assert "alpha" in record.exit_info


def test_false_claim_and_malformed_reply() -> None:
    record, _ = run_scripted([["turn 0"]], [["turn b1!"]], GameSpec(time_control=QUICK))
    assert record.termination is Termination.FALSE_CLAIM
    assert record.result is Result.FIRST_WINS
    assert record.detail == "beta: false claim b1!: QUARTO! called, but b1 completes no alignment"
    record, _ = run_scripted([["info depth 1 score value 3", "turn q9"]], [], GameSpec(time_control=QUICK))
    assert record.termination is Termination.MALFORMED_REPLY
    assert record.detail.startswith("alpha: malformed reply 'turn q9': ")


def test_time_forfeit_on_silence_and_on_overrun() -> None:
    tc = TimeControl.parse("st=0.1")
    record, _ = run_scripted([[]], [], GameSpec(time_control=tc, margin_ms=20))
    assert record.termination is Termination.TIME_FORFEIT
    assert record.detail.startswith("alpha: no turn in ")
    assert record.result is Result.SECOND_WINS
    # A turn that comes, but after the movetime plus the margin: the same forfeit, at the deadline.
    record, _ = run_scripted([["turn 0"]], [], GameSpec(time_control=tc, margin_ms=20), delays=(0.3, 0.0))
    assert record.termination is Termination.TIME_FORFEIT and record.loser == "alpha"
    ms = int(record.detail.split("no turn in ")[1].split()[0])
    assert 120 <= ms < 300  # declared at the deadline (100 + 20 ms), not when the late turn arrived
    assert record.turns == ()
    # Within the margin it counts, and is charged what it took.
    record, _ = run_scripted(
        [["turn 0"], []], [["turn a1f"]], GameSpec(time_control=tc, margin_ms=150), delays=(0.12, 0.0)
    )
    assert [t.token for t in record.turns][:2] == ["0", "a1f"] and record.turns[0].ms >= 110


def test_opening_is_recorded_with_zero_ms_and_sent_with_every_position() -> None:
    spec = GameSpec(time_control=QUICK, opening=("3", "c47"), start=None)
    record, sent = run_scripted([["turn d4e"], ["turn d35"]], [["turn a41"]], spec)
    assert record.opening == ("3", "c47")
    assert [(t.token, t.ms) for t in record.turns[:2]] == [("3", 0), ("c47", 0)]
    positions = [line for line in sent if line.startswith("position")]
    assert positions[0] == "position startpos turns 3 c47"  # alpha's first search
    assert "position startpos turns 3 c47 d4e" in positions  # beta's
    # alpha (first) moves at ply 2; the game goes on from the opening with alpha to move.
    assert record.turns[2].token == "d4e"


def test_an_opening_played_again_starts_from_the_state_it_led_to_with_each_game_its_own_turns() -> None:
    # The referee remembers the state an opening led to, by the opening's identity (a run's games of a pair share
    # it): a second game with the same opening object starts from it, and appends its turns to lists of its own.
    import dataclasses

    from quarto_arena.arena import referee

    spec = GameSpec(time_control=QUICK, opening=("3", "c47"), start=None)
    first, _ = run_scripted([["turn d4e"], ["turn d35"]], [["turn a41"]], spec)
    kept = referee._opened(spec.opening, spec.variant, None)
    assert [r.token for r in kept[3]] == ["3", "c47"]
    again = dataclasses.replace(spec, game_id=2)
    assert again.opening is spec.opening
    second, sent_again = run_scripted([["turn b2e"], ["turn d35"]], [["turn a41"]], again)
    assert [t.token for t in first.turns][:3] == ["3", "c47", "d4e"]  # the first game's record is untouched
    assert [t.token for t in second.turns][:3] == ["3", "c47", "b2e"]
    assert second.opening == ("3", "c47") and [t.ms for t in second.turns[:2]] == [0, 0]
    assert next(line for line in sent_again if line.startswith("position")) == "position startpos turns 3 c47"
    assert [r.token for r in kept[3]] == ["3", "c47"]  # the kept state did not grow with either game
    assert referee._opened(spec.opening, spec.variant, None) is kept  # remembered, not replayed
    # From a start position, the same: kept apart from the empty board's by the start's text.
    start = "..../..../..../012. 3"
    from_start = GameSpec(time_control=QUICK, opening=("a24",), start=start)
    record, _ = run_scripted([["turn c26"]], [["turn b25"]], from_start)
    assert record.start == start and [t.token for t in record.turns][:3] == ["a24", "b25", "c26"]
    assert referee._opened(from_start.opening, from_start.variant, start)[0] is not kept[0]


def test_auto_win_with_a_give_is_recorded_without_it() -> None:
    # From row 1 = 0 1 2 . with piece 3 in hand, d1 wins; the engine adds a give, the record drops it.
    spec = GameSpec(time_control=QUICK, start="..../..../..../012. 3")
    record, _ = run_scripted([["turn d14"]], [], spec)
    assert record.termination is Termination.NORMAL
    assert record.result is Result.FIRST_WINS
    assert [t.token for t in record.turns] == ["d1"]
    assert record.start == "..../..../..../012. 3"


def test_a_missed_alignment_claimed_with_bang_wins_under_strict_claims() -> None:
    # Row 1 = 0 1 2 . with piece 3 in hand: d1 completes it (all light and round). alpha plays it with a give, a
    # missed alignment; beta claims it and wins.
    strict = GameSpec(
        time_control=QUICK, start="..../..../..../012. 3", variant=parse_variant("standard", "all", "strict")
    )
    record, sent = run_scripted([["turn d14"]], [["turn !"]], strict)
    assert record.termination is Termination.NORMAL, record.detail
    assert record.result is Result.SECOND_WINS
    assert record.detail == "beta claims the missed alignment"
    assert [t.token for t in record.turns] == ["d14", "!"]
    assert "position ..../..../..../012. 3 turns d14" in sent  # what told beta it could claim
    assert replay(record, "standard all strict").is_over


def test_a_missed_alignment_left_unclaimed_is_dead_for_the_rest_of_the_game() -> None:
    strict = GameSpec(
        time_control=QUICK, start="..../..../..../012. 3", variant=parse_variant("standard", "all", "strict")
    )
    # beta does not claim (places 4 on a2, gives 5); alpha's claim one turn later is a false claim.
    record, _ = run_scripted([["turn d14"], ["turn !"]], [["turn a25"]], strict)
    assert [t.token for t in record.turns] == ["d14", "a25"]
    assert record.termination is Termination.FALSE_CLAIM
    assert record.result is Result.SECOND_WINS and record.loser == "alpha"
    assert record.detail.startswith("alpha: false claim !: no alignment to claim")


def clocks_from(record: GameRecord, control: TimeControl) -> list[tuple[int, int]]:
    """(mover's clock, opponent's clock) before each turn, recomputed from the record's charged milliseconds."""
    assert control.base_ms is not None
    remaining = [control.base_ms, control.base_ms]
    out = []
    for i, turn in enumerate(record.turns):
        side = i % 2
        out.append((remaining[side], remaining[1 - side]))
        remaining[side] = max(0, remaining[side] - turn.ms) + control.inc_ms
    return out


def quiet_game(n: int) -> tuple[list[list[str]], list[list[str]]]:
    """``n`` legal turns that end nothing (the first that neither wins nor hands over a win), as two scripts."""
    pos = Position.start()
    tokens = []
    for _ in range(n):
        turn = next(
            t
            for t in pos.legal_turns()
            if not pos.apply(t).is_over and (t.give is None or not pos.apply(t).winning_squares())
        )
        tokens.append(str(turn))
        pos = pos.apply(turn)
    return [[f"turn {t}"] for t in tokens[0::2]], [[f"turn {t}"] for t in tokens[1::2]]


@pytest.mark.slow
def test_every_go_carries_the_movers_clock_then_the_opponents_through_a_whole_game() -> None:
    """time/otime follow the game: the mover's clock runs down by what it used, plus its increment. On a controlled
    clock (tests/clocks.py): what each engine takes is charged exactly, however loaded the machine."""
    tc = TimeControl.parse("3+0.1")
    alpha, beta = quiet_game(10)
    # alpha takes 60 ms a turn, beta 5: the two clocks drift apart.
    with VirtualClock().installed() as clock:
        record, sent = run_scripted(alpha, beta, GameSpec(time_control=tc), delays=(0.06, 0.005), clock=clock)
    assert len(record.turns) >= 10, record.detail
    expected = [f"go time {mine} inc 100 otime {theirs} oinc 100" for mine, theirs in clocks_from(record, tc)]
    beta_starts = sent.index("uqi 1", 1)  # alpha's lines come first, then beta's
    alpha_gos = [line for line in sent[:beta_starts] if line.startswith("go")]
    beta_gos = [line for line in sent[beta_starts:] if line.startswith("go")]
    assert alpha_gos[:5] == expected[0:10:2]
    assert beta_gos[:5] == expected[1:10:2]
    assert expected[8] != "go time 3000 inc 100 otime 3000 oinc 100"  # the clocks did move
    mine, theirs = clocks_from(record, tc)[9]
    assert mine - theirs > 100  # and drifted apart: swapping them would not go unnoticed
    # alpha used 60 ms a turn, and was charged it; beta 5.
    assert [t.ms for t in record.turns[:10]] == [60, 5] * 5


def test_time_odds_each_engine_plays_under_its_own_control() -> None:
    # The game is st=0.1; alpha has st=0.5 and answers after 0.2 s: no forfeit. beta has 2+0 and keeps its clock.
    odds = (TimeControl.parse("st=0.5"), TimeControl.parse("2"))
    alpha, beta = quiet_game(6)
    record, sent = run_scripted(
        alpha, beta, GameSpec(time_control=TimeControl.parse("st=0.1")), delays=(0.2, 0.0), odds=odds
    )
    assert len(record.turns) >= 6, record.detail
    beta_starts = sent.index("uqi 1", 1)
    alpha_gos = [line for line in sent[:beta_starts] if line.startswith("go")]
    beta_gos = [line for line in sent[beta_starts:] if line.startswith("go")]
    assert alpha_gos[0] == "go otime 2000 oinc 0 movetime 500"  # its own st=0.5, and beta's clock
    assert all(g.endswith(" movetime 500") for g in alpha_gos[:3])
    assert beta_gos[0] == "go time 2000 inc 0"  # beta's own clock; alpha has none, so no otime
    assert all(g.startswith("go time ") and "otime" not in g for g in beta_gos[:3])
    assert all(t.ms >= 190 for t in record.turns[0:6:2])  # alpha overran st=0.1, within its own st=0.5


# --- time controls --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "base", "inc", "st", "depth", "nodes"),
    [
        ("60+0.5", 60000, 500, None, None, None),
        ("10", 10000, 0, None, None, None),
        ("st=60", None, 0, 60000, None, None),
        ("depth=4", None, 0, None, 4, None),
        ("nodes=5000,depth=3", None, 0, None, 3, 5000),
        ("st=0.2,nodes=10", None, 0, 200, None, 10),
        ("inf", None, 0, None, None, None),
    ],
)
def test_time_control_parse(
    text: str, base: int | None, inc: int, st: int | None, depth: int | None, nodes: int | None
) -> None:
    tc = TimeControl.parse(text)
    assert (tc.base_ms, tc.inc_ms, tc.movetime_ms, tc.depth, tc.nodes) == (base, inc, st, depth, nodes)
    assert str(tc) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty time control"),
        ("fast", "base time 'fast' is not a number of seconds"),
        ("60+x", "increment 'x' is not a number of seconds"),
        ("st=1,10", "BASE+INC and st= exclude each other"),
        ("depth=0", "depth '0' is not a positive integer"),
        ("inf,depth=3", "inf cannot be combined"),
        ("st=1,st=2", "st= is given twice"),
        ("speed=3", "unknown part 'speed=3'"),
        ("0+1", "the base time must be positive"),
    ],
)
def test_time_control_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        TimeControl.parse(text)
    assert "\n" not in str(e.value)
    # Every error lists the accepted forms, moves per period (as cutechess writes them) among them.
    assert "accepted: BASE+INC (60+0.5), MOVES/BASE[+INC] (40/60+0.5), st=SECONDS" in str(e.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("st=9223372036854776", "st is more than 2^63 - 1 ms"),
        ("9223372036854776", "base time is more than 2^63 - 1 ms"),
        ("1+9223372036854776", "increment is more than 2^63 - 1 ms"),
        ("depth=9223372036854775808", "depth is more than 2^63 - 1,"),
        ("nodes=9223372036854775808", "nodes is more than 2^63 - 1,"),
        ("9223372036854775808/60", "moves per period is more than 2^63 - 1,"),
        ("1+1152921504606847", "the clock would pass 2^63 - 1 ms"),  # 8 increments
        ("1/1152921504606847", "the clock would pass 2^63 - 1 ms"),  # 9 periods
    ],
)
def test_time_controls_beyond_uqi_s_largest_value_are_refused(text: str, message: str) -> None:
    # SPEC 4.5: every go value is at most 2^63 - 1; an engine rightly refuses a larger one, and was then scored a
    # time forfeit (or the game hung) for the arena's own limit.
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        TimeControl.parse(text)
    assert "\n" not in str(e.value) and "SPEC 4.5" in str(e.value)


@pytest.mark.parametrize(
    "text", ["nodes=9223372036854775807,depth=9223372036854775807", "1+1152921504606846", "2/1844674407370955"]
)
def test_the_largest_time_controls_accepted_send_values_an_engine_accepts_all_game_long(text: str) -> None:
    tc = TimeControl.parse(text)
    first, second = Clock(tc, 0), Clock(tc, 0)
    for _ in range(9):  # the first player's turns in the longest game, each charged nothing
        line = first.go_line(second)
        assert parse_command(line) == first.go(second)  # no value beyond 2^63 - 1: a line the SDK takes
        first.charge(0)


@pytest.mark.parametrize(("text", "moves", "base", "inc"), [("40/60", 40, 60000, 0), ("40/60+0.5", 40, 60000, 500)])
def test_moves_per_period_time_controls(text: str, moves: int, base: int, inc: int) -> None:
    tc = TimeControl.parse(text)
    assert (tc.moves, tc.base_ms, tc.inc_ms, str(tc)) == (moves, base, inc, text)
    for bad, message in (("0/60", "moves per period '0'"), ("x/60", "moves per period 'x'"), ("40/", "base time ''")):
        with pytest.raises(ValueError, match=re.escape(message)):
            TimeControl.parse(bad)


def test_a_moves_per_period_clock_says_movestogo_and_credits_each_period() -> None:
    tc = TimeControl.parse("2/1+0.1")
    me, you = Clock(tc, 50), Clock(tc, 50)
    assert me.go(you) == Go(time=1000, inc=100, otime=1000, oinc=100, movestogo=2)
    assert me.go_line(you) == "go time 1000 inc 100 otime 1000 oinc 100 movestogo 2"
    me.charge(300)
    assert me.remaining_ms == 800 and me.go(you).movestogo == 1
    assert me.go_line(you) == "go time 800 inc 100 otime 1000 oinc 100 movestogo 1"
    me.charge(400)  # the period's second turn: its time left, the increment, and the next period's second
    assert me.remaining_ms == 800 - 400 + 100 + 1000 and me.go(you).movestogo == 2
    assert parse_command("go time 5 movestogo 3") == Go(time=5, movestogo=3)
    with pytest.raises(UqiError, match="movestogo"):
        parse_command("go time 5 movestogo 0")


def test_clock_go_deadline_and_charge() -> None:
    tc = TimeControl.parse("1+0.1")
    me, you = Clock(tc, 50), Clock(tc, 50)
    assert me.go(you) == Go(time=1000, inc=100, otime=1000, oinc=100)
    assert me.deadline(60) == pytest.approx(1.05)  # the clock plus the margin: the search's deadline
    me.charge(300)
    assert me.remaining_ms == 800
    assert me.go(you) == Go(time=800, inc=100, otime=1000, oinc=100)
    assert you.go(me) == Go(time=1000, inc=100, otime=800, oinc=100)
    me.charge(850)  # over the clock, within the margin: not flagged, clock at zero plus increment
    assert me.remaining_ms == 100 and me.deadline(60) == pytest.approx(0.15)
    fixed = Clock(TimeControl.parse("st=0.5,depth=2"), 50)
    assert fixed.go(fixed) == Go(movetime=500, depth=2)
    assert fixed.deadline(60) == pytest.approx(0.55)
    fixed.charge(550)
    assert fixed.remaining_ms is None and fixed.deadline(60) == pytest.approx(0.55)
    untimed = Clock(TimeControl.parse("depth=3"))
    assert untimed.deadline(60) == 60


def test_search_clock_charges_from_the_write_to_the_answer_and_never_more_than_the_deadline() -> None:
    clock = SearchClock.started(0.5)
    assert clock.seconds == 0.5 and clock.at == pytest.approx(clock.sent_at + 0.5)
    clock.answered(clock.sent_at + 0.2)
    assert clock.answer_ms() == 200
    clock.answered(clock.sent_at + 3.0)  # read late, in the arena's overdue wake-up: charged the deadline
    assert clock.answer_ms() == 500
    clock.answered(clock.sent_at - 0.001)  # a chunk read just before the clock started: no negative time
    assert clock.answer_ms() == 0
    assert not clock.expired() and 0 < clock.left() <= 0.5
    assert SearchClock.started(0.0).expired() and SearchClock.started(-1.0).left() < 0


def test_search_clock_timer_calls_on_expiry_once_for_a_running_deadline_only() -> None:
    async def scenario() -> list[str]:
        fired: list[str] = []
        clock = SearchClock(asyncio.get_running_loop(), lambda: fired.append("expired"))
        clock.start(0.01)
        await asyncio.sleep(0.05)  # a later timer of the same loop: the deadline's has run first
        fired.append("answered next")
        clock.start(0.01)
        clock.answered(clock.sent_at)
        await asyncio.sleep(0.05)
        fired.append("moved later")
        clock.start(0.01)
        clock.start(30.0)  # the pending timer is kept, fires early and re-arms for the new deadline
        await asyncio.sleep(0.05)
        fired.append("moved earlier")
        clock.start(0.01)
        await asyncio.sleep(0.05)
        clock.close()
        return fired

    assert asyncio.run(scenario()) == ["expired", "answered next", "moved later", "moved earlier", "expired"]


def test_summary_counts_wins_and_forfeits() -> None:
    def rec(first: str, second: str, result: Result, termination: Termination) -> GameRecord:
        return GameRecord(first, second, result, termination)

    records = [
        rec("a", "b", Result.FIRST_WINS, Termination.NORMAL),
        rec("b", "a", Result.FIRST_WINS, Termination.ILLEGAL_TURN),
        rec("a", "b", Result.DRAW, Termination.NORMAL),
        rec("b", "a", Result.SECOND_WINS, Termination.TIME_FORFEIT),
        rec("a", "b", Result.UNFINISHED, Termination.ABORTED),
    ]
    s = summarize(records, "a", "b")
    assert (s.wins, s.losses, s.draws, s.games) == (2, 1, 1, 4)
    assert s.score == pytest.approx(2.5 / 4)
    assert s.forfeits == {"a": {"illegal turn": 1}, "b": {"time forfeit": 1}}


def test_engine_specs() -> None:
    assert engine_config("greedy").command == tuple(command("greedy"))
    assert engine_config("new=greedy").name == "new"
    c = engine_config("'./my bot' --level 3")
    assert c.command == ("./my bot", "--level", "3") and c.name == "my-bot"
    assert engine_config("./bot --x=1").name == "bot"
    assert engine_config("ipc:///tmp/x.sock", "served").endpoint == "ipc:///tmp/x.sock"
    with pytest.raises(ValueError, match="empty command"):
        engine_config("  ")


def test_new_games_answers_in_the_sessions_order_and_asks_a_session_given_twice_once() -> None:
    # engine.new_games: each session's failure in the order given; one engine given for both sides is asked once.
    from quarto_arena.arena.engine import new_games
    from quarto_arena.protocol.rules import Variant

    newgame = "newgame shapes standard attributes color,shape,height,fill claims auto"
    ta, tb = FreeScript("alpha"), FreeScript("beta")
    for t, answer in ((ta, []), (tb, ["error no new game here"])):
        t.expect("uqi 1", [f"id name {t.name}", "uqiok 1"])
        for _ in range(3 if t is ta else 2):
            t.expect(newgame, answer)
            t.expect("isready", ["readyok"])
    a, b = (EngineSession(EngineConfig(t.name, command=(t.name,)), deadlines=FAST) for t in (ta, tb))

    async def main() -> tuple[list[object], list[object], list[object]]:
        await a.start(ta)
        await b.start(tb)
        both = await new_games([a, b], Variant())
        swapped = await new_games([b, a], Variant())
        itself = await new_games([a, a], Variant())
        return list(both), list(swapped), list(itself)

    both, swapped, itself = asyncio.run(main())
    assert both[0] is None and "refused newgame" in str(both[1])
    assert "refused newgame" in str(swapped[0]) and swapped[1] is None
    assert itself == [None, None]
    assert sum(line.startswith("newgame") for line in ta.sent) == 3  # once for the pair of a with itself


def test_the_fast_constructor_of_a_game_spec_checks_adjudication_as_the_class_does() -> None:
    # referee.new_game_spec sets GameSpec's slots directly (its maker, tests/test_serialized.py), so it checks what
    # GameSpec.__post_init__ checks itself.
    from quarto_arena.arena.referee import new_game_spec

    spec = GameSpec(game_id=9, round=4, adjudicate=8)
    assert new_game_spec(game_id=9, round=4, adjudicate=8) == spec
    for bad in (0, 13):
        with pytest.raises(ValueError, match="adjudication needs 1 to 12"):
            new_game_spec(adjudicate=bad)
        with pytest.raises(ValueError, match="adjudication needs 1 to 12"):
            GameSpec(adjudicate=bad)


def test_a_games_start_time_is_now_in_seconds() -> None:
    # The referee formats the start time once a second: the same text as datetime's, between two readings of it.
    import datetime

    from quarto_arena.arena.referee import _now_text

    def now() -> str:
        return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

    for _ in range(3):
        before, text, after = now(), _now_text(), now()
        assert before <= text <= after
        assert datetime.datetime.fromisoformat(text).isoformat(timespec="seconds") == text
        assert text.endswith("+00:00")
