"""UQI, the Universal Quarto Interface: parse and format every command and reply. Pure functions, no I/O.

``parse_command(line)`` reads what an arena sends, ``parse_reply(line)`` what an engine sends; each returns one
of the small frozen message types below or raises :class:`UqiError` naming the problem. ``format_command`` and
``format_reply`` are their inverses (``parse(format(m)) == m``). SPEC.md is the normative description.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final

from .errors import ExitStatus, QuartoError
from .notation import ATTRIBUTE_NAMES, NotationError, format_attributes, format_position, parse_position, parse_turn
from .rules import Attribute, ClaimMode, Position, Shapes, Turn, Variant

__all__ = [
    "MAX_GO_VALUE",
    "MAX_LINE_BYTES",
    "MAX_OPTIONS",
    "MAX_VALUE",
    "PROTOCOL_VERSION",
    "Command",
    "ErrorReply",
    "Go",
    "IdAuthor",
    "IdName",
    "Info",
    "IsReady",
    "NewGame",
    "OptionSpec",
    "OptionType",
    "PositionCommand",
    "Quit",
    "ReadyOk",
    "Reply",
    "Score",
    "SetOption",
    "Stop",
    "TurnReply",
    "Uqi",
    "UqiError",
    "UqiOk",
    "format_command",
    "format_reply",
    "parse_command",
    "parse_reply",
    "strip_line",
]

PROTOCOL_VERSION: Final = 1
MAX_LINE_BYTES: Final = 4096
MAX_VALUE: Final = 1000
"""The largest ``score value`` (SPEC §5.3): 1000 x (2s - 1) for an expected score s between 0 and 1."""
MAX_GO_VALUE: Final = 2**63 - 1
"""The largest value of a ``go`` limit (SPEC §4.5): a signed 64-bit integer; a larger one is malformed."""
MAX_OPTIONS: Final = 128
"""Most options an engine may declare in its handshake (SPEC §4.1); an arena refuses an engine that declares more."""
_ANY_BOARD: Final = Variant(claims=ClaimMode.STRICT)
_OPTION_ID: Final = re.compile(r"[A-Za-z0-9_.\-]+\Z")
# Numbers on the wire are ASCII decimal digits (SPEC §4.2, §4.5): Python's int() would also take "+5", "1_000"
# and non-ASCII digits, which no engine in another language reads.
_SIGNED: Final = re.compile(r"-?[0-9]+\Z")
# SPEC §3.1: words are separated by spaces and tabs only, as every engine splits them; str.split() would also
# split on other Unicode white space and read a line that a C or JavaScript engine sees as one word.
_SEPARATOR: Final = re.compile(r"[ \t]+")
_AROUND: Final = " \t\r\n"


class UqiError(QuartoError, ValueError):
    """A line that is not valid UQI. The message names the problem."""

    status = ExitStatus.ENGINE
    reason = "uqi"


# --- arena -> engine -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Uqi:
    """``uqi [VERSION]``: start of the handshake."""

    version: int = PROTOCOL_VERSION
    """Highest protocol version the arena speaks."""


@dataclass(frozen=True, slots=True)
class SetOption:
    """``setoption name ID [value VALUE...]``."""

    name: str
    """Option id (one token)."""
    value: str | None = None
    """The value as text (rest of the line), or None for a button."""


@dataclass(frozen=True, slots=True)
class NewGame:
    """``newgame shapes S attributes A claims C``."""

    variant: Variant
    """The rules of the game about to start."""


@dataclass(frozen=True, slots=True)
class PositionCommand:
    """``position startpos|BOARD HAND [turns TOKEN...]``."""

    start: str | None
    """Canonical position string of the start, or None for ``startpos``."""
    turns: tuple[Turn, ...] = ()
    """Turns played from the start."""

    def position(self, variant: Variant) -> Position:
        """The position after the turns (raises IllegalTurn/NotationError if they do not apply)."""
        start = Position.start(variant) if self.start is None else parse_position(self.start, variant)
        return start.play(self.turns)


@dataclass(frozen=True, slots=True)
class Go:
    """``go [time MS] [inc MS] [otime MS] [oinc MS] [movestogo N] [movetime MS] [depth N] [nodes N] [infinite]``."""

    time: int | None = None
    """The engine's remaining time, ms."""
    inc: int | None = None
    """The engine's increment per turn, ms."""
    otime: int | None = None
    """The opponent's remaining time, ms."""
    oinc: int | None = None
    """The opponent's increment, ms."""
    movestogo: int | None = None
    """The engine's turns, this one included, until its clock is credited the next period (moves-per-period time
    controls, ``40/60``); None: ``time`` is for the rest of the game."""
    movetime: int | None = None
    """Fixed time for this turn, ms."""
    depth: int | None = None
    """Search at most this many turns ahead."""
    nodes: int | None = None
    """Search at most this many positions."""
    infinite: bool = False
    """Search until ``stop``."""


