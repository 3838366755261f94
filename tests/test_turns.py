"""The compiled turn path (arena/_turns.c, armed by arena/turns.py and the referee) against the Python path.

Real engine processes play the same seeded games twice, once with the compiled path and once with
``QUARTO_ARENA_TURNS=python``; the run directories (journal, JSON Lines, PGN) must hold the same games
byte for byte but for the times. Each comparison also checks that the compiled run took turns in C (and the Python
run none), so a path that quietly stayed off would fail it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from quarto_arena.arena import turns
from quarto_arena.arena.engine import Deadlines, EngineConfig
from quarto_arena.arena.journal import read_journal
from quarto_arena.arena.records import GameRecord, Result, Termination
from quarto_arena.arena.run import Run, RunKind, RunSpec
from quarto_arena.arena.schedule import Format, Opening, OpeningBook
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.engines.registry import command
from quarto_arena.engines.testing import command as broken_command
from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import Variant

pytestmark = pytest.mark.skipif(turns._turns is None, reason="the compiled turn path is not built here")

HERE = Path(__file__).resolve().parent
ENGINES_DIR = HERE.parent / "engines"
DEADLINES = Deadlines(startup=10, ready=5, newgame=5, quit=1, safety=10)
REAL_PATH = turns.path


def varied(name: str, seed: int, shapes: str = "", end: str = "") -> EngineConfig:
    """tests/varied_bot.py: legal, seeded by its position, answering in every shape of output (or in ``shapes``)."""
    argv = [sys.executable, str(HERE / "varied_bot.py"), str(seed), shapes] + ([end] if end else [])
    return EngineConfig(name, tuple(argv))


def builtin(name: str, engine: str, seed: int) -> EngineConfig:
    return EngineConfig(name, tuple(command(engine)), options={"Seed": str(seed)})


@pytest.fixture(scope="module")
def c_bot(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    """engines/c/quarto_bot.c, the benchmarks' instant bot, compiled."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("cbot") / "quarto_bot"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(ENGINES_DIR / "c" / "quarto_bot.c")], check=True)
    return (str(exe),)


@dataclasses.dataclass
class Played:
    records: list[GameRecord]
    files: dict[str, Any]
    fast_turns: int
    handed_over: int
    paths: int


def play(
    monkeypatch: pytest.MonkeyPatch, tmp: Path, mode: str, engines: tuple[EngineConfig, ...], **spec: Any
) -> Played:
    """One run in a run directory with the compiled path (``mode`` "c") or the Python path alone ("python")."""
    if mode == "python":
        monkeypatch.setenv(turns.ENV, "python")
    else:
        monkeypatch.delenv(turns.ENV, raising=False)
    made: list[Any] = []

    def spy(*args: Any) -> Any:
        path = REAL_PATH(*args)
        made.append(path)
        return path

    monkeypatch.setattr(turns, "path", spy)
    directory = tmp / mode
    run_spec = RunSpec(RunKind.TOURNAMENT, engines, **spec)
    with Run.create(run_spec, directory, deadlines=DEADLINES) as run:
        outcome = asyncio.run(run.run())
    files = {
        # In game order: at concurrency 2 the games end in an order of the engines' timing.
        "journal": [_plain_record(r) for _, r in sorted(read_journal(directory / "journal.qaj").records.items())],
        "jsonl": sorted(
            (_plain_dict(json.loads(line)) for line in (directory / "games.jsonl").read_text().splitlines()),
            key=lambda d: d["game_id"],
        ),
        "pgn": _plain_pgn((directory / "games.pgn").read_text()),
    }
    return Played(
        list(outcome.records),
        files,
        sum(p.fast_turns for p in made),
        sum(p.handed_over for p in made),
        len(made),
    )


_MS = re.compile(r"\d+ ?ms\b")
_GONE = re.compile(r": (not running|disconnected during a search \(exit code \d+\))")
"""An engine that exited: whether the arena had reaped it before the next search's write ("not running") or saw the
write fail ("disconnected during a search") depends on the timing of its exit, on either path."""


def _plain_detail(detail: str) -> str:
    return _GONE.sub(": gone", _MS.sub("N ms", detail))


