"""The bot SDK as an arena sees it: real engine processes spoken to with raw UQI lines, over stdio and ZeroMQ."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
from procs import free_port
from quarto_arena.protocol.bot import EndpointError, SearchContext, parse_endpoint, time_budget
from quarto_arena.protocol.notation import parse_position
from quarto_arena.protocol.rules import Position, turn_of
from quarto_arena.protocol.sdk import fair_share_ms, machine_load
from quarto_arena.protocol.uqi import Go, TurnReply, parse_reply

GREEDY = [sys.executable, "-m", "quarto_arena.engines.greedy"]
DEADLINE = 10.0  # seconds to wait for an expected line: a liveness bound, not a performance assertion
QUIET = 0.3  # seconds of silence that show a line is *not* coming


class Engine:
    """An engine process in its own process group, read line by line with deadlines; always killed and reaped."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read_out, daemon=True).start()
        self._err_thread = threading.Thread(target=self._read_err, daemon=True)
        self._err_thread.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw.decode())
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send(self, *lines: str, end: str = "\n") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("".join(line + end for line in lines).encode())
        self.proc.stdin.flush()

    def recv(self, timeout: float = DEADLINE) -> str:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "the engine closed its output"
        assert line.endswith("\n")
        return line.rstrip("\n")

    def silent(self, seconds: float = QUIET) -> bool:
        try:
            line = self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        pytest.fail(f"unexpected line {line!r}")

    def handshake(self) -> list[str]:
        self.send("uqi 1")
        out = []
        while not (line := self.recv()).startswith("uqiok"):
            out.append(line)
        assert line == "uqiok 1"
        return out

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = DEADLINE) -> int:
        code = self.proc.wait(timeout)
        self._err_thread.join(DEADLINE)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(DEADLINE)
        self._err_thread.join(DEADLINE)  # what the engine wrote to stderr is all in self.stderr once this returns
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):  # a broken pipe to an engine that is already gone
                    stream.close()


@pytest.fixture
def greedy() -> Iterator[Engine]:
    engine = Engine(GREEDY)
    yield engine
    engine.kill()


def write_bot(tmp_path: Path, body: str) -> list[str]:
    """A bot script built on the SDK; returns the command that runs it."""
    path = tmp_path / "bot.py"
    path.write_text(
        "from quarto_arena.protocol.bot import run\n"
        "from quarto_arena.protocol.rules import Position, Turn\n" + textwrap.dedent(body)
    )
    return [sys.executable, str(path)]


# --- stdio -----------------------------------------------------------------------------------------------------


def test_handshake_declares_identity_and_options(greedy: Engine) -> None:
    lines = greedy.handshake()
    assert lines == [
        "id name Greedy 1.0",
        "id author quarto-arena",
        "option name Seed type spin min 0 max 2147483647 default 0",
    ]
    for line in lines:
        parse_reply(line)


def test_options_accept_good_values_and_name_bad_ones(greedy: Engine) -> None:
    greedy.handshake()
    greedy.send("setoption name Seed value 42", "setoption name seed value 7", "isready")
    assert greedy.recv() == "readyok"  # no error for good values, ids compared case-insensitively
    greedy.send("setoption name Seed value many")
    assert greedy.recv() == "error setoption option Seed: value 'many' is not an integer"
    greedy.send("setoption name Seed value -1")
    assert greedy.recv() == "error setoption option Seed: value -1 is outside 0..2147483647"
    greedy.send("setoption name Seed")
    assert greedy.recv() == "error setoption option Seed needs a value"
    greedy.send("setoption name Hash value 3")
    assert greedy.recv() == "error setoption unknown option Hash"


def test_seed_makes_play_reproducible(tmp_path: Path) -> None:
    def game_turns(seed: int) -> list[str]:
        engine = Engine(GREEDY)
        try:
            engine.handshake()
            engine.send(f"setoption name Seed value {seed}")
            engine.send("newgame shapes standard attributes color,shape,height,fill claims auto")
            played: list[str] = []
            for _ in range(6):
                engine.send("position startpos" + (" turns " + " ".join(played) if played else ""), "go depth 1")
                played.append(engine.recv().split()[1])
            return played
        finally:
            engine.kill()

    assert game_turns(11) == game_turns(11)


