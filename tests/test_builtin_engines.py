"""The built-in engines: greedy's two promises, random's legality, minimax, and the registry the arena uses."""

from __future__ import annotations

import random
import subprocess
from collections.abc import Callable

import pytest
from quarto_arena.engines.greedy import GreedyBot, greedy_turn, safe_turns, winning_turns
from quarto_arena.engines.minimax import MinimaxBot, has_safe_turn
from quarto_arena.engines.random import RandomBot
from quarto_arena.engines.registry import BUILTIN, UnknownEngine, command
from quarto_arena.protocol.bot import SearchContext
from quarto_arena.protocol.notation import format_position, parse_position, parse_turns
from quarto_arena.protocol.rules import ALL_ATTRIBUTES, Attribute, ClaimMode, Outcome, Position, Shapes, Turn, Variant
from quarto_arena.protocol.uqi import Go, Info, Score, TurnReply, parse_reply

VARIANTS = [
    Variant(shapes, attributes, claims)
    for shapes in Shapes
    for claims in ClaimMode
    for attributes in (ALL_ATTRIBUTES, frozenset({Attribute.COLOR, Attribute.FILL}), frozenset({Attribute.HEIGHT}))
]
IDS = [v.describe() for v in VARIANTS]


def random_positions(variant: Variant, count: int, seed: int) -> list[Position]:
    """Unfinished positions reached by random legal play (in strict games, missed alignments included)."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        position = Position.start(variant)
        for _ in range(rng.randrange(1, 16)):
            turns = position.legal_turns()
            if not turns:
                break
            position = position.apply(rng.choice(turns))
        if not position.is_over:
            out.append(position)
    return out


def wins_now(position: Position, turn: Turn) -> bool:
    return position.apply(turn).outcome is Outcome.WIN


def opponent_wins_at_once(after: Position) -> bool:
    """Oracle from legal_turns and apply alone: can the player to move in ``after`` win with this turn?

    A winning turn never carries a give (auto: the placement alone; strict: a call, or the claim), so only those
    turns need to be tried.
    """
    return any(
        wins_now(after, t) for t in after.legal_turns() if t.claim or t.call or (t.place is not None and t.give is None)
    )


def check_greedy_choice(position: Position, turn: Turn) -> None:
    legal = position.legal_turns()
    assert turn in legal
    if any(wins_now(position, t) for t in legal):
        assert wins_now(position, turn), f"{turn} misses a win in {position!r}"
        return
    safe_exists = any(not opponent_wins_at_once(position.apply(t)) for t in legal)
    if safe_exists:
        assert not opponent_wins_at_once(position.apply(turn)), f"{turn} hands over a win in {position!r}"


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_greedy_takes_every_win_and_never_gives_one_away(variant: Variant) -> None:
    rng = random.Random(1)
    bot = GreedyBot()
    for position in random_positions(variant, 40, seed=hash(variant.describe()) & 0xFFFF):
        check_greedy_choice(position, greedy_turn(position, rng))
        check_greedy_choice(position, bot.search(position, SearchContext(Go(movetime=100))))


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_safe_and_winning_turns_agree_with_the_oracle(variant: Variant) -> None:
    for position in random_positions(variant, 25, seed=7):
        legal = position.legal_turns()
        assert set(winning_turns(position)) == {t for t in legal if wins_now(position, t)}
        assert set(safe_turns(position)) == {
            t for t in legal if not wins_now(position, t) and not opponent_wins_at_once(position.apply(t))
        }


def test_greedy_plays_the_spec_examples() -> None:
    rng = random.Random(0)
    # SPEC §7.2: piece 1 on b4 completes row 4.
    assert str(greedy_turn(parse_position("5.37/..../..../.... 1"), rng)) == "b4"
    # SPEC §7.5: claim the alignment the opponent missed, and call a winning placement.
    strict = Variant(claims=ClaimMode.STRICT)
    missed = parse_position("..../..../..../012. 3", strict).apply(Turn(place=3, give=4))
    assert missed.claimable
    assert str(greedy_turn(missed, rng)) == "!"
    assert str(greedy_turn(parse_position("..../..../..../012. 3", strict), rng)) == "d1!"


def test_greedy_gives_a_safe_piece_when_one_exists() -> None:
    # Row 1 holds 0 1 2 (light and round): with d1 left empty, only a dark square piece (c, d, e) is safe to give.
    position = parse_position("..../..../..../012. f")
    rng = random.Random(3)
    for _ in range(50):
        turn = greedy_turn(position, rng)
        assert turn.place == 3 or turn.give in (0xC, 0xD, 0xE), turn


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_random_plays_only_legal_turns_to_the_end(variant: Variant) -> None:
    bot = RandomBot()
    bot.set_option("Seed", 5)
    for _ in range(10):
        position = Position.start(variant)
        while not position.is_over:
            turn = bot.search(position, SearchContext(Go(movetime=100)))
            assert turn in position.legal_turns()
            position = position.apply(turn)


def test_random_covers_the_legal_turns() -> None:
    # Uniform over the 16 gives of the start: all of them appear in a few hundred draws.
    bot = RandomBot()
    bot.set_option("Seed", 9)
    start = Position.start()
    seen = {bot.search(start, SearchContext()) for _ in range(400)}
    assert seen == set(start.legal_turns())


def test_seed_reproduces_and_zero_means_unseeded() -> None:
    def draws(seed: int) -> list[Turn]:
        bot = RandomBot()
        bot.set_option("Seed", seed)
        return [bot.search(Position.start(), SearchContext()) for _ in range(30)]

    assert draws(17) == draws(17)
    assert draws(17) != draws(18)


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v.attributes == ALL_ATTRIBUTES], ids=lambda v: v.describe())
def test_minimax_keeps_greedys_promises(variant: Variant) -> None:
    bot = MinimaxBot()
    bot.set_option("Seed", 2)
    for position in random_positions(variant, 12, seed=11):
        check_greedy_choice(position, bot.search(position, SearchContext(Go(depth=2))))


def find(variant: Variant, wanted: Callable[[Position], bool]) -> Position:
    for seed in range(200):
        for position in random_positions(variant, 20, seed=seed):
            if wanted(position):
                return position
    raise AssertionError("no such position in the sample")


def forces_a_win(position: Position) -> bool:
    """No win now, but a safe turn after which the opponent has no safe turn: a win in 3."""
    return not winning_turns(position) and any(
        not has_safe_turn(position.apply(t)) for t in safe_turns(position) if not position.apply(t).is_over
    )


@pytest.mark.parametrize("claims", ClaimMode)
def test_minimax_finds_a_win_in_three(claims: ClaimMode) -> None:
    position = find(Variant(claims=claims), forces_a_win)
    infos: list[Info] = []
    turn = MinimaxBot().search(position, SearchContext(Go(depth=3), on_info=infos.append))
    assert infos[-1].score == Score("win", 3)
    after = position.apply(turn)
    assert not has_safe_turn(after)
    assert infos[-1].pv[0] == turn


def test_minimax_reports_a_forced_loss() -> None:
    position = find(Variant(), lambda p: not winning_turns(p) and not safe_turns(p))
    infos: list[Info] = []
    turn = MinimaxBot().search(position, SearchContext(Go(depth=3), on_info=infos.append))
    assert turn in position.legal_turns()
    assert infos[-1].score == Score("loss", 2)


def test_minimax_iterates_depths_and_respects_stop() -> None:
    infos: list[Info] = []
    bot = MinimaxBot()
    position = parse_position("..../..../..../012. f")
    turn = bot.search(position, SearchContext(Go(depth=3), on_info=infos.append))
    assert turn in position.legal_turns()
    assert [i.depth for i in infos] == [1, 2, 3]
    assert all(i.pv and i.nodes and i.score is not None for i in infos)
    stopped = SearchContext(Go(infinite=True), on_info=infos.append)
    stopped.stop()  # stopped before it starts: it still answers a legal turn
    assert bot.search(Position.start(), stopped) in Position.start().legal_turns()
    limited: list[Info] = []
    bot.search(Position.start().apply(Turn(give=0)), SearchContext(Go(nodes=50, depth=6), on_info=limited.append))
    assert all((i.nodes or 0) <= 50 for i in limited)


# --- processes and the registry --------------------------------------------------------------------------------


def talk(argv: list[str], lines: list[str]) -> list[str]:
    """Sends ``lines``, reads until the first ``turn`` line (the search is not cut short by quit), then quits."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(f"{line}\n" for line in lines))
        proc.stdin.flush()
        out: list[str] = []
        while not (out and out[-1].startswith("turn ")):
            line = proc.stdout.readline()
            assert line, f"the engine ended its output after {out}"
            out.append(line.rstrip("\n"))
        proc.stdin.write("quit\n")
        proc.stdin.close()
        assert proc.wait(30) == 0
        return out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_builtin_engine_runs_from_the_registry(name: str) -> None:
    position = "startpos turns 3 c47 d4e d35 a41"
    # A depth limit, not a time: the win in one is found however loaded the machine (minimax at movetime 300 did not
    # finish its first depth at load 15 here, and played its fallback turn).
    out = talk(command(name), ["uqi", f"position {position}", "go depth 2"])
    replies = [parse_reply(line) for line in out]
    assert out[0].startswith("id name ")
    assert out[0].split()[2].lower() == name
    assert "uqiok 1" in out
    assert isinstance(replies[-1], TurnReply)
    assert replies[-1].turn in parse_position("startpos").play(parse_turns(position.split()[2:])).legal_turns()
    if name != "random":
        assert replies[-1] == TurnReply(Turn(place=13))  # the win of SPEC §7.2
    assert BUILTIN[name].module == f"quarto_arena.engines.{name}"
    assert BUILTIN[name].description


def test_minimax_engine_sends_info_lines_for_each_depth() -> None:
    out = talk(
        command("minimax"),
        ["uqi", "setoption name Depth value 3", "isready", "position startpos turns 0 a1f b2e", "go depth 3"],
    )
    assert "error" not in " ".join(out)
    infos = [r for r in map(parse_reply, out) if isinstance(r, Info)]
    assert [i.depth for i in infos] == [1, 2, 3]
    assert all(i.score is not None and i.nodes and i.pv for i in infos)
    assert out[-1].startswith("turn ")


def test_unknown_engine_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownEngine, match="unknown built-in engine 'stockfish'; choose from random, greedy"):
        command("stockfish")


def test_position_strings_of_random_positions_round_trip() -> None:
    # The engines receive positions as strings; the strings of the positions used above must survive the trip.
    for variant in VARIANTS:
        for position in random_positions(variant, 5, seed=3):
            if not position.claimable:
                assert parse_position(format_position(position), variant) == position
