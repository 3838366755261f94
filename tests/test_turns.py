"""The compiled turn path (arena/_turns.c, armed by arena/turns.py and the referee) against the Python path.

Real engine processes play the same seeded games twice, once with the compiled path and once with
``QUARTO_ARENA_TURNS=python``; the run directories (journal, JSON Lines, PGN) must hold the same games
byte for byte but for the times. Each comparison also checks that the compiled run took turns in C (and the Python
run none), so a path that quietly stayed off would fail it. The times are compared too, on a controlled clock
(tests/clocks.py), with every ``go`` the engines were sent held to the clocks the records account for.

The contract (arena/turns.py): the C module loads only with the slots and methods declared there; each class that
owns such state inherits its slots, sets them all, has every method C calls; and a Python method that C mirrors
writes no state C would not.
"""

from __future__ import annotations

import ast
import asyncio
import collections
import dataclasses
import inspect
import json
import re
import shutil
import statistics
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import VirtualClock
from procs import STEADY_TC
from quarto_arena.arena import turns
from quarto_arena.arena.engine import Deadlines, EngineConfig, EngineSession, Search
from quarto_arena.arena.journal import read_journal
from quarto_arena.arena.records import GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.referee import GameSpec, _Game
from quarto_arena.arena.run import Run, RunKind, RunSpec
from quarto_arena.arena.schedule import Format, Opening, OpeningBook
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.timecontrol import Clock, SearchClock, TimeControl
from quarto_arena.arena.transport import ProcessTransport
from quarto_arena.engines.registry import command
from quarto_arena.engines.testing import command as broken_command
from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import TURNS, Outcome, Position, Turn, Variant
from quarto_arena.protocol.uqi import Go, parse_command

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
    directory: Path


def play(
    monkeypatch: pytest.MonkeyPatch,
    tmp: Path,
    mode: str,
    engines: tuple[EngineConfig, ...],
    clock: VirtualClock | None = None,
    **spec: Any,
) -> Played:
    """One run in a run directory with the compiled path (``mode`` "c") or the Python path alone ("python"), on
    ``clock`` when one is given."""
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
    game = {f.name: spec.pop(f.name) for f in dataclasses.fields(GameSettings) if f.name in spec}
    run_spec = RunSpec(RunKind.TOURNAMENT, engines, game=GameSettings(**game), **spec)
    with Run.create(run_spec, directory, deadlines=DEADLINES) as run:
        if clock is None:
            outcome = asyncio.run(run.run())
        else:
            with clock.installed():
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
        directory,
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
        time_control=TimeControl.parse(STEADY_TC),
        book=OpeningBook(random_turns=2, seed=5),
    )
    played = sum(len(r.turns) - len(r.opening) for r in fast.records)
    assert all(r.termination in (Termination.NORMAL,) for r in fast.records)
    # Every game's last turn (a win or the full board) and nothing else goes the Python way here.
    assert fast.fast_turns >= played - 2 * len(fast.records)


