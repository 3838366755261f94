"""The C and JavaScript example bots and the deliberately broken bots, driven raw over pipes.

Every bot runs as a real process in its own process group, which is always killed in a ``finally``. The example
bots are checked against the rules core: every turn they return is legal, an immediate win is always taken, and
no turn hands the opponent an immediate win when a safe one exists. Each broken bot is checked to really show
its one fault, so the arena's fault tests can rely on them.
"""

from __future__ import annotations

import importlib
import os
import random
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path

import pytest
import quarto_arena.engines
from quarto_arena.arena.records import Termination
from quarto_arena.engines.testing import BROKEN, EXPECTED_TERMINATION, command
from quarto_arena.protocol.notation import format_position, parse_position, parse_variant
from quarto_arena.protocol.rules import IllegalTurn, Outcome, Position, Turn, Variant
from quarto_arena.protocol.uqi import (
    ErrorReply,
    IdName,
    Info,
    OptionSpec,
    OptionType,
    TurnReply,
    UqiError,
    UqiOk,
    parse_reply,
)

ENGINES = Path(quarto_arena.engines.__file__).parent
C_SOURCE = ENGINES / "c" / "quarto_bot.c"
JS_SOURCE = ENGINES / "js" / "quarto_bot.js"
ALL = "color,shape,height,fill"
QUIET = 0.5
"""Seconds to wait for a line that must not come (long enough for an instant bot, short enough for the suite)."""


# --- a raw engine process ----------------------------------------------------------------------------------------


class Raw:
    """An engine process in its own process group, driven line by line over pipes."""

    def __init__(self, argv: list[str], *, stderr: Path | None = None, env: dict[str, str] | None = None) -> None:
        with open(stderr or os.devnull, "wb") as err:  # the child has its own copy of the descriptor
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
                env=None if env is None else {**os.environ, **env},
            )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.buf = b""
        self.eof = False
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)

    @property
    def pgid(self) -> int:
        """The process group (start_new_session makes the bot its leader)."""
        return self.proc.pid

    def send(self, line: str | bytes, end: bytes = b"\n") -> None:
        """Writes one line."""
        data = line.encode() if isinstance(line, str) else line
        self.stdin.write(data + end)
        self.stdin.flush()

    def fill(self, timeout: float) -> bool:
        """Reads what is available within ``timeout`` into the buffer; False on timeout or end of file."""
        if self.eof or not self.selector.select(timeout):
            return False
        chunk = os.read(self.fd, 65536)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def raw_line(self, timeout: float = 5.0) -> bytes | None:
        """The next line's bytes without its terminator; None at end of file; TimeoutError when none comes."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if self.eof:
                return None
            if left <= 0:
                raise TimeoutError(f"no line within {timeout} s (got {self.buf[:80]!r})")
            self.fill(left)
        line, _, self.buf = self.buf.partition(b"\n")
        return line.rstrip(b"\r")

    def line(self, timeout: float = 5.0) -> str:
        """The next line as text; fails at end of file."""
        raw = self.raw_line(timeout)
        assert raw is not None, f"engine closed its output (exit status {self.proc.poll()})"
        return raw.decode()

    def silent(self, timeout: float = QUIET) -> bool:
        """True when no complete line arrives within ``timeout``."""
        try:
            return self.raw_line(timeout) is None
        except TimeoutError:
            return True

    def handshake(self) -> list[str]:
        """Sends ``uqi 1``; returns the lines up to and including ``uqiok``."""
        self.send("uqi 1")
        lines = [self.line()]
        while not lines[-1].startswith("uqiok"):
            lines.append(self.line())
        return lines

    def ready(self) -> None:
        """``isready`` must be answered by ``readyok`` as the very next line."""
        self.send("isready")
        assert self.line() == "readyok"

    def turn(self, timeout: float = 5.0) -> str:
        """Reads lines up to the ``turn`` reply and returns its token; ``info`` lines are skipped."""
        while True:
            line = self.line(timeout)
            reply = parse_reply(line)
            if isinstance(reply, TurnReply):
                return line.split()[1]
            assert isinstance(reply, Info), f"unexpected line during a search: {line!r}"

    def wait(self, timeout: float = 5.0) -> int:
        """The exit status, waiting at most ``timeout``."""
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """Kills the whole process group and reaps the bot."""
        with suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        self.proc.wait()
        self.selector.close()
        if not self.stdin.closed:
            self.stdin.close()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@contextmanager
def running(argv: list[str], *, stderr: Path | None = None, env: dict[str, str] | None = None) -> Iterator[Raw]:
    """A :class:`Raw` engine whose process group is killed on the way out, whatever happens."""
    raw = Raw(argv, stderr=stderr, env=env)
    try:
        yield raw
    finally:
        raw.kill()


# --- the example bots --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def c_bot(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The C bot, compiled with warnings on (there must be none)."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler 'cc' on PATH, so the C example bot cannot be built")
    exe = tmp_path_factory.mktemp("c_bot") / "quarto_bot"
    built = subprocess.run(
        [cc, "-O2", "-Wall", "-Wextra", "-o", str(exe), str(C_SOURCE)], capture_output=True, text=True, timeout=120
    )
    assert built.returncode == 0, built.stderr
    assert built.stderr == "", f"the C bot compiles with warnings:\n{built.stderr}"
    return [str(exe)]


@pytest.fixture(scope="module")
def js_bot() -> list[str]:
    """The Node.js bot."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no 'node' on PATH, so the JavaScript example bot cannot run")
    return [node, str(JS_SOURCE)]


