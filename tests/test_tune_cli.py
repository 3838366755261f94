"""quarto-arena tune end to end, with real engine processes: the files and the lines a tune ends with, the journal
exactly as asked after SIGKILLs at random moments and --resume, theta held to fishtest's update recomputed from the
games alone, an engines file, a cluster, and every bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import csv
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from procs import CLI, cli, wait_until
from quarto_arena.arena.journal import JOURNAL_NAME, read_journal
from quarto_arena.arena.tune.spsa import perturbation

TUNABLE = f"{sys.executable} -m quarto_arena.engines.testing.tunable"
TWO = ["--param", "P1=450,0,1000,60,0.05", "--param", "P2=300,0,1000,60,0.05"]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def oracle_theta(state: dict[str, Any], games: list[dict[str, Any]]) -> dict[str, float]:
    """theta from the games alone, in journal order, by fishtest's formulas (spsa_workflow.py: c = c_end N^gamma,
    a = r_end c_end^2 (A + N)^alpha, c_k = c / k^gamma, R_k = a / (A + k)^alpha / c_k^2, theta += R_k c_k result
    flip, clipped), the flips drawn as the tune draws them."""
    n = state["pairs_total"]
    alpha, gamma, big_a = state["gains"]["alpha"], state["gains"]["gamma"], state["gains"]["A"]
    params = state["params"]
    theta = {name: float(p["start"]) for name, p in params.items()}
    engine = state["engine"]
    halves: dict[int, dict[str, Any]] = {}
    for game in games:
        k = (game["game_id"] + 1) // 2
        if k not in halves:
            halves[k] = game
            continue
        result = 0
        for g in (halves.pop(k), game):
            points = {"1-0": (1, -1), "0-1": (-1, 1), "1/2-1/2": (0, 0)}[g["result"]]
            result += points[0] if g["first"] == f"{engine}+" else points[1]
        flips = perturbation(state["seed"], k, len(params)).signs
        for (name, p), flip in zip(params.items(), flips, strict=True):
            c = p["c_end"] * n**gamma
            a = p["r_end"] * p["c_end"] ** 2 * (big_a + n) ** alpha
            c_k = c / k**gamma
            r_k = a / (big_a + k) ** alpha / c_k**2
            theta[name] = min(max(theta[name] + r_k * c_k * result * flip, p["min"]), p["max"])
    return theta


def assert_kept_up(directory: Path, slots: int) -> None:
    """Each copy of the engine ran in at most ``slots`` processes while its values changed every game, but for a
    process more for each game it lost by a failure (the referee ends an engine that fails: a time forfeit on a
    loaded machine, say)."""
    games = _lines(directory / "games.jsonl")
    for side in "+-":
        name = f"tunable{side}"
        pids = set(re.findall(r"tunable: pid (\d+)", (directory / "logs" / f"{name}.stderr").read_text()))
        failed = [g for g in games if g["termination"] != "normal" and name in (g["first"], g["second"])]
        assert 1 <= len(pids) <= slots + len(failed), (pids, [(g["game_id"], g["detail"]) for g in failed])


def check_tune_directory(directory: Path, pairs: int) -> dict[str, Any]:
    """Every pair counted once and no more, the files agree with the journal, theta is fishtest's update."""
    contents = read_journal(directory / JOURNAL_NAME)
    assert sorted(contents.records) == list(range(1, 2 * pairs + 1))
    games = _lines(directory / "games.jsonl")
    assert [g["game_id"] for g in games] == list(contents.records)  # journal order
    assert (directory / "games.pgn").read_text().count("[Event ") == 2 * pairs
    state = json.loads((directory / "tune.json").read_text())
    assert state["pairs"] == state["iteration"] == pairs and state["games"] == 2 * pairs and state["complete"]
    expected = oracle_theta(state, games)
    for name, value in state["values"].items():
        assert math.isclose(value, expected[name], rel_tol=1e-9, abs_tol=1e-9), (name, value, expected[name])
        assert state["options"][name] == round(value)
    with (directory / "tune.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == list(range(1, pairs + 1))
    assert sorted(int(r["pair"]) for r in rows) == list(range(1, pairs + 1))
    for name in state["values"]:
        assert float(rows[-1][name]) == state["values"][name]
    # Each game's engines played with their pair's values, which the row of the pair says.
    by_pair = {int(r["pair"]): r for r in rows}
    for g in games:
        row = by_pair[(g["game_id"] + 1) // 2]
        sides = dict(zip((g["first"], g["second"]), g["engines"], strict=True))
        for name in state["values"]:
            assert sides[f"{state['engine']}+"]["options"][name] == row[f"{name}+"]
            assert sides[f"{state['engine']}-"]["options"][name] == row[f"{name}-"]
    return state


def test_a_tune_writes_its_files_and_ends_with_the_values_and_the_sprt_line(tmp_path: Path) -> None:
    out = tmp_path / "t"
    r = cli("tune", TUNABLE, *TWO, "--pairs", "12", "--tc", "st=1", "-j", "2", "--out", str(out), "--seed", "4")
    assert r.returncode == 0, r.stderr
    state = check_tune_directory(out, 12)
    assert set(state) >= {"values", "pairs", "iteration", "params", "engine", "options", "next", "gains", "seed"}
    assert state["params"]["P1"] == {"start": 450.0, "min": 0, "max": 1000, "c_end": 60.0, "r_end": 0.05}
    assert "Tune in" in r.stderr and "tunable (tunable+ against tunable-) over P1, P2; 12 pairs" in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "tunable after 12 of 12 pairs (24 games), tuned:"
    options = f"options: -o P1={state['options']['P1']} -o P2={state['options']['P2']}"
    assert options in lines
    sprt = lines[-1].strip()
    assert sprt.startswith("quarto-arena sprt new=") and f"-o new:P1={state['options']['P1']}" in sprt
    assert "-o base:P1=450 -o base:P2=300 --tc st=1 --elo0 0 --elo1 5" in sprt
    assert_kept_up(out, 2)  # a process per game at once
    report = (out / "report.html").read_text()
    assert "Tune: tunable over P1, P2" in report and 'data-page="tune-report"' in report
    (out / "report.html").unlink()
    r = cli("report", str(out))  # written again from the journal, as any run's
    assert r.returncode == 0 and r.stdout.strip() == str(out / "report.html"), r.stderr
    again = (out / "report.html").read_text()
    assert 'data-page="tune-report"' in again and f"-o P1={state['options']['P1']}" in again


def test_sigkill_at_random_moments_then_resume_counts_every_pair_once(tmp_path: Path) -> None:
    """The crash-safety promise of a tune: an arena killed twice with SIGKILL while pairs are being played (and
    maybe while tune.json is being replaced), resumed each time, ends with exactly the pairs asked for and the theta
    of the games it counted."""
    out = tmp_path / "t"
    pairs = 60
    rng = random.Random(os.getpid())
    args = ["tune", TUNABLE, *TWO, "--pairs", str(pairs), "--tc", "st=1", "-j", "3", "--out", str(out), "-q"]
    journal = out / JOURNAL_NAME
    for attempt in range(2):
        proc = subprocess.Popen([*CLI, *args], stderr=subprocess.DEVNULL, start_new_session=True)
        size = 3000 * (attempt + 1)
        try:
            wait_until(lambda size=size: journal.exists() and journal.stat().st_size > size, proc=proc)
            time.sleep(rng.random() * 0.3)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        counted = len(read_journal(journal).records)
        assert counted < 2 * pairs, "the tune ended before the kill: give it more pairs"
        args = ["tune", "--resume", str(out), "-q"]
    r = cli(*args, timeout=300)
    assert r.returncode == 0, r.stderr
    check_tune_directory(out, pairs)


def test_a_tune_of_an_engine_from_an_engines_file_keeps_its_options(tmp_path: Path) -> None:
    engines = tmp_path / "engines.toml"
    engines.write_text(
        f'[[engine]]\nname = "tuned"\ncommand = "{TUNABLE}"\n[engine.options]\nSeed = 7\nP3 = 700\n'
        '[[engine]]\nname = "other"\ncommand = "greedy"\n'
    )
    out = tmp_path / "t"
    r = cli("tune", "tuned", "--engines", str(engines), *TWO, "--pairs", "3", "--tc", "st=1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    for game in _lines(out / "games.jsonl"):
        for ident in game["engines"]:
            assert ident["options"]["Seed"] == "7" and ident["options"]["P3"] == "700"
    assert f"new=tuned base=tuned --engines {engines}" in r.stdout
    assert "-o Seed=7 -o P3=700" in r.stdout


def test_resume_refuses_what_the_journal_keeps_and_other_runs(tmp_path: Path) -> None:
    out = tmp_path / "t"
    r = cli("tune", TUNABLE, *TWO, "--pairs", "2", "--tc", "st=1", "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    for extra in (["--param", "P1=1,0,10"], ["--pairs", "4"], [TUNABLE], ["--tc", "st=2"], ["--spsa-gamma", "0.2"]):
        r = cli("tune", "--resume", str(out), *extra)
        assert r.returncode == 2, (extra, r.stderr)
        assert r.stderr.count("\n") == 1 and "the journal keeps them" in r.stderr, r.stderr
    play = tmp_path / "play"
    assert cli("play", "random", "greedy", "--games", "2", "--tc", "st=1", "--out", str(play), "-q").returncode == 0
    r = cli("tune", "--resume", str(play))
    assert r.returncode == 2 and f"{play} holds a match, not a tune: continue it with quarto-arena play" in r.stderr
    r = cli("play", "--resume", str(out))
    assert r.returncode == 2 and f"{out} holds a tune, not a match: continue it with quarto-arena tune" in r.stderr
    r = cli("tune", "--resume", str(out), "-q")  # a finished tune: nothing to play, the same values again
    assert r.returncode == 0 and "tunable after 2 of 2 pairs" in r.stdout


PICKY = """
import sys
from quarto_arena.engines.greedy import GreedyBot
from quarto_arena.protocol.bot import run
from quarto_arena.protocol.uqi import OptionSpec, OptionType


class Picky(GreedyBot):
    options = (*GreedyBot.options, OptionSpec("X", OptionType.SPIN, "50", 0, 100))

    def set_option(self, name, value):
        if name == "X" and value > 90:
            raise ValueError("X above 90 breaks me")
        super().set_option(name, value)


run(Picky())
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--param", "Nope=5,0,10"], "--param Nope: tunable declares no option Nope (its spin options: Seed, P1,"),
        (["--param", "P1=1200,0,1000"], "--param P1: START 1200 is outside [0, 1000]"),
        (["--param", "P1=5,10,10"], "--param P1: MIN 10 must be below MAX 10"),
        (["--param", "P1=5,0,2000"], "--param P1: the range [0, 2000] is outside the declared one [0, 1000]"),
        (["--param", "P1=5,0,10,20"], "--param P1: C_END 20 must be above 0 and at most the range MAX - MIN = 10"),
        (["--param", "P1=5,0,10,2,-1"], "--param P1: R_END -1 cannot be negative"),
        (["--param", "P1=5,0,10", "--pairs", "0"], "--pairs must be at least 1, not 0"),
        (["--param", "P1=5,0,10", "-o", "P1=3"], "--param P1: the option is also set with -o"),
        ([], "tune needs at least one --param"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "t"
    given = [*args] if "--pairs" in args else [*args, "--pairs", "10"]
    r = cli("tune", TUNABLE, *given, "--out", str(out))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("quarto-arena: error: "), r.stderr
    assert message in r.stderr, r.stderr
    assert not out.exists()


def test_bad_engines_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "t"
    r = cli("tune", "perfect", "--param", "Search=1,0,10", "--pairs", "4", "--out", str(out))
    assert r.returncode == 2 and "option Search is a combo; tune takes spin options" in r.stderr, r.stderr
    picky = tmp_path / "picky.py"
    picky.write_text(PICKY)
    r = cli("tune", f"{sys.executable} {picky}", "--param", "X=50,0,100", "--pairs", "4", "--out", str(out))
    assert r.returncode == 2, r.stderr
    assert "--param X: picky refuses X=100" in r.stderr and "X above 90 breaks me" in r.stderr, r.stderr
    assert "tune a range whose every value the engine takes" in r.stderr and r.stderr.count("\n") == 1
    r = cli(
        "tune", f"{sys.executable} {tmp_path / 'none.py'}", "--param", "X=50,0,100", "--pairs", "4", "--out", str(out)
    )
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr  # an engine that cannot start: exit 3
    r = cli("tune", TUNABLE, "greedy", "--param", "P1=5,0,10", "--pairs", "4", "--out", str(out))
    assert r.returncode == 2 and "tune takes one engine, not 2: an engine command with spaces is one word" in r.stderr
    r = cli("tune", TUNABLE, "--param", "P1=5,0,10", "--out", str(out))
    assert r.returncode == 2 and "tune needs --pairs N" in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.extra("dask")
def test_a_tune_on_a_local_cluster(tmp_path: Path) -> None:
    out = tmp_path / "t"
    r = cli(
        "tune",
        TUNABLE,
        *TWO,
        "--pairs",
        "10",
        "--tc",
        "st=1",
        "--cluster",
        "local:2",
        "--out",
        str(out),
        "-q",
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    check_tune_directory(out, 10)
    assert_kept_up(out, 2)  # the workers kept their engines warm: a process per copy and worker


@pytest.mark.extra("web")
def test_a_live_page_address_in_use_is_the_only_line_with_no_header_before_it(tmp_path: Path) -> None:
    # tune printed "Tune in ...; 4 pairs, 0 already played" before its --web found the port taken, as the run
    # commands did until they announced only once listening (test_play_cli).
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = cli(
            "tune",
            TUNABLE,
            *TWO,
            "--pairs",
            "4",
            "--tc",
            "st=1",
            "--web",
            f"127.0.0.1:{port}",
            "--out",
            str(tmp_path / "t"),
        )
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith("quarto-arena: error: ") and str(port) in line and "in use" in line, line
