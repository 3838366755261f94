"""The analysis board (``quarto-arena board``) through its API, as its page uses it: a real board process on a free
loopback port, real engine processes, real files. The page itself, in Chromium and Firefox, is
tests/test_board_browser.py.

What is held here: who may ask (the token, the origin, the host, the body's size, a loopback address only); a
position string with a typo named in one line; the solver's value of every legal turn, against the solver itself;
a person playing an engine, refereed and saved as in a run, the engine ended with the game; an engine that dies in
the middle of a game, and a person out of time, losing as in a run; the strict claims played by a person; an engine
asked for its turn and its info lines; a PGN file with broken games; a run directory; the first turn where the
result changed, against ``analyse``; links from other pages; and the board's address for the other pages.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="needs the web extra (pip install -e '.[web]')")

from boards import STANDARD, BoardProcess, board_process, descendants, sample
from procs import CLI, STEADY_TC, cli, marked_processes
from quarto_arena.arena.analysis import Analyser
from quarto_arena.arena.board import solving
from quarto_arena.arena.board.discovery import ENV, running_board
from quarto_arena.arena.board.engines import MAX_INFO
from quarto_arena.arena.board.solving import MAX_JOBS, MAX_TABS, WORKERS, SolverPool
from quarto_arena.arena.pgn import read_games
from quarto_arena.arena.records import GameRecord
from quarto_arena.arena.timecontrol import DEFAULT_MARGIN_MS, TimeControl
from quarto_arena.protocol.notation import NotationError, parse_position
from quarto_arena.protocol.rules import Position, Variant
from quarto_arena.protocol.solver import Solver

pytestmark = pytest.mark.extra("web")


def engine(module: str) -> str:
    """One of the broken bots (engines/testing), as an engine word."""
    return f"{module}={sys.executable} -m quarto_arena.engines.testing.{module}"


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoardProcess]:
    """A board with greedy and perfect loaded (shared by the tests that leave it as they found it)."""
    with board_process(tmp_path_factory.mktemp("board"), "--engine", "greedy", "--engine", "perfect") as b:
        yield b


# ----------------------------------------------------------------------------------------------------------------
# Who may ask


def test_only_the_boards_own_page_may_post(board: BoardProcess) -> None:
    body = {"tab": "t", "variant": STANDARD, "start": "startpos", "turns": [], "solve": False}
    assert board.post("position", body)[0] == 200
    assert board.post("position", body, **{"X-Board-Token": "guess"})[0] == 403
    status, text = board.request(
        "POST", "api/position", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    assert status == 403 and "not from this board's page" in text
    # A page of another site (a form, a fetch) sends its own origin, or says it is cross-site.
    assert board.post("position", body, Origin="http://evil.example")[0] == 403
    assert board.post("position", body, Origin=board.url.rstrip("/"))[0] == 200
    assert board.post("position", body, **{"Sec-Fetch-Site": "cross-site"})[0] == 403
    assert board.post("position", body, **{"Sec-Fetch-Site": "same-site"})[0] == 403
    # Another host name (DNS rebinding) is not answered at all, the page included.
    assert board.request("GET", "", headers={"Host": "evil.example:80"})[0] == 421
    assert board.post("position", body, Host="evil.example")[0] == 421
    # The body: JSON, an object, and small.
    headers = {"Content-Type": "application/json", "X-Board-Token": board.token}
    assert board.request("POST", "api/position", b"[1, 2]", headers)[0] == 400
    assert board.request("POST", "api/position", b"{not json", headers)[0] == 400
    assert board.request("POST", "api/position", json.dumps({"x": "y" * 20000}).encode(), headers)[0] == 413
    assert board.request("POST", "api/position", b"{}", {**headers, "Content-Type": "text/plain"})[0] == 415
    assert board.request("GET", "api/position")[0] == 405
    # The page carries the token; every answer the pages' security headers.
    status, page = board.request("GET", "")
    assert status == 200 and board.token in page


def test_the_board_serves_this_machine_only() -> None:
    done = cli("board", "--web", "0.0.0.0:0", timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "quarto-arena: error: --web 0.0.0.0: the board serves this machine only (it starts engines and reads files):"
        " give a loopback address, e.g. 127.0.0.1:8080"
    ]


def test_two_boards_without_web_each_get_a_free_port(tmp_path: Path) -> None:
    # The default was 127.0.0.1:8080: a second board, or anything else on 8080, could not start (issue 36: no fixed
    # well-known ports). Now each asks the system for a free one and prints it.
    with board_process(tmp_path / "a", web=None) as a, board_process(tmp_path / "b", web=None) as b:
        assert a.url != b.url


# ----------------------------------------------------------------------------------------------------------------
# Positions and the solver


@pytest.mark.parametrize(
    "typo",
    ["..../..x./..../.... 7", "..../...../..../.... 7", "..../..../..../....", "1.../..1./..../.... 2", "startpos x"],
)
def test_a_position_with_a_typo_is_named_in_one_line(board: BoardProcess, typo: str) -> None:
    with pytest.raises(NotationError) as expected:
        parse_position(typo)
    status, answer = board.post(
        "position", {"tab": "t", "variant": STANDARD, "start": typo, "turns": [], "solve": True}
    )
    assert (status, answer) == (400, {"error": str(expected.value)})


def test_a_turn_that_does_not_apply_is_named_with_its_number(board: BoardProcess) -> None:
    status, answer = board.post(
        "position", {"tab": "t", "variant": STANDARD, "start": "startpos", "turns": ["7", "a17"]}
    )
    assert status == 400 and answer["error"] == "turn 2 (a17): piece 7 is the piece being placed"
    status, answer = board.post("position", {"tab": "t", "variant": "standard color,mass auto", "start": "startpos"})
    assert (status, answer) == (
        400,
        {"error": "variant: unknown attribute 'mass'; choose from color, shape, height, fill (or all)"},
    )
    status, answer = board.post("position", {"tab": "t", "variant": "standard auto", "start": "startpos"})
    assert (status, answer) == (400, {"error": "variant 'standard auto': expected SHAPES ATTRIBUTES CLAIMS"})


@pytest.mark.parametrize(("empties", "seed"), [(9, 1), (10, 2), (12, 3)])
def test_the_solver_values_every_legal_turn(board: BoardProcess, empties: int, seed: int) -> None:
    position = sample(empties, seed)
    answer = board.solve(str(position), tab=f"every-{empties}")
    shown = answer["position"]
    assert shown["position"] == str(position)
    assert shown["legal"] == [t.token for t in position.legal_turns()]
    solver = answer["solver"]
    assert solver["done"] and solver["valued"] == solver["total"] == len(shown["legal"])
    assert set(solver["values"]) == set(shown["legal"])
    oracle = Solver(position.variant)
    rng = random.Random(seed)
    for turn in rng.sample(position.legal_turns(), 12):
        value = oracle.turn_value(position, turn)
        assert value is not None
        assert solver["values"][turn.token] == [value.verdict.value, value.turns, value.rank], turn


def test_positions_deeper_than_twelve_wait_to_be_asked(board: BoardProcess) -> None:
    position = sample(14, 4)
    answer = board.ok("position", {"tab": "deep", "variant": STANDARD, "start": str(position), "solve": True})
    solver = answer["solver"]
    assert (solver["deep"], solver["valued"], solver["running"], solver["total"]) == (False, 0, False, 182)
    board.ok("position", {"tab": "deep", "variant": STANDARD, "start": "startpos", "solve": False})


def test_strict_claims_and_calls_are_turns_of_their_own(board: BoardProcess) -> None:
    strict = "standard color,shape,height,fill strict"
    # b1 completes row 1 with piece 3 (all short, solid... they share attributes): a call, or a miss.
    start = "..../..../..../0.12 3"
    answer = board.ok("position", {"tab": "s", "variant": strict, "start": start, "turns": [], "solve": False})
    assert "b1!" in answer["position"]["legal"] and "b14" in answer["position"]["legal"]
    missed = board.solve(start, ["b14"], tab="s", variant=strict)
    assert missed["position"]["claimable"] and missed["position"]["legal"][0] == "!"
    assert missed["solver"]["values"]["!"] == ["win", 1, 99]


def test_two_tabs_are_each_served(board: BoardProcess) -> None:
    answers: dict[str, Any] = {}

    def tab(name: str, position: Position) -> None:
        answers[name] = board.solve(str(position), tab=name)

    threads = [threading.Thread(target=tab, args=(f"tab{i}", sample(11, 10 + i))) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert all(answers[f"tab{i}"]["solver"]["done"] for i in range(2))
    assert answers["tab0"]["position"]["position"] != answers["tab1"]["position"]["position"]


def in_a_loop(test: Callable[[SolverPool], Awaitable[None]]) -> None:
    """Runs ``test`` with a solver pool on an event loop of its own; the pool's threads are ended after."""

    async def main() -> None:
        pool = SolverPool()
        try:
            await test(pool)
        finally:
            await asyncio.to_thread(pool.close)

    asyncio.run(main())


