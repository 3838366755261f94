"""Who plays whom, with which colours and from which opening: round-robin, gauntlet, colour-swapped pairs.

A schedule is a pure function of the engine names, the format, the number of rounds and games per encounter, and
the openings; random openings are a pure function of the seed. So a run resumed from its journal rebuilds exactly
the schedule it started with, and the game ids in the journal mean the same games.

A :class:`Schedule` is lazy: game ``k`` is computed from ``k`` by arithmetic when it is asked for, so neither
memory nor start-up time grows with the number of scheduled games (``--games 1000000000`` costs nothing until it is
played), and its digest (kept in the journal) is a hash of the parameters, not of the list.

Games come in colour-swapped pairs that share an opening: the first game of a pair has engine A give the first
piece, the second has engine B, both from the same opening. Over a pair the first-player advantage cancels, and
the two results form one pentanomial observation for the SPRT. With an odd number of games per encounter the last
pair of each encounter is a single game.

Order, interleaved (the default of runs): round by round; inside a round, pair slot by pair slot: pair ``j`` of
every encounter before pair ``j + 1`` of any (the two games of a pair next to each other), so that the standings
are fair at any moment, an interrupted or resumed run included. Order as cutechess-cli (``interleave=False``,
``--no-interleave``, and every journal written before interleaving existed): round by round; inside a round,
encounter by encounter; inside an encounter, pair by pair. Game ids count from 1 in the schedule's order.
The ``j``-th pair of every encounter (counting across rounds) uses
opening ``j`` of the :class:`OpeningBook` (a file's openings cycle; random openings are drawn from the seed), so
every encounter sees the same openings. A two-engine run may be open-ended (an SPRT without ``--max-games``).
"""

from __future__ import annotations

import enum
import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from quarto_arena.protocol.notation import NotationError, format_position, parse_position, parse_turns
from quarto_arena.protocol.rules import PIECES, SQUARES, TURNS, IllegalTurn, Position, Turn, Variant

from .errors import ArenaError, ExitStatus
from .memo import by_identities

__all__ = [
    "MAX_GAMES",
    "STARTPOS",
    "Format",
    "Opening",
    "OpeningBook",
    "Schedule",
    "ScheduleError",
    "ScheduledGame",
    "build_schedule",
    "encounter_count",
    "encounters",
    "load_openings",
    "opening_from_text",
    "random_opening",
    "random_openings",
    "schedule_digest",
    "seeded_opening",
]

STARTPOS = "startpos"
MAX_GAMES: Final = 2**53
"""Scheduled games at most: game ids stay exact in JSON (and no run gets near it)."""
_MAX_OPENINGS_BYTES: Final = 16 << 20
#: Bumped when the order or content of schedules changes, so an old journal is not resumed with a new schedule.
_SCHEDULE_VERSION: Final = 2


class ScheduleError(ArenaError, ValueError):
    """A schedule or an openings file that cannot be used; the message names the file, line and problem."""

    status = ExitStatus.USAGE
    reason = "schedule"


class Format(enum.Enum):
    """How engines are paired."""

    ROUND_ROBIN = "round-robin"  #: every engine against every other
    GAUNTLET = "gauntlet"  #: the first engine against each of the others


@dataclass(frozen=True, slots=True)
class Opening:
    """Where a game starts: a start position and turns played from it before the engines take over."""

    start: str = STARTPOS
    """A canonical position string, or ``startpos``."""
    turns: tuple[str, ...] = ()
    """Canonical turn tokens applied to ``start``."""

    def text(self) -> str:
        """One line: ``startpos 3 c47`` or ``f410/..../...9/.c7. b c2e`` (the inverse of :func:`opening_from_text`)."""
        return " ".join((self.start, *self.turns))


