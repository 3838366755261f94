"""``analyse FILE.pgn`` at the size of a night's run: the games streamed, analysed in worker processes, written in
file order, and an analysis that was stopped continued where it stopped.

- **Memory** follows the games in flight, not the file: games are read one at a time (:func:`.pgn.read_games`), each
  worker holds at most :data:`IN_FLIGHT` of them, the per-engine counts are kept as they come (:class:`Tally`), and
  a game is written as soon as the games before it are.
- **Each position solved once**: what is proven of a position (its value; at a mistake, its best turns) is kept by
  its canonical form in the worker's analyser (:class:`.analysis.Analyser`). A game whose first analysed position is
  one met before (the same up to symmetry) goes to the worker that met it, which knows its value and, for a game
  played on the same way, the values of the positions that follow; any other game goes to the worker with the fewest
  games in hand.
- **Stopped and continued**: while it runs the outputs are ``NAME.analysis.pgn.part`` and ``NAME.analysis.jsonl.part``
  with the options in ``NAME.analysis.resume.json``; they become ``NAME.analysis.pgn`` and ``.jsonl`` when the last
  game is written. An analysis stopped (Ctrl-C, SIGTERM: :func:`analyse_file` returns what was done) leaves them;
  ``resume=True`` reads the ``.jsonl.part`` back (its complete lines; a cut last line is analysed again), writes the
  ``.pgn.part`` again from it, and goes on with the next game. Ended by an error, an analysis removes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from quarto_arena.protocol.notation import NotationError
from quarto_arena.protocol.rules import Variant
from quarto_arena.protocol.solver import CPUS, Limits, Value, Verdict
from quarto_arena.protocol.symmetry import canonical_key

from .analysis import (
    CACHED_POSITIONS,
    Analyser,
    AnalysisError,
    EngineSummary,
    GameAnalysis,
    Replay,
    Tally,
    TurnAnalysis,
    annotated_pgn,
    game_json,
)
from .pgn import PgnGame, read_games

__all__ = ["IN_FLIGHT", "FileAnalysis", "Outputs", "analyse_file", "count_games"]

IN_FLIGHT: Final = 8
"""Games given to one worker process and not yet written back, at most."""
_WAIT: Final = 0.5  # s between two looks at whether a silent worker still lives
#: The signals that stop an analysis (SIGINT, SIGTERM): a worker has them blocked until its own handlers are set.
_STOPS: Final = frozenset({signal.SIGINT, signal.SIGTERM})


@dataclass(frozen=True, slots=True)
class Outputs:
    """Where the analysis of one PGN file goes."""

    pgn: Path
    """``NAME.analysis.pgn``: the games, each analysed turn's comment with its value."""
    jsonl: Path
    """``NAME.analysis.jsonl``: one object per game."""

    @classmethod
    def of(cls, path: Path, directory: Path | None = None) -> Outputs:
        """The outputs of ``path``, in ``directory`` (default: beside it)."""
        directory = directory or path.parent
        stem = path.name[: -len(path.suffix)] if path.suffix else path.name
        return cls(directory / f"{stem}.analysis.pgn", directory / f"{stem}.analysis.jsonl")

    @property
    def pgn_part(self) -> Path:
        """The PGN while the analysis runs, or after it was stopped."""
        return self.pgn.with_name(self.pgn.name + ".part")

    @property
    def jsonl_part(self) -> Path:
        """The JSON Lines while the analysis runs, or after it was stopped."""
        return self.jsonl.with_name(self.jsonl.name + ".part")

    @property
    def settings(self) -> Path:
        """The options of a stopped analysis, for ``--resume``."""
        return self.jsonl.with_name(self.jsonl.name.removesuffix(".jsonl") + ".resume.json")


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    """What :func:`analyse_file` did."""

    outputs: Outputs
    """Where it wrote (the ``.part`` files when not complete)."""
    games: int
    """Games analysed and written, those of a resumed analysis included."""
    resumed: int
    """Of those, the games a stopped analysis had done."""
    summaries: list[EngineSummary]
    """Per engine, over every game written."""
    resumed_mistakes: int
    """Of the mistakes counted in ``summaries``, those of the games a stopped analysis had done."""
    stopped_by: int | None
    """The signal (SIGINT, SIGTERM) that stopped it before the last game, when one did: the ``.part`` files hold
    what was done."""
    solved: int
    """First positions solved."""
    reused: int
    """First positions known from another game."""


def count_games(path: Path) -> int:
    """The games of a PGN file, read through once (a bad file's :class:`~.pgn.PgnError` comes before any analysis)."""
    return sum(1 for _ in read_games(path))