@dataclass(frozen=True, slots=True)
class Stop:
    """``stop``: end the search now and send the turn."""


@dataclass(frozen=True, slots=True)
class IsReady:
    """``isready``: answer ``readyok``, even while searching."""


@dataclass(frozen=True, slots=True)
class Quit:
    """``quit``: exit (over ZeroMQ: end the session)."""


Command = Uqi | SetOption | NewGame | PositionCommand | Go | Stop | IsReady | Quit

# --- engine -> arena -------------------------------------------------------------------------------------------


class OptionType(enum.Enum):
    """Types of engine options."""

    CHECK = "check"
    SPIN = "spin"
    COMBO = "combo"
    STRING = "string"
    BUTTON = "button"


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """``option name ID type T [min N] [max N] [var V]... [default V...]``: one typed engine option."""

    name: str
    """Option id (one token; compared case-insensitively)."""
    type: OptionType
    """Value type."""
    default: str | None = None
    """Default value as text (None only for buttons)."""
    min: int | None = None
    """Smallest value of a spin."""
    max: int | None = None
    """Largest value of a spin."""
    vars: tuple[str, ...] = ()
    """Allowed values of a combo."""

    def __post_init__(self) -> None:
        if not _OPTION_ID.match(self.name):
            raise UqiError(f"option id {self.name!r} must be one token of letters, digits, '_', '-', '.'")
        if self.type is OptionType.SPIN:
            if self.min is None or self.max is None:
                raise UqiError(f"spin option {self.name} needs min and max")
            if self.min > self.max:
                raise UqiError(f"spin option {self.name} has min {self.min} > max {self.max}")
        if self.type is OptionType.COMBO and not self.vars:
            raise UqiError(f"combo option {self.name} needs at least one var")
        if len({v.lower() for v in self.vars}) != len(self.vars):
            raise UqiError(f"combo option {self.name} has two vars that differ only in case, or not at all")
        if self.type is not OptionType.BUTTON:
            if self.default is None:
                raise UqiError(f"option {self.name} needs a default")
            self.check(self.default, what="default")

    def check(self, value: str | None, *, what: str = "value") -> str | None:
        """Validates a value for this option; returns it normalized, or raises UqiError naming the problem.

        SPEC §4.2: check values and combo vars compare case-insensitively (normalized to ``true``/``false`` and to
        the var as declared); a spin is ASCII digits with an optional ``-``; a string loses the white space around
        it, as it would on the wire, and may be empty, but cannot hold a line break.
        """
        t = self.type
        if t is OptionType.BUTTON:
            if value not in (None, ""):
                raise UqiError(f"option {self.name} is a button and takes no value")
            return None
        if value is None:
            raise UqiError(f"option {self.name} needs a value")
        if t is OptionType.CHECK:
            v = value.strip().lower()
            if v not in ("true", "false"):
                raise UqiError(f"option {self.name}: {what} {value!r} is not true or false")
            return v
        if t is OptionType.SPIN:
            if not _SIGNED.match(value.strip()):
                raise UqiError(f"option {self.name}: {what} {value!r} is not an integer")
            n = int(value)
            assert self.min is not None and self.max is not None
            if not self.min <= n <= self.max:
                raise UqiError(f"option {self.name}: {what} {n} is outside {self.min}..{self.max}")
            return str(n)
        if t is OptionType.COMBO:
            for v in self.vars:
                if v.lower() == value.strip().lower():
                    return v
            raise UqiError(f"option {self.name}: {what} {value!r} is not one of {', '.join(self.vars)}")
        if "\n" in value or "\r" in value:
            raise UqiError(f"option {self.name}: a {what} cannot hold a line break")
        return value.strip()


