"""The UQI grammar: parse(format(x)) == x for every command and reply, and precise errors for malformed lines."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quarto_arena.protocol.notation import format_position
from quarto_arena.protocol.rules import Attribute, ClaimMode, Position, Shapes, Turn, Variant, turn_of
from quarto_arena.protocol.uqi import (
    MAX_LINE_BYTES,
    MAX_VALUE,
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
        nodes=st.none() | st.integers(1, 10**9),
        infinite=st.booleans(),
    ),
    st.just(Stop()),
    st.just(IsReady()),
    st.just(Quit()),
)

scores = st.one_of(
    st.builds(Score, st.just("win"), st.integers(0, 8).map(lambda n: 2 * n + 1)),
    st.builds(Score, st.just("loss"), st.integers(1, 8).map(lambda n: 2 * n)),
    st.just(Score("draw")),
    st.builds(Score, st.just("value"), st.integers(-MAX_VALUE, MAX_VALUE)),
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
        choices = tuple(draw(st.lists(words, min_size=1, max_size=4, unique_by=str.lower)))
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


@pytest.mark.slow
@given(commands)
def test_every_command_round_trips(cmd: Command) -> None:
    line = format_command(cmd)
    assert "\n" not in line
    assert parse_command(line) == cmd


@pytest.mark.slow
@given(replies)
def test_every_reply_round_trips(reply: Reply) -> None:
    line = format_reply(reply)
    assert "\n" not in line
    assert parse_reply(line) == reply


@pytest.mark.slow
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


def test_option_values_follow_spec_4_2() -> None:
    check = OptionSpec("UseBook", OptionType.CHECK, "true")
    assert [check.check(v) for v in ("TRUE", "False", " true ")] == ["true", "false", "true"]
    spin = OptionSpec("Threads", OptionType.SPIN, "1", -4, 64)
    assert [spin.check(v) for v in ("7", "-4", "007", " 64 ")] == ["7", "-4", "7", "64"]
    for bad in ("+5", "1_0", "\uff15", "", "5 6"):
        with pytest.raises(UqiError, match="is not an integer"):
            spin.check(bad)
    combo = OptionSpec("Style", OptionType.COMBO, "Normal", vars=("Solid", "Normal", "Wild"))
    assert combo.check("WILD") == "Wild"
    string = OptionSpec("BookFile", OptionType.STRING, "")
    assert string.check("  /usr/share/quarto  book.bin ") == "/usr/share/quarto  book.bin"
    assert string.check("") == ""
    with pytest.raises(UqiError, match="cannot hold a line break"):
        string.check("a\nb")
    # The empty string on the wire: nothing after the word.
    assert parse_reply("option name BookFile type string default") == string
    assert format_reply(string) == "option name BookFile type string default"
    assert parse_command("setoption name BookFile value") == SetOption("BookFile", "")
    assert parse_command("setoption name BookFile value \t  a  b \t") == SetOption("BookFile", "a  b")
    assert parse_command("setoption name ClearHash") == SetOption("ClearHash", None)


def test_newgame_accepts_any_order_and_case() -> None:
    expected = NewGame(Variant(Shapes.ADVANCED, frozenset({Attribute.FILL, Attribute.COLOR}), ClaimMode.STRICT))
    assert parse_command("newgame claims STRICT attributes fill,Color shapes advanced") == expected
    assert format_command(expected) == "newgame shapes advanced attributes color,fill claims strict"


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
    ("newgame shapes standard attributes color claims", "newgame: claims needs a value"),
    ("newgame shapes standard attributes color", "newgame needs 'shapes S attributes A claims C' (no claims)"),
    ("newgame shapes standard shapes advanced attributes color claims auto", "newgame: shapes given twice"),
    ("newgame shapes standard attributes color claims auto timer 5", "newgame: unknown field 'timer'"),
    ("newgame shapes standard attributes color,color claims auto", "newgame: attribute 'color' given twice"),
    ("newgame shapes standard attributes color,,fill claims auto", "newgame: empty attribute in 'color,,fill'"),
    ("newgame shapes hexagon attributes color claims auto", "newgame unsupported shapes 'hexagon'"),
    ("newgame shapes standard attributes colour claims auto", "newgame unsupported attribute 'colour'"),
    ("newgame shapes standard attributes all claims auto", "newgame unsupported attribute 'all'"),
    ("newgame shapes standard attributes color+fill claims auto", "newgame unsupported attribute 'color+fill'"),
    ("newgame shapes standard attributes color claims loud", "newgame unsupported claims 'loud'"),
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
    ("go infinite infinite", "go: infinite given twice"),
    ("go nodes many", "go nodes 'many' is not an integer"),
    ("go nodes 0", "go nodes 0 is below 1"),
    ("go depth 0", "go depth 0 is below 1"),
    ("go time +5", "go time '+5' is not an integer"),
    # SPEC §4.5: at most 2^63 - 1, a signed 64-bit integer.
    ("go nodes 9223372036854775808", "go nodes 9223372036854775808 is above 9223372036854775807"),
    ("uqi 0", "uqi version 0 is below 1"),
    ("uqi one", "uqi version 'one' is not an integer"),
    ("uqi 1 extra", "uqi takes at most one argument"),
    ("position STARTPOS", "position needs the board and the piece in hand"),
    ("go time 1_000", "go time '1_000' is not an integer"),
    ("go time \uff15", "go time '\uff15' is not an integer"),  # a full-width digit
    ("go\u00a0infinite", "unknown command 'go\\xa0infinite'"),  # words are split on spaces and tabs only
    ("uqi \u0661", "uqi version '\u0661' is not an integer"),  # an Arabic-Indic digit
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
    ("info score win 2", "info score win 2: N counts both players' turns, so a win takes an odd N"),
    ("info score loss 1", "info score loss 1 is below 2"),
    ("info score loss 3", "so a loss takes an even N"),
    ("info score value 1001", "info score value 1001 is above 1000"),
    ("info score value -1001", "info score value -1001 is below -1000"),
    ("info depth 1 depth 2", "info: depth given twice"),
    ("info score draw nodes 5 score win 1", "info: score given twice"),
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
    ("option name Style type combo var a var A default a", "has two vars that differ only in case"),
    ("option name Seed type spin min 1 min 2 max 5 default 3", "option Seed: min given twice"),
    ("option name Seed type spin min 1 max 5 default +3", "default '+3' is not an integer"),
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


# --- fuzzing: what parses re-formats to an equivalent line; what is rejected names the problem -------------------

# SPEC §3.1, written out again here rather than taken from the parser: words are separated by spaces and tabs, and
# the spaces, tabs and line terminator around a line are not part of it.
SEPARATOR = re.compile(r"[ \t]+")
AROUND = " \t\r\n"
INTEGER = re.compile(r"-?[0-9]+\Z")
# Command words and keywords are case-sensitive (SPEC §3.1); every other word outside free text is a value, and
# values are case-insensitive.
KEYWORDS = frozenset(
    (
        *("uqi", "setoption", "name", "value", "newgame", "shapes", "attributes", "claims", "position", "startpos"),
        *("turns", "go", "time", "inc", "otime", "oinc", "movetime", "depth", "nodes", "infinite", "stop", "isready"),
        *("quit", "id", "author", "option", "type", "min", "max", "var", "default", "uqiok", "readyok", "info"),
        *("seldepth", "score", "win", "loss", "draw", "nps", "pv", "string", "turn", "error"),
        *("check", "spin", "combo", "button"),
    )
)


def split_line(line: str, words: int | None = None) -> list[str]:
    text = line.strip(AROUND)
    if not text:
        return []
    return SEPARATOR.split(text) if words is None else SEPARATOR.split(text, maxsplit=words)


def free_text_start(words: list[str]) -> int | None:
    """How many words come before the line's free text (SPEC: it is always last), or None when it has none."""
    kind = words[0]
    if kind == "id":
        return 2
    if kind == "error":
        return 1
    if kind == "setoption" and len(words) > 3:
        return 4
    for i, word in enumerate(words):
        if (kind, word) in (("option", "default"), ("info", "string")):
            return i + 1
        if (kind, word) == ("info", "pv"):
            return None
    return None