def analyse_file(
    path: Path,
    variant: Variant,
    from_empties: int,
    directory: Path | None = None,
    *,
    seconds: float | None = None,
    jobs: int = 1,
    resume: bool = False,
    on_game: Callable[[int, GameAnalysis], None] | None = None,
    on_resumed: Callable[[int, int], None] | None = None,
) -> FileAnalysis:
    """Analyses every game of ``path`` (``variant`` where a game has no Variant tag) into :class:`Outputs`, in file
    order, ``jobs`` worker processes at once (1: in this process); ``on_game(index, analysis)`` after each game is
    written, ``on_resumed(games, mistakes)`` once the games of a resumed analysis are read back.

    SIGINT or SIGTERM stop it: it returns with ``stopped_by`` set (the files end with a whole game). Raises
    :class:`AnalysisError` (a game that cannot be replayed, a ``resume`` that does not match), :class:`~.pgn.PgnError`
    or OSError.
    """
    outputs = Outputs.of(path, directory)
    outputs.pgn.parent.mkdir(parents=True, exist_ok=True)
    settings = {"from": from_empties, "time": seconds, "variant": variant.describe()}
    if not resume and outputs.jsonl_part.exists():
        done = _complete_lines(outputs.jsonl_part)
        raise AnalysisError(
            f"{outputs.jsonl_part} holds {done} games of a stopped analysis: continue it with --resume, or remove it"
            " to start over"
        )
    tally = Tally()
    stopped: list[int] = []  # the signal that stopped the analysis
    games = read_games(path)
    resumed = resumed_mistakes = 0
    if resume:
        resumed = _read_back(outputs, settings, games, variant, tally)
        resumed_mistakes = sum(s.mistakes for s in tally.summaries())
        if on_resumed is not None:
            on_resumed(resumed, resumed_mistakes)
    else:
        for part in (outputs.pgn_part, outputs.jsonl_part):
            part.write_bytes(b"")
        outputs.settings.write_text(json.dumps(settings) + "\n", encoding="utf-8")
    analyser = Analyser(seconds)
    written = resumed
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    writing = False  # a game is being written and counted: a signal then waits for the game's end

    def interrupt(signum: int, frame: Any) -> None:
        stopped.append(signum)
        if not writing:
            raise KeyboardInterrupt

    for signum in previous:  # Ctrl-C, a cancelled job, `timeout`: stopped between two games, what is done kept
        signal.signal(signum, interrupt)
    try:
        with (
            outputs.pgn_part.open("a", encoding="utf-8") as pgn,
            outputs.jsonl_part.open("a", encoding="utf-8") as jsonl,
        ):
            source = ((resumed + i, game) for i, game in enumerate(games))
            analyses = _in_workers(source, variant, from_empties, analyser.limits, jobs) if jobs > 1 else None
            try:
                stream = analyses or _in_process(source, analyser, variant, from_empties)
                for index, analysis, (solved, reused) in stream:
                    # Written and counted as one: a signal between the two left a game in the files that the count
                    # (the stop's message, the table) missed ('after 50 of 2000 games' with 51 written).
                    writing = True
                    _write(pgn, jsonl, analysis, index)
                    written += 1
                    tally.add(analysis)
                    analyser.solved, analyser.reused = solved, reused
                    writing = False
                    if stopped:
                        raise KeyboardInterrupt
                    if on_game is not None:
                        on_game(index, analysis)
            except KeyboardInterrupt:
                if not stopped:
                    stopped.append(signal.SIGINT)
            finally:
                if analyses is not None:
                    with contextlib.suppress(KeyboardInterrupt):
                        analyses.close()  # the workers stopped and reaped
    except BaseException:
        if not written:  # nothing to keep; else the games before the error stay for a --resume once it is mended
            for leftover in (outputs.pgn_part, outputs.jsonl_part, outputs.settings):
                leftover.unlink(missing_ok=True)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if not stopped:
        os.replace(outputs.pgn_part, outputs.pgn)
        os.replace(outputs.jsonl_part, outputs.jsonl)
        outputs.settings.unlink(missing_ok=True)
    return FileAnalysis(
        outputs,
        written,
        resumed,
        tally.summaries(),
        resumed_mistakes,
        stopped[0] if stopped else None,
        analyser.solved,
        analyser.reused,
    )


def _write(pgn: IO[str], jsonl: IO[str], analysis: GameAnalysis, index: int) -> None:
    """One game into both files, flushed: a stop (even ``kill -9``) leaves whole games and at most one cut line."""
    pgn.write(("\n" if index else "") + annotated_pgn(analysis))
    jsonl.write(json.dumps(game_json(analysis)) + "\n")
    pgn.flush()
    jsonl.flush()