def _plain_record(record: GameRecord) -> GameRecord:
    turns_ = tuple(dataclasses.replace(t, ms=0) for t in record.turns)
    return dataclasses.replace(record, turns=turns_, started="", detail=_plain_detail(record.detail))


def _plain_dict(d: dict[str, Any]) -> dict[str, Any]:
    d = dict(d, started="", detail=_plain_detail(d["detail"]))
    d["turns"] = [[t[0], 0, t[2]] for t in d["turns"]]
    return d


def _plain_pgn(text: str) -> list[str]:
    text = re.sub(r'\[Date "[^"]*"\]', "", text)
    games = re.sub(r"(\d+)ms", "Nms", text).split("[Event ")
    return sorted(_plain_detail(" ".join(game.split())) for game in games)


def compare(monkeypatch: pytest.MonkeyPatch, tmp: Path, engines: tuple[EngineConfig, ...], **spec: Any) -> Played:
    """Plays the run both ways; their files must agree; returns the compiled run."""
    fast = play(monkeypatch, tmp, "c", engines, **spec)
    slow = play(monkeypatch, tmp, "python", engines, **spec)
    assert slow.paths == 0 and slow.fast_turns == 0
    assert fast.fast_turns > 0, "the compiled path took no turn"
    for key in fast.files:
        assert fast.files[key] == slow.files[key], key
    return fast


def variant(text: str) -> Variant:
    return parse_variant(*text.split())


@pytest.fixture
def seeded_bots(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The broken bots choose their turns from a seed (they are MinimalBots)."""
    monkeypatch.setenv("QUARTO_ARENA_BOT_SEED", "7")
    yield


def test_instant_c_bots_standard(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, c_bot: tuple[str, ...]) -> None:
    """The benchmarks' case: instant C bots, random openings, fixed time per turn; nearly every turn compiled."""
    engines = tuple(EngineConfig(f"c{i}", c_bot, options={"Seed": str(i)}) for i in (1, 2, 3))
    fast = compare(
        monkeypatch,
        tmp_path,
        engines,
        games=4,
        time_control=TimeControl.parse("st=0.5"),
        book=OpeningBook(random_turns=2, seed=5),
    )
    played = sum(len(r.turns) - len(r.opening) for r in fast.records)
    assert all(r.termination in (Termination.NORMAL,) for r in fast.records)
    # Every game's last turn (a win or the full board) and nothing else goes the Python way here.
    assert fast.fast_turns >= played - 2 * len(fast.records)


@pytest.mark.parametrize(
    ("rules", "tc"),
    [
        ("advanced all auto", "st=0.5"),
        ("standard color,shape auto", "20+0.05"),
        ("standard all strict", "10"),
        ("advanced height strict", "st=0.5"),
    ],
)
def test_varied_output_variants_and_clocks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rules: str, tc: str
) -> None:
    """Answers in every shape (info with scores, error lines, split chunks, CRLF, upper case) under each variant and
    fixed or incremental clocks: the compiled path hands what it does not own to Python mid-game and the records
    stay the same."""
    engines = (varied("v1", 1), varied("v2", 2), builtin("minimax", "minimax", 3))
    fast = compare(
        monkeypatch,
        tmp_path,
        engines,
        games=2,
        time_control=TimeControl.parse(tc),
        variant=variant(rules),
        book=OpeningBook(random_turns=1, seed=2, variant=variant(rules)),
    )
    assert fast.handed_over > 0
    assert all(r.termination is Termination.NORMAL for r in fast.records), [r.detail for r in fast.records]