def pairs(words: list[str], single: frozenset[str] = frozenset(), triple: frozenset[str] = frozenset()) -> list[str]:
    """Fields of a line whose order does not matter, each as one string, sorted."""
    out, i = [], 0
    while i < len(words):
        n = 1 if words[i] in single else 3 if words[i] in triple and words[i + 1] != "draw" else 2
        out.append(" ".join(words[i : i + n]))
        i += n
    return sorted(out)


def equivalent_form(line: str) -> list[str]:
    """What two lines must share to mean the same: values in lower case, integers without leading zeros, fields
    whose order SPEC leaves free sorted, free text exactly as sent (without the white space around it)."""
    words = split_line(line)
    start = free_text_start(words)
    text: list[str] = []
    if start is not None:
        parts = split_line(line, start)
        text = [parts[start] if len(parts) > start else ""]
        words = words[:start]
    head = [w if w.lower() in KEYWORDS else str(int(w)) if INTEGER.match(w) else w.lower() for w in words]
    kind = head[0]
    if kind == "uqi" and len(head) == 1:
        head.append("1")  # the version an arena speaks when it leaves it out
    if kind in ("position", "info") and head[-1] in ("turns", "pv"):
        head.pop()  # an empty list of turns is no list
    if kind == "go":
        head = ["go", *pairs(head[1:], single=frozenset({"infinite"}))]
    if kind == "newgame":
        fields = dict(zip(head[1::2], head[2::2], strict=True))
        fields["attributes"] = ",".join(sorted(fields["attributes"].split(",")))
        head = ["newgame", *sorted(f"{k} {v}" for k, v in fields.items())]
    if kind == "info":
        end = next((i for i, w in enumerate(head) if w in ("pv", "string")), len(head))
        head = ["info", *pairs(head[1:end], triple=frozenset({"score"})), *head[end:]]
    if kind == "option":
        end = head.index("default") if "default" in head else len(head)
        head = [*head[:5], *pairs(head[5:end]), *head[end:]]
    return head + text


