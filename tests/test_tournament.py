"""Tournaments end to end with real engine processes: results, records, forfeits, strict mode, resume after SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pgn_reference
import pytest
from quarto_arena.arena.engine import Deadlines
from quarto_arena.arena.journal import JOURNAL_NAME, MAGIC, read_journal
from quarto_arena.arena.output import RunView, format_table, standings_table
from quarto_arena.arena.pgn import read_games
from quarto_arena.arena.records import Result, Termination
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import (
    FAILURES_NAME,
    JSONL_NAME,
    PGN_NAME,
    GameFinished,
    Run,
    RunError,
    RunKind,
    RunOptions,
    RunOutcome,
    RunSpec,
    build_spec,
)
from quarto_arena.arena.schedule import Format, OpeningBook, random_openings
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.protocol.notation import parse_position, parse_turns
from quarto_arena.protocol.rules import Variant

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]
FAST = Deadlines(startup=10.0, ready=5.0, newgame=5.0, quit=1.0, safety=10.0)

SLOW_BOT = textwrap.dedent(
    """
    import random, sys, time
    from quarto_arena.protocol.bot import run

    rng = random.Random(int(sys.argv[1]))

    def choose(position, ctx):
        time.sleep(0.02)  # long enough for a SIGKILL to find a game in flight
        return rng.choice(position.legal_turns())

    run(choose, [])
    """
)


def processes_mentioning(marker: str) -> list[str]:
    """Live processes (zombies excluded: an orphan's zombie may wait for this sandbox's init) naming ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(f"{entry.name} ({state}) {cmdline}")
    return found


