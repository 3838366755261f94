"""``quarto-arena check``: every example bot complies, every broken bot fails the step its fault belongs to.

All real: engine processes in their own process groups, a ZeroMQ server on 127.0.0.1, the CLI as a subprocess.
After each check no process of the engine is left (zombies included). The broken bots run with scaled-down
deadlines so that the stalling ones stay cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Final

import pytest
import quarto_arena.engines
from procs import CLI, STEADY_TC, cli, free_port, processes_in_groups, wait_listening
from quarto_arena.arena.compliance import (
    STEPS,
    CheckReport,
    CheckTimeouts,
    IoLine,
    Status,
    format_report,
    run_check,
    strict_report,
)
from quarto_arena.arena.compliance.steps import LIMITS, PROBES
from quarto_arena.arena.engine import EngineConfig
from quarto_arena.arena.roster import engine_config
from quarto_arena.engines.registry import BUILTIN
from quarto_arena.engines.testing import BROKEN, NONCOMPLIANT, YESTERDAY
from quarto_arena.engines.testing import command as broken_command

ENGINES = Path(quarto_arena.engines.__file__).parent
# Start-up still leaves a Python bot 3 s to import on a busy machine; a stalled search costs 0.5 s.
SHORT = CheckTimeouts().scaled(0.3)
#: For an engine that complies: the default deadlines (an engine that answers at once spends none of them), the short
#: quiet waits. With SHORT, a Python bot that must comply, at load 9 (two CI runs at once), answered 'stop' after more
#: than SHORT's 0.3 s and failed step 7: a deadline tied to the machine's load, not the subject of those tests.
COMPLIANT = replace(CheckTimeouts(), quiet=SHORT.quiet)
BURNERS = os.cpu_count() or 1
"""Step 21's CPU burners, one per CPU, among the processes a check started."""

EXPECTED_STEP: dict[str, int] = {
    "no_handshake": 1,  # id name but no uqiok
    "slow_handshake": 1,  # uqiok after the start-up deadline
    "no_readyok": 2,
    "crash_on_go": 6,  # exits during the first search
    "hang_on_go": 6,  # no turn within the search deadline
    "illegal_turn": 6,  # the first position with a piece on the board
    "malformed_reply": 6,  # 'turn zz9'
    "false_claim": 6,  # the first position with a piece in hand
    "flood": 6,  # a line over 4096 bytes
    "exit_midgame": 6,  # the third search
    "leaves_child": 6,  # exits on go (its child holds the output open)
    "invalid_utf8": 6,
    "ignores_quit": 11,  # plays correctly; still running after quit
    "omits_call": 13,  # 'turn d1' in a strict game where d1 wins
    "ignores_attributes": 14,  # 'turn d1' where only colour or shape would have won
    "never_resets": 18,  # the auto game's 'd1' in the strict game that follows
}
"""Broken bot -> the step it must fail first."""

SHOULD_ONLY: dict[str, int] = {
    "crash_on_invalid_position": 15,  # dies on the first invalid position: an arena never sends one
}
"""Broken bots whose fault is only against a should: they comply with warnings, and fail that step with --strict."""


def check(
    config: EngineConfig, timeouts: CheckTimeouts | None = None, *, keep_going: bool = False, strict: bool = False
) -> CheckReport:
    # An outer bound, so that a checker bug shows as a failure rather than a hung suite.
    run = run_check(config, timeouts=timeouts, keep_going=keep_going, strict=strict)
    return asyncio.run(asyncio.wait_for(run, 180))