def test_a_game_in_the_spec_format(greedy: Engine) -> None:
    greedy.handshake()
    greedy.send("newgame shapes standard attributes color,shape,height,fill claims auto", "isready")
    assert greedy.recv() == "readyok"
    greedy.send("position startpos turns 3 c47 d4e d35 a41", "go movetime 1000")
    assert greedy.recv() == "turn b4"  # the win of SPEC §7.2


def test_strict_claim_of_a_missed_alignment(greedy: Engine) -> None:
    greedy.handshake()
    greedy.send("newgame shapes standard attributes color,shape,height,fill claims strict")
    greedy.send("position ..../..../..../012. 3 turns d14", "go movetime 500")
    assert greedy.recv() == "turn !"
    # With the call rule, the winning placement itself must be called.
    greedy.send("position ..../..../..../012. 3", "go movetime 500")
    assert greedy.recv() == "turn d1!"


def test_isready_during_infinite_search_and_exactly_one_turn_after_stop(greedy: Engine) -> None:
    greedy.handshake()
    greedy.send("newgame shapes standard attributes color,shape,height,fill claims auto")
    greedy.send("position ..../..../..../.... 7", "go infinite")
    greedy.send("isready")
    assert greedy.recv() == "readyok"  # answered while the search runs: no turn before stop
    assert greedy.silent()
    greedy.send("stop")
    reply = parse_reply(greedy.recv())
    assert isinstance(reply, TurnReply)
    parse_position("..../..../..../.... 7").apply(reply.turn)
    greedy.send("stop", "isready")  # a stop with no search running is ignored, and no second turn follows
    assert greedy.recv() == "readyok"
    assert greedy.silent()


def test_commands_during_a_search_are_refused_and_the_search_goes_on(greedy: Engine) -> None:
    # SPEC §4.10 and the transcript of §7.6.
    greedy.handshake()
    greedy.send("newgame shapes standard attributes color,shape,height,fill claims auto")
    greedy.send("position ..../..../..../.... 7", "go infinite")
    greedy.send("position startpos", "go depth 1", "newgame shapes advanced attributes color claims strict")
    greedy.send("setoption name Seed value 3", "isready")
    for command in ("position", "go", "newgame", "setoption"):
        assert greedy.recv() == f"error {command} a search is running (send stop first)"
    assert greedy.recv() == "readyok"
    greedy.send("stop")
    reply = parse_reply(greedy.recv())
    assert isinstance(reply, TurnReply)
    parse_position("..../..../..../.... 7").apply(reply.turn)  # the turn of the position being searched
    greedy.send("isready")
    assert greedy.recv() == "readyok"
    assert greedy.silent()


def test_uqi_during_a_search_abandons_it(greedy: Engine) -> None:
    greedy.handshake()
    greedy.send("position ..../..../..../.... 7", "go infinite", "isready")
    assert greedy.recv() == "readyok"
    greedy.send("uqi 1")
    assert greedy.recv() == "id name Greedy 1.0"
    while greedy.recv() != "uqiok 1":
        pass
    greedy.send("stop", "isready")  # nothing left to stop: the abandoned search never answers
    assert greedy.recv() == "readyok"
    assert greedy.silent()


def test_unknown_and_malformed_commands_get_error_lines(greedy: Engine) -> None:
    greedy.send("hello", "go ponder", "position startpos turns zz", "newgame shapes round attributes all claims auto")
    assert greedy.recv() == "error unknown command hello"
    assert greedy.recv() == "error go: unknown limit 'ponder'"
    assert greedy.recv().startswith("error position: turn 'zz'")
    assert greedy.recv() == "error newgame unsupported shapes 'round': expected standard or advanced"
    greedy.send("isready")
    assert greedy.recv() == "readyok"  # and it carries on


def test_go_without_a_valid_position_is_an_error(greedy: Engine) -> None:
    greedy.send("go movetime 100")
    assert greedy.recv() == "error go: no position was sent"
    greedy.send("position startpos turns 0 a1f b1f")
    assert greedy.recv() == "error position piece f is the piece being placed"
    greedy.send("go movetime 100")
    assert greedy.recv().startswith("error go: the last position was invalid")
    greedy.send("position 0123/..../..../.... -", "go movetime 100")  # row 4 is light round: the game is over
    assert greedy.recv() == "error go: the game is over in this position, there is no turn to play"


