"""What the CLI shows: tables in every format, cutechess-style lines, the live status line."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from quarto_arena.arena import output
from quarto_arena.arena.engine import EngineConfig
from quarto_arena.arena.output import (
    MARGIN_NOTE,
    TABLE_FORMATS,
    ProgressEvery,
    RunView,
    format_table,
    game_comment,
    parse_progress_every,
    rating_notes,
    results_table,
)
from quarto_arena.arena.records import GameRecord, Result, Termination
from quarto_arena.arena.run import GameFinished, GameStarted, Notice, RunKind, RunOutcome, RunSpec
from quarto_arena.arena.schedule import Opening, ScheduledGame
from quarto_arena.arena.stats import RatingTable, ScoredGame, TableRows, rate, rating_rows

ROWS = TableRows(
    ("rank", "player", "rating", "margin", "score", "los_next", "pool", "regularized"),
    ((1, "greedy", 120.456, math.inf, 0.75, 0.9, 0, False), (2, "random", -120.456, None, 0.25, None, 0, False)),
)


def test_text_tables_round_and_drop_nothing_they_are_given() -> None:
    text = format_table(ROWS, "simple")
    assert "120.5" in text and "75.0%" in text and "inf" in text
    assert text.splitlines()[0].split()[:2] == ["rank", "player"]


@pytest.mark.parametrize("fmt", TABLE_FORMATS)
def test_every_format_renders_every_cell(fmt: str) -> None:
    text = format_table(ROWS, fmt).replace("\\_", "_").replace("\\%", "%")  # LaTeX escapes these
    for name in ("greedy", "random", "rank", "player", "rating", "margin", "los_next"):
        assert name in text, (fmt, name)
    if fmt in ("csv", "json"):
        assert "120.456" in text and "0.75" in text
    else:
        assert "120.5" in text and "-120.5" in text and "75.0%" in text and "90.0%" in text and "inf" in text
        assert "120.456" not in text
    assert text.index("greedy") < text.index("random")  # rows keep their order


def test_csv_and_json_keep_raw_numbers() -> None:
    rows = list(csv.reader(io.StringIO(format_table(ROWS, "csv"))))
    assert rows[0][:3] == ["rank", "player", "rating"]
    assert rows[1][2] == "120.456"
    assert rows[2][3] == ""
    data = json.loads(format_table(ROWS, "json"))
    assert data[0]["rating"] == 120.456
    assert data[0]["margin"] is None  # JSON has no infinity
    assert data[1]["los_next"] is None


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown table format 'nope'"):
        format_table(ROWS, "nope")


def test_results_table_adds_forfeits_and_drops_empty_columns() -> None:
    table = results_table(ROWS, {"random": {Termination.TIME_FORFEIT: 2}, "greedy": {}})
    assert "pool" not in table.headers and "regularized" not in table.headers
    assert table.headers[-2:] == ("forfeits", "time_forfeit")
    assert table.rows[0][-2:] == (0, 0)
    assert table.rows[1][-2:] == (2, 2)


def test_the_regularized_column_is_shown_only_where_it_tells_ratings_apart_and_a_note_says_what_it_is() -> None:
    # The README's first tournament: perfect wins every game, so every rating of the one pool needs the virtual draw.
    one_sided = [ScoredGame("perfect", other, 1.0) for other in ("random", "greedy") for _ in range(4)]
    one_sided += [ScoredGame("greedy", "random", 1.0), ScoredGame("random", "greedy", 1.0)]
    table = rate(one_sided)
    assert all(p.regularized for p in table.players)
    assert "regularized" not in results_table(rating_rows(table)).headers
    notes = rating_notes(table).splitlines()
    assert notes[0] == MARGIN_NOTE and notes[1].startswith("every rating is regularized: a one-sided result")
    # Two pools, one of them one-sided: the column says which ratings lean on the prior.
    mixed = rate([*one_sided, ScoredGame("x", "y", 1.0), ScoredGame("y", "x", 0.5)])
    shown = results_table(rating_rows(mixed))
    assert "regularized" in shown.headers
    column = shown.headers.index("regularized")
    assert {row[1]: row[column] for row in shown.rows}["x"] is False
    assert rating_notes(mixed).splitlines()[1].startswith("regularized: a one-sided result")
    # None needs it: no column and no note.
    fair = rate([ScoredGame("x", "y", 1.0), ScoredGame("y", "x", 1.0)])
    assert "regularized" not in results_table(rating_rows(fair)).headers and rating_notes(fair) == MARGIN_NOTE


def record(game_id: int, result: Result, termination: Termination = Termination.NORMAL) -> GameRecord:
    return GameRecord("random", "greedy", result, termination, game_id=game_id)


def finished(view: RunView, game_id: int, result: Result, termination: Termination = Termination.NORMAL) -> None:
    view(GameStarted(ScheduledGame(game_id, 1, (game_id - 1) // 2, "random", "greedy", Opening())))
    view(GameFinished(record(game_id, result, termination), game_id, 40))


def test_one_line_per_game_in_the_style_of_cutechess() -> None:
    out = io.StringIO()
    view = RunView(out, RunKind.MATCH, ["random", "greedy"], [], 40, live=False, every=ProgressEvery(games=1))
    finished(view, 17, Result.SECOND_WINS, Termination.TIME_FORFEIT)
    finished(view, 18, Result.SECOND_WINS)
    finished(view, 19, Result.DRAW)
    view.close()
    assert out.getvalue().splitlines() == [
        "Finished game 17 (random vs greedy): 0-1 {time forfeit}",
        "Finished game 18 (random vs greedy): 0-1 {greedy completes an alignment}",
        "Finished game 19 (random vs greedy): 1/2-1/2 {draw: the board is full}",
    ]
    assert game_comment(record(1, Result.FIRST_WINS)) == "random completes an alignment"
    # A record says what ended it, as its PGN's last comment and its JSON Lines detail do: the same words here.
    claimed = replace(record(2, Result.SECOND_WINS), detail="greedy claims the missed alignment")
    assert game_comment(claimed) == "greedy claims the missed alignment"


def test_status_lines_every_n_games_say_score_rate_and_eta() -> None:
    out = io.StringIO()
    view = RunView(out, RunKind.MATCH, ["random", "greedy"], [], 40, live=False, every=ProgressEvery(games=5))
    for k in range(1, 13):
        finished(view, k, Result.FIRST_WINS if k % 3 else Result.DRAW)
    view.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # after 5 and 10 games, and the last status at the end
    assert "5/40 games (12%)" in lines[0] and "random +4 -0 =1 (90.0%)" in lines[0]
    assert "12/40 games (30%)" in lines[2] and "games/s, ETA " in lines[2]


def test_a_long_run_off_a_terminal_writes_a_few_dozen_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The goal: a 20,000-game run writes under 100 lines to a pipe (here at 200 games/s, 100 s in all)."""
    clock = [0.0]
    monkeypatch.setattr(output.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    view = RunView(out, RunKind.MATCH, ["random", "greedy"], [], 20_000, live=False)
    for k in range(1, 20_001):
        clock[0] += 0.005
        view(GameStarted(ScheduledGame(k, 1, (k - 1) // 2, "random", "greedy", Opening())))
        r = record(k, Result.SECOND_WINS, Termination.TIME_FORFEIT if k % 50 == 0 else Termination.NORMAL)
        view(GameFinished(r, k, 20_000))
        if r.termination.is_failure:
            view(Notice(f"game {k}: time forfeit", r))
    view.close()
    lines = out.getvalue().splitlines()
    assert 10 <= len(lines) < 100, len(lines)
    assert sum("warning:" in line for line in lines) == 10  # the first failures in full, the rest counted
    assert "forfeits 400" in lines[-1] and "20000/20000 games (100%)" in lines[-1]


def test_quiet_shows_warnings_only() -> None:
    out = io.StringIO()
    view = RunView(out, RunKind.MATCH, ["random", "greedy"], [], 40, quiet=True)
    finished(view, 1, Result.DRAW)
    view(Notice("journal: dropped a torn last record"))
    view.close()
    assert out.getvalue() == "warning: journal: dropped a torn last record\n"


def test_live_status_line_redraws_in_place() -> None:
    out = io.StringIO()
    view = RunView(out, RunKind.MATCH, ["a", "b"], [], 4, live=True)
    view(GameStarted(ScheduledGame(1, 1, 0, "a", "b", Opening())))
    view(GameFinished(GameRecord("a", "b", Result.FIRST_WINS, Termination.NORMAL, game_id=1), 1, 4))
    view(Notice("something"))
    view.close()
    text = out.getvalue()
    assert "\r\x1b[K" in text
    assert "warning: something\n" in text
    assert "1/4 games (25%)" in text and "a +1 -0 =0 (100.0%)" in text
    assert text.endswith("\n")


def test_progress_every_values() -> None:
    assert parse_progress_every("100") == ProgressEvery(games=100, seconds=None)
    assert parse_progress_every("30s") == ProgressEvery(games=None, seconds=30.0)
    assert parse_progress_every("2m,500") == ProgressEvery(games=500, seconds=120.0)
    for bad in ("", "0", "1.5", "soon", "10x", "-3"):
        with pytest.raises(ValueError, match="--progress-every"):
            parse_progress_every(bad)


def test_a_finished_run_is_rated_once_for_all_it_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fits: list[int] = []
    real = output.rating_table

    def counted(records: Sequence[GameRecord], names: Sequence[str]) -> RatingTable:
        fits.append(len(records))
        return real(records, names)

    monkeypatch.setattr(output, "rating_table", counted)
    engines = tuple(EngineConfig(name, command=("x",)) for name in ("a", "b", "c"))
    spec = RunSpec(RunKind.TOURNAMENT, engines)
    pairs = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")] * 3
    games = tuple(GameRecord(w, b, Result.FIRST_WINS, Termination.NORMAL, game_id=i) for i, (w, b) in enumerate(pairs))
    outcome = RunOutcome(spec, games, len(games))
    # What the CLI does where a run ends: one fit, passed to all that shows it.
    rated = output.rate_run(outcome)
    output.write_standings(tmp_path, outcome, rated)
    shown = output.final_report(outcome, rated)
    shown_csv, shown_json = (output.final_report(outcome, rated, fmt) for fmt in ("csv", "json"))
    assert fits == [len(games)]  # standings.txt, .csv, .json and the report on the terminal: one fit
    assert (tmp_path / "standings.txt").read_text() == shown + "\n"
    assert (tmp_path / "standings.csv").read_text() == shown_csv + "\n"
    assert json.loads((tmp_path / "standings.json").read_text())["table"] == json.loads(shown_json)
    # They show the table they are given: another run's games, fitted anew, give another report.
    flipped = RunOutcome(spec, tuple(replace(g, result=Result.SECOND_WINS) for g in games), len(games))
    assert output.final_report(flipped, output.rate_run(flipped)) != shown
    assert fits == [len(games)] * 2