def processes_running(token: str, *, besides: int | None = None) -> list[str]:
    """Processes (other than this one and ``besides``) whose command line contains ``token``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in (os.getpid(), besides):
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if token in cmdline:
                out.append(f"{entry.name} {cmdline.strip()}")
    return out


TIMING: Final = ("(a game would be lost on time)", "allows a search under load", "safety time", "for a bare 'go'")
"""What the time warnings say: how long a search took is the machine's load as much as the bot's (a test may not
expect their absence on a loaded machine; step 21's own test makes one appear)."""


def untimed(warnings: Iterable[str]) -> list[str]:
    """The warnings that are not time ones."""
    return [w for w in warnings if not any(t in w for t in TIMING)]


def warned_steps(report: CheckReport) -> tuple[int, ...]:
    """The steps with a warning other than a time one."""
    return tuple(s.number for s in report.steps if untimed(s.warnings))


def strict_failures(report: CheckReport) -> tuple[int, ...]:
    """The steps ``--strict`` failed for something other than a time warning."""
    return tuple(s.number for s in report.steps if s.status is Status.FAIL and not any(t in s.reason for t in TIMING))


def assert_complies(report: CheckReport, skipped: tuple[int, ...] = (), *, warned: tuple[int, ...] = ()) -> None:
    shown = "\n".join(format_report(report))
    assert report.complies, shown
    assert warned_steps(report) == warned, shown
    assert [s.number for s in report.steps] == [s.number for s in STEPS], shown
    assert [s.number for s in report.steps if s.status is Status.SKIP] == list(skipped), shown
    assert processes_in_groups(report.pids) == []


# --- the example bots ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_engine_complies(name: str) -> None:
    report = check(engine_config(name))
    assert_complies(report)
    assert report.engine_id is not None
    # The session, the fresh process of step 12, the one of steps 13-21, and step 21's CPU burners.
    assert len(report.pids) == 3 + BURNERS


def test_c_bot_complies(c_bot: Path) -> None:
    assert_complies(check(EngineConfig("c-bot", command=(str(c_bot),))))


@pytest.mark.slow
def test_js_bot_complies() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    assert_complies(check(EngineConfig("js-bot", command=(node, str(ENGINES / "js" / "quarto_bot.js")))))


# The greedy SDK bot's server with its Python thread stalled for a while each time a session ends, as a busy machine
# may stall it; libzmq's own I/O thread goes on accepting connections at the socket being closed meanwhile.
SLOW_SWITCH = """
import runpy, sys, time
from quarto_arena.protocol import server
stall, switch = float(sys.argv.pop(1)), server.SessionServer._next_session
server.SessionServer._next_session = lambda s, why: (time.sleep(stall), switch(s, why))[1]
runpy.run_module("quarto_arena.engines.greedy", run_name="__main__")
"""


@contextlib.contextmanager
def greedy_server(stall: float = 0.0) -> Iterator[str]:
    """The greedy SDK bot serving UQI on a loopback TCP port, in its own process group (killed afterwards); with
    ``stall``, slow by that many seconds to switch sessions."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    start = ["-c", SLOW_SWITCH, str(stall)] if stall else ["-m", "quarto_arena.engines.greedy"]
    proc = subprocess.Popen(
        [sys.executable, *start, "--listen", endpoint],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_listening(endpoint, proc)
        yield endpoint
        assert proc.poll() is None, "the ZeroMQ server died during the check"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def zmq_server() -> Iterator[str]:
    with greedy_server() as endpoint:
        yield endpoint


def assert_second_session(quit_step: tuple[IoLine, ...]) -> None:
    """Step 11's transcript holds the second session's handshake, and every connection made before it dropped
    before any reply (it landed on the socket the server was closing) and was made again."""
    texts = [line.text for line in quit_step]
    uqis = [i for i, text in enumerate(texts) if text == "uqi 1"]
    assert uqis, texts
    assert "uqiok 1" in texts[uqis[-1] :], texts
    for i in uqis[:-1]:
        assert any(t.endswith("connecting again") for t in texts[i : uqis[-1]]), texts
        assert not any(t.startswith(("id ", "uqiok")) for t in texts[i : uqis[-1]]), texts


def test_zmq_sdk_bot_complies(zmq_server: str) -> None:
    # No \r\n over ZeroMQ frames, no end of input: steps 10 and 12 do not apply. Step 11 reconnects.
    report = check(engine_config(f"zmq-greedy={zmq_server}"))
    assert_complies(report, skipped=(10, 12))
    assert len(report.pids) == BURNERS  # no engine process: only step 21's burners
    assert_second_session(report.steps[10].transcript)


def test_a_server_slow_to_switch_sessions_complies() -> None:
    # Stalled longer than the quit deadline, the server has not closed the old session's socket when the check
    # connects again: that connection drops before any reply, and the check connects once more (SPEC §3.3), where
    # it used to report no handshake.
    stall = 1.5
    assert stall > CheckTimeouts().quit
    with greedy_server(stall) as endpoint:
        report = check(engine_config(f"zmq-slow={endpoint}"))
    assert_complies(report, skipped=(10, 12))
    quit_step = report.steps[10].transcript
    assert_second_session(quit_step)
    assert any(line.text.endswith("connecting again") for line in quit_step), [line.text for line in quit_step]


# --- the broken bots -----------------------------------------------------------------------------------------


def test_the_table_covers_every_broken_bot() -> None:
    assert set(EXPECTED_STEP) | set(SHOULD_ONLY) == set(BROKEN) | set(NONCOMPLIANT)


@pytest.mark.slow
@pytest.mark.parametrize("bot", sorted(EXPECTED_STEP))
def test_broken_bot_fails_its_step(bot: str) -> None:
    report = check(EngineConfig(bot, command=tuple(broken_command(bot))), SHORT)
    shown = "\n".join(format_report(report))
    expected = EXPECTED_STEP[bot]
    assert report.started
    assert not report.complies
    assert report.failed == (expected,), shown
    # It stopped at the failure, and every step before it passed.
    assert [s.number for s in report.steps] == list(range(1, expected + 1)), shown
    assert all(s.status is Status.PASS for s in report.steps[:-1]), shown
    failure = report.steps[-1]
    assert failure.reason and "\n" not in failure.reason
    assert failure.transcript, "a failed step comes with its I/O"
    assert processes_in_groups(report.pids) == [], f"{bot} left processes behind"


@pytest.mark.slow
@pytest.mark.parametrize("bot", sorted(SHOULD_ONLY))
def test_a_should_only_fault_warns_and_fails_with_strict(bot: str) -> None:
    config = EngineConfig(bot, command=tuple(broken_command(bot)))
    step = SHOULD_ONLY[bot]
    report = check(config, COMPLIANT)
    shown = "\n".join(format_report(report))
    assert report.complies and warned_steps(report) == (step,), shown
    report = check(config, COMPLIANT, strict=True, keep_going=True)
    shown = "\n".join(format_report(report))
    assert strict_failures(report) == (step,) and "SPEC §4.4" in report.steps[step - 1].reason, shown
    assert processes_in_groups(report.pids) == []


# Bots with one fault that no bot in engines/testing has, each a MinimalBot with one hook bent: step -> (code,
# expected start of the reason).
BENT: dict[str, tuple[int, str, str]] = {
    "no_id_name": (1, "def on_uqi(self):\n        self.send('uqiok 1')", "no 'id name' line before uqiok"),
    # A line that is no UQI reply before uqiok is a banner, logged (SPEC §4.1); a reply out of place is not.
    "reply_out_of_place": (
        1,
        "def on_uqi(self):\n        self.send('id name X')\n        self.send('readyok')\n        self.send('uqiok 1')",
        "'readyok' before uqiok: only 'id' and 'option' lines may come before it",
    ),
    "silent_unknown": (
        3,
        "def handle(self, line):\n        if line != 'frobnicate':\n            super().handle(line)",
        "no error line in answer to the unknown command 'frobnicate'",
    ),
    "refuses_its_spin": (
        4,
        "def on_uqi(self):\n        self.send('id name X')\n"
        "        self.send('option name Level type spin min 1 max 5 default 3')\n        self.send('uqiok 1')",
        "refused its own default: 'setoption name Level value 3'",
    ),
    "double_turn": (
        6,
        "def on_go(self, go):\n        super().on_go(go)\n        super().on_go(go)",
        "'turn ",  # the second turn shows up while the next newgame waits for readyok
    ),
    "ignores_eof": (
        12,
        "def on_eof(self):\n        import time\n        time.sleep(3600)",
        "still running 0.3 s after its standard input was closed",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(BENT))
def test_each_rule_can_fail(fault: str, tmp_path: Path) -> None:
    step, hook, reason = BENT[fault]
    report = check(bent_bot(tmp_path, fault, hook), SHORT)
    shown = "\n".join(format_report(report))
    assert report.failed == (step,), shown
    assert report.steps[-1].reason.startswith(reason), shown
    assert processes_in_groups(report.pids) == []


# Bots with one fault against a should (SPEC's rules for inputs an arena never sends, added since UQI 1): step ->
# (code, expected start of the warning). Each complies, with that warning; --strict fails the step with it.
BENT_SHOULD: dict[str, tuple[int, str, str]] = {
    "lax_spin": (
        4,
        "def on_uqi(self):\n        self.send('id name X')\n"
        "        self.send('option name Level type spin min 1 max 5 default 3')\n        self.send('uqiok 1')\n"
        "    def handle(self, line):\n        if not line.startswith('setoption name Level'):\n"
        "            super().handle(line)",
        "no error line for 'setoption name Level value 6', out of its range 1..5",
    ),
    "case_sensitive_check": (
        4,
        "def on_uqi(self):\n        self.send('id name X')\n"
        "        self.send('option name Book type check default true')\n        self.send('uqiok 1')\n"
        "    def handle(self, line):\n        if not line.startswith('setoption'):\n            super().handle(line)\n"
        "        elif line != 'setoption name Book value true':\n            self.send('error setoption Book: no')",
        "refused 'setoption name Book value TRUE'",
    ),
    "lax_newgame": (
        5,
        "def handle(self, line):\n        if line.startswith('newgame') and 'color,color' in line:\n"
        "            return\n        super().handle(line)",
        "no error line for 'newgame shapes standard attributes color,color claims auto'",
    ),
    "lax_go": (
        6,
        "def handle(self, line):\n        if line == 'go depth 0':\n            line = 'go depth 1'\n"
        "        super().handle(line)",
        "answered the malformed 'go depth 0' with 'turn ",
    ),
    "noisy_stop": (
        7,
        "def handle(self, line):\n        if line == 'stop' and self.held is None:\n"
        "            self.send('error stop: no search')\n        else:\n            super().handle(line)",
        "answered 'stop' when no search runs with 'error stop: no search'",
    ),
    "position_during_search": (
        8,
        "def handle(self, line):\n        if line.startswith('position') and self.held is not None:\n"
        "            self.held, held = None, self.held\n            super().handle(line)\n"
        "            self.held = held\n        else:\n            super().handle(line)",
        "no error line for 'position startpos' sent during a search",
    ),
    "turn_after_uqi": (
        8,
        "def handle(self, line):\n        if line.startswith('uqi') and self.held is not None:\n"
        "            self.send(f'turn {self.held}')\n        super().handle(line)",
        "'uqi' during a search: 'turn ",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(BENT_SHOULD))
def test_each_should_warns_and_fails_with_strict(fault: str, tmp_path: Path) -> None:
    step, hook, warning = BENT_SHOULD[fault]
    config = bent_bot(tmp_path, fault, hook)
    report = check(config, COMPLIANT)
    shown = "\n".join(format_report(report))
    assert report.complies and warned_steps(report)[0] == step, shown  # where it shows first (later ones may too)
    assert any(w.startswith(warning) and "(SPEC §" in w for w in report.steps[step - 1].warnings), shown
    strict = check(config, COMPLIANT, strict=True, keep_going=True)
    shown = "\n".join(format_report(strict))
    assert strict_failures(strict)[0] == step, shown
    failed = strict.steps[step - 1]
    assert any(line.startswith(warning) for line in (failed.reason, *failed.warnings)), shown
    assert processes_in_groups(report.pids) == [] and processes_in_groups(strict.pids) == []


def bent_bot(tmp_path: Path, name: str, hook: str) -> EngineConfig:
    script = tmp_path / f"{name}.py"
    script.write_text(
        "from quarto_arena.engines.testing._base import MinimalBot\n\n"
        f"class Bent(MinimalBot):\n    {hook}\n\nBent().run()\n"
    )
    return EngineConfig(name, command=(sys.executable, str(script)))


def test_tolerated_deviations_pass_with_warnings(tmp_path: Path) -> None:
    # SPEC: a turn for go infinite before stop is a "should not" (§4.5); a malformed info line, or a win longer
    # than the game can last, is ignored by an arena (§5.3). Each is a warning, not a failure.
    hook = (
        "def on_go(self, go):\n        if self.position is None or self.position.is_over:\n"
        "            return super().on_go(go)\n        self.send('info depth 1 score win 2')\n"
        "        self.send('info depth 1 score win 99')\n        self.send(f'turn {self.choose(self.position)}')"
    )
    report = check(bent_bot(tmp_path, "early", hook), SHORT)
    shown = "\n".join(format_report(report))
    assert report.complies, shown
    warnings = {s.number: " | ".join(s.warnings) for s in report.steps}
    assert "malformed info line 'info depth 1 score win 2'" in warnings[6], shown
    assert "more turns, not 99 (SPEC §5.3: should)" in warnings[6], shown
    assert "before 'stop' (SPEC §4.5: should)" in warnings[7], shown
    assert "no search to test §4.10 in (SPEC §4.5: should)" in warnings[8], shown


# --- yesterday's bots: UQI 1 is frozen ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("bot", sorted(YESTERDAY))
def test_yesterdays_bots_keep_passing(bot: str) -> None:
    # Each follows an earlier published text of SPEC.md where a should was added since, for an input an arena never
    # sends: it complies, with warnings that name their sections, and only --strict fails it.
    # The default deadlines: these bots play correctly, and a loaded machine must not turn a slow exit into a failure.
    report = check(EngineConfig(bot, command=tuple(broken_command(bot))), keep_going=True)
    shown = "\n".join(format_report(report))
    assert report.complies and warned_steps(report), shown
    warnings = [w for step in report.steps for w in step.warnings if not w.startswith("... and ")]
    assert all("(SPEC §" in w and w.endswith("should)") for w in warnings), shown
    strict = strict_report(report, keep_going=True)
    assert strict.failed == report.warned and not strict.complies, shown
    assert processes_in_groups(report.pids) == []


def test_the_java_bots_reading_of_a_winning_give_passes() -> None:
    # Issue 35: 'position ..../..../..../012. 3 turns d10' (d1 wins, and gives the piece on a1) answered
    # 'error go the game is over: a placement won', as UQI 1 §1.1 read: the go is refused, which is all a game needs.
    report = check(EngineConfig("java", command=tuple(broken_command("winning_give"))))
    shown = "\n".join(format_report(report))
    assert report.complies and warned_steps(report) == (15,), shown
    # Its one warning that is not about time: a loaded machine may add a time warning to the same step (CI run P-1
    # of stop 48, two runs at once: the unpacking of every warning failed on it).
    (warning,) = untimed(report.steps[14].warnings)
    assert "turns d10" in warning and "'error go the game is over: a placement won'" in warning, shown
    assert warning.endswith("not 'error position ...' (SPEC §4.4: should)"), shown


def test_a_bot_with_a_banner_plays_its_games(tmp_path: Path) -> None:
    # UQI 1 (§5.5 as published) let an arena log a line that is no reply outside a search and wait for the reply
    # still due: a bot that greets 'uqi' with a banner played, and must go on playing (it failed every handshake
    # from 2026-11-26 until this was withdrawn). check warns at step 1; a match counts every game.
    bot = "banner=" + " ".join(broken_command("banner"))
    out = tmp_path / "m"
    r = cli("play", bot, "random", "--games", "2", "--tc", STEADY_TC, "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Score of banner vs random" in r.stdout and "forfeit" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert "banner: ignored 'Yesterday banner, (c) 2026: ready to play'" in r.stderr, r.stderr


@pytest.mark.slow
def test_cli_strict_fails_the_bot_that_gets_every_should_wrong(tmp_path: Path) -> None:
    bot = "wrong=" + " ".join(broken_command("every_should_wrong"))
    r = cli("check", bot)
    assert r.returncode == 0, r.stdout + r.stderr
    warnings = [line for line in r.stdout.splitlines() if line.strip().startswith("warning:")]
    assert len(warnings) > 10 and all(re.search(r"\(SPEC §.*\)$", w) or "more warnings" in w for w in warnings)
    assert re.search(
        r"^wrong complies with UQI 1: 21 passed, 0 failed, 0 skipped, \d+ warnings \(step 1, ", r.stdout, re.M
    )
    # --strict with the other options: every step run, the transcript written, each failure citing its section.
    transcript = tmp_path / "t.txt"
    r = cli("check", bot, "--strict", "--keep-going", "--transcript", str(transcript))
    assert r.returncode == 1, r.stdout + r.stderr
    failed = re.findall(r"^ *(\d+) .* FAIL: (.*)$", r.stdout, re.M)
    # Every should step; a loaded machine may add a step where a search took too long, which --strict fails too.
    assert {1, 3, 4, 5, 6, 7, 8, 15, 16, 19, 20, 21} <= {int(n) for n, _ in failed}, r.stdout
    assert all("SPEC §" in reason for _, reason in failed), r.stdout
    assert "## step 21 time use under load: FAIL" in transcript.read_text()
    r = cli("check", bot, "--strict")
    assert r.returncode == 1 and "step 1 failed" in r.stdout and "--keep-going" in r.stdout.splitlines()[-1], r.stdout


def test_a_bot_that_spends_its_movetime_gets_a_warning() -> None:
    # Step 21: answers_late answers every movetime at its last millisecond, which keeps nothing back for a loaded
    # machine (SPEC §4.5); the check's own burners are gone afterwards.
    report = check(EngineConfig("late", command=tuple(broken_command("answers_late"))))
    shown = "\n".join(format_report(report))
    assert report.complies, shown
    assert any("of what 'go movetime 100' allows a search under load" in w for w in report.steps[20].warnings), shown
    assert processes_in_groups(report.pids) == []


def test_reasons_quote_the_offending_line() -> None:
    report = check(EngineConfig("malformed", command=tuple(broken_command("malformed_reply"))), SHORT)
    failure = report.steps[-1]
    assert failure.reason.startswith("malformed line 'turn zz9' during a search"), failure.reason
    texts = [(line.direction, line.text) for line in failure.transcript]
    assert (">", "go movetime 200") in texts
    assert ("<", "turn zz9") in texts
    assert texts.index((">", "go movetime 200")) < texts.index(("<", "turn zz9"))
    assert all(a.at <= b.at for a, b in zip(failure.transcript, failure.transcript[1:], strict=False))

    report = check(EngineConfig("illegal", command=tuple(broken_command("illegal_turn"))), SHORT)
    assert re.match(
        r"illegal turn 'turn [a-d][1-4][0-9a-f]' after 'go movetime 200' in a mid-game", report.steps[-1].reason
    )

    report = check(EngineConfig("claim", command=tuple(broken_command("false_claim"))), SHORT)
    assert re.match(r"false claim 'turn [a-d][1-4]!' after", report.steps[-1].reason), report.steps[-1].reason


def test_stall_reasons_name_the_deadline_and_the_last_line() -> None:
    report = check(EngineConfig("no-readyok", command=tuple(broken_command("no_readyok"))), SHORT)
    assert report.steps[-1].reason == (
        "no readyok after 'isready' within 1.5 s (last line from the engine: 'uqiok 1') (SPEC §4.7)"
    )


def test_keep_going_runs_every_step_and_restarts_the_engine() -> None:
    report = check(EngineConfig("ignores-quit", command=tuple(broken_command("ignores_quit"))), SHORT, keep_going=True)
    shown = "\n".join(format_report(report))
    assert [s.number for s in report.steps] == [s.number for s in STEPS], shown
    assert report.failed == (11, 12), shown  # it ignores end of input too
    assert "still running" in report.steps[11].reason
    assert not report.complies
    assert processes_in_groups(report.pids) == []


def test_keep_going_after_a_failed_search_restarts_for_the_next_step() -> None:
    report = check(EngineConfig("crash", command=tuple(broken_command("crash_on_go"))), SHORT, keep_going=True)
    shown = "\n".join(format_report(report))
    # Every step with a search fails, but for a should's step (8, 15, 16, 19, 21: a warning); the others pass on a
    # restarted engine (a crash in step 12 is an exit).
    assert report.failed == (6, 7, 9, 10, 13, 14, 17, 18), shown
    assert warned_steps(report) == (8, 15, 16, 19, 21), shown
    assert report.steps[10].status is Status.PASS, shown
    assert len(report.pids) > 2
    assert processes_in_groups(report.pids) == []


def test_an_engine_that_cannot_start() -> None:
    report = check(EngineConfig("nothing", command=("/nonexistent/quarto-bot",)), SHORT)
    assert not report.started
    assert not report.complies
    assert [(s.number, s.status) for s in report.steps] == [(1, Status.FAIL)]
    assert "/nonexistent/quarto-bot" in report.steps[0].reason


def test_the_probes_are_valid_positions() -> None:
    # Each probe must be a real, unfinished position, or the searches step would test nothing.
    for probe in PROBES:
        position = probe.position()
        assert not position.is_over, probe.label
        assert position.legal_turns(), probe.label
    assert any(t.claim for t in PROBES[6].position().legal_turns())
    assert all(t.give is None for t in PROBES[3].position().legal_turns())  # the placement fills the board
    assert len(LIMITS) == 5


# --- the CLI -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_passing_engine() -> None:
    r = cli("check", "greedy")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Checking greedy (Greedy ")
    assert lines[1] == "  1 start-up ................ ok"
    assert lines[3] == "  3 unknown command ......... ok"
    assert lines[8] == "  8 during a search ......... ok"
    assert lines[12] == " 12 end of input ............ ok"
    assert lines[13] == " 13 strict claims ........... ok"
    assert lines[19] == " 19 long lines .............. ok"
    assert lines[21] == " 21 time use under load ..... ok"
    assert lines[-1] == "greedy complies with UQI 1: 21 passed, 0 failed, 0 skipped, 0 warnings"
    assert len(lines) == 23
    assert r.stderr == ""


@pytest.mark.slow
def test_cli_failing_engine_prints_the_failed_steps_io() -> None:
    bot = " ".join(broken_command("malformed_reply"))
    r = cli("check", f"bad={bot}", "--timeout-scale", "0.3")
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert re.search(r"^  6 searches \.+ FAIL: malformed line 'turn zz9' during a search", out, re.M), out
    assert re.search(r"^ +\d+\.\d{3} > go movetime 200$", out, re.M), out
    assert re.search(r"^ +\d+\.\d{3} < turn zz9$", out, re.M), out
    assert "bad does NOT comply with UQI 1: step 6 failed" in out
    assert "--keep-going" in out.splitlines()[-1]
    # What was sent and what came back, before the step's whole I/O.
    assert re.search(r"^      sent: go movetime 200\n      got:  turn zz9$", out, re.M), out


def test_cli_verbose_never_truncates_and_transcript_writes_every_line(tmp_path: Path) -> None:
    out_file = tmp_path / "check.txt"
    r = cli("check", "greedy", "--verbose", "--transcript", str(out_file))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "earlier lines" not in r.stdout
    # Step 6 alone has more than 60 lines: all of them are printed, and all are in the file.
    step6 = r.stdout.split("  6 searches")[1].split("  7 infinite")[0]
    assert len(step6.splitlines()) > 200, step6
    written = out_file.read_text().splitlines()
    assert written[0].startswith("# quarto-arena check greedy")
    assert [line for line in written if line.startswith("## step")][18] == "## step 19 long lines: ok"
    assert sum(" > " in line for line in written) == sum(" > " in line for line in r.stdout.splitlines())
    r = cli("check", "greedy", "--transcript", str(tmp_path / "no" / "such" / "dir"))
    assert r.returncode == 2
    assert r.stderr.startswith("quarto-arena: error: --transcript")
    r = cli("check", "greedy", "--cluster", "local:1", "--transcript", str(out_file))
    assert r.returncode == 2
    assert "with --cluster, use --verbose" in r.stderr


@pytest.mark.slow
def test_cli_exit_statuses_for_usage_and_start_errors() -> None:
    # A program that does not exist is a usage error, worded as in play, tournament and sprt.
    r = cli("check", "/nonexistent/quarto-bot")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "quarto-arena: error: engine '/nonexistent/quarto-bot': /nonexistent/quarto-bot does not exist"
    )
    # A program that runs but dies at once does not comply.
    r = cli("check", "dead=sh -c 'exit 3'")
    assert r.returncode == 1, r.stderr
    assert "dead does NOT comply with UQI 1: step 1 failed" in r.stdout
    r = cli("check", "greedy", "--timeout-scale", "0")
    assert r.returncode == 2
    assert "--timeout-scale" in r.stderr
    r = cli("check", "'unterminated")
    assert r.returncode == 2
    assert r.stderr.startswith("quarto-arena: error: engine")


def marked_slow_handshake(base: int) -> tuple[str, str]:
    """A slow_handshake bot's command line and the token that marks its process in /proc (its delay argument, about
    ``base`` seconds): unique to this run of a test, so that an engine another run left (a retry's predecessor, killed
    with its arena) is never taken for this one's."""
    token = f"{base}.{os.getpid()}{time.monotonic_ns() % 10**6:06d}"
    return token, " ".join([*broken_command("slow_handshake"), token])


