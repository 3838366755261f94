"""Engine sessions against real engines (the Python, C and JS greedy bots) and, for protocol corner cases, the
scripted transport: handshake, options, isready, newgame, search, stop, quit, and the error messages."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from quarto_arena.arena.engine import (
    Deadlines,
    EngineConfig,
    EngineError,
    EngineId,
    EngineSession,
    EngineTerminated,
    Handshake,
    ReadyPing,
    Search,
    SearchFailed,
)
from quarto_arena.arena.records import EngineIdentity, Termination
from quarto_arena.arena.transport import BadLine, ProcessTransport
from quarto_arena.arena.transport.testing import ScriptedTransport
from quarto_arena.engines.registry import command
from quarto_arena.protocol.notation import parse_turns
from quarto_arena.protocol.rules import STANDARD, Variant
from quarto_arena.protocol.text import safe_text
from quarto_arena.protocol.uqi import Go, PositionCommand

T = TypeVar("T")
ENGINES_DIR = Path(__file__).resolve().parent.parent / "engines"
FAST = Deadlines(startup=10, ready=5, newgame=5, quit=1, safety=10)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def group_gone(pgid: int) -> bool:
    """True when no process of the group is left (zombies included: they still count as members)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="session")
def c_bot(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    source = ENGINES_DIR / "c" / "quarto_bot.c"
    if not source.exists():
        pytest.skip("engines/c/quarto_bot.c is not there yet")
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc)")
    exe = tmp_path_factory.mktemp("cbot") / "quarto_bot"
    subprocess.run([cc, "-O2", "-o", str(exe), str(source)], check=True)
    return [str(exe)]


@pytest.fixture(scope="session")
def js_bot() -> list[str]:
    source = ENGINES_DIR / "js" / "quarto_bot.js"
    if not source.exists():
        pytest.skip("engines/js/quarto_bot.js is not there yet")
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    return [node, str(source)]


@pytest.fixture(params=["python", "c", "js"])
def greedy_argv(request: pytest.FixtureRequest) -> list[str]:
    """The greedy engine in each language."""
    if request.param == "python":
        return command("greedy")
    return list(request.getfixturevalue(f"{request.param}_bot"))


def session(argv: list[str], name: str = "greedy", **options: str) -> EngineSession:
    return EngineSession(EngineConfig(name, command=tuple(argv), options=options), deadlines=FAST)


# --- real engines ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_handshake_ping_and_quit_reaps_the_engine(greedy_argv: list[str]) -> None:
    async def main() -> None:
        s = session(greedy_argv)
        ident = await s.start()
        assert ident.name and "greedy" in ident.name.lower()
        assert ident.version == 1
        assert "seed" in ident.options
        assert s.alive
        await s.new_game(Variant())  # an isready round trip: the engine answers in step
        transport = s.transport
        assert isinstance(transport, ProcessTransport)
        await s.quit()
        assert transport.returncode == 0, transport.exit_info()  # it obeyed quit: not killed
        assert not s.alive
        assert group_gone(transport.pgid)

    run(main())


def test_options_are_checked_before_they_are_sent(greedy_argv: list[str]) -> None:
    async def main() -> None:
        ok = session(greedy_argv, Seed="42")
        await ok.start()
        await ok.quit()
        unknown = session(greedy_argv, Hash="16")
        with pytest.raises(EngineError, match=r"greedy \(pid \d+\): unknown option 'Hash' \(declared: Seed\)") as e:
            await unknown.start()
        assert e.value.termination is Termination.ENGINE_ERROR
        assert not unknown.alive and group_gone(unknown.pids[-1])
        bad = session(greedy_argv, seed="many")
        with pytest.raises(EngineError, match="option Seed: value 'many' is not an integer"):
            await bad.start()
        out_of_range = session(greedy_argv, SEED="-1")
        with pytest.raises(EngineError, match=r"option Seed: value -1 is outside 0\.\.2147483647"):
            await out_of_range.start()

    run(main())


def test_newgame_and_searches(greedy_argv: list[str]) -> None:
    async def main() -> None:
        s = session(greedy_argv)
        await s.start()
        try:
            await s.new_game(STANDARD)
            out = await s.search(PositionCommand(None), Go(movetime=1000), 2.0)
            assert out.turn is not None and out.termination is None
            assert out.turn is not None and out.turn.place is None and out.turn.give is not None
            assert 0 <= out.ms < 2000
            # A position with the piece in hand and a winning square: greedy takes the win.
            ask = PositionCommand("..../..../..../012. 3", ())
            out = await s.search(ask, Go(time=5000, inc=0, otime=5000, oinc=0), 2.0)
            assert out.turn is not None and str(out.turn) == "d1"
        finally:
            await s.quit()

    run(main())


