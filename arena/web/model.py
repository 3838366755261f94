"""What the pages show, as plain JSON values: a run's standings as they grow (:class:`RunModel`) and each game as
the viewer replays it (:func:`game_view`). No I/O and no HTML here: the report and the live server both render
these values, so the live page and ``report.html`` cannot disagree.

A game for the viewer (``game_view``) is compact, because a report holds every game of a run::

    {"id": 12, "round": 1, "players": [0, 2],          indexes into the run's names (first, second)
     "result": "1-0", "reason": "greedy completes an alignment", "termination": "normal", "detail": "...",
     "variant": "standard color,shape,height,fill auto", "tc": "st=1",
     "board": [-1, 5, ...], "hand": -1,                the start: 16 squares a1..d4 (-1 empty), the piece in hand
     "opening": 2,                                     turns played from the opening book
     "plies": [[place, give, mark, ms, score], ...],   place/give -1 for none; mark 0, 1 call (b3!), 2 claim (!)
     "lines": [mask, ...],                             the winning groups at the end (bit s = square s)
     "error": null,                                    a record that cannot be replayed says why here
     "values": null}                                   per-turn analysis, when a games.analysis.jsonl is present

The viewer needs no rules: placing the hand piece and taking the given one is all it does; every turn was checked
here by the rules core when the view was built.
"""

from __future__ import annotations

import collections
import datetime
import functools
import math
import time
from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, Final

from quarto_arena.protocol.notation import NotationError, parse_position, parse_turn, parse_variant
from quarto_arena.protocol.rules import IllegalTurn, Outcome, Position, Turn, Variant, iter_alignments

from ..output import forfeit_rows, game_comment, match_lines, rating_notes, results_table
from ..records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from ..results import summarize
from ..run import GameFinished, GameStarted, Notice, RunKind, RunSpec, SprtUpdate, TurnPlayed
from ..run.sprt import SprtTracker
from ..schedule import STARTPOS, ScheduledGame
from ..stats import Cell, RatingError, RatingTable, ScoredGame, Sprt, TableRows, rate, rating_rows
from ..stats.rating import MAX_GAMES

__all__ = ["HISTORY_POINTS", "RunInfo", "RunModel", "game_view", "replay"]

#: Points of the rating history kept (thinned by half whenever it grows past this): a plot, not a ledger.
HISTORY_POINTS: Final = 100
#: Finished games listed as "last finished", and notices kept, on the live page.
_RECENT: Final = 12
_NOTICES: Final = 20
_MARKS: Final = {"": 0, "call": 1, "claim": 2}


def _json_cell(value: Cell) -> Cell:
    # JSON has no infinity (a one-sided result can give one): null, as the standings.json writer does.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _rows(rows: TableRows) -> dict[str, Any]:
    return {"headers": list(rows.headers), "rows": [[_json_cell(v) for v in row] for row in rows.rows]}


# ----------------------------------------------------------------------------------------------------------------
# One game


@dataclass(frozen=True, slots=True)
class Replay:
    """A game replayed by the rules core, encoded for the viewer."""

    board: list[int]
    """The start: piece on each square a1..d4, -1 for an empty one."""
    hand: int
    """The piece in hand at the start, -1 for none."""
    plies: list[list[Any]]
    """``[place, give, mark, ms, score]`` per turn (see the module docstring)."""
    position: Position | None
    """The position after the last good turn (None when the start itself is bad)."""
    error: str | None
    """Why the replay stopped early, or None."""


@functools.lru_cache(maxsize=64)
def _variant(text: str) -> Variant:
    # Cached: a run has one variant, and building one (its lines and masks) costs more than replaying a game.
    parts = text.split()
    if len(parts) != 3:
        raise NotationError(f"variant {text!r} is not SHAPES ATTRIBUTES CLAIMS")
    return parse_variant(*parts)