@pytest.fixture(params=["c", "js"])
def bot(request: pytest.FixtureRequest) -> list[str]:
    """Each example bot's command line in turn."""
    argv: list[str] = request.getfixturevalue(f"{request.param}_bot")
    return argv


def start_game(raw: Raw, shapes: str = "standard", attributes: str = ALL, claims: str = "auto") -> Variant:
    """Sends ``newgame`` and waits for ``readyok``; returns the variant."""
    raw.send(f"newgame shapes {shapes} attributes {attributes} claims {claims}")
    raw.ready()
    return parse_variant(shapes, attributes, claims)


def test_handshake_declares_identity_option_and_version(bot: list[str]) -> None:
    with running(bot) as raw:
        replies = [parse_reply(line) for line in raw.handshake()]
        assert isinstance(replies[0], IdName) and replies[0].name
        options = [r for r in replies if isinstance(r, OptionSpec)]
        assert [(o.name, o.type) for o in options] == [("Seed", OptionType.SPIN)]
        assert replies[-1] == UqiOk(1)
        raw.ready()


def test_line_endings_spacing_and_empty_lines(bot: list[str]) -> None:
    with running(bot) as raw:
        raw.handshake()
        raw.send("isready", end=b"\r\n")
        assert raw.line() == "readyok"
        raw.send(" \t isready \t ")
        assert raw.line() == "readyok"
        raw.send("")
        raw.send("   ", end=b"\r\n")
        raw.ready()  # the empty lines got no answer, so readyok is the next line


def test_errors_are_answered_and_the_bot_carries_on(bot: list[str]) -> None:
    with running(bot) as raw:
        raw.handshake()
        for line, word in [
            ("hello", "hello"),
            ("setoption name NoSuchThing value 3", "NoSuchThing"),
            ("setoption name Seed value -1", "Seed"),
            ("setoption name Seed value lots", "Seed"),
            ("position ..../..../..../01x. 3", "position"),
            ("position ..../..../..../0110 -", "position"),
            ("x" * 5000, "4096"),
        ]:
            raw.send(line)
            reply = parse_reply(raw.line())
            assert isinstance(reply, ErrorReply), line[:40]
            assert word in reply.text
            raw.ready()
        raw.send("setoption name seed value 42")  # option ids are case-insensitive: accepted silently
        raw.ready()