async def until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_the_solver_stops_a_position_no_tab_wants_any_more() -> None:
    async def test(pool: SolverPool) -> None:
        # Each turn of a 15-empty position is a 14-empty search: tens of seconds at least, on this machine.
        deep = pool.job(sample(15, 6))
        pool.want("tab", [deep], deep=True)
        await until(lambda: pool.busy == WORKERS, 60)
        small = pool.job(sample(9, 7))
        pool.want("tab", [small])  # the page moved on
        await until(lambda: small.done and pool.busy == 0, 20)
        waiting = sum(len(turns) for turns in deep.pending.values())
        assert not deep.values and waiting == len(deep.tokens)  # its turns wait, whole, to be asked again
        assert small.values  # the workers' solvers were resumed after the stop

    in_a_loop(test)


def test_a_tab_that_stops_asking_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    async def test(pool: SolverPool) -> None:
        pool.want("gone", [pool.job(sample(15, 8))], deep=True)
        await until(lambda: pool.busy > 0, 60)
        monkeypatch.setattr(solving, "WANT_SECONDS", 0.0)
        pool.expire()
        await until(lambda: pool.busy == 0, 20)
        assert pool.kept[1] == 0

    in_a_loop(test)


def test_the_solvers_memory_of_positions_and_tabs_is_bounded() -> None:
    async def test(pool: SolverPool) -> None:
        rng = random.Random(3)
        position = Position.start(Variant())
        for i in range(2 * MAX_JOBS + MAX_TABS):
            if position.placed >= 3:
                position = Position.start(Variant())
            position = position.apply(rng.choice(position.legal_turns()))
            pool.want(f"tab{i}", [pool.job(position)])  # 13 or more empty squares: not solved unless asked
        assert pool.kept == (MAX_JOBS, MAX_TABS)
        assert pool.busy == 0

    in_a_loop(test)


