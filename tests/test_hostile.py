"""Hostile engines against the arena itself: floods that would exhaust its memory, processes that escape its
supervision, an arena killed with SIGKILL, a closed output, and answers at the last millisecond on a loaded machine.

Memory is measured honestly: the arena runs as a child process and reports its own peak resident set (VmHWM).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procs import STEADY_TC, become_subreaper, marked_processes, present, processes_in_groups
from quarto_arena.arena.engine import Deadlines, EngineConfig
from quarto_arena.arena.records import GameRecord, Termination
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.run import play_match
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.transport import Transcript
from quarto_arena.engines.registry import command
from quarto_arena.engines.testing import command as hostile

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]
DEADLINES = Deadlines(startup=5.0, ready=2.0, newgame=2.0, quit=0.5, safety=10.0)

# A child arena: plays one game of a hostile engine against another (greedy by default), then prints the
# termination, its own peak RSS (kB) and the size of the hostile engine's stderr log.
ARENA = """
import asyncio, json, logging, sys
from pathlib import Path
from quarto_arena.arena.engine import Deadlines, EngineConfig
from quarto_arena.arena.run import play_match
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.engines.registry import command

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
argv, other, tc, log_dir, limit = json.loads(sys.argv[1])
hostile = EngineConfig("hostile", command=tuple(argv))
greedy = EngineConfig("other", command=tuple(other or command("greedy")))
deadlines = Deadlines(startup=10.0, ready=2.0, newgame=2.0, quit=0.5, safety=30.0)
records = asyncio.run(play_match(hostile, greedy, 1, GameSpec(time_control=TimeControl.parse(tc)),
                                 deadlines=deadlines, log_dir=Path(log_dir), log_limit=limit, require_start=False))
status = Path("/proc/self/status").read_text()
hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
print(records[0].termination.value, hwm, Path(log_dir, "hostile.stderr").stat().st_size, sep="|")
"""


def arena_argv(argv: list[str], tc: str, log_dir: Path, other: list[str] | None = None) -> list[str]:
    """The command line of a child arena (see ARENA)."""
    return [sys.executable, "-c", ARENA, json.dumps([argv, other, tc, str(log_dir), 1 << 20])]


def run_arena(argv: list[str], tc: str, log_dir: Path) -> tuple[str, int, int, str]:
    out = subprocess.run(
        arena_argv(argv, tc, log_dir),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    termination, hwm, log_size = out.stdout.strip().split("|")
    return termination, int(hwm), int(log_size), out.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "tc", "expected"),
    [
        ("info", "st=5", "normal"),
        ("info", "st=1", "time forfeit"),
        ("error", "st=5", "normal"),
        ("garbage", "st=5", "malformed reply"),
        ("option", "st=5", "malformed reply"),
        ("stderr", "st=5", "normal"),
    ],
)
def test_peak_memory_stays_bounded_under_a_flood(kind: str, tc: str, expected: str, tmp_path: Path) -> None:
    argv = hostile("flood_lines", kind, "4")
    termination, hwm_kb, log_size, stderr = run_arena(argv, tc, tmp_path)
    assert termination == expected
    assert hwm_kb < 100 * 1024, f"the arena peaked at {hwm_kb} kB"
    # The echoed warnings are rate-limited: a flood of millions of lines gives a few dozen lines of warnings.
    assert len(stderr.splitlines()) < 100, stderr[-2000:]
    # The engine's log is capped, and the cut is marked in it.
    assert log_size <= (1 << 20) + 200
    if kind == "stderr":
        text = (tmp_path / "hostile.stderr").read_bytes()
        assert text.rstrip().endswith(b"the rest of the engine's standard error is discarded]")


def test_option_flood_is_refused_with_a_clear_reason() -> None:
    hostile_cfg = EngineConfig("hostile", command=tuple(hostile("flood_lines", "option", "2")))
    records = asyncio.run(
        play_match(
            hostile_cfg,
            EngineConfig("greedy", command=tuple(command("greedy"))),
            1,
            GameSpec(time_control=TimeControl.parse("st=1")),
            deadlines=DEADLINES,
            require_start=False,
        )
    )
    assert records[0].termination is Termination.MALFORMED_REPLY
    assert "declares more than 128 options" in records[0].detail


def test_a_full_disk_does_not_stop_the_game(tmp_path: Path) -> None:
    """/dev/full fails every write with ENOSPC: the log is dropped with one warning, the games go on."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "hostile.stderr").symlink_to("/dev/full")
    termination, _, _, stderr = run_arena(hostile("flood_lines", "stderr", "0.2"), "st=5", log_dir)
    assert termination == "normal"
    assert stderr.count("cannot write engine log") == 1