def assert_names_the_problem(line: str, problem: str) -> None:
    assert problem and "\n" not in problem and "\r" not in problem
    words = split_line(line)
    if not words:
        assert problem == "empty line"
    elif len(line.encode("utf-8", "surrogateescape")) > MAX_LINE_BYTES:
        assert problem == f"line longer than {MAX_LINE_BYTES} bytes"
    else:
        assert words[0] in problem or repr(words[0]) in problem, (line, problem)


VOCABULARY = [
    *sorted(KEYWORDS),
    *("standard", "advanced", "auto", "strict", "color,fill", "fill,color", "color,color", "all", "Seed", "TRUE"),
    *("0", "1", "-1", "007", "+5", "1_0", "3", "999", "1001", "-7", "b3", "B3E", "a1!", "!", "7", "f", "x"),
    *("..../..../..../....", "-", "..../..../..../012.", "", "\xa0", "\u0661", "\x00", "\r"),
]


@st.composite
def fields_in_any_order(draw: st.DrawFn, fields: list[str]) -> str:
    return " ".join(draw(st.permutations(fields)))


@st.composite
def written_lines(draw: st.DrawFn) -> str:
    """Valid lines written from SPEC's grammar directly (not by the formatter): fields in any order, values in any
    case, integers with leading zeros; so that a formatter that drops or garbles a field cannot hide it."""
    number = st.integers(0, 10**9).map(str) | st.integers(0, 999).map(lambda n: f"00{n}")
    positive = st.integers(1, 10**6).map(str)
    kind = draw(st.sampled_from(["go", "info", "newgame", "option", "position", "setoption"]))
    if kind == "go":
        keys = draw(
            st.sets(st.sampled_from(["time", "inc", "otime", "oinc", "movetime", "depth", "nodes", "infinite"]))
        )
        fields = [
            k if k == "infinite" else f"{k} {draw(positive if k in ('movetime', 'depth', 'nodes') else number)}"
            for k in keys
        ]
        return "go " + draw(fields_in_any_order(fields))
    if kind == "info":
        keys = draw(st.sets(st.sampled_from(["depth", "seldepth", "nodes", "nps", "time", "score"])))
        fields = [f"{k} {draw(number)}" for k in keys if k != "score"]
        if "score" in keys:
            fields.append("score " + draw(scores.map(str)))
        tail = draw(st.sampled_from(["", "pv", "string"]))
        if tail == "pv":
            fields_text = (
                draw(fields_in_any_order(fields))
                + " pv "
                + " ".join(map(str, draw(st.lists(turns, min_size=1, max_size=4))))
            )
        else:
            fields_text = draw(fields_in_any_order(fields)) + (" string " + draw(free_text) if tail else "")
        return "info " + fields_text
    if kind == "newgame":
        attributes = draw(st.permutations(["color", "shape", "height", "fill"]))[: draw(st.integers(1, 4))]
        values = {
            "shapes": draw(st.sampled_from(["standard", "advanced"])),
            "attributes": ",".join(attributes),
            "claims": draw(st.sampled_from(["auto", "strict"])),
        }
        fields = [f"{k} {draw(random_case(v))}" for k, v in values.items()]
        return "newgame " + draw(fields_in_any_order(fields))
    if kind == "option":
        spec = draw(option_specs())
        fields = [f"min {spec.min}", f"max {spec.max}"] if spec.type is OptionType.SPIN else []
        fields += [f"var {v}" for v in spec.vars]
        default = "" if spec.default is None else f" default {spec.default}"
        return f"option name {spec.name} type {spec.type.value} " + draw(fields_in_any_order(fields)) + default
    if kind == "position":
        start = draw(position_strings())
        tokens = [draw(random_case(str(t))) for t in draw(st.lists(turns, max_size=6))]
        head = "position startpos" if start is None else "position " + draw(random_case(start))
        return head + (" turns " + " ".join(tokens) if tokens else draw(st.sampled_from(["", " turns"])))
    value = draw(st.none() | st.just("") | free_text)
    return f"setoption name {draw(option_ids)}" + ("" if value is None else f" value {value}")