def replay(variant: str | Variant, start: str, turns: Sequence[TurnRecord]) -> Replay:
    """Replays ``turns`` from ``start`` (``startpos`` or a position string) under ``variant`` (a Variant or its
    GameRecord text); a bad variant, start or turn ends the replay there with the reason in ``error``."""
    try:
        v = variant if isinstance(variant, Variant) else _variant(variant)
        position = Position.start(v) if start == STARTPOS else parse_position(start, v)
    except NotationError as e:
        return Replay([-1] * 16, -1, [], None, f"the game cannot be shown: {e}")
    board = [-1 if p is None else p for p in position.board()]
    hand = -1 if position.hand is None else position.hand
    plies: list[list[Any]] = []
    for ply, t in enumerate(turns):
        try:
            turn, place, give, mark = _token(t.token)
            position = position.apply(turn)
        except (NotationError, IllegalTurn) as e:
            return Replay(board, hand, plies, position, f"turn {ply + 1} {t.token!r} cannot be replayed: {e}")
        plies.append([place, give, mark, t.ms, t.score])
    return Replay(board, hand, plies, position, None)


@functools.lru_cache(maxsize=1024)
def _token(token: str) -> tuple[Turn, int, int, int]:
    """A turn token parsed, with its ``place``, ``give`` and ``mark`` as the viewer has them (a bad token raises
    NotationError, which is not cached); bounded: a run has a few hundred tokens."""
    turn = parse_turn(token)
    mark = _MARKS["claim" if turn.claim else "call" if turn.call else ""]
    return turn, -1 if turn.place is None else turn.place, -1 if turn.give is None else turn.give, mark


def _ply(t: TurnRecord, place: int | None, give: int | None, mark: str) -> list[Any]:
    return [-1 if place is None else place, -1 if give is None else give, _MARKS[mark], t.ms, t.score]


def _lines(position: Position | None) -> list[int]:
    if position is None or position.outcome is not Outcome.WIN:
        return []
    return list(iter_alignments(position))


def game_view(record: GameRecord, index: Mapping[str, int]) -> dict[str, Any]:
    """The viewer's data for a finished game; ``index`` maps the run's names to their place in its name list."""
    r = replay(record.variant, record.start, record.turns)
    return {
        "id": record.game_id,
        "round": record.round,
        "players": [index.get(record.first, -1), index.get(record.second, -1)],
        "result": record.result.value,
        "reason": game_comment(record),
        "termination": record.termination.value,
        "detail": record.detail,
        "variant": record.variant,
        "tc": record.time_control,
        "board": r.board,
        "hand": r.hand,
        "opening": len(record.opening),
        "plies": r.plies,
        "lines": _lines(r.position),
        "error": r.error,
        "values": None,
    }


# ----------------------------------------------------------------------------------------------------------------
# A run


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the pages say about a run besides its games."""

    kind: RunKind
    """Tournament, match or SPRT."""
    names: tuple[str, ...]
    """The engines' display names (never their command lines)."""
    total: int | None
    """Games in the schedule (None: open-ended)."""
    variant: Variant
    """The rules."""
    tc: str
    """The time control as given."""
    concurrency: int
    """Games played at once."""
    sprt: Sprt | None = None
    """The test, for an SPRT run."""

    @classmethod
    def of(cls, spec: RunSpec, total: int | None) -> RunInfo:
        """The pages' view of a run's spec."""
        game = spec.game
        tc = game.time_control.text
        return cls(spec.kind, tuple(spec.names), total, game.variant, tc, spec.concurrency, spec.sprt)


