"""`quarto-arena analyse`: a position's value and best turns, and the mistakes in the games of a PGN file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from quarto_arena.arena.analysis import Analyser, summarize
from quarto_arena.arena.pgn import read_games
from quarto_arena.protocol.notation import parse_position, parse_turn
from quarto_arena.protocol.rules import Variant
from quarto_arena.protocol.solver import Solver, Value, Verdict

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]

# A drawn position, 7 empty squares (from the solved vectors): c16 keeps the draw, c11 hands over d4 at once.
DRAWN = "a.4./.3.9/..b5/02.c 7"
HARD = "2.../..../.4../3c.. 9"  # 12 empty squares


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def one_line_error(out: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert out.returncode == code, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("quarto-arena: error: "), out.stderr
    assert "Traceback" not in out.stderr
    for word in words:
        assert word in lines[0]


def pgn(start: str, turns: str, result: str, *, white: str = "alice", black: str = "bob", extra: str = "") -> str:
    return (
        f'[Event "test"]\n[White "{white}"]\n[Black "{black}"]\n[Result "{result}"]\n'
        f'[Variant "standard color,shape,height,fill auto"]\n[StartPosition "{start}"]\n{extra}\n{turns} {result}\n'
    )


# --- a position ------------------------------------------------------------------------------------------------


def test_position_text() -> None:
    out = run("analyse", DRAWN)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "draw, for the player to move"
    assert lines[1] == "best: c16 c1e d41 d4d d4f"


def test_position_json_agrees_with_the_solver() -> None:
    out = run("analyse", "..../..../.e../012. 3", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["value"], data["turns"], data["best"], data["proven"]) == ("win", 1, ["d1"], True)
    out = run("analyse", DRAWN, "--json")
    data = json.loads(out.stdout)
    position = parse_position(DRAWN)
    analysis = Solver(Variant()).analyse(position)
    assert analysis.value is not None
    assert (data["value"], data["turns"]) == (analysis.value.verdict.value, analysis.value.turns)
    assert data["best"] == [str(t) for t in analysis.best]


@pytest.mark.slow
def test_position_variant_options() -> None:
    out = run("analyse", "..../..../..e./0123 4", "--claim", "strict", "--json", "--time", "5")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["proven"] in (True, False)
    strict_win = run("analyse", "..../..../.e../012. 3", "--claim", "strict", "--json")
    assert json.loads(strict_win.stdout)["best"] == ["d1!"]


def test_time_bound_reports_an_unproven_value_and_the_best_turn_found() -> None:
    out = run("analyse", HARD, "--time", "0.01", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["proven"] is False and data["value"] is None and data["turns"] is None
    assert len(data["best"]) == 1
    text = run("analyse", HARD, "--time", "0.01")
    assert text.stdout.splitlines()[:1] == ["unproven within 0.01 s"]
    assert text.stdout.splitlines()[1].startswith("best turn found: ")


def test_position_errors() -> None:
    one_line_error(run("analyse", "..../..../.e../012x 3"), 2, "bad position")
    finished = "..../..../.e../0123 -"
    one_line_error(run("analyse", finished), 2, "the game is over")
    one_line_error(run("analyse", DRAWN, "--time", "0"), 2)
    one_line_error(run("analyse", DRAWN, "--variant", "huge"), 2, "huge")


# --- games -------------------------------------------------------------------------------------------------------


def test_games_find_the_mistake(tmp_path: Path) -> None:
    # alice throws the draw away with c11 (d4 now wins for bob, who takes it); then a clean draw.
    games = pgn(DRAWN, "1. c11 d4", "0-1") + "\n" + pgn(DRAWN, "1. c16", "*", white="bob", black="carol")
    path = tmp_path / "games.pgn"
    path.write_text(games)
    out = run("analyse", str(path))
    assert out.returncode == 0, out.stderr
    assert "game 1 (alice vs bob): turn 1 c11 by alice, 7 empty: draw thrown away (was draw, now loss 2)" in out.stdout
    table = out.stdout.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("engine"))
    rows = {line.split()[0]: line.split() for line in table[header + 2 :]}
    assert rows["alice"][1:] == ["1", "1", "1", "1", "0", "1", "0"]  # games turns mistakes per_game wins draws unproven
    assert rows["bob"][1:] == ["2", "2", "0", "0", "0", "0", "0"]
    assert "carol" not in rows  # no turn of hers was analysed
    annotated = (tmp_path / "games.analysis.pgn").read_text()
    assert "c11 {solver: loss 2, draw thrown away (was draw; best c16 c1e d41 d4d d4f)}" in annotated
    assert "d4 {solver: win 1}" in annotated
    lines = (tmp_path / "games.analysis.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["mistakes"] == [0]
    assert first["turns"][0]["mistake"] == "draw thrown away"
    assert first["turns"][0]["before"] == {"value": "draw", "turns": 7}
    assert first["turns"][0]["best"] == ["c16", "c1e", "d41", "d4d", "d4f"]
    # The annotated file reads back as PGN.
    assert [g.tags["White"] for g in read_games(tmp_path / "games.analysis.pgn")] == ["alice", "bob"]


def test_games_from_and_out(tmp_path: Path) -> None:
    path = tmp_path / "g.pgn"
    path.write_text(pgn(DRAWN, "1. c11 d4", "0-1"))
    out = run("analyse", str(path), "--from", "6", "--out", str(tmp_path / "o"), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert {row["engine"] for row in summary} == {"bob"}  # alice's turn was at 7 empty squares
    assert (tmp_path / "o" / "g.analysis.pgn").is_file() and (tmp_path / "o" / "g.analysis.jsonl").is_file()


def test_a_win_thrown_away(tmp_path: Path) -> None:
    # After c11 bob wins at once with d4; any turn that does not win throws the win away.
    after = parse_position(DRAWN).apply(parse_turn("c11"))
    slip = next(t for t in after.legal_turns() if t.give is not None)
    path = tmp_path / "w.pgn"
    path.write_text(pgn(DRAWN, f"1. c11 {slip}", "*"))
    analyses = list(Analyser().games(read_games(path), Variant()))
    turn = analyses[0].analysed[1]
    assert turn.before == Value(Verdict.WIN, 1)
    assert turn.mistake == "win thrown away"
    solver = Solver(Variant())
    assert "d4" in turn.best  # the win at once, and every slower win
    assert all(solver.turn_value(after, parse_turn(t)).verdict is Verdict.WIN for t in turn.best)  # type: ignore[union-attr]
    assert summarize(analyses)[1].wins_thrown == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "words"),
    [
        (pgn(DRAWN, "1. c11 z9", "*"), ["turn 2 (z9)"]),
        (pgn(DRAWN, "1. c11 c1e", "*"), ["turn 2 (c1e)", "occupied"]),
        (pgn("..x./..../..../.... -", "1. 3", "*"), ["StartPosition"]),
        (pgn(DRAWN, "1. c16", "*").replace("standard color,shape,height,fill auto", "huge all auto"), ["Variant"]),
        ('[Event "x"]\n[White "a"]\n\n1. 3 *\n', ["Result"]),
        ("{ never closed\n", ["comment"]),
    ],
    ids=["bad token", "illegal turn", "bad start", "bad variant", "no result", "unclosed comment"],
)
def test_bad_games_stop_with_one_line(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "bad.pgn"
    path.write_text(text)
    one_line_error(run("analyse", str(path)), 2, *words)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    one_line_error(run("analyse", str(tmp_path / "nothing.pgn")), 2, "no such file")
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    one_line_error(run("analyse", str(empty)), 2, "no games")


def test_jobs_analyse_in_processes_to_the_same_files_with_a_progress_line(tmp_path: Path) -> None:
    games = [pgn(DRAWN, "1. c11 d4", "0-1"), pgn(DRAWN, "1. c16", "*", white="bob", black="carol")] * 3
    path = tmp_path / "games.pgn"
    path.write_text("\n".join(games))
    one = run("analyse", str(path), "--out", str(tmp_path / "one"))
    two = run("analyse", str(path), "-j", "2", "--out", str(tmp_path / "two"), "--progress-every", "1")
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    assert one.stdout == two.stdout  # the mistakes in file order, the same table
    for name in ("games.analysis.pgn", "games.analysis.jsonl"):
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "two" / name).read_text()
    # Off a terminal, as runs: a status line every N games (here each), on standard error.
    progress = [line for line in two.stderr.splitlines() if line.startswith("analysed ")]
    assert [line.split(",")[0] for line in progress] == [f"analysed {k} of 6 games" for k in range(1, 7)]
    assert progress[-1].split(", ")[1] == "3 mistakes"
    assert not any(line.startswith("analysed ") for line in one.stderr.splitlines())  # 6 quick games: no line due


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bad_game_in_a_worker_is_one_line_too(tmp_path: Path, jobs: str) -> None:
    path = tmp_path / "bad.pgn"
    path.write_text(pgn(DRAWN, "1. c16", "*") + "\n" + pgn(DRAWN, "1. c11 c1e", "*"))
    one_line_error(run("analyse", str(path), "-j", jobs), 2, "turn 2 (c1e)", "occupied")


def test_a_win_in_one_turn_is_singular() -> None:
    out = run("analyse", "..../..../.e../012. 3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "win in 1 turn, for the player to move"
