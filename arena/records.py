"""What a game leaves behind: the GameRecord value, its termination reasons, and its JSON form.

A GameRecord is the referee's whole output and the unit the journal, the PGN and JSON Lines writers and the
statistics consume. It names players by their display names; "first" is the player who gives the first piece
(White in PGN).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, final

from . import codec
from .memo import by_identity, maker


class Termination(enum.Enum):
    """Why a game ended. Everything but NORMAL means an engine misbehaved and lost (or the game was aborted)."""

    NORMAL = "normal"  #: a win or a draw on the board
    TIME_FORFEIT = "time forfeit"  #: the engine overran its clock plus the margin
    ILLEGAL_TURN = "illegal turn"  #: a well-formed turn the rules do not allow
    MALFORMED_REPLY = "malformed reply"  #: a line that is not valid UQI where a turn was due
    FALSE_CLAIM = "false claim"  #: QUARTO! called or claimed with no alignment
    DISCONNECT = "disconnect"  #: the engine exited, crashed or closed its connection
    STALL = "stall"  #: no answer to the handshake, to isready or to newgame in time
    ENGINE_ERROR = "engine error"  #: the engine refused the game (error reply to newgame or setoption)
    ABORTED = "aborted"  #: the arena stopped the game (interrupt); not scored
    ADJUDICATED = "adjudicated"  #: ended by the solver with the result of perfect play (``--adjudicate``)

    @property
    def is_failure(self) -> bool:
        """True when an engine, not the board, ended the game."""
        return self not in (Termination.NORMAL, Termination.ABORTED, Termination.ADJUDICATED)


_FIRST_SCORES: Final = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}


class Result(enum.Enum):
    """Result in PGN notation, from the first player's side."""

    FIRST_WINS = "1-0"
    SECOND_WINS = "0-1"
    DRAW = "1/2-1/2"
    UNFINISHED = "*"

    @property
    def first_score(self) -> float | None:
        """Points of the first player (1, 0.5, 0), None when unfinished (the PGN reader's map too)."""
        return _FIRST_SCORES.get(self.value)


@final  # the codec writes its rows inline, with no check of a value's class
@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn as played."""

    token: str
    """The turn token as recorded (canonical, lower case)."""
    ms: int
    """Milliseconds the engine took, on the arena's clock."""
    score: str | None = None
    """The engine's last reported score for this search (``win 3``, ``draw``, ``value -40``), if any."""


turn_record: Final = maker(TurnRecord)
"""``TurnRecord(token=..., ms=..., score=...)`` at under half the cost (:func:`~quarto_arena.arena.memo.maker`): the
Python turn path makes one a turn."""


@final  # the codec writes it inline in a GameRecord, with no check of a value's class
@dataclass(frozen=True, slots=True)
class EngineIdentity:
    """Who played a side of a game, so that a result can be traced to a binary and its settings."""

    id_name: str | None = None
    """What the engine called itself (``id name``), control characters replaced."""
    author: str | None = None
    """``id author``, if it sent one."""
    protocol: int | None = None
    """The UQI version of its ``uqiok``."""
    source: str = ""
    """Its command line or ZeroMQ endpoint."""
    options: dict[str, str] = field(default_factory=dict)
    """UQI options the arena set (id -> value)."""

    @codec.generated
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/msgpack types (the inverse of :meth:`from_dict`): every field, by :mod:`.codec`."""
        return codec.to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EngineIdentity:
        """Rebuilds an identity; raises KeyError/ValueError/TypeError on bad data."""
        return codec.from_dict(cls, d)


@final  # its to_dict is the codec's generated encoder itself (see codec.generated)
@dataclass(frozen=True, slots=True)
class GameRecord:
    """Everything about one finished game."""

    first: str
    """Display name of the player who gave the first piece (White in PGN)."""
    second: str
    """Display name of the other player (Black in PGN)."""
    result: Result
    """The result from the first player's side."""
    termination: Termination
    """Why the game ended."""
    detail: str = ""
    """One line saying what happened, e.g. ``greedy: illegal turn b3e: b3 is occupied``."""
    variant: str = "standard color,shape,height,fill auto"
    """The variant as ``SHAPES ATTRS CLAIMS`` (the three fields of ``newgame``)."""
    time_control: str = "-"
    """The time control, as given on the command line (PGN TimeControl)."""
    start: str = "startpos"
    """The position string the game started from, or ``startpos``."""
    opening: tuple[str, ...] = ()
    """Opening turns played from ``start`` before the engines took over (part of ``turns`` too)."""
    turns: tuple[TurnRecord, ...] = field(default=(), metadata=codec.rows(TurnRecord))
    """Every turn, opening included (opening turns have ms 0); written as ``[token, ms, score]`` rows (a game has up
    to 16, and they are most of a record)."""
    game_id: int = 0
    """Index of the game in its tournament schedule (0 for a lone game)."""
    round: int = 1
    """Round number in the tournament."""
    started: str = ""
    """UTC start time, ISO 8601."""
    exit_info: dict[str, str] = field(default_factory=dict)
    """Per engine that failed: exit code/signal and last line, for the record."""
    engines: tuple[EngineIdentity, ...] = ()
    """The identities of first and second, as far as known (empty when not recorded)."""

    @property
    def loser(self) -> str | None:
        """Name of the engine that lost, None for a draw or unfinished game."""
        if self.result is Result.FIRST_WINS:
            return self.second
        if self.result is Result.SECOND_WINS:
            return self.first
        return None

    @codec.generated
    def to_dict(self) -> dict[str, Any]:
        """A plain dict of JSON/msgpack types (the inverse of :meth:`from_dict`): every field, by :mod:`.codec`."""
        return codec.to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GameRecord:
        """Rebuilds a record from :meth:`to_dict` output; raises KeyError/ValueError/TypeError on bad data."""
        return codec.from_dict(cls, d)


game_record: Final = maker(GameRecord)
"""``GameRecord(first=..., ...)`` at about half the cost (:func:`~quarto_arena.arena.memo.maker`): the referee makes
one a game."""


_dumps: Final = json.JSONEncoder(check_circular=False).encode
"""``json.dumps`` without its check for cycles (a record's data has none)."""


@by_identity
def _identity_json(ident: EngineIdentity) -> str:
    """An engine identity's JSON, made once per identity object (a session makes one per handshake, and every game
    it plays records that same frozen value)."""
    return _dumps(ident.to_dict())


def json_line(record: GameRecord, data: Mapping[str, Any] | None = None) -> str:
    """The game's line of a JSON Lines file, without its line end: ``json.dumps(record.to_dict())``; ``data`` is that
    dict when it has been made already (the journal's).

    A run writes one a game as it counts it. The engines' identities are the same from game to game (a session
    makes one per handshake and every game it plays records that frozen value), so each one's JSON is made once and
    written after the rest of the record (``engines`` is the record's last field)."""
    rest = record.to_dict() if data is None else dict(data)
    engines = record.engines
    if not engines or len(rest) < 2 or next(reversed(rest)) != "engines":
        return _dumps(rest)
    del rest["engines"]
    texts = [_identity_json(ident) for ident in engines]
    return f'{_dumps(rest)[:-1]}, "engines": [{", ".join(texts)}]}}'