@st.composite
def mutated_lines(draw: st.DrawFn) -> str:
    """A valid line bent a few times: words dropped, repeated (alone or with the next), swapped, replaced, inserted,
    re-cased; spacing varied."""
    line = draw(st.one_of(written_lines(), commands.map(format_command), replies.map(format_reply)))
    words = line.split(" ")
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(words) - 1))
        match draw(st.sampled_from(["drop", "repeat", "repeat a field", "swap", "replace", "insert", "case"])):
            case "drop" if len(words) > 1:
                del words[i]
            case "repeat":
                words.insert(i, words[i])
            case "repeat a field":
                words[i:i] = words[i : i + 2]
            case "swap":
                j = draw(st.integers(0, len(words) - 1))
                words[i], words[j] = words[j], words[i]
            case "replace":
                words[i] = draw(st.sampled_from(VOCABULARY))
            case "insert":
                words.insert(i, draw(st.sampled_from(VOCABULARY)))
            case "case":
                words[i] = draw(random_case(words[i]))
    separators = draw(st.lists(st.sampled_from([" ", "  ", "\t", " \t "]), min_size=len(words), max_size=len(words)))
    around = draw(st.sampled_from(["", " ", "\t", "\r", " \r"]))
    return "".join(w + sep for w, sep in zip(words, [*separators[:-1], ""], strict=True)) + around


def random_case(text: str) -> st.SearchStrategy[str]:
    flips = st.lists(st.booleans(), min_size=len(text), max_size=len(text))
    return flips.map(lambda fs: "".join(c.swapcase() if f else c for c, f in zip(text, fs, strict=True)))


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.one_of(mutated_lines(), st.text(max_size=60)))
def test_what_parses_re_formats_to_an_equivalent_line(line: str) -> None:
    for parse, fmt in ((parse_command, format_command), (parse_reply, format_reply)):
        try:
            message = parse(line)  # type: ignore[operator]
        except UqiError as e:
            assert_names_the_problem(line, str(e))
            continue
        formatted = fmt(message)  # type: ignore[operator]
        assert parse(formatted) == message  # type: ignore[operator]
        assert equivalent_form(formatted) == equivalent_form(line), (line, formatted)


@pytest.mark.slow
def test_the_fuzz_reaches_both_verdicts() -> None:
    # The bent lines must both pass and fail often, or the test above would check little of either.
    outcomes: list[bool] = []

    @settings(max_examples=300, deadline=None, database=None)
    @given(mutated_lines())
    def sample(line: str) -> None:
        for parse in (parse_command, parse_reply):
            try:
                parse(line)  # type: ignore[operator]
                outcomes.append(True)
            except UqiError:
                outcomes.append(False)

    sample()
    assert 0.2 < sum(outcomes) / len(outcomes) < 0.8


def test_equivalent_form_tells_lines_apart() -> None:
    # The normalizer of the fuzz test is independent of the parser: check that it sees what it must.
    assert equivalent_form("go time 007 movetime 5") == equivalent_form("go  movetime 5\ttime 7 ")
    assert equivalent_form("newgame shapes STANDARD attributes fill,color claims auto") == equivalent_form(
        "newgame shapes standard attributes color,fill claims auto"
    )
    assert equivalent_form("id name  A  b ") == ["id", "name", "A  b"]
    assert equivalent_form("id name A b") != equivalent_form("id name a b")
    assert equivalent_form("GO infinite") != equivalent_form("go infinite")
    assert equivalent_form("go\u00a0infinite") != equivalent_form("go infinite")
    assert equivalent_form("setoption name Book value") != equivalent_form("setoption name Book")
    assert equivalent_form("info score win 3 depth 2 pv a1") == equivalent_form("info depth 2 score win 3 pv A1")
    assert equivalent_form("info score draw depth 2") == equivalent_form("info depth 2 score draw")


def test_spec_settles_the_borderline_commands() -> None:
    """SPEC §4.3-§4.5 (issue 22): each of these is valid, not a guess."""
    assert parse_command("go nodes 9223372036854775807") == Go(nodes=2**63 - 1)
    assert parse_command("position startpos turns") == parse_command("position startpos")
    reordered = parse_command("newgame claims strict shapes advanced attributes fill,color")
    assert reordered == parse_command("newgame shapes advanced attributes color,fill claims strict")
    assert parse_command("setoption name ClearHash value") == SetOption("ClearHash", "")
    assert parse_command("uqi") == Uqi(1)