@dataclass(frozen=True, slots=True)
class IdName:
    """``id name NAME...``."""

    name: str
    """The engine's name."""


@dataclass(frozen=True, slots=True)
class IdAuthor:
    """``id author AUTHOR...``."""

    author: str
    """The engine's author."""


@dataclass(frozen=True, slots=True)
class UqiOk:
    """``uqiok VERSION``: end of the handshake."""

    version: int = PROTOCOL_VERSION
    """Protocol version the engine speaks."""


@dataclass(frozen=True, slots=True)
class ReadyOk:
    """``readyok``."""


@dataclass(frozen=True, slots=True)
class Score:
    """A search score from the engine's point of view."""

    kind: str
    """``win``, ``loss``, ``draw`` or ``value``."""
    value: int | None = None
    """Turns to the end for win/loss, the heuristic value for value, None for draw."""

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind} {self.value}"


@dataclass(frozen=True, slots=True)
class Info:
    """``info ...``: search progress. Every field is optional."""

    depth: int | None = None
    """Depth reached, in turns."""
    seldepth: int | None = None
    """Deepest line searched, in turns."""
    score: Score | None = None
    """Evaluation of the position for the engine."""
    nodes: int | None = None
    """Positions searched."""
    nps: int | None = None
    """Positions per second."""
    time: int | None = None
    """Milliseconds spent in this search."""
    pv: tuple[Turn, ...] = ()
    """Principal variation, starting with the engine's own turn."""
    string: str | None = None
    """Free text (``info string``)."""


@dataclass(frozen=True, slots=True)
class TurnReply:
    """``turn TOKEN``: the one final answer to a ``go``."""

    turn: Turn
    """The turn played."""


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """``error TEXT...``: the engine did not understand or cannot do what it was asked."""

    text: str
    """What went wrong, starting with the command concerned."""


Reply = IdName | IdAuthor | OptionSpec | UqiOk | ReadyOk | Info | TurnReply | ErrorReply


# --- parsing ---------------------------------------------------------------------------------------------------


def strip_line(line: str) -> str:
    """``line`` without the spaces, tabs and line terminator around it (SPEC §3.1: they are not part of it)."""
    return line.strip(_AROUND)


def _words(line: str) -> list[str]:
    if len(line.encode("utf-8", "surrogateescape")) > MAX_LINE_BYTES:
        raise UqiError(f"line longer than {MAX_LINE_BYTES} bytes")
    text = line.strip(_AROUND)
    return _SEPARATOR.split(text) if text else []


def _rest(line: str, nwords: int) -> str:
    """The text after the first ``nwords`` words, with its inner spacing kept."""
    parts = _SEPARATOR.split(line.strip(_AROUND), maxsplit=nwords)
    return parts[nwords] if len(parts) > nwords else ""


def _shown(word: str) -> str:
    """A word of the line as an error message quotes it: as is, or escaped when it holds unprintable characters."""
    return word if word.isprintable() else repr(word)


def _int(text: str, what: str, *, minimum: int | None = 0, maximum: int | None = None) -> int:
    if not _SIGNED.match(text):
        raise UqiError(f"{what} {text!r} is not an integer")
    n = int(text)
    if minimum is not None and n < minimum:
        raise UqiError(f"{what} {n} is below {minimum}")
    if maximum is not None and n > maximum:
        raise UqiError(f"{what} {n} is above {maximum}")
    return n


def _turns(tokens: list[str], what: str) -> tuple[Turn, ...]:
    out = []
    for tok in tokens:
        try:
            out.append(parse_turn(tok))
        except NotationError as e:
            raise UqiError(f"{what}: {e}") from None
    return tuple(out)