# ----------------------------------------------------------------------------------------------------------------
# Worker processes


def _in_process(
    source: Iterator[tuple[int, PgnGame]], analyser: Analyser, variant: Variant, from_empties: int
) -> Iterator[tuple[int, GameAnalysis, tuple[int, int]]]:
    """Each game analysed here, in turn, with the analyser's (solved, reused) counts."""
    for index, game in source:
        analysis = analyser.game(game, variant, from_empties)
        yield index, analysis, (analyser.solved, analyser.reused)


def _in_workers(
    source: Iterator[tuple[int, PgnGame]], variant: Variant, from_empties: int, limits: Limits | None, jobs: int
) -> Generator[tuple[int, GameAnalysis, tuple[int, int]], None, None]:
    """Each game analysed in one of ``jobs`` worker processes, chosen by its first position (see the module), and
    yielded in file order with the workers' (solved, reused) counts. Closing the generator ends the workers."""
    import multiprocessing

    context = multiprocessing.get_context()
    results: Any = context.Queue()
    tasks: list[Any] = [context.Queue() for _ in range(jobs)]
    # As many workers as CPUs: a mistake's best turns on one thread each, not two (the twin's table is its own, so
    # a second thread on a busy CPU only repeats work: 9% more CPU on a night's games, benchmarks/analyse.py).
    threads = 1 if jobs >= CPUS else 2
    workers = [
        context.Process(target=_work, args=(tasks[w], results, w, limits, threads, os.getpid()), daemon=True)
        for w in range(jobs)
    ]
    # Forked, a worker starts with this process's handlers, which raise KeyboardInterrupt: a worker stopped while it
    # still imports printed that traceback (a bad game found by one worker while the other started, under load). The
    # stop signals are blocked until the worker has set its own; here they wait meanwhile, none is lost.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        for worker in workers:
            worker.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    pending: deque[int] = deque()  # the games given out, in file order
    done: dict[int, GameAnalysis | AnalysisError] = {}  # a bad game's error is raised in file order too
    router = _Router(jobs)
    load = router.load
    counts = [(0, 0)] * jobs

    def collect(block: bool) -> None:
        while True:
            try:
                message = results.get(timeout=_WAIT) if block else results.get_nowait()
            except queue.Empty:
                if not block:
                    return
                dead = [w for w, p in enumerate(workers) if not p.is_alive()]
                if dead:
                    code = workers[dead[0]].exitcode
                    raise AnalysisError(f"analysis worker {dead[0] + 1} died (exit status {code})") from None
                continue
            kind, w, index, payload = message
            load[w] -= 1
            if kind == "error":
                done[index] = AnalysisError(payload)
                block = False
                continue
            if kind == "crash":
                raise RuntimeError(f"analysis worker {w + 1}: {payload}")
            analysis, counts[w] = payload
            done[index] = analysis
            block = False

    try:
        for index, game in source:
            w = router.worker(game, variant, from_empties)
            while load[w] >= IN_FLIGHT:
                collect(block=True)
                yield from _ready(pending, done, counts)
            tasks[w].put((index, game, variant, from_empties))
            load[w] += 1
            pending.append(index)
            collect(block=False)
            yield from _ready(pending, done, counts)
        while pending:
            collect(block=True)
            yield from _ready(pending, done, counts)
    finally:
        for w, worker in enumerate(workers):
            if worker.is_alive():
                worker.terminate()
            tasks[w].cancel_join_thread()
        for worker in workers:
            worker.join(5)
            if worker.is_alive():
                worker.kill()
                worker.join()
        results.cancel_join_thread()


def _ready(
    pending: deque[int], done: dict[int, GameAnalysis | AnalysisError], counts: list[tuple[int, int]]
) -> Iterator[tuple[int, GameAnalysis, tuple[int, int]]]:
    while pending and pending[0] in done:
        index = pending.popleft()
        analysis = done.pop(index)
        if isinstance(analysis, AnalysisError):
            raise analysis
        yield index, analysis, (sum(c[0] for c in counts), sum(c[1] for c in counts))


class _Router:
    """Which worker analyses a game: the one that met its first analysed position (the same up to symmetry) before,
    which knows its value; else the one with the fewest games in hand, which then owns that position. Owners are
    remembered for the last :data:`~.analysis.CACHED_POSITIONS` positions, as the workers keep their values."""

    def __init__(self, jobs: int) -> None:
        self.load = [0] * jobs
        """Games given to each worker and not yet back."""
        self._owner: dict[tuple[Variant, int], int] = {}

    def worker(self, game: PgnGame, variant: Variant, from_empties: int) -> int:
        """The worker of ``game`` (the least loaded for a game without an analysed part, or one that cannot be
        replayed: its worker reports that in file order)."""
        idle = min(range(len(self.load)), key=self.load.__getitem__)
        try:
            replay = Replay.of(game, variant)
            first = replay.first(from_empties)
        except AnalysisError:
            return idle
        if first is None:
            return idle
        key = (first.variant, canonical_key(first))
        owner = self._owner.get(key)
        if owner is None:
            if len(self._owner) >= CACHED_POSITIONS:
                del self._owner[next(iter(self._owner))]
            owner = self._owner[key] = idle
        return owner