def test_pages_asking_again_and_again_while_the_workers_write(board: BoardProcess) -> None:
    # Three tabs that ask without waiting (seen="") read the values while the workers add to them: each answer is
    # whole, never a server error (a snapshot read beside a worker's write once raised in the page's request).
    failures: list[tuple[int, Any]] = []

    def tab(k: int) -> None:
        for i in range(6):
            start = str(sample(11, 900 + 10 * k + i))
            while True:
                body = {"tab": f"eager{k}", "variant": STANDARD, "start": start, "solve": True, "seen": ""}
                status, answer = board.post("position", body)
                if status != 200:
                    failures.append((status, answer))
                    return
                solver = answer["solver"]
                assert len(solver["values"]) == solver["valued"]
                if solver["done"]:
                    break

    threads = [threading.Thread(target=tab, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not failures
    assert "Error handling request" not in board.log.read_text()


# ----------------------------------------------------------------------------------------------------------------
# Games


def play_as_human(board: BoardProcess, pick: int = 0, timeout: float = 120) -> dict[str, Any]:
    """Plays the person's turns (the ``pick``-th legal turn each time) until the game is over; its last state."""
    deadline = time.monotonic() + timeout
    while True:
        game = board.wait_game(lambda g: not g["playing"] or g["asked"], timeout)
        if not game["playing"]:
            return game
        answer = board.ok(
            "position", {"tab": "h", "variant": game["variant"], "start": game["start"], "turns": game["tokens"]}
        )
        legal = answer["position"]["legal"]
        board.ok("game/turn", {"turn": legal[pick % len(legal)], "ply": len(game["tokens"])})
        board.wait_game(lambda g, n=len(game["tokens"]): len(g["tokens"]) > n or not g["playing"])
        assert time.monotonic() < deadline


#: The longest a turn at STEADY_TC may take on the arena's clock: the movetime and the default margin.
STEADY_LIMIT_MS = (TimeControl.parse(STEADY_TC).movetime_ms or 0) + DEFAULT_MARGIN_MS

#: A game's clock for perfect's turns on the board, which has no --timemargin: where it proves nothing (15 empty
#: squares) perfect thinks for its whole movetime less 50 ms, whatever the movetime, and a stall of 100 ms then loses
#: it the game on time. Two turns deep it answers at once (1 ms), inside a clock the load does not reach.
PERFECT_AT_ONCE = f"{STEADY_TC},depth=2"


def engines_running(board: BoardProcess, name: str) -> list[str]:
    return [p for p in descendants(board.proc.pid) if f"engines.{name}" in p or f"testing.{name}" in p]


def test_a_person_plays_an_engine_refereed_and_saved_as_in_a_run(board: BoardProcess) -> None:
    new = {"variant": STANDARD, "start": "startpos", "turns": [], "tc": STEADY_TC, "mover": "human", "other": "greedy"}
    board.ok("game/new", new)
    status, answer = board.post("game/new", new)
    assert status == 400 and answer["error"] == "a game is in play: abandon it first"
    assert board.post("engine/go", {"engine": "greedy", "variant": STANDARD, "start": "startpos"})[1] == {
        "error": "greedy is playing the game: ask it once the game is over"
    }
    game = play_as_human(board, pick=-1)
    assert game["result"] in ("1-0", "0-1", "1/2-1/2") and game["termination"] == "normal"
    assert game["players"] == ["human", "greedy"] and game["humans"] == [True, False]
    assert game["saved"].startswith("saved in ")
    # The record is a run's: PGN and JSON Lines in the board's directory, the person named as such.
    (pgn,) = [g for g in read_games(board.directory / "games.pgn") if g.tags["GameId"] == str(game["id"])]
    assert (pgn.tags["White"], pgn.tags["Black"], pgn.tags["Result"]) == ("human", "greedy", game["result"])
    assert pgn.tags["WhiteCommand"] == "the person at the board" and pgn.tags["TimeControl"] == STEADY_TC
    records = [
        GameRecord.from_dict(json.loads(line)) for line in (board.directory / "games.jsonl").read_text().splitlines()
    ]
    record = next(r for r in records if r.game_id == game["id"])
    assert [t.token for t in record.turns] == game["tokens"]
    assert all(t.ms <= STEADY_LIMIT_MS for t in record.turns[1::2])  # greedy's turns, on our clock
    # The game's engine is ended with the game; greedy is free again.
    assert not engines_running(board, "greedy")
    assert board.state()["engines"][0] == {"name": "greedy", "state": "idle"}
    assert board.post("game/turn", {"turn": "a1", "ply": 0})[1] == {"error": "no game waits for your turn"}


def test_a_turn_sent_before_the_person_is_asked_waits_for_the_ask(board: BoardProcess) -> None:
    # The page may send the first turn as soon as the game is in play: before the referee's go reached the person.
    new = {"variant": STANDARD, "start": "startpos", "tc": PERFECT_AT_ONCE, "mover": "human", "other": "perfect"}
    board.ok("game/new", new)
    board.ok("game/turn", {"turn": "3", "ply": 0})
    game = board.wait_game(lambda g: len(g["tokens"]) == 2)
    assert game["tokens"][0] == "3"
    board.ok("game/abandon", {})
    board.wait_game(lambda g: not g["playing"])


def test_an_illegal_turn_of_the_person_is_refused_and_the_game_goes_on(board: BoardProcess) -> None:
    board.ok(
        "game/new",
        {
            "variant": STANDARD,
            "start": "startpos",
            "turns": [],
            "tc": PERFECT_AT_ONCE,
            "mover": "human",
            "other": "perfect",
        },
    )
    board.wait_game(lambda g: g["asked"])
    assert board.post("game/turn", {"turn": "a1", "ply": 0}) == (
        400,
        {"error": "a1: no piece in hand: this turn only gives a piece"},
    )
    assert board.post("game/turn", {"turn": "zz", "ply": 0})[0] == 400
    assert board.post("game/turn", {"turn": "7", "ply": 1})[1] == {"error": "no game waits for your turn"}
    assert board.post("game/turn", {"turn": "7"})[1] == {
        "error": "ply: expected the number of turns played before this one"
    }
    board.ok("game/turn", {"turn": "7", "ply": 0})
    game = board.wait_game(lambda g: len(g["tokens"]) == 2)
    assert game["tokens"][0] == "7" and game["playing"]
    board.ok("game/abandon", {})
    game = board.wait_game(lambda g: not g["playing"])
    assert (game["result"], game["termination"], game["detail"]) == ("*", "aborted", "abandoned at the board")
    assert not engines_running(board, "perfect")
    assert board.post("game/abandon", {})[1] == {"error": "no game is in play"}


def test_two_tabs_starting_a_game_at_once_start_one(board: BoardProcess) -> None:
    new = {"variant": STANDARD, "start": "startpos", "tc": PERFECT_AT_ONCE, "mover": "perfect", "other": "human"}
    answers: list[tuple[int, Any]] = []
    threads = [threading.Thread(target=lambda: answers.append(board.post("game/new", new))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(status for status, _ in answers) == [200, 400]
    assert [a for status, a in answers if status == 400] == [{"error": "a game is in play: abandon it first"}]
    board.wait_game(lambda g: g["asked"])
    board.ok("game/abandon", {})
    board.wait_game(lambda g: not g["playing"])
    assert not engines_running(board, "perfect")


def test_an_engine_asked_gives_its_turn_and_its_info_lines(board: BoardProcess) -> None:
    position = sample(10, 5)
    answer = board.ok(
        "engine/go", {"engine": "perfect", "variant": STANDARD, "start": str(position), "limit": STEADY_TC}
    )
    assert answer["error"] is None and answer["engine"] == "perfect"
    assert answer["turn"] in [t.token for t in position.legal_turns()]
    assert answer["info"] and all(line.startswith("info ") for line in answer["info"])
    assert answer["ms"] <= STEADY_LIMIT_MS  # perfect proves this position in a few ms
    assert board.post("engine/go", {"engine": "nobody", "variant": STANDARD, "start": "startpos"})[1] == {
        "error": "no engine is named 'nobody' (loaded: greedy, perfect)"
    }
    status, answer = board.post(
        "engine/go", {"engine": "greedy", "variant": STANDARD, "start": "startpos", "limit": "st=x"}
    )
    assert status == 400 and answer["error"].startswith("time control 'st=x': st 'x' is not a number of seconds")


def test_an_engine_that_floods_info_lines_is_kept_to_the_last_ones(tmp_path: Path) -> None:
    with board_process(tmp_path, "--engine", f"{engine('flood_lines')} info 1") as board:
        answer = board.ok(
            "engine/go", {"engine": "flood_lines", "variant": STANDARD, "start": "startpos", "limit": "st=5"}
        )
        assert answer["error"] is None and len(answer["turn"]) == 1
        assert len(answer["info"]) == MAX_INFO and answer["info"][-1].startswith("info depth 3")


def test_an_engine_that_dies_in_the_middle_of_a_game_loses_as_in_a_run(tmp_path: Path) -> None:
    with board_process(tmp_path, "--engine", engine("exit_midgame")) as board:
        board.ok(
            "game/new",
            {
                "variant": STANDARD,
                "start": "startpos",
                "turns": [],
                "tc": "st=1",
                "mover": "exit_midgame",
                "other": "human",
            },
        )
        game = play_as_human(board)
        assert (game["result"], game["termination"]) == ("0-1", "disconnect")
        assert game["detail"] == "exit_midgame: disconnected during a search (exit code 0)"
        assert board.state()["engines"] == [{"name": "exit_midgame", "state": "idle"}]
        # It can be asked again: a new session.
        answer = board.ok(
            "engine/go", {"engine": "exit_midgame", "variant": STANDARD, "start": "startpos", "limit": "st=1"}
        )
        assert answer["error"] is None and len(answer["turn"]) == 1
        assert marked_processes(board.proc.pid)  # its session for the page's questions, until the board stops
        assert board.stop() == 0
        assert not marked_processes(board.proc.pid)


def test_a_person_on_the_clock_loses_on_time(board: BoardProcess) -> None:
    board.ok(
        "game/new",
        {
            "variant": STANDARD,
            "start": "startpos",
            "turns": [],
            "tc": "st=0.3",
            "human_clock": True,
            "mover": "greedy",
            "other": "human",
        },
    )
    game = board.wait_game(lambda g: not g["playing"], timeout=60)
    assert (game["result"], game["termination"]) == ("1-0", "time forfeit")
    assert game["detail"].startswith("human: no turn in ") and len(game["tokens"]) == 1


#: A bot that places a winning piece without calling QUARTO! (and gives a piece): under strict claims the other side
#: may then claim the alignment it missed.
MISSER = textwrap.dedent(
    """
    from quarto_arena.protocol.bot import run
    from quarto_arena.protocol.rules import turn_of

    def choose(position, ctx):
        wins = position.winning_squares() if position.hand is not None else []
        if wins and position.pieces_available():
            return turn_of(place=wins[0], give=position.pieces_available()[0])
        return next(t for t in position.legal_turns() if not t.claim and not t.call)

    run(choose, [])
    """
)


def test_a_person_claims_the_alignment_an_engine_missed(tmp_path: Path) -> None:
    bot = tmp_path / "misser.py"
    bot.write_text(MISSER)
    with board_process(tmp_path, "--engine", f"misser={sys.executable} {bot}") as board:
        strict = "standard color,shape,height,fill strict"
        board.ok(
            "game/new",
            {
                "variant": strict,
                "start": "..../..../..../0.12 3",
                "turns": [],
                "tc": "st=1",
                "mover": "misser",
                "other": "human",
            },
        )
        game = board.wait_game(lambda g: g["asked"] or not g["playing"])
        assert game["tokens"] == ["b14"]  # the miss
        answer = board.ok("position", {"tab": "c", "variant": strict, "start": game["start"], "turns": game["tokens"]})
        assert answer["position"]["claimable"] and "!" in answer["position"]["legal"]
        board.ok("game/turn", {"turn": "!", "ply": 1})
        game = board.wait_game(lambda g: not g["playing"])
        assert (game["result"], game["termination"], game["detail"]) == (
            "0-1",
            "normal",
            "human claims the missed alignment",
        )
        assert game["lines"]  # the claimed row is lit


# ----------------------------------------------------------------------------------------------------------------
# Games from files and links


def write_pgn(path: Path, games: list[tuple[dict[str, str], str]]) -> None:
    parts = []
    for tags, movetext in games:
        parts.append("".join(f'[{k} "{v}"]\n' for k, v in tags.items()) + "\n" + movetext + "\n")
    path.write_text("\n".join(parts))


def test_a_pgn_with_broken_games_opens_the_others(tmp_path: Path) -> None:
    path = tmp_path / "mixed.pgn"
    good = {"White": "a", "Black": "b", "Result": "0-1"}
    write_pgn(
        path,
        [
            (good, "1. 7 a1e {120ms} 2. b2f c3a 0-1"),
            ({"White": "x", "Black": "y"}, "1. 7 *"),  # no Result tag: the reader passes over it
            ({**good, "White": "c"}, "1. 7 a1e 2. a1f 0-1"),  # a1 is occupied at turn 3
            ({**good, "White": "d", "Variant": "standard color,mass auto"}, "1. 7 0-1"),
            ({**good, "White": "e"}, "1. 8 b3c 0-1"),
        ],
    )
    with board_process(tmp_path / "b", str(path)) as board:
        listed = board.games()
        assert listed["source"] == str(path)
        assert [g["label"] for g in listed["games"]] == [
            "mixed.pgn:1: a - b 0-1",
            "mixed.pgn:12: c - b 0-1",
            "mixed.pgn:18: d - b 0-1 (broken)",
            "mixed.pgn:25: e - b 0-1",
        ]
        assert listed["notes"] == [f"{path}:7: game has no Result tag (that game is skipped)"]
        first = board.ok("games/open", {"index": 0})
        assert first["tokens"] == ["7", "a1e", "b2f", "c3a"] and first["error"] is None
        assert first["plies"][1] == [0, 14, 0, 120, None]
        broken = board.ok("games/open", {"index": 1})
        assert broken["tokens"] == ["7", "a1e"] and broken["error"] == "turn 3 'a1f' cannot be replayed: a1 is occupied"
        variant = board.ok("games/open", {"index": 2})
        assert (
            variant["error"] == "Variant tag: unknown attribute 'mass'; choose from color, shape, height, fill (or all)"
        )
        assert board.ok("games/open", {"index": 3})["tokens"] == ["8", "b3c"]
        assert board.post("games/open", {"index": 4})[1] == {"error": "no game 4 in the list (4 games)"}
        assert board.post("games/load", {"path": str(tmp_path / "nothing.pgn")})[1] == {
            "error": f"{tmp_path / 'nothing.pgn'}: no such file or directory"
        }
        (tmp_path / "binary.pgn").write_bytes(b"\x00\x01")
        status, answer = board.post("games/load", {"path": str(tmp_path / "binary.pgn")})
        assert status == 400 and "NUL byte" in answer["error"]
        assert board.games()["source"] == str(path)  # what was open stays open


@pytest.mark.slow
def test_a_run_directory_opens_and_the_first_change_of_result_is_found_as_analyse_finds_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = cli("play", "random", "greedy", "--games", "6", "--tc", "st=0.2", "-q", "--out", str(run), timeout=300)
    assert done.returncode in (0, 1), done.stderr
    analysed = list(Analyser().games(read_games(run / "games.pgn"), Variant()))
    with board_process(tmp_path / "b", str(run)) as board:
        listed = board.games()
        assert len(listed["games"]) == 6 and listed["games"][0]["label"].startswith("game ")
        for index, analysis in enumerate(analysed):
            view = board.ok("games/open", {"index": index})
            assert view["tokens"] == list(analysis.turns)
            marked = board.solve(view["start"], tab="g", game={"start": view["start"], "turns": view["tokens"]})["game"]
            mistakes = [t.ply for t in analysis.analysed if t.mistake is not None]
            assert marked["first"] == (mistakes[0] if mistakes else None)
            assert [i for i, m in enumerate(marked["marks"]) if m and m["mistake"]] == mistakes
            for t in analysis.analysed:
                mark = marked["marks"][t.ply]
                assert t.before is not None and t.after is not None
                assert mark["before"][:2] == [t.before.verdict.value, t.before.turns]
                assert mark["after"][:2] == [t.after.verdict.value, t.after.turns]
                assert mark["mistake"] == t.mistake
        report = next(line for line in board.log.read_text().splitlines() if line.startswith("report with links"))
        assert report.endswith(f"report.html?board={board.url}")


def test_a_link_from_another_page_opens_its_game(board: BoardProcess) -> None:
    link = {
        "variant": STANDARD,
        "start": "startpos",
        "turns": "7 a1e b2f",
        "white": "<b>w</b>",
        "black": "b",
        "result": "*",
    }
    view = board.ok("games/link", link)
    assert view["tokens"] == ["7", "a1e", "b2f"] and view["white"] == "<b>w</b>" and view["source"] == "a link"
    assert board.post("games/link", {**link, "variant": "standard"})[1] == {
        "error": "the link's variant 'standard': expected SHAPES ATTRIBUTES CLAIMS"
    }
    assert board.post("games/link", {**link, "result": "2-0"})[0] == 400
    assert board.post("games/link", {**link, "start": "..../..../..../.... x"})[1] == {
        "error": "the link's start position: 'x' is not a piece in hand (one hex digit, or '-')"
    }


# ----------------------------------------------------------------------------------------------------------------
# The board's address for the other pages, and its end


def test_the_other_pages_find_the_running_board_and_lose_it_when_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    assert cli("play", "random", "greedy", "--games", "2", "--tc", "st=0.1", "-q", "--out", str(run)).returncode in (
        0,
        1,
    )
    with board_process(tmp_path / "b") as board:
        monkeypatch.setenv(ENV, str(board.board_file))
        assert running_board() == board.url
        # A live page served while the board runs carries its address for its games' links.
        serve = subprocess.Popen([*CLI, "serve", str(run), "--web", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        try:
            assert serve.stderr is not None
            line = serve.stderr.readline()
            url = line.split(" at ")[1].split(" ")[0]
            with urllib.request.urlopen(url, timeout=60) as r:
                page = r.read().decode()
            assert f'<meta name="quarto-board" content="{board.url}">' in page
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=60)
        assert board.stop() == 0
    assert not board.board_file.exists() and running_board() is None


def test_ctrl_c_saves_the_game_in_play_and_ends_every_engine(tmp_path: Path) -> None:
    with board_process(tmp_path, "--engine", "greedy", "--engine", "perfect") as board:
        board.ok("engine/go", {"engine": "perfect", "variant": STANDARD, "start": "startpos", "limit": PERFECT_AT_ONCE})
        board.ok(
            "game/new", {"variant": STANDARD, "start": "startpos", "tc": "st=1", "mover": "human", "other": "greedy"}
        )
        board.wait_game(lambda g: g["asked"])
        board.ok("game/turn", {"turn": "5", "ply": 0})
        board.wait_game(lambda g: len(g["tokens"]) == 2)
        assert len(marked_processes(board.proc.pid)) == 2  # greedy in the game, perfect for the page's questions
        assert board.stop(signal.SIGINT) == 0
        assert not marked_processes(board.proc.pid)
        (line,) = (board.directory / "games.jsonl").read_text().splitlines()
        record = GameRecord.from_dict(json.loads(line))
        assert (record.result.value, record.termination.value, record.detail) == (
            "*",
            "aborted",
            "abandoned at the board",
        )
        assert [t.token for t in record.turns][:1] == ["5"] and len(record.turns) == 2
        assert "Traceback" not in board.log.read_text()