def test_crlf_line_ends_are_accepted(greedy: Engine) -> None:
    greedy.send("uqi", end="\r\n")
    assert greedy.recv() == "id name Greedy 1.0"
    while greedy.recv() != "uqiok 1":
        pass
    greedy.send("position startpos turns 3 c47 d4e d35 a41", "go movetime 1000", "isready", end="\r\n")
    assert greedy.recv() == "turn b4"
    assert greedy.recv() == "readyok"


def test_exits_at_end_of_input_in_the_middle_of_a_search(greedy: Engine) -> None:
    greedy.handshake()
    greedy.send("position startpos", "go infinite", "isready")
    assert greedy.recv() == "readyok"
    greedy.close_stdin()
    assert greedy.wait() == 0


def test_quit_exits(greedy: Engine) -> None:
    greedy.handshake()
    greedy.send("quit")
    assert greedy.wait() == 0
    assert greedy.lines.get(timeout=DEADLINE) is None  # nothing after quit


def test_a_search_that_raises_still_answers_a_legal_turn(tmp_path: Path) -> None:
    engine = Engine(
        write_bot(
            tmp_path,
            """
            def choose(position: Position, ctx: object) -> Turn:
                raise RuntimeError("boom in the bot")

            run(choose)
            """,
        )
    )
    try:
        assert engine.handshake() == ["id name choose"]
        engine.send("position startpos turns 3 c47 d4e d35 a41", "go movetime 200")
        assert engine.recv() == "turn b4"  # the fallback takes a win on the board
        engine.send("position startpos turns 0", "go movetime 200")
        reply = parse_reply(engine.recv())
        assert isinstance(reply, TurnReply)
        Position.start().apply(turn_of(give=0)).apply(reply.turn)
        engine.send("quit")
        assert engine.wait() == 0
    finally:
        engine.kill()
    assert b"RuntimeError: boom in the bot" in engine.stderr
    assert b"Traceback" in engine.stderr


def test_an_illegal_turn_from_the_bot_is_replaced(tmp_path: Path) -> None:
    engine = Engine(
        write_bot(
            tmp_path,
            """
            from quarto_arena.protocol.rules import turn_of

            def choose(position: Position, ctx: object) -> Turn:
                return turn_of(claim=True)  # a false claim in the standard game

            run(choose)
            """,
        )
    )
    try:
        engine.handshake()
        engine.send("position startpos", "go movetime 100")
        assert engine.recv() == "turn 0"
    finally:
        engine.kill()
    assert b"illegal turn !" in engine.stderr


def test_exits_at_end_of_input_even_when_the_bot_ignores_stop(tmp_path: Path) -> None:
    engine = Engine(
        write_bot(
            tmp_path,
            """
            def choose(position: Position, ctx: object) -> Turn:
                while True:
                    pass

            run(choose)
            """,
        )
    )
    try:
        engine.handshake()
        engine.send("position startpos", "go infinite", "isready")
        assert engine.recv() == "readyok"
        engine.close_stdin()
        assert engine.wait() == 0
    finally:
        engine.kill()


def test_info_lines_and_search_context(tmp_path: Path) -> None:
    engine = Engine(
        write_bot(
            tmp_path,
            """
            from quarto_arena.protocol.bot import Bot, SearchContext
            from quarto_arena.protocol.uqi import OptionSpec, OptionType, Score

            class Waiter(Bot):
                name = "Waiter"
                options = (OptionSpec("Style", OptionType.COMBO, "calm", vars=("calm", "wild")),)

                def search(self, position: Position, ctx: SearchContext) -> Turn:
                    turns = position.legal_turns()
                    ctx.info(depth=1, score=Score("value", 5), nodes=len(turns), pv=turns[:1])
                    ctx.info(string=f"style {ctx.options['style']} budget {ctx.budget}")
                    while not ctx.should_stop():
                        pass
                    return turns[-1]

            run(Waiter())
            """,
        )
    )
    try:
        engine.handshake()
        engine.send("setoption name STYLE value WILD", "position startpos", "go movetime 200")
        assert engine.recv() == "info depth 1 score value 5 nodes 16 pv 0"
        # At least 50 ms kept back (SPEC §4.5), more on a machine loaded beyond one process per CPU.
        style, budget = engine.recv().rsplit(" ", 1)
        assert style == "info string style wild budget" and 0 < float(budget) <= 0.15
        assert engine.recv() == "turn f"  # the bot's own budget ended the search
    finally:
        engine.kill()