class RatingHistory:
    """Each engine's rating and margin as games accumulate, at most :data:`HISTORY_POINTS` points.

    A point is a full fit of the games so far, taken every ``step`` games (a power of two); when the points pass the
    limit every other one is dropped and ``step`` doubles, so a run of any length costs a few hundred fits in all.
    ``expected``, the number of games known to come (a finished run's), sets the final step at once: the same
    points, without the fits that would be dropped.
    """

    def __init__(self, names: Sequence[str], expected: int = 0) -> None:
        self.names = list(names)
        self.games = 0
        """Scored games counted so far."""
        # The games as the fit counts them: one tally per (white, black, score), in the order each first came. The
        # fit reads the same names, pairs and sums in the same order as from the games one by one, so it gives the
        # same table, at a cost of the tallies (a few per pair) rather than of every game again at every point.
        self._tallies: dict[tuple[str, str, float], int] = {}
        self.step = 1
        while expected >= (HISTORY_POINTS + 1) * self.step:  # where the doubling in add() would end
            self.step *= 2
        self.points: list[tuple[int, dict[str, tuple[float, float] | None]]] = []

    def add(self, record: GameRecord) -> None:
        """Counts a finished game (an unscored one is ignored)."""
        score = record.result.first_score
        if score is None:
            return
        key = (record.first, record.second, score)
        self._tallies[key] = self._tallies.get(key, 0) + 1
        self.games += 1
        if self.games % self.step == 0:
            self.points.append(self._fit())
            if len(self.points) > HISTORY_POINTS:
                self.step *= 2
                self.points = [p for p in self.points if p[0] % self.step == 0]

    def table(self) -> RatingTable:
        """The rating table of every game so far (raises RatingError as :func:`rate` does)."""
        if self.games > MAX_GAMES:  # what rate() says of as many games given one by one
            raise RatingError(f"more than {MAX_GAMES:,} games: rate at most that many at once")
        return rate((ScoredGame(w, b, s, n) for (w, b, s), n in self._tallies.items()), players=self.names)

    def _fit(self, table: RatingTable | None = None) -> tuple[int, dict[str, tuple[float, float] | None]]:
        try:
            table = table or self.table()
        except RatingError:
            return self.games, dict.fromkeys(self.names)
        out: dict[str, tuple[float, float] | None] = {}
        for p in table.players:
            ok = p.rating is not None and p.margin is not None and math.isfinite(p.rating) and math.isfinite(p.margin)
            out[p.name] = (p.rating, p.margin) if ok and p.rating is not None and p.margin is not None else None
        return self.games, out

    def series(self, table: RatingTable | None = None) -> dict[str, Any]:
        """``{"games": [...], "series": [{"name", "rating": [...], "margin": [...]}]}`` up to the last game
        (``table``: the fit of every game so far, if the caller has it)."""
        points = list(self.points)
        if self.games and (not points or points[-1][0] != self.games):
            points.append(self._fit(table))
        series = []
        for name in self.names:
            values = [p[1].get(name) for p in points]
            series.append(
                {
                    "name": name,
                    "rating": [None if v is None else round(v[0], 1) for v in values],
                    "margin": [None if v is None else round(v[1], 1) for v in values],
                }
            )
        return {"games": [p[0] for p in points], "series": series}


@dataclass(slots=True)
class _Running:
    """A game being played, as far as it went."""

    game: ScheduledGame
    board: list[int]
    hand: int
    plies: list[list[Any]]
    position: Position | None
    error: str | None