def test_escaped_descendants_are_killed_and_reaped(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    escaper = EngineConfig("escaper", command=tuple(hostile("escapes_session", str(pidfile))))
    greedy = EngineConfig("greedy", command=tuple(command("greedy")))
    records = asyncio.run(
        play_match(escaper, greedy, 2, GameSpec(time_control=TimeControl.parse("st=2")), deadlines=DEADLINES)
    )
    assert [r.termination for r in records] == [Termination.NORMAL, Termination.NORMAL]
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2  # one engine process for both games, two escaped processes
    # Gone, not even zombies: the arena (this process) inherited them as subreaper, killed and reaped them.
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []


@pytest.mark.slow
def test_an_arena_killed_with_sigkill_leaves_no_process(tmp_path: Path) -> None:
    become_subreaper()  # we stand in for init: what the dead arena leaves is reparented to us
    pidfile = tmp_path / "pids"
    argv = hostile("escapes_session", str(pidfile))
    # The opponent takes its whole two seconds on every turn, so the game is still on when the arena is killed.
    slow = hostile("answers_late", "1")
    arena = subprocess.Popen(
        arena_argv(argv, "st=2", tmp_path, other=slow),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while len(pidfile.read_text().split()) < 2 if pidfile.exists() else True:
            assert time.monotonic() < deadline, "the escaper never started"
            time.sleep(0.05)
        time.sleep(1.0)
        engines = marked_processes(arena.pid)
        watchdog = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == arena.pid]
        everything = set(engines) | set(watchdog) | {int(p) for p in pidfile.read_text().split()}
        assert len(engines) >= 4, engines  # two engines (setpriv has exec'd them) and two escaped processes
    finally:
        arena.send_signal(signal.SIGKILL)
        arena.wait()
    deadline = time.monotonic() + 5
    while present(everything) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert present(everything) == []
    assert marked_processes(arena.pid) == []


def _parent(entry: Path) -> int:
    try:
        return int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


@pytest.mark.serial
def test_an_engine_that_closes_its_output_is_a_disconnect_at_once() -> None:
    closer = EngineConfig("closer", command=tuple(hostile("closes_stdout")))
    greedy = EngineConfig("greedy", command=tuple(command("greedy")))
    t0 = time.monotonic()
    records = asyncio.run(
        play_match(closer, greedy, 1, GameSpec(time_control=TimeControl.parse("st=5")), deadlines=DEADLINES)
    )
    record = records[0]
    assert record.termination is Termination.DISCONNECT, record.detail
    assert "closed its output" in record.detail
    assert time.monotonic() - t0 < 4  # nowhere near the 5 s of the search


async def late_pair(games: int, arena_stalls: bool, log_dir: Path) -> list[GameRecord]:
    """Two engines answering at movetime minus 1 ms (st=0.05, margin 50 ms); with ``arena_stalls`` the arena's own
    event loop is blocked for 90 ms every 30 ms, as a busy or descheduled arena would be. Every line is written to
    ``log_dir/transcript.log`` with the arena's time stamps, the engines' own answer times to their logs."""

    async def stall() -> None:
        while True:
            await asyncio.sleep(0.03)
            time.sleep(0.09)

    late = [EngineConfig(name, command=tuple(hostile("answers_late", "1"))) for name in ("late1", "late2")]
    staller = asyncio.create_task(stall()) if arena_stalls else None
    transcript = Transcript(log_dir / "transcript.log")
    try:
        spec = GameSpec(time_control=TimeControl.parse("st=0.05"))
        return await play_match(
            late[0], late[1], games, spec, deadlines=DEADLINES, log_dir=log_dir, transcript=transcript
        )
    finally:
        transcript.close()
        if staller is not None:
            staller.cancel()


def late_answers(log_dir: Path, name: str) -> tuple[int, int]:
    """(searches the engine answered after the 100 ms deadline, searches it never answered), from its own clock.

    Both stamps are the machine's monotonic clock: the arena's transcript stamps each ``go`` it sends, the engine
    logs when it wrote its answer. So an engine that was itself late (descheduled on a loaded machine) is told apart
    from an arena that was late.
    """
    gos = [
        float(line.split()[0])
        for line in (log_dir / "transcript.log").read_text().splitlines()
        if f" {name} > go " in line
    ]
    answers = [
        float(line.split()[-1])
        for line in (log_dir / f"{name}.stderr").read_text().splitlines()
        if line.startswith("answered at ")
    ]
    late = sum(a - g > 0.100 for g, a in zip(gos, answers, strict=False))
    return late, max(0, len(gos) - len(answers))


@pytest.mark.serial
@pytest.mark.slow
def test_the_arena_s_own_delay_is_never_charged_to_an_engine(tmp_path: Path) -> None:
    """The arena wakes up to 90 ms late, past the deadline, with the turn already waiting: no forfeit."""
    records = asyncio.run(late_pair(4, arena_stalls=True, log_dir=tmp_path))
    assert_fair(records, tmp_path)
    assert sum(r.termination is Termination.NORMAL for r in records) >= 2  # the test did play games


def assert_fair(records: list[GameRecord], log_dir: Path) -> None:
    """No time forfeit but where the engine itself wrote after the deadline; never charged past the deadline."""
    for record in records:
        assert record.termination in (Termination.NORMAL, Termination.TIME_FORFEIT), record.detail
    for name in ("late1", "late2"):
        forfeits = sum(r.termination is Termination.TIME_FORFEIT and r.loser == name for r in records)
        late, unanswered = late_answers(log_dir, name)
        # A forfeit only where the engine itself wrote after the deadline (or not at all), never for an answer
        # that was waiting when the arena was late.
        assert forfeits <= late + unanswered, (name, forfeits, late, unanswered, [r.detail for r in records])
    assert max(t.ms for r in records for t in r.turns) <= 100  # charged at most the deadline


@pytest.mark.serial
@pytest.mark.slow
def test_no_time_forfeit_at_the_last_millisecond_on_a_loaded_machine(tmp_path: Path) -> None:
    """Every core busy with CPU hogs while both engines answer at movetime minus 1 ms: no game is lost on time
    unless the engine itself wrote its turn after the deadline (the hogs may delay the engine too: that is its own
    time, and an arena cannot tell it from a slow engine)."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(3 * (os.cpu_count() or 1))
    ]
    try:
        records = asyncio.run(late_pair(8, arena_stalls=False, log_dir=tmp_path))
    finally:
        for hog in hogs:
            os.killpg(hog.pid, signal.SIGKILL)
            hog.wait()
    assert_fair(records, tmp_path)
    assert sum(r.termination is Termination.NORMAL for r in records) >= 4  # the test did play games


def test_kill_all_ends_every_engine_at_once() -> None:
    from quarto_arena.arena.engine import EngineSession
    from quarto_arena.arena.transport import kill_all, shutdown

    async def main() -> list[int]:
        sessions = [EngineSession(EngineConfig(f"q{i}", command=tuple(hostile("hang_once", "/")))) for i in range(3)]
        for s in sessions:
            await s.start()
        pids = [s.pid for s in sessions if s.pid is not None]
        assert kill_all() >= 3
        await shutdown()
        assert all(not s.alive for s in sessions)
        return pids

    pids = asyncio.run(main())
    assert processes_in_groups(set(pids)) == []


# A child arena that starts four engines at the same moment from four threads, each with its own event loop (as a
# Dask worker plays one game per thread), then prints how many watchdogs it has and whether every engine runs.
THREADS = """
import asyncio, json, os, subprocess, threading
from quarto_arena.arena.engine import EngineConfig, EngineSession
from quarto_arena.engines.registry import command

together = threading.Barrier(4)
started = []

def start() -> None:
    loop = asyncio.new_event_loop()
    session = EngineSession(EngineConfig("random", command=tuple(command("random"))))
    together.wait()
    loop.run_until_complete(session.start())
    started.append((loop, session))

threads = [threading.Thread(target=start) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
dogs = subprocess.run(["pgrep", "-f", "-P", str(os.getpid()), "_watchdog.py"], capture_output=True, text=True)
print(json.dumps([len(dogs.stdout.split()), [s.alive for _, s in started]]))
for loop, session in started:
    loop.run_until_complete(session.quit())
"""


@pytest.mark.slow
def test_engines_started_in_several_threads_at_once_share_one_watchdog() -> None:
    for _ in range(3):  # the race it guards against is lost often, not always
        out = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(out.stdout) == [1, [True] * 4], out.stderr


# A child arena connects out to a ZeroMQ endpoint, reads until the connection ends, then prints what it read and its
# own peak RSS (kB).
ZMQ_ARENA = """
import asyncio, sys
from pathlib import Path
from quarto_arena.arena.transport import BadLine, PeerGone, ZmqTransport

async def main():
    t = await ZmqTransport.start("flood", sys.argv[1], connect_timeout=10)
    seen = []
    try:
        t.send_lines(["uqi"])
    except PeerGone:  # the flood came with the handshake, and the connection is already cut
        pass
    while True:
        try:
            await asyncio.wait_for(t.read_line(), 60)
        except BadLine as e:
            seen.append(str(e))
        except PeerGone:
            break
    await t.close()
    status = Path("/proc/self/status").read_text()
    hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    print("|".join(seen), t.exit_info(), hwm, sep="#")

asyncio.run(main())
"""


@pytest.mark.parametrize("shape", ["multipart", "tiny", "huge"])
def test_an_endless_zeromq_message_is_cut_before_the_arena_holds_it(shape: str) -> None:
    """libzmq buffers a message that never ends, whatever MAXMSGSIZE and RCVHWM say: the arena speaks ZMTP itself
    and cuts at 1 MiB, so 300 MB sent cost it nothing."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        endpoint = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    flood = subprocess.Popen(
        [*hostile("zmtp_flood"), "--listen", endpoint, "300", shape], stderr=subprocess.PIPE, text=True
    )
    try:
        assert flood.stderr is not None and flood.stderr.readline() == "listening\n"
        out = subprocess.run([sys.executable, "-c", ZMQ_ARENA, endpoint], capture_output=True, text=True, timeout=120)
    finally:
        flood.kill()
        flood.wait()
    assert out.returncode == 0, out.stderr
    seen, exit_info, hwm = out.stdout.strip().split("#")
    print(f"{shape}: peak RSS {int(hwm) // 1024} MB, {seen or 'no bad line'}, {exit_info}")
    assert exit_info == "disconnected"
    if shape != "huge":
        assert seen == "a message of several frames (UQI over ZeroMQ is one line per frame)"
    assert int(hwm) < 100 * 1024, f"peak RSS {int(hwm) // 1024} MB"


@pytest.mark.slow
def test_the_arena_s_own_shortage_of_descriptors_is_never_scored_against_an_engine(tmp_path: Path) -> None:
    """With its open files used up (a limit of 84, 52 of them taken before it starts), the arena cannot start an
    engine: that is its own fault. The game is kept apart (aborted.jsonl), nobody loses it, the run stops with exit
    5 and the resume hint, and --resume (with room again) plays every game."""
    import resource

    from quarto_arena.arena.journal import read_journal

    out = tmp_path / "run"
    fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(52)]
    try:
        r = subprocess.run(
            [*CLI, "play", "random", "greedy", "--games", "6", "-j", "2", "--tc", STEADY_TC, "--out", str(out), "-q"],
            capture_output=True,
            text=True,
            pass_fds=fds,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (84, 84)),
            timeout=120,
        )
    finally:
        for fd in fds:
            os.close(fd)
    assert r.returncode == 5, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "Too many open files (the arena's own limit, not the engine's fault)" in last
    assert f"continue with: quarto-arena play --resume {out}" in last
    counted = read_journal(out / "journal.qaj").records.values()
    assert not [g for g in counted if g.termination is not Termination.NORMAL]
    aborted = [json.loads(line) for line in (out / "aborted.jsonl").read_text().splitlines()]
    assert aborted and all(a["termination"] == "aborted" and "open files" in a["detail"] for a in aborted)
    again = subprocess.run([*CLI, "play", "--resume", str(out), "-q"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert len(read_journal(out / "journal.qaj").records) == 6


@pytest.mark.slow
def test_a_full_disk_stops_the_run_with_its_own_status_and_the_resume_hint(tmp_path: Path) -> None:
    """A run directory on a 300 KiB file system fills up: exit 5 (not a usage error), the --resume line, nothing
    counted lost; with room again, --resume plays the rest."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)], capture_output=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mount.stderr.decode().strip()}")
    try:
        out = disk / "r"
        args = ["play", "random", "greedy", "--games", "300", "--tc", "st=0.05", "--out", str(out), "-q"]
        r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
        assert r.returncode == 5, r.stderr
        last = r.stderr.strip().splitlines()[-1]
        assert "No space left on device" in last and f"continue with: quarto-arena play --resume {out}" in last
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        again = subprocess.run([*CLI, "play", "--resume", str(out), "-q"], capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr
        from quarto_arena.arena.journal import read_journal

        assert len(read_journal(out / "journal.qaj").records) == 300
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_games_file_that_cannot_be_written_stops_the_run_as_a_full_journal_does(tmp_path: Path) -> None:
    """The PGN file fills first (a full disk can hit it before the journal: in CI, at load 6, the run then printed
    'Exception in callback Playing.flush' with a traceback and ended with status 0 and games missing from games.pgn):
    the run stops with the arena's own fault, one line, and a resume writes every counted game into both files."""
    from quarto_arena.arena.errors import ArenaFault
    from quarto_arena.arena.journal import read_journal
    from quarto_arena.arena.roster import resolve_engines
    from quarto_arena.arena.run import GameStarted, Run, RunKind, RunSpec
    from quarto_arena.arena.settings import GameSettings

    out = tmp_path / "r"
    spec = RunSpec(
        RunKind.MATCH,
        tuple(resolve_engines(["random", "greedy"])),
        games=40,
        concurrency=2,
        game=GameSettings(TimeControl.parse("st=0.05")),
    )
    pgn = out / "games.pgn"
    swapped = False

    def fill_the_disk(event: object) -> None:
        # Once the run writes games.pgn, its descriptor is made to write to /dev/full (ENOSPC on every write).
        nonlocal swapped
        if isinstance(event, GameStarted) and not swapped:
            swapped = True
            (fd,) = (int(p.name) for p in Path("/proc/self/fd").iterdir() if os.path.realpath(p) == str(pgn))
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, fd)
            os.close(full)

    with Run.create(spec, out) as run, pytest.raises(ArenaFault) as fault:
        asyncio.run(run.run(fill_the_disk))
    assert swapped
    assert str(fault.value) == f"cannot write {pgn} and games.jsonl: No space left on device"
    counted = len(read_journal(out / "journal.qaj").records)
    assert 0 < counted < 40
    with Run.resume(out) as again:
        outcome = asyncio.run(again.run())
    assert len(outcome.records) == 40
    assert pgn.read_text().count("[Event ") == 40
    assert len((out / "games.jsonl").read_text().splitlines()) == 40