def parse_command(line: str) -> Command:
    """Parses one line an arena sends. Raises :class:`UqiError` for an unknown or malformed command."""
    w = _words(line)
    if not w:
        raise UqiError("empty line")
    cmd = w[0]
    if cmd == "uqi":
        if len(w) > 2:
            raise UqiError("uqi takes at most one argument, the protocol version")
        return Uqi(_int(w[1], "uqi version", minimum=1) if len(w) == 2 else PROTOCOL_VERSION)
    if cmd in ("isready", "stop", "quit"):
        if len(w) != 1:
            raise UqiError(f"{cmd} takes no arguments")
        return IsReady() if cmd == "isready" else Stop() if cmd == "stop" else Quit()
    if cmd == "setoption":
        if len(w) < 3 or w[1] != "name":
            raise UqiError("setoption needs 'name ID'")
        if len(w) == 3:
            return SetOption(w[2])
        if w[3] != "value":
            raise UqiError(f"setoption: expected 'value' after the option id, got {w[3]!r}")
        return SetOption(w[2], _rest(line, 4))
    if cmd == "newgame":
        return _parse_newgame(w[1:])
    if cmd == "position":
        if len(w) < 2:
            raise UqiError("position needs 'startpos' or a position string")
        if w[1] == "startpos":
            start, rest = None, w[2:]
        else:
            if len(w) < 3:
                raise UqiError("position needs the board and the piece in hand")
            try:
                # Syntax only: strict claims accept every well-formed board (the variant comes with newgame).
                start = format_position(parse_position(f"{w[1]} {w[2]}", _ANY_BOARD))
            except NotationError as e:
                raise UqiError(f"position: {e}") from None
            rest = w[3:]
        if rest and rest[0] != "turns":
            raise UqiError(f"position: expected 'turns', got {rest[0]!r}")
        return PositionCommand(start, _turns(rest[1:], "position"))
    if cmd == "go":
        return _parse_go(w[1:])
    raise UqiError(f"unknown command {_shown(cmd)}")


_NEWGAME_FIELDS: Final = ("shapes", "attributes", "claims")
_NEWGAME_USAGE: Final = "newgame needs 'shapes S attributes A claims C'"


def _parse_newgame(w: list[str]) -> NewGame:
    """SPEC §4.3: a field missing, repeated or unknown, or a bad attribute list, is malformed; a value that is not
    one of this version's is a variant the engine cannot play (``newgame unsupported``)."""
    fields: dict[str, str] = {}
    for i in range(0, len(w), 2):
        key = w[i]
        if key not in _NEWGAME_FIELDS:
            raise UqiError(f"newgame: unknown field {key!r}; {_NEWGAME_USAGE}")
        if key in fields:
            raise UqiError(f"newgame: {key} given twice")
        if i + 1 >= len(w):
            raise UqiError(f"newgame: {key} needs a value")
        fields[key] = w[i + 1].lower()
    missing = [key for key in _NEWGAME_FIELDS if key not in fields]
    if missing:
        raise UqiError(f"{_NEWGAME_USAGE} (no {' or '.join(missing)})")
    shapes, claims = fields["shapes"], fields["claims"]
    if shapes not in ("standard", "advanced"):
        raise UqiError(f"newgame unsupported shapes {shapes!r}: expected standard or advanced")
    if claims not in ("auto", "strict"):
        raise UqiError(f"newgame unsupported claims {claims!r}: expected auto or strict")
    attributes: set[Attribute] = set()
    for name in fields["attributes"].split(","):
        if not name:
            raise UqiError(f"newgame: empty attribute in {fields['attributes']!r}")
        if name not in ATTRIBUTE_NAMES:
            raise UqiError(f"newgame unsupported attribute {name!r}: expected color, shape, height or fill")
        if ATTRIBUTE_NAMES[name] in attributes:
            raise UqiError(f"newgame: attribute {name!r} given twice")
        attributes.add(ATTRIBUTE_NAMES[name])
    return NewGame(Variant(Shapes(shapes), frozenset(attributes), ClaimMode(claims)))


_GO_INTS: Final = ("time", "inc", "otime", "oinc", "movestogo", "movetime", "depth", "nodes")
_GO_POSITIVE: Final = frozenset({"movestogo", "movetime", "depth", "nodes"})


