"""A tune as a run: :func:`build_tune` makes its specs from the command line's values (the engine checked before
anything is written), :class:`Tune` binds them to a directory (created or resumed) and plays the games.

A tune is a run of the one runner (arena/run): a two-engine schedule of ``2 N`` games between the engine's copies
``NAME+`` and ``NAME-``, colour-swapped pairs from one opening each, journaled, resumable, on this machine or a
Dask cluster. What makes it a tune is produced on the fly: each game's engines get their options from the
:class:`~.tuner.Tuner` (the runner's ``engines_of``), and each counted game goes to the tuner, which updates
``theta`` once the pair is complete and has ``tune.json`` and ``tune.csv`` written.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import Deadlines
from ..options import RunOptions
from ..run import Event, GameFinished, Interrupt, Run, RunKind, RunOutcome, RunSpec, build_spec
from ..transport import Transcript
from .check import check_engine
from .files import TuneFiles
from .spec import HEADER_KEY, TuneError, TuneSpec, parse_params
from .spsa import Gains
from .tuner import Iteration, Tuner

if TYPE_CHECKING:
    from ..cluster import ClusterAddress

__all__ = ["Tune", "build_tune", "gains_of"]

_REMOTE = re.compile(r"([^=\s]+=)?remote:")
_NAMED = re.compile(r"([^=\s]+)=(.*)\Z", re.DOTALL)


def gains_of(pairs: int, alpha: float, gamma: float, a_ratio: float) -> Gains:
    """The gains of ``--pairs``, ``--spsa-alpha``, ``--spsa-gamma`` and ``--spsa-a``; :class:`TuneError` for a bad
    one."""
    if pairs < 1:
        raise TuneError(f"--pairs must be at least 1, not {pairs}: the number of colour-swapped pairs to play")
    for name, value in (("--spsa-alpha", alpha), ("--spsa-gamma", gamma), ("--spsa-a", a_ratio)):
        if not value >= 0 or value == float("inf"):
            raise TuneError(f"{name} must be a number 0 or more, not {value:g}")
    return Gains(pairs, alpha, gamma, a_ratio)


def build_tune(
    engine_words: Sequence[str],
    options: RunOptions,
    param_texts: Sequence[str],
    gains: Gains,
    *,
    deadlines: Deadlines | None = None,
) -> tuple[RunSpec, TuneSpec]:
    """The run and the tune of the command line's values, once the engine has been started and accepted every
    value it may be sent; nothing is written. Raises :class:`TuneError` or :class:`RunError` (exit 2, or 3 when the
    engine cannot start)."""
    params = parse_params(param_texts)
    if any(_REMOTE.match(w.strip()) for w in engine_words):
        raise TuneError(
            "tune starts its engine (or connects to it): give the bot's command or tcp:// endpoint, not remote:NAME"
        )
    spec = build_spec(RunKind.TUNE, engine_words, replace(options, games=2 * gains.pairs))
    plus, minus = spec.engines
    name = plus.name[:-1]
    params = asyncio.run(check_engine(replace(plus, name=name), params, spec.game.variant, deadlines=deadlines))
    start = {p.name: str(round(p.start)) for p in params}
    engines = tuple(replace(e, options={**e.options, **start}) for e in (plus, minus))
    word = engine_words[0].strip() if engine_words else name
    named = _NAMED.match(word)
    if named and not word.startswith(("tcp://", "ipc://")):
        word = named.group(2).strip()
    engines_file = None if options.engines_file is None else str(Path(options.engines_file).resolve())
    tune = TuneSpec(name, params, gains, options.seed, word, engines_file)
    return replace(spec, engines=engines), tune


class Tune:
    """A tune bound to its run (a directory's, or memory's): the run, the tuner rebuilt from its journal, and the
    tune's files. Build it with :meth:`create` or :meth:`resume`; close it when done."""

    def __init__(self, run: Run, tune: TuneSpec) -> None:
        """Use :meth:`create`, :meth:`resume`, or give a run made otherwise (in memory) with its tune."""
        if run.spec.kind is not RunKind.TUNE:
            raise TuneError(f"{run.directory} holds a {run.spec.kind.value}, not a tune")
        self.run = run
        self.tune = tune
        plus, minus = run.spec.engines
        self.tuner = Tuner(tune, plus, minus)
        self.tuner.replay(run.records.values())
        self.files = None if run.directory is None else TuneFiles(run.directory, self.tuner)
        self.listeners: list[Callable[[Iteration], None]] = []
        """Who is told of each iteration (the live page's model)."""

    @classmethod
    def create(
        cls,
        spec: RunSpec,
        tune: TuneSpec,
        directory: Path,
        *,
        force: bool = False,
        transcript: Transcript | None = None,
    ) -> Tune:
        """A new tune in ``directory`` (see :meth:`Run.create`); the tune is kept in the journal's header."""
        run = Run.create(spec, directory, force=force, transcript=transcript, attached={HEADER_KEY: tune.to_dict()})
        try:
            return cls(run, tune)
        except BaseException:
            run.close()
            raise

    @classmethod
    def resume(cls, directory: Path, *, transcript: Transcript | None = None) -> Tune:
        """The tune in ``directory``, from its journal; :class:`TuneError` when it holds another kind of run."""
        run = Run.resume(directory, transcript=transcript)
        try:
            if run.spec.kind is not RunKind.TUNE:
                command = {"match": "play"}.get(run.spec.kind.value, run.spec.kind.value)
                raise TuneError(
                    f"{directory} holds a {run.spec.kind.value}, not a tune: continue it with quarto-arena {command}"
                    f" --resume {directory}"
                )
            return cls(run, TuneSpec.from_header(run.header, str(directory)))
        except BaseException:
            run.close()
            raise

    def event(self, then: Callable[[Event], None] | None) -> Callable[[Event], None]:
        """The run's event callback: each counted game goes to the tuner (and a complete pair to the files and the
        listeners) before ``then`` sees the event."""

        def on_event(e: Event) -> None:
            if isinstance(e, GameFinished):
                iteration = self.tuner.count(e.record)
                if iteration is not None:
                    if self.files is not None:
                        self.files.counted(iteration)
                    for listener in self.listeners:
                        listener(iteration)
            if then is not None:
                then(e)

        return on_event

    async def play(
        self,
        on_event: Callable[[Event], None] | None = None,
        *,
        interrupt: Interrupt | None = None,
        cluster: ClusterAddress | None = None,
        oversubscribe: bool = False,
        turns: bool = False,
    ) -> RunOutcome:
        """Plays the pairs the journal lacks, on this machine or on ``cluster``; ``turns`` reports every turn (a
        live view). Raises what :meth:`Run.run` raises (a :class:`RunError` for an engine that cannot start...)."""
        if self.files is not None:
            self.files.rewrite()
        events = self.event(on_event)
        if cluster is not None:
            from ..cluster import play_on_cluster

            return await play_on_cluster(
                self.run,
                cluster,
                events,
                interrupt=interrupt,
                oversubscribe=oversubscribe,
                engines_of=self.tuner.engines_of,
            )
        return await self.run.run(events, interrupt=interrupt, engines_of=self.tuner.engines_of, turns=turns)

    def options(self) -> dict[str, int]:
        """The tuned values as the engine takes them (``theta`` rounded)."""
        return {p.name: round(v) for p, v in zip(self.tune.params, self.tuner.theta, strict=True)}

    def close(self) -> None:
        """Closes the files and the journal."""
        if self.files is not None:
            self.files.close()
        self.run.close()

    def __enter__(self) -> Tune:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
