"""Games on a Dask cluster, with real processes on loopback: a LocalCluster of two worker processes, and a real
``dask scheduler`` with two ``dask worker`` processes (one SIGKILLed mid-run; the coordinator SIGKILLed and
resumed; an engine missing on one worker; an unreachable scheduler; Dask not installed)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
from procs import CLI, free_port, marked_processes, wait_listening, wait_started
from quarto_arena.arena.cluster import Cluster, ClusterAddress, ClusterError, ClusterPlayer, WorkerFacts
from quarto_arena.arena.cluster.connection import overloaded_hosts
from quarto_arena.arena.cluster.player import play_on_cluster
from quarto_arena.arena.cluster.task import spec_from_dict, spec_to_dict
from quarto_arena.arena.journal import JOURNAL_NAME, read_journal
from quarto_arena.arena.pgn import read_games
from quarto_arena.arena.records import GameRecord, Termination
from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import JSONL_NAME, PGN_NAME, Run, RunKind, RunOptions, RunSpec, build_spec
from quarto_arena.protocol.notation import parse_position, parse_turns
from samples import every_field_game_spec

#: A bot that takes 20 ms a turn, so that a kill finds games in flight.
SLOW_BOT = textwrap.dedent(
    """
    import random, sys, time
    from quarto_arena.protocol.bot import run

    rng = random.Random(int(sys.argv[1]))

    def choose(position, ctx):
        time.sleep(0.02)
        return rng.choice(position.legal_turns())

    run(choose, [])
    """
)


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


@dataclass
class DaskCluster:
    """A real ``dask scheduler`` and ``dask worker`` processes on loopback."""

    address: str
    workers: list[subprocess.Popen[bytes]]
    logs: Path


@contextlib.contextmanager
def dask_cluster(directory: Path, worker_paths: list[str]) -> Iterator[DaskCluster]:
    """A scheduler and one single-threaded worker (without a nanny: killing it kills the worker) per PATH given."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    dask = [sys.executable, "-m", "dask"]
    try:
        with open(directory / "scheduler.log", "wb") as log:
            scheduler = subprocess.Popen(
                [*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                stdout=log,
                stderr=subprocess.STDOUT,
                # The scheduler's memory manager drops the copies of data no task waits for (a run's lease among
                # them) every 2 s by default: every 50 ms here, so that a test run of a second meets it as a long run
                # does, whatever the machine's load.
                env={**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ACTIVE_MEMORY_MANAGER__INTERVAL": "50ms"},
            )
        procs.append(scheduler)
        wait_listening(address, scheduler)
        workers = []
        for k, path in enumerate(worker_paths):
            with open(directory / f"worker{k}.log", "wb") as log:
                worker = subprocess.Popen(
                    [
                        *dask,
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--host",
                        "127.0.0.1",
                        "--no-dashboard",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "PATH": path},
                    cwd=directory,
                )
            procs.append(worker)
            workers.append(worker)
        for k, worker in enumerate(workers):
            log = directory / f"worker{k}.log"
            wait_started(lambda log=log: b"Registered to" in log.read_bytes(), worker, f"a worker registered ({log})")
        yield DaskCluster(address, workers, directory)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


@pytest.fixture(scope="module")
def qbot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding ``qbot``, a command found only through PATH (a slow bot)."""
    directory = tmp_path_factory.mktemp("qbin")
    bot = directory / "slow_bot.py"
    bot.write_text(SLOW_BOT)
    qbot = directory / "qbot"
    qbot.write_text(f"#!/bin/sh\nexec {sys.executable} {bot} 7\n")
    qbot.chmod(qbot.stat().st_mode | stat.S_IEXEC)
    return directory


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, qbot_dir: Path) -> Iterator[DaskCluster]:
    """Two workers; only the first has ``qbot`` on its PATH."""
    path = os.environ["PATH"]
    with dask_cluster(tmp_path_factory.mktemp("shared"), [f"{qbot_dir}:{path}", path]) as cluster:
        yield cluster


#: A bot that holds its turn while the file named by its second argument exists (so a game can be caught in flight
#: for as long as a test needs: under --tc st=60, no clock ends it meanwhile).
HOLDING_BOT = textwrap.dedent(
    """
    import os, random, sys, time
    from quarto_arena.protocol.bot import run

    rng = random.Random(int(sys.argv[1]))

    def choose(position, ctx):
        while os.path.exists(sys.argv[2]):
            time.sleep(0.01)
        time.sleep(0.01)
        return rng.choice(position.legal_turns())

    run(choose, [])
    """
)


def holding_engines(directory: Path) -> tuple[list[str], Path]:
    """Two holding bots and greedy, and the file that makes the bots hold."""
    bot = directory / "holding_bot.py"
    bot.write_text(HOLDING_BOT)
    hold = directory / "hold"
    return [f"h1={sys.executable} {bot} 1 {hold}", f"h2={sys.executable} {bot} 2 {hold}", "greedy"], hold


def wait_for_games(journal: Path, n: int, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not journal.exists() or len(read_journal(journal).records) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)


def wait_for_engines(worker_pid: int, proc: subprocess.Popen[str], timeout: float = 30) -> list[int]:
    """Two engines of the worker ``worker_pid``, once both run (between games the worker keeps them warm)."""
    deadline = time.monotonic() + timeout
    while len(engines := marked_processes(worker_pid)) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no game in flight on the worker"
        time.sleep(0.005)
    return engines


def engines_left(worker_pids: list[int], timeout: float = 10) -> list[int]:
    """Engines started by the workers ``worker_pids`` (they carry their markers) still alive after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while (left := [p for w in worker_pids for p in marked_processes(w)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def assert_each_game_once(directory: Path, total: int) -> dict[int, GameRecord]:
    """Every scheduled game exactly once in the journal, the PGN and the JSON Lines."""
    contents = read_journal(directory / JOURNAL_NAME)  # raises if a game were recorded twice
    assert contents.torn is None
    assert sorted(contents.records) == list(range(1, total + 1))
    assert Counter(int(g.tags["GameId"]) for g in read_games(directory / PGN_NAME)) == Counter(range(1, total + 1))
    lines = (directory / JSONL_NAME).read_text().splitlines()
    assert Counter(json.loads(line)["game_id"] for line in lines) == Counter(range(1, total + 1))
    for record in contents.records.values():
        assert record.termination is Termination.NORMAL, record.detail
        pos = parse_position(record.start).play(parse_turns([t.token for t in record.turns]))
        assert pos.is_over
    return contents.records


# ----------------------------------------------------------------------------------------------------------------
# Settings


def test_cluster_addresses_and_crowded_machines() -> None:
    assert ClusterAddress.parse("tcp://10.0.0.5:8786") == ClusterAddress("tcp://10.0.0.5:8786")
    assert ClusterAddress.parse("local:3") == ClusterAddress(None, 3)
    for bad in ("local:0", "local:x", "10.0.0.5:8786", "tcp://"):
        with pytest.raises(ClusterError) as e:
            ClusterAddress.parse(bad)
        assert not e.value.engine  # a usage error
    # Threads are summed over the workers of one machine, against that machine's cores.
    workers = [
        WorkerFacts("tcp://10.0.0.5:1", "10.0.0.5", 2, 4),
        WorkerFacts("tcp://10.0.0.5:2", "10.0.0.5", 2, 4),
        WorkerFacts("tcp://10.0.0.6:1", "10.0.0.6", 4, 4),
        WorkerFacts("tcp://10.0.0.7:1", "10.0.0.7", 2, 2),
    ]
    assert overloaded_hosts(workers) == []
    assert overloaded_hosts([*workers, WorkerFacts("tcp://10.0.0.6:2", "10.0.0.6", 1, 4)]) == [
        "10.0.0.6 runs 5 worker threads on 4 cores (2 workers)",
    ]


def test_every_field_of_a_game_travels_to_the_workers() -> None:
    sample = every_field_game_spec()
    default = GameSpec()
    # A field GameSpec gains must be set here too, so that this test says whether it reaches the workers.
    assert [f.name for f in fields(GameSpec) if getattr(sample, f.name) == getattr(default, f.name)] == []
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(sample)))) == sample


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_without_dask_cluster_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    # The import of distributed fails as it does where the extra is not installed.
    code = "import sys; sys.modules['distributed'] = None; from quarto_arena.arena.cli import main; main(sys.argv[1:])"
    for args in (["play", "random", "greedy", "--out", str(tmp_path / "p")], ["check", "greedy"]):
        r = subprocess.run(
            [sys.executable, "-c", code, *args, "--cluster", "local:2"], capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines() == [
            "quarto-arena: error: --cluster needs Dask distributed: pip install 'quarto-arena[dask]'"
        ]
    assert not (tmp_path / "p").exists()
    for option, value in (("--debug", str(tmp_path)), ("--web", "127.0.0.1:0")):
        r = run_cli("play", "random", "greedy", "--cluster", "local:2", option, value, "--out", str(tmp_path / "p"))
        assert r.returncode == 2 and option in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "p").exists()


@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.extra("dask")
def test_an_unreachable_scheduler_is_one_line_and_exit_3_within_seconds(tmp_path: Path) -> None:
    started = time.monotonic()
    r = run_cli("play", "random", "greedy", "--cluster", f"tcp://127.0.0.1:{free_port()}", "--out", str(tmp_path / "p"))
    assert time.monotonic() - started < 15
    assert r.returncode == 3, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("quarto-arena: error: cannot reach the Dask scheduler at tcp://127.0.0.1:")
    assert "Traceback" not in r.stderr
    r = run_cli("check", "greedy", "--cluster", "nosuch://127.0.0.1:1")
    assert r.returncode == 2 and "unknown address scheme" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------------------------------------------
# A LocalCluster


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_a_local_cluster_plays_what_the_single_machine_runner_schedules(tmp_path: Path) -> None:
    options = RunOptions(games=2, tc="st=0.5", seed=5, option=["random:Seed=3", "greedy:Seed=4", "minimax:Seed=5"])
    spec = build_spec(RunKind.TOURNAMENT, ["random", "greedy", "minimax"], options)
    with Run.in_memory(spec) as here:
        local = asyncio.run(here.run())
    with Run.create(spec, tmp_path / "c") as run:
        outcome = asyncio.run(play_on_cluster(run, ClusterAddress.parse("local:2")))
    assert outcome.complete and local.complete

    def scheduled(record: GameRecord) -> tuple[object, ...]:
        return (record.first, record.second, record.round, record.start, record.opening, record.variant)

    assert [scheduled(r) for r in outcome.records if r.game_id == 1] == [scheduled(local.records[0])]
    assert {r.game_id: scheduled(r) for r in outcome.records} == {r.game_id: scheduled(r) for r in local.records}
    assert_each_game_once(tmp_path / "c", 6)
    # The engines' standard error came back from the workers into the run's logs (what they wrote during games:
    # the SDK logs each option set at a session's start).
    for name in ("random", "greedy", "minimax"):
        assert b"option Seed = " in (tmp_path / "c" / "logs" / f"{name}.stderr").read_bytes()


# ----------------------------------------------------------------------------------------------------------------
# A real scheduler and workers


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_check_runs_on_every_worker_and_names_the_one_without_the_engine(shared: DaskCluster, qbot_dir: Path) -> None:
    env = {**os.environ, "PATH": f"{qbot_dir}:{os.environ['PATH']}"}
    r = run_cli("check", "qbot", "--cluster", shared.address, env=env)
    assert r.returncode == 3, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2, r.stdout
    has, lacks = (f"worker tcp://127.0.0.1:{w}" for w in _worker_ports(shared))
    assert any(line.startswith(has) and "qbot complies with UQI" in line for line in lines), r.stdout
    assert any(line.startswith(lacks) and "could not be started" in line for line in lines), r.stdout


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_an_engine_missing_on_a_worker_fails_with_a_reason_naming_the_worker(
    shared: DaskCluster, qbot_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**os.environ, "PATH": f"{qbot_dir}:{os.environ['PATH']}"}
    _, lacks = _worker_ports(shared)
    # Before the first game: the engine check on every worker stops the run.
    r = run_cli("play", "qbot", "greedy", "--cluster", shared.address, "--out", str(tmp_path / "p"), env=env)
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"quarto-arena: error: qbot: cannot start 'qbot': No such file or directory (on worker tcp://127.0.0.1:{lacks})"
    )
    # During the run (a worker that joined after the check): that game fails, naming the worker, and stops the run
    # without scoring the engine for the machine's fault.
    monkeypatch.setenv("PATH", env["PATH"])
    spec = RunSpec(RunKind.MATCH, tuple(resolve_engines(["qbot", "greedy"])), games=2, concurrency=2)

    async def unchecked() -> tuple[object, ...]:
        with Run.in_memory(spec) as run:
            async with Cluster.connect(ClusterAddress.parse(shared.address)) as cluster:
                outcome = await run.run(player=ClusterPlayer(cluster, spec.engines), preflight=False, concurrency=2)
        return outcome.failure, outcome.records

    failure, records = asyncio.run(unchecked())
    assert records == ()
    assert isinstance(failure, GameRecord) and failure.termination is Termination.ENGINE_ERROR
    assert failure.detail == f"qbot: cannot start 'qbot': No such file or directory (on worker tcp://127.0.0.1:{lacks})"


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_the_coordinator_sigkilled_then_resumed_plays_exactly_the_missing_games(
    shared: DaskCluster, tmp_path: Path
) -> None:
    directory = tmp_path / "t"
    engines, hold = holding_engines(tmp_path)
    args = ["tournament", *engines, "--games", "2", "--tc", "st=60", "--out", str(directory)]
    total = 6
    proc = subprocess.Popen(
        [*CLI, *args, "--cluster", shared.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_games(directory / JOURNAL_NAME, 2, proc)
        hold.touch()  # the next turns of the holding bots wait: games stay in flight
        for worker in shared.workers:
            wait_for_engines(worker.pid, proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    before = read_journal(directory / JOURNAL_NAME).records
    assert len(before) < total
    # The scheduler dropped the dead coordinator's tasks; each worker noticed and killed that game's engines, which
    # would otherwise hold their turn for a minute.
    assert engines_left([w.pid for w in shared.workers], timeout=5) == []
    hold.unlink()

    r = run_cli("tournament", "--resume", str(directory), "--cluster", shared.address)
    assert r.returncode == 0, r.stderr
    assert f"{len(before)} already played" in r.stderr
    after = assert_each_game_once(directory, total)
    assert {k: after[k] for k in before} == before  # nothing played twice: the journal's games are untouched


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_a_worker_sigkilled_mid_game_its_game_is_played_again_elsewhere_and_counted_once(tmp_path: Path) -> None:
    path = os.environ["PATH"]
    with dask_cluster(tmp_path / "cluster", [path, path]) as cluster:
        directory = tmp_path / "t"
        (holding, _, _), hold = holding_engines(tmp_path)
        # An engine that outlives the end of its input: only the supervision can end it with its worker.
        stubborn = f"stubborn={sys.executable} -m quarto_arena.engines.testing.ignores_quit"
        args = ["play", holding, stubborn, "--games", "4", "--tc", "st=60", "--out", str(directory)]
        proc = subprocess.Popen(
            [*CLI, *args, "--cluster", cluster.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        victim = cluster.workers[0]
        wait_for_games(directory / JOURNAL_NAME, 2, proc)
        hold.touch()
        engines_of_victim = wait_for_engines(victim.pid, proc)  # a game in flight there, held
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        # Its engines die with it, as on one machine.
        assert engines_left([victim.pid], timeout=5) == []
        deadline = time.monotonic() + 5
        while (alive := [p for p in engines_of_victim if _alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.05)  # a dying process loses its environment (its marker) a moment before it is gone
        assert alive == []
        hold.unlink()
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
        assert "Traceback" not in stderr
    assert_each_game_once(directory, 4)


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_adjudication_on_the_workers(shared: DaskCluster, tmp_path: Path) -> None:
    out = tmp_path / "a"
    args = ["play", "random", "greedy", "--games", "2", "--adjudicate", "12", "--tc", "st=1", "--out", str(out)]
    r = run_cli(*args, "--cluster", shared.address)
    assert r.returncode == 0, r.stderr
    ends = Counter(r.termination for r in read_journal(out / JOURNAL_NAME).records.values())
    assert ends[Termination.ADJUDICATED] >= 1 and sum(ends.values()) == 2, ends


@pytest.mark.slow
@pytest.mark.extra("dask")
def test_sprt_on_a_cluster_stops_submitting_once_it_decides(shared: DaskCluster, c_bot: Path, tmp_path: Path) -> None:
    out = tmp_path / "s"
    args = ["sprt", str(c_bot), "random", "--elo0", "0", "--elo1", "150", "--tc", "st=1", "--out", str(out)]
    r = run_cli(*args, "--cluster", shared.address)
    assert r.returncode == 0, r.stderr  # H1: the C bot (greedy) beats random
    played = read_journal(out / JOURNAL_NAME).records
    lines = (out / "aborted.jsonl").read_text().splitlines() if (out / "aborted.jsonl").exists() else []
    aborted = [json.loads(a) for a in lines]
    # Games running when it decided were cancelled (at most one per worker thread), none counted.
    assert len(aborted) <= 2
    assert all(a["termination"] == "aborted" for a in aborted)
    cancelled = {a["game_id"] for a in aborted}
    assert not cancelled & set(played)
    # Each game the runner took was either counted or cancelled: together a prefix of the schedule, without a gap.
    # The counted games alone may have one: a game that takes longer than the two after it on the other worker is
    # still running when their pair decides (CI saw games 15 and 17 counted, 16 cancelled).
    assert sorted([*played, *cancelled]) == list(range(1, len(played) + len(cancelled) + 1))
    # It decided on a whole pair: the last game written completes one (its partner is counted too).
    last = list(played)[-1]
    assert (last + 1 if last % 2 else last - 1) in played
    r = run_cli("sprt", "--resume", str(out), "--cluster", shared.address)
    assert r.returncode == 0, r.stderr
    assert sorted(read_journal(out / JOURNAL_NAME).records) == sorted(played)  # decided: nothing more to play


def _worker_ports(cluster: DaskCluster) -> list[str]:
    """The port of each worker, from its log, in the order the workers were started."""
    ports = []
    for k in range(len(cluster.workers)):
        log = (cluster.logs / f"worker{k}.log").read_text()
        ports.append(log.split("Start worker at:")[1].split()[0].rsplit(":", 1)[1])
    return ports


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.extra("dask")
def test_a_lease_whose_copy_the_memory_manager_dropped_is_still_held_until_released(shared: DaskCluster) -> None:
    """The scheduler's memory manager keeps one copy of a run's lease (no task waits for it): the workers whose copy
    went (or that never had one) still count it held, as the scheduler says, and keep the run's engines warm, until
    the coordinator lets it go. (The shared cluster's manager runs every 50 ms: a long run's every 2 s.) Before, a
    worker took the dropped copy for the end of the run and quit its engines between two games: 6 processes of a bot
    for 8 games, not 4."""
    from distributed import Client

    def _lease_state(key: str, dask_worker: Any) -> bool | None:  # on a worker (a local function: sent by value)
        """What the worker's pool makes of the lease ``key`` now (arena/cluster/warm.py)."""
        from quarto_arena.arena.cluster.task import _lease_held
        from quarto_arena.arena.cluster.warm import worker_engines

        pool = worker_engines()
        pool.watch_leases(dask_worker.state.tasks, _lease_held(dask_worker))
        return pool._lease_state(key)

    with Client(shared.address, timeout=30) as client:
        lease = client.scatter("a coordinator's token", broadcast=True, hash=False)
        key = str(lease.key)
        assert set(client.run(_lease_state, key).values()) == {True}  # a copy each, or one already dropped
        deadline = time.monotonic() + 30
        while len(client.who_has([lease])[key]) > 1:
            assert time.monotonic() < deadline, "the memory manager kept every copy"
            time.sleep(0.05)
        for _ in range(3):  # asked, then answered by the scheduler, then asked again ASK_EVERY later
            assert set(client.run(_lease_state, key).values()) == {True}
            time.sleep(0.6)
        client.cancel([lease])
        del lease
        while set(client.run(_lease_state, key).values()) != {False}:
            assert time.monotonic() < deadline, "a worker still counts a released lease held"
            time.sleep(0.1)


@pytest.mark.extra("dask")
def test_workers_keep_engines_warm_between_games_and_let_them_go_with_the_run(
    shared: DaskCluster, tmp_path: Path
) -> None:
    """Each worker keeps one process of an engine for all the games it plays (the check before the games starts one
    more per worker), and quits them once the run is over.

    At st=1, a time control the load does not reach: at st=0.5, with another CI run beside it (load 11 on 2 CPUs),
    ``random`` once went 555 ms without its turn on a worker and lost on time; the subject here is the warm engines."""
    pidfile = tmp_path / "pids"
    slow = f"slow={sys.executable} -m quarto_arena.engines.testing.slow_start {pidfile} 0 0"
    directory = tmp_path / "m"
    r = run_cli(
        "play", slow, "random", "--games", "8", "--tc", "st=1", "--cluster", shared.address, "--out", str(directory)
    )
    assert r.returncode == 0, r.stderr
    assert_each_game_once(directory, 8)
    started = pidfile.read_text().split()
    assert len(started) <= 2 * len(shared.workers), started  # 8 games, and not 8 processes more than the check's
    assert engines_left([w.pid for w in shared.workers], timeout=5) == []
