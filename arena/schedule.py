"""Who plays whom, with which colours and from which opening: round-robin, gauntlet, colour-swapped pairs.

A schedule is a pure function of the engine names, the format, the number of rounds and games per encounter, and
the openings; random openings are a pure function of the seed. So a tournament resumed from its journal rebuilds
exactly the schedule it started with, and the game ids in the journal mean the same games.

Games come in colour-swapped pairs that share an opening: the first game of a pair has engine A give the first
piece, the second has engine B, both from the same opening. Over a pair the first-player advantage cancels, and
the two results form one pentanomial observation for the SPRT.

Order (as cutechess-cli): round by round; inside a round, encounter by encounter; inside an encounter, pair by
pair. Game ids count from 1 in that order. The ``j``-th pair of every encounter (counting across rounds) uses
opening ``j`` (cycling through the list), so every encounter sees the same openings.
"""

from __future__ import annotations

import enum
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quarto_arena.protocol.notation import NotationError, format_position, parse_position, parse_turns
from quarto_arena.protocol.rules import IllegalTurn, Position, Variant

__all__ = [
    "STARTPOS",
    "Format",
    "Opening",
    "ScheduleError",
    "ScheduledGame",
    "build_schedule",
    "encounters",
    "load_openings",
    "opening_from_text",
    "random_opening",
    "random_openings",
    "schedule_digest",
    "seeded_opening",
]

STARTPOS = "startpos"


class ScheduleError(ValueError):
    """A schedule or an openings file that cannot be used; the message names the file, line and problem."""


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


def encounters(names: Sequence[str], fmt: Format) -> list[tuple[str, str]]:
    """The pairs of engines that meet, in schedule order; raises ScheduleError on too few or repeated names."""
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise ScheduleError(f"engine names must be distinct; repeated: {', '.join(repeated)}")
    if len(names) < 2:
        raise ScheduleError("a tournament needs at least two engines")
    if fmt is Format.GAUNTLET:
        return [(names[0], other) for other in names[1:]]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def build_schedule(
    names: Sequence[str],
    *,
    fmt: Format = Format.ROUND_ROBIN,
    rounds: int = 1,
    games: int = 2,
    openings: Sequence[Opening] = (Opening(),),
) -> list[ScheduledGame]:
    """Every game of the tournament, in order. ``games`` (per encounter per round) must be even: pairs swap colours."""
    if rounds < 1:
        raise ScheduleError(f"rounds must be at least 1, not {rounds}")
    if games < 2 or games % 2:
        raise ScheduleError(f"games per encounter must be even and at least 2 (colour-swapped pairs), not {games}")
    if not openings:
        raise ScheduleError("no openings to play from")
    pairs_per_round = games // 2
    out: list[ScheduledGame] = []
    pair_index = 0
    for r in range(rounds):
        for a, b in encounters(names, fmt):
            for k in range(pairs_per_round):
                opening = openings[(r * pairs_per_round + k) % len(openings)]
                for first, second in ((a, b), (b, a)):
                    out.append(ScheduledGame(len(out) + 1, r + 1, pair_index, first, second, opening))
                pair_index += 1
    return out


def schedule_digest(schedule: Sequence[ScheduledGame]) -> str:
    """A short hash of the schedule, kept in the journal so a resume can tell that it rebuilt the same one."""
    h = hashlib.sha256()
    for g in schedule:
        h.update(f"{g.game_id}|{g.round}|{g.pair}|{g.first}|{g.second}|{g.opening.text()}\n".encode())
    return h.hexdigest()[:16]


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
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ScheduleError(f"{path}: cannot read the openings file: {e}") from None
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
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


def random_openings(turns: int, count: int, variant: Variant, seed: int) -> list[Opening]:
    """``count`` random openings of ``turns`` turns; opening ``j`` depends only on ``seed`` and ``j``."""
    if not 0 <= turns <= 15:
        raise ScheduleError(f"random openings take 0 to 15 turns, not {turns}")
    return [seeded_opening(turns, variant, seed, j) for j in range(count)]


def seeded_opening(turns: int, variant: Variant, seed: int, j: int) -> Opening:
    """Random opening number ``j`` of ``seed``: the same on every run, whatever else was drawn before."""
    # String seeds are hashed with SHA-512 by random.Random: stable across runs and Python versions.
    return random_opening(turns, variant, random.Random(f"quarto-arena:{seed}:{j}"))