def _parse_go(w: list[str]) -> Go:
    values: dict[str, int] = {}
    infinite = False
    i = 0
    while i < len(w):
        key = w[i]
        if key == "infinite":
            if infinite:
                raise UqiError("go: infinite given twice")
            infinite = True
            i += 1
            continue
        if key not in _GO_INTS:
            raise UqiError(f"go: unknown limit {key!r}")
        if i + 1 >= len(w):
            raise UqiError(f"go: {key} needs a value")
        if key in values:
            raise UqiError(f"go: {key} given twice")
        values[key] = _int(w[i + 1], f"go {key}", minimum=1 if key in _GO_POSITIVE else 0, maximum=MAX_GO_VALUE)
        i += 2
    return Go(infinite=infinite, **values)


_PLAIN_REPLIES: dict[str, Reply] = {}
"""Replies already parsed, by their exact line, for the lines of every turn: ``turn TOKEN`` with a token in its
canonical form (at most a few hundred) and ``readyok``. Replies are immutable, so one object serves every time."""


def parse_reply(line: str) -> Reply:
    """Parses one line an engine sends. Raises :class:`UqiError` for an unknown or malformed reply."""
    reply = _PLAIN_REPLIES.get(line)
    if reply is not None:
        return reply
    reply = _parse_reply(line)
    if line == "readyok" or (isinstance(reply, TurnReply) and line == "turn " + reply.turn.token):
        _PLAIN_REPLIES[line] = reply  # bounded: one entry per canonical token
    return reply


def _parse_reply(line: str) -> Reply:
    w = _words(line)
    if not w:
        raise UqiError("empty line")
    kind = w[0]
    if kind == "turn":
        if len(w) != 2:
            raise UqiError("turn needs exactly one turn token")
        try:
            return TurnReply(parse_turn(w[1]))
        except NotationError as e:
            raise UqiError(str(e)) from None
    if kind == "info":
        return _parse_info(line, w)
    if kind == "readyok":
        if len(w) != 1:
            raise UqiError("readyok takes no arguments")
        return ReadyOk()
    if kind == "uqiok":
        if len(w) != 2:
            raise UqiError("uqiok needs the protocol version")
        return UqiOk(_int(w[1], "uqiok version", minimum=1))
    if kind == "id":
        if len(w) < 3 or w[1] not in ("name", "author"):
            raise UqiError("id needs 'name NAME' or 'author AUTHOR'")
        text = _rest(line, 2)
        return IdName(text) if w[1] == "name" else IdAuthor(text)
    if kind == "option":
        return _parse_option(line, w)
    if kind == "error":
        return ErrorReply(_rest(line, 1))
    raise UqiError(f"unknown reply {kind!r}")


def _parse_info(line: str, w: list[str]) -> Info:
    fields: dict[str, object] = {}
    i = 1
    while i < len(w):
        key = w[i]
        if key in fields:
            raise UqiError(f"info: {key} given twice")
        if key == "string":
            fields["string"] = _rest(line, i + 1)
            break
        if key == "pv":
            fields["pv"] = _turns(w[i + 1 :], "info pv")
            break
        if key == "score":
            if i + 1 >= len(w):
                raise UqiError("info score needs win N, loss N, draw or value V")
            kind = w[i + 1]
            if kind == "draw":
                fields["score"] = Score("draw")
                i += 2
                continue
            if kind not in ("win", "loss", "value") or i + 2 >= len(w):
                raise UqiError("info score needs win N, loss N, draw or value V")
            if kind == "value":
                n = _int(w[i + 2], "info score value", minimum=-MAX_VALUE, maximum=MAX_VALUE)
            else:
                n = _int(w[i + 2], f"info score {kind}", minimum=1 if kind == "win" else 2)
                # SPEC §5.3: N counts the turns of both players from the engine's turn now, so the engine's own
                # winning turns are the odd ones and the opponent's the even ones.
                if n % 2 != (kind == "win"):
                    parity = "an odd" if kind == "win" else "an even"
                    raise UqiError(f"info score {kind} {n}: N counts both players' turns, so a {kind} takes {parity} N")
            fields["score"] = Score(kind, n)
            i += 3
            continue
        if key not in ("depth", "seldepth", "nodes", "nps", "time"):
            raise UqiError(f"info: unknown field {key!r}")
        if i + 1 >= len(w):
            raise UqiError(f"info: {key} needs a value")
        fields[key] = _int(w[i + 1], f"info {key}")
        i += 2
    return Info(**fields)  # type: ignore[arg-type]


