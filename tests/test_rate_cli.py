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
