"""``quarto-arena sprt`` and ``rate`` as CI sees them: real engines, the documented exit statuses, one-line errors."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest
from quarto_arena.arena.journal import JOURNAL_NAME, read_journal
from quarto_arena.arena.pgn import pgn_text
from quarto_arena.arena.records import GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.run import SprtProgress, SprtTracker
from quarto_arena.arena.stats import Sprt, SprtDecision, SprtModel

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]
CRASH = f"crash={sys.executable} -m quarto_arena.engines.testing.crash_on_go"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def sprt(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run("sprt", *args, "--elo0", "0", "--elo1", "10", "--tc", "st=1", "--concurrency", "2", "--out", str(out))


def replay(directory: Path) -> list[SprtDecision]:
    """The test's decision after each pair, recomputed from the journal in journal order."""
    test = Sprt(0, 10, model=SprtModel.NORMALIZED)
    records = read_journal(directory / JOURNAL_NAME).records.values()
    tracker = SprtTracker(test, "new")
    return [p.status.decision for r in records if (p := tracker.add(r)) is not None]


def test_the_progress_line_gives_bounds_when_every_pair_is_won() -> None:
    # A strong NEW sweeps its first pairs. Elo from the 6 games, as the match line: the one-sided bound
    # 0.05 ** (1/6) = 0.6070 on the score is +75.5. nElo from the 3 pairs: the bound 0.05 ** (1/3) = 0.3684 on the
    # pair score, with the least favourable pair scores (1/4 and 1/2) at that mean, gives t = -1.0542, nElo -259.0.
    penta = (0, 0, 0, 0, 3)
    line = SprtProgress(Sprt(0, 10).pentanomial(penta), penta, 6, 0, 0).line()
    assert line.endswith(" | elo > +75.5 (95% bound, trinomial), nelo > -259.0 (95% bound, pentanomial)")


@pytest.mark.slow
def test_a_stronger_new_engine_passes_at_the_first_pair_past_the_bound(c_bot: Path, tmp_path: Path) -> None:
    r = sprt(tmp_path / "s", f"new={c_bot}", "base=random")
    assert r.returncode == 0, r.stderr
    assert "H1 accepted: new passes" in r.stdout
    # A game of the next pair still being played when the test decided was stopped because it is not needed: said
    # as such, not as a run that went wrong.
    assert "abandoned" not in r.stderr
    if (tmp_path / "s" / "aborted.jsonl").exists():
        assert "the test decided with 1 game still being played: stopped there, not counted" in r.stderr
    llr = float(r.stdout.split("LLR ")[1].split()[0])
    assert llr >= 2.944
    # The run stopped at the first pair whose LLR reached the bound: that pair is the journal's last game, and no
    # earlier pair had reached either bound.
    decisions = replay(tmp_path / "s")
    assert decisions[-1] is SprtDecision.H1
    assert all(d is SprtDecision.CONTINUE for d in decisions[:-1])
    ids = list(read_journal(tmp_path / "s" / JOURNAL_NAME).records)
    partner = ids[-1] + 1 if ids[-1] % 2 else ids[-1] - 1
    assert partner in ids[:-1]  # the last game written completed its pair
    standings = json.loads((tmp_path / "s" / "standings.json").read_text())
    assert standings["sprt"]["verdict"] == "h1" and standings["sprt"]["llr"] == pytest.approx(llr, abs=1e-3)
    # One interval per figure, named, the same in the terminal, the SPRT's line, the standings files and the report.
    elo, nelo = standings["match"]["elo"], standings["match"]["nelo"]
    assert "95%" in elo and "trinomial" in elo and "pentanomial" in nelo
    assert f"Elo difference: {elo}, nElo: {nelo}, LOS: {standings['match']['los']}" in r.stdout
    assert f"| elo {elo}, nelo {nelo}" in r.stdout
    assert f"Elo difference: {elo}, nElo: {nelo}" in (tmp_path / "s" / "standings.txt").read_text()
    report = (tmp_path / "s" / "report.html").read_text()
    assert html.escape(f"elo {elo}, nelo {nelo}", quote=False) in report


@pytest.mark.slow
def test_a_regression_fails_the_build(c_bot: Path, tmp_path: Path) -> None:
    r = sprt(tmp_path / "s", "new=random", f"base={c_bot}")
    assert r.returncode == 1, r.stderr
    assert "H0 accepted: new fails" in r.stdout
    assert float(r.stdout.split("LLR ")[1].split()[0]) <= -2.944
    decisions = replay(tmp_path / "s")
    assert decisions[-1] is SprtDecision.H0 and set(decisions[:-1]) <= {SprtDecision.CONTINUE}
    # Resuming a decided test plays nothing and decides the same.
    games = len(read_journal(tmp_path / "s" / JOURNAL_NAME).records)
    again = run("sprt", "--resume", str(tmp_path / "s"))
    assert again.returncode == 1 and "H0 accepted" in again.stdout
    assert len(read_journal(tmp_path / "s" / JOURNAL_NAME).records) == games


def test_no_decision_within_max_games(c_bot: Path, tmp_path: Path) -> None:
    r = sprt(tmp_path / "s", f"new={c_bot}", f"base={c_bot}", "--max-games", "4", "--progress-every", "1")
    assert r.returncode == 4, r.stderr
    assert "no decision after 4 games" in r.stdout
    assert r.stderr.count("Finished game") == 4


