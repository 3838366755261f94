"""A reference PGN writer for the tests: the format written out plainly, a tag and a token at a time, sharing no code
with arena/pgn.py's writer (only its result map). The tests hold ``format_game`` and ``pgn_text`` to it byte for byte,
and a run's games.pgn too (tests/test_tournament.py)."""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping, Sequence

from quarto_arena.arena.pgn import RESULTS
from quarto_arena.arena.records import GameRecord

ROSTER = ("Event", "Site", "Date", "Round", "White", "Black", "Result")
TAG_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+#=:-]*")
MOVE_NUMBER = re.compile(r"\d+\.+")
SITE = socket.gethostname() or "?"


def tag_line(name: str, value: str) -> str:
    if not TAG_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a PGN tag name (letters, digits, _ + # = : -)")
    if "\n" in value or "\r" in value:
        raise ValueError(f"tag {name} spans lines: {value!r}")
    return '[{} "{}"]'.format(name, value.replace("\\", "\\\\").replace('"', '\\"'))


def comment_words(text: str) -> list[str]:
    words = text.split()
    if not words:
        return ["{}"]
    return ["{" + words[0], *words[1:-1], words[-1] + "}"] if len(words) > 1 else ["{" + words[0] + "}"]


def wrap(words: list[str], width: int = 79) -> str:
    """Greedy filling, a word at a time."""
    lines: list[str] = []
    line = ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(lines)


def format_game(
    tags: Mapping[str, str], turns: Sequence[str], result: str, comments: Mapping[int, str] | None = None
) -> str:
    """What arena.pgn.format_game writes, or the ValueError it raises."""
    if result not in RESULTS:
        raise ValueError(f"result {result!r}")
    if tags.get("Result", result) != result:
        raise ValueError("tag Result contradicts result")
    lines = []
    for name in ROSTER:
        default = "????.??.??" if name == "Date" else "?"
        lines.append(tag_line(name, result if name == "Result" else tags.get(name, default)))
    lines.extend(tag_line(name, value) for name, value in tags.items() if name not in ROSTER)
    notes = dict(comments or {})
    for index, text in notes.items():
        if not -1 <= index < len(turns):
            raise ValueError(f"comment index {index} is not a turn index")
        if "}" in text:
            raise ValueError(f"comment {text!r} contains '}}'")
    for index, token in enumerate(turns):
        if not token or re.search(r"[\s{};]", token) or token in RESULTS or MOVE_NUMBER.match(token):
            raise ValueError(f"turn {index + 1}: {token!r} cannot be a PGN token")
    words = comment_words(notes[-1]) if -1 in notes else []
    for index, token in enumerate(turns):
        if index % 2 == 0:
            words.append(f"{index // 2 + 1}.")
        words.append(token)
        if index in notes:
            words.extend(comment_words(notes[index]))
    words.append(result)
    return "\n".join(lines) + "\n\n" + wrap(words) + "\n"


def pgn_text(record: GameRecord, event: str) -> str:
    """What arena.pgn.pgn_text writes for a run's game: its tags in order, ``{book}`` on opening turns,
    ``{score, ms}`` on engine turns, what ended the game after the last turn."""
    opening = " ".join((record.start, *record.opening)) if record.start != "startpos" or record.opening else "-"
    tags = {
        "Event": event,
        "Site": SITE,
        "Date": record.started[:10].replace("-", ".") if record.started else "????.??.??",
        "Round": str(record.round),
        "White": record.first,
        "Black": record.second,
        "Result": record.result.value,
        "Variant": record.variant,
        "TimeControl": record.time_control,
        "Termination": record.termination.value,
        "Opening": opening,
        "GameId": str(record.game_id),
    }
    if record.start != "startpos":
        tags["StartPosition"] = record.start
    for side, ident in zip(("White", "Black"), record.engines, strict=False):
        if ident.id_name is not None:
            tags[f"{side}Engine"] = ident.id_name
        if ident.author is not None:
            tags[f"{side}Author"] = ident.author
        if ident.source:
            tags[f"{side}Command"] = ident.source
        if ident.options:
            tags[f"{side}Options"] = " ".join(f"{k}={v}" for k, v in ident.options.items())
    comments: dict[int, str] = {}
    for i, turn in enumerate(record.turns):
        if i < len(record.opening):
            comments[i] = "book"
        else:
            comments[i] = f"{turn.score}, {turn.ms}ms" if turn.score else f"{turn.ms}ms"
    last = len(record.turns) - 1
    ending = record.detail.replace("}", ")")
    if ending:
        comments[last] = f"{comments[last]}; {ending}" if last in comments else ending
    return format_game(tags, [t.token for t in record.turns], record.result.value, comments)
