"""The one game runner behind ``tournament``, ``play`` and ``sprt``: a schedule, J games at once, a journal, resume.

Data flow: :class:`RunSpec` -> :class:`~quarto_arena.arena.schedule.Schedule` (lazy) -> :class:`Run` (an asyncio
runner over an :class:`EnginePool`) -> :func:`~quarto_arena.arena.referee.play_game` -> GameRecord -> journal, PGN,
JSON Lines. ``play`` is a two-engine schedule; ``sprt`` is a two-engine schedule, open-ended or bounded by
``--max-games``, with a stopping rule (:class:`SprtTracker`). Nothing here prints: the runner reports
:class:`GameStarted`, :class:`GameEnded`, :class:`GameFinished`, :class:`SprtUpdate` and :class:`Notice` events to a
callback.

A run directory holds::

    journal.qaj        the truth: configuration + one record per finished game (see arena/journal.py)
    config.json        the configuration, for people (the journal's copy is the one a resume reads)
    games.pgn          every counted game as PGN, in journal order
    games.jsonl        every counted game as one JSON object (turns, times, scores, engine identities)
    failures.jsonl     with --strict: the failed game that stopped the run (not counted, replayed on resume)
    aborted.jsonl      games abandoned as far as they went when the run stopped (not counted, replayed on resume)
    logs/NAME.stderr   each engine's standard error

Counting. A game counts once its record is synced into the journal. Finished games are committed in groups: one
write and one ``fsync`` for the games that finish within 50 ms of each other (``commit.WINDOW_S``: a count, and the
progress line, may wait that long) and for every game that finished while the previous sync was running, so a disk
that takes milliseconds to sync does not hold up the games (the next game starts while the last one is being
synced). :class:`Playing` decides what becomes of each game that ends, with the ordering guarantees written where
they are enforced. A game that finished but was not yet synced when the arena died is played again on resume;
nothing is lost or counted twice. ``games.pgn`` and ``games.jsonl`` are written after the journal and rebuilt from
it on resume.

Stopping. An SPRT decides on the games in journal order: the record that completes the deciding pair is the last
one written; games still running then are abandoned (their engines killed) and not recorded. A resumed SPRT
rebuilds its counts from the journal in the same order, so it decides exactly as an uninterrupted one. An
interrupt (Ctrl-C, SIGTERM, SIGHUP: :class:`Interrupt`) abandons the running games, syncs what had finished, and
returns; ``--resume`` plays the rest.

Engine failures. Before the first game each engine is started once and asked for a new game: an engine that
cannot start, rejects its options or refuses the variant stops the run (:class:`RunError`, exit status 3). After
that, an engine that crashes, stalls or breaks the rules loses that game with its reason and is restarted for its
next game; with ``strict`` the first such game stops the run instead (the SPRT's default). The arena's own
shortage (open files, memory, disk: :class:`~quarto_arena.arena.errors.ArenaFault`, exit status 5) is never scored
against an engine: the game in flight goes to ``aborted.jsonl`` and the run stops, to be resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TextIO

from ..engine import Deadlines, EngineConfig
from ..errors import ArenaFault
from ..journal import JOURNAL_NAME, Journal, JournalContents, JournalError
from ..pgn import pgn_text
from ..records import GameRecord, Termination, json_line
from ..referee import GameSpec
from ..schedule import Opening, OpeningBook, ScheduledGame, ScheduleError
from ..settings import GameSettings
from ..transport import DEFAULT_STDERR_LIMIT, Transcript
from .commit import Committer
from .events import Event, GameEnded, GameFinished, GameStarted, Notice, RunOutcome, SprtProgress, SprtUpdate
from .players import EnginePool, EnginesOf, GamePlayer, LocalPlayer, game_spec
from .spec import RunError, RunKind, RunSpec
from .sprt import SprtTracker

PGN_NAME: Final = "games.pgn"
JSONL_NAME: Final = "games.jsonl"
FAILURES_NAME: Final = "failures.jsonl"
ABORTED_NAME: Final = "aborted.jsonl"
CONFIG_NAME: Final = "config.json"
#: Files a run writes into its directory (``--force`` removes exactly these before starting over).
RUN_FILES: Final = (JOURNAL_NAME, PGN_NAME, JSONL_NAME, FAILURES_NAME, ABORTED_NAME, CONFIG_NAME)


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
        self.header: dict[str, Any] = {} if contents is None else contents.config
        """The configuration the journal's header holds: the spec's, the schedule's identity, and whatever was
        attached to it (:meth:`create`)."""
        self.replaced_unplayed = False
        """True when :meth:`create` took over a directory whose run had counted no game (it failed before)."""
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
        attached: Mapping[str, Any] | None = None,
    ) -> Run:
        """Starts a new run in ``directory`` (created if needed). A directory that holds a run already is refused,
        unless ``force``: then its files (:data:`RUN_FILES`, logs) are deleted first. ``attached`` is kept in the
        journal's header beside the spec, under keys of its own (what a tune adds to a run: ``{"tune": ...}``), read
        back as :attr:`header` by :meth:`resume`."""
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
        unplayed = False
        if journal_path.exists() and not force:
            try:
                unplayed = Journal.discard_if_unplayed(journal_path)
            except JournalError as e:
                raise RunError(str(e)) from None
            if not unplayed:
                raise RunError(
                    f"{directory} holds a run already: continue it with --resume {directory}, start it over with"
                    " --force, or choose another --out"
                )
        try:
            if force or unplayed:
                _clear(directory)
            config = {**spec.to_dict(), **(attached or {})}
            config["schedule"] = {"games": schedule.total, "digest": schedule.digest()}
            journal = Journal.create(journal_path, config)
            _write_atomic(directory / CONFIG_NAME, json.dumps(config, indent=2) + "\n")
        except JournalError as e:
            raise RunError(str(e)) from None
        except OSError as e:
            raise RunError(f"{directory}: {e.strerror or e}") from None
        run = cls(spec, directory, journal, None, deadlines=deadlines, transcript=transcript)
        run.header = config
        run.replaced_unplayed = unplayed
        return run

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
        _write_atomic(self.directory / JSONL_NAME, "".join(json_line(r) + "\n" for r in records))

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
        turns: bool = False,
        concurrency: int | None = None,
        engines_of: EnginesOf | None = None,
    ) -> RunOutcome:
        """Plays every missing game, ``concurrency`` at a time, until all are counted, the SPRT decides, an engine
        fails under ``strict``, or ``interrupt`` is set.

        Games are played by ``player`` (by default a :class:`LocalPlayer` on this machine; with ``turns`` it also
        reports every turn as a :class:`TurnPlayed` event, for a live view; with ``engines_of``, each game's engines
        take the options it says: a tune's), ``concurrency`` at a time when given (a player elsewhere knows how many
        it can play at once), else the spec's. Raises
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
            player = LocalPlayer(pool, on_turn=emit if turns else None, engines_of=engines_of)
        elif turns and isinstance(player, LocalPlayer) and player.on_turn is None:
            player.on_turn = emit  # a player built elsewhere on this machine (a server's) reports its turns too
        playing = Playing(self, player, emit, listened=on_event is not None)
        watcher = None
        if interrupt is not None:
            watcher = asyncio.create_task(_forward(interrupt.event, playing.stop))
        try:
            if not preflight or await _unless_stopped(player.start(self.spec.game.variant), playing.stop):
                count = concurrency or self.spec.concurrency
                count = count if self.total is None else min(count, self.total)
                await run_workers(playing.worker, count, playing.stop)
        finally:
            try:
                # Shielded: a second Ctrl-C during the clean-up must neither lose a finished game nor leave an
                # engine behind.
                await asyncio.shield(_finish(playing.committer, player))
            finally:
                if watcher is not None:
                    watcher.cancel()
                playing.close()
        playing.keep_apart()
        if playing.fault is not None:
            raise playing.fault
        signum = None if interrupt is None else interrupt.signum
        return replace(self.outcome(playing.failure, signum), aborted=tuple(playing.aborted))

    def close(self) -> None:
        """Releases the journal."""
        if self.journal is not None:
            self.journal.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Playing:
    """One call of :meth:`Run.run`: what its workers share, and what becomes of each game that ends (cutechess's
    ``onGameFinished``): it is :meth:`counted`, :meth:`abandoned`, or it is the :meth:`failed` game that stops the
    run (:meth:`faulted` when the arena itself failed), and :meth:`decide` stops an SPRT.

    The ordering guarantees, each enforced where it is written: a game is counted only once the journal holds it
    (:class:`~.commit.Committer`, which waits up to :data:`~.commit.WINDOW_S` for other games to share the sync);
    nothing ends after the stop is counted (:meth:`game_ended`); the SPRT's deciding record is the last one
    submitted (:meth:`submit`).
    """

    def __init__(self, run: Run, player: GamePlayer, emit: Callable[[Event], None], *, listened: bool = True) -> None:
        self.run = run
        self.player = player
        self.emit = emit
        self.listened = listened
        """Whether anyone receives the events: the three of every game (started, ended, finished) are made only
        then (a run without a listener, a benchmark's or a library caller's, would make them for nobody)."""
        self.pending = run.pending()
        """The games left to play, shared by the workers (each takes the next)."""
        self.stop = asyncio.Event()
        """Set when no more game may start or count: an interrupt, a failure under ``strict``, the SPRT's decision."""
        self.failure: GameRecord | None = None
        """The failed game that stopped the run (``strict``, or an engine that refuses to play on)."""
        self.fault: ArenaFault | None = None
        """The arena's own failure that stopped the run (raised by :meth:`Run.run` once everything is closed)."""
        self.aborted: list[GameRecord] = []
        """Games abandoned: cut short by the stop, or finished after it."""
        self.updates: dict[int, SprtProgress] = {}
        """The SPRT's state after a game, reported once that game is counted."""
        self.committer = Committer(run.journal, self.counted)
        self.pgn: TextIO | None = None
        self.jsonl: TextIO | None = None
        if run.directory is not None:
            self.pgn = open(run.directory / PGN_NAME, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self.jsonl = open(run.directory / JSONL_NAME, "a", encoding="utf-8")  # noqa: SIM115
        self._pgn_blank = self.pgn is not None and self.pgn.tell() > 0
        """Whether the next PGN game needs a blank line before it (asked of the file once: ``tell`` is slow)."""
        self._flush_due = False

    async def worker(self) -> None:
        """Plays the next pending game until none is left or the run stops."""
        for game in self.pending:
            if self.stop.is_set():
                return
            if self.listened:
                self.emit(GameStarted(game))
            try:
                record = await self.player.play(game, game_spec(game, self.run.spec), self.aborted.append)
            except ArenaFault as e:
                if self.listened:
                    self.emit(GameEnded(game))
                self.faulted(e)
                return
            if self.listened:
                self.emit(GameEnded(game))
            if not self.game_ended(record):
                return

    def game_ended(self, record: GameRecord) -> bool:
        """What becomes of a game that ended; False when its worker is to stop."""
        if self.stop.is_set():
            # Decided or stopped while this game ran: it is not counted. The check and the submit below happen in
            # one step of the event loop, so no game can count after the stop.
            self.abandoned(record, "finished after the run stopped: not counted")
            return False
        if record.termination.is_failure:
            self.emit(Notice(f"game {record.game_id}: {record.termination.value}: {record.detail}", record))
            # An engine that refuses newgame or setoption cannot play on (SPEC §5.4): always a stop.
            if self.run.spec.strict or record.termination is Termination.ENGINE_ERROR:
                self.failed(record)
                return False
        self.submit(record)
        return True

    def submit(self, record: GameRecord) -> None:
        """Hands a finished game to the committer (it counts once synced); the SPRT sees it first."""
        tracker = self.run.tracker
        if tracker is not None and (update := tracker.add(record)) is not None:
            self.updates[record.game_id] = update
            if tracker.decided:
                # Before the submit: the deciding record is the last one written, and a resumed SPRT, which
                # rebuilds its counts from the journal in order, decides on the same record.
                self.decide()
        self.committer.submit(record)

    def decide(self) -> None:
        """The SPRT has decided: the games still running are abandoned."""
        self.stop.set()

    def failed(self, record: GameRecord) -> None:
        """A failed game stops the run (the first one is reported; it is kept in ``failures.jsonl``)."""
        self.failure = self.failure or record
        self.stop.set()

    def faulted(self, fault: ArenaFault) -> None:
        """The arena's own failure: no engine is scored for it; the game is kept apart and played again on resume,
        and the run stops."""
        if isinstance(fault.record, GameRecord):
            self.aborted.append(fault.record)
        self.fault = self.fault or fault
        self.stop.set()

    def abandoned(self, record: GameRecord, why: str) -> None:
        """A game that finished but is not counted (kept in ``aborted.jsonl``, played again on resume)."""
        self.aborted.append(replace(record, termination=Termination.ABORTED, detail=why))

    def counted(self, record: GameRecord, data: Mapping[str, Any] | None = None) -> None:
        """The committer's call once ``record`` is in the journal (``data``: its ``to_dict()`` as written there): it
        counts, in the outputs and in the events."""
        run = self.run
        run.records[record.game_id] = record
        if self.pgn is not None and self.jsonl is not None:
            # Flushed, not synced: the journal can rebuild these files (a resume does). Flushed once the committer
            # has counted its whole batch (call_soon runs after it), not once per game: two writes per sync.
            try:
                self.pgn.write(("\n" if self._pgn_blank else "") + pgn_text(record, run.spec.event))
                self._pgn_blank = True
                self.jsonl.write(json_line(record, data) + "\n")
            except OSError as e:
                self._unwritable(e)
            else:
                if not self._flush_due:
                    self._flush_due = True
                    try:
                        asyncio.get_running_loop().call_soon(self.flush)
                    except RuntimeError:  # counted outside the loop: at once
                        self.flush()
        if self.listened:
            self.emit(GameFinished(record, len(run.records), run.total))
        if (update := self.updates.pop(record.game_id, None)) is not None:
            self.emit(SprtUpdate(update))

    def flush(self) -> None:
        """Flushes the PGN and JSON Lines files (what has been counted so far)."""
        self._flush_due = False
        try:
            for f in (self.pgn, self.jsonl):
                if f is not None and not f.closed:
                    f.flush()
        except OSError as e:
            self._unwritable(e)

    def close(self) -> None:
        """Closes the PGN and JSON Lines files."""
        for f in (self.pgn, self.jsonl):
            if f is not None:
                try:
                    f.close()
                except OSError as e:  # its last flush: a close still releases the descriptor
                    self._unwritable(e)

    def _unwritable(self, error: OSError) -> None:
        """The PGN or JSON Lines file cannot be written (a full disk, say): the run stops as for the journal, with
        the arena's own status, and writes neither file any more. No game is lost: each counted game is in the
        journal, from which a resume writes both files again."""
        files = [f for f in (self.pgn, self.jsonl) if f is not None]
        if not files:
            return
        self.pgn = self.jsonl = None
        for f in files:
            with contextlib.suppress(OSError):  # its last flush fails again, but the descriptor is released
                f.close()
        where = self.run.directory / PGN_NAME if self.run.directory is not None else PGN_NAME
        self.faulted(ArenaFault(f"cannot write {where} and {JSONL_NAME}: {error.strerror or error}"))

    def keep_apart(self) -> None:
        """Writes the failed and the abandoned games beside the journal (not counted; played again on resume)."""
        directory = self.run.directory
        if directory is None:
            return
        for name, records in ((FAILURES_NAME, [self.failure] if self.failure else []), (ABORTED_NAME, self.aborted)):
            if records:
                with open(directory / name, "a", encoding="utf-8") as f:
                    f.writelines(json_line(r) + "\n" for r in records)


async def _unless_stopped(work: Coroutine[Any, Any, None], stop: asyncio.Event) -> bool:
    """Runs ``work`` unless ``stop`` is set first (then ``work`` is cancelled); True when it ran to its end.

    The check before the first game may take long (engines that start slowly, remote bots that are waited for): an
    interrupt must not wait for it.
    """
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((task, stopped), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        return False
    task.result()  # its error, if it failed
    return True


async def _forward(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


async def _finish(committer: Committer, player: GamePlayer) -> None:
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
    transcript: Transcript | None = None,
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
        game=GameSettings(
            template.time_control,
            template.variant,
            OpeningBook(tuple(openings)),
            template.margin_ms,
            template.adjudicate,
        ),
        log_limit=log_limit,
    )
    with Run.in_memory(spec, deadlines=deadlines, log_dir=log_dir, transcript=transcript) as run:

        def event(e: Event) -> None:
            if isinstance(e, GameFinished) and on_game is not None:
                on_game(e.record)

        outcome = await run.run(event, preflight=require_start)
    return list(outcome.records)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