@pytest.mark.parametrize("how", ["quit", "eof"])
def test_exits_on_quit_and_end_of_input(bot: list[str], how: str) -> None:
    with running(bot) as raw:
        raw.handshake()
        start_game(raw)
        raw.send("position startpos")
        raw.send("go infinite")  # a search that holds its turn until stop: the bot exits all the same
        raw.ready()
        if how == "quit":
            raw.send("quit")
        else:
            raw.stdin.close()
        assert raw.wait() == 0
        assert raw.raw_line() is None


def test_go_infinite_holds_its_turn_until_stop(bot: list[str]) -> None:
    with running(bot) as raw:
        raw.handshake()
        start_game(raw)
        raw.send("position ..../..../..../.... 7")
        raw.send("go infinite")
        assert raw.silent()  # SPEC §4.5: not before stop, although the bot knows its turn at once
        raw.ready()  # isready is answered meanwhile
        raw.send("stop")
        token = raw.turn()
        Position.start().play([Turn(give=7)]).apply(parse_turn_token(token))
        raw.send("stop")
        raw.ready()  # exactly one turn per go: nothing came after it, not even an error for the second stop


def test_commands_during_a_search_are_refused(bot: list[str]) -> None:
    # SPEC §4.10: while it holds the turn of a go infinite, the bot refuses what would change its search.
    with running(bot) as raw:
        raw.handshake()
        start_game(raw)
        raw.send("position ..../..../..../.... 7")
        raw.send("go infinite")
        for line in ("position startpos", "go depth 1", f"newgame shapes advanced attributes {ALL} claims strict"):
            raw.send(line)
            assert raw.line() == f"error {line.split()[0]} a search is running (send stop first)"
        raw.send("setoption name Seed value 3")
        assert raw.line() == "error setoption a search is running (send stop first)"
        raw.send("stop")
        Position.start().play([Turn(give=7)]).apply(parse_turn_token(raw.turn()))  # the search it held
        raw.send("position ..../..../..../012. 3")  # the auto game goes on: the strict newgame was refused
        raw.send("go depth 1")
        assert raw.turn() == "d1"
        # uqi starts a new session: the held turn is dropped, never sent.
        raw.send("go infinite")
        lines = raw.handshake()
        assert lines[-1] == "uqiok 1" and not any(line.startswith("turn") for line in lines)
        raw.send("stop")
        raw.ready()


@pytest.mark.slow
@pytest.mark.parametrize(
    "line",
    [
        "newgame shapes standard attributes color claims",
        "newgame shapes standard attributes color",
        "newgame shapes standard shapes advanced attributes color claims auto",
        "newgame shapes standard attributes color claims auto timer 5",
        "newgame shapes standard attributes color,color claims auto",
        "newgame shapes standard attributes color,,fill claims auto",
        "newgame shapes hexagon attributes color claims strict",
        "newgame shapes standard attributes all claims strict",
        "newgame shapes standard attributes colour claims strict",
        "newgame shapes standard attributes color claims loud",
        "go depth 0",
        "go nodes 0",
        "go movetime 0",
        "go time +5",
        "go nodes many",
        "go depth 2 depth 3",
        "go infinite infinite",
        "go ponder",
        "go movetime",
        "go time 1000 movestogo 0",
    ],
)
def test_malformed_newgame_and_go_are_refused(bot: list[str], line: str) -> None:
    with running(bot) as raw:
        raw.handshake()
        start_game(raw)
        raw.send("position ..../..../..../012. 3")
        raw.send(line)
        reply = parse_reply(raw.line())
        assert isinstance(reply, ErrorReply) and reply.text.split()[0] == line.split()[0], reply
        # SPEC §4.3: a value the bot does not know is a variant it cannot play; anything else is malformed.
        unknown_value = bool(set(line.split()) & {"hexagon", "all", "colour", "loud"})
        assert reply.text.startswith("newgame unsupported") == unknown_value, reply
        raw.send("go depth 1")  # no turn for the refused go; and after a refused newgame, auto claims still hold
        assert raw.turn() == "d1"