@pytest.mark.slow
def test_a_crashing_engine_is_an_engine_failure(c_bot: Path, tmp_path: Path) -> None:
    r = sprt(tmp_path / "s", CRASH, f"base={c_bot}")
    assert r.returncode == 3, r.stderr
    # What stopped it is the command's error line, on standard error; standard output keeps the result so far.
    assert "engine failure" not in r.stdout and "LLR " in r.stdout
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("quarto-arena: error: stopped by game")]
    assert "disconnect" in line and "crash" in line.lower() and "--resume" in line, line
    # Lenient: the crashes are losses and the test goes on (here until --max-games), restarting the engine.
    lenient = sprt(tmp_path / "l", CRASH, f"base={c_bot}", "--lenient", "--max-games", "4")
    assert lenient.returncode == 4, lenient.stderr
    assert "W 0 L 4 D 0" in lenient.stdout
    assert lenient.stderr.count("disconnect") >= 4


@pytest.mark.slow
def test_an_engine_that_cannot_start(tmp_path: Path) -> None:
    r = sprt(tmp_path / "s", "dead=sh -c 'exit 5'", "random")
    assert r.returncode == 3
    assert "dead" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["random", "greedy", "--elo0", "5", "--elo1", "5"], "must be below --elo1"),
        (["random", "greedy", "--elo0", "10", "--elo1", "0"], "--elo0 10 must be below --elo1 0"),
        (["random", "greedy", "--elo0", "0", "--elo1", "5", "--alpha", "1.5"], "alpha=1.5"),
        (["random", "greedy", "--elo0", "0", "--elo1", "5", "--model", "bayes"], "choose normalized or logistic"),
        (["random", "greedy", "--elo0", "0", "--elo1", "5", "--tc", "soon"], "time control 'soon'"),
        (["random", "./nowhere", "--elo0", "0", "--elo1", "5"], "does not exist"),
        (["random", "greedy", "--elo0", "0"], "--elo1"),
        (["random", "--elo0", "0", "--elo1", "5"], "sprt takes two engines, not 1"),
        (["random", "greedy", "--elo0", "0", "--elo1", "300"], "SPRT bound outside the possible range"),
    ],
)
def test_sprt_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    r = run("sprt", *args, "--out", str(tmp_path / "s"))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def record(game_id: int, first: str, second: str, result: Result, termination: Termination) -> GameRecord:
    return GameRecord(
        first=first,
        second=second,
        result=result,
        termination=termination,
        turns=(TurnRecord("3", 0), TurnRecord("c47", 5, "value 10")),
        game_id=game_id,
        started="2026-01-02T03:04:05+00:00",
    )


@pytest.mark.slow
def test_rate_reads_our_pgn_and_counts_forfeits(tmp_path: Path) -> None:
    games = [
        record(1, "a", "b", Result.FIRST_WINS, Termination.NORMAL),
        record(2, "b", "a", Result.FIRST_WINS, Termination.TIME_FORFEIT),
        record(3, "a", "c", Result.DRAW, Termination.NORMAL),
        record(4, "c", "b", Result.SECOND_WINS, Termination.ILLEGAL_TURN),
    ]
    one = tmp_path / "one.pgn"
    two = tmp_path / "two.pgn"
    one.write_text("\n".join(pgn_text(g, "test") for g in games[:2]))
    two.write_text("\n".join(pgn_text(g, "test") for g in games[2:]))
    r = run("rate", str(one), str(two), "--format", "csv")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0].split(",")
    rows = {line.split(",")[1]: dict(zip(header, line.split(","), strict=True)) for line in lines[1:]}
    assert set(rows) == {"a", "b", "c"}
    assert rows["a"]["games"] == "3" and rows["a"]["forfeits"] == "1" and rows["a"]["time_forfeit"] == "1"
    assert rows["c"]["illegal_turn"] == "1"
    assert rows["b"]["forfeits"] == "0"
    j = run("rate", str(one), str(two), "--format", "json")
    assert j.returncode == 0 and j.stdout.lstrip().startswith("[")
    text = run("rate", str(one), str(two), "--format", "github")
    assert text.returncode == 0 and text.stdout.startswith("| rank")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01binary", "NUL"),
        (b'[Event "x"]\n[White "a"]\n[Black "b"]\n\n1. 3 c47 *\n', "Result"),
        (b'[Event "x"]\n[Result "2-0"]\n', "unknown result '2-0'"),
        (b'[Event "x\n', ""),
        (b'[Event "x"]\n[White "a"]\n[Black "b"]\n[Result "1-0"]\n\n1. 3 {never closed\n', "comment"),
    ],
)
def test_rate_bad_pgn_is_a_one_line_error(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.pgn"
    bad.write_bytes(content)
    r = run("rate", str(bad))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert str(bad) in r.stderr and message in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.slow
def test_rate_missing_file_and_no_games(tmp_path: Path) -> None:
    r = run("rate", str(tmp_path / "none.pgn"))
    assert r.returncode == 2 and "none.pgn" in r.stderr and "Traceback" not in r.stderr
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    r = run("rate", str(empty))
    assert r.returncode == 2 and "no finished games" in r.stderr
    r = run("rate", str(empty), "--format", "yaml")
    assert r.returncode == 2 and "unknown --format 'yaml'" in r.stderr