def test_start_position_openings_and_concurrency(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A start position with opening turns, two games at once, a game clock."""
    book = OpeningBook((Opening("..../.1../..../.... -", ("3", "c47")), Opening("startpos", ("a", "b2c"))))
    engines = (varied("v1", 4), varied("v2", 5), varied("v3", 6, "plain,info_with,crlf"))
    compare(monkeypatch, tmp_path, engines, games=2, concurrency=2, time_control=TimeControl.parse("30+0.1"), book=book)


def test_broken_bots(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seeded_bots: None) -> None:
    """Illegal and malformed turns, non-UTF-8, crashes and a mid-game exit, against a bot whose usual answers take
    the compiled path: the same verdicts and records."""
    broken = (
        "illegal_turn",
        "malformed_reply",
        "invalid_utf8",
        "exit_midgame",
        "false_claim",
        "escape_strings",
        "flood",
        "crash_on_go",
    )
    engines = (varied("v", 8, "plain"), *(EngineConfig(name, tuple(broken_command(name))) for name in broken))
    fast = compare(
        monkeypatch, tmp_path, engines, games=2, format=Format.GAUNTLET, time_control=TimeControl.parse("st=2")
    )
    kinds = {r.termination for r in fast.records}
    assert {Termination.ILLEGAL_TURN, Termination.MALFORMED_REPLY, Termination.DISCONNECT} <= kinds


def test_late_answers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seeded_bots: None) -> None:
    """A bot that answers each search 1 ms before its time is up, on the compiled path: never a time forfeit, the
    same games. The arena's margin is 500 ms here, not 50: a Python bot that a loaded machine (CI's) holds up more
    than 50 ms loses on time on either path, and the two runs would differ by the load, not by the path."""
    engines = (EngineConfig("late", tuple(broken_command("answers_late"))), varied("v", 9, "plain"))
    fast = compare(monkeypatch, tmp_path, engines, games=2, time_control=TimeControl.parse("st=0.1"), margin_ms=500)
    assert all(r.termination is Termination.NORMAL for r in fast.records), [r.detail for r in fast.records]


def test_hand_over_mid_game(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One game where the same search path goes C, then Python (an info line, an error line, a split chunk), then
    C again: it ends as the rules say, every turn recorded canonically."""
    engines = (varied("a", 11, "plain,info_before,error_first,split"), varied("b", 12, "plain"))
    fast = compare(monkeypatch, tmp_path, engines, games=2, time_control=TimeControl.parse("st=1"))
    assert fast.fast_turns > 0 and fast.handed_over > 0
    for record in fast.records:
        assert record.termination is Termination.NORMAL, record.detail
        assert record.result is not Result.UNFINISHED


def test_time_charged_from_write_to_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A bot that sleeps 30 ms before each plain answer is charged that on the compiled path: its time runs from the
    write's return to the read. The arena gives the engine the benefit of its own delays: when it is descheduled
    between the write and its clock's reading (a loaded machine), the engine has already slept a while, so a turn
    may be charged a few ms less; the median is the sleep, and no turn is charged nothing."""
    engines = (varied("sleeper", 13, "sleep"), varied("quick", 14, "plain"))
    fast = play(monkeypatch, tmp_path, "c", engines, games=2, time_control=TimeControl.parse("st=1"))
    assert fast.fast_turns > 0
    charged = []
    for record in fast.records:
        sleeper = 0 if record.first == "sleeper" else 1
        charged += [turn.ms for i, turn in enumerate(record.turns) if i % 2 == sleeper]
    assert statistics.median(charged) >= 30 and min(charged) >= 15, charged


def test_deadline_of_a_compiled_search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A bot that stops answering after its third turn, its searches sent by the compiled path, loses on time."""
    engines = (varied("hangs", 15, "plain", "hang:3"), varied("plays", 16, "plain"))
    fast = compare(monkeypatch, tmp_path, engines, games=2, time_control=TimeControl.parse("st=0.3"))
    assert fast.fast_turns > 0
    for record in fast.records:
        loser = record.first if record.result is Result.SECOND_WINS else record.second
        assert (record.termination, loser) == (Termination.TIME_FORFEIT, "hangs"), record.detail


def test_exit_after_an_answer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A bot that exits just after its answer: the compiled path's next write to it finds it gone (a disconnect,
    as on the Python path)."""
    engines = (varied("exits", 17, "plain", "exit:3"), varied("plays", 18, "plain"))
    fast = compare(monkeypatch, tmp_path, engines, games=2, time_control=TimeControl.parse("st=1"))
    for record in fast.records:
        assert record.termination is Termination.DISCONNECT, record.detail


def test_adjudicated_games(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Games adjudicated at 6 empty squares: the compiled path hands the turn that reaches them to Python."""
    engines = (varied("v1", 21, "plain"), varied("v2", 22, "plain"))
    fast = compare(monkeypatch, tmp_path, engines, games=4, adjudicate=6, time_control=TimeControl.parse("st=1"))
    assert all(r.termination is Termination.ADJUDICATED for r in fast.records), [r.detail for r in fast.records]
