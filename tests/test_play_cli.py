"""``quarto-arena play`` and ``quarto-arena engines`` as a user runs them: a real process, real engines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from quarto_arena.engines.registry import BUILTIN

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_play_two_games_prints_results_and_summary() -> None:
    r = cli("play", "random", "greedy", "--games", "2", "--tc", "st=0.2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 5, r.stdout
    assert re.fullmatch(r"Finished game 1 \(random vs greedy\): (1-0|0-1|1/2-1/2) \{normal\}", lines[0])
    assert re.fullmatch(r"Finished game 2 \(greedy vs random\): (1-0|0-1|1/2-1/2) \{normal\}", lines[1])
    m = re.fullmatch(r"Score of random vs greedy: (\d) - (\d) - (\d)  \[(\d\.\d{3})\] 2", lines[2])
    assert m is not None, lines[2]
    wins, losses, draws = map(int, m.groups()[:3])
    assert wins + losses + draws == 2
    assert float(m.group(4)) == pytest.approx((wins + draws / 2) / 2, abs=1e-3)
    assert lines[3].startswith("Elo difference: ") and ", nElo: " in lines[3] and ", LOS: " in lines[3]
    assert re.fullmatch(r"Pairs \[LL, LD, WL\+DD, WD, WW\]: \[\d, \d, \d, \d, \d\]  \(1 pairs\)", lines[4])


def test_names_debug_transcript_and_logs(tmp_path: Path) -> None:
    r = cli(
        "play",
        "new=greedy",
        "random",
        "--name",
        "first",
        "--name",
        "second",
        "--games",
        "1",
        "--tc",
        "10+0.1",
        "--seed",
        "7",
        "--debug",
        str(tmp_path / "debug"),
        "--log-dir",
        str(tmp_path / "logs"),
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Finished game 1 (first vs second): ")
    transcript = (tmp_path / "debug" / "uqi-transcript.log").read_text().splitlines()
    # Every line: a time stamp, the engine's name, the direction, the line.
    assert any(re.fullmatch(r"\d+\.\d{6} first > uqi 1", line) for line in transcript)
    assert any(re.fullmatch(r"\d+\.\d{6} second < uqiok 1", line) for line in transcript)
    gos = [line for line in transcript if " first > go " in line]
    assert gos and all("time" in g and "otime" in g for g in gos)
    # The seeded opening: the engines' first position already has two turns in it.
    assert any(re.search(r" > position startpos turns \w \w{3}", line) for line in transcript)
    assert (tmp_path / "logs" / "first.stderr.log").exists()


def test_same_engine_twice_gets_distinct_names() -> None:
    r = cli("play", "random", "random", "--games", "1", "--tc", "st=0.2")
    assert r.returncode == 0, r.stderr
    assert "(random vs random-2)" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tc", "fast"], "time control 'fast': base time 'fast' is not a number of seconds"),
        (["--tc", "st=1,10+1"], "BASE+INC and st= exclude each other"),
        (["--variant", "huge"], "unknown variant 'huge'; expected standard or advanced"),
        (["--attributes", "color,smell"], "unknown attribute 'smell'"),
        (["--games", "0"], "--games"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    r = cli("play", "random", "greedy", *args)
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert message in r.stderr


def test_wrong_number_of_engines_exits_2() -> None:
    r = cli("play", "random")
    assert r.returncode == 2
    assert r.stderr.strip() == "quarto-arena: error: play takes two engines, not 1"


def test_engine_that_cannot_start_exits_3(tmp_path: Path) -> None:
    r = cli("play", "random", str(tmp_path / "missing-bot"), "--games", "1")
    assert r.returncode == 3
    assert r.stderr.strip().splitlines() == [
        f"quarto-arena: error: missing-bot: cannot start '{tmp_path / 'missing-bot'}': No such file or directory"
    ]
    unclosed = cli("play", "random", "'./bot --x")
    assert unclosed.returncode == 2
    assert "No closing quotation" in unclosed.stderr


def test_engine_that_fails_the_handshake_exits_3(tmp_path: Path) -> None:
    # An engine that exits at once: a disconnect during the handshake.
    r = cli("play", "random", f"quiet={sys.executable} -c pass", "--games", "1")
    assert r.returncode == 3
    assert re.fullmatch(
        r"quarto-arena: error: quiet \(pid \d+\): exited during the handshake \(uqi -> uqiok\) \(exit code 0\)\n",
        r.stderr,
    )


def test_engines_lists_the_builtins() -> None:
    r = cli("engines")
    assert r.returncode == 0
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert names == list(BUILTIN)
