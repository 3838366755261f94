"""Warm engines away from home (SPEC §3.4): one process per slot for game after game, a fresh one only when the
arena killed a session, and a bridge that leaves cleanly. Real processes, real sockets on loopback, real journals."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from procs import CLI, STEADY_MARGIN, free_port, started, wait_listening, wait_until
from quarto_arena.engines import testing
from quarto_arena.engines.registry import command
from quarto_arena.protocol.bridge import EngineSlot
from quarto_arena.protocol.slots import Loop

BRIDGE = [sys.executable, "-m", "quarto_arena.protocol.bridge"]
# An SDK bot that holds its turn while the file HOLD exists (and says so by creating HOLD.seen).
HOLDING_BOT = """
import os, sys, time
from quarto_arena.protocol.bot import run

hold = sys.argv[1]

def choose(position, ctx):
    if os.path.exists(hold):
        open(hold + ".seen", "a").close()
        while os.path.exists(hold):
            time.sleep(0.01)
    return position.legal_turns()[0]

run(choose, sys.argv[2:])
"""


@pytest.fixture
def endpoint() -> str:
    return f"tcp://127.0.0.1:{free_port()}"


def arena(endpoint: str, out: Path, *args: str, wait: str = "60") -> list[str]:
    return [*CLI, "tournament", *args, "--listen", endpoint, "--wait", wait, "--out", str(out), "-q"]


def records(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]


def pids(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.serial
def test_a_slow_starting_bot_plays_40_games_on_two_warm_processes(tmp_path: Path, endpoint: str) -> None:
    """The goal of issue 19: 1.5 s to start, its first search 80 ms slower; 40 games at st=0.1 connected in, no
    time forfeit, one process per slot. When the run is over the arena says goodbye and the bridge exits 0.

    A 1 s time margin: what the two warm processes must absorb is the bot's slow start and first search, not the
    machine's load, which at load 14 here cost a game on time with the test running alone (and the kill that
    follows a time forfeit, a third process)."""
    pidfile, out = tmp_path / "pids", tmp_path / "run"
    bot = [*BRIDGE, "--connect", endpoint, "--name", "slow", "--slots", "2", "--", *testing.command("slow_start")]
    bot.append(str(pidfile))
    log = tmp_path / "bridge.log"
    with started(bot, log) as bridge:
        r = subprocess.run(
            arena(
                endpoint,
                out,
                "remote:slow",
                "greedy",
                "--games",
                "40",
                "-j",
                "2",
                "--tc",
                "st=0.1",
                *STEADY_MARGIN,
            ),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        assert bridge.wait(timeout=30) == 0, log.read_text()
    games = records(out)
    assert len(games) == 40
    assert [g["termination"] for g in games if g["termination"] != "normal"] == []
    assert len(pids(pidfile)) == 2  # one process per slot, for all 40 games and the arena's check before them
    assert "the arena says goodbye" in log.read_text()


def test_a_killed_session_gets_a_fresh_process(tmp_path: Path, endpoint: str) -> None:
    """A first search 1 s slower loses on time at st=0.1: the arena kills the session (``kill K``), and the next
    game is played by a fresh process, which loses the same way."""
    pidfile, out = tmp_path / "pids", tmp_path / "run"
    engine = testing.command("slow_start", str(pidfile), "0", "1000")
    bot = [*BRIDGE, "--connect", endpoint, "--name", "slow", "--", *engine]
    with started(bot, tmp_path / "bridge.log"):
        r = subprocess.run(
            arena(endpoint, out, "remote:slow", "greedy", "--games", "3", "--tc", "st=0.1"),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert r.returncode == 0, r.stderr
    assert [g["termination"] for g in records(out)] == ["time forfeit"] * 3
    # The first process, then one after each of the first two kills (the third one's may be cut short by the end).
    assert len(pids(pidfile)) >= 3


def test_stay_keeps_one_warm_process_across_runs(tmp_path: Path, endpoint: str) -> None:
    """With --stay the bridge outlives the arena's run and plays the next one on the same process."""
    pidfile = tmp_path / "pids"
    bot = [*BRIDGE, "--connect", endpoint, "--name", "slow", "--stay", "--", *testing.command("slow_start")]
    bot += [str(pidfile), "0.2", "0"]
    log = tmp_path / "bridge.log"
    with started(bot, log) as bridge:
        # st=1, not 0.1: the subject is the one warm process, and at load 10 (r-2, two CI runs at once) a turn relayed
        # through the bridge missed 100 ms.
        for run in ("one", "two"):
            r = subprocess.run(
                arena(endpoint, tmp_path / run, "remote:slow", "random", "--games", "2", "--tc", "st=1"),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert r.returncode == 0, r.stderr
            assert [g["termination"] for g in records(tmp_path / run)] == ["normal"] * 2
        assert bridge.poll() is None
        bridge.send_signal(signal.SIGTERM)
        assert bridge.wait(timeout=30) == 0
    assert len(pids(pidfile)) == 1
    text = log.read_text()
    assert "staying for its next run" in text
    assert "trying again in" in text  # each attempt to reach the absent arena is one line, with its pause


@pytest.mark.parametrize("signals", [1, 2])
def test_a_signal_finishes_the_game_in_flight_and_a_second_leaves_at_once(
    tmp_path: Path, endpoint: str, signals: int
) -> None:
    """The first SIGTERM lets the game in flight end normally, then the bridge exits 0 (the bot's later games
    are lost by disconnect once it has been away --wait seconds); a second one leaves at once, status 143."""
    script, hold, out = tmp_path / "bot.py", tmp_path / "hold", tmp_path / "run"
    script.write_text(HOLDING_BOT)
    hold.touch()
    bot = [*BRIDGE, "--connect", endpoint, "--name", "holder", "--", sys.executable, str(script), str(hold)]
    log = tmp_path / "bridge.log"
    # The arena first, then the bridge, which reaches it at its first try: started before the arena was up, it
    # tried again after pauses growing to 5 s, and at load 15 here it came after the arena's wait for it (then 2 s)
    # was over, its games lost. The wait (10 s) is from the arena's start to the bot's arrival, and from the
    # bridge's departure to the loss of its next game.
    run = subprocess.Popen(
        arena(endpoint, out, "remote:holder", "random", "--games", "2", "--tc", "st=30", wait="10"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_listening(endpoint, run)
        with started(bot, log) as bridge:
            wait_until(lambda: Path(f"{hold}.seen").exists(), proc=run)
            bridge.send_signal(signal.SIGTERM)
            wait_until(lambda: "taking no new ones" in log.read_text())
            if signals == 2:
                bridge.send_signal(signal.SIGTERM)
                assert bridge.wait(timeout=30) == 143
            hold.unlink()
            if signals == 1:
                assert bridge.wait(timeout=30) == 0, log.read_text()
            _, stderr = run.communicate(timeout=120)
    finally:
        run.kill()
        run.wait()
    assert run.returncode == 0, stderr
    terminations = [g["termination"] for g in records(out)]
    assert terminations == (["normal", "disconnect"] if signals == 1 else ["disconnect", "disconnect"])


# --- one slot, driven directly ---------------------------------------------------------------------------------------


class Driven:
    """An :class:`EngineSlot` on a loop of its own, with what it wrote for the arena."""

    def __init__(self, argv: list[str], **kwargs: object) -> None:
        self.loop = Loop()
        self.slot = EngineSlot(argv, self.loop, **kwargs)  # type: ignore[arg-type]
        self.lines: list[str | None] = []
        self.readies = 0
        self.slot.start(self._ready)
        self.until(lambda: self.readies == 1)

    def _ready(self) -> None:
        self.readies += 1

    def until(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out; lines so far: {self.lines}"
            self.loop.run_once(0.05)

    def session(self, *lines: str, until: str | None = None) -> list[str | None]:
        """Opens a session, sends ``lines``, and runs until a line starting with ``until`` came."""
        self.lines = []
        self.slot.open(self.lines.append)
        for line in lines:
            self.slot.handle(line)
        if until is not None:
            self.until(lambda: any(x is not None and x.startswith(until) for x in self.lines))
        return self.lines

    def end(self) -> None:
        readies = self.readies
        assert not self.slot.handle("quit")
        self.slot.finish()
        self.until(lambda: self.readies == readies + 1)

    def close(self) -> None:
        self.slot.close()
        self.loop.close()


def test_a_warm_process_starts_each_session_clean(tmp_path: Path) -> None:
    """The handshake is answered from the first one, an option the last session set is back to its default, and a
    turn the last session never read (a ``go infinite`` cut by ``quit``) does not reach the next session."""
    pidfile = tmp_path / "pids"
    driven = Driven(testing.command("slow_start", str(pidfile), "0", "0"))
    try:
        first = driven.session("uqi 1", until="uqiok")
        assert first == ["id name SlowStart", "option name Style type combo var calm var wild default calm", "uqiok 1"]
        driven.end()
        game = ["newgame shapes standard attributes color,shape,height,fill claims auto", "position startpos"]
        lines = driven.session("uqi 1", "setoption name Style value wild", *game, "go movetime 100", until="turn")
        assert "info string style wild" in lines
        driven.end()
        driven.session("uqi 1", *game, "go infinite")
        driven.until(lambda: "info string style calm" in driven.lines)
        driven.end()  # a search was running: the bridge stops it and swallows its turn
        lines = driven.session("uqi 1", *game, "isready", until="readyok")
        assert not any(x is not None and x.startswith("turn") for x in lines)
        lines = driven.session(*game, "go movetime 100", until="turn")
        assert [x for x in lines if x is not None and x.startswith("turn")] and len(pids(pidfile)) == 1
        driven.end()
        driven.slot.finish(fresh=True)  # what kill K asks for
        driven.until(lambda: len(pids(pidfile)) == 2 and driven.slot.ready)
    finally:
        driven.close()


def test_engine_log_keeps_the_engines_stderr_apart(tmp_path: Path) -> None:
    """--engine-log: the engine's standard error goes to the file, not to the bridge's."""
    engine_log = tmp_path / "engine.log"
    with engine_log.open("ab") as f:
        driven = Driven(command("greedy"), stderr=f, label="slot 1")
        try:
            driven.session("uqi 1", until="uqiok")
            driven.end()
        finally:
            driven.close()
    assert "quarto_arena.protocol.session: quit" in engine_log.read_text()


def test_fresh_process_starts_one_per_session(tmp_path: Path) -> None:
    """--fresh-process: every session after the first gets a new process, as before warm engines."""
    pidfile = tmp_path / "pids"
    driven = Driven(testing.command("slow_start", str(pidfile), "0", "0"), fresh_process=True)
    try:
        for n in (1, 2, 3):
            driven.session("uqi 1", until="uqiok")
            assert len(pids(pidfile)) == n
            driven.end()
    finally:
        driven.close()


def test_an_engine_log_that_cannot_be_opened_is_a_usage_error(tmp_path: Path) -> None:
    r = subprocess.run(
        [*BRIDGE, "--listen", "tcp://127.0.0.1:1", "--engine-log", str(tmp_path / "no" / "such" / "dir"), "--", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2
    assert r.stderr.startswith("error: --engine-log") and len(r.stderr.splitlines()) == 1


@pytest.mark.slow
def test_an_engine_that_restarts_slowly_after_each_game_is_never_cut(tmp_path: Path, endpoint: str) -> None:
    """SPEC §3.4: no deadline runs while a process starts. A fresh process for every session that takes 11 s to
    start (past the arena's 10 s for a slot's ready): the slot is set aside while it starts, the bot is never cut,
    and every game is played to its end (the bot was cut 8 times in 24 games by a 9 s restart before)."""
    pidfile, out = tmp_path / "pids", tmp_path / "run"
    engine = testing.command("slow_start", str(pidfile), "11", "0")
    bot = [*BRIDGE, "--connect", endpoint, "--name", "slow", "--fresh-process", "--", *engine]
    log = tmp_path / "bridge.log"
    with started(bot, log) as bridge:
        # A 1 s margin: a turn relayed by the bridge at a load of 9 came past st=0.1's 50 ms one and lost the game on
        # time; the test is about the slow restarts, which the margin does not touch (11 s each, the margin 1 s).
        run = ["remote:slow", "greedy", "--games", "2", "--tc", "st=0.1", *STEADY_MARGIN]
        run += ["--listen", endpoint, "--out", str(out)]
        r = subprocess.run(
            [*CLI, "tournament", *run],  # not quiet: the server's line about the slot set aside is looked for
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        assert bridge.wait(timeout=30) == 0, log.read_text()
    assert [g["termination"] for g in records(out)] == ["normal"] * 2
    assert "cuts the connection" not in log.read_text() and "disconnected by the arena" not in r.stderr
    assert "not ready 10 s after its session's end" in r.stderr
    assert len(pids(pidfile)) >= 3  # the check's process, then one per game