def test_go_with_movestogo_is_answered(bot: list[str]) -> None:
    # SPEC §4.5: a moves-per-period control (--tc 40/60) says how many turns remain in the period.
    with running(bot) as raw:
        raw.handshake()
        start_game(raw)
        raw.send("position ..../..../..../012. 3")
        raw.send("go time 1000 inc 0 otime 1000 oinc 0 movestogo 3")
        assert raw.turn() == "d1"


def parse_turn_token(token: str) -> Turn:
    """The turn of a ``turn`` reply."""
    reply = parse_reply(f"turn {token}")
    assert isinstance(reply, TurnReply)
    return reply.turn


def test_spec_transcripts(bot: list[str]) -> None:
    with running(bot) as raw:
        raw.handshake()
        start_game(raw)
        raw.send("position startpos turns 3 c47 d4e d35 a41")  # SPEC 7.2: b4 completes row 4
        raw.send("go movetime 1000")
        assert raw.turn() == "b4"
        start_game(raw, claims="strict")
        raw.send("position ..../..../..../012. 3 turns d14")  # SPEC 7.5: the opponent missed row 1
        raw.send("go movetime 500")
        assert raw.turn() == "!"


def test_strict_claims(bot: list[str]) -> None:
    with running(bot) as raw:
        raw.handshake()
        start_game(raw, claims="strict")
        raw.send("position ..../..../..../012. 3")
        raw.send("go")
        assert raw.turn() == "d1!"  # a winning placement must be called
        raw.send("position startpos turns 0 a11 b12 c13 d14")
        raw.send("go")
        assert raw.turn() == "!"  # the missed row 1, found by replaying the turns
        variant = parse_variant(claims="strict")
        for start, turns in [
            ("..../..../..../012. 3", "d14 a25"),  # the alignment was not claimed at once: it is dead
            ("..../..../..../0123 4", ""),  # an alignment already on a strict board is dead too
        ]:
            raw.send(f"position {start}" + (f" turns {turns}" if turns else ""))
            raw.send("go")
            pos = parse_position(start, variant).play(parse_turn_token(t) for t in turns.split())
            after = pos.apply(parse_turn_token(raw.turn()))  # raises on a claim of a dead alignment
            assert after.outcome is not Outcome.WIN or pos.winning_squares()
        start_game(raw)
        raw.send("position ..../..../..../012. 3")
        raw.send("go")
        assert raw.turn() == "d1"  # automatic claims: the placement alone


def loses_at_once(after: Position) -> bool:
    """The opponent, to move in ``after``, can win with their next turn."""
    if after.is_over:
        return False
    return after.claimable or (after.hand is not None and bool(after.winning_squares()))


def check_greedy(pos: Position, turn: Turn) -> None:
    """Legal; a win when one exists; no immediate loss when it can be avoided."""
    after = pos.apply(turn)  # raises IllegalTurn, naming the problem
    outcomes = [pos.apply(t) for t in pos.legal_turns()]
    if any(o.outcome is Outcome.WIN for o in outcomes):
        assert after.outcome is Outcome.WIN, f"{turn} misses a win in {format_position(pos)}"
    elif any(not loses_at_once(o) for o in outcomes):
        assert not loses_at_once(after), f"{turn} gives a win away in {format_position(pos)}"


def random_start(rng: random.Random, variant: Variant) -> tuple[str, Position]:
    """``startpos``, or a position string a few random turns into a game (not over, nothing claimable)."""
    while True:
        pos = Position.start(variant)
        for _ in range(rng.randrange(0, 9)):
            if pos.is_over:
                break
            pos = pos.apply(rng.choice(pos.legal_turns()))
        if pos.placed == 0 and pos.hand is None:
            return "startpos", pos
        if not pos.is_over and not pos.claimable:
            text = format_position(pos)
            return (text.upper() if rng.random() < 0.3 else text), pos


GO_COMMANDS = [
    "go",
    "go movetime 200",
    "go time 10000 inc 100 otime 9000 oinc 100",
    "go depth 3",
    "go nodes 1000",
    "go infinite",
]


