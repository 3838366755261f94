"""--adjudicate: the solver ends a game with the result of perfect play, recorded as termination `adjudicated`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from procs import STEADY_TC
from quarto_arena.arena.engine import Deadlines, EngineConfig
from quarto_arena.arena.records import Result, Termination
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.run import RunKind, RunSpec, play_match
from quarto_arena.arena.schedule import Opening
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.engines.registry import command
from quarto_arena.protocol.notation import format_position, parse_position, parse_turns
from quarto_arena.protocol.rules import Position, Variant
from quarto_arena.protocol.solver import Solver, Verdict

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]
FAST = Deadlines(startup=10, ready=5, newgame=5, quit=1, safety=10)
QUICK = TimeControl.parse("st=0.2")
# From the solved vectors: the player to move wins (8 empty squares), loses (7), draws (12).
WON = "..d4/.1../a9../f.76 0"
LOST = "..../9c42/b6.1/f3.. 0"
DRAWN = "2.../..../.4../3c.. 9"


def engines() -> tuple[EngineConfig, EngineConfig]:
    return (
        EngineConfig("greedy", command=tuple(command("greedy")), options={"Seed": "1"}),
        EngineConfig("random", command=tuple(command("random")), options={"Seed": "2"}),
    )


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("start", "result"),
    [(WON, Result.FIRST_WINS), (LOST, Result.SECOND_WINS), (DRAWN, Result.DRAW)],
    ids=["won", "lost", "drawn"],
)
def test_a_game_starting_below_the_threshold_is_adjudicated_at_once(start: str, result: Result) -> None:
    """Both colours: whoever moves first from the start position gets the solver's verdict for that position."""
    records = asyncio.run(
        play_match(
            *engines(),
            2,
            GameSpec(time_control=QUICK, adjudicate=12),
            openings=[Opening(start=format_position(parse_position(start)))],
            deadlines=FAST,
        )
    )
    value = Solver(Variant()).value(parse_position(start)).value
    assert value is not None
    for r in records:
        assert r.termination is Termination.ADJUDICATED
        assert r.result is result
        assert r.turns == ()
        empty = 16 - parse_position(start).placed
        if result is Result.DRAW:
            assert r.detail == f"adjudicated at {empty} empty: a draw"
        else:
            winner = r.first if result is Result.FIRST_WINS else r.second
            turns = f"{value.turns} turn{'s' if value.turns != 1 else ''}"  # "in 1 turn"
            assert r.detail == f"adjudicated at {empty} empty: {winner} wins with perfect play in {turns}"


def test_games_from_the_start_are_adjudicated_at_the_threshold(tmp_path: Path) -> None:
    out = run(
        "tournament",
        "greedy",
        "g2=greedy",
        "--games",
        "4",
        "--tc",
        STEADY_TC,
        "--adjudicate",
        "11",
        "--out",
        str(tmp_path / "run"),
        "-q",
    )
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "games.jsonl").read_text().splitlines()]
    assert len(records) == 4
    solver = Solver(Variant())
    adjudicated = 0
    for r in records:
        position = Position.start()
        for token, _, _ in r["turns"]:
            position = position.apply(parse_turns([token])[0])
        if r["termination"] == "normal":
            assert position.is_over and 16 - position.placed >= 11  # over before the threshold
            continue
        adjudicated += 1
        assert r["termination"] == "adjudicated"
        assert 16 - position.placed == 11  # the first position at the threshold, not later
        verdict = solver.value(position).value.verdict  # type: ignore[union-attr]
        mover_first = len(r["turns"]) % 2 == 0
        expected = {
            Verdict.DRAW: "1/2-1/2",
            Verdict.WIN: "1-0" if mover_first else "0-1",
            Verdict.LOSS: "0-1" if mover_first else "1-0",
        }[verdict]
        assert r["result"] == expected
    assert adjudicated >= 1
    pgn = (tmp_path / "run" / "games.pgn").read_text()
    assert pgn.count('[Termination "adjudicated"]') == adjudicated


def test_the_journal_keeps_the_setting(tmp_path: Path) -> None:
    assert not Termination.ADJUDICATED.is_failure  # scored as played, never a forfeit
    spec = RunSpec(RunKind.MATCH, engines(), game=GameSettings(adjudicate=9))
    assert RunSpec.from_dict(spec.to_dict()).game.adjudicate == 9
    older = spec.to_dict()
    del older["adjudicate"]  # a journal written before the option existed
    assert RunSpec.from_dict(older).game.adjudicate is None
    out = run("play", "greedy", "random", "--games", "2", "--tc", "st=0.05", "--out", str(tmp_path / "r"), "-q")
    assert out.returncode == 0, out.stderr
    again = run("play", "--resume", str(tmp_path / "r"), "--adjudicate", "5")
    assert again.returncode == 2 and "--adjudicate" in again.stderr


@pytest.mark.parametrize("value", ["0", "13", "x"])
def test_bad_values_are_usage_errors(value: str) -> None:
    for cmd in ("tournament", "play", "sprt"):
        extra = ("--elo0", "0", "--elo1", "5") if cmd == "sprt" else ()
        out = run(cmd, "greedy", "random", "--adjudicate", value, *extra)
        assert out.returncode == 2, (cmd, out.stderr)
        assert "--adjudicate" in out.stderr and "Traceback" not in out.stderr


def test_a_spec_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="1 to 12"):
        GameSpec(adjudicate=13)
