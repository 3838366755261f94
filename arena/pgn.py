"""PGN for Quarto games: a writer for our records and a fast, forgiving reader for PGN files from any tool.

Quarto in PGN. White is the first player, who gives the first piece; Black is the second. The movetext is the
list of turn tokens (``7``, ``b3e``, ``c1!`` ...; see protocol.notation) numbered like chess moves: ``1. 7 b3e
2. c2a d4f ...``, one number per pair of turns, White's then Black's, then the result token. A game that starts
from another position says so in a ``StartPosition`` tag (a position string); its first recorded turn is still
White's. A ``{comment}`` may follow any turn.

Reading. :func:`read_games` streams the games of one file; :func:`read_results` reads what a rating needs from many
files. Only the tag pairs are parsed (the movetext is kept as text, or skipped by :func:`read_results`), so a chess
PGN reads just as well. The reader accepts a UTF-8 byte-order mark, CRLF line ends, ``{...}`` comments spanning
lines, ``;`` comments, ``%`` escape lines, games without movetext and missing blank lines (a tag line after
movetext, after a blank line, or repeating a tag name starts a new game). The ``Result`` tag is the game's result;
the termination marker at the end of the movetext is not checked against it. Anything it cannot read raises
:class:`PgnError` with ``file:line:`` and the problem: a missing or unknown ``Result``, a malformed tag line, an
unclosed comment, a NUL byte (binary file), invalid UTF-8, a file that cannot be opened.

A game whose result is ``*`` is unfinished: :func:`read_games` yields it, :func:`read_results` skips it and
counts it in :attr:`PgnResults.unfinished`.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO, Final

from .errors import ArenaError, ExitStatus
from .records import EngineIdentity, GameRecord, Result
from .stats import ScoredGame

__all__ = [
    "RESULTS",
    "PgnError",
    "PgnGame",
    "PgnResults",
    "format_game",
    "parse_movetext",
    "pgn_text",
    "read_games",
    "read_results",
]

RESULTS: Final[Mapping[str, float | None]] = {r.value: r.first_score for r in Result}
"""The first player's score by PGN result (``*``: None), from :class:`~.records.Result`: one map for both."""
"""Result tokens and White's score; ``None`` for an unfinished game."""