# --- ZeroMQ ----------------------------------------------------------------------------------------------------


class ZmqArena:
    """The arena side of SPEC §3.3: a DEALER that connects, one frame per line."""

    def __init__(self, context: zmq.Context[zmq.Socket[bytes]], endpoint: str, watch: bool = False) -> None:
        self.sock = context.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        # Watching for the connection's drop (before it is made, so that no drop goes unseen).
        self.drops = self.sock.get_monitor_socket(zmq.EVENT_DISCONNECTED) if watch else None
        self.sock.connect(endpoint)

    def send(self, *lines: str) -> None:
        for line in lines:
            self.sock.send(line.encode())

    def recv(self, timeout: float = DEADLINE) -> str:
        if not self.sock.poll(int(timeout * 1000)):
            pytest.fail("no message from the engine")
        frames = self.sock.recv_multipart()
        assert len(frames) == 1
        return frames[0].decode()

    def silent(self, seconds: float = QUIET) -> bool:
        assert not self.sock.poll(int(seconds * 1000)), "unexpected message"
        return True

    def close(self) -> None:
        if self.drops is not None:
            self.sock.disable_monitor()
            self.drops.close()
        self.sock.close()

    @classmethod
    def handshake(cls, context: zmq.Context[zmq.Socket[bytes]], endpoint: str) -> tuple[ZmqArena, list[str]]:
        """Connects and sends ``uqi``; returns the arena and the handshake's replies up to ``uqiok``.

        SPEC §3.3: an arena that connects while the server switches sessions may land on the closing socket; when
        that connection drops before any handshake reply, it connects again (a fresh socket) and starts over, as
        the real arena does. A plain DEALER would reconnect by itself, but its ``uqi`` went down with the old
        connection: hence the drop is watched, not waited out.
        """
        for _ in range(5):
            arena = cls(context, endpoint, watch=True)
            assert arena.drops is not None
            arena.send("uqi")
            poller = zmq.Poller()
            poller.register(arena.sock, zmq.POLLIN)
            poller.register(arena.drops, zmq.POLLIN)
            ready = dict(poller.poll(int(DEADLINE * 1000)))
            if arena.sock in ready:
                lines = [arena.recv()]
                while lines[-1] != "uqiok 1":
                    lines.append(arena.recv())
                return arena, lines
            arena.close()
            if not ready:
                pytest.fail("no answer to uqi")
        pytest.fail("five connections dropped before any answer to uqi")


@pytest.fixture
def zmq_context() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield context
    # Not term(): a socket a failed test left open would block it forever (its linger is infinite).
    context.destroy(linger=0)


def test_zeromq_sessions_one_after_another(zmq_context: zmq.Context[zmq.Socket[bytes]]) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    server = Engine([*GREEDY, "--listen", endpoint])
    try:
        first = ZmqArena(zmq_context, endpoint)
        first.send("uqi 1")
        assert first.recv() == "id name Greedy 1.0"
        assert first.recv() == "id author quarto-arena"
        assert first.recv().startswith("option name Seed")
        assert first.recv() == "uqiok 1"
        first.send("setoption name Seed value 5", "setoption name Seed value x", "hello")
        assert first.recv() == "error setoption option Seed: value 'x' is not an integer"
        assert first.recv() == "error unknown command hello"
        first.send("newgame shapes advanced attributes color,fill claims strict", "isready")
        assert first.recv() == "readyok"
        first.send("position ..../..../..../.... 7", "go infinite", "isready")
        assert first.recv() == "readyok"
        first.silent()
        first.send("stop")
        assert first.recv().startswith("turn ")
        first.send("stop", "isready")
        assert first.recv() == "readyok"
        first.send("quit")
        first.close()

        second, handshake = ZmqArena.handshake(zmq_context, endpoint)
        assert handshake[0] == "id name Greedy 1.0"
        second.send("position startpos turns 3 c47 d4e d35 a41", "go movetime 500")
        assert second.recv() == "turn b4"
        second.send("quit")
        second.close()

        assert server.proc.poll() is None  # quit ended the sessions, not the server
        server.proc.send_signal(signal.SIGTERM)
        assert server.wait() == 0
    finally:
        server.kill()