def _work(tasks: Any, results: Any, w: int, limits: Limits | None, threads: int, parent: int) -> None:
    """A worker process: games in, analyses out, until it is ended."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent stops us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # how the parent stops us (not the parent's handler, forked)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # blocked by the parent until now (_in_workers)
    from .transport.supervision import exit_with_parent  # here: the engines' transports are no start-up cost

    exit_with_parent(parent)  # a worker would wait for ever after an analyse killed by SIGKILL
    analyser = Analyser(threads=threads)
    analyser.limits = limits
    while True:
        index, game, variant, from_empties = tasks.get()
        try:
            analysis = analyser.game(game, variant, from_empties)
        except AnalysisError as e:
            results.put(("error", w, index, str(e)))
        except Exception as e:  # a bug: reported to the parent, which ends the command with it
            results.put(("crash", w, index, f"{type(e).__name__}: {e}"))
        else:
            results.put(("ok", w, index, (analysis, (analyser.solved, analyser.reused))))


# ----------------------------------------------------------------------------------------------------------------
# Resuming


def _complete_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.endswith(b"\n"))


def _read_back(
    outputs: Outputs, settings: dict[str, Any], games: Iterator[PgnGame], variant: Variant, tally: Tally
) -> int:
    """Reads a stopped analysis back: its options must be these, its games the file's first ones; writes its
    ``.pgn.part`` again from its ``.jsonl.part`` (both then end with the same whole game). Returns its games."""
    if not outputs.jsonl_part.exists():
        raise AnalysisError(f"--resume: there is no stopped analysis to continue ({outputs.jsonl_part} is missing)")
    try:
        saved = json.loads(outputs.settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise AnalysisError(f"--resume: {outputs.settings} is missing or unreadable: start over") from None
    if saved != settings:
        was = ", ".join(f"{k} {saved.get(k)}" for k in settings)
        raise AnalysisError(f"--resume with other options than the stopped analysis ({was}): give the same ones")
    pgn_tmp = outputs.pgn_part.with_name(outputs.pgn_part.name + ".tmp")
    jsonl_tmp = outputs.jsonl_part.with_name(outputs.jsonl_part.name + ".tmp")
    count = 0
    with (
        outputs.jsonl_part.open("rb") as old,
        pgn_tmp.open("w", encoding="utf-8") as pgn,
        jsonl_tmp.open("w", encoding="utf-8") as jsonl,
    ):
        for raw in old:
            if not raw.endswith(b"\n"):
                break  # cut by the stop: analysed again
            game = next(games, None)
            where = f"{outputs.jsonl_part} line {count + 1}"
            if game is None:
                raise AnalysisError(f"--resume: {where} is a game the PGN file does not have")
            analysis = _analysis_of(json.loads(raw), game, variant, where)
            _write(pgn, jsonl, analysis, count)
            tally.add(analysis)
            count += 1
    os.replace(pgn_tmp, outputs.pgn_part)
    os.replace(jsonl_tmp, outputs.jsonl_part)
    return count


def _analysis_of(data: Any, game: PgnGame, variant: Variant, where: str) -> GameAnalysis:
    """A game's analysis as :func:`~.analysis.game_json` wrote it, checked against the game it says it is."""
    try:
        if not data["source"].endswith(f":{game.line}") or data["white"] != game.tags.get("White", "?"):
            raise AnalysisError(f"--resume: {where} is not the analysis of the game at line {game.line}: start over")
        replay = Replay.of(game, variant)
        turns = tuple(
            TurnAnalysis(
                t["ply"], t["player"], t["turn"], t["empty"], _value(t["before"]), _value(t["after"]), tuple(t["best"])
            )
            for t in data["turns"]
        )
    except (KeyError, TypeError, ValueError, NotationError) as e:
        raise AnalysisError(f"--resume: {where} cannot be read ({type(e).__name__}: {e}): start over") from None
    return GameAnalysis(game, replay.tokens, replay.comments, turns)


def _value(data: Any) -> Value | None:
    return None if data is None else Value(Verdict(data["value"]), int(data["turns"]))
