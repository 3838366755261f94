"""The one game runner behind ``tournament``, ``play`` and ``sprt``: a schedule, J games at once, a journal, resume.

Data flow: :class:`RunSpec` -> :class:`~quarto_arena.arena.schedule.Schedule` (lazy) -> :class:`Run` (an asyncio
runner over an :class:`EnginePool`) -> :func:`~quarto_arena.arena.referee.play_game` -> GameRecord -> journal, PGN,
JSON Lines. ``play`` is a two-engine schedule; ``sprt`` is a two-engine schedule, open-ended or bounded by
``--max-games``, with a stopping rule (:class:`SprtTracker`). Nothing here prints: the runner reports
:class:`GameStarted`, :class:`GameFinished`, :class:`SprtUpdate` and :class:`Notice` events to a callback.

A run directory holds::

    journal.qaj        the truth: configuration + one record per finished game (see arena/journal.py)
    config.json        the configuration, for people (the journal's copy is the one a resume reads)
    games.pgn          every counted game as PGN, in journal order
    games.jsonl        every counted game as one JSON object (turns, times, scores, engine identities)
    failures.jsonl     with --strict: the failed game that stopped the run (not counted, replayed on resume)
    aborted.jsonl      games abandoned as far as they went when the run stopped (not counted, replayed on resume)
    logs/NAME.stderr   each engine's standard error

Counting. A game counts once its record is synced into the journal. Finished games are committed in groups: one
write and one ``fsync`` for every game that finished while the previous sync was running, so a disk that takes
milliseconds to sync does not hold up the games (the next game starts while the last one is being synced). A game
that finished but was not yet synced when the arena died is played again on resume; nothing is lost or counted
twice. ``games.pgn`` and ``games.jsonl`` are written after the journal and rebuilt from it on resume.

Stopping. An SPRT decides on the games in journal order: the record that completes the deciding pair is the last
one written; games still running then are abandoned (their engines killed) and not recorded. A resumed SPRT
rebuilds its counts from the journal in the same order, so it decides exactly as an uninterrupted one. An
interrupt (Ctrl-C, SIGTERM, SIGHUP: :class:`Interrupt`) abandons the running games, syncs what had finished, and
returns; ``--resume`` plays the rest.

Engine failures. Before the first game each engine is started once and asked for a new game: an engine that
cannot start, rejects its options or refuses the variant stops the run (:class:`RunError`, exit status 3). After
that, an engine that crashes, stalls or breaks the rules loses that game with its reason and is restarted for its
next game; with ``strict`` the first such game stops the run instead (the SPRT's default).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import os
import socket
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Protocol, TextIO

from quarto_arena.protocol.notation import NotationError, format_attributes, parse_variant
from quarto_arena.protocol.rules import Variant

from .engine import Deadlines, EngineConfig, EngineError, EngineSession
from .journal import JOURNAL_NAME, Journal, JournalContents, JournalError
from .pgn import format_game
from .records import GameRecord, Termination
from .referee import MAX_ADJUDICATE, GameSpec, play_game
from .roster import config_from_dict, config_to_dict
from .schedule import STARTPOS, Format, Opening, OpeningBook, Schedule, ScheduledGame, ScheduleError, opening_from_text
from .stats import Sprt, SprtDecision, SprtModel, SprtStatus, StatsError, pentanomial_stats
from .timecontrol import DEFAULT_MARGIN_MS, TimeControl
from .transport import DEFAULT_STDERR_LIMIT, Transcript

__all__ = [
    "ABORTED_NAME",
    "CONFIG_NAME",
    "FAILURES_NAME",
    "JSONL_NAME",
    "PGN_NAME",
    "EnginePool",
    "Event",
    "GameFinished",
    "GamePlayer",
    "GameStarted",
    "Interrupt",
    "LocalPlayer",
    "Notice",
    "Run",
    "RunError",
    "RunKind",
    "RunOutcome",
    "RunSpec",
    "SprtProgress",
    "SprtTracker",
    "SprtUpdate",
    "Verdict",
    "build_spec",
    "game_spec",
    "pgn_text",
    "play_match",
    "run_workers",
]

log = logging.getLogger(__name__)

PGN_NAME: Final = "games.pgn"
JSONL_NAME: Final = "games.jsonl"
FAILURES_NAME: Final = "failures.jsonl"
ABORTED_NAME: Final = "aborted.jsonl"
CONFIG_NAME: Final = "config.json"
#: Files a run writes into its directory (``--force`` removes exactly these before starting over).
RUN_FILES: Final = (JOURNAL_NAME, PGN_NAME, JSONL_NAME, FAILURES_NAME, ABORTED_NAME, CONFIG_NAME)
#: Engines started at once by the check before the first game (a large roster must not start all at once).
_PREFLIGHT_AT_ONCE: Final = 8
_SITE: Final = socket.gethostname() or "?"


class RunError(Exception):
    """A run that cannot start or go on; one line. ``engine`` is True when an engine is to blame."""

    def __init__(self, message: str, *, engine: bool = False) -> None:
        super().__init__(message)
        self.engine = engine
        """True for an engine failure (exit status 3), False for a usage or configuration problem (2)."""


class RunKind(enum.Enum):
    """Which command a run belongs to: it decides the output, not how games are played."""

    TOURNAMENT = "tournament"  #: a round-robin or gauntlet of any number of engines
    MATCH = "match"  #: ``play``: two engines, a fixed number of games
    SPRT = "sprt"  #: two engines until the sequential test decides


class Verdict(enum.Enum):
    """How an SPRT run ended."""

    H1 = "h1"  #: NEW passes: the upper bound was reached
    H0 = "h0"  #: NEW fails (a regression, or not the improvement hoped for): the lower bound was reached
    ENGINE_FAILURE = "engine failure"  #: an engine failed and the run is not lenient
    NO_DECISION = "no decision"  #: the maximum number of games played, neither bound reached


def _variant_dict(variant: Variant) -> dict[str, str]:
    return {
        "shapes": variant.shapes.value,
        "attributes": format_attributes(variant.attributes),
        "claims": variant.claims.value,
    }


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything that defines a run; kept whole in the journal header so ``--resume`` needs no options."""

    kind: RunKind
    """The command: what the output shows."""
    engines: tuple[EngineConfig, ...]
    """The engines, in command-line (or engines-file) order; the first is the gauntlet's hero, or SPRT's NEW."""
    format: Format = Format.ROUND_ROBIN
    """Round-robin or gauntlet."""
    rounds: int = 1
    """Rounds: each repeats every encounter."""
    games: int | None = 2
    """Games per encounter per round (an even number makes whole colour-swapped pairs); None: until the SPRT
    decides."""
    concurrency: int = 1
    """Games played at the same time."""
    time_control: TimeControl = field(default_factory=lambda: TimeControl.parse("st=1"))
    """The time control of every game (an engine's own overrides it)."""
    variant: Variant = field(default_factory=Variant)
    """The rules."""
    book: OpeningBook = field(default_factory=OpeningBook)
    """The openings."""
    strict: bool = False
    """Stop at the first engine failure instead of forfeiting and going on."""
    margin_ms: int = DEFAULT_MARGIN_MS
    """Overrun tolerated before a player loses on time."""
    sprt: Sprt | None = None
    """The sequential test (SPRT runs only)."""
    rating_interval: int = 0
    """Show an interim table every this many games (0: never)."""
    table_format: str = "simple"
    """How the CLI prints tables (any tabulate format, csv, json)."""
    event: str = "quarto-arena tournament"
    """The PGN Event tag."""
    log_limit: int = DEFAULT_STDERR_LIMIT
    """Bytes of each engine's standard error kept in its log file (the cut is marked in the file)."""
    adjudicate: int | None = None
    """Adjudicate each game by the solver at this many empty squares (1..12); None: play every game out."""

    def __post_init__(self) -> None:
        if self.adjudicate is not None and not 1 <= self.adjudicate <= MAX_ADJUDICATE:
            raise RunError(f"--adjudicate takes 1 to {MAX_ADJUDICATE} empty squares, not {self.adjudicate}")
        if self.log_limit < 0:
            raise RunError(f"--log-limit cannot be negative ({self.log_limit})")
        if self.concurrency < 1:
            raise RunError(f"--concurrency must be at least 1, not {self.concurrency}")
        if self.rating_interval < 0:
            raise RunError(f"the rating interval cannot be negative ({self.rating_interval})")
        if (self.kind is RunKind.SPRT) != (self.sprt is not None):
            raise RunError("an SPRT run needs its test, and only an SPRT run has one")
        if self.kind is not RunKind.TOURNAMENT and len(self.engines) != 2:
            raise RunError(f"{self.kind.value} takes two engines, not {len(self.engines)}")

    @property
    def names(self) -> list[str]:
        """The engines' display names."""
        return [e.name for e in self.engines]

    def schedule(self) -> Schedule:
        """Every game of the run (raises ScheduleError for impossible settings)."""
        return Schedule(self.names, fmt=self.format, rounds=self.rounds, games=self.games, book=self.book)

    def to_dict(self) -> dict[str, Any]:
        """Plain msgpack/JSON types for the journal header (the inverse of :meth:`from_dict`)."""
        test = self.sprt
        return {
            "kind": self.kind.value,
            "engines": [config_to_dict(e) for e in self.engines],
            "format": self.format.value,
            "rounds": self.rounds,
            "games": self.games,
            "concurrency": self.concurrency,
            "tc": self.time_control.text,
            "variant": _variant_dict(self.variant),
            "openings": self.book.identity(),
            "strict": self.strict,
            "margin_ms": self.margin_ms,
            "sprt": None
            if test is None
            else {
                "elo0": test.elo0,
                "elo1": test.elo1,
                "alpha": test.alpha,
                "beta": test.beta,
                "model": test.model.value,
            },
            "rating_interval": self.rating_interval,
            "table_format": self.table_format,
            "event": self.event,
            "log_limit": self.log_limit,
            "adjudicate": self.adjudicate,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        """Rebuilds a spec from :meth:`to_dict`; raises :class:`RunError` naming what is wrong."""
        try:
            v = d["variant"]
            variant = parse_variant(v["shapes"], v["attributes"], v["claims"])
            o = d["openings"]
            book = OpeningBook(
                tuple(opening_from_text(str(t), variant) for t in o["openings"]),
                random_turns=int(o["random_turns"]),
                seed=int(o["seed"]),
                variant=variant,
                source=str(o["source"]),
            )
            t = d["sprt"]
            test = None if t is None else Sprt(t["elo0"], t["elo1"], t["alpha"], t["beta"], SprtModel(t["model"]))
            return cls(
                kind=RunKind(d["kind"]),
                engines=tuple(config_from_dict(e) for e in d["engines"]),
                format=Format(d["format"]),
                rounds=int(d["rounds"]),
                games=None if d["games"] is None else int(d["games"]),
                concurrency=int(d["concurrency"]),
                time_control=TimeControl.parse(str(d["tc"])),
                variant=variant,
                book=book,
                strict=bool(d["strict"]),
                margin_ms=int(d["margin_ms"]),
                sprt=test,
                rating_interval=int(d["rating_interval"]),
                table_format=str(d["table_format"]),
                event=str(d["event"]),
                log_limit=int(d.get("log_limit", DEFAULT_STDERR_LIMIT)),
                adjudicate=None if d.get("adjudicate") is None else int(d["adjudicate"]),
            )
        except KeyError as e:
            raise RunError(f"the journal's configuration lacks {e}") from None
        except (TypeError, ValueError, AttributeError, NotationError) as e:
            raise RunError(f"the journal's configuration is invalid: {e}") from None


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
    """Games now in the journal."""
    total: int | None
    """Games in the schedule (None: open-ended)."""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that is not a game: an engine failure, a dropped torn record."""

    text: str
    """One line."""
    failure: GameRecord | None = None
    """The game an engine lost by failing, when that is what the notice is about."""


@dataclass(frozen=True, slots=True)
class SprtProgress:
    """The test after a pair finished."""

    status: SprtStatus
    """LLR, bounds and decision."""
    penta: tuple[int, int, int, int, int]
    """Pair counts ``[LL, LD, WL+DD, WD, WW]`` from NEW's side."""
    wins: int
    """Games NEW won (every counted game, including the first half of a pair still being played)."""
    losses: int
    """Games NEW lost."""
    draws: int
    """Games drawn."""

    @property
    def pairs(self) -> int:
        """Pairs finished."""
        return sum(self.penta)

    def line(self) -> str:
        """One line for logs: LLR and bounds, NEW's W-L-D over all games, pentanomial counts, the Elo estimate."""
        s = self.status
        text = (
            f"LLR {s.llr:.3f} ({s.lower:.3f}, {s.upper:.3f}) | games {self.wins + self.losses + self.draws}: "
            f"W {self.wins} L {self.losses} D {self.draws} | pairs {self.pairs}: penta {list(self.penta)}"
        )
        if self.pairs >= 2:
            stats = pentanomial_stats(self.penta)
            text += f" | elo {stats.elo}, nelo {stats.nelo}"
        return text


@dataclass(frozen=True, slots=True)
class SprtUpdate:
    """A pair finished and counts: where the test stands now."""

    progress: SprtProgress
    """The test's state."""


Event = GameStarted | GameFinished | Notice | SprtUpdate


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """Where a run stands when :meth:`Run.run` returns."""

    spec: RunSpec
    """The run."""
    records: tuple[GameRecord, ...]
    """Every counted game, resumed ones included, in journal order."""
    total: int | None
    """Games in the schedule (None: open-ended)."""
    failure: GameRecord | None = None
    """With ``strict``: the game whose engine failure stopped the run (not counted)."""
    sprt: SprtProgress | None = None
    """SPRT runs: the test's state at the end."""
    interrupted: int | None = None
    """The signal that stopped the run early (SIGINT, SIGTERM, SIGHUP), if one did."""
    aborted: tuple[GameRecord, ...] = ()
    """Games abandoned as far as they went when the run stopped (not counted; played again on resume)."""

    @property
    def complete(self) -> bool:
        """True when every scheduled game is counted."""
        return self.total is not None and len(self.records) == self.total

    @property
    def verdict(self) -> Verdict | None:
        """SPRT runs: H1, H0, engine failure or no decision (None when interrupted, or not an SPRT)."""
        if self.spec.sprt is None:
            return None
        if self.failure is not None:
            return Verdict.ENGINE_FAILURE
        decision = None if self.sprt is None else self.sprt.status.decision
        if decision is SprtDecision.H1:
            return Verdict.H1
        if decision is SprtDecision.H0:
            return Verdict.H0
        if self.interrupted is not None:
            return None
        return Verdict.NO_DECISION


# ----------------------------------------------------------------------------------------------------------------
# The SPRT's stopping rule


class SprtTracker:
    """Pentanomial counts of NEW (the first engine) and the test's state, fed with games in journal order."""

    def __init__(self, test: Sprt, new: str) -> None:
        self.test = test
        self.new = new
        self._halves: dict[int, float] = {}
        self._penta = [0, 0, 0, 0, 0]
        self._wdl = [0, 0, 0]
        self.progress = SprtProgress(test.pentanomial(self._penta), (0, 0, 0, 0, 0), 0, 0, 0)
        """The test after the last complete pair."""

    @property
    def decided(self) -> bool:
        """True once a bound is reached."""
        return self.progress.status.decision is not SprtDecision.CONTINUE

    def add(self, record: GameRecord) -> SprtProgress | None:
        """Counts one game; returns the test's new state when the game completes its pair, else None."""
        score = record.result.first_score
        points = 0.5 if score is None else score if record.first == self.new else 1.0 - score
        self._wdl[0 if points == 1.0 else 1 if points == 0.0 else 2] += 1
        pair = (record.game_id - 1) // 2
        first_half = self._halves.pop(pair, None)
        if first_half is None:
            self._halves[pair] = points
            return None
        self._penta[round(2 * (first_half + points))] += 1
        a, b, c, d, e = self._penta
        self.progress = SprtProgress(self.test.pentanomial(self._penta), (a, b, c, d, e), *self._wdl)
        return self.progress


# ----------------------------------------------------------------------------------------------------------------
# Records


def pgn_text(record: GameRecord, event: str) -> str:
    """One game as PGN: the seven roster tags, then Variant, TimeControl, Termination, Opening, GameId, and who
    played: ``WhiteEngine``/``BlackEngine`` (the engine's ``id name``), ``...Author``, ``...Command`` (command line
    or endpoint) and ``...Options`` (``ID=VALUE`` separated by spaces) as far as known.

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


def build_spec(
    kind: RunKind,
    engine_words: Sequence[str],
    *,
    engines_file: Path | None = None,
    option_settings: Sequence[str] = (),
    gauntlet: bool = False,
    rounds: int = 1,
    games: int = 2,
    max_games: int = 0,
    concurrency: int = 1,
    tc: str = "st=1",
    margin_ms: int = DEFAULT_MARGIN_MS,
    shapes: str = "standard",
    attributes: str = "color,shape,height,fill",
    claims: str = "auto",
    openings_file: Path | None = None,
    random_turns: int | None = 2,
    seed: int = 0,
    strict: bool = False,
    sprt: tuple[float, float, float, float, str] | None = None,
    rating_interval: int = 0,
    table_format: str = "simple",
    log_limit: int = DEFAULT_STDERR_LIMIT,
    adjudicate: int | None = None,
) -> RunSpec:
    """A run from the command line's values; :class:`RunError` (a usage error) naming a bad one.

    ``random_turns`` None with an ``openings_file`` means the file's openings; giving both is an error.
    ``sprt`` is ``(elo0, elo1, alpha, beta, model)``; ``max_games`` (SPRT only) bounds its games (0: none).
    Unnamed ZeroMQ engines are named after their ``id name`` (they are asked).
    """
    import asyncio

    from .roster import RosterError, apply_options, name_endpoints, resolve_roster
    from .schedule import load_openings

    try:
        if openings_file is not None and random_turns is not None:
            raise RunError("give --openings FILE or --random-openings K, not both")
        variant = parse_variant(shapes, attributes, claims)
        roster = resolve_roster(engine_words, engines_file)
        configs = apply_options([w.config for w in roster], option_settings)
        if kind is not RunKind.TOURNAMENT and len(configs) != 2:
            what = "play" if kind is RunKind.MATCH else "sprt"
            raise RunError(f"{what} takes two engines, not {len(configs)}")
        control = TimeControl.parse(tc)
        if openings_file is not None:
            book = OpeningBook(tuple(load_openings(openings_file, variant)), variant=variant, source=str(openings_file))
        else:
            turns = random_turns or 0
            book = OpeningBook(
                random_turns=turns, seed=seed, variant=variant, source=f"random {turns}" if turns else STARTPOS
            )
        test = None
        if sprt is not None:
            elo0, elo1, alpha, beta, model = sprt
            if elo0 >= elo1:
                raise RunError(f"--elo0 {elo0:g} must be below --elo1 {elo1:g} (H0 is the worse hypothesis)")
            try:
                sprt_model = SprtModel(model)
            except ValueError:
                raise RunError(f"unknown --model {model!r}; choose normalized or logistic") from None
            test = Sprt(elo0, elo1, alpha, beta, sprt_model)
        explicit = {w.config.name for w in roster if w.explicit}
        if any(c.endpoint is not None and c.name not in explicit for c in configs):
            configs = asyncio.run(name_endpoints(configs, explicit))
        spec = RunSpec(
            kind=kind,
            engines=tuple(configs),
            format=Format.GAUNTLET if gauntlet else Format.ROUND_ROBIN,
            rounds=rounds,
            games=(None if not max_games else max_games + max_games % 2) if kind is RunKind.SPRT else games,
            concurrency=concurrency,
            time_control=control,
            variant=variant,
            book=book,
            strict=strict,
            margin_ms=margin_ms,
            sprt=test,
            rating_interval=rating_interval,
            table_format=table_format,
            event=f"quarto-arena {'play' if kind is RunKind.MATCH else kind.value}",
            log_limit=log_limit,
            adjudicate=adjudicate,
        )
        spec.schedule()
    except (RosterError, NotationError, ScheduleError, StatsError, ValueError) as e:
        raise RunError(str(e)) from None
    return spec


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
        log_limit: int = DEFAULT_STDERR_LIMIT,
        transcript: Transcript | None = None,
    ) -> None:
        """Sessions are created on demand; ``log_dir`` receives each engine's standard error (``log_limit`` bytes)."""
        self.configs = {e.name: e for e in engines}
        self.deadlines = deadlines
        self.log_dir = log_dir
        self.log_limit = log_limit
        self.transcript = transcript
        self._idle: dict[str, list[EngineSession]] = {e.name: [] for e in engines}
        self._all: list[EngineSession] = []

    def _new(self, name: str) -> EngineSession:
        stderr = None if self.log_dir is None else self.log_dir / f"{name}.stderr"
        session = EngineSession(
            self.configs[name],
            deadlines=self.deadlines,
            stderr_path=stderr,
            stderr_limit=self.log_limit,
            transcript=self.transcript,
        )
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

        At most a few engines start at once. Raises :class:`RunError` (an engine failure) naming every engine that
        could not start.
        """
        gate = asyncio.Semaphore(_PREFLIGHT_AT_ONCE)
        sessions = [self.acquire(name) for name in self.configs]

        async def check(session: EngineSession) -> None:
            async with gate:
                await session.start()
                await session.new_game(variant)

        results = await asyncio.gather(*(check(s) for s in sessions), return_exceptions=True)
        problems = []
        for session, result in zip(sessions, results, strict=True):
            self.release(session)
            if isinstance(result, EngineError):
                problems.append(str(result))
            elif isinstance(result, BaseException):
                raise result
        if problems:
            raise RunError("; ".join(problems), engine=True)

    async def close(self) -> None:
        """Quits every session (kill after the quit deadline) and reaps every process."""
        await asyncio.gather(*(s.quit() for s in self._all), return_exceptions=True)


class GamePlayer(Protocol):
    """Where and how a run's games are played: on this machine (:class:`LocalPlayer`), or elsewhere."""

    async def start(self, variant: Variant) -> None:
        """Checks every engine before the first game; raises :class:`RunError` (engine=True) naming the failures."""

    async def play(self, game: ScheduledGame, spec: GameSpec, on_abort: Callable[[GameRecord], None]) -> GameRecord:
        """Plays one game to its record; when cancelled, hands the game as far as it went to ``on_abort``."""
        ...

    async def close(self) -> None:
        """Ends every engine (none survives, none is left a zombie)."""


class LocalPlayer:
    """Games played here, by the referee, with engine sessions from an :class:`EnginePool`."""

    def __init__(self, pool: EnginePool) -> None:
        self.pool = pool

    async def start(self, variant: Variant) -> None:
        """:meth:`EnginePool.preflight`."""
        await self.pool.preflight(variant)

    async def play(self, game: ScheduledGame, spec: GameSpec, on_abort: Callable[[GameRecord], None]) -> GameRecord:
        """Plays the game with an idle session of each engine (restarted first if it died in its last game)."""
        first, second = self.pool.acquire(game.first), self.pool.acquire(game.second)
        try:
            return await play_game(first, second, spec, on_abort=on_abort)
        finally:
            self.pool.release(first)
            self.pool.release(second)

    async def close(self) -> None:
        """:meth:`EnginePool.close`."""
        await self.pool.close()


# ----------------------------------------------------------------------------------------------------------------
# The runner


class Interrupt:
    """A request to stop a run early, with the signal that asked for it; call :meth:`set` from a signal handler."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        """Set once a stop is requested."""
        self.signum: int | None = None
        """The first signal that asked (SIGINT, SIGTERM, SIGHUP)."""

    def set(self, signum: int) -> None:
        """Requests the stop (the first signal is the one reported)."""
        if self.signum is None:
            self.signum = signum
        self.event.set()


def game_spec(game: ScheduledGame, spec: RunSpec) -> GameSpec:
    """The referee's view of a scheduled game."""
    opening = game.opening
    return GameSpec(
        variant=spec.variant,
        time_control=spec.time_control,
        margin_ms=spec.margin_ms,
        start=None if opening.start == STARTPOS else opening.start,
        opening=opening.turns,
        game_id=game.game_id,
        round=game.round,
        adjudicate=spec.adjudicate,
    )


class _Committer:
    """Group commit: finished games wait here until one write and one sync put them all in the journal.

    ``on_counted`` is called for each game, in order, once it is on disk. Without a journal (an in-memory run) a
    game counts at once.
    """

    def __init__(self, journal: Journal | None, on_counted: Callable[[GameRecord], None]) -> None:
        self._journal = journal
        self._on_counted = on_counted
        self._waiting: list[GameRecord] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    def submit(self, record: GameRecord) -> None:
        """Queues a finished game; raises the journal's error if a previous sync failed."""
        if self._error is not None:
            raise self._error
        if self._journal is None:
            self._on_counted(record)
            return
        self._waiting.append(record)
        self._idle.clear()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        assert self._journal is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._waiting = self._waiting, []
            if batch:
                try:
                    # In a thread, so that the other games' clocks keep going during the sync.
                    await asyncio.to_thread(self._journal.append_many, batch)
                except BaseException as e:
                    self._error = e
                    self._idle.set()
                    raise
                for record in batch:
                    self._on_counted(record)
            if not self._waiting:
                self._idle.set()

    async def drain(self) -> None:
        """Waits until every submitted game is synced and counted; raises the journal's error."""
        if self._task is not None and not self._task.done():
            await asyncio.shield(self._wait_idle())
        if self._error is not None:
            raise self._error

    async def _wait_idle(self) -> None:
        while not self._idle.is_set():
            assert self._task is not None
            await asyncio.wait([asyncio.ensure_future(self._idle.wait()), self._task], return_when="FIRST_COMPLETED")
            if self._task.done():
                return

    async def close(self) -> None:
        """Stops the loop (after :meth:`drain`)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


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


class Run:
    """A run bound to its directory (or to memory). Build it with :meth:`create`, :meth:`resume` or
    :meth:`in_memory`, then :meth:`run`; close it when done (or use it as a context manager)."""

    def __init__(
        self,
        spec: RunSpec,
        directory: Path | None,
        journal: Journal | None,
        contents: JournalContents | None,
        *,
        deadlines: Deadlines | None = None,
        transcript: Transcript | None = None,
        log_dir: Path | None = None,
    ) -> None:
        """Use :meth:`create`, :meth:`resume` or :meth:`in_memory`."""
        self.spec = spec
        self.log_dir = log_dir if directory is None else directory / "logs"
        self.directory = directory
        self.journal = journal
        try:
            self.schedule = spec.schedule()
        except ScheduleError as e:
            raise RunError(str(e)) from None
        self.deadlines = deadlines
        self.transcript = transcript
        self.records: dict[int, GameRecord] = dict(contents.records) if contents else {}
        self.torn = None if contents is None else contents.torn
        self.tracker = None if spec.sprt is None else SprtTracker(spec.sprt, spec.names[0])
        total = self.schedule.total
        for game_id, record in self.records.items():
            if total is not None and not 1 <= game_id <= total:
                raise RunError(f"{journal.path if journal else 'journal'}: game {game_id} is not in the schedule")
            if self.tracker is not None:
                self.tracker.add(record)

    @classmethod
    def create(
        cls,
        spec: RunSpec,
        directory: Path,
        *,
        force: bool = False,
        deadlines: Deadlines | None = None,
        transcript: Transcript | None = None,
    ) -> Run:
        """Starts a new run in ``directory`` (created if needed). A directory that holds a run already is refused,
        unless ``force``: then its files (:data:`RUN_FILES`, logs) are deleted first."""
        try:
            schedule = spec.schedule()
        except ScheduleError as e:
            raise RunError(str(e)) from None
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunError(f"{directory}: cannot create the directory: {e.strerror}") from None
        if not directory.is_dir():
            raise RunError(f"{directory}: not a directory")
        journal_path = directory / JOURNAL_NAME
        if journal_path.exists() and not force:
            raise RunError(
                f"{directory} holds a run already: continue it with --resume {directory}, start it over with --force,"
                " or choose another --out"
            )
        try:
            if force:
                _clear(directory)
            config = spec.to_dict()
            config["schedule"] = {"games": schedule.total, "digest": schedule.digest()}
            journal = Journal.create(journal_path, config)
            _write_atomic(directory / CONFIG_NAME, json.dumps(config, indent=2) + "\n")
        except JournalError as e:
            raise RunError(str(e)) from None
        except OSError as e:
            raise RunError(f"{directory}: {e.strerror or e}") from None
        return cls(spec, directory, journal, None, deadlines=deadlines, transcript=transcript)

    @classmethod
    def resume(
        cls, directory: Path, *, deadlines: Deadlines | None = None, transcript: Transcript | None = None
    ) -> Run:
        """Reopens the run in ``directory`` from its journal (torn tail dropped, schedule checked)."""
        if not directory.is_dir():
            raise RunError(f"{directory}: no such run directory")
        try:
            journal, contents = Journal.open(directory / JOURNAL_NAME)
        except JournalError as e:
            raise RunError(str(e)) from None
        try:
            spec = RunSpec.from_dict(contents.config)
            try:
                schedule = spec.schedule()
            except ScheduleError as e:
                raise RunError(f"{journal.path}: {e}") from None
            kept = contents.config.get("schedule", {})
            if kept.get("digest") != schedule.digest() or kept.get("games") != schedule.total:
                raise RunError(
                    f"{journal.path}: this quarto-arena builds a different schedule from the journal's configuration;"
                    " resume it with the version that started it"
                )
            return cls(spec, directory, journal, contents, deadlines=deadlines, transcript=transcript)
        except BaseException:
            journal.close()
            raise

    @classmethod
    def in_memory(
        cls,
        spec: RunSpec,
        *,
        deadlines: Deadlines | None = None,
        transcript: Transcript | None = None,
        log_dir: Path | None = None,
    ) -> Run:
        """A run that keeps its games in memory only (no directory, no journal, no resume): for tests and tools.

        ``log_dir``, if given, receives the engines' standard error.
        """
        return cls(spec, None, None, None, deadlines=deadlines, transcript=transcript, log_dir=log_dir)

    @property
    def total(self) -> int | None:
        """Games in the schedule (None: open-ended)."""
        return self.schedule.total

    def decided(self) -> bool:
        """True when the run has nothing left to play: every game counted, or the SPRT decided."""
        if self.tracker is not None and self.tracker.decided:
            return True
        return self.total is not None and len(self.records) >= self.total

    def pending(self) -> Iterator[ScheduledGame]:
        """Scheduled games the journal does not hold yet, in schedule order (lazily: nothing is listed ahead)."""
        return (g for g in self.schedule if g.game_id not in self.records)

    def _ordered_records(self) -> list[GameRecord]:
        return list(self.records.values())

    def _rewrite_outputs(self) -> None:
        """Rebuilds the PGN and JSON Lines files from the journal (the truth), replacing whatever a kill left."""
        assert self.directory is not None
        records = self._ordered_records()
        _write_atomic(self.directory / PGN_NAME, "\n".join(pgn_text(r, self.spec.event) for r in records))
        _write_atomic(self.directory / JSONL_NAME, "".join(json.dumps(r.to_dict()) + "\n" for r in records))

    def outcome(self, failure: GameRecord | None = None, interrupted: int | None = None) -> RunOutcome:
        """Where the run stands now."""
        progress = None if self.tracker is None else self.tracker.progress
        return RunOutcome(self.spec, tuple(self._ordered_records()), self.total, failure, progress, interrupted)

    async def run(
        self,
        on_event: Callable[[Event], None] | None = None,
        *,
        interrupt: Interrupt | None = None,
        preflight: bool = True,
        player: GamePlayer | None = None,
    ) -> RunOutcome:
        """Plays every missing game, ``concurrency`` at a time, until all are counted, the SPRT decides, an engine
        fails under ``strict``, or ``interrupt`` is set.

        Games are played by ``player`` (by default a :class:`LocalPlayer` on this machine). Raises
        :class:`RunError` when an engine cannot be started before the first game (``preflight=False`` leaves that
        to the first game, which a failed start then loses) or when the journal cannot be written. Whatever happens
        (an error, an interrupt, cancellation), every engine process is killed and reaped, and every finished game
        is synced, before this returns. Games abandoned when the run stopped are in the outcome's ``aborted`` (and
        in ``aborted.jsonl``): not counted, played again on resume.
        """
        emit = on_event or (lambda _event: None)
        if self.torn is not None:
            emit(Notice(f"journal: dropped a torn last record ({self.torn}); that game will be played again"))
        log_dir = self.log_dir
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
        if self.directory is not None:
            self._rewrite_outputs()
        if self.decided():
            return self.outcome()
        if player is None:
            pool = EnginePool(
                self.spec.engines,
                deadlines=self.deadlines,
                log_dir=log_dir,
                log_limit=self.spec.log_limit,
                transcript=self.transcript,
            )
            player = LocalPlayer(pool)
        pending = self.pending()
        aborted: list[GameRecord] = []
        stop = asyncio.Event()
        failure: GameRecord | None = None
        pgn: TextIO | None = None
        jsonl: TextIO | None = None
        if self.directory is not None:
            pgn = open(self.directory / PGN_NAME, "a", encoding="utf-8")  # noqa: SIM115 - closed below
            jsonl = open(self.directory / JSONL_NAME, "a", encoding="utf-8")  # noqa: SIM115
        updates: dict[int, SprtProgress] = {}

        def counted(record: GameRecord) -> None:
            self.records[record.game_id] = record
            if pgn is not None and jsonl is not None:
                # Flushed, not synced: the journal can rebuild these files.
                pgn.write(("\n" if pgn.tell() else "") + pgn_text(record, self.spec.event))
                pgn.flush()
                jsonl.write(json.dumps(record.to_dict()) + "\n")
                jsonl.flush()
            emit(GameFinished(record, len(self.records), self.total))
            if (update := updates.pop(record.game_id, None)) is not None:
                emit(SprtUpdate(update))

        committer = _Committer(self.journal, counted)

        async def worker() -> None:
            nonlocal failure
            for game in pending:
                if stop.is_set():
                    return
                emit(GameStarted(game))
                record = await player.play(game, game_spec(game, self.spec), aborted.append)
                if stop.is_set():
                    late = "finished after the run stopped: not counted"
                    aborted.append(replace(record, termination=Termination.ABORTED, detail=late))
                    return  # decided or stopped while this game ran: it is not counted
                if record.termination.is_failure:
                    emit(Notice(f"game {game.game_id}: {record.termination.value}: {record.detail}", record))
                    # An engine that refuses newgame or setoption cannot play on (SPEC §5.4): always a stop.
                    if self.spec.strict or record.termination is Termination.ENGINE_ERROR:
                        failure = failure or record
                        stop.set()
                        return
                if self.tracker is not None and (update := self.tracker.add(record)) is not None:
                    updates[record.game_id] = update
                    if self.tracker.decided:
                        stop.set()  # this is the last game written: the others running are abandoned
                committer.submit(record)

        watcher = None
        if interrupt is not None:
            watcher = asyncio.create_task(_forward(interrupt.event, stop))
        try:
            if preflight:
                await player.start(self.spec.variant)
            count = self.spec.concurrency if self.total is None else min(self.spec.concurrency, self.total)
            await run_workers(worker, count, stop)
        finally:
            try:
                # Shielded: a second Ctrl-C during the clean-up must neither lose a finished game nor leave an
                # engine behind.
                await asyncio.shield(_finish(committer, player))
            finally:
                if watcher is not None:
                    watcher.cancel()
                for f in (pgn, jsonl):
                    if f is not None:
                        f.close()
        if self.directory is not None:
            for name, records in ((FAILURES_NAME, [failure] if failure else []), (ABORTED_NAME, aborted)):
                if records:
                    with open(self.directory / name, "a", encoding="utf-8") as f:
                        f.writelines(json.dumps(r.to_dict()) + "\n" for r in records)
        signum = None if interrupt is None else interrupt.signum
        return replace(self.outcome(failure, signum), aborted=tuple(aborted))

    def close(self) -> None:
        """Releases the journal."""
        if self.journal is not None:
            self.journal.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _forward(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


async def _finish(committer: _Committer, player: GamePlayer) -> None:
    try:
        await committer.drain()
    finally:
        await committer.close()
        await player.close()


def _clear(directory: Path) -> None:
    """Deletes what a run wrote into ``directory`` (``--force``); a journal in use is left alone (JournalError)."""
    Journal.discard(directory / JOURNAL_NAME)
    for name in RUN_FILES[1:]:
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
    logs = directory / "logs"
    if logs.is_dir():
        for entry in logs.iterdir():
            if entry.is_file() and entry.suffix == ".stderr":
                entry.unlink()


async def play_match(
    a: EngineConfig,
    b: EngineConfig,
    games: int,
    template: GameSpec,
    *,
    openings: Sequence[Opening] = (),
    deadlines: Deadlines | None = None,
    log_dir: Path | None = None,
    log_limit: int = DEFAULT_STDERR_LIMIT,
    on_game: Callable[[GameRecord], None] | None = None,
    require_start: bool = True,
) -> list[GameRecord]:
    """``games`` games between two engines in memory, ``a`` giving first in odd-numbered games (for tests and tools).

    Pair ``k`` uses ``openings[k]`` (cycling). Both engines are started first and a failure there raises
    :class:`RunError` (with ``require_start=False`` the first game starts them instead, and a failed start loses
    it). ``on_game`` sees every game as it is counted.
    """
    spec = RunSpec(
        RunKind.MATCH,
        (a, b),
        games=games,
        time_control=template.time_control,
        variant=template.variant,
        book=OpeningBook(tuple(openings)),
        margin_ms=template.margin_ms,
        log_limit=log_limit,
        adjudicate=template.adjudicate,
    )
    with Run.in_memory(spec, deadlines=deadlines, log_dir=log_dir) as run:

        def event(e: Event) -> None:
            if isinstance(e, GameFinished) and on_game is not None:
                on_game(e.record)

        outcome = await run.run(event, preflight=require_start)
    return list(outcome.records)