_ROSTER: Final = ("Event", "Site", "Date", "Round", "White", "Black", "Result")
# The PGN standard's placeholders for roster tags whose value is unknown.
_UNKNOWN: Final = {"Date": "????.??.??"}
_LINE_WIDTH: Final = 79
MAX_LINE_BYTES: Final = 1 << 20
"""Longest line a PGN file may have (its games' lines are far shorter); a longer one is a :class:`PgnError`."""
# Lenient on purpose: other tools write unescaped quotes inside values, and the last quote before ']' ends it.
_TAG_LINE: Final = re.compile(r'\[\s*([A-Za-z0-9_][A-Za-z0-9_+#=:-]*)\s+"(.*)"\s*\]$')
_ESCAPE: Final = re.compile(r'\\(["\\])')
_TAG_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+#=:-]*")
_MOVE_NUMBER: Final = re.compile(r"\d+\.+")
_BAD_TOKEN: Final = re.compile(r"[\s{};]")  # what a turn token cannot hold: it would not read back as one token
_ROSTER_NAMES: Final = frozenset(_ROSTER)
_ROSTER_LINES: Final = "\n".join(f'[{name} "{{}}"]' for name in _ROSTER)  # a template for the seven values
# Who played, White's then Black's (pgn_text): the engine's id name, its author, how it was run, its options.
_ENGINE_TAGS: Final = tuple(
    tuple(f"{side}{what}" for what in ("Engine", "Author", "Command", "Options")) for side in ("White", "Black")
)
# Tag names known to be good (the roster and what pgn_text adds): others are matched against the pattern.
_USUAL_NAMES: Final = _ROSTER_NAMES.union(
    ("Variant", "TimeControl", "Termination", "Opening", "GameId", "StartPosition"), *_ENGINE_TAGS
)
_NUMBERED: Final = 64
_ASCII_SPACE: Final = bytes(c for c in range(128) if chr(c).isspace() and c != 32)  # what str.split splits on, too
_MOVE_NUMBERS: Final = tuple(f"{k}." for k in range(1, _NUMBERED // 2 + 1))
_MOVETEXT_ITEM: Final = re.compile(r"\{([^}]*)\}|;([^\n]*)|([^\s{};]+)")
# States of a brace comment at the end of a movetext line.
_CLOSED: Final = 0
_STILL_OPEN: Final = 1
_OPENED: Final = 2


class PgnError(ArenaError):
    """A PGN file that cannot be read; the message is one line, ``file:line: problem``."""

    status = ExitStatus.USAGE
    reason = "pgn"

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        """The file."""
        self.line = line
        """The 1-based line number, or ``None`` when the problem is the whole file."""
        self.problem = problem
        """What is wrong, without the location."""


@dataclass(frozen=True, slots=True)
class PgnGame:
    """One game as read from a PGN file."""

    tags: Mapping[str, str]
    """Tag pairs in file order, values unescaped."""
    movetext: str
    """The movetext lines as in the file (comments and result token included), joined by newlines."""
    path: str
    """The file the game came from."""
    line: int
    """The line where the game starts."""

    @property
    def result(self) -> str:
        """The ``Result`` tag: ``1-0``, ``0-1``, ``1/2-1/2`` or ``*`` (the reader guarantees one of these)."""
        return self.tags["Result"]

    @property
    def white_score(self) -> float | None:
        """White's score (1, 0.5, 0), or ``None`` for an unfinished game."""
        return RESULTS[self.result]


@dataclass(frozen=True, slots=True)
class PgnResults:
    """What a rating needs from a set of PGN files."""

    games: list[ScoredGame]
    """Finished games in file order."""
    unfinished: int
    """Games with result ``*``, skipped."""


# --------------------------------------------------------------------------------------------------------------
# Writing


def format_game(
    tags: Mapping[str, str], turns: Sequence[str], result: str, comments: Mapping[int, str] | None = None
) -> str:
    """One game as PGN text ending in a newline; separate games in a file with a blank line.

    The seven roster tags come first in the standard order (``?`` for those not given, ``????.??.??`` for Date),
    ``Result`` taken from ``result``; the other tags follow in the order of ``tags``. ``comments`` maps the index
    of a turn in ``turns`` to the comment written after it (``-1``: before the first turn); their white space is
    normalized to single spaces. Raises :class:`ValueError` for a tag, token, comment or result that would not
    read back as written.
    """
    # A run writes one of these a game as it counts it, so the usual game (known tag names, no value to escape, one
    # comment a turn, canonical tokens) is checked a whole game at a time and written through one template; anything
    # else is checked a tag, token and comment at a time, which also names what is wrong.
    if result not in RESULTS:
        raise ValueError(f"result {result!r} is not one of {', '.join(RESULTS)}")
    get = tags.get
    if get("Result", result) != result:
        raise ValueError(f"tag Result {tags['Result']!r} contradicts result {result!r}")
    if not _USUAL_NAMES.issuperset(tags):
        for name in tags:
            if name not in _USUAL_NAMES and not _TAG_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a PGN tag name (letters, digits, _ + # = : -)")
    values = "".join(tags.values())
    if '"' in values or "\\" in values or "\n" in values or "\r" in values:
        lines = [
            _tag_line(name, result if name == "Result" else get(name, _UNKNOWN.get(name, "?"))) for name in _ROSTER
        ]
        lines.extend(_tag_line(name, value) for name, value in tags.items() if name not in _ROSTER_NAMES)
        head = "\n".join(lines)
    elif tuple(islice(tags, len(_ROSTER))) == _ROSTER:  # all seven first, in order (pgn_text's tags)
        head = "\n".join([f'[{name} "{value}"]' for name, value in tags.items()])
    else:
        head = _ROSTER_LINES.format(
            get("Event", "?"), get("Site", "?"), get("Date", "????.??.??"), get("Round", "?"), get("White", "?"),
            get("Black", "?"), result
        )  # fmt: skip
        if not _ROSTER_NAMES.issuperset(tags):
            head += "".join([f'\n[{name} "{value}"]' for name, value in tags.items() if name not in _ROSTER_NAMES])
    movetext = _usual_movetext(turns, result, comments)
    if movetext is None:
        movetext = _movetext(turns, result, comments)
    return f"{head}\n\n{_wrap(movetext)}\n"


def _usual_movetext(turns: Sequence[str], result: str, comments: Mapping[int, str] | None) -> str | None:
    """The movetext on one line when the game is usual (a comment a turn, canonical tokens, comments with nothing to
    normalize), checked on the whole text; None for any other game."""
    count = len(turns)
    if comments is None or len(comments) != count or not _plain_tokens(turns):
        return None
    numbers = _MOVE_NUMBERS if count <= _NUMBERED else [f"{k}." for k in range(1, count // 2 + 2)]
    try:
        words = [
            f"{numbers[i >> 1]} {t} {{{comments[i]}}}" if not i & 1 else f"{t} {{{comments[i]}}}"
            for i, t in enumerate(turns)
        ]
    except KeyError:  # not one comment a turn after all
        return None
    words.append(result)
    text = " ".join(words)
    return text if _plain_text(text, count) else None


def _plain_tokens(turns: Sequence[str]) -> bool:
    """No token empty, a result, or holding a plain space, '{};' or the '.' of a move number (other white space:
    :func:`_plain_text`)."""
    joined = "".join(turns)
    if not all(turns) or "{" in joined or "}" in joined or ";" in joined or "." in joined or " " in joined:
        return False
    return RESULTS.keys().isdisjoint(turns)


def _plain_text(text: str, count: int) -> bool:
    """Whether a movetext of ``count`` plain tokens (:func:`_plain_tokens`), each followed by a comment, reads back
    as written: no comment holds a '}' or white space to normalize."""
    # The tokens hold no brace and no plain space, so one '}' too many is in a comment, and so is a space to
    # normalize. Other white space (a token's tab, a comment's line end) is looked for in the bytes of ASCII text,
    # and in other text through isprintable (printable text holds no white space but the plain space).
    if text.count("}") != count or "  " in text or "{ " in text or " }" in text:
        return False
    if text.isascii():
        return len(text.encode().translate(None, _ASCII_SPACE)) == len(text)
    return text.isprintable()


def _movetext(turns: Sequence[str], result: str, comments: Mapping[int, str] | None) -> str:
    """The movetext on one line, a token and a comment at a time."""
    for index, token in enumerate(turns):
        if not token or _BAD_TOKEN.search(token) or token in RESULTS or _MOVE_NUMBER.match(token):
            raise ValueError(f"turn {index + 1}: {token!r} cannot be a PGN token")
    count = len(turns)
    notes: dict[int, str] = {}
    for index, text in (comments or {}).items():
        if not -1 <= index < count:
            raise ValueError(f"comment index {index} is not a turn index (-1 .. {count - 1})")
        if "}" in text:
            raise ValueError(f"comment {text!r} contains '}}', which would end it early")
        notes[index] = " ".join(text.split())
    words = [f"{k // 2 + 1}. {t}" if k % 2 == 0 else t for k, t in enumerate(turns)]
    for index, text in notes.items():
        if index >= 0:
            words[index] = f"{words[index]} {{{text}}}"
    if -1 in notes:
        words.insert(0, f"{{{notes[-1]}}}")
    words.append(result)
    return " ".join(words)


def _wrap(text: str) -> str:
    """Words (no white space inside them) separated by single spaces, filled greedily into lines of at most the
    line width; a word longer than that stands alone on its line."""
    lines = []
    while len(text) > _LINE_WIDTH:
        cut = text.rfind(" ", 0, _LINE_WIDTH + 1)
        if cut < 0:
            cut = text.find(" ")
            if cut < 0:
                break
        lines.append(text[:cut])
        text = text[cut + 1 :]
    lines.append(text)
    return "\n".join(lines)


def _tag_line(name: str, value: str) -> str:
    if not _TAG_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a PGN tag name (letters, digits, _ + # = : -)")
    if "\n" in value or "\r" in value:
        raise ValueError(f"tag {name} spans lines: {value!r}")
    if "\\" in value or '"' in value:
        value = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'[{name} "{value}"]'


def parse_movetext(movetext: str) -> tuple[list[str], dict[int, str]]:
    """The turn tokens and comments of a movetext, the inverse of :func:`format_game`'s movetext.

    Move numbers (``12.``, ``12...``, also glued to a token), NAGs (``$3``) and result tokens are dropped. A
    comment (``{...}`` or ``;`` to the end of the line) belongs to the turn before it (``-1``: before the first);
    several comments on one turn are joined by a space and white space is normalized. Variations are not
    recognized (Quarto records have none).
    """
    turns: list[str] = []
    comments: dict[int, str] = {}
    for match in _MOVETEXT_ITEM.finditer(movetext):
        brace, semicolon, token = match.groups()
        if token is None:
            text = " ".join((brace if brace is not None else semicolon).split())
            key = len(turns) - 1
            comments[key] = f"{comments[key]} {text}" if key in comments else text
            continue
        number = _MOVE_NUMBER.match(token)
        if number:
            token = token[number.end() :]
        if token and token not in RESULTS and not token.startswith("$"):
            turns.append(token)
    return turns, comments


# --------------------------------------------------------------------------------------------------------------
# Reading


def read_games(path: str | Path, *, skip: Callable[[PgnError], None] | None = None) -> Iterator[PgnGame]:
    """The games of one PGN file, streamed in file order (``*`` games included). Raises :class:`PgnError`.

    ``skip``: a game that cannot be read (a malformed tag line, no or an unknown ``Result``, a comment never closed)
    goes to ``skip`` as its error and is left out, and reading goes on at the next game (the next tag line after a
    blank line); what makes the whole file unreadable (it cannot be opened, a NUL byte, invalid UTF-8, a line too
    long) still raises."""
    name = str(path)
    for tags, movetext, line in _scan(name, keep_movetext=True, skip=skip):
        yield PgnGame(tags, "\n".join(movetext), name, line)


def read_results(paths: Iterable[str | Path]) -> PgnResults:
    """White, Black and White's score of every finished game in ``paths``, for rating.

    Games with result ``*`` are skipped and counted. Raises :class:`PgnError` for unreadable input, including a
    finished game without a White or Black tag.
    """
    games: list[ScoredGame] = []
    unfinished = 0
    for path in paths:
        name = str(path)
        for tags, _, line in _scan(name, keep_movetext=False):
            score = RESULTS[tags["Result"]]
            if score is None:
                unfinished += 1
                continue
            white, black = tags.get("White"), tags.get("Black")
            if not white or not black:
                missing = "White" if not white else "Black"
                raise PgnError(name, line, f"game has no {missing} tag (or it is empty), so it cannot be rated")
            games.append(ScoredGame(white, black, score))
    return PgnResults(games, unfinished)


def _scan(
    path: str, keep_movetext: bool, skip: Callable[[PgnError], None] | None = None
) -> Iterator[tuple[dict[str, str], list[str], int]]:
    """Yields (tags, movetext lines, first line) per game; checks the encoding, tag lines and Result. With ``skip``,
    a game's own error goes there and the game is dropped (see :func:`read_games`)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - the generator closes it in its finally clause
    except OSError as error:
        raise PgnError(path, None, f"cannot open: {error.strerror or error}") from None
    tags: dict[str, str] = {}
    result_line = 0
    movetext: list[str] = []
    start = 0  # 0: no game open
    has_movetext = False
    after_blank = False
    comment_line = 0  # line where an open {comment} started, 0 when none is open
    known_names: set[str] = set()  # tag names already seen in the plain form [Name "value"]
    skipping = False  # a broken game is being passed over (skip): until a tag line after a blank line
    try:
        for number, text in enumerate(_decoded_lines(path, handle), start=1):
            line = text.rstrip()
            if comment_line:
                if keep_movetext:
                    movetext.append(line)
                if "}" in line:
                    state = _comment_state(line, open_comment=True)
                    comment_line = 0 if state == _CLOSED else number if state == _OPENED else comment_line
                continue
            if not line:
                after_blank = True
                continue
            first = line[0]
            if first == "%":
                continue
            if skipping:
                if first != "[" or not after_blank:
                    after_blank = False
                    if "{" in line or ";" in line:
                        comment_line = number if _comment_state(line, open_comment=False) == _OPENED else 0
                    continue
                skipping = False
            if first == "[":
                # Fast path for the usual [Name "value"]; anything else goes through the full pattern.
                gap = line.find(' "')
                name = line[1:gap]
                if gap > 1 and line.endswith('"]') and name in known_names:
                    value = line[gap + 2 : -2]
                else:
                    match = _TAG_LINE.match(line)
                    if match is None:
                        bad = PgnError(path, number, f'malformed tag pair {line[:60]!r} (expected [Name "value"])')
                        if skip is None:
                            raise bad
                        # The game before, when this line began a new one, is whole: it is kept.
                        if (
                            start
                            and (has_movetext or after_blank)
                            and (game := _finish(path, start, tags, result_line, movetext, skip)) is not None
                        ):
                            yield game
                        skip(bad)
                        start, skipping, after_blank = 0, True, False
                        continue
                    name, value = match.groups()
                    if line == f'[{name} "{value}"]':
                        known_names.add(name)
                if start and (has_movetext or after_blank or name in tags):
                    if (game := _finish(path, start, tags, result_line, movetext, skip)) is not None:
                        yield game
                    start = 0
                if not start:
                    tags, movetext, start = {}, [], number
                    has_movetext = after_blank = False
                if "\\" in value:
                    value = _ESCAPE.sub(r"\1", value)
                tags[name] = value
                if name == "Result":
                    result_line = number
                continue
            if not start:
                tags, movetext, start = {}, [], number
            has_movetext = True
            after_blank = False
            if keep_movetext:
                movetext.append(line)
            if "{" in line or ";" in line:
                comment_line = number if _comment_state(line, open_comment=False) == _OPENED else 0
        if comment_line:
            unclosed = PgnError(path, comment_line, "comment '{' is never closed")
            if skip is None:
                raise unclosed
            skip(unclosed)
        elif start and (game := _finish(path, start, tags, result_line, movetext, skip)) is not None:
            yield game
    finally:
        handle.close()


def _decoded_lines(path: str, handle: BinaryIO) -> Iterator[str]:
    """The file's lines as text (byte-order mark dropped), decoded a megabyte at a time; a line longer than
    :data:`MAX_LINE_BYTES` is an error (``/dev/zero`` or a binary file must not be read into memory whole)."""
    number = 0
    rest = b""
    while True:
        block = handle.read(1 << 20)
        data = rest + block
        if not data:
            return
        cut = data.rfind(b"\n") + 1 if block else len(data)
        if cut == 0:
            if len(data) > MAX_LINE_BYTES:
                raise PgnError(path, number + 1, f"a line of more than {MAX_LINE_BYTES >> 20} MiB: this is not PGN")
            rest = data
            continue
        data, rest = data[:cut], data[cut:]
        chunk = data.split(b"\n")
        if not chunk[-1]:
            chunk.pop()
        try:
            if b"\0" in data or b"\0" in rest:
                raise ValueError("NUL byte")
            text = data.decode("utf-8")
        except ValueError:  # UnicodeDecodeError included: find the line to name it
            binary = b"\0" in data or b"\0" in rest  # a NUL anywhere says more than the first undecodable byte
            for offset, raw in enumerate([*chunk, rest], start=number + 1):
                if b"\0" in raw:
                    raise PgnError(path, offset, "NUL byte: this is a binary file, not PGN") from None
                if binary:
                    continue
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise PgnError(
                        path, offset, f"invalid UTF-8 (byte {raw[error.start]:#04x}): save the file as UTF-8"
                    ) from None
            # UTF-8 sequences never span a newline byte, so one of the lines above has raised.
            raise
        if number == 0 and text.startswith("\ufeff"):
            text = text[1:]
        lines = text.split("\n")
        if not lines[-1]:
            lines.pop()
        number += len(chunk)
        yield from lines


def _comment_state(line: str, open_comment: bool) -> int:
    """Whether a brace comment is open after this movetext line: closed, still open from before, or opened here."""
    position = 0
    state = _STILL_OPEN if open_comment else _CLOSED
    while True:
        if open_comment:
            close = line.find("}", position)
            if close < 0:
                return state
            open_comment = False
            position = close + 1
        brace = line.find("{", position)
        semicolon = line.find(";", position)
        if brace < 0 or 0 <= semicolon < brace:
            return _CLOSED
        open_comment = True
        state = _OPENED
        position = brace + 1


def _finish(
    path: str,
    start: int,
    tags: dict[str, str],
    result_line: int,
    movetext: list[str],
    skip: Callable[[PgnError], None] | None = None,
) -> tuple[dict[str, str], list[str], int] | None:
    """Checks the game's Result tag: the game, or its error raised (given to ``skip``, and None, with ``skip``)."""
    result = tags.get("Result")
    error = None
    if result is None:
        error = PgnError(path, start, "game has no Result tag")
    elif result not in RESULTS:
        error = PgnError(path, result_line, f"unknown result {result!r} (expected 1-0, 0-1, 1/2-1/2 or *)")
    if error is None:
        return tags, movetext, start
    if skip is None:
        raise error
    skip(error)
    return None


_SITE: Final = socket.gethostname() or "?"
_STARTPOS: Final = "startpos"


def pgn_text(record: GameRecord, event: str, site: str | None = None) -> str:
    """One game as PGN: the seven roster tags (Site: ``site``, by default this host's name), then Variant,
    TimeControl, Termination, Opening, GameId, and who played: ``WhiteEngine``/``BlackEngine`` (the engine's ``id
    name``), ``...Author``, ``...Command`` (command line or endpoint) and ``...Options`` (``ID=VALUE`` separated by
    spaces) as far as known.

    Opening turns are marked ``{book}``; every engine turn has ``{score, ms}`` as far as known; the last turn's
    comment ends with what ended the game. Written by :func:`format_game` (raises its ValueError for what would not
    read back).
    """
    start = record.start
    result = record.result.value
    tags = {
        "Event": event,
        "Site": _SITE if site is None else site,
        "Date": _date(record),
        "Round": str(record.round),
        "White": record.first,
        "Black": record.second,
        "Result": result,
        "Variant": record.variant,
        "TimeControl": record.time_control,
        "Termination": record.termination.value,
        "Opening": _opening(record),
        "GameId": str(record.game_id),
    }
    if start != _STARTPOS:
        tags["StartPosition"] = start
    for side, ident in enumerate(record.engines[:2]):
        tags.update(_engine_tags(side, ident))
    turns = record.turns
    book = len(record.opening)
    comments = dict.fromkeys(range(min(book, len(turns))), "book")
    for i, turn in enumerate(turns[book:], book):
        comments[i] = f"{turn.score}, {turn.ms}ms" if turn.score else f"{turn.ms}ms"
    ending = record.detail.replace("}", ")")
    if ending:
        last = len(turns) - 1
        comments[last] = f"{comments[last]}; {ending}" if turns else ending
    return format_game(tags, [turn.token for turn in turns], result, comments)


def _engine_tags(side: int, ident: EngineIdentity) -> list[tuple[str, str]]:
    """Who played ``side`` (0: White), as far as known: the engine's id name, author, command and options tags."""
    engine, author, command, options = _ENGINE_TAGS[side]
    tags = []
    if ident.id_name is not None:
        tags.append((engine, ident.id_name))
    if ident.author is not None:
        tags.append((author, ident.author))
    if ident.source:
        tags.append((command, ident.source))
    if ident.options:
        tags.append((options, " ".join([f"{k}={v}" for k, v in ident.options.items()])))
    return tags


def _date(record: GameRecord) -> str:
    """The Date tag: the day the game started, ``????.??.??`` when unknown."""
    return record.started[:10].replace("-", ".") if record.started else "????.??.??"


def _opening(record: GameRecord) -> str:
    """The Opening tag: the start and the book's turns, ``-`` for none from the start position."""
    start = record.start
    return " ".join((start, *record.opening)) if start != _STARTPOS or record.opening else "-"
