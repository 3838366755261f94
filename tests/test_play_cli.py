"""``quarto-arena play`` and ``engines`` as a user runs them: a real process, real engines, a real directory."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from procs import STEADY_TC
from quarto_arena.arena.journal import JOURNAL_NAME, read_journal
from quarto_arena.arena.pgn import read_games
from quarto_arena.engines.registry import BUILTIN

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]


def cli(*args: str, timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def test_play_two_games_prints_the_summary_and_keeps_the_games(tmp_path: Path) -> None:
    out = tmp_path / "m"
    r = cli("play", "random", "greedy", "--games", "2", "--tc", STEADY_TC, "--out", str(out), "--progress-every", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3, r.stdout
    m = re.fullmatch(r"Score of random vs greedy: (\d) - (\d) - (\d)  \[(\d\.\d{3})\] 2", lines[0])
    assert m is not None, lines[0]
    wins, losses, draws = map(int, m.groups()[:3])
    assert wins + losses + draws == 2
    assert float(m.group(4)) == pytest.approx((wins + draws / 2) / 2, abs=1e-3)
    assert lines[1].startswith("Elo difference: ") and ", nElo: " in lines[1] and ", LOS: " in lines[1]
    assert re.fullmatch(r"Pairs \[LL, LD, WL\+DD, WD, WW\]: \[\d, \d, \d, \d, \d\]  \(1 pair\)", lines[2])
    # One vocabulary everywhere: the per-game lines say what ended the game, as tournament and PGN do.
    finished = [line for line in r.stderr.splitlines() if line.startswith("Finished game")]
    assert len(finished) == 2
    for line in finished:
        comment = r"draw: the board is full|\w+ completes an alignment"  # as the PGN's last comment says it
        assert re.fullmatch(rf"Finished game \d \(\w+ vs \w+\): (1-0|0-1|1/2-1/2) \{{({comment})\}}", line), line
    # The match is kept like a tournament: journal, PGN, JSON Lines, logs, the configuration and the standings.
    assert sorted(read_journal(out / JOURNAL_NAME).records) == [1, 2]
    assert len(list(read_games(out / "games.pgn"))) == 2
    assert json.loads((out / "config.json").read_text())["kind"] == "match"
    assert (out / "standings.txt").read_text().startswith("Score of random vs greedy")
    standings = json.loads((out / "standings.json").read_text())
    assert standings["match"]["wins"] == wins and standings["complete"] is True
    assert (out / "standings.csv").read_text().startswith("rank,player,")
    assert (out / "logs" / "greedy.stderr").exists()


def test_a_run_that_failed_before_its_first_game_does_not_block_the_corrected_command(tmp_path: Path) -> None:
    out = str(tmp_path / "o9b")
    r = cli("play", "greedy", "random", "-o", "greedy:Sead=3", "--games", "2", "--tc", "st=0.2", "--out", out)
    assert r.returncode == 3 and "unknown option 'Sead'" in r.stderr, r.stderr
    r = cli("play", "greedy", "random", "-o", "greedy:Seed=3", "--games", "2", "--tc", "st=0.2", "--out", out)
    assert r.returncode == 0, r.stderr
    assert f"{out} held a run that counted no game: started over in it" in r.stderr
    assert sorted(read_journal(Path(out) / JOURNAL_NAME).records) == [1, 2]
    # A run with counted games is kept: the same command again is refused, with the way on.
    r = cli("play", "greedy", "random", "-o", "greedy:Seed=3", "--games", "2", "--tc", "st=0.2", "--out", out)
    assert r.returncode == 2 and "holds a run already: continue it with --resume" in r.stderr, r.stderr


def test_names_options_debug_transcript_and_identity(tmp_path: Path) -> None:
    out = tmp_path / "m"
    r = cli(
        "play",
        "first=greedy",
        "second=minimax",
        "--option",
        "second:Depth=1",
        "-o",
        "Seed=3",
        "--games",
        "1",
        "--tc",
        "10+0.1",
        "--random-openings",
        "2",
        "--debug",
        str(tmp_path / "debug"),
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Score of first vs second: ")
    transcript = (tmp_path / "debug" / "uqi-transcript.log").read_text().splitlines()
    # Every line: a time stamp, the engine's name, the direction, the line.
    assert any(re.fullmatch(r"\d+\.\d{6} first > uqi 1", line) for line in transcript)
    assert any(re.fullmatch(r"\d+\.\d{6} second < uqiok 1", line) for line in transcript)
    assert any(line.endswith("second > setoption name Depth value 1") for line in transcript)
    assert any(line.endswith("first > setoption name Seed value 3") for line in transcript)
    gos = [line for line in transcript if " first > go " in line]
    assert gos and all("time" in g and "otime" in g for g in gos)
    # Every turn of the game is in it, as sent and as answered (the compiled turn path leaves traced games alone).
    (record,) = (json.loads(line) for line in (out / "games.jsonl").read_text().splitlines())
    played = len(record["turns"]) - 2  # the random opening's two turns were not asked of the engines
    assert len([line for line in transcript if re.search(r" (first|second) > go ", line)]) == played
    assert len([line for line in transcript if re.search(r" (first|second) < turn ", line)]) == played
    # The random opening: the engines' first position already has two turns in it.
    assert any(re.search(r" > position startpos turns \w \w{3}", line) for line in transcript)
    (game,) = read_games(out / "games.pgn")
    assert game.tags["WhiteEngine"] == "Greedy 1.0" and game.tags["BlackOptions"] == "Seed=3 Depth=1"
    (line,) = (out / "games.jsonl").read_text().splitlines()
    engines = json.loads(line)["engines"]
    assert engines[1]["options"] == {"Depth": "1", "Seed": "3"} and engines[1]["protocol"] == 1


def test_same_engine_twice_gets_distinct_names(tmp_path: Path) -> None:
    r = cli("play", "random", "random", "--games", "1", "--tc", "st=0.2", "--out", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Score of random vs random-2")


@pytest.mark.slow
def test_default_directories_never_collide_and_a_rerun_says_how_to_go_on(tmp_path: Path) -> None:
    args = ("play", "random", "greedy", "--games", "1", "--tc", STEADY_TC, "--quiet")
    first, second = (subprocess.Popen([*CLI, *args], cwd=tmp_path, stderr=subprocess.PIPE, text=True) for _ in "ab")
    assert first.wait(60) == 0 and second.wait(60) == 0
    runs = sorted((tmp_path / "out").iterdir())
    assert len(runs) == 2 and all(d.name.startswith("play-") for d in runs)
    assert first.stderr is not None and first.stderr.read() == ""  # --quiet: no "Match in ..." line, no progress
    assert all((d / JOURNAL_NAME).exists() for d in runs)
    again = cli(*args, "--out", str(runs[0]))
    assert again.returncode == 2
    assert f"--resume {runs[0]}" in again.stderr and "--force" in again.stderr
    forced = cli(*args, "--out", str(runs[0]), "--force")
    assert forced.returncode == 0, forced.stderr
    assert len(read_journal(runs[0] / JOURNAL_NAME).records) == 1
    # --quiet: nothing on stderr (not even the header line): only the result, on stdout.
    assert forced.stderr == "", forced.stderr


def test_interrupted_play_prints_the_score_so_far_and_resumes(tmp_path: Path) -> None:
    import signal
    import time

    out = tmp_path / "m"
    proc = subprocess.Popen(
        [*CLI, "play", "random", "greedy", "--games", "400", "--tc", "st=0.5", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (out / JOURNAL_NAME).exists() or len(read_journal(out / JOURNAL_NAME).records) < 2:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert stdout.startswith("Score of random vs greedy: ")
    assert "interrupted by SIGTERM after" in stderr and f"quarto-arena play --resume {out}" in stderr
    assert "Traceback" not in stderr
    done = len(read_journal(out / JOURNAL_NAME).records)
    assert json.loads((out / "standings.json").read_text())["games"] == done
    assert json.loads((out / "standings.json").read_text())["interrupted"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tc", "fast"], "time control 'fast': base time 'fast' is not a number of seconds"),
        (["--tc", "st=1,10+1"], "BASE+INC and st= exclude each other"),
        (["--variant", "huge"], "unknown variant 'huge'; expected standard or advanced"),
        (["--attributes", "color,smell"], "unknown attribute 'smell'"),
        (["--games", "0"], "games per encounter must be at least 1"),
        (["--format", "nope"], "unknown --format 'nope'; choose one of"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    r = cli("play", "random", "greedy", *args, "--out", str(tmp_path / "m"))
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert message in r.stderr


def test_wrong_number_of_engines_exits_2(tmp_path: Path) -> None:
    r = cli("play", "random", "--out", str(tmp_path / "m"))
    assert r.returncode == 2
    assert r.stderr.strip() == "quarto-arena: error: play takes two engines, not 1"


def test_resume_is_refused_by_another_commands_run(tmp_path: Path) -> None:
    out = str(tmp_path / "t")
    r = cli("tournament", "random", "greedy", "--games", "2", "--tc", "st=0.1", "-q", "--out", out)
    assert r.returncode == 0, r.stderr
    r = cli("play", "--resume", out)
    assert (r.returncode, r.stderr.strip()) == (
        2,
        f"quarto-arena: error: {out} holds a tournament, not a match: continue it with quarto-arena tournament"
        f" --resume {out}",
    )


def test_an_unquoted_command_is_told_to_be_quoted(tmp_path: Path) -> None:
    r = cli("play", "greedy", "python3", "./bot.py", "--out", str(tmp_path / "m"))
    assert (r.returncode, r.stderr.strip()) == (
        2,
        "quarto-arena: error: play takes two engines, not 3: an engine command with spaces is one word, quote it"
        ' ("python3 ./bot.py", "./bot --fast")',
    )


def test_a_script_without_the_execute_bit_is_told_how_to_run(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text("print('hello')\n")
    bot.chmod(0o644)
    expected = (
        f"quarto-arena: error: engine '{bot}': {bot} is not an executable file: chmod +x {bot} (its first line a #!"
        f' line), or run it with its interpreter: "python3 {bot}"'
    )
    for args in (["play", "random", str(bot), "--out", str(tmp_path / "m")], ["check", str(bot)]):
        r = cli(*args)
        assert (r.returncode, r.stderr.strip()) == (2, expected), args


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["play", "-engine", "cmd=./my_bot", "-engine", "cmd=greedy"], ["-engine", "NAME=./my_bot"]),
        (["tournament", "a", "b", "-each", "tc=40/60", "-rounds", "3"], ["-each", "--tc", "-rounds", "--rounds N"]),
        (["play", "a", "b", "-pgnout", "x.pgn"], ["-pgnout", "--out DIR"]),
        (["play", "a", "b", "-concurrency", "4"], ["-concurrency", "-j N"]),
    ],
)
def test_cutechess_words_are_answered_with_the_equivalent_option(args: list[str], words: list[str]) -> None:
    r = cli(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cutechess-cli's or fastchess's option" in r.stderr
    for word in words:
        assert word in r.stderr, (word, r.stderr)


@pytest.mark.slow
def test_a_missing_engine_is_the_same_error_in_every_command(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing-bot")
    expected = f"quarto-arena: error: engine '{missing}': {missing} does not exist"
    for args in (
        ["play", "random", missing],
        ["tournament", "random", missing],
        ["sprt", missing, "random", "--elo0", "0", "--elo1", "5"],
        ["check", missing],
    ):
        r = cli(*args, "--out", str(tmp_path / "m")) if args[0] != "check" else cli(*args)
        assert (r.returncode, r.stderr.strip()) == (2, expected), args
    unclosed = cli("play", "random", "'./bot --x", "--out", str(tmp_path / "m"))
    assert unclosed.returncode == 2
    assert "No closing quotation" in unclosed.stderr


@pytest.mark.slow
def test_engine_that_fails_the_handshake_exits_3(tmp_path: Path) -> None:
    # An engine that exits at once: a disconnect during the handshake.
    r = cli("play", "random", f"quiet={sys.executable} -c pass", "--games", "1", "--out", str(tmp_path / "m"))
    assert r.returncode == 3
    assert re.search(
        r"quarto-arena: error: quiet \(pid \d+\): exited during the handshake \(uqi -> uqiok\) \(exit code 0\)\n\Z",
        r.stderr,
    )


def test_engines_lists_the_builtins() -> None:
    r = cli("engines")
    assert r.returncode == 0
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert names == list(BUILTIN)


def test_help_version_and_flags() -> None:
    short = cli("play", "-h")
    assert short.returncode == 0 and short.stdout == cli("play", "--help").stdout
    assert "<bool>" not in short.stdout and "--strict / --lenient" in short.stdout
    version = cli("--version")
    assert version.returncode == 0 and re.fullmatch(r"quarto-arena \d+\.\d+\.\d+\S*\n", version.stdout)
    columns = cli("tournament", "--help").stdout
    assert "los_next" in columns and "margin" in columns


@pytest.mark.parametrize("where", ["--listen", pytest.param("--web", marks=pytest.mark.extra("web"))])
def test_an_address_in_use_is_the_only_line_with_no_header_before_it(tmp_path: Path, where: str) -> None:
    # With another server on the port, the run said "Match in out/r1: ...; 2 games" and then that it cannot listen.
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        engines, address = (
            (["greedy", "remote:mine"], f"tcp://127.0.0.1:{port}")
            if where == "--listen"
            else (["greedy", "random"], f"127.0.0.1:{port}")
        )
        r = cli("play", *engines, where, address, "--games", "2", "--out", str(tmp_path / "r1"))
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith("quarto-arena: error: ") and str(port) in line and "in use" in line, line
    assert not (tmp_path / "r1" / "games.jsonl").exists() or not (tmp_path / "r1" / "games.jsonl").read_text()
