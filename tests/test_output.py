"""What the CLI shows: tables in every format, cutechess-style lines, the live status line."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from quarto_arena.arena.output import (
    TABLE_FORMATS,
    PlainProgress,
    TtyProgress,
    format_table,
    game_comment,
    make_progress,
    results_table,
)
from quarto_arena.arena.records import GameRecord, Result, Termination
from quarto_arena.arena.stats import TableRows

ROWS = TableRows(
    ("rank", "player", "rating", "margin", "score", "los_next", "pool", "regularized"),
    ((1, "greedy", 120.456, math.inf, 0.75, 0.9, 0, False), (2, "random", -120.456, None, 0.25, None, 0, False)),
)


def test_text_tables_round_and_drop_nothing_they_are_given() -> None:
    text = format_table(ROWS, "simple")
    assert "120.5" in text and "75.0%" in text and "inf" in text
    assert text.splitlines()[0].split()[:2] == ["rank", "player"]


@pytest.mark.parametrize("fmt", TABLE_FORMATS)
def test_every_format_renders(fmt: str) -> None:
    assert "greedy" in format_table(ROWS, fmt)


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


def record(game_id: int, result: Result, termination: Termination = Termination.NORMAL) -> GameRecord:
    return GameRecord("random", "greedy", result, termination, game_id=game_id)


def test_plain_lines_in_the_style_of_cutechess() -> None:
    out = io.StringIO()
    p = PlainProgress(out, total=40)
    p.started(17, "random", "greedy")
    p.finished(record(17, Result.SECOND_WINS, Termination.TIME_FORFEIT))
    p.finished(record(18, Result.SECOND_WINS))
    p.finished(record(19, Result.DRAW))
    assert out.getvalue().splitlines() == [
        "Started game 17 of 40 (random vs greedy)",
        "Finished game 17 (random vs greedy): 0-1 {time forfeit}",
        "Finished game 18 (random vs greedy): 0-1 {QUARTO! by greedy}",
        "Finished game 19 (random vs greedy): 1/2-1/2 {draw}",
    ]
    assert game_comment(record(1, Result.FIRST_WINS)) == "QUARTO! by random"


def test_live_status_line_redraws_in_place() -> None:
    out = io.StringIO()
    p = TtyProgress(out, total=4)
    p.started(1, "a", "b")
    p.finished(record(1, Result.FIRST_WINS))
    p.message("warning: something")
    p.note("LLR 1.0")
    p.close()
    text = out.getvalue()
    assert "\r\x1b[K" in text
    assert "warning: something\n" in text
    assert "1/4 games" in p.status() and "LLR 1.0" in p.status()
    assert text.endswith("\n")


def test_make_progress_picks_by_terminal() -> None:
    assert isinstance(make_progress(io.StringIO(), 3), PlainProgress)
    assert isinstance(make_progress(io.StringIO(), 3, live=True), TtyProgress)
