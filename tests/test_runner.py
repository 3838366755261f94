"""The runner as the commands use it: variants through it, refusals mid-run, signals, exit statuses, limits."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from procs import STEADY_TC, processes_in_groups, wait_until
from quarto_arena.arena import cli
from quarto_arena.arena.engine import Deadlines
from quarto_arena.arena.journal import JOURNAL_NAME, read_journal
from quarto_arena.arena.records import Termination
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import GameFinished, Run, RunKind, RunSpec, TurnPlayed
from quarto_arena.arena.schedule import OpeningBook
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.transport.zeromq import CONNECT_TIMEOUT
from quarto_arena.protocol.notation import parse_turns, parse_variant
from quarto_arena.protocol.rules import SQUARE_LINES, Position, iter_alignments

CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]

#: A bot that plays its first game, then refuses the variant of its second (SPEC §4.3: error newgame ...).
REFUSES_LATER = textwrap.dedent(
    """
    from quarto_arena.protocol.bot import Bot, UnsupportedVariant, run

    class Moody(Bot):
        name = "Moody"
        games = 0

        def new_game(self, variant):
            self.games += 1
            if self.games > 2:  # the arena's own check before the first game, then game 1, then no more
                raise UnsupportedVariant("not in the mood")

        def search(self, position, ctx):
            return position.legal_turns()[0]

    run(Moody(), [])
    """
)

#: A bot that takes its time, so that a signal finds games in flight.
SLOW = textwrap.dedent(
    """
    import time
    from quarto_arena.protocol.bot import run

    def choose(position, ctx):
        time.sleep(0.05)
        return position.legal_turns()[-1]

    run(choose, [])
    """
)


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_advanced_variant_games_through_the_runner(c_bot: Path) -> None:
    variant = parse_variant("advanced", "all", "auto")
    spec = RunSpec(
        RunKind.MATCH,
        tuple(resolve_engines([f"c={c_bot}", "greedy"])),
        games=16,
        concurrency=2,
        game=GameSettings(TimeControl.parse("st=1"), variant, OpeningBook(random_turns=2, seed=3, variant=variant)),
    )
    with Run.in_memory(spec) as run:
        outcome = asyncio.run(run.run())
    assert len(outcome.records) == 16
    squares_only = 0
    for record in outcome.records:
        assert record.termination is Termination.NORMAL, record.detail
        assert record.variant == "advanced color,shape,height,fill auto"
        final = Position.start(variant).play(parse_turns([t.token for t in record.turns]))
        assert final.is_over
        lines = set(iter_alignments(final))
        if lines and lines <= set(SQUARE_LINES):
            squares_only += 1  # won by a 2x2 square, which standard rules would not count
    assert squares_only >= 1


@pytest.mark.slow
def test_an_engine_that_refuses_newgame_mid_run_stops_it_with_exit_3(tmp_path: Path) -> None:
    bot = tmp_path / "moody.py"
    bot.write_text(REFUSES_LATER)
    out = tmp_path / "m"
    # A time forfeit would restart moody, whose count of games would start again: at STEADY_TC it cannot lose one.
    r = run_cli("play", f"moody={sys.executable} {bot}", "greedy", "--games", "4", "--tc", STEADY_TC, "--out", str(out))
    assert r.returncode == 3, r.stderr
    assert "engine error" in r.stderr and "not in the mood" in r.stderr and "--resume" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("quarto-arena: error: stopped by game 2: engine error")
    assert sorted(read_journal(out / JOURNAL_NAME).records) == [1]  # the refused game is not counted
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert [f["termination"] for f in failures] == ["engine error"]


@pytest.mark.serial  # a second signal "0.1 s" later, or once reaped: under a loaded xdist run it lands in start-up
@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "signum", "again"),
    [
        ("tournament", signal.SIGINT, ""),
        ("tournament", signal.SIGTERM, ""),
        ("tournament", signal.SIGHUP, ""),
        ("play", signal.SIGINT, ""),
        ("sprt", signal.SIGINT, ""),
        ("tournament", signal.SIGINT, "0.1 s"),
        ("tournament", signal.SIGTERM, "0.1 s"),
        ("tournament", signal.SIGHUP, "0.1 s"),
        ("tournament", signal.SIGINT, "reaped"),
        ("tournament", signal.SIGTERM, "reaped"),
        ("tournament", signal.SIGHUP, "reaped"),
    ],
)
def test_a_signal_stops_every_command_cleanly(command: str, signum: int, again: str, tmp_path: Path) -> None:
    """Ctrl-C, SIGTERM and SIGHUP: the score so far, the resume line, exit 128+N, no engine left, nothing lost.
    With ``again``, a second signal (0.1 s after the first, or once the arena has reaped every engine, when the
    standings are still to write) hurries the stop but loses none of that."""
    bot = tmp_path / "slow.py"
    bot.write_text(SLOW)
    out = tmp_path / "run"
    engines = [f"s1={sys.executable} {bot}", f"s2={sys.executable} {bot}"]
    if command == "tournament":
        engines.append("greedy")
    extra = ["--elo0", "0", "--elo1", "5"] if command == "sprt" else ["--games", "200"]
    proc = subprocess.Popen(
        [*CLI, command, *engines, *extra, "--tc", "st=1", "--concurrency", "2", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not (out / JOURNAL_NAME).exists() or len(read_journal(out / JOURNAL_NAME).records) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    engine_groups = {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == proc.pid}
    assert engine_groups
    os.kill(proc.pid, signum)
    if again == "0.1 s":
        time.sleep(0.1)
    elif again == "reaped":
        while _children(proc.pid) and proc.poll() is None:
            time.sleep(0.001)
    if again:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signum)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum, stderr
    name = signal.Signals(signum).name
    assert f"interrupted by {name} after" in stderr and f"quarto-arena {command} --resume {out}" in stderr
    assert stderr.count("interrupted") == 1  # one line says it
    assert "Traceback" not in stderr
    assert stdout.strip()  # the standings so far
    assert processes_in_groups(engine_groups) == []
    done = read_journal(out / JOURNAL_NAME).records
    assert json.loads((out / "standings.json").read_text())["games"] == len(done)
    # The games in flight were abandoned and kept apart, as far as they went: not counted, played again.
    aborted = [json.loads(line) for line in (out / "aborted.jsonl").read_text().splitlines()]
    assert aborted and all(a["termination"] == "aborted" for a in aborted)
    assert not {a["game_id"] for a in aborted} & set(done)
    assert "in progress abandoned" in stderr
    # Resuming plays on from exactly there (here: stopped again at once, with nothing lost).
    again = subprocess.Popen(
        [*CLI, command, "--resume", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    # Ctrl-C once the resumed run plays (its engines started), not after a guess of how long start-up takes.
    deadline = time.monotonic() + 60
    while not _children(again.pid) and again.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    again.send_signal(signal.SIGINT)
    _, stderr = again.communicate(timeout=30)
    assert again.returncode == 130, stderr
    assert len(read_journal(out / JOURNAL_NAME).records) >= len(done)


@pytest.mark.slow
def test_a_second_signal_while_python_exits_keeps_the_first_ones_status(tmp_path: Path) -> None:
    """Python's finalization puts the default action back on signals with a handler: a second SIGTERM then killed
    the arena (status -15) after it had printed its resume line with status 143. Here the second one is sent from
    inside the finalization itself, so the race is certain."""
    bot = tmp_path / "slow.py"
    bot.write_text(SLOW)
    out = tmp_path / "run"
    # A cycle made at exit (this handler runs after the arena's own: last in, first out) is collected by the last
    # garbage collection, after the signal module is torn down; its __del__ then sends the second signal.
    late_signal = (
        "import atexit, os, signal, sys\n"
        "class Late:\n"
        "    def __del__(self): os.kill(os.getpid(), signal.SIGTERM)\n"
        "def arm():\n"
        "    late = Late(); late.cycle = late\n"
        "atexit.register(arm)\n"
        "from quarto_arena.arena.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    engines = [f"s1={sys.executable} {bot}", f"s2={sys.executable} {bot}"]
    proc = subprocess.Popen(
        [sys.executable, "-c", late_signal, "play", *engines, "--games", "200", "--tc", "st=1", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_until(lambda: (out / JOURNAL_NAME).exists() and read_journal(out / JOURNAL_NAME).records, proc=proc)
    os.kill(proc.pid, signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "interrupted by SIGTERM after" in stderr


def _children(pid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == pid]


def _parent(proc_dir: Path) -> int:
    try:
        return int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def test_an_internal_error_is_exit_70_and_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from quarto_arena.arena import display

    def broken(*_: object, **__: object) -> str:
        raise RuntimeError("a bug\nover two lines")

    monkeypatch.setattr(display, "render", broken)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["show", "startpos"])
    assert exit_info.value.code == 70
    err = capsys.readouterr().err
    assert err == "quarto-arena: internal error (please report it): RuntimeError: a bug over two lines\n"


@pytest.mark.slow
def test_concurrency_above_the_cpus_is_a_warning_and_beyond_the_descriptors_an_error(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    r = run_cli(
        "play",
        "random",
        "greedy",
        "--games",
        "2",
        "--tc",
        "st=0.2",
        "--concurrency",
        str(cpus + 1),
        "--out",
        str(tmp_path / "m"),
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    assert f"warning: --concurrency {cpus + 1} on {cpus} CPUs" in r.stderr
    r = run_cli("play", "random", "greedy", "--concurrency", "100000000", "--out", str(tmp_path / "n"))
    assert r.returncode == 2, r.stderr
    assert "--concurrency 100000000" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "n" / JOURNAL_NAME).exists()


@pytest.mark.slow
def test_log_limit_caps_each_engines_stderr_log(tmp_path: Path) -> None:
    flood = f"chatty={sys.executable} -m quarto_arena.engines.testing.flood_lines stderr 0.5"
    out = tmp_path / "m"
    r = run_cli("play", flood, "greedy", "--games", "2", "--tc", "st=5", "--log-limit", "64K", "--out", str(out))
    assert r.returncode == 0, r.stderr
    log = (out / "logs" / "chatty.stderr").read_bytes()
    assert 64 * 1024 <= len(log) < 64 * 1024 + 1024  # the limit, and the line that marks the cut
    assert b"reached its limit of 65536 bytes" in log[-1024:]
    assert json.loads((out / "config.json").read_text())["log_limit"] == 65536
    bad = run_cli("play", "random", "greedy", "--log-limit", "lots", "--out", str(tmp_path / "n"))
    assert bad.returncode == 2 and "--log-limit 'lots'" in bad.stderr


ANSI_BOT = textwrap.dedent(
    """
    import sys
    for line in sys.stdin:
        if line.startswith("uqi"):
            print("id name \\x1b[31mRED\\x1b[0m", flush=True)
            print("\\x1b[2Jjunk", flush=True)
            print("uqiok 1", flush=True)
        elif line.startswith("quit"):
            break
    """
)


def test_what_an_engine_sends_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    """Escape sequences from an engine (its id name, its lines) are shown escaped by check, never sent as they are."""
    bot = tmp_path / "ansi.py"
    bot.write_text(ANSI_BOT)
    r = run_cli("check", f"ansi={sys.executable} {bot}")
    assert r.returncode == 1
    assert "\x1b" not in r.stdout + r.stderr
    assert "(\ufffd[31mRED\ufffd[0m)" in r.stdout  # its id name, each control character replaced
    assert "'\\x1b[2Jjunk' before uqiok" in r.stdout  # a line it sent, quoted with its escapes written out


def test_a_run_asked_for_turns_reports_each_engine_turn_before_its_game_ends(c_bot: Path) -> None:
    spec = RunSpec(
        RunKind.MATCH,
        tuple(resolve_engines([f"c={c_bot}", "greedy"])),
        games=4,
        concurrency=2,
        game=GameSettings(TimeControl.parse("st=1"), book=OpeningBook(random_turns=2, seed=5)),
    )
    seen: dict[int, list[TurnPlayed]] = {}
    finished: set[int] = set()

    def event(e: object) -> None:
        if isinstance(e, TurnPlayed):
            assert e.game_id not in finished  # a game's turns come before it is counted
            seen.setdefault(e.game_id, []).append(e)
        elif isinstance(e, GameFinished):
            finished.add(e.record.game_id)

    with Run.in_memory(spec) as run:
        outcome = asyncio.run(run.run(event, turns=True))
    assert len(outcome.records) == 4
    for record in outcome.records:
        turns = seen[record.game_id]
        opening = len(record.opening)
        assert opening == 2
        assert [t.ply for t in turns] == list(range(opening, len(record.turns)))  # the engines' turns, not the book's
        assert [t.turn for t in turns] == list(record.turns[opening:])
        position = Position.start()
        for ply, turn in enumerate(record.turns):
            position = position.apply(parse_turns([turn.token])[0])
            if ply >= opening:
                assert turns[ply - opening].position == position


def test_a_run_not_asked_for_turns_reports_none(c_bot: Path) -> None:
    spec = RunSpec(RunKind.MATCH, tuple(resolve_engines([f"c={c_bot}", "greedy"])), games=2)
    events: list[object] = []
    with Run.in_memory(spec) as run:
        asyncio.run(run.run(events.append))
    assert not [e for e in events if isinstance(e, TurnPlayed)]
    assert len([e for e in events if isinstance(e, GameFinished)]) == 2


@pytest.mark.serial
@pytest.mark.slow
def test_an_unreachable_unnamed_zeromq_engine_fails_at_once(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    r = run_cli("play", "greedy", f"tcp://127.0.0.1:{port}", "--out", str(tmp_path / "m"))
    assert r.returncode == 3, r.stderr
    # Refused within the connection's own short window, not after the engine's start-up deadline.
    why = f"(connection refused or no such host within {CONNECT_TIMEOUT:g} s)"
    assert f"cannot connect to tcp://127.0.0.1:{port} {why}" in r.stderr and r.stderr.count("\n") == 1
    assert Deadlines().startup > CONNECT_TIMEOUT
    assert not (tmp_path / "m").exists()  # nothing was started