def wait_until_gone(marker: str, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := processes_mentioning(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def spec_of(*engines: str, **kw: object) -> RunSpec:
    configs = tuple(resolve_engines(list(engines)))
    base: dict[str, object] = {"game": GameSettings(TimeControl.parse("st=1")), "concurrency": 2}
    base.update(kw)
    return RunSpec(RunKind.TOURNAMENT, engines=configs, **base)  # type: ignore[arg-type]


def play(spec: RunSpec, directory: Path) -> tuple[list[object], RunOutcome]:
    events: list[object] = []
    with Run.create(spec, directory, deadlines=FAST) as t:
        outcome = asyncio.run(t.run(events.append))
    return events, outcome


def test_round_robin_records_every_game_in_journal_pgn_and_jsonl(c_bot: Path, tmp_path: Path) -> None:
    openings = tuple(random_openings(3, 2, Variant(), seed=4))
    game = GameSettings(TimeControl.parse("st=1"), book=OpeningBook(openings))
    spec = spec_of(f"a={c_bot}", f"b={c_bot}", "random", games=4, game=game)
    events, outcome = play(spec, tmp_path / "t")
    assert outcome.complete
    finished = [e for e in events if isinstance(e, GameFinished)]
    assert sorted(e.record.game_id for e in finished) == list(range(1, 13))
    journal = read_journal(tmp_path / "t" / JOURNAL_NAME)
    assert sorted(journal.records) == list(range(1, 13))
    assert journal.config["engines"][0]["name"] == "a"
    for record in journal.records.values():
        # Each game starts with its pair's opening and is legal to the end.
        assert record.opening in [o.turns for o in openings]
        pos = parse_position(record.start).play(parse_turns([t.token for t in record.turns]))
        assert pos.is_over or record.termination is not Termination.NORMAL
    games = list(read_games(tmp_path / "t" / PGN_NAME))
    assert sorted(int(g.tags["GameId"]) for g in games) == list(range(1, 13))
    for g in games:
        for tag in ("Event", "Site", "Date", "Round", "White", "Black", "Result", "Variant", "TimeControl"):
            assert g.tags[tag] not in ("", "?"), tag
        assert g.tags["Termination"] == "normal"
        assert g.tags["Opening"].startswith("startpos ")
        # Who played: the engine's own id name and how it was run, for tracing a result to a binary.
        side = "White" if g.tags["White"] in ("a", "b") else "Black"
        assert g.tags[f"{side}Command"] == str(c_bot)
        assert g.tags[f"{side}Engine"]
    lines = (tmp_path / "t" / JSONL_NAME).read_text().splitlines()
    assert sorted(json.loads(line)["game_id"] for line in lines) == list(range(1, 13))
    assert all(len(json.loads(line)["turns"]) >= 3 for line in lines)
    # Byte for byte what the reference writers (json.dumps, tests/pgn_reference.py) make of the journal's records.
    records = list(journal.records.values())
    assert lines == [json.dumps(r.to_dict()) for r in records]
    pgn = "\n".join(pgn_reference.pgn_text(r, spec.event) for r in records)
    assert (tmp_path / "t" / PGN_NAME).read_text(encoding="utf-8") == pgn
    # Colours swap inside each pair: every engine gives first as often as second.
    firsts = Counter(r.first for r in journal.records.values())
    seconds = Counter(r.second for r in journal.records.values())
    assert firsts == seconds == Counter({"a": 4, "b": 4, "random": 4})
    assert not processes_mentioning(str(c_bot))


def test_gauntlet_and_interim_tables(c_bot: Path, tmp_path: Path) -> None:
    spec = spec_of(f"hero={c_bot}", f"x={c_bot}", f"y={c_bot}", format=Format.GAUNTLET, games=2, rating_interval=2)
    out = tmp_path / "progress.txt"
    with open(out, "w") as stream, Run.create(spec, tmp_path / "t", deadlines=FAST) as t:
        view = RunView(stream, spec.kind, spec.names, [], t.total, live=False, interval=2)
        asyncio.run(t.run(view))
        view.close()
    text = out.read_text()
    assert "Rating after 2 of 4 games:" in text
    assert text.splitlines()[-1].endswith("ETA 0:00:00") and "4/4 games" in text.splitlines()[-1]
    records = read_journal(tmp_path / "t" / JOURNAL_NAME).records.values()
    assert all("hero" in (r.first, r.second) for r in records)
    table = standings_table(view.records, spec.names)
    games = dict(zip([r[1] for r in table.rows], [r[table.headers.index("games")] for r in table.rows], strict=True))
    assert games == {"hero": 4, "x": 2, "y": 2}


def test_a_crashing_engine_forfeits_is_restarted_and_the_tournament_goes_on(c_bot: Path, tmp_path: Path) -> None:
    # The bot ignores the argument: it marks this test's engines apart from those of tests running alongside.
    crash = f"crash={sys.executable} -m quarto_arena.engines.testing.crash_on_go {tmp_path}"
    spec = spec_of(crash, f"bot={c_bot}", games=4)
    _, outcome = play(spec, tmp_path / "t")
    records = outcome.records  # type: ignore[attr-defined]
    assert len(records) == 4
    assert all(r.termination is Termination.DISCONNECT and r.loser == "crash" for r in records)
    table = standings_table(records, spec.names)
    row = next(r for r in table.rows if r[1] == "crash")
    assert row[table.headers.index("forfeits")] == 4
    assert row[table.headers.index("disconnect")] == 4
    assert "disconnect" in format_table(table, "simple")
    assert not wait_until_gone(str(tmp_path))


@pytest.mark.slow
def test_strict_stops_at_the_first_failure_and_resume_replays_it(c_bot: Path, tmp_path: Path) -> None:
    crash = f"crash={sys.executable} -m quarto_arena.engines.testing.crash_on_go"
    directory = tmp_path / "t"
    r = run_cli(
        "tournament", crash, f"bot={c_bot}", "--games", "4", "--tc", "st=1", "--strict", "--out", str(directory)
    )
    assert r.returncode == 3, r.stderr
    assert "stopped by game" in r.stderr and "disconnect" in r.stderr
    assert "Traceback" not in r.stderr
    assert read_journal(directory / JOURNAL_NAME).records == {}
    failed = [json.loads(line) for line in (directory / FAILURES_NAME).read_text().splitlines()]
    assert failed[0]["termination"] == "disconnect"
    again = run_cli("tournament", "--resume", str(directory))
    assert again.returncode == 3
    assert read_journal(directory / JOURNAL_NAME).records == {}


@pytest.mark.slow
def test_an_engine_that_cannot_start_stops_the_tournament_before_any_game(tmp_path: Path) -> None:
    r = run_cli("tournament", "dead=sh -c 'exit 7'", "random", "--tc", "st=1", "--out", str(tmp_path / "t"))
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("\n") == 2, r.stderr  # the "Tournament in" line and the error
    assert "dead" in r.stderr and "Traceback" not in r.stderr


def test_resume_plays_exactly_the_missing_games(c_bot: Path, tmp_path: Path) -> None:
    directory = tmp_path / "t"
    spec = spec_of(f"a={c_bot}", f"b={c_bot}", games=6)
    play(spec, directory)
    journal = directory / JOURNAL_NAME
    # Cut the journal back to 2 whole games plus half of the third: as if killed while writing game 3.
    data = journal.read_bytes()
    ends = frame_ends(data)
    keep = ends[2] + (ends[3] - ends[2]) // 2  # ends[0] is the header's end, ends[k] game k's
    journal.write_bytes(data[:keep])
    (directory / PGN_NAME).write_text("garbage left by a kill\n")
    with Run.resume(directory, deadlines=FAST) as t:
        assert t.torn is not None
        assert len(list(t.pending())) == 4
        events: list[object] = []
        outcome = asyncio.run(t.run(events.append))
    assert any("torn" in str(e) for e in events)
    assert outcome.complete
    after = read_journal(journal)
    assert sorted(after.records) == list(range(1, 7))
    assert sorted(int(g.tags["GameId"]) for g in read_games(directory / PGN_NAME)) == list(range(1, 7))
    # Nothing to do on a second resume.
    with Run.resume(directory, deadlines=FAST) as t:
        assert list(t.pending()) == []


def frame_ends(data: bytes) -> list[int]:
    """Byte offsets where the journal's frames end (header first)."""
    ends, offset = [], len(MAGIC)
    while offset < len(data):
        offset += 12 + int.from_bytes(data[offset : offset + 4], "big")
        ends.append(offset)
    return ends


@pytest.mark.slow
def test_resume_refuses_flags_foreign_and_corrupt_journals(tmp_path: Path) -> None:
    r = run_cli("tournament", "--resume", str(tmp_path / "nope"))
    assert r.returncode == 2 and "no such run directory" in r.stderr
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / JOURNAL_NAME).write_text('[Event "?"]\n')
    r = run_cli("tournament", "--resume", str(tmp_path / "foreign"))
    assert r.returncode == 2 and "not a quarto-arena journal" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    (tmp_path / "empty").mkdir()
    r = run_cli("tournament", "--resume", str(tmp_path / "empty"))
    assert r.returncode == 2 and "no journal here" in r.stderr
    r = run_cli("tournament", "--resume", str(tmp_path / "empty"), "--games", "4")
    assert r.returncode == 2 and "--resume takes no engines or game options (got --games)" in r.stderr
    r = run_cli("tournament", "random", "--resume", str(tmp_path / "empty"))
    assert r.returncode == 2 and "--resume takes no engines or game options (got engines)" in r.stderr


def test_a_second_arena_on_the_same_directory_is_refused(c_bot: Path, tmp_path: Path) -> None:
    spec = spec_of(f"a={c_bot}", f"b={c_bot}")
    with (
        Run.create(spec, tmp_path / "t", deadlines=FAST),
        pytest.raises(RunError, match="in use by another running quarto-arena"),
    ):
        Run.resume(tmp_path / "t")
        with pytest.raises(RunError, match="in use by another running quarto-arena"):
            Run.create(spec, tmp_path / "t")  # even though it has counted no game yet
    # Closed without a counted game (it failed before its first): the directory may be taken again.
    with Run.create(spec, tmp_path / "t") as again:
        assert again.replaced_unplayed


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["random"], "at least two engines"),
        (["random", "greedy", "--games", "0"], "games per encounter must be at least 1"),
        (["random", "greedy", "--tc", "fast"], "time control 'fast'"),
        (["random", "greedy", "--attributes", "smell"], "unknown attribute 'smell'"),
        (["random", "greedy", "--format", "nope"], "unknown --format 'nope'"),
        (["random", "greedy", "--openings", "x.txt", "--random-openings", "2"], "not both"),
        (["random", "greedy", "--openings", "missing.txt"], "cannot read the openings file"),
        (["random", "greedy", "--engines", "missing.toml"], "no such engines file"),
        (["random", "./nobody"], "does not exist"),
        (["random", "greedy", "--concurrency", "0"], "concurrency must be at least 1"),
        (["random", "greedy", "--openings", "."], "is a directory, not an openings file"),
        (["a=random", "a=greedy"], "engine name 'a' is given twice"),
        (["random", "my_bot"], "to run the file here, write ./my_bot"),
        (["random", "greedy", "--option", "nobody:Depth=3"], "no engine is named 'nobody'"),
        (["random", "greedy", "--progress-every", "soon"], "--progress-every 'soon'"),
    ],
)
def test_usage_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "my_bot").write_text("#!/bin/sh\n")
    r = run_cli("tournament", *args, "--out", str(tmp_path / "t"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "t" / JOURNAL_NAME).exists()


def test_build_spec_from_engines_file_and_openings_file(tmp_path: Path, c_bot: Path) -> None:
    engines = tmp_path / "engines.toml"
    engines.write_text(
        f'[[engine]]\nname = "c"\ncommand = "{c_bot}"\ntc = "st=2"\n[[engine]]\nname = "r"\ncommand = "random"\n'
    )
    openings = tmp_path / "openings.txt"
    openings.write_text("3 c47\n..../..../..../.... 7\n")
    options = RunOptions(engines_file=str(engines), openings=str(openings), random_openings=None, games=4, tc="st=1")
    spec = build_spec(RunKind.TOURNAMENT, [], options)
    assert spec.names == ["c", "r"]
    assert [o.text() for o in spec.game.book.openings] == ["startpos 3 c47", "..../..../..../.... 7"]
    assert RunSpec.from_dict(spec.to_dict()) == spec
    sprt = build_spec(RunKind.SPRT, ["random", "greedy"], RunOptions(elo0=0.0, elo1=5.0, model="logistic", max_games=7))
    assert sprt.games == 8  # whole pairs
    assert RunSpec.from_dict(sprt.to_dict()) == sprt


@pytest.mark.slow
def test_sigkill_mid_game_then_resume_finds_every_game_exactly_once(c_bot: Path, tmp_path: Path) -> None:
    """The crash-safety promise, with a real arena process killed by SIGKILL while games are running."""
    slow = tmp_path / "slow_bot.py"
    slow.write_text(SLOW_BOT)
    directory = tmp_path / "t"
    engines = [f"s1={sys.executable} {slow} 1", f"s2={sys.executable} {slow} 2", f"c={c_bot}"]
    args = ["tournament", *engines, "--games", "6", "--concurrency", "2", "--tc", "st=1", "--out", str(directory)]
    args += ["--random-openings", "2", "--seed", "9"]
    total = 3 * 6
    log = open(tmp_path / "first.log", "w")  # noqa: SIM115 - the child writes it while we poll
    proc = subprocess.Popen([*CLI, *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "the tournament made no progress"
            journal = directory / JOURNAL_NAME
            done = len(read_journal(journal).records) if journal.exists() else 0
            # The slow bots take 20 ms a turn at concurrency 2: mid-run, games are always in flight.
            if done >= 3:
                break
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        log.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    killed_at = len(read_journal(directory / JOURNAL_NAME).records)
    assert killed_at < total
    # The engines run in their own process groups, so the SIGKILL did not reach them: they must exit by
    # themselves at the end of their input (SPEC §3.2), since the dead arena's pipes are closed.
    assert not wait_until_gone(str(tmp_path)), "engines survived the arena"

    r = run_cli("tournament", "--resume", str(directory), timeout=180)
    assert r.returncode == 0, r.stderr
    assert f"{killed_at} already played" in r.stderr
    contents = read_journal(directory / JOURNAL_NAME)  # raises if any game were recorded twice
    assert contents.torn is None
    assert sorted(contents.records) == list(range(1, total + 1))
    pgn_ids = Counter(int(g.tags["GameId"]) for g in read_games(directory / PGN_NAME))
    assert pgn_ids == Counter(range(1, total + 1))
    jsonl_ids = Counter(json.loads(line)["game_id"] for line in (directory / JSONL_NAME).read_text().splitlines())
    assert jsonl_ids == Counter(range(1, total + 1))
    # The table counts every game once: each of the 3 engines played 12 games.
    rows = r.stdout.split("\n\n")[0].splitlines()[2:]  # the crosstable follows
    table = [line.split() for line in rows if line[:1].isdigit()]  # a rank first: the notes under the table are not
    assert sorted((row[1], int(row[4])) for row in table) == [("c", 12), ("s1", 12), ("s2", 12)]
    assert not wait_until_gone(str(tmp_path))
    assert all(rec.result is not Result.UNFINISHED for rec in contents.records.values())


def test_an_old_journal_without_interleave_resumes_in_its_own_order(tmp_path: Path) -> None:
    # New runs interleave; a journal written before the field existed keeps its order (and its schedule digest).
    spec = spec_of("random", "greedy", "minimax", games=4)
    assert spec.interleave and RunSpec.from_dict(spec.to_dict()).interleave
    with Run.create(spec, tmp_path / "new") as run:
        assert [(g.first, g.second) for g in run.pending()][:4] == [
            ("random", "greedy"),
            ("greedy", "random"),
            ("random", "minimax"),
            ("minimax", "random"),
        ]
    with Run.resume(tmp_path / "new") as again:
        assert again.spec.interleave
    # The journal of an older quarto-arena: no "interleave" in its configuration, the digest of its own order.
    with Run.create(spec, tmp_path / "old"):
        pass
    from quarto_arena.arena.journal import Journal

    config = read_journal(tmp_path / "old" / JOURNAL_NAME).config
    del config["interleave"]
    old_schedule = RunSpec.from_dict(config).schedule()
    config["schedule"] = {"games": old_schedule.total, "digest": old_schedule.digest()}
    (tmp_path / "old" / JOURNAL_NAME).unlink()
    Journal.create(tmp_path / "old" / JOURNAL_NAME, config).close()
    with Run.resume(tmp_path / "old") as old:
        assert not old.spec.interleave
        assert [(g.first, g.second) for g in old.pending()][:4] == [
            ("random", "greedy"),
            ("greedy", "random"),
            ("random", "greedy"),
            ("greedy", "random"),
        ]


def test_no_interleave_is_kept_in_the_configuration(tmp_path: Path) -> None:
    out = tmp_path / "t"
    args = ["random", "greedy", "r2=random", "--games", "4", "--tc", "st=0.05", "-j", "2", "-q", "--out", str(out)]
    r = run_cli("tournament", *args, "--no-interleave")
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "config.json").read_text())["interleave"] is False
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    by_id = sorted(games, key=lambda g: g["game_id"])
    assert [{g["first"], g["second"]} for g in by_id[:4]] == [{"random", "greedy"}] * 4  # encounter by encounter