def kill_marked(token: str, *, besides: int | None = None) -> list[str]:
    """Kills the processes marked with ``token`` (a failed run leaves nothing for the next one); returns them."""
    left = processes_running(token, besides=besides)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    return left


@pytest.mark.slow
def test_cli_ctrl_c_kills_the_engine() -> None:
    token, bot = marked_slow_handshake(4711)
    proc = subprocess.Popen([*CLI, "check", bot], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120  # generous: CI's load (cargo builds beside) can slow a start-up a lot
        # The CLI's own command line holds the token too: wait for the engine it starts.
        while not processes_running(token, besides=proc.pid) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()  # the check ended before starting the engine: say why
            time.sleep(0.05)
        assert processes_running(token, besides=proc.pid), "the engine never started"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = kill_marked(token, besides=proc.pid)
    assert proc.returncode == 130, err
    assert err.endswith("quarto-arena: interrupted\n") and "Traceback" not in err, err
    assert left == []


@pytest.mark.slow
def test_cli_ctrl_c_during_start_up_is_one_line_and_130() -> None:
    # Ctrl-C at moments spread over the command's start-up, from the console script's first line (it says 'ready'
    # here; before it are the interpreter's start and the import of the console script's tiny module) through the
    # command line's imports to the engine's launch: every one ends in 'interrupted' and 130, never in the
    # traceback of whatever import it interrupted.
    token, bot = marked_slow_handshake(4712)
    ready = "from quarto_arena.arena.console import main; print('ready', flush=True); main()"
    try:
        for delay in (0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5):
            proc = subprocess.Popen(
                [sys.executable, "-c", ready, "check", bot], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=60)
            assert proc.returncode == 130, (delay, err)
            assert err.endswith("quarto-arena: interrupted\n") and "Traceback" not in err, (delay, err)
            assert processes_running(token, besides=proc.pid) == []
    finally:
        kill_marked(token)


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_cli_strict_judges_a_clusters_reports_too() -> None:
    # The workers run the plain check; --strict judges their reports here, as it judges a local one.
    bot = "java=" + " ".join(broken_command("winning_give"))
    r = cli("check", bot, "--cluster", "local:1", "--strict")
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"^ 15 invalid positions \.+ FAIL: .*\(SPEC §4\.4: should\)$", r.stdout, re.M), r.stdout
    assert "java does NOT comply with UQI 1: step 15 failed" in r.stdout