@pytest.mark.parametrize(
    ("shapes", "attributes", "claims"),
    [
        ("standard", ALL, "auto"),
        ("advanced", ALL, "auto"),
        ("standard", "color", "auto"),
        ("advanced", "fill,shape", "auto"),
        ("standard", ALL, "strict"),
        ("advanced", "height,color", "strict"),
        ("standard", "shape", "strict"),
    ],
)
def test_random_games_are_legal_and_greedy(bot: list[str], shapes: str, attributes: str, claims: str) -> None:
    rng = random.Random(f"{bot[-1]} {shapes} {attributes} {claims}")
    with running(bot) as raw:
        raw.handshake()
        raw.send(f"setoption name Seed value {rng.randrange(1, 2**31)}")
        for _ in range(6):
            variant = start_game(raw, shapes, attributes, claims)
            start, pos = random_start(rng, variant)
            bot_parity = rng.randrange(2)
            tokens: list[str] = []
            while not pos.is_over:
                if len(tokens) % 2 == bot_parity:
                    moves = " ".join(t.upper() if rng.random() < 0.2 else t for t in tokens)
                    raw.send(f"position {start}" + (f" turns {moves}" if moves else ""))
                    go = rng.choice(GO_COMMANDS)
                    raw.send(go, end=rng.choice([b"\n", b"\r\n"]))
                    if go == "go infinite":
                        raw.send("stop")  # the turn comes only now (SPEC §4.5)
                    turn = parse_turn_token(raw.turn())
                    check_greedy(pos, turn)
                else:
                    turns = pos.legal_turns()
                    # A strict opponent that misses alignments now and then, so the bot sees claims to make.
                    missed = [t for t in turns if t.give is not None and t.place in pos.winning_squares()]
                    turn = rng.choice(missed if missed and rng.random() < 0.5 else turns)
                pos = pos.apply(turn)
                tokens.append(str(turn))
            raw.ready()  # no stray line after the game


# --- the broken bots ---------------------------------------------------------------------------------------------


def test_broken_bot_table_is_complete() -> None:
    assert set(BROKEN) == set(EXPECTED_TERMINATION)
    reasons = {t.value for t in Termination}
    for name in BROKEN:
        assert EXPECTED_TERMINATION[name] in reasons, name
        module = importlib.import_module(f"quarto_arena.engines.testing.{name}")
        doc = module.__doc__ or ""
        assert "arena must" in doc and f"``{EXPECTED_TERMINATION[name]}``" in doc, name
        assert "quarto_arena.arena" not in Path(str(module.__file__)).read_text(), f"{name} imports the arena"
    with pytest.raises(ValueError, match="no broken bot"):
        command("no_such_bot")


def broken(
    name: str, *args: str, stderr: Path | None = None, env: dict[str, str] | None = None
) -> AbstractContextManager[Raw]:
    """Runs a broken bot raw, like :func:`running`."""
    return running(command(name, *args), stderr=stderr, env=env)


def to_first_go(raw: Raw, turns: str = "") -> None:
    """Handshake, a new game, and a ``go`` from ``startpos`` after ``turns``."""
    raw.handshake()
    start_game(raw)
    raw.send("position startpos" + (f" turns {turns}" if turns else ""))
    raw.send("go movetime 1000")


def test_crash_on_go() -> None:
    with broken("crash_on_go") as raw:
        to_first_go(raw)
        assert raw.wait(10) == 3
        assert raw.raw_line() is None


def test_hang_on_go() -> None:
    with broken("hang_on_go") as raw:
        to_first_go(raw)
        assert raw.silent()
        raw.send("stop")
        raw.send("isready")
        assert raw.silent()
        raw.stdin.close()
        assert raw.silent()
        assert raw.proc.poll() is None  # still there after end of input: it has to be killed


