"""``quarto-arena new-bot LANG DIR``: each starter is written, built with the commands it prints, passes ``check``
and beats ``random`` in at least 90% of 40 games at st=0.05."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from procs import STEADY_MARGIN, free_port
from quarto_arena.arena.compliance import format_report, run_check
from quarto_arena.arena.engine import EngineConfig
from quarto_arena.engines.starters import STARTERS, write_starter

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]
GAMES = 40


def cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def printed_commands(out: str) -> tuple[list[str], list[str], str, str]:
    """What ``new-bot`` printed: the build commands, the run command, the check and the play commands."""
    lines = [line.strip() for line in out.splitlines()]
    build = [line for line in lines if line.startswith("cd ")]
    run = lines[lines.index(next(line for line in lines if line.startswith("Run it"))) + 1]
    check = next(line for line in lines if line.startswith("quarto-arena check "))
    play = next(line for line in lines if line.startswith("quarto-arena play "))
    return build, shlex.split(run), check, play


@pytest.mark.slow
@pytest.mark.parametrize("language", list(STARTERS))
def test_starter_builds_complies_and_beats_random(language: str, tmp_path: Path) -> None:
    starter = STARTERS[language]
    for tool in starter.tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    bot_dir = tmp_path / f"my-{language}-bot"
    r = cli("new-bot", language, str(bot_dir))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert sorted(p.relative_to(bot_dir).as_posix() for p in bot_dir.rglob("*") if p.is_file()) == sorted(starter.files)
    build, run, check_line, play_line = printed_commands(r.stdout)
    assert len(build) == len(starter.build)
    for command in build:
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"

    report = asyncio.run(run_check(EngineConfig(language, command=tuple(run))))
    assert report.complies, "\n".join(format_report(report))

    # The play command as printed, with this checkout's quarto-arena and a run directory of the test's. The starter
    # spends a quarter of its 50 ms; a 1 s margin keeps CI's load (other tests, cargo and javac beside) from
    # forfeiting its games on time: this test is about its play (it lost 5 of 40 on time once in CI, to a 50 ms margin).
    args = shlex.split(play_line)[1:]
    assert args[-4:] == ["--games", str(GAMES), "--tc", "st=0.05"]
    r = cli(*args, *STEADY_MARGIN, "--out", str(tmp_path / "run"), "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    score = re.search(r"^Score of (\S+) vs random: (\d+) - (\d+) - (\d+)", r.stdout, re.M)
    assert score is not None, r.stdout
    wins, losses, draws = map(int, score.group(2, 3, 4))
    assert wins + losses + draws == GAMES
    assert wins >= 0.9 * GAMES, r.stdout
    assert "Forfeits" not in r.stdout, r.stdout
    # The same command line names the engine in check (NAME=COMMAND, quoted for the shell).
    assert shlex.split(check_line)[2] == shlex.split(play_line)[2]


def test_new_bot_refuses_an_unknown_language_and_a_directory_in_use(tmp_path: Path) -> None:
    r = cli("new-bot", "cobol", str(tmp_path / "x"))
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "quarto-arena: error: no starter bot for 'cobol'; choose from python, c, javascript, rust, java"
    )
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "mine.txt").write_text("keep me")
    r = cli("new-bot", "c", str(tmp_path / "used"))
    assert r.returncode == 2
    assert r.stderr.strip() == f"quarto-arena: error: {tmp_path / 'used'} already exists and is not an empty directory"
    assert [p.name for p in (tmp_path / "used").iterdir()] == ["mine.txt"]


def test_each_starter_writes_its_templates(tmp_path: Path) -> None:
    templates = Path(__file__).resolve().parent.parent / "engines" / "starters"
    for language, starter in STARTERS.items():
        assert write_starter(language.upper(), tmp_path / language) is starter
        for name in starter.files:
            assert (tmp_path / language / name).read_bytes() == (templates / language / name).read_bytes(), name


def test_the_readme_sdk_example_is_a_whole_bot_that_complies(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "run(CarefulBot())" in b]
    assert len(blocks) == 1, "README.md: the SDK example (CarefulBot) is gone"
    script = tmp_path / "my_bot.py"
    script.write_text(blocks[0])
    report = asyncio.run(run_check(EngineConfig("readme-bot", command=(sys.executable, str(script)))))
    assert report.complies, "\n".join(format_report(report))


@pytest.mark.slow
def test_new_bot_prints_the_way_to_a_ladder(tmp_path: Path) -> None:
    # The author-made key flow, run as printed: the author makes the pair, the operator receives only NAME.key (and
    # has the arena's pair), the bot connects with the printed command and plays the arena's games.
    r = cli("new-bot", "python", str(tmp_path / "pybot"))
    assert r.returncode == 0, r.stderr
    lines = [line.strip() for line in r.stdout.splitlines()]
    keys_line = next(line for line in lines if line.startswith("quarto-arena keys new "))
    assert keys_line == "quarto-arena keys new pybot --dir keys"
    connect_line = next(line for line in lines if "--connect tcp://HOST:PORT" in line)
    assert connect_line.endswith("--name pybot --key keys/pybot.key_secret --server-key arena.key --stay")
    author, operator = tmp_path / "author", tmp_path / "operator"
    author.mkdir()
    assert cli(*shlex.split(keys_line)[1:], cwd=author).returncode == 0
    assert cli("keys", "new", "arena", "--dir", str(operator)).returncode == 0
    shutil.copy(author / "keys" / "pybot.key", operator / "pybot.key")  # only the public half is sent
    shutil.copy(operator / "arena.key", author / "arena.key")
    port = free_port()
    bot = subprocess.Popen(
        shlex.split(connect_line.replace("HOST:PORT", f"127.0.0.1:{port}")),
        cwd=author,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        r = cli(
            "play",
            "remote:pybot",
            "random",
            "--listen",
            f"tcp://127.0.0.1:{port}",
            "--keys",
            str(operator),
            "--games",
            "2",
            "--tc",
            "st=0.1",
            "--out",
            str(tmp_path / "run"),
            "-q",
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.search(r"^Score of pybot vs random: \d+ - \d+ - \d+", r.stdout, re.M), r.stdout
        assert bot.poll() is None  # --stay: it waits for the arena's next run
    finally:
        os.killpg(bot.pid, signal.SIGKILL)
        bot.wait()