# The greedy bot served on argv[1], its thread held once the endpoint is bound until a line comes on its standard
# input, as a busy machine may hold a server's thread while libzmq's own I/O thread goes on accepting connections.
HELD_ONCE_BOUND = """
import sys
from quarto_arena.engines.greedy import GreedyBot
from quarto_arena.protocol.bot import serve_zmq
serve_zmq(GreedyBot(), sys.argv[1], on_bound=lambda: (print("bound", flush=True), sys.stdin.readline()))
"""


def test_a_port_probe_does_not_end_the_session_of_the_arena_after_it(
    zmq_context: zmq.Context[zmq.Socket[bytes]],
) -> None:
    # A port probe (procs.wait_listening's: connect, close) comes and goes, then the arena connects and sends uqi,
    # while the server's thread is held: it finds the probe's connection and disconnection and the arena's connection
    # queued on its monitor, and the uqi on its socket. The server used to end the session as soon as the probe's
    # disconnection brought its count of connections to zero, right after answering the uqi (or before its replies
    # left): the arena's session then failed with a disconnect. Every test that serves an engine probes its port so.
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    server = Engine([sys.executable, "-c", HELD_ONCE_BOUND, endpoint])
    try:
        assert server.recv() == "bound"
        with socket.create_connection(("127.0.0.1", port)):
            pass
        arena = ZmqArena(zmq_context, endpoint, watch=True)
        assert arena.drops is not None
        arena.send("uqi 1")
        time.sleep(QUIET)  # for the probe's disconnection and the uqi to reach the held server (not an assertion)
        server.send("go")
        lines = [arena.recv()]
        while lines[-1] != "uqiok 1":
            lines.append(arena.recv())
        arena.send("isready")
        assert arena.recv() == "readyok"
        assert not arena.drops.poll(int(QUIET * 1000)), "the server dropped the arena's connection"
        arena.close()
    finally:
        server.kill()


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("tcp//127.0.0.1:5555", "expected tcp://HOST:PORT, ipc://PATH or a port number"),
        ("tcp://127.0.0.1:99999", "port '99999' is not a number in 1..65535"),
        ("tcp://127.0.0.1", "expected tcp://HOST:PORT"),
        ("tcp://0.0.0.0:5555", "is not a loopback address; pass --allow-remote"),
        ("ipc://", "ipc:// needs a path"),
    ],
)
def test_bad_listen_endpoint_exits_2_with_one_line(endpoint: str, problem: str) -> None:
    done = subprocess.run([*GREEDY, "--listen", endpoint], capture_output=True, timeout=DEADLINE, check=False)
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert problem in lines[0]
    assert done.stdout == b""


def test_endpoint_in_use_exits_2_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*GREEDY, "--listen", f"tcp://127.0.0.1:{port}"], capture_output=True, timeout=DEADLINE, check=False
        )
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert f"cannot listen on tcp://127.0.0.1:{port}" in lines[0]


def test_parse_endpoint_defaults_to_loopback() -> None:
    assert parse_endpoint("5555") == "tcp://127.0.0.1:5555"
    assert parse_endpoint("tcp://localhost:5555") == "tcp://127.0.0.1:5555"
    assert parse_endpoint("tcp://[::1]:5555") == "tcp://[::1]:5555"
    assert parse_endpoint("ipc:///tmp/bot.sock") == "ipc:///tmp/bot.sock"
    assert parse_endpoint("tcp://0.0.0.0:5555", allow_remote=True) == "tcp://0.0.0.0:5555"
    with pytest.raises(EndpointError, match="not a loopback address"):
        parse_endpoint("tcp://192.168.1.2:5555")