def _parse_option(line: str, w: list[str]) -> OptionSpec:
    if len(w) < 5 or w[1] != "name" or w[3] != "type":
        raise UqiError("option needs 'name ID type TYPE'")
    name = w[2]
    try:
        otype = OptionType(w[4])
    except ValueError:
        raise UqiError(f"option {name}: unknown type {w[4]!r} (check, spin, combo, string, button)") from None
    lo = hi = None
    variants: list[str] = []
    default = None
    i = 5
    while i < len(w):
        key = w[i]
        if key == "default":
            default = _rest(line, i + 1)
            break
        if i + 1 >= len(w):
            raise UqiError(f"option {name}: {key} needs a value")
        if key in ("min", "max") and (lo if key == "min" else hi) is not None:
            raise UqiError(f"option {name}: {key} given twice")
        if key == "min":
            lo = _int(w[i + 1], f"option {name} min", minimum=None)
        elif key == "max":
            hi = _int(w[i + 1], f"option {name} max", minimum=None)
        elif key == "var":
            variants.append(w[i + 1])
        else:
            raise UqiError(f"option {name}: unknown field {key!r}")
        i += 2
    return OptionSpec(name, otype, default, lo, hi, tuple(variants))


# --- formatting ------------------------------------------------------------------------------------------------


def format_command(cmd: Command) -> str:
    """The line for a command (without the line terminator)."""
    match cmd:
        case Uqi(version):
            return f"uqi {version}"
        case SetOption(name, None):
            return f"setoption name {name}"
        case SetOption(name, value):
            return f"setoption name {name} value {value}".rstrip(" ")  # an empty string is nothing after 'value'
        case NewGame(variant):
            return (
                f"newgame shapes {variant.shapes.value} attributes {format_attributes(variant.attributes)} "
                f"claims {variant.claims.value}"
            )
        case PositionCommand(start, turns):
            head = "position startpos" if start is None else f"position {start}"
            return head + (" turns " + " ".join(map(str, turns)) if turns else "")
        case Go():
            parts = ["go"]
            for key in _GO_INTS:
                v = getattr(cmd, key)
                if v is not None:
                    parts += [key, str(v)]
            if cmd.infinite:
                parts.append("infinite")
            return " ".join(parts)
        case Stop():
            return "stop"
        case IsReady():
            return "isready"
        case Quit():
            return "quit"
    raise TypeError(f"not a UQI command: {cmd!r}")


def format_reply(reply: Reply) -> str:
    """The line for a reply (without the line terminator)."""
    match reply:
        case TurnReply(turn):
            return f"turn {turn}"
        case Info():
            parts = ["info"]
            for key in ("depth", "seldepth"):
                if (v := getattr(reply, key)) is not None:
                    parts += [key, str(v)]
            if reply.score is not None:
                parts += ["score", str(reply.score)]
            for key in ("nodes", "nps", "time"):
                if (v := getattr(reply, key)) is not None:
                    parts += [key, str(v)]
            if reply.pv:
                parts += ["pv", *map(str, reply.pv)]
            elif reply.string is not None:
                parts += ["string", reply.string]
            return " ".join(parts).rstrip(" ")
        case ReadyOk():
            return "readyok"
        case UqiOk(version):
            return f"uqiok {version}"
        case IdName(name):
            return f"id name {name}"
        case IdAuthor(author):
            return f"id author {author}"
        case OptionSpec():
            parts = ["option", "name", reply.name, "type", reply.type.value]
            if reply.min is not None:
                parts += ["min", str(reply.min)]
            if reply.max is not None:
                parts += ["max", str(reply.max)]
            for v in reply.vars:
                parts += ["var", v]
            if reply.default is not None:
                parts += ["default", reply.default]
            return " ".join(parts).rstrip(" ")
        case ErrorReply(text):
            return f"error {text}".rstrip(" ")
    raise TypeError(f"not a UQI reply: {reply!r}")
