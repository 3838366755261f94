"""Every deliberately broken bot against a sound one: the fault ends the game with the expected termination, the
sound engine wins, the match carries on (restarting the broken bot), and afterwards no process is left."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from procs import STEADY_TC, processes_in_groups
from quarto_arena.arena.engine import Deadlines, EngineConfig, EngineId, EngineSession
from quarto_arena.arena.records import GameRecord, Termination
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.run import play_match
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.transport import Transport
from quarto_arena.engines.registry import command
from quarto_arena.engines.testing import BROKEN, EXPECTED_TERMINATION
from quarto_arena.engines.testing import command as broken_command

# Short deadlines keep the stalling bots cheap; the start-up one still leaves a Python bot time to import.
DEADLINES = Deadlines(startup=3.0, ready=1.0, newgame=1.0, quit=0.5, safety=5.0)
# Every bot here answers at once (the hanging one never): each game ends by its bot's fault, never by the load's.
TC = TimeControl.parse(STEADY_TC)


@pytest.fixture
def pgids(monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """Every process group started by an engine session during the test (from the pids each start records)."""
    seen: set[int] = set()
    original_start = EngineSession.start

    async def tracking_start(self: EngineSession, transport: Transport | None = None) -> EngineId:
        try:
            return await original_start(self, transport)
        finally:
            seen.update(self.pids)

    monkeypatch.setattr(EngineSession, "start", tracking_start)
    return seen


def test_the_table_covers_every_broken_bot() -> None:
    assert set(EXPECTED_TERMINATION) == set(BROKEN)
    assert {Termination(v) for v in EXPECTED_TERMINATION.values()} <= set(Termination)


@pytest.mark.slow
@pytest.mark.parametrize("bot", sorted(BROKEN))
def test_broken_bot(bot: str, tmp_path: Path, pgids: set[int]) -> None:
    expected = Termination(EXPECTED_TERMINATION[bot])
    argv = broken_command(bot)
    if bot == "slow_handshake":
        argv.append("30")  # seconds: far beyond the start-up deadline
    broken = EngineConfig("broken", command=tuple(argv))
    sound = EngineConfig("sound", command=tuple(command("greedy")))
    records: list[GameRecord] = []

    async def main() -> None:
        # require_start=False: a bot that fails its handshake loses the game instead of stopping the match.
        out = await play_match(
            broken,
            sound,
            2,
            GameSpec(time_control=TC),
            deadlines=DEADLINES,
            log_dir=tmp_path,
            require_start=False,
            on_game=records.append,
        )
        assert out == records

    asyncio.run(main())

    # Both games were played: the broken bot was restarted for the second one.
    assert len(records) == 2, records
    for record in records:
        assert record.termination is expected, f"{record.termination.value}: {record.detail}"
        if expected is Termination.NORMAL:
            continue
        assert record.loser == "broken", record.detail
        assert record.detail.startswith("broken"), record.detail
        assert "broken" in record.exit_info
    # No process of any group the match started is left, zombies included.
    assert pgids
    assert processes_in_groups(pgids) == []


def test_leaves_child_is_noticed_at_its_exit(pgids: set[int]) -> None:
    """The child holds the pipe open after the bot dies: the exit, not end of file, must be noticed."""
    broken = EngineConfig("broken", command=tuple(broken_command("leaves_child")))
    sound = EngineConfig("sound", command=tuple(command("greedy")))
    records = asyncio.run(
        play_match(broken, sound, 1, GameSpec(time_control=TimeControl.parse("st=5")), deadlines=DEADLINES)
    )
    record = records[0]
    assert record.termination is Termination.DISCONNECT
    assert "exit code 3" in record.detail  # noticed at the exit, well before the 5 s search deadline
    assert record.turns == () or all(t.ms < 5000 for t in record.turns)
    assert pgids and processes_in_groups(pgids) == []


@pytest.mark.parametrize("first_broken", [False, True])
def test_both_engines_get_ready_at_once_and_the_one_that_stalls_loses(first_broken: bool, pgids: set[int]) -> None:
    # newgame+isready goes to both engines before either answer is awaited (engine.new_games): the stalled side
    # loses whichever it is; when both stall, the first loses the game and the second is killed too (restarted
    # before its next game), and no process is left either way.
    stalls = EngineConfig("broken", command=tuple(broken_command("no_readyok")))
    if first_broken:  # both stall: the first loses
        first, second = stalls, EngineConfig("other", command=stalls.command)
    else:
        first, second = EngineConfig("other", command=tuple(command("greedy"))), stalls
    spec = GameSpec(time_control=TC)
    records = asyncio.run(play_match(first, second, 1, spec, deadlines=DEADLINES, require_start=False))
    record = records[0]
    assert record.termination is Termination.STALL, record.detail
    assert record.loser == "broken", record.detail
    assert "newgame then isready" in record.detail
    assert pgids and processes_in_groups(pgids) == []