def test_illegal_turn() -> None:
    with broken("illegal_turn") as raw:
        to_first_go(raw, "0 a11")
        turn = parse_turn_token(raw.turn(10))
        pos = Position.start().play([Turn(give=0), Turn(place=0, give=1)])
        with pytest.raises(IllegalTurn, match="occupied"):
            pos.apply(turn)


def test_malformed_reply() -> None:
    with broken("malformed_reply") as raw:
        to_first_go(raw)
        with pytest.raises(UqiError):
            parse_reply(raw.line(10))


def test_false_claim() -> None:
    with broken("false_claim") as raw:
        to_first_go(raw, "0")
        turn = parse_turn_token(raw.turn(10))
        with pytest.raises(IllegalTurn) as caught:
            Position.start().apply(Turn(give=0)).apply(turn)
        assert caught.value.false_claim


def test_slow_handshake_sleeps_as_long_as_told() -> None:
    with broken("slow_handshake", env={"QUARTO_ARENA_HANDSHAKE_DELAY": "600"}) as raw:
        raw.send("uqi 1")
        assert raw.line(10).startswith("id name")
        assert raw.silent()
    with broken("slow_handshake", "0.2") as raw:
        assert raw.handshake()[-1] == "uqiok 1"
        raw.ready()


def test_no_handshake() -> None:
    with broken("no_handshake") as raw:
        raw.send("uqi 1")
        assert raw.line(10).startswith("id name")
        assert raw.silent()
        raw.send("quit")
        assert raw.wait(10) == 0


def test_flood_writes_an_endless_line() -> None:
    with broken("flood") as raw:
        to_first_go(raw)
        while len(raw.buf) <= 4 * 4096:
            assert raw.fill(10), "the flood stopped"
        assert raw.buf.startswith(b"turn ") and b"\n" not in raw.buf


def test_exit_midgame() -> None:
    with broken("exit_midgame") as raw:
        to_first_go(raw)
        tokens = [raw.turn(10)]
        pos = Position.start().apply(parse_turn_token(tokens[0]))
        reply = pos.legal_turns()[0]
        pos = pos.apply(reply)
        tokens.append(str(reply))
        raw.send(f"position startpos turns {' '.join(tokens)}")
        raw.send("go")
        pos.apply(parse_turn_token(raw.turn(10)))
        raw.send("go")
        assert raw.wait(10) == 0
        assert raw.raw_line() is None


def test_ignores_quit() -> None:
    with broken("ignores_quit") as raw:
        raw.handshake()
        raw.send("quit")
        raw.ready()  # still serving after quit
        raw.stdin.close()
        raw.proc.send_signal(signal.SIGTERM)
        assert raw.silent()
        assert raw.proc.poll() is None
    assert raw.proc.returncode == -signal.SIGKILL


def process_state(pid: int) -> str | None:
    """The state letter of a process (``Z`` for a zombie), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_leaves_child(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with broken("leaves_child", stderr=log) as raw:
        to_first_go(raw)
        assert raw.wait(10) == 3
        child = int(log.read_text().split("child pid")[1].split()[0])
        assert process_state(child) not in (None, "Z"), "the child should outlive the bot"
        assert os.getpgid(child) == raw.pgid
        assert raw.silent()  # the child holds stdout open: no end of file although the bot is gone
    # Killing the group killed the child. This sandbox's init may never reap the orphan: a zombie counts as dead.
    deadline = time.monotonic() + 5
    while process_state(child) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_state(child) in (None, "Z")


def test_invalid_utf8() -> None:
    with broken("invalid_utf8") as raw:
        to_first_go(raw)
        line = raw.raw_line(10)
        assert line is not None and line.startswith(b"turn ")
        with pytest.raises(UnicodeDecodeError):
            line.decode("utf-8")


def test_no_readyok() -> None:
    with broken("no_readyok") as raw:
        raw.handshake()
        raw.send("isready")
        assert raw.silent()
        raw.send("newgame shapes standard attributes color claims auto")
        raw.send("isready")
        assert raw.silent()
        raw.send("quit")
        assert raw.wait(10) == 0