# --- time budget -----------------------------------------------------------------------------------------------


def test_time_budget() -> None:
    start = Position.start()
    assert time_budget(Go(infinite=True)) is None
    # SPEC §4.5: depth and nodes alone still answer within the safety time (10 s), a second kept back.
    assert time_budget(Go(depth=3)) == pytest.approx(9.0)
    assert time_budget(Go(nodes=10**12)) == pytest.approx(9.0)
    assert time_budget(Go(infinite=True, depth=3)) is None
    assert time_budget(Go()) == 1.0
    # A movetime: 50 ms kept back (a loaded machine), never more than half of it.
    assert time_budget(Go(movetime=1000)) == pytest.approx(0.950)
    assert time_budget(Go(movetime=100)) == pytest.approx(0.050)
    assert time_budget(Go(movetime=40)) == pytest.approx(0.020)
    assert time_budget(Go(movetime=1000), overhead_ms=10) == pytest.approx(0.990)  # a quiet machine
    # A machine loaded twice over: twice as much kept back, and at most a third of the limit planned.
    assert time_budget(Go(movetime=1000), load=2.0) == pytest.approx(0.900)
    assert time_budget(Go(movetime=100), load=2.0) == pytest.approx(0.1 / 3)
    assert time_budget(Go(movetime=50), load=9.0) == pytest.approx(0.005)
    assert time_budget(Go(movetime=100), load=0.3) == time_budget(Go(movetime=100))  # below one per CPU: as at one
    assert machine_load() >= 1.0
    # The opening give: this give and 8 placements, 9 turns of ours left; 60 s / 9 + 3/4 of the increment.
    assert time_budget(Go(time=60000, inc=1000), start) == pytest.approx(60 / 9 + 0.75 - 0.05)
    # Its answer: 16 empty squares and a piece in hand, 8 placements left.
    assert time_budget(Go(time=60000, inc=1000), start.apply(turn_of(give=7))) == pytest.approx(7.5 + 0.75 - 0.05)
    # Never more than a quarter of the clock, even with a big increment (and half of that kept back).
    assert time_budget(Go(time=100, inc=5000), start) == pytest.approx(0.0125)
    assert fair_share_ms(Go(time=100, inc=5000), start) == pytest.approx(25)
    # SPEC §4.5: with time and movetime both, the smaller limit counts, whichever it is.
    assert time_budget(Go(time=100, inc=5000, movetime=1000), start) == pytest.approx(0.0125)
    assert time_budget(Go(time=60000, movetime=1000), start) == pytest.approx(0.950)
    # A moves-per-period control: the clock is shared over the turns left in the period, when fewer, and a quarter
    # of it at most (at movestogo 2 the share would be half of it).
    assert time_budget(Go(time=60000, movestogo=2), start) == pytest.approx(15.0 - 0.05)
    assert time_budget(Go(time=60000, movestogo=40), start) == pytest.approx(60 / 9 - 0.05)  # the 9 turns left
    ctx = SearchContext(Go(movetime=100), position=start)
    assert ctx.budget == pytest.approx(0.050)
    assert not ctx.stopped
    ctx.stop()
    assert ctx.stopped and ctx.should_stop()
    assert SearchContext(budget=0.0).should_stop()
    assert not SearchContext(Go(infinite=True)).should_stop()


def test_should_stop_turns_true_when_the_budget_is_spent() -> None:
    ctx = SearchContext(budget=0.05)
    while not ctx.should_stop():
        time.sleep(0.005)
    assert ctx.elapsed() >= 0.05
    assert ctx.remaining() == 0.0


def test_on_stop_reaches_a_search_that_cannot_poll() -> None:
    """A callback registered before stop runs when stop arrives, once; one registered after runs at once."""
    ctx = SearchContext(Go(infinite=True))
    calls: list[str] = []
    ctx.on_stop(lambda: calls.append("early"))
    assert calls == []
    stopper = threading.Thread(target=ctx.stop)
    stopper.start()
    stopper.join()
    assert calls == ["early"] and ctx.stopped
    ctx.stop()  # a second stop calls nothing again
    assert calls == ["early"]
    ctx.on_stop(lambda: calls.append("late"))
    assert calls == ["early", "late"]
