"""`quarto-arena rate`: the Ordo-matching table from PGN files, --anchor, the crosstable, and bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SMALL = Path(__file__).parent / "data" / "rating" / "small.pgn"
CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def ratings(stdout: str) -> dict[str, float]:
    rows = [line.split() for line in stdout.splitlines()[2:] if line.strip() and line.split()[0].isdigit()]
    return {row[1]: float(row[2]) for row in rows}


def test_rate_prints_ordo_ratings_and_a_crosstable() -> None:
    out = run("rate", str(SMALL))
    assert out.returncode == 0, out.stderr
    r = ratings(out.stdout)
    # ordo -a 0 -z 200.24094 on the same file (tests/data/rating/ordo_small_eloscale.txt), to the 0.1 shown
    assert r == {"MinimaxD4": 259.1, "MCTS1k": 45.6, "MinimaxD2": 24.4, "Greedy": -39.4, "Random": -289.6}
    assert "MinimaxD4               3/4       3/4          3.5/4     4/4" in out.stdout


def test_anchor_shifts_every_rating_by_the_same_amount() -> None:
    plain, anchored = (
        ratings(run("rate", str(SMALL)).stdout),
        ratings(run("rate", str(SMALL), "--anchor", "Random=0").stdout),
    )
    assert anchored["Random"] == 0.0
    shifts = {round(anchored[name] - plain[name], 0) for name in plain}
    assert shifts == {round(0 - plain["Random"], 0)}


@pytest.mark.slow
def test_bad_anchor_and_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pgn"
    bad.write_bytes(b"\xff\xfe garbage\n")
    for args, message in [
        (["--anchor", "Random"], "expected NAME=ELO"),
        (["--anchor", "Nobody=3"], "'Nobody' is not one of the players"),
    ]:
        out = run("rate", str(SMALL), *args)
        assert out.returncode == 2 and message in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    for path in (bad, tmp_path / "missing.pgn"):
        out = run("rate", str(path))
        assert out.returncode == 2 and str(path) in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_endless_input_and_too_many_players_are_one_line_errors_before_the_memory_is_taken(tmp_path: Path) -> None:
    from quarto_arena.arena.stats.rating import MAX_PLAYERS

    out = run("rate", "/dev/zero")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "/dev/zero:1: a line of more than 1 MiB: this is not PGN" in out.stderr
    many = tmp_path / "many.pgn"
    games = [f'[White "w{n}"]\n[Black "b{n}"]\n[Result "1-0"]\n\n1-0\n\n' for n in range(MAX_PLAYERS // 2 + 1)]
    many.write_text("".join(games))
    out = run("rate", str(many))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"more than {MAX_PLAYERS:,} players: rate at most that many at once" in out.stderr


def test_a_large_table_leaves_the_crosstable_out(tmp_path: Path) -> None:
    pgn = tmp_path / "big.pgn"
    names = [f"p{n}" for n in range(50)]
    pgn.write_text(
        "".join(
            f'[White "{a}"]\n[Black "{b}"]\n[Result "{"1-0" if (i + j) % 3 else "0-1"}"]\n\n*\n\n'.replace("*", "1-0")
            for i, a in enumerate(names)
            for j, b in enumerate(names)
            if a != b
        )
    )
    out = run("rate", str(pgn))
    assert out.returncode == 0, out.stderr
    assert "crosstable of 50 players is left out" in out.stderr
    assert len(ratings(out.stdout)) == 50
