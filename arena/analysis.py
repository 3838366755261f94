"""What the solver says about positions and played games: values, best turns, and the turns that threw a result away.

A position: its exact value for the player to move and every best turn (:func:`analyse_position`). A game: from
the first position with at most ``from_empties`` empty squares, the value before each turn and the value of the
turn played, both for the player who played it; a turn whose verdict is worse than the position's (a win that
became a draw or a loss, a draw that became a loss) is a *mistake*, and the best turns there are recorded
(:func:`analyse_game`). Per engine, :func:`summarize` counts mistakes, wins thrown away and draws thrown away.
The results are written back as PGN comments (:func:`annotated_pgn`) and JSON Lines (:func:`game_json`);
:mod:`.analysis_file` does a whole PGN file (streamed, in worker processes, resumable).

Games are read with :mod:`.pgn`; the ``Variant`` tag (as this project writes it: ``standard
color,shape,height,fill auto``) sets the rules, ``StartPosition`` the start. One :class:`Solver` per variant is
shared by all the games, so later positions reuse what earlier ones proved; and what was proven of a position (its
value; at a mistake, the best turns) is kept by its canonical form for the games that meet it again, the same or a
symmetric one, within a bound (:data:`CACHED_POSITIONS`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from quarto_arena.protocol.notation import NotationError, parse_position, parse_turn, parse_variant
from quarto_arena.protocol.rules import Position, Turn, Variant
from quarto_arena.protocol.solver import Analysis, Limits, Solver, Value, Verdict
from quarto_arena.protocol.symmetry import canonical_key, canonical_key_and_symmetry, transform_turn

from .errors import ArenaError, ExitStatus

if TYPE_CHECKING:
    # PGN, the tables and the process pool serve games only; a position's analysis (`analyse POSITION`, the
    # common case, timed with its start-up) imports none of them (they cost about a third of its start-up).
    from .pgn import PgnGame
    from .stats import TableRows

__all__ = [
    "CACHED_BEST",
    "CACHED_POSITIONS",
    "DEFAULT_FROM",
    "Analyser",
    "AnalysisError",
    "EngineSummary",
    "GameAnalysis",
    "Replay",
    "Tally",
    "TurnAnalysis",
    "annotated_pgn",
    "game_json",
    "summarize",
    "summary_rows",
]

DEFAULT_FROM: Final = 12
"""Games are analysed from the first position with at most this many empty squares."""
CACHED_POSITIONS: Final = 1 << 18
"""Positions whose values an :class:`Analyser` keeps (about 100 bytes each: 26 MB at most). A night's run of 18,000
games meets about 13,000 different first positions at 12 empty squares; the positions after them repeat less."""
CACHED_BEST: Final = 1 << 15
"""Positions whose best turns (found at a mistake) an :class:`Analyser` keeps (a few hundred bytes each at most)."""
_RANK: Final = {Verdict.LOSS: 0, Verdict.DRAW: 1, Verdict.WIN: 2}
_VALUES: dict[Value, Value] = {}  # the values an Analyser keeps, one object each (a few dozen in all)
T = TypeVar("T")
_THROWN: Final = {Verdict.WIN: "win thrown away", Verdict.DRAW: "draw thrown away"}


class AnalysisError(ArenaError, ValueError):
    """A game that cannot be replayed (bad variant, start position or turn). The message names the game."""

    status = ExitStatus.USAGE
    reason = "analysis"


@dataclass(frozen=True, slots=True)
class TurnAnalysis:
    """One analysed turn, seen from the player who played it."""

    ply: int
    """Index of the turn in the game (0: White's first)."""
    player: str
    """Who played it."""
    turn: str
    """The token played."""
    empty: int
    """Empty squares before the turn."""
    before: Value | None
    """The value of the position before the turn, None when unproven within the time limit."""
    after: Value | None
    """The value of the turn played, None when unproven."""
    best: tuple[str, ...]
    """At a mistake, every turn that kept the value's verdict; else empty."""

    @property
    def mistake(self) -> str | None:
        """``win thrown away`` or ``draw thrown away`` when the turn made the verdict worse, else None."""
        if self.before is None or self.after is None:
            return None
        if _RANK[self.after.verdict] < _RANK[self.before.verdict]:
            return _THROWN[self.before.verdict]
        return None


@dataclass(frozen=True, slots=True)
class GameAnalysis:
    """One game and its analysed turns."""

    game: PgnGame
    """The game as read."""
    turns: tuple[str, ...]
    """Every turn token of the game."""
    comments: Mapping[int, str]
    """The game's own comments, by turn index."""
    analysed: tuple[TurnAnalysis, ...]
    """The analysed turns, in order."""

    @property
    def white(self) -> str:
        """The first player's name."""
        return self.game.tags.get("White", "?")

    @property
    def black(self) -> str:
        """The second player's name."""
        return self.game.tags.get("Black", "?")


@dataclass(frozen=True, slots=True)
class EngineSummary:
    """What the analysis found for one engine over all games."""

    engine: str
    """The engine (a player name from the games)."""
    games: int
    """Games it played that reached the analysed part."""
    turns: int
    """Its analysed turns."""
    mistakes: int
    """Its turns that threw a win or a draw away."""
    wins_thrown: int
    """Wins it turned into draws or losses."""
    draws_thrown: int
    """Draws it turned into losses."""
    unproven: int
    """Its analysed turns the solver could not value within the time limit."""

    @property
    def mistakes_per_game(self) -> float:
        """Mistakes per analysed game."""
        return self.mistakes / self.games if self.games else 0.0


class _Kept(Generic[T]):
    """What was proven of positions, by canonical key: at most ``size`` entries, the oldest dropped first."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._entries: dict[int, T] = {}
        self._size = size

    def get(self, key: int) -> T | None:
        """The entry of ``key``, None when not kept."""
        return self._entries.get(key)

    def put(self, key: int, entry: T) -> None:
        """Keeps ``entry`` for ``key`` (dropping the oldest when full)."""
        if len(self._entries) >= self._size and key not in self._entries:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = entry

    def __len__(self) -> int:
        return len(self._entries)


class Analyser:
    """Analyses positions and games; holds one solver per variant. ``seconds`` bounds each position's search.

    What is proven of a position is kept by its canonical form: its value (the position before each analysed turn,
    the position after it), and at a mistake every best turn (in the canonical frame, mapped back through the
    symmetry of the position met). A position met again, in another game or the same, the same or a symmetric one,
    is not solved again. At most ``kept`` values and :data:`CACHED_BEST` best-turn lists are kept (the oldest go
    first). ``threads`` 1 keeps every search on the calling thread (for worker processes that use every CPU
    already); 2 lets a mistake's best turns be searched on two (:meth:`Solver.analyse`).
    """

    def __init__(self, seconds: float | None = None, *, threads: int = 2, kept: int = CACHED_POSITIONS) -> None:
        self.limits = None if seconds is None else Limits(seconds=seconds)
        """The bound on each search (None: exact, however long it takes)."""
        self.threads = threads
        """Threads a mistake's best turns may be searched on (1 or 2)."""
        self._kept = kept
        self._solvers: dict[Variant, Solver] = {}
        self._values: dict[Variant, _Kept[Value]] = {}
        self._best: dict[Variant, _Kept[str]] = {}
        self.solved = self.reused = 0
        """First positions solved, and first positions whose value was known from another game."""
        self.known = 0
        """Values and best-turn lists taken from what was kept instead of searched (first positions' included)."""

    def solver(self, variant: Variant) -> Solver:
        """The solver for ``variant`` (made on first use)."""
        if variant not in self._solvers:
            self._solvers[variant] = Solver(variant)
            self._values[variant] = _Kept(self._kept)
            self._best[variant] = _Kept(min(self._kept, CACHED_BEST))
        return self._solvers[variant]

    def kept(self) -> int:
        """Values and best-turn lists kept, over every variant."""
        return sum(len(k) for k in self._values.values()) + sum(len(k) for k in self._best.values())

    def position(self, position: Position) -> Analysis:
        """The value of ``position`` and every best turn (unproven: the best turn found). ValueError when over."""
        return self.solver(position.variant).analyse(position, self.limits)

    def game(self, game: PgnGame, variant: Variant, from_empties: int = DEFAULT_FROM) -> GameAnalysis:
        """Replays ``game`` and analyses its turns from the first position with at most ``from_empties`` empty
        squares. ``variant`` applies when the game has no ``Variant`` tag. Raises :class:`AnalysisError`."""
        replay = Replay.of(game, variant)
        solver = self.solver(replay.variant)
        values = self._values[replay.variant]
        names = (game.tags.get("White", "?"), game.tags.get("Black", "?"))
        analysed: list[TurnAnalysis] = []
        known: Value | None = None  # the value of ``position``, when the last turn's value told it
        first = True
        for ply, position, turn, after in replay.turns():
            empty = 16 - position.placed
            if empty <= from_empties:
                if first:
                    before, first = self._value(solver, values, position, first=True), False
                else:
                    before = known if known is not None else self._value(solver, values, position)
                t = self._turn(solver, values, position, turn, after, ply, names[ply % 2], empty, before)
                analysed.append(t)
                # The turn's value for its player is the next position's value for the other one, a turn further
                # from the end: the position need not be solved again (half the solver's requests).
                ended = after.is_over
                known = None if t.after is None or ended else t.after.after()
        return GameAnalysis(game, replay.tokens, replay.comments, tuple(analysed))

    def games(
        self, games: Iterable[PgnGame], variant: Variant, from_empties: int = DEFAULT_FROM
    ) -> Iterator[GameAnalysis]:
        """:meth:`game` for each game in turn."""
        for game in games:
            yield self.game(game, variant, from_empties)

    def _value(self, solver: Solver, values: _Kept[Value], position: Position, first: bool = False) -> Value | None:
        """The value of ``position``: kept, or solved (and kept when proven). ``first``: a game's first analysed
        position, counted in :attr:`solved` or :attr:`reused`."""
        key = canonical_key(position)
        value = values.get(key)
        if value is not None:
            self.known += 1
            self.reused += first
            return value
        self.solved += first
        return self._solve(solver, values, position, key)

    def _solve(self, solver: Solver, values: _Kept[Value], position: Position, key: int) -> Value | None:
        value = solver.value(position, self.limits).value
        if value is not None:
            values.put(key, _VALUES.setdefault(value, value))
        return value

    def _turn(
        self,
        solver: Solver,
        values: _Kept[Value],
        position: Position,
        turn: Turn,
        child: Position,
        ply: int,
        player: str,
        empty: int,
        before: Value | None,
    ) -> TurnAnalysis:
        after = self._turn_value(solver, values, position, turn, child)
        best: tuple[str, ...] = ()
        if before is not None and after is not None and _RANK[after.verdict] < _RANK[before.verdict]:
            best = self._best_turns(solver, position, before)
        return TurnAnalysis(ply, player, str(turn), empty, before, after, best)

    def _turn_value(
        self, solver: Solver, values: _Kept[Value], position: Position, turn: Turn, child: Position
    ) -> Value | None:
        """The value of ``turn`` for its player: from the kept value of ``child`` (the position it leads to, the
        other player's), or solved (and the child's value kept)."""
        if child.is_over:
            return solver.turn_value(position, turn, self.limits)  # known from the board, no search
        key = canonical_key(child)
        value = values.get(key)
        if value is not None:
            self.known += 1
            return value.before()
        after = solver.turn_value(position, turn, self.limits)
        if after is not None:
            value = after.after()
            values.put(key, _VALUES.setdefault(value, value))
        return after

    def _best_turns(self, solver: Solver, position: Position, value: Value) -> tuple[str, ...]:
        """Every turn at ``position`` that keeps ``value``'s verdict, in the order of its legal turns (empty when
        unproven): kept in the canonical frame, or searched (and kept)."""
        key, symmetry = canonical_key_and_symmetry(position)
        best = self._best[position.variant]
        found = best.get(key)
        if found is None:
            analysis = solver.analyse(position, self.limits, keep_turns=False, value=value, threads=self.threads)
            if not analysis.proven:
                return ()
            best.put(key, " ".join(str(transform_turn(t, symmetry)) for t in analysis.best))
            return tuple(str(t) for t in analysis.best)
        self.known += 1
        back = symmetry.inverse()
        turns = {transform_turn(parse_turn(token), back) for token in found.split()}
        return tuple(str(t) for t in position.legal_turns() if t in turns)


@dataclass(frozen=True, slots=True)
class Replay:
    """A game of a PGN file made ready to replay: its rules, start, turn tokens and comments."""

    game: PgnGame
    variant: Variant
    start: Position
    tokens: tuple[str, ...]
    comments: Mapping[int, str]

    @classmethod
    def of(cls, game: PgnGame, variant: Variant) -> Replay:
        """Reads the game's rules (``variant`` without a Variant tag), start and movetext; :class:`AnalysisError`."""
        where = f"{game.path}:{game.line}"
        variant = _game_variant(game, variant, where)
        try:
            start = parse_position(game.tags.get("StartPosition", "startpos"), variant)
        except NotationError as e:
            raise AnalysisError(f"{where}: bad StartPosition: {e}") from None
        from .pgn import parse_movetext

        tokens, comments = parse_movetext(game.movetext)
        return cls(game, variant, start, tuple(tokens), comments)

    def turns(self) -> Iterator[tuple[int, Position, Turn, Position]]:
        """(ply, the position, the turn played, the position after it) for every turn; :class:`AnalysisError` at
        one that cannot be played."""
        position = self.start
        for ply, token in enumerate(self.tokens):
            try:
                turn = parse_turn(token)
                after = position.apply(turn)
            except (NotationError, ValueError) as e:
                raise AnalysisError(f"{self.game.path}:{self.game.line}: turn {ply + 1} ({token}): {e}") from None
            yield ply, position, turn, after
            position = after

    def first(self, from_empties: int) -> Position | None:
        """The first position analysed (at most ``from_empties`` empty squares), None when the game ends before."""
        for _, position, _, _ in self.turns():
            if 16 - position.placed <= from_empties:
                return position
        return None


def _game_variant(game: PgnGame, default: Variant, where: str) -> Variant:
    text = game.tags.get("Variant")
    if text is None:
        return default
    try:
        return _variant_of(text)
    except (NotationError, ValueError) as e:
        raise AnalysisError(f"{where}: Variant tag {text!r}: {e}") from None


@functools.lru_cache(maxsize=64)
def _variant_of(text: str) -> Variant:
    """A Variant tag's rules: one object per text (a file has one or a few; a Variant a game, kept with the game's
    first position, made the kept values grow by 3.5 KB a game)."""
    fields = text.split()
    if len(fields) != 3:
        raise ValueError("expected SHAPES ATTRIBUTES CLAIMS")
    return parse_variant(*fields)


class Tally:
    """The per-engine summary, counted game by game (so that no game need be kept)."""

    def __init__(self) -> None:
        self._rows: dict[str, list[int]] = {}

    def add(self, analysis: GameAnalysis) -> None:
        """Counts one game's analysed turns."""
        seen: set[str] = set()
        for t in analysis.analysed:
            row = self._rows.setdefault(t.player, [0, 0, 0, 0, 0, 0])
            if t.player not in seen:
                seen.add(t.player)
                row[0] += 1
            row[1] += 1
            mistake = t.mistake
            row[2] += mistake is not None
            row[3] += mistake == _THROWN[Verdict.WIN]
            row[4] += mistake == _THROWN[Verdict.DRAW]
            row[5] += t.before is None or t.after is None

    def summaries(self) -> list[EngineSummary]:
        """Per engine, in order of first appearance."""
        return [EngineSummary(name, *row) for name, row in self._rows.items()]


def summarize(analyses: Iterable[GameAnalysis]) -> list[EngineSummary]:
    """Per engine, in order of first appearance: games, turns, mistakes, wins and draws thrown away."""
    tally = Tally()
    for a in analyses:
        tally.add(a)
    return tally.summaries()


def summary_rows(summaries: Iterable[EngineSummary]) -> TableRows:
    """The per-engine summary as a table."""
    from .stats import TableRows

    headers = ("engine", "games", "turns", "mistakes", "per_game", "wins_thrown", "draws_thrown", "unproven")
    rows = tuple(
        (
            s.engine,
            s.games,
            s.turns,
            s.mistakes,
            round(s.mistakes_per_game, 2),
            s.wins_thrown,
            s.draws_thrown,
            s.unproven,
        )
        for s in summaries
    )
    return TableRows(headers, rows)


_BEST_SHOWN: Final = 6  # best turns listed in a PGN comment (the JSON Lines have them all)


def _comment(t: TurnAnalysis) -> str:
    if t.after is None:
        return "solver: unproven"
    text = f"solver: {t.after}"
    mistake = t.mistake
    if mistake is not None:
        shown = " ".join(t.best[:_BEST_SHOWN]) + (" ..." if len(t.best) > _BEST_SHOWN else "")
        text += f", {mistake} (was {t.before}; best {shown})"
    return text


def annotated_pgn(analysis: GameAnalysis) -> str:
    """The game as PGN, each analysed turn's comment followed by ``solver: VALUE`` (the value of the turn for the
    player who made it), and at a mistake what it threw away and the best turns."""
    from .pgn import format_game

    comments = dict(analysis.comments)
    for t in analysis.analysed:
        note = _comment(t)
        comments[t.ply] = f"{comments[t.ply]}; {note}" if t.ply in comments else note
    tags = {k: v for k, v in analysis.game.tags.items() if k != "Result"}
    return format_game(tags, analysis.turns, analysis.game.result, comments)


def _value_json(value: Value | None) -> dict[str, Any] | None:
    return None if value is None else {"value": value.verdict.value, "turns": value.turns}


def game_json(analysis: GameAnalysis) -> dict[str, Any]:
    """One game's analysis as a JSON object (one line of the JSON Lines output)."""
    return {
        "white": analysis.white,
        "black": analysis.black,
        "result": analysis.game.result,
        "game_id": analysis.game.tags.get("GameId"),
        "source": f"{analysis.game.path}:{analysis.game.line}",
        "turns": [
            {
                "ply": t.ply,
                "player": t.player,
                "turn": t.turn,
                "empty": t.empty,
                "before": _value_json(t.before),
                "after": _value_json(t.after),
                "mistake": t.mistake,
                "best": list(t.best),
            }
            for t in analysis.analysed
        ],
        "mistakes": [t.ply for t in analysis.analysed if t.mistake is not None],
    }
