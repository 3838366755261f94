"""`quarto-arena show` and `perft` as a user runs them: real processes, real exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def _vectors() -> list[dict[str, object]]:
    vectors: list[dict[str, object]] = json.loads((DATA / "perft.json").read_text())
    # Under strict claims the counts differ from auto ones (SPEC.md §2.5): the command must pass --claim on.
    claims: list[dict[str, object]] = json.loads((DATA / "perft_claims.json").read_text())
    vectors += [v for v in claims if v["claims"] == "strict"]
    return [v for v in vectors if int(str(v["nodes"])) <= 25_000]


@pytest.mark.slow
@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: f"{v['position']}-{v.get('claims', 'auto')}-{v['depth']}")
def test_perft_command_reproduces_vectors(vector: dict[str, object]) -> None:
    attributes = ",".join(vector["attributes"])  # type: ignore[arg-type]
    out = run(
        "perft",
        str(vector["position"]),
        str(vector["depth"]),
        "--variant",
        str(vector["variant"]),
        "--attributes",
        attributes,
        "--claim",
        str(vector.get("claims", "auto")),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == str(vector["nodes"])


def test_perft_divide_sums_to_total() -> None:
    out = run("perft", "..../...6/a.../.0.. b", "2", "--divide")
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0
    assert sum(int(line.split()[1]) for line in lines[:-1]) == int(lines[-1]) == 20592


def test_show_draws_attributes_hand_and_pieces_left() -> None:
    out = run("show", "f410/..../...9/.c7. b", "--no-color")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "f [DTo]" in text  # dark square tall hollow
    assert "0 (Ls*)" in text  # light round short solid
    assert "in hand   b (DTo)  dark round tall hollow" in text
    assert "left      2 (LT*)" in text
    assert "[ ] square" in text  # the legend


def test_show_reports_the_end_of_a_game() -> None:
    out = run("show", "startpos", "--turns", "3 c47 d4e d35 a41 b4", "--no-color")
    assert out.returncode == 0, out.stderr
    assert "game over: the last player to move won (a4-b4-c4-d4)" in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["perft", "f410/..../...9/.c7 b", "2"], "row 1 has 3 cells"),
        (["perft", "f410/..../...9/.c7. z", "1"], "'z' is not a piece in hand"),
        (["perft", "ff10/..../...9/.c7. b", "1"], "piece f is on a4 and b4"),
        (["perft", "startpos", "x"], "depth"),
        (["perft", "startpos", "1", "--variant", "huge"], "unknown variant 'huge'"),
        (["perft", "startpos", "1", "--attributes", "color,taste"], "unknown attribute 'taste'"),
        (["perft", "startpos", "1", "--claim", "maybe"], "unknown claim mode 'maybe'"),
        (["show", "startpos", "--turns", "3 c4!e"], "no piece may follow the '!'"),
        (["show", "startpos", "--turns", "3 c47 c4e"], "c4 is occupied"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_status_2(args: list[str], message: str) -> None:
    out = run(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert message in out.stderr
