"""Every field travels: a record or a spec that gains a field must be written to (and read back from) the journal,
JSON Lines and the cluster's tasks, or these tests say which field was left out (test_cluster has GameSpec's). All of
them are written by one generic codec (arena/codec.py); files written before it must still load as they did."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quarto_arena.arena import codec
from quarto_arena.arena.compliance.checker import CheckTimeouts
from quarto_arena.arena.engine import Deadlines, EngineConfig
from quarto_arena.arena.journal import JOURNAL_NAME, encode_frame, read_journal
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord, json_line
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.run import CONFIG_NAME, JSONL_NAME, RunError, RunKind, RunSpec, ServerSpec
from quarto_arena.arena.schedule import Format, OpeningBook
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.stats import Sprt, SprtModel
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.transport import DEFAULT_STDERR_LIMIT
from quarto_arena.protocol.notation import parse_variant
from samples import every_field_game_spec


def unchanged(sample: Any, default: Any) -> list[str]:
    """The fields of ``sample`` left at their default: each must be given a value here for the test to mean it."""
    return [f.name for f in fields(sample) if getattr(sample, f.name) == getattr(default, f.name)]


def every_field_record() -> GameRecord:
    """A record with no field at its default."""
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
    return record


def every_field_spec() -> RunSpec:
    """A run spec with no field at its default."""
    variant = parse_variant("advanced", "color,shape", "strict")
    engines = (EngineConfig("a", command=("python", "-m", "a")), EngineConfig("b", remote="bob"))
    sample = RunSpec(
        kind=RunKind.SPRT,
        engines=engines,
        format=Format.GAUNTLET,
        rounds=3,
        games=10,
        concurrency=2,
        game=GameSettings(
            time_control=TimeControl.parse("10+0.1"),
            variant=variant,
            book=OpeningBook(random_turns=3, seed=4, variant=variant, source="random 3"),
            margin_ms=80,
            adjudicate=6,
        ),
        strict=True,
        sprt=Sprt(-5.0, 5.0, 0.1, 0.1, SprtModel.LOGISTIC),
        rating_interval=4,
        table_format="github",
        event="quarto-arena sprt",
        log_limit=1 << 20,
        server=ServerSpec("tcp://127.0.0.1:5555", None, 5.0),
        interleave=False,
    )
    default = RunSpec(RunKind.MATCH, (EngineConfig("x", command=("x",)), EngineConfig("y", command=("y",))))
    # A field RunSpec or GameSettings gains must be set here too, so that this test says whether the journal keeps it.
    assert unchanged(sample, default) == unchanged(sample.game, default.game) == []
    return sample


def test_every_field_of_a_game_record_round_trips_through_json() -> None:
    record = every_field_record()
    assert GameRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_each_maker_makes_what_its_class_makes_of_every_field() -> None:
    """The values the arena makes a turn or a game by setting their slots (arena/memo.py's makers, written from the
    class's fields): the same frozen value as the class's own ``__init__``, field for field, defaults included."""
    from quarto_arena.arena.engine import SearchOutcome, _answer
    from quarto_arena.arena.records import game_record, turn_record
    from quarto_arena.arena.referee import _make_spec
    from quarto_arena.protocol.notation import parse_turn

    outcome = SearchOutcome(parse_turn("a1!"), 7, "win 1", Termination.ILLEGAL_TURN, "d")
    assert unchanged(outcome, SearchOutcome(None, 0)) == []
    record = TurnRecord("c47", 12, "value 40")
    for make, value in (
        (game_record, every_field_record()),
        (_make_spec, every_field_game_spec()),
        (turn_record, record),
        (_answer, outcome),
    ):
        given = {f.name: getattr(value, f.name) for f in fields(value)}
        made = make(**given)
        assert type(made) is type(value) and made == value, type(value).__name__
        assert all(getattr(made, name) is v for name, v in given.items())
        with pytest.raises(FrozenInstanceError):
            made.__setattr__(fields(value)[0].name, None)
        required = {
            f.name: given[f.name] for f in fields(value) if f.default is MISSING and f.default_factory is MISSING
        }
        assert make(**required) == type(value)(**required)  # each default (a factory's anew)
    minimal = {"first": "a", "second": "b", "result": Result.DRAW, "termination": Termination.NORMAL}
    assert game_record(**minimal).exit_info is not game_record(**minimal).exit_info  # a factory's default, anew


def test_a_maker_refuses_a_class_whose_post_init_derives_fields() -> None:
    from quarto_arena.arena.memo import maker
    from quarto_arena.protocol.rules import Turn

    with pytest.raises(TypeError, match="derives"):
        maker(Turn)


def test_every_field_of_a_run_spec_round_trips_through_the_journal_header() -> None:
    sample = every_field_spec()
    assert RunSpec.from_dict(json.loads(json.dumps(sample.to_dict()))) == sample


# The codec writes, for each class, an encoder and a decoder of its own (generated source); its slow path reads the
# field declarations at each call. The two must agree on every value and every error, on samples of every class
# the codec carries and on damaged copies of their data (keys dropped, values replaced by any JSON value).


@pytest.fixture(autouse=True, scope="module")
def generate_at_once() -> Iterator[None]:
    """Every call of this module goes through the generated coders (a run takes the slow path for a class's first
    calls, codec.GENERATE_AFTER, then generates them)."""
    saved, codec.GENERATE_AFTER = codec.GENERATE_AFTER, 0
    yield
    codec.GENERATE_AFTER = saved


def test_a_class_takes_the_slow_path_until_its_coder_pays_then_the_generated_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @dataclass(frozen=True)
    class Fresh:
        n: int
        names: tuple[str, ...] = ()

    monkeypatch.setattr(codec, "GENERATE_AFTER", 3)
    value = Fresh(7, ("a",))
    data = codec.to_dict(value)  # uses of the class: written or read, in any form
    assert codec.from_dict(Fresh, data) == value
    assert codec.to_row(value) == [7, ["a"]]
    assert Fresh not in codec._CODERS  # three uses, on the slow path
    assert codec.to_dict(value) == data
    assert Fresh in codec._CODERS  # the fourth use generates it, and every use after takes it
    assert codec.from_row(Fresh, codec.to_row(value)) == value
    with pytest.raises(TypeError, match="n: expected an integer"):
        codec.from_dict(Fresh, {"n": "7"})


def samples() -> list[Any]:
    """A value of every class the codec carries, and of its forms (None or not, each kind of engine)."""
    record, spec = every_field_record(), every_field_spec()
    game = every_field_game_spec()
    return [
        record,
        GameRecord("a", "b", Result.DRAW, Termination.NORMAL),
        *record.turns,
        *record.engines,
        spec,
        replace(
            spec,
            kind=RunKind.MATCH,
            engines=spec.engines[:1] * 2,
            sprt=None,
            server=None,
            game=replace(spec.game, adjudicate=None),
        ),
        spec.game,
        GameSettings(),
        *spec.engines,
        EngineConfig(
            "e", endpoint="tcp://127.0.0.1:1", cwd="/tmp", options={"Seed": "1"}, time_control=spec.game.time_control
        ),
        spec.sprt,
        spec.server,
        ServerSpec("tcp://127.0.0.1:1", "/keys", 1.5),
        game,
        GameSpec(),
        Deadlines(1.0, 2.0, 3.0, 4.0, 5.0),
        CheckTimeouts(),
    ]


KEYS = st.text(max_size=3) | st.integers()
"""Keys of a dict in msgpack (JSON's are text)."""
JSON_VALUES = st.sampled_from([None, True, False, 0, 1, -1, 2.5, "", "1", "x", [], {}, ["x"], {"x": "y"}, {1: "y"}]) | (
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
        max_leaves=5,
    )
)
"""Any value of JSON or msgpack; first, those one type away from what a field holds."""


def damaged(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (plain data) with one thing changed at any depth: a key dropped or added, a list cut short or made
    longer, or a value replaced by any JSON or msgpack value."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key, how = draw(st.sampled_from(list(value))), draw(st.integers(0, 4))
        if how == 0:
            return {k: v for k, v in value.items() if k != key}
        if how == 1:
            return {**value, draw(KEYS): draw(JSON_VALUES)}
        return {**value, key: damaged(draw, value[key])}
    if isinstance(value, list) and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        if draw(st.integers(0, 3)) == 0:
            return value[:i] if draw(st.booleans()) else [*value, draw(JSON_VALUES)]
        return [*value[:i], damaged(draw, value[i]), *value[i + 1 :]]
    return draw(JSON_VALUES)


@st.composite
def data_of(draw: st.DrawFn, value: Any) -> Any:
    """``value`` as it is or with one or two things changed (more would hide all but the first error)."""
    for _ in range(draw(st.integers(0, 2))):
        value = damaged(draw, value)
    return value


def outcome(call: Any) -> tuple[Any, Any]:
    """What ``call()`` gives: its value, or the type and message of what it raised."""
    try:
        return "value", call()
    except Exception as e:
        return type(e), str(e)


@pytest.mark.parametrize("sample", samples(), ids=lambda sample: type(sample).__name__)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_generated_coders_agree_with_the_slow_path(sample: Any, data: st.DataObject) -> None:
    cls = type(sample)
    assert codec.to_dict(sample) == codec._slow_to_dict(sample)
    assert codec.to_row(sample) == codec._slow_to_row(sample)
    assert codec.from_dict(cls, codec.to_dict(sample)) == codec._slow_from_dict(cls, codec.to_dict(sample)) == sample
    d = data.draw(data_of(codec._slow_to_dict(sample)))
    read = outcome(lambda: codec.from_dict(cls, d))
    assert read == outcome(lambda: codec._slow_from_dict(cls, d))
    if read[0] == "value":
        assert codec.to_dict(read[1]) == codec._slow_to_dict(read[1])
    row = data.draw(data_of(codec._slow_to_row(sample)))
    assert outcome(lambda: codec.from_row(cls, row)) == outcome(lambda: codec._slow_from_row(cls, row))


def test_the_generated_encoder_writes_a_subclass_by_its_own_fields() -> None:
    # GameSpec-like containers may hold a CheckTimeouts where a Deadlines is declared.
    @dataclass(frozen=True)
    class Holder:
        deadlines: Deadlines

    held = codec.to_dict(Holder(CheckTimeouts()))["deadlines"]
    assert held == codec._slow_to_dict(CheckTimeouts()) and "search_slack" in held


# Files written by quarto-arena before records and specs had one generic codec (tests/data/README.md): a real SPRT
# run directory, and a journal, JSON Lines and plain dicts of every field. They must load as they did then
# (loaded.json: every value they loaded as, written by that code) and be written back byte for byte, but for the
# fields added since: those read as their absence means (test_a_key_left_out_reads_as_its_absence_means), and are
# left out of the comparison (as_of), so that a new field is its declaration and its sample value, not a new
# fixture.
V1 = Path(__file__).parent / "data" / "serialized-v1"


def as_of(value: Any, original: Any) -> Any:
    """``value`` without the keys ``original`` lacks, at every depth: a value loaded or written back from the first
    format, less the fields added since it was written."""
    if isinstance(value, dict) and isinstance(original, dict):
        return {k: as_of(v, original[k]) for k, v in value.items() if k in original}
    if isinstance(value, list) and isinstance(original, list) and len(value) == len(original):
        return [as_of(v, o) for v, o in zip(value, original, strict=True)]
    return value


def frames(raw: bytes) -> list[bytes]:
    """A journal's frames, as the bytes of each (header and payload)."""
    import struct

    from quarto_arena.arena.journal import MAGIC

    out, offset = [], len(MAGIC)
    while offset < len(raw):
        (length,) = struct.unpack_from(">I", raw, offset)
        out.append(raw[offset : offset + 12 + length])
        offset += 12 + length
    return out


@pytest.mark.parametrize("cls", [GameRecord, RunSpec, GameSettings, TurnRecord, EngineIdentity, GameSpec])
def test_a_key_left_out_reads_as_its_absence_means(cls: type) -> None:
    """Each field with a default, its key left out of a dict of every field, reads as the field's ``missing`` (what
    its absence meant in files from before it) or else its default: how files written before a field load. (A
    field written inline has no key of its own: its class's fields are tested as GameSettings' are.)"""
    from quarto_arena.arena.codec import _META

    sample = {
        GameRecord: every_field_record,
        RunSpec: every_field_spec,
        GameSettings: lambda: every_field_spec().game,
        TurnRecord: lambda: TurnRecord("c47", 12, "value 40"),
        EngineIdentity: lambda: EngineIdentity("Greedy 1", "someone", 1, "python -m greedy", {"Seed": "3"}),
        GameSpec: every_field_game_spec,
    }[cls]()
    for f in fields(cls):
        hook = f.metadata.get(_META)
        missing = codec._ABSENT if hook is None else hook.missing
        if missing is codec._ABSENT and f.default is MISSING and f.default_factory is MISSING:
            continue  # a required field
        if hook is not None and hook.inline:
            continue
        data = codec.to_dict(sample)
        del data[hook.key if hook is not None and hook.key else f.name]
        if missing is not codec._ABSENT:
            expected = missing
        else:
            expected = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
        try:
            read = codec.from_dict(cls, data)
        except RunError:  # the spec's other fields need this one (an SPRT run its test, a remote engine a server)
            continue
        assert getattr(read, f.name) == expected, f.name


def plain(value: Any) -> Any:
    """``value`` as JSON types, every compared field of every dataclass in it named (sets sorted: their order is
    not the same in two processes)."""
    if is_dataclass(value) and not isinstance(value, type):
        out = {"": type(value).__name__}
        for f in fields(value):
            if f.compare:
                inner = plain(getattr(value, f.name))
                # A field written inline (RunSpec's game) is loaded as its fields were before they were one value.
                out |= {k: v for k, v in inner.items() if k} if _inline(f) else {f.name: inner}
        return out
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (frozenset, set)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def _inline(f: Any) -> bool:
    hook = f.metadata.get(codec._META)
    return hook is not None and hook.inline


def spec_order(written: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
    """A spec's dict as written, its keys in the order of ``original``'s: the one change in how the first format's
    specs are written back. Since the games' settings are one value (RunSpec's ``game``, written inline), ``tc``,
    ``variant``, ``openings``, ``margin_ms`` and ``adjudicate`` are written side by side; every reader reads by key
    (a msgpack map, a JSON object: this code and the code that wrote these files alike)."""
    assert written.keys() == original.keys()
    return {key: written[key] for key in original}


def loaded(directory: Path) -> list[Any]:
    """Every value the files of ``directory`` hold (:func:`plain`), in the order of loaded.json."""
    out: list[Any] = []
    for journal in (directory / "run" / JOURNAL_NAME, directory / "every-field.qaj"):
        contents = read_journal(journal)
        out.append(plain(RunSpec.from_dict(contents.config)))
        out.extend(plain(r) for r in contents.records.values())
    for jsonl in (directory / "run" / JSONL_NAME, directory / "every-field.jsonl"):
        out.extend(plain(GameRecord.from_dict(json.loads(line))) for line in jsonl.read_text().splitlines())
    out.append(plain(RunSpec.from_dict(json.loads((directory / "run" / CONFIG_NAME).read_text()))))
    samples = json.loads((directory / "samples.json").read_text())
    out.extend(plain(RunSpec.from_dict(s)) for s in samples["specs"])
    out.extend(plain(GameRecord.from_dict(r)) for r in samples["records"])
    return out


def test_files_of_the_first_format_load_as_they_did() -> None:
    expected = json.loads((V1 / "loaded.json").read_text())
    assert as_of(loaded(V1), expected) == expected


def test_records_and_specs_are_written_back_byte_for_byte() -> None:
    import msgpack

    for jsonl in (V1 / "run" / JSONL_NAME, V1 / "every-field.jsonl"):
        lines = jsonl.read_text().splitlines()
        for line in lines:
            original = json.loads(line)
            assert json.dumps(as_of(GameRecord.from_dict(original).to_dict(), original)) == line
    config = json.loads((V1 / "run" / CONFIG_NAME).read_text())
    spec = as_of(RunSpec.from_dict(config).to_dict(), config)
    spec = spec_order({**spec, "schedule": config["schedule"]}, config)
    assert json.dumps(spec, indent=2) == json.dumps(config, indent=2)
    for directory, journal in ((V1 / "run", JOURNAL_NAME), (V1, "every-field.qaj")):
        raw = (directory / journal).read_bytes()
        contents = read_journal(directory / journal)
        header = as_of(RunSpec.from_dict(contents.config).to_dict(), contents.config)
        if "schedule" in contents.config:
            header["schedule"] = contents.config["schedule"]
        assert list(spec_order(header, contents.config).items()) == list(contents.config.items())
        written = frames(raw)[-len(contents.records) :]
        for record, frame in zip(contents.records.values(), written, strict=True):
            original = msgpack.unpackb(frame[12:], raw=False)["game"]
            game = as_of(record.to_dict(), original)
            assert encode_frame({"kind": "game", "id": record.game_id, "game": game}) == frame
        assert contents.records
    for sample in json.loads((V1 / "samples.json").read_text())["specs"]:
        assert json.dumps(spec_order(as_of(RunSpec.from_dict(sample).to_dict(), sample), sample)) == json.dumps(sample)


def test_a_journal_from_before_the_newer_fields_reads_with_what_their_absence_meant() -> None:
    spec = json.loads((V1 / "run" / CONFIG_NAME).read_text())
    record = json.loads((V1 / "samples.json").read_text())["records"][0]
    assert spec["interleave"] and spec["adjudicate"] == 8
    for key in ("log_limit", "server", "adjudicate", "interleave"):
        del spec[key]
    for key in ("detail", "started", "exit_info", "engines"):
        del record[key]
    old = RunSpec.from_dict(spec)
    assert (old.log_limit, old.server, old.game.adjudicate, old.interleave) == (DEFAULT_STDERR_LIMIT, None, None, False)
    game = GameRecord.from_dict(record)
    assert (game.detail, game.started, game.exit_info, game.engines) == ("", "", {}, ())


def test_bad_data_is_an_error_naming_the_key() -> None:
    good = json.loads((V1 / "samples.json").read_text())["records"][0]
    with pytest.raises(KeyError, match="first"):
        GameRecord.from_dict({k: v for k, v in good.items() if k != "first"})
    for key, value, problem in (
        ("game_id", "9", "game_id: expected an integer, not str"),
        ("round", True, "round: expected an integer, not bool"),
        ("opening", "c47", "opening: expected a list, not str"),
        ("exit_info", ["a"], "exit_info: expected a mapping, not list"),
        ("turns", [["3", 0, None, "x"]], "TurnRecord has 3 fields, not 4"),
    ):
        with pytest.raises((TypeError, ValueError), match=problem):
            GameRecord.from_dict({**good, key: value})
    with pytest.raises(ValueError, match="'nonsense' is not a valid Termination"):
        GameRecord.from_dict({**good, "termination": "nonsense"})
    spec = json.loads((V1 / "run" / CONFIG_NAME).read_text())
    with pytest.raises(RunError, match="the journal's configuration lacks 'kind'"):
        RunSpec.from_dict({k: v for k, v in spec.items() if k != "kind"})
    with pytest.raises(RunError, match=r"the journal.s configuration is invalid: .*not a valid name"):
        RunSpec.from_dict({**spec, "engines": [{**spec["engines"][0], "name": "a b"}, spec["engines"][1]]})


def test_a_turn_row_from_before_scores_were_kept_reads_with_no_score() -> None:
    good = json.loads((V1 / "samples.json").read_text())["records"][0]
    assert GameRecord.from_dict({**good, "turns": [["3", 0]]}).turns == (TurnRecord("3", 0, None),)


ODD = st.sampled_from(["", "bot1", 'q"uote', "back\\slash", "line\nend", "é", "\x1f", "tab\t", "snow ☃"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.builds(
            EngineIdentity,
            st.one_of(st.none(), ODD),
            st.one_of(st.none(), ODD),
            st.one_of(st.none(), st.integers(0, 3)),
            ODD,
            st.dictionaries(ODD, ODD, max_size=2),
        ),
        max_size=3,
    ),
    ODD,
    st.lists(st.tuples(ODD, st.integers(0, 10**6), st.one_of(st.none(), ODD)), max_size=17),
    st.dictionaries(ODD, ODD, max_size=2),
)
def test_json_line_is_json_dumps_of_the_record(
    engines: list[EngineIdentity], text: str, turns: list[tuple[str, int, str | None]], exit_info: dict[str, str]
) -> None:
    # The identities' JSON is kept from record to record (by identity object): records that share one, and a
    # record given with its dict already made, are written as json.dumps writes their to_dict.
    record = replace(
        every_field_record(),
        first=text,
        detail=text,
        turns=tuple(TurnRecord(*t) for t in turns),
        exit_info=exit_info,
        engines=tuple(engines),
    )
    for game in (record, replace(record, engines=tuple(reversed(engines)), game_id=10), record):
        expected = json.dumps(game.to_dict())
        assert json_line(game) == expected
        assert json_line(game, game.to_dict()) == expected


# A run directory of today's format (tests/data/README.md): a tournament made by quarto-arena at 1bf96c1, stopped
# by SIGINT after 10 of its 24 games (2 in flight abandoned), every game setting away from its default.
TODAY = Path(__file__).parent / "data" / "run-1bf96c1"


def test_a_run_stopped_by_the_previous_release_resumes_and_plays_its_games_as_it_would_have(tmp_path: Path) -> None:
    """Its journal's flat game settings (``tc``, ``variant``, ``openings``, ``margin_ms``, ``adjudicate``) become
    the run's GameSettings: the resume builds the same schedule (its digest is checked), plays the 14 games left
    with them, and appends to the journal without rewriting what it held."""
    import os
    import shutil
    import subprocess
    import sys

    from procs import CLI

    directory = tmp_path / "run"
    shutil.copytree(TODAY, directory)
    journal, config = (directory / JOURNAL_NAME).read_bytes(), (directory / CONFIG_NAME).read_text()
    before = read_journal(directory / JOURNAL_NAME)
    spec = RunSpec.from_dict(before.config)
    assert spec.game == GameSettings(
        TimeControl.parse("st=0.05"),
        parse_variant("advanced", "color,shape", "strict"),
        OpeningBook(random_turns=3, seed=5, variant=spec.game.variant, source="random 3"),
        margin_ms=70,
        adjudicate=10,
    )
    assert len(before.records) == 10
    # The engines are `python -m quarto_arena.engines...` (a program on the PATH, as a user's may be): this Python's.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    r = subprocess.run(
        [*CLI, "tournament", "--resume", str(directory), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": path},
    )
    assert r.returncode == 0, r.stderr
    after = read_journal(directory / JOURNAL_NAME)
    assert (directory / JOURNAL_NAME).read_bytes().startswith(journal)
    assert (directory / CONFIG_NAME).read_text() == config
    assert sorted(after.records) == list(range(1, 25))
    assert all(after.records[k] == v for k, v in before.records.items())
    played = [after.records[k] for k in after.records if k not in before.records]
    assert {(g.variant, g.time_control) for g in played} == {("advanced color,shape strict", "st=0.05")}
    assert [g.opening for g in played] == [spec.schedule().game(g.game_id).opening.turns for g in played]


@dataclass(frozen=True)
class _Inner:
    a: int = 1
    b: str = "x"


@dataclass(frozen=True)
class _Outer:
    n: int
    inner: _Inner = field(default_factory=_Inner, metadata=codec.hook(inline=True))
    z: bool = False


@dataclass(frozen=True)
class _Clash:
    a: int
    inner: _Inner = field(default_factory=_Inner, metadata=codec.hook(inline=True))


@dataclass(frozen=True)
class _NotADataclass:
    n: int = field(default=0, metadata=codec.hook(inline=True))


def test_a_field_inline_is_written_among_its_holders_fields_and_needs_keys_of_its_own() -> None:
    value = _Outer(3, _Inner(2, "y"), True)
    assert list(codec._slow_to_dict(value).items()) == [("n", 3), ("a", 2), ("b", "y"), ("z", True)]
    assert codec._slow_from_dict(_Outer, {"n": 3, "b": "y"}) == _Outer(3, _Inner(1, "y"))
    assert codec._slow_to_row(value) == [3, {"a": 2, "b": "y"}, True]
    with pytest.raises(TypeError, match="a written twice"):
        codec.to_dict(_Clash(1))
    with pytest.raises(TypeError, match="only a dataclass is written inline"):
        codec.to_dict(_NotADataclass())
