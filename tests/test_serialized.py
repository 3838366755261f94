"""Every field travels: a record or a spec that gains a field must be written to (and read back from) the journal,
JSON Lines and the cluster's tasks, or these tests say which field was left out. The model is test_cluster's test of
GameSpec (its serialization is generic: every dataclass field, a few converted)."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from quarto_arena.arena.engine import EngineConfig
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.run import RunKind, RunSpec, ServerSpec
from quarto_arena.arena.schedule import Format, OpeningBook
from quarto_arena.arena.stats import Sprt, SprtModel
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.protocol.notation import parse_variant


def unchanged(sample: Any, default: Any) -> list[str]:
    """The fields of ``sample`` left at their default: each must be given a value here for the test to mean it."""
    return [f.name for f in fields(sample) if getattr(sample, f.name) == getattr(default, f.name)]


def test_every_field_of_a_game_record_round_trips_through_json() -> None:
    identity = EngineIdentity("Greedy 1", "someone", 1, "python -m greedy", {"Seed": "3"})
    assert unchanged(identity, EngineIdentity()) == []
    record = GameRecord(
        first="a",
        second="b",
        result=Result.SECOND_WINS,
        termination=Termination.TIME_FORFEIT,
        detail="a: no turn in 1050 ms",
        variant="advanced color,shape strict",
        time_control="st=1",
        start="..../..../..../.... 7",
        opening=("c47",),
        turns=(TurnRecord("3", 0), TurnRecord("c47", 12, "value 40")),
        game_id=9,
        round=2,
        started="2026-11-26T12:00:00Z",
        exit_info={"a": "exit code 1"},
        engines=(identity, EngineIdentity(source="greedy")),
    )
    assert unchanged(record, GameRecord("", "", Result.DRAW, Termination.NORMAL)) == []
    assert GameRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_every_field_of_a_run_spec_round_trips_through_the_journal_header() -> None:
    variant = parse_variant("advanced", "color,shape", "strict")
    engines = (EngineConfig("a", command=("python", "-m", "a")), EngineConfig("b", remote="bob"))
    sample = RunSpec(
        kind=RunKind.SPRT,
        engines=engines,
        format=Format.GAUNTLET,
        rounds=3,
        games=10,
        concurrency=2,
        time_control=TimeControl.parse("10+0.1"),
        variant=variant,
        book=OpeningBook(random_turns=3, seed=4, variant=variant, source="random 3"),
        strict=True,
        margin_ms=80,
        sprt=Sprt(-5.0, 5.0, 0.1, 0.1, SprtModel.LOGISTIC),
        rating_interval=4,
        table_format="github",
        event="quarto-arena sprt",
        log_limit=1 << 20,
        server=ServerSpec("tcp://127.0.0.1:5555", None, 5.0),
        adjudicate=6,
        interleave=False,
    )
    default = RunSpec(RunKind.MATCH, (EngineConfig("x", command=("x",)), EngineConfig("y", command=("y",))))
    # A field RunSpec gains must be set here too, so that this test says whether the journal keeps it.
    assert unchanged(sample, default) == []
    assert RunSpec.from_dict(json.loads(json.dumps(sample.to_dict()))) == sample