def test_stop_ends_an_infinite_search_with_one_turn(greedy_argv: list[str]) -> None:
    async def main() -> None:
        s = session(greedy_argv)
        await s.start()
        try:
            await s.new_game(STANDARD)
            task = asyncio.create_task(s.search(PositionCommand(None, tuple(parse_turns("7"))), Go(infinite=True), 5))
            await asyncio.sleep(0.05)
            await s.stop()
            out = await task
            assert out.turn is not None, out.detail
            assert out.turn is not None and out.turn.place is not None
            await s.new_game(Variant())  # still in step: exactly one turn came, then readyok
        finally:
            await s.quit()

    run(main())


def test_the_answer_to_an_abandoned_search_is_not_reported_as_the_engines_fault(
    greedy_argv: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    # When a run stops (the SPRT decided, a signal), the arena gives up the searches in flight; the engine's turn
    # then comes with nothing waiting for it. That is the arena's doing: no "no command is waiting" warning.
    async def main() -> None:
        s = session(greedy_argv)
        await s.start()
        try:
            await s.new_game(STANDARD)
            task = asyncio.create_task(s.search(PositionCommand(None, tuple(parse_turns("7"))), Go(infinite=True), 5))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await s.stop()  # the engine answers the abandoned search now
            for _ in range(500):  # until its turn has been read (the session reads it to the abandoned search's end)
                if s._abandoned is None:
                    break
                await asyncio.sleep(0.01)
            assert s._abandoned is None
            await s.new_game(Variant())  # still in step
            s.line("turn a1")  # a line nobody asked for is still the engine's fault
        finally:
            await s.quit()

    with caplog.at_level("WARNING", logger="quarto_arena.arena.engine"):
        run(main())
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["greedy: ignored 'turn a1': no command is waiting for an answer"], warned


def test_restart_after_kill_gives_a_new_process(greedy_argv: list[str]) -> None:
    async def main() -> None:
        s = session(greedy_argv)
        await s.start()
        first = s.pids[-1]
        await s.kill()
        assert not s.alive and group_gone(first)
        await s.restart()
        assert s.alive and s.pids[-1] != first and s.starts == 2
        await s.quit()

    run(main())


def test_identity_is_made_once_per_handshake() -> None:
    # The record's identity of an engine is kept while its handshake and config stay, and made again after a
    # restart (a new handshake), from what that one said.
    s = session([sys.executable, "-c", "pass"], Seed="3")
    assert s.identity() == EngineIdentity(source=s.config.describe(), options={"Seed": "3"})
    s.id = EngineId("greedy 1", "me", {}, 1)
    first = s.identity()
    assert first is s.identity()
    assert first == EngineIdentity("greedy 1", "me", 1, s.config.describe(), {"Seed": "3"})
    s.id = EngineId("greedy\x1b 2", None, {}, 2)  # a restart: a new handshake (control characters replaced)
    second = s.identity()
    assert second == EngineIdentity(safe_text("greedy\x1b 2"), None, 2, s.config.describe(), {"Seed": "3"})
    assert second.id_name is not None and "\x1b" not in second.id_name
    assert second is s.identity()


def test_missing_command_is_an_engine_terminated_error(tmp_path: Path) -> None:
    s = session([str(tmp_path / "no-such-bot")], name="ghost")
    with pytest.raises(EngineTerminated, match=r"ghost: cannot start '.*no-such-bot': No such file or directory"):
        run(s.start())


def test_stderr_goes_to_the_log_file(tmp_path: Path) -> None:
    script = "import sys; print('hello from stderr', file=sys.stderr, flush=True); sys.stdin.read()"
    log = tmp_path / "logs" / "bot.stderr.log"

    async def main() -> None:
        s = EngineSession(
            EngineConfig("talker", command=(sys.executable, "-c", script)),
            deadlines=Deadlines(startup=1.0, quit=0.5),
            stderr_path=log,
        )
        with pytest.raises(EngineError, match=r"talker \(pid \d+\): no answer within 1 s: the handshake") as e:
            await s.start()
        assert e.value.termination is Termination.STALL
        assert group_gone(s.pids[-1])

    run(main())
    assert "hello from stderr" in log.read_text()


def test_overlong_and_invalid_lines_are_bad_lines_not_crashes() -> None:
    # 5000 bytes without a line end, then a valid line: the long one is reported, then the valid one is read.
    script = (
        "import sys; sys.stdout.buffer.write(b'x' * 5000 + b'\\n' + b'\\xff\\xfe\\n' + b'ok\\r\\n'); "
        "sys.stdout.flush(); sys.stdin.read()"
    )

    async def main() -> None:
        t = await ProcessTransport.start("flooder", [sys.executable, "-c", script])
        try:
            with pytest.raises(BadLine, match="line longer than 4096 bytes"):
                await asyncio.wait_for(t.read_line(), 5)
            with pytest.raises(BadLine, match="invalid UTF-8"):
                await asyncio.wait_for(t.read_line(), 5)
            assert await asyncio.wait_for(t.read_line(), 5) == "ok"
        finally:
            await t.close(grace=0.5)
        assert t.returncode is not None and group_gone(t.pgid)

    run(main())


# --- the exchanges alone --------------------------------------------------------------------------------------


def test_handshake_exchange() -> None:
    h = Handshake("bot")
    assert h.lines() == ["uqi 1"]
    assert not h.feed("id name Bot 2")
    assert not h.feed("option name Depth type spin min 1 max 9 default 3")
    assert not h.feed("info string a stale line of an earlier session")  # a UQI reply, not one of the handshake
    assert h.feed("uqiok 1")
    ident = h.result()
    assert ident.name == "Bot 2" and ident.options["depth"].max == 9
    with pytest.raises(EngineError, match="speaks UQI version 2; the arena speaks 1"):
        Handshake("bot").feed("uqiok 2")
    with pytest.raises(EngineError, match="answered uqi with an error: uqi not today"):
        Handshake("bot").feed("error uqi not today")
    # A line that is no UQI at all (a banner) is logged and the handshake goes on, as UQI 1 (§5.5) said: bots that
    # print one played, and go on playing (a program that does not speak UQI fails at the start-up deadline).
    for before in ([], ["id name Bot"]):
        banner = Handshake("bot")
        for line in before:
            banner.feed(line)
        assert not banner.feed("hello, I am a bot")
        assert banner.feed("uqiok 1")
        assert banner.result().version == 1


def test_ready_ping_exchange() -> None:
    p = ReadyPing("bot", ["newgame shapes standard attributes color claims auto"])
    assert p.lines() == ["newgame shapes standard attributes color claims auto", "isready"]
    with pytest.raises(EngineError, match="refused newgame: error newgame unsupported"):
        p.feed("error newgame unsupported variant")
    lone = ReadyPing("bot")
    assert not lone.feed("error isready whatever")  # only logged
    assert lone.feed("readyok")


def test_search_exchange_keeps_the_last_score_and_fails_on_nonsense() -> None:
    s = Search("bot", PositionCommand(None), Go(movetime=100))
    assert s.lines() == ["position startpos", "go movetime 100"]
    assert not s.feed("info depth 1 score value 10 nodes 5")
    assert not s.feed("info depth 2 score win 3 pv 7")
    assert not s.feed("info depth x")  # a malformed info line is ignored
    assert not s.feed("error go thinking hard")
    assert s.feed("turn 7")
    turn, score = s.result()
    assert str(turn) == "7" and score == "win 3" and list(s.errors) == ["go thinking hard"]
    with pytest.raises(SearchFailed, match="malformed reply 'turn zz9'"):
        Search("bot", PositionCommand(None), Go()).feed("turn zz9")
    with pytest.raises(SearchFailed, match="unexpected reply during a search: 'uqiok 1'"):
        Search("bot", PositionCommand(None), Go()).feed("uqiok 1")


# --- sessions over the scripted transport ---------------------------------------------------------------------


def scripted_session(script: Callable[[ScriptedTransport], None], **options: str) -> tuple[EngineSession, Any]:
    t = ScriptedTransport("bot")
    script(t)
    s = EngineSession(EngineConfig("bot", command=("bot",), options=options), deadlines=Deadlines(startup=0.2))
    return s, t


def test_scripted_session_sets_options_and_searches() -> None:
    def script(t: ScriptedTransport) -> None:
        t.expect("uqi 1", ["id name Bot", "option name Style type combo var a var b default a", "uqiok 1"])
        t.expect("setoption name Style value b")
        t.expect("isready", ["readyok"])
        t.expect("newgame shapes standard attributes color,shape,height,fill claims auto")
        t.expect("isready", ["readyok"])
        t.expect("position startpos turns 3")
        t.expect("go movetime 50", ["info score draw", "turn a1e"])

    s, t = scripted_session(script, style="B")

    async def main() -> None:
        await s.start(t)
        await s.new_game(STANDARD)
        out = await s.search(PositionCommand(None, tuple(parse_turns("3"))), Go(movetime=50), 1.0)
        assert out.turn is not None and str(out.turn) == "a1e" and out.score == "draw"
        t.assert_done()

    run(main())


def test_scripted_session_failures() -> None:
    async def main() -> None:
        # setoption refused: an engine error before any game.
        s, t = scripted_session(
            lambda t: (
                t.expect("uqi 1", ["option name X type check default false", "uqiok 1"]),
                t.expect("setoption name X value true", ["error setoption cannot"]),
                t.expect("isready", ["readyok"]),
            ),
            X="TRUE",
        )
        with pytest.raises(EngineError, match="bot: refused setoption: error setoption cannot") as e:
            await s.start(t)
        assert e.value.termination is Termination.ENGINE_ERROR
        # no uqiok: a stall naming the phase and the last line.
        s, t = scripted_session(lambda t: t.expect("uqi 1", ["id name Mute"]))
        with pytest.raises(EngineError, match=r"bot: no answer within 0.2 s: the handshake.*last line 'id name Mute'"):
            await s.start(t)
        # it hangs up during the handshake.
        s, t = scripted_session(lambda t: (t.expect("uqi 1", ["id name Gone"]), t.hang_up()))
        with pytest.raises(EngineTerminated, match="bot: exited during the handshake"):
            await s.start(t)

    run(main())