@pytest.mark.parametrize(
    ("rules", "tc"),
    [
        ("advanced all auto", STEADY_TC),  # varied_bot answers within 30 ms, minimax (its default Depth 2) in 1
        ("standard color,shape auto", "20+0.05"),
        ("standard all strict", "10"),
        ("advanced height strict", STEADY_TC),
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
    may be charged less, down to nothing when the stall outlasts the sleep (CI saw one such turn at load 8). So the
    bound is on the many, not on each: the median is the sleep, and three turns in four are charged at least half."""
    engines = (varied("sleeper", 13, "sleep"), varied("quick", 14, "plain"))
    fast = play(monkeypatch, tmp_path, "c", engines, games=2, time_control=TimeControl.parse("st=1"))
    assert fast.fast_turns > 0
    charged = []
    for record in fast.records:
        sleeper = 0 if record.first == "sleeper" else 1
        charged += [turn.ms for i, turn in enumerate(record.turns) if i % 2 == sleeper]
    assert statistics.median(charged) >= 30 and sorted(charged)[len(charged) // 4] >= 15, charged


def test_deadline_of_a_compiled_search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A bot that stops answering after its third turn, its searches sent by the compiled path, loses on time. At
    STEADY_TC, the clock the load cannot reach, so that only the hang can lose on time (at st=0.3 a loaded machine
    could make the bot that plays lose first: the assertion below would then fail on a stall, not on the path)."""
    engines = (varied("hangs", 15, "plain", "hang:3"), varied("plays", 16, "plain"))
    fast = compare(monkeypatch, tmp_path, engines, games=2, time_control=TimeControl.parse(STEADY_TC))
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


# --- the times, on a controlled clock ---------------------------------------------------------------------------


def told_clocks(directory: Path) -> dict[str, list[tuple[int | None, int | None]]]:
    """(time, otime) of every ``go`` each engine was sent, in order, from its log (tests/varied_bot.py copies them)."""
    told = {}
    for log in sorted((directory / "logs").glob("*.stderr")):
        gos = [parse_command(line) for line in log.read_text().splitlines() if line.split()[:1] == ["go"]]
        told[log.stem] = [(go.time, go.otime) for go in gos if isinstance(go, Go)]
    return told


def accounted_clocks(records: list[GameRecord], control: TimeControl) -> dict[str, list[tuple[int | None, int | None]]]:
    """The (time, otime) each engine should have been told before each of its searches, worked out from the records'
    charged milliseconds alone: the test's own clock arithmetic, not the arena's."""
    assert control.base_ms is not None
    expected: dict[str, list[tuple[int | None, int | None]]] = {}
    for record in sorted(records, key=lambda r: r.game_id):
        remaining = [control.base_ms, control.base_ms]
        names = (record.first, record.second)
        for i, turn in enumerate(record.turns):
            side = i % 2
            if i >= len(record.opening):  # the opening's turns are not the engines': never charged
                expected.setdefault(names[side], []).append((remaining[side], remaining[1 - side]))
                remaining[side] = max(0, remaining[side] - turn.ms) + control.inc_ms
    return expected


def test_both_paths_charge_the_same_times_and_tell_the_clocks_they_leave(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On a controlled clock that moves 7 ms at each reading (tests/clocks.py), a plain answer is charged exactly
    7 ms on either path, so the two runs' records are the same times included; and on each path every ``go`` told
    each engine the clocks that the records' charges leave (time its own, otime its opponent's). Charging the wrong
    player's clock, in the referee or in C, or telling the mover its own time as otime, fails this."""
    engines = (varied("v1", 31, "plain"), varied("v2", 32, "plain"))
    tc = TimeControl.parse("60+0.1")  # a game clock: every charge shows in the next go lines
    spec: dict[str, Any] = {"games": 4, "time_control": tc, "book": OpeningBook(random_turns=1, seed=3)}
    fast = play(monkeypatch, tmp_path, "c", engines, VirtualClock(step=0.007), **spec)
    slow = play(monkeypatch, tmp_path, "python", engines, VirtualClock(step=0.007), **spec)
    assert fast.fast_turns > 0 and slow.paths == 0
    for played in (fast, slow):
        told = told_clocks(played.directory)
        assert told == accounted_clocks(played.records, tc)
        assert len(told["v1"]) + len(told["v2"]) > 20
    by_game = [sorted(p.records, key=lambda r: r.game_id) for p in (fast, slow)]
    assert [dataclasses.replace(r, started="") for r in by_game[0]] == [
        dataclasses.replace(r, started="") for r in by_game[1]
    ]
    assert {t.ms for r in fast.records for t in r.turns[len(r.opening) :]} == {7}


# --- the contract (arena/turns.py) ------------------------------------------------------------------------------

OWNERS: dict[type, type] = {
    turns.GameSlots: _Game,
    turns.SessionSlots: EngineSession,
    turns.SearchSlots: Search,
    turns.PipeSlots: ProcessTransport,
    turns.ClockSlots: SearchClock,
}
"""Each slotted class of the contract, and the class whose state it is."""


def test_each_owner_inherits_its_slots_and_has_every_method_c_calls() -> None:
    for slots, owner in OWNERS.items():
        assert issubclass(owner, slots), f"{owner.__name__} does not inherit turns.{slots.__name__}"
        for name in slots.CALLS:
            assert callable(getattr(owner, name, None)), f"{owner.__name__}.{name}, which _turns.c calls, is gone"
    assert all(callable(getattr(Clock, name, None)) for name in turns.CALLS["Clock"])
    loop = asyncio.new_event_loop()
    try:
        handle = loop.call_later(60, print)
        for kind, obj in (("loop", loop), ("future", loop.create_future()), ("timer", handle)):
            assert all(callable(getattr(obj, name, None)) for name in turns.CALLS[kind]), kind
        handle.cancel()
    finally:
        loop.close()
    assert Position._fields == turns.VALUES["Position"]
    assert tuple(f.name for f in dataclasses.fields(TurnRecord)) == turns.VALUES["TurnRecord"]
    assert set(turns.VALUES["Turn"]) <= set(Turn.__slots__)


def test_the_c_module_refuses_a_declaration_it_does_not_read() -> None:
    """A slot renamed, a method dropped or a field moved on one side only stops the C module from loading: it would
    otherwise read and write the wrong memory, or call what is not there."""
    real = (tuple(OWNERS), turns.CALLS, turns.VALUES, (Position, TurnRecord, Turn), TURNS, Outcome)

    class GameSlots:  # turns.GameSlots with its _side renamed
        __slots__ = ("_stop", "position", "position_line", "records", "side", "turns")
        CALLS = ()

    class PipeSlots:  # the right names, but no slots of its own
        CALLS = turns.PipeSlots.CALLS

    PipeSlots.__slots__ = turns.PipeSlots.__slots__  # type: ignore[attr-defined]

    Moved = collections.namedtuple(  # Position with two fields swapped
        "Moved", ("variant", "planes", "occupied", "held", "available", "claimable", "outcome")
    )
    assert turns._turns is not None
    setup = turns._turns.setup
    try:
        with pytest.raises(ImportError, match=r"GameSlots\.__slots__"):
            setup((GameSlots, *real[0][1:]), *real[1:])
        with pytest.raises(ImportError, match=r"PipeSlots\.last_line is not a slot of PipeSlots itself"):
            setup((*real[0][:3], PipeSlots, real[0][4]), *real[1:])
        with pytest.raises(ImportError, match=r"CALLS\[Clock\]"):
            setup(real[0], dict(turns.CALLS, Clock=("charge", "go_line")), *real[2:])
        with pytest.raises(ImportError, match=r"Position\._fields"):
            setup(*real[:3], (Moved, TurnRecord, Turn), *real[4:])
        with pytest.raises(RuntimeError, match="setup"):  # nothing runs on a contract that failed
            turns._turns.Reader(object(), 0)
    finally:
        setup(*real)


def test_the_owners_set_every_slot_of_the_contract() -> None:
    """A slot the C module reads that its owner no longer sets (renamed in the owner alone) would be found unset in
    a game: every one is set on live objects, a session after a search among them."""

    def unset(obj: object, slots: type) -> list[str]:
        return [name for name in slots.__slots__ if not hasattr(obj, name)]

    async def main() -> None:
        session = EngineSession(EngineConfig("r", tuple(command("random"))), deadlines=DEADLINES)
        await session.start()
        try:
            out = await session.search("position startpos", "go movetime 100", 5.0)
            assert out.turn is not None
            game = _Game(session, session, GameSpec(), Position.start())
            assert unset(game, turns.GameSlots) == []
            assert unset(session, turns.SessionSlots) == []
            assert unset(session._search, turns.SearchSlots) == []
            assert unset(session._clock, turns.ClockSlots) == []
            assert unset(session.transport, turns.PipeSlots) == []
        finally:
            await session.quit()

    asyncio.run(main())


MIRRORED: dict[Any, tuple[type, ...]] = {
    EngineSession.search_soon: (turns.SessionSlots, turns.SearchSlots),
    EngineSession._end: (turns.SessionSlots,),
    SearchClock.start: (turns.ClockSlots,),
    SearchClock.answered: (turns.ClockSlots,),
    _Game.record: (turns.GameSlots,),
    _Game._ask: (turns.GameSlots,),
    _Game._answered: (turns.GameSlots,),
    ProcessTransport._on_readable: (turns.PipeSlots,),
    ProcessTransport._write: (turns.PipeSlots,),
}
"""The Python methods whose work arena/_turns.c does too, and the slotted classes whose state each may write."""


def written(method: Any) -> set[str]:
    """The attribute names a method assigns (``x.name = ...``, ``x.name += ...``, in tuples too)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            names |= {t.attr for t in ast.walk(target) if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)}
    return names


def test_what_c_mirrors_writes_no_state_outside_the_contract() -> None:
    """A state write added to one of the Python methods the C module copies would be missing from the compiled path
    (which writes declared slots only): each such method writes only slots of the contract."""
    for method, parties in MIRRORED.items():
        declared = {name for slots in parties for name in slots.__slots__}
        extra = written(method) - declared
        assert not extra, (
            f"{method.__qualname__} writes {sorted(extra)}, which arena/_turns.c's copy of it does not: declare it in"
            " arena/turns.py and write it in _turns.c as the method does"
        )
    assert written(EngineSession.search_soon) >= {"_exchange", "_then", "position", "go", "score", "turn"}
