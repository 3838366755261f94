"""The UQI grammar: parse(format(x)) == x for every command and reply, and precise errors for malformed lines."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from quarto_arena.protocol.notation import format_position
from quarto_arena.protocol.rules import Attribute, ClaimMode, Position, Shapes, Turn, Variant, turn_of
from quarto_arena.protocol.uqi import (
    MAX_LINE_BYTES,
    Command,
    ErrorReply,
    Go,
    IdAuthor,
    IdName,
    Info,
    IsReady,
    NewGame,
    OptionSpec,
    OptionType,
    PositionCommand,
    Quit,
    ReadyOk,
    Reply,
    Score,
    SetOption,
    Stop,
    TurnReply,
    Uqi,
    UqiError,
    UqiOk,
    format_command,
    format_reply,
    parse_command,
    parse_reply,
)

# --- strategies ------------------------------------------------------------------------------------------------

squares = st.integers(0, 15)
pieces = st.integers(0, 15)
turns: st.SearchStrategy[Turn] = st.one_of(
    pieces.map(lambda p: turn_of(give=p)),
    st.builds(lambda s, p: turn_of(place=s, give=p), squares, pieces),
    squares.map(lambda s: turn_of(place=s)),
    squares.map(lambda s: turn_of(place=s, call=True)),
    st.just(turn_of(claim=True)),
)
# Free text as it can travel on a line: no line breaks, no white space at either end (the parser strips it).
words = st.from_regex(r"[!-~]+", fullmatch=True)
free_text = st.lists(words, min_size=1, max_size=5).flatmap(
    lambda ws: st.lists(st.sampled_from([" ", "  ", "\t"]), min_size=len(ws) - 1, max_size=len(ws) - 1).map(
        lambda seps: ws[0] + "".join(s + w for s, w in zip(seps, ws[1:], strict=True))
    )
)
option_ids = st.from_regex(r"[A-Za-z0-9_.\-]+", fullmatch=True)
variants = st.builds(
    Variant,
    shapes=st.sampled_from(Shapes),
    attributes=st.frozensets(st.sampled_from(Attribute), min_size=1),
    claims=st.sampled_from(ClaimMode),
)
small = st.integers(0, 10**9)


@st.composite
def position_strings(draw: st.DrawFn) -> str | None:
    """None (startpos) or a canonical position string with any well-formed board."""
    if draw(st.booleans()):
        return None
    order = draw(st.permutations(list(range(16))))
    filled = draw(st.integers(0, 16))
    cells_used = draw(st.permutations(list(range(16))))[:filled]
    cells: list[int | None] = [None] * 16
    for square, piece in zip(cells_used, order, strict=False):
        cells[square] = piece
    hand = None if filled == 16 or draw(st.booleans()) else order[filled]
    return format_position(Position.from_board(cells, hand, Variant(claims=ClaimMode.STRICT)))


commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(Uqi, st.integers(1, 99)),
    st.builds(SetOption, option_ids, st.none() | free_text),
    st.builds(NewGame, variants),
    st.builds(PositionCommand, position_strings(), st.lists(turns, max_size=16).map(tuple)),
    st.builds(
        Go,
        time=st.none() | small,
        inc=st.none() | small,
        otime=st.none() | small,
        oinc=st.none() | small,
        movetime=st.none() | st.integers(1, 10**9),
        depth=st.none() | st.integers(1, 99),
        nodes=st.none() | small,
        infinite=st.booleans(),
    ),
    st.just(Stop()),
    st.just(IsReady()),
    st.just(Quit()),
)

scores = st.one_of(
    st.builds(Score, st.sampled_from(["win", "loss"]), st.integers(1, 16)),
    st.just(Score("draw")),
    st.builds(Score, st.just("value"), st.integers(-(10**6), 10**6)),
)


@st.composite
def option_specs(draw: st.DrawFn) -> OptionSpec:
    name = draw(option_ids)
    kind = draw(st.sampled_from(OptionType))
    if kind is OptionType.CHECK:
        return OptionSpec(name, kind, draw(st.sampled_from(["true", "false"])))
    if kind is OptionType.SPIN:
        lo = draw(st.integers(-(10**6), 10**6))
        hi = draw(st.integers(lo, lo + 10**6))
        return OptionSpec(name, kind, str(draw(st.integers(lo, hi))), lo, hi)
    if kind is OptionType.COMBO:
        choices = tuple(draw(st.lists(words, min_size=1, max_size=4)))
        return OptionSpec(name, kind, draw(st.sampled_from(choices)), vars=choices)
    if kind is OptionType.STRING:
        return OptionSpec(name, kind, draw(st.just("") | free_text))
    return OptionSpec(name, kind)


replies: st.SearchStrategy[Reply] = st.one_of(
    st.builds(IdName, free_text),
    st.builds(IdAuthor, free_text),
    option_specs(),
    st.builds(UqiOk, st.integers(1, 99)),
    st.just(ReadyOk()),
    st.builds(
        Info,
        depth=st.none() | small,
        seldepth=st.none() | small,
        score=st.none() | scores,
        nodes=st.none() | small,
        nps=st.none() | small,
        time=st.none() | small,
        pv=st.lists(turns, max_size=8).map(tuple),
    ),
    st.builds(Info, depth=st.none() | small, score=st.none() | scores, string=st.just("") | free_text),
    st.builds(TurnReply, turns),
    st.builds(ErrorReply, st.just("") | free_text),
)


# --- round trips -----------------------------------------------------------------------------------------------


@given(commands)
def test_every_command_round_trips(cmd: Command) -> None:
    line = format_command(cmd)
    assert "\n" not in line
    assert parse_command(line) == cmd


@given(replies)
def test_every_reply_round_trips(reply: Reply) -> None:
    line = format_reply(reply)
    assert "\n" not in line
    assert parse_reply(line) == reply


@given(commands)
def test_commands_survive_extra_white_space(cmd: Command) -> None:
    # Leading and trailing white space (and a \r from a \r\n line end) is not part of the message.
    assert parse_command("  " + format_command(cmd) + " \r") == cmd


def test_spec_transcript_lines_parse() -> None:
    assert parse_command("go time 60000 inc 1000 otime 60000 oinc 1000") == Go(60000, 1000, 60000, 1000)
    assert parse_command("position ..../..../..../012. 3 turns d14") == PositionCommand(
        "..../..../..../012. 3", (turn_of(place=3, give=4),)
    )
    assert parse_reply("info depth 1 score win 1 nodes 12 time 1 pv b4") == Info(
        depth=1, score=Score("win", 1), nodes=12, time=1, pv=(turn_of(place=13),)
    )
    assert parse_reply("option name BookFile type string default /usr/share/quarto book.bin") == OptionSpec(
        "BookFile", OptionType.STRING, "/usr/share/quarto book.bin"
    )


# --- malformed lines -------------------------------------------------------------------------------------------

BAD_COMMANDS = [
    ("", "empty line"),
    ("hello", "unknown command hello"),
    ("UQI", "unknown command UQI"),
    ("uqi 1 2", "at most one argument"),
    ("uqi x", "uqi version 'x' is not an integer"),
    ("uqi 0", "uqi version 0 is below 1"),
    ("isready now", "isready takes no arguments"),
    ("stop 1", "stop takes no arguments"),
    ("quit now", "quit takes no arguments"),
    ("setoption Seed 3", "setoption needs 'name ID'"),
    ("setoption name", "setoption needs 'name ID'"),
    ("setoption name Seed to 3", "expected 'value' after the option id, got 'to'"),
    ("newgame", "newgame needs 'shapes S attributes A claims C'"),
    ("newgame shapes standard attributes color claims", "newgame needs"),
    ("newgame shapes hexagon attributes all claims auto", "unknown variant 'hexagon'"),
    ("newgame shapes standard attributes colour claims auto", "unknown attribute 'colour'"),
    ("newgame shapes standard attributes all claims loud", "unknown claim mode 'loud'"),
    ("position", "position needs 'startpos' or a position string"),
    ("position ..../..../..../....", "needs the board and the piece in hand"),
    ("position ..../..../.... -", "has 3 rows"),
    ("position ..../..../..../...x -", "'x' on d1 is not a piece"),
    ("position 0.../..../..../...0 -", "piece 0 is on a4 and d1"),
    ("position ..../..../..../.... g", "'g' is not a piece in hand"),
    ("position startpos moves 0", "expected 'turns', got 'moves'"),
    ("position startpos turns 0 e5f", "does not start with a square"),
    ("position startpos turns 0 a1!f", "no piece may follow the '!'"),
    ("go movetime", "go: movetime needs a value"),
    ("go movetime 0", "go movetime 0 is below 1"),
    ("go time -5", "go time -5 is below 0"),
    ("go ponder", "go: unknown limit 'ponder'"),
    ("go depth 2 depth 3", "go: depth given twice"),
    ("go nodes many", "go nodes 'many' is not an integer"),
    ("go " + "infinite " * 600, f"longer than {MAX_LINE_BYTES} bytes"),
]


@pytest.mark.parametrize(("line", "problem"), BAD_COMMANDS)
def test_malformed_commands_name_the_problem(line: str, problem: str) -> None:
    with pytest.raises(UqiError) as info:
        parse_command(line)
    assert problem in str(info.value)
    assert "\n" not in str(info.value)


BAD_REPLIES = [
    ("", "empty line"),
    ("bestmove a1", "unknown reply 'bestmove'"),
    ("turn", "turn needs exactly one turn token"),
    ("turn a1 b2", "turn needs exactly one turn token"),
    ("turn z9", "does not start with a square"),
    ("turn b3!e", "no piece may follow the '!'"),
    ("readyok now", "readyok takes no arguments"),
    ("uqiok", "uqiok needs the protocol version"),
    ("uqiok one", "uqiok version 'one' is not an integer"),
    ("id", "id needs 'name NAME' or 'author AUTHOR'"),
    ("id email x@y", "id needs 'name NAME' or 'author AUTHOR'"),
    ("info score", "info score needs win N, loss N, draw or value V"),
    ("info score win", "info score needs win N, loss N, draw or value V"),
    ("info score mate 3", "info score needs win N, loss N, draw or value V"),
    ("info score win 0", "info score win 0 is below 1"),
    ("info depth", "info: depth needs a value"),
    ("info depth deep", "info depth 'deep' is not an integer"),
    ("info hashfull 3", "info: unknown field 'hashfull'"),
    ("info pv a1 zz", "info pv"),
    ("option name Seed", "option needs 'name ID type TYPE'"),
    ("option name Seed type float default 1", "unknown type 'float'"),
    ("option name Seed type spin default 1", "spin option Seed needs min and max"),
    ("option name Seed type spin min 5 max 1 default 3", "min 5 > max 1"),
    ("option name Seed type spin min 1 max 5 default 9", "default 9 is outside 1..5"),
    ("option name Seed type spin min 1 max 5 step 1 default 3", "unknown field 'step'"),
    ("option name Seed type spin min", "min needs a value"),
    ("option name Style type combo default a", "combo option Style needs at least one var"),
    ("option name Style type combo var a var b default c", "default 'c' is not one of a, b"),
    ("option name Book type check default yes", "default 'yes' is not true or false"),
    ("option name Book type string", "option Book needs a default"),
    ("option name Bad/Id type button", "must be one token"),
    ("turn " + "a" * MAX_LINE_BYTES, f"longer than {MAX_LINE_BYTES} bytes"),
]


@pytest.mark.parametrize(("line", "problem"), BAD_REPLIES)
def test_malformed_replies_name_the_problem(line: str, problem: str) -> None:
    with pytest.raises(UqiError) as info:
        parse_reply(line)
    assert problem in str(info.value)
    assert "\n" not in str(info.value)


@given(st.text(max_size=60))
def test_arbitrary_text_parses_or_raises_uqi_error(text: str) -> None:
    # Never any other exception: every line an engine or arena can send is either a message or a UqiError.
    for parse in (parse_command, parse_reply):
        with contextlib.suppress(UqiError):
            parse(text)