class RunModel:
    """A run's standings as games arrive (journal order), the games being played, and the last events.

    Fed by a live run's events (:meth:`event`) or by records read from a run directory (:meth:`add`). Every change
    bumps :attr:`version`; :meth:`summary` and :meth:`boards` are what the pages show.
    """

    def __init__(self, info: RunInfo, records: Iterable[GameRecord] = (), *, live: bool = False) -> None:
        """``live``: this process plays the run (its clock runs from now as well as from the games' own times);
        otherwise (a run directory followed or read) the run's time is what its games' records say."""
        self.info = info
        self.index = {name: i for i, name in enumerate(info.names)}
        self.records: list[GameRecord] = []
        self.by_id: dict[int, GameRecord] = {}
        self.identities: dict[str, EngineIdentity] = {}
        self.reasons: collections.Counter[str] = collections.Counter()
        self.forfeits: dict[str, collections.Counter[Termination]] = {n: collections.Counter() for n in info.names}
        # Games already finished set the history's step; not the run's total, so that a live chart starts fine-grained.
        self.history = RatingHistory(info.names, len(records) if isinstance(records, Sized) else 0)
        self.tracker = None if info.sprt is None else SprtTracker(info.sprt, info.names[0])
        self.llr: list[tuple[int, float]] = []
        self.running: dict[int, _Running] = {}
        self.recent: collections.deque[GameRecord] = collections.deque(maxlen=_RECENT)
        self.notices: collections.deque[str] = collections.deque(maxlen=_NOTICES)
        self.state = "running"
        """``running``, then how the run ended (``complete``, ``interrupted``, ``stopped``...)."""
        self.version = 0
        """Bumped by every change of :meth:`summary`."""
        self.boards_version = 0
        """Bumped by every change of :meth:`boards`."""
        self.t0 = time.monotonic()
        self.new = 0
        self.first_start: float | None = time.time() if live else None
        """When the run's first game began (POSIX time): its records' ``started``, or when a live run began here."""
        self.last_end: float | None = None
        """When the run's last counted game ended, by its record (its start plus its turns' times)."""
        self.ended_at: float | None = None
        """When a live run ended here (:meth:`finish`)."""
        self.live = live
        for record in records:
            self.add(record, counted_live=False)

    # --- input

    def add(self, record: GameRecord, *, counted_live: bool = True) -> None:
        """A game counted (in journal order); ``counted_live``: it finished while we watched (for the speed)."""
        self.records.append(record)
        self.by_id[record.game_id] = record
        for name, ident in zip((record.first, record.second), record.engines, strict=False):
            self.identities[name] = ident
        self.history.add(record)
        if record.termination is not Termination.NORMAL:
            self.reasons[record.termination.value] += 1
        else:
            self.reasons["draw" if record.result is Result.DRAW else "win on the board"] += 1
        loser = record.loser
        if record.termination.is_failure and loser is not None:
            self.forfeits.setdefault(loser, collections.Counter())[record.termination] += 1
        if self.tracker is not None and (update := self.tracker.add(record)) is not None:
            self.llr.append((len(self.records), update.status.llr))
        self.recent.appendleft(record)
        self._clock(record)
        if counted_live:
            self.new += 1
        if self.running.pop(record.game_id, None) is not None:
            self.boards_version += 1
        self.version += 1

    def _clock(self, record: GameRecord) -> None:
        try:
            start = datetime.datetime.fromisoformat(record.started).timestamp()
        except ValueError:
            return  # a record without a time (an old journal) says nothing of the run's time
        end = start + sum(t.ms for t in record.turns) / 1000
        self.first_start = start if self.first_start is None else min(self.first_start, start)
        self.last_end = end if self.last_end is None else max(self.last_end, end)

    def elapsed(self) -> float | None:
        """The run's own time, seconds: from its first game's start to now while it runs, to its end (frozen) once it
        is over; None before any game. A resumed run counts from its first session's first game."""
        if self.first_start is None:
            return None
        if self.state in ("running", "not finished"):
            end = time.time()
        elif self.ended_at is not None:
            end = self.ended_at
        else:
            end = self.last_end if self.last_end is not None else self.first_start
        return max(0.0, end - self.first_start)

    def started(self, game: ScheduledGame) -> None:
        """A game began: its board starts from its opening."""
        opening = game.opening
        turns = [TurnRecord(token, 0) for token in opening.turns]
        r = replay(self.info.variant, opening.start, turns)
        self.running[game.game_id] = _Running(game, r.board, r.hand, r.plies, r.position, r.error)
        self.boards_version += 1

    def turn(self, e: TurnPlayed) -> None:
        """A running game's turn."""
        g = self.running.get(e.game_id)
        if g is None or g.error is not None:
            return
        turn = parse_turn(e.turn.token)
        g.plies.append(_ply(e.turn, turn.place, turn.give, "claim" if turn.claim else "call" if turn.call else ""))
        g.position = e.position
        self.boards_version += 1

    def notice(self, text: str) -> None:
        """Something to show that is not a game."""
        self.notices.appendleft(text)
        self.version += 1

    def event(self, e: object) -> None:
        """Handles one event of a live run (the runner's callback)."""
        if isinstance(e, TurnPlayed):
            self.turn(e)
        elif isinstance(e, GameStarted):
            self.started(e.game)
        elif isinstance(e, GameFinished):
            self.add(e.record)
        elif isinstance(e, Notice):
            self.notice(e.text)
        elif isinstance(e, SprtUpdate):
            self.version += 1  # the model keeps its own tracker; the update says only that it moved

    def finish(self, state: str) -> None:
        """The run ended (``complete``, ``interrupted``, ``H1 accepted``...): nothing is running any more."""
        self.state = state
        if self.live and self.ended_at is None:
            self.ended_at = time.time()
        self.running.clear()
        self.version += 1
        self.boards_version += 1

    # --- output

    def progress(self) -> dict[str, Any]:
        """Games done, scheduled and running, the speed of the games counted while watching, and the time left."""
        done, total = len(self.records), self.info.total
        watched = time.monotonic() - self.t0
        rate_ = self.new / watched if self.new and watched > 0 else None
        eta = None
        if rate_ and total is not None and self.state == "running":
            eta = max(0.0, (total - done) / rate_)
        return {
            "done": done,
            "total": total,
            # Only a run's own process sees its games in flight (its events); a page following its files does not.
            "running": len(self.running) if self.live else None,
            "rate": rate_,
            "eta_s": eta,
            "elapsed_s": self.elapsed(),
            "state": self.state,
        }

    def summary(self) -> dict[str, Any]:
        """Everything but the boards and the games' turns: tables, plots' data, progress, last games, notices."""
        # Counted as games arrive, one fit per summary: the live server builds one a second on the arena's loop.
        names = list(self.info.names)
        records = self.records
        table = self.history.table()
        forfeits = self.forfeits
        order = [p.name for p in table.players if p.rating is not None]
        pairs = {(pr.player, pr.opponent): [pr.points, pr.games] for pr in table.pairs}
        reasons = self.reasons
        out: dict[str, Any] = {
            "kind": self.info.kind.value,
            "names": names,
            "variant": self.info.variant.describe(),
            "tc": self.info.tc,
            "concurrency": self.info.concurrency,
            "progress": self.progress(),
            "table": _rows(results_table(rating_rows(table), forfeits)),
            "table_notes": rating_notes(table).splitlines(),
            "engines": self._engines(),
            "crosstable": {"names": order, "cells": [[pairs.get((a, b)) for b in order] for a in order]},
            "forfeits": _rows(forfeit_rows({n: c for n, c in forfeits.items() if c})),
            "terminations": sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])),
            "history": self.history.series(table),
            "recent": [self._brief(r) for r in self.recent],
            "notices": list(self.notices),
            "match": match_lines(summarize(records, *names)) if len(names) == 2 else None,
            "sprt": self._sprt(),
        }
        return out

    def _engines(self) -> dict[str, Any]:
        # What each engine said of itself in its last game: never its command line or path (EngineIdentity.source).
        rows: list[list[Cell]] = []
        for name in self.info.names:
            ident = self.identities.get(name)
            if ident is None:
                rows.append([name, None, None, None])
            else:
                rows.append([name, ident.id_name, ident.author, ident.protocol])
        return {"headers": ["engine", "id_name", "author", "protocol"], "rows": rows}

    def _brief(self, r: GameRecord) -> dict[str, Any]:
        return {
            "id": r.game_id,
            "first": r.first,
            "second": r.second,
            "result": r.result.value,
            "reason": game_comment(r),
        }

    def _sprt(self) -> dict[str, Any] | None:
        test, tracker = self.info.sprt, self.tracker
        if test is None or tracker is None:
            return None
        status = tracker.progress.status
        return {
            "elo0": test.elo0,
            "elo1": test.elo1,
            "model": test.model.value,
            "llr": status.llr,
            "lower": status.lower,
            "upper": status.upper,
            "decision": status.decision.value,
            "line": tracker.progress.line(),
            "games": [g for g, _ in self.llr],
            "llrs": [round(v, 4) for _, v in self.llr],
        }

    def boards(self) -> list[dict[str, Any]]:
        """The games being played, each with its turns so far (the viewer's encoding), in game order."""
        out = []
        for game_id in sorted(self.running):
            g = self.running[game_id]
            out.append(
                {
                    "id": game_id,
                    "round": g.game.round,
                    "players": [self.index.get(g.game.first, -1), self.index.get(g.game.second, -1)],
                    "result": "*",
                    "reason": "in progress",
                    "termination": "",
                    "detail": "",
                    "variant": "",
                    "tc": self.info.tc,
                    "board": g.board,
                    "hand": g.hand,
                    "opening": len(g.game.opening.turns),
                    "plies": g.plies,
                    "lines": _lines(g.position),
                    "error": g.error,
                    "values": None,
                }
            )
        return out

    def game(self, game_id: int) -> dict[str, Any] | None:
        """A finished game for the viewer, or None."""
        record = self.by_id.get(game_id)
        return None if record is None else game_view(record, self.index)
