"""Tournaments: a spec from the command line or an engines file, a schedule, J games at once, a journal, resume.

Data flow: :class:`TournamentSpec` -> :func:`~quarto_arena.arena.schedule.build_schedule` -> :class:`Tournament`
(an asyncio runner over an :class:`EnginePool`) -> :func:`~quarto_arena.arena.referee.play_game` -> GameRecord ->
journal, PGN, JSON Lines -> rating table. Nothing here prints: the runner reports to a callback with
:class:`GameStarted`, :class:`GameFinished` and :class:`Notice` events, and the CLI decides what to show.

A tournament directory holds::

    journal.qaj        the truth: configuration + one record per finished game (see arena/journal.py)
    games.pgn          every finished game as PGN, in the order games finished
    games.jsonl        every finished game as one JSON object (turns, times, scores)
    failures.jsonl     with --strict: the failed game that stopped the tournament (not counted, replayed on resume)
    logs/NAME.stderr   each engine's standard error

A game counts once its record is synced into the journal. ``games.pgn`` and ``games.jsonl`` are written after
that and are rebuilt from the journal when the tournament is resumed, so a kill between the two writes loses or
duplicates nothing. Resuming rebuilds the schedule from the journal's configuration, checks it against the digest
kept there, and plays exactly the scheduled games the journal does not hold.

Engine failures. Before the first game each engine is started once and asked for a new game: an engine that
cannot start, rejects its options or refuses the variant stops the tournament (:class:`TournamentError`, exit
status 3), as SPEC §4.2 asks. After that, an engine that crashes, stalls or breaks the rules loses that game with
its reason and is restarted for its next game; with ``strict`` the first such game stops the tournament instead.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import socket
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from quarto_arena.protocol.notation import NotationError, format_attributes, parse_variant
from quarto_arena.protocol.rules import Variant

from .engine import Deadlines, EngineConfig, EngineError, EngineSession
from .enginesfile import EnginesFileError, config_from_dict, config_to_dict, resolve_engines
from .journal import JOURNAL_NAME, Journal, JournalContents, JournalError
from .pgn import format_game
from .records import GameRecord, Termination
from .referee import GameSpec, play_game
from .schedule import (
    STARTPOS,
    Format,
    Opening,
    ScheduledGame,
    ScheduleError,
    build_schedule,
    load_openings,
    opening_from_text,
    random_openings,
    schedule_digest,
)
from .stats import RatingTable, ScoredGame, rate
from .timecontrol import DEFAULT_MARGIN_MS, TimeControl

__all__ = [
    "FAILURES_NAME",
    "JSONL_NAME",
    "PGN_NAME",
    "EnginePool",
    "Event",
    "GameFinished",
    "GameStarted",
    "Notice",
    "Tournament",
    "TournamentError",
    "TournamentOutcome",
    "TournamentSpec",
    "build_spec",
    "forfeit_counts",
    "pgn_text",
    "rating_table",
]

log = logging.getLogger(__name__)

PGN_NAME: Final = "games.pgn"
JSONL_NAME: Final = "games.jsonl"
FAILURES_NAME: Final = "failures.jsonl"
_SITE: Final = socket.gethostname() or "?"


class TournamentError(Exception):
    """A tournament that cannot start or go on; one line. ``engine`` is True when an engine is to blame."""

    def __init__(self, message: str, *, engine: bool = False) -> None:
        super().__init__(message)
        self.engine = engine
        """True for an engine failure (exit status 3), False for a usage or configuration problem (2)."""


@dataclass(frozen=True, slots=True)
class TournamentSpec:
    """Everything that defines a tournament; kept whole in the journal header so ``--resume`` needs no flags."""

    engines: tuple[EngineConfig, ...]
    """The engines, in command-line (or engines-file) order; the first is the gauntlet's hero."""
    format: Format = Format.ROUND_ROBIN
    """Round-robin or gauntlet."""
    rounds: int = 1
    """Rounds: each repeats every encounter."""
    games: int = 2
    """Games per encounter per round (even: colour-swapped pairs)."""
    concurrency: int = 1
    """Games played at the same time."""
    time_control: TimeControl = field(default_factory=lambda: TimeControl.parse("st=1"))
    """The time control of every game (an engine's own overrides it)."""
    variant: Variant = field(default_factory=Variant)
    """The rules."""
    openings: tuple[Opening, ...] = (Opening(),)
    """The openings, cycled over the pairs of every encounter (resolved: the file or the seed is not needed again)."""
    openings_source: str = STARTPOS
    """Where the openings came from, for people: ``startpos``, ``FILE`` or ``random K`` (informational)."""
    seed: int = 0
    """Seed of the random openings."""
    strict: bool = False
    """Stop at the first engine failure instead of forfeiting and going on."""
    margin_ms: int = DEFAULT_MARGIN_MS
    """Overrun tolerated before a player loses on time."""
    rating_interval: int = 0
    """Show an interim table every this many games (0: never)."""
    table_format: str = "simple"
    """How the CLI prints tables (any tabulate format, csv, json)."""
    event: str = "quarto-arena tournament"
    """The PGN Event tag."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise TournamentError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.rating_interval < 0:
            raise TournamentError(f"the rating interval cannot be negative ({self.rating_interval})")

    @property
    def names(self) -> list[str]:
        """The engines' display names."""
        return [e.name for e in self.engines]

    def schedule(self) -> list[ScheduledGame]:
        """Every game of the tournament (raises ScheduleError for impossible settings)."""
        return build_schedule(self.names, fmt=self.format, rounds=self.rounds, games=self.games, openings=self.openings)

    def to_dict(self) -> dict[str, Any]:
        """Plain msgpack/JSON types for the journal header (the inverse of :meth:`from_dict`)."""
        return {
            "engines": [config_to_dict(e) for e in self.engines],
            "format": self.format.value,
            "rounds": self.rounds,
            "games": self.games,
            "concurrency": self.concurrency,
            "tc": self.time_control.text,
            "variant": {
                "shapes": self.variant.shapes.value,
                "attributes": format_attributes(self.variant.attributes),
                "claims": self.variant.claims.value,
            },
            "openings": [o.text() for o in self.openings],
            "openings_source": self.openings_source,
            "seed": self.seed,
            "strict": self.strict,
            "margin_ms": self.margin_ms,
            "rating_interval": self.rating_interval,
            "table_format": self.table_format,
            "event": self.event,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TournamentSpec:
        """Rebuilds a spec from :meth:`to_dict`; raises :class:`TournamentError` naming what is wrong."""
        try:
            variant = parse_variant(d["variant"]["shapes"], d["variant"]["attributes"], d["variant"]["claims"])
            return cls(
                engines=tuple(config_from_dict(e) for e in d["engines"]),
                format=Format(d["format"]),
                rounds=int(d["rounds"]),
                games=int(d["games"]),
                concurrency=int(d["concurrency"]),
                time_control=TimeControl.parse(str(d["tc"])),
                variant=variant,
                openings=tuple(opening_from_text(str(t), variant) for t in d["openings"]),
                openings_source=str(d["openings_source"]),
                seed=int(d["seed"]),
                strict=bool(d["strict"]),
                margin_ms=int(d["margin_ms"]),
                rating_interval=int(d["rating_interval"]),
                table_format=str(d["table_format"]),
                event=str(d["event"]),
            )
        except KeyError as e:
            raise TournamentError(f"the journal's configuration lacks {e}") from None
        except (TypeError, ValueError, AttributeError) as e:
            raise TournamentError(f"the journal's configuration is invalid: {e}") from None


# ----------------------------------------------------------------------------------------------------------------
# Events


@dataclass(frozen=True, slots=True)
class GameStarted:
    """A game began."""

    game: ScheduledGame
    """The scheduled game."""


@dataclass(frozen=True, slots=True)
class GameFinished:
    """A game ended and is in the journal (it counts)."""

    record: GameRecord
    """The game."""
    done: int
    """Games of the schedule now in the journal."""
    total: int
    """Games in the schedule."""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that is not a game: a dropped torn record, an engine restart."""

    text: str
    """One line."""


Event = GameStarted | GameFinished | Notice


@dataclass(frozen=True, slots=True)
class TournamentOutcome:
    """Where a tournament stands when :meth:`Tournament.run` returns."""

    spec: TournamentSpec
    """The tournament."""
    records: tuple[GameRecord, ...]
    """Every finished game, resumed ones included, in journal order."""
    total: int
    """Games in the schedule."""
    failure: GameRecord | None = None
    """With ``strict``: the game whose engine failure stopped the tournament (not counted)."""

    @property
    def complete(self) -> bool:
        """True when every scheduled game is finished."""
        return len(self.records) == self.total


# ----------------------------------------------------------------------------------------------------------------
# Records


def pgn_text(record: GameRecord, event: str) -> str:
    """One game as PGN: the seven roster tags, then Variant, TimeControl, Termination, Opening, GameId.

    Opening turns are marked ``{book}``; every engine turn has ``{score, ms}`` as far as known; the last turn's
    comment ends with what ended the game.
    """
    date = record.started[:10].replace("-", ".") if record.started else "????.??.??"
    opening = " ".join((record.start, *record.opening)) if record.start != STARTPOS or record.opening else "-"
    tags = {
        "Event": event,
        "Site": _SITE,
        "Date": date,
        "Round": str(record.round),
        "White": record.first,
        "Black": record.second,
        "Variant": record.variant,
        "TimeControl": record.time_control,
        "Termination": record.termination.value,
        "Opening": opening,
        "GameId": str(record.game_id),
    }
    if record.start != STARTPOS:
        tags["StartPosition"] = record.start
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


def rating_table(records: Iterable[GameRecord], names: Sequence[str]) -> RatingTable:
    """The Elo table of the finished games (forfeits count as losses; aborted games do not count)."""
    games = [
        ScoredGame(r.first, r.second, score)
        for r in records
        if r.termination is not Termination.ABORTED and (score := r.result.first_score) is not None
    ]
    return rate(games, players=names)


def forfeit_counts(records: Iterable[GameRecord], names: Sequence[str]) -> dict[str, collections.Counter[Termination]]:
    """Games each engine lost by failing, by reason (every engine listed, with an empty count if it never failed)."""
    out: dict[str, collections.Counter[Termination]] = {n: collections.Counter() for n in names}
    for r in records:
        loser = r.loser
        if r.termination.is_failure and loser is not None:
            out.setdefault(loser, collections.Counter())[r.termination] += 1
    return out


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------------------------------
# Engines


class EnginePool:
    """Engine sessions for concurrent games: one session per running game per engine, reused between games.

    A session that died in a game is handed out again as it is: :func:`play_game` restarts a session that is not
    running, so a crashed engine is restarted for its next game (and a failed restart loses that game).
    """

    def __init__(
        self,
        engines: Sequence[EngineConfig],
        *,
        deadlines: Deadlines | None = None,
        log_dir: Path | None = None,
    ) -> None:
        """Sessions are created on demand; ``log_dir`` receives each engine's standard error."""
        self.configs = {e.name: e for e in engines}
        self.deadlines = deadlines
        self.log_dir = log_dir
        self._idle: dict[str, list[EngineSession]] = {e.name: [] for e in engines}
        self._all: list[EngineSession] = []

    def _new(self, name: str) -> EngineSession:
        stderr = None if self.log_dir is None else self.log_dir / f"{name}.stderr"
        session = EngineSession(self.configs[name], deadlines=self.deadlines, stderr_path=stderr)
        self._all.append(session)
        return session

    def acquire(self, name: str) -> EngineSession:
        """An idle session of engine ``name``, or a new (not yet started) one."""
        idle = self._idle[name]
        return idle.pop() if idle else self._new(name)

    def release(self, session: EngineSession) -> None:
        """Gives a session back after its game."""
        self._idle[session.name].append(session)

    @property
    def sessions(self) -> list[EngineSession]:
        """Every session ever created."""
        return list(self._all)

    def restarts(self) -> int:
        """Engine starts beyond the first of each session: how often a failed engine was restarted."""
        return sum(max(0, s.starts - 1) for s in self._all)

    async def preflight(self, variant: Variant) -> None:
        """Starts every engine once and asks it for a new game: a configuration error stops us before any game.

        Raises :class:`TournamentError` (an engine failure) naming every engine that could not start.
        """
        sessions = [self.acquire(name) for name in self.configs]
        results = await asyncio.gather(*(self._check(s, variant) for s in sessions), return_exceptions=True)
        problems = []
        for session, result in zip(sessions, results, strict=True):
            self.release(session)
            if isinstance(result, EngineError):
                problems.append(str(result))
            elif isinstance(result, BaseException):
                raise result
        if problems:
            raise TournamentError("; ".join(problems), engine=True)

    @staticmethod
    async def _check(session: EngineSession, variant: Variant) -> None:
        await session.start()
        await session.new_game(variant)

    async def close(self) -> None:
        """Quits every session (kill after the quit deadline) and reaps every process."""
        await asyncio.gather(*(s.quit() for s in self._all), return_exceptions=True)

    async def kill(self) -> None:
        """Kills every session at once."""
        await asyncio.gather(*(s.kill() for s in self._all), return_exceptions=True)


# ----------------------------------------------------------------------------------------------------------------
# The runner


class Tournament:
    """A tournament bound to its directory. Build it with :meth:`create` or :meth:`resume`, then :meth:`run`."""

    def __init__(
        self,
        spec: TournamentSpec,
        directory: Path,
        journal: Journal,
        contents: JournalContents | None,
        *,
        deadlines: Deadlines | None = None,
    ) -> None:
        """Use :meth:`create` or :meth:`resume`."""
        self.spec = spec
        self.directory = directory
        self.journal = journal
        self.schedule = spec.schedule()
        self.deadlines = deadlines
        self.records: dict[int, GameRecord] = dict(contents.records) if contents else {}
        self.torn = None if contents is None else contents.torn
        known = {g.game_id for g in self.schedule}
        strangers = sorted(set(self.records) - known)
        if strangers:
            raise TournamentError(f"{journal.path}: game {strangers[0]} is not in the schedule")

    @classmethod
    def create(cls, spec: TournamentSpec, directory: Path, *, deadlines: Deadlines | None = None) -> Tournament:
        """Starts a new tournament in ``directory`` (created if needed; it must not hold a journal yet)."""
        try:
            schedule = spec.schedule()
        except ScheduleError as e:
            raise TournamentError(str(e)) from None
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TournamentError(f"{directory}: cannot create the directory: {e.strerror}") from None
        config = spec.to_dict()
        config["schedule"] = {"games": len(schedule), "digest": schedule_digest(schedule)}
        try:
            journal = Journal.create(directory / JOURNAL_NAME, config)
        except JournalError as e:
            raise TournamentError(str(e)) from None
        return cls(spec, directory, journal, None, deadlines=deadlines)

    @classmethod
    def resume(cls, directory: Path, *, deadlines: Deadlines | None = None) -> Tournament:
        """Reopens the tournament in ``directory`` from its journal (torn tail dropped, schedule checked)."""
        if not directory.is_dir():
            raise TournamentError(f"{directory}: no such tournament directory")
        try:
            journal, contents = Journal.open(directory / JOURNAL_NAME)
        except JournalError as e:
            raise TournamentError(str(e)) from None
        try:
            spec = TournamentSpec.from_dict(contents.config)
            try:
                schedule = spec.schedule()
            except ScheduleError as e:
                raise TournamentError(f"{journal.path}: {e}") from None
            kept = contents.config.get("schedule", {})
            if kept.get("digest") != schedule_digest(schedule) or kept.get("games") != len(schedule):
                raise TournamentError(
                    f"{journal.path}: this quarto-arena builds a different schedule from the journal's configuration;"
                    " resume it with the version that started it"
                )
            return cls(spec, directory, journal, contents, deadlines=deadlines)
        except BaseException:
            journal.close()
            raise

    @property
    def total(self) -> int:
        """Games in the schedule."""
        return len(self.schedule)

    def missing(self) -> list[ScheduledGame]:
        """Scheduled games the journal does not hold yet, in schedule order."""
        return [g for g in self.schedule if g.game_id not in self.records]

    def _ordered_records(self) -> list[GameRecord]:
        return list(self.records.values())

    def _rewrite_outputs(self) -> None:
        """Rebuilds the PGN and JSON Lines files from the journal (the truth), replacing whatever a kill left."""
        records = self._ordered_records()
        _write_atomic(self.directory / PGN_NAME, "\n".join(pgn_text(r, self.spec.event) for r in records))
        _write_atomic(self.directory / JSONL_NAME, "".join(json.dumps(r.to_dict()) + "\n" for r in records))

    def _append_outputs(self, record: GameRecord, pgn: TextIO, jsonl: TextIO) -> None:
        # Games are separated by one blank line. Flushed, not synced: the journal can rebuild these files.
        pgn.write(("\n" if pgn.tell() else "") + pgn_text(record, self.spec.event))
        pgn.flush()
        jsonl.write(json.dumps(record.to_dict()) + "\n")
        jsonl.flush()

    async def run(self, on_event: Callable[[Event], None] | None = None) -> TournamentOutcome:
        """Plays every missing game, ``concurrency`` at a time; returns when all are done or a strict stop.

        Raises :class:`TournamentError` when an engine cannot be started before the first game. Whatever
        happens (an error, Ctrl-C, cancellation), every engine process is killed and reaped before this returns.
        """
        emit = on_event or (lambda _event: None)
        if self.torn is not None:
            emit(Notice(f"journal: dropped a torn last record ({self.torn}); that game will be played again"))
        self.directory.joinpath("logs").mkdir(exist_ok=True)
        self._rewrite_outputs()
        pending = self.missing()
        failure: GameRecord | None = None
        if not pending:
            return TournamentOutcome(self.spec, tuple(self._ordered_records()), self.total)
        pool = EnginePool(self.spec.engines, deadlines=self.deadlines, log_dir=self.directory / "logs")
        queue = collections.deque(pending)
        write_lock = asyncio.Lock()
        stop = asyncio.Event()

        async def worker() -> None:
            nonlocal failure
            while queue and not stop.is_set():
                game = queue.popleft()
                first, second = pool.acquire(game.first), pool.acquire(game.second)
                emit(GameStarted(game))
                try:
                    record = await play_game(
                        first, second, game_spec(game, self.spec.variant, self.spec.time_control, self.spec.margin_ms)
                    )
                finally:
                    pool.release(first)
                    pool.release(second)
                if record.termination.is_failure:
                    emit(Notice(f"game {game.game_id}: {record.termination.value}: {record.detail}"))
                    if self.spec.strict:
                        failure = failure or record
                        stop.set()
                        return
                async with write_lock:
                    if stop.is_set():
                        return
                    # The game counts once it is on disk: sync in a thread so the other games' clocks keep going.
                    await asyncio.to_thread(self.journal.append, record)
                    self.records[record.game_id] = record
                    self._append_outputs(record, pgn, jsonl)
                emit(GameFinished(record, len(self.records), self.total))

        pgn = open(self.directory / PGN_NAME, "a", encoding="utf-8")  # noqa: SIM115 - closed in the finally below
        jsonl = open(self.directory / JSONL_NAME, "a", encoding="utf-8")  # noqa: SIM115
        try:
            await pool.preflight(self.spec.variant)
            await run_workers(worker, min(self.spec.concurrency, len(pending)), stop)
        finally:
            pgn.close()
            jsonl.close()
            # Shielded: a second Ctrl-C during the clean-up must not leave an engine behind.
            await asyncio.shield(pool.close())
        if failure is not None:
            with open(self.directory / FAILURES_NAME, "a", encoding="utf-8") as f:
                f.write(json.dumps(failure.to_dict()) + "\n")
        return TournamentOutcome(self.spec, tuple(self._ordered_records()), self.total, failure)

    def close(self) -> None:
        """Releases the journal."""
        self.journal.close()

    def __enter__(self) -> Tournament:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def game_spec(game: ScheduledGame, variant: Variant, time_control: TimeControl, margin_ms: int) -> GameSpec:
    """The referee's view of a scheduled game."""
    opening = game.opening
    return GameSpec(
        variant=variant,
        time_control=time_control,
        margin_ms=margin_ms,
        start=None if opening.start == STARTPOS else opening.start,
        opening=opening.turns,
        game_id=game.game_id,
        round=game.round,
    )


async def run_workers(worker: Callable[[], Coroutine[Any, Any, None]], count: int, stop: asyncio.Event) -> None:
    """Runs ``count`` copies of ``worker`` until all return or ``stop`` is set; re-raises a worker's error.

    On a stop or an error the running workers are cancelled (their games abandoned: play_game kills their
    engines when cancelled) and awaited, so nothing is left running when this returns.
    """
    workers = [asyncio.create_task(worker()) for _ in range(count)]
    stopper = asyncio.create_task(stop.wait())
    try:
        while not stop.is_set() and (live := [w for w in workers if not w.done()]):
            await asyncio.wait([stopper, *live], return_when=asyncio.FIRST_COMPLETED)
            for w in workers:
                if w.done() and not w.cancelled() and (exc := w.exception()) is not None:
                    raise exc
    finally:
        for w in workers:
            w.cancel()
        stopper.cancel()
        await asyncio.gather(*workers, stopper, return_exceptions=True)


def build_spec(
    engine_words: Sequence[str],
    *,
    engines_file: Path | None = None,
    gauntlet: bool = False,
    rounds: int = 1,
    games: int = 2,
    concurrency: int = 1,
    tc: str = "st=60",
    margin_ms: int = DEFAULT_MARGIN_MS,
    shapes: str = "standard",
    attributes: str = "color,shape,height,fill",
    claims: str = "auto",
    openings_file: Path | None = None,
    random_turns: int | None = None,
    seed: int = 0,
    strict: bool = False,
    rating_interval: int = 0,
    table_format: str = "simple",
) -> TournamentSpec:
    """A tournament from the command line's values; :class:`TournamentError` (a usage error) naming a bad one."""
    if openings_file is not None and random_turns is not None:
        raise TournamentError("give --openings FILE or --random-openings K, not both")
    try:
        engines = resolve_engines(engine_words, engines_file)
        variant = parse_variant(shapes, attributes, claims)
        control = TimeControl.parse(tc)
        fmt = Format.GAUNTLET if gauntlet else Format.ROUND_ROBIN
        if openings_file is not None:
            openings = tuple(load_openings(openings_file, variant))
            source = str(openings_file)
        elif random_turns is not None:
            # One opening per pair of each encounter in a round, so no pair of an encounter repeats another.
            openings = tuple(random_openings(random_turns, rounds * max(1, games // 2), variant, seed))
            source = f"random {random_turns}"
        else:
            openings, source = (Opening(),), STARTPOS
        spec = TournamentSpec(
            engines=tuple(engines),
            format=fmt,
            rounds=rounds,
            games=games,
            concurrency=concurrency,
            time_control=control,
            variant=variant,
            openings=openings,
            openings_source=source,
            seed=seed,
            strict=strict,
            margin_ms=margin_ms,
            rating_interval=rating_interval,
            table_format=table_format,
        )
        spec.schedule()
    except (EnginesFileError, NotationError, ScheduleError, ValueError) as e:
        raise TournamentError(str(e)) from None
    return spec