@dataclass(frozen=True, slots=True)
class OpeningBook:
    """The openings of a run: the start position, a list (from a file, cycled), or random openings from a seed."""

    openings: tuple[Opening, ...] = ()
    """Openings from a file, cycled over the pairs; empty for random openings or the start position."""
    random_turns: int = 0
    """Turns of each random opening (used when ``openings`` is empty; 0 is the start position)."""
    seed: int = 0
    """Seed of the random openings."""
    variant: Variant = field(default_factory=Variant)
    """The rules the random openings are played under."""
    source: str = STARTPOS
    """Where the openings came from, for people: ``startpos``, a file name, or ``random K``."""

    def __post_init__(self) -> None:
        if not 0 <= self.random_turns <= 15:
            raise ScheduleError(f"random openings take 0 to 15 turns, not {self.random_turns}")

    def opening(self, j: int) -> Opening:
        """Opening number ``j`` (0-based)."""
        if self.openings:
            return self.openings[j % len(self.openings)]
        if not self.random_turns:
            return Opening()
        return _cached_opening(self.random_turns, self.variant, self.seed, j)

    def identity(self) -> dict[str, Any]:
        """What defines the book, as plain values (hashed into the schedule digest, kept in the journal)."""
        return {
            "openings": [o.text() for o in self.openings],
            "random_turns": self.random_turns,
            "seed": self.seed,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class ScheduledGame:
    """One game of the schedule."""

    game_id: int
    """1-based index in the schedule; the journal's key."""
    round: int
    """1-based round number."""
    pair: int
    """0-based index of the colour-swapped pair within the whole schedule; both games of a pair share it."""
    first: str
    """Name of the engine that gives the first piece (White in PGN)."""
    second: str
    """Name of the other engine."""
    opening: Opening
    """The opening both games of the pair start from."""


def encounter_count(n: int, fmt: Format) -> int:
    """Encounters per round among ``n`` engines."""
    return n - 1 if fmt is Format.GAUNTLET else n * (n - 1) // 2


def _encounter(n: int, fmt: Format, e: int) -> tuple[int, int]:
    """Indexes of the two engines of encounter ``e`` (0-based, schedule order), by arithmetic."""
    if fmt is Format.GAUNTLET:
        return 0, e + 1
    i = 0
    while e >= n - 1 - i:  # row i holds the encounters (i, i+1) .. (i, n-1)
        e -= n - 1 - i
        i += 1
    return i, i + 1 + e


def encounters(names: Sequence[str], fmt: Format) -> list[tuple[str, str]]:
    """The pairs of engines that meet, in schedule order; raises ScheduleError on too few or repeated names."""
    _check_names(names)
    return [
        (names[a], names[b])
        for a, b in (_encounter(len(names), fmt, e) for e in range(encounter_count(len(names), fmt)))
    ]


def _check_names(names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise ScheduleError(f"engine names must be distinct; repeated: {', '.join(repeated)}")
    if len(names) < 2:
        raise ScheduleError("a tournament needs at least two engines")


class Schedule:
    """Every game of a run, computed on demand. Iterating yields games in id order; :meth:`game` any one."""

    def __init__(
        self,
        names: Sequence[str],
        *,
        fmt: Format = Format.ROUND_ROBIN,
        rounds: int = 1,
        games: int | None = 2,
        book: OpeningBook | None = None,
        interleave: bool = False,
    ) -> None:
        """``games`` per encounter per round; None for an open-ended two-engine run (one round). ``interleave``:
        pair ``j`` of every encounter before pair ``j + 1`` of any (else cutechess's order, encounter by encounter).
        """
        _check_names(names)
        if rounds < 1:
            raise ScheduleError(f"rounds must be at least 1, not {rounds}")
        if games is not None and games < 1:
            raise ScheduleError(f"games per encounter must be at least 1, not {games}")
        if games is None and (len(names) != 2 or rounds != 1):
            raise ScheduleError("only a two-engine run of one round can be open-ended")
        self.names = tuple(names)
        self.fmt = fmt
        self.rounds = rounds
        self.games = games
        self.book = book or OpeningBook()
        self.interleave = interleave
        self.encounters = encounter_count(len(names), fmt)
        self.total = None if games is None else rounds * self.encounters * games
        """Games in the schedule; None when open-ended."""
        if self.total is not None and self.total > MAX_GAMES:
            raise ScheduleError(f"{self.total} games is more than any run can play (at most {MAX_GAMES})")

    def game(self, game_id: int) -> ScheduledGame:
        """Game ``game_id`` (1-based); raises IndexError outside the schedule."""
        if game_id < 1 or (self.total is not None and game_id > self.total):
            raise IndexError(f"game {game_id} is not in the schedule")
        k = game_id - 1
        if self.games is None:
            r, e = 0, 0
        else:
            per_round = self.encounters * self.games
            r, rest = divmod(k, per_round)
            if not self.interleave:
                e, k = divmod(rest, self.games)
            else:
                paired = self.games // 2 * 2 * self.encounters  # the round's games in whole pairs, slot by slot
                if rest < paired:
                    slot, within = divmod(rest, 2 * self.encounters)
                    e, half = divmod(within, 2)
                    k = 2 * slot + half
                else:  # an odd number of games: the single last game of each encounter, encounter by encounter
                    e, k = rest - paired, self.games - 1
        pairs_per_encounter = 0 if self.games is None else (self.games + 1) // 2
        a, b = _encounter(len(self.names), self.fmt, e)
        first, second = (a, b) if k % 2 == 0 else (b, a)
        pair = (r * self.encounters + e) * pairs_per_encounter + k // 2
        opening = self.book.opening(r * pairs_per_encounter + k // 2)
        return ScheduledGame(game_id, r + 1, pair, self.names[first], self.names[second], opening)

    def __iter__(self) -> Iterator[ScheduledGame]:
        return self.games_from(1)

    def games_from(self, game_id: int) -> Iterator[ScheduledGame]:
        """The games from ``game_id`` on, in order."""
        k = game_id
        while self.total is None or k <= self.total:
            yield self.game(k)
            k += 1

    def __len__(self) -> int:
        if self.total is None:
            raise TypeError("an open-ended schedule has no length")
        return self.total

    def __getitem__(self, index: int) -> ScheduledGame:
        n = len(self)
        if index < 0:
            index += n
        return self.game(index + 1)

    def identity(self) -> dict[str, Any]:
        """The parameters that define the schedule, as plain values."""
        identity: dict[str, Any] = {
            "version": _SCHEDULE_VERSION,
            "names": list(self.names),
            "format": self.fmt.value,
            "rounds": self.rounds,
            "games": self.games,
            "book": self.book.identity(),
        }
        if self.interleave:  # only then: the digests of the journals written before interleaving stay the same
            identity["interleave"] = True
        return identity

    def digest(self) -> str:
        """A short hash of the parameters, kept in the journal so a resume can tell it rebuilt the same schedule."""
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_schedule(
    names: Sequence[str],
    *,
    fmt: Format = Format.ROUND_ROBIN,
    rounds: int = 1,
    games: int = 2,
    openings: Sequence[Opening] = (Opening(),),
) -> Schedule:
    """The schedule of ``names`` with openings cycled from ``openings`` (a convenience over :class:`Schedule`)."""
    if not openings:
        raise ScheduleError("no openings to play from")
    return Schedule(names, fmt=fmt, rounds=rounds, games=games, book=OpeningBook(tuple(openings)))


def schedule_digest(schedule: Schedule) -> str:
    """:meth:`Schedule.digest`."""
    return schedule.digest()


def _check(opening: Opening, variant: Variant) -> None:
    """Raises ValueError (NotationError/IllegalTurn) when the opening is not playable under ``variant``."""
    pos = parse_position(opening.start, variant)
    pos = pos.play(parse_turns(opening.turns))
    if pos.is_over:
        raise ValueError("the game is already over after the opening")


def opening_from_text(line: str, variant: Variant) -> Opening:
    """Parses ``[POSITION] [TURN...]`` into a canonical, checked :class:`Opening`; raises ValueError saying why.

    A position is either ``startpos`` or a position string (board with ``/``, a space, the piece in hand); without
    one the turns are played from the start.
    """
    fields = line.split()
    start = STARTPOS
    if fields and fields[0].lower() == STARTPOS:
        fields = fields[1:]
    elif fields and "/" in fields[0]:
        if len(fields) < 2:
            raise NotationError(f"position {fields[0]!r} has no piece in hand: add a space and a hex digit, or '-'")
        start = format_position(parse_position(" ".join(fields[:2]), variant))
        fields = fields[2:]
    turns = parse_turns(fields)
    pos = parse_position(start, variant)
    canonical = []
    for i, turn in enumerate(turns, start=1):
        try:
            after = pos.apply(turn)
        except IllegalTurn as e:
            raise IllegalTurn(f"turn {i} ({turn}) is illegal: {e}") from None
        canonical.append(str(pos.canonical(turn)))
        pos = after
    opening = Opening(start, tuple(canonical))
    _check(opening, variant)
    return opening


def load_openings(path: Path, variant: Variant) -> list[Opening]:
    """Reads an openings file: one opening per line (see :func:`opening_from_text`); ``#`` comments, blank lines.

    Raises ScheduleError naming the file and line of the first bad opening.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_OPENINGS_BYTES + 1)
        text = raw.decode("utf-8")
    except IsADirectoryError:
        raise ScheduleError(f"{path}: is a directory, not an openings file") from None
    except FileNotFoundError:
        raise ScheduleError(f"{path}: cannot read the openings file: no such file") from None
    except OSError as e:
        raise ScheduleError(f"{path}: cannot read the openings file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ScheduleError(f"{path}: cannot read the openings file: not UTF-8 text (byte {e.start})") from None
    if len(raw) > _MAX_OPENINGS_BYTES:
        raise ScheduleError(f"{path}: an openings file of more than {_MAX_OPENINGS_BYTES >> 20} MB is not plausible")
    out = []
    for number, text_line in enumerate(text.splitlines(), start=1):
        line = text_line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            out.append(opening_from_text(line, variant))
        except ValueError as e:
            raise ScheduleError(f"{path}:{number}: bad opening {line!r}: {e}") from None
    if not out:
        raise ScheduleError(f"{path}: no openings in the file")
    return out


def random_opening(turns: int, variant: Variant, rng: random.Random) -> Opening:
    """``turns`` random legal turns from the start, none of which ends the game."""
    pos = Position.start(variant)
    tokens: list[str] = []
    for _ in range(turns):
        # A turn that ends the game would leave nothing for the engines to play; one that leaves a claimable
        # alignment (strict claims) would hand the next player a free win.
        candidates: list[Turn] | _EarlyTurns
        if pos.placed < 3:
            # No alignment can be completed yet (four pieces make one): no turn ends the game or leaves one to
            # claim, so every legal turn is a candidate, and rng.choice needs only the one it draws.
            candidates = _EarlyTurns(pos)
        else:
            candidates = []
            for t in pos.legal_turns():
                if t.claim:
                    continue
                after = pos.apply(t)
                if not after.is_over and not after.claimable:
                    candidates.append(t)
        if not candidates:
            break
        turn = rng.choice(candidates)
        tokens.append(str(turn))
        pos = pos.apply(turn)
    return Opening(STARTPOS, tuple(tokens))


class _EarlyTurns:
    """``pos.legal_turns()`` of a position with fewer than three pieces placed (no claim, no win: every empty square
    with every piece left to give, by square then by piece; every piece before the first placement), each made only
    when asked for (``rng.choice`` asks for the one it draws): a random opening draws one of 256 (the default 2-turn
    book, once a pair of games), where building them all took most of its time."""

    def __init__(self, pos: Position) -> None:
        self.pieces = [p for p in PIECES if pos.available >> p & 1]
        self.squares = [16] if pos.held < 0 else [s for s in SQUARES if not pos.occupied >> s & 1]

    def __len__(self) -> int:
        return len(self.squares) * len(self.pieces)

    def __getitem__(self, index: int) -> Turn:
        if not 0 <= index < len(self):
            raise IndexError(index)
        square, piece = divmod(index, len(self.pieces))
        return TURNS[self.squares[square]][self.pieces[piece]]


def random_openings(turns: int, count: int, variant: Variant, seed: int) -> list[Opening]:
    """``count`` random openings of ``turns`` turns; opening ``j`` depends only on ``seed`` and ``j``."""
    if not 0 <= turns <= 15:
        raise ScheduleError(f"random openings take 0 to 15 turns, not {turns}")
    return [seeded_opening(turns, variant, seed, j) for j in range(count)]


@by_identities(size=4096)
def _cached_opening(turns: int, variant: Variant, seed: int, j: int) -> Opening:
    """:func:`seeded_opening`, remembered: both games of a pair, and every encounter of a round, ask for the same
    opening, with the run's one variant object."""
    return seeded_opening(turns, variant, seed, j)


def seeded_opening(turns: int, variant: Variant, seed: int, j: int) -> Opening:
    """Random opening number ``j`` of ``seed``: the same on every run, whatever else was drawn before."""
    # String seeds are hashed with SHA-512 by random.Random: stable across runs and Python versions.
    return random_opening(turns, variant, random.Random(f"quarto-arena:{seed}:{j}"))
