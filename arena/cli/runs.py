"""The run commands ``tournament``, ``play`` and ``sprt``: their shared options, opening or resuming the run, playing it
with signals turned into a clean stop, and the report and exit status it ends with."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import typer

if TYPE_CHECKING:
    import inspect

    from ..output import RunView
    from ..run import Interrupt, Run, RunOutcome, RunSpec

from ..options import Journal, RunOptions, flag, option_fields
from .app import EXIT_ENGINE, app, as_given, echo_err, echo_out, fail, import_to_run, run_option, table_format_option

Announce = Callable[..., None]
"""A run's announce: ``announce()`` prints its header, ``announce(url)`` the header and its live page's URL."""

# --- runs: tournament, play, sprt ------------------------------------------------------------------------------


def _given(ctx: typer.Context, allowed: set[str]) -> list[str]:
    """Options the user set (not left at their default), other than ``allowed``."""
    return [
        p
        for p in ctx.params
        if p not in allowed and getattr(ctx.get_parameter_source(p), "name", "DEFAULT") != "DEFAULT"
    ]


def _default_directory(kind: str) -> Path:
    """``out/KIND-YYYYmmdd-HHMMSS``, numbered ``-2``, ``-3``... when a run of that second exists already."""
    import datetime

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    base = Path("out") / f"{kind}-{stamp}"
    candidate, k = base, 1
    while True:
        try:
            candidate.mkdir(parents=True)  # exclusive: two runs started in the same second get two directories
            return candidate
        except FileExistsError:
            k += 1
            candidate = base.with_name(f"{base.name}-{k}")
        except OSError as e:
            fail(f"{candidate}: cannot create the run directory: {e.strerror}")


_DESCRIPTOR_ROOM = 4096  # open files beyond the engines': the server's pending connections (256), web clients, logs


def _check_concurrency(concurrency: int, engines: int) -> None:
    """Refuses a concurrency that would run out of file descriptors or processes; warns above the CPU count."""
    import os
    import resource

    if concurrency < 1:
        fail(f"--concurrency must be at least 1, not {concurrency}")
    # Each game holds two engines; each engine about five descriptors on our side (pipes, pidfd, log).
    needed = concurrency * 2 * 5 + 64
    # Raised at start, with room for what peers can make the arena hold (the server's half-open connections, the
    # live page's clients), so that its own shortage is not what ends a run (it would stop it: exit 5).
    wanted = needed + _DESCRIPTOR_ROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and wanted > soft:
        if hard == resource.RLIM_INFINITY or needed <= hard:
            ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
        else:
            fail(
                f"--concurrency {concurrency} needs about {needed} open files; the limit is {hard} (ulimit -n):"
                " lower --concurrency"
            )
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if nproc != resource.RLIM_INFINITY and concurrency * 2 > nproc // 2:
        fail(f"--concurrency {concurrency} would start {2 * concurrency} engines; the process limit is {nproc}")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if concurrency > cpus:
        echo_err(
            f"quarto-arena: warning: --concurrency {concurrency} on {cpus} CPUs: engines will share cores and their"
            " clocks keep running (fair only for engines that do not search)"
        )


def _build_spec(kind: str, engine_words: list[str], options: RunOptions) -> RunSpec:
    """A run from the command line's values; a usage error (exit 2) is one line."""
    from ..run import RunError, RunKind, build_spec

    try:
        spec = build_spec(
            RunKind({"tournament": "tournament", "play": "match", "sprt": "sprt"}[kind]), engine_words, options
        )
        _check_keys(spec)
    except RunError as e:
        fail(str(e), e.status)
    if options.cluster is None:  # on a cluster, -j is games in flight there, not here
        _check_concurrency(spec.concurrency, len(spec.engines))
    return spec


def _check_keys(spec: RunSpec) -> None:
    """Reads the keys a run's server needs, so that a missing one is a usage error before anything starts."""
    if spec.server is not None:
        from ..server import server_for

        server_for(spec.server, spec.remote)


def given_again(ctx: typer.Context, kind: str) -> list[str]:
    """The run options given with ``--resume`` that it refuses, as spelled (``--games``): what the journal keeps,
    and how a new run is made (RunOptions' journal forms)."""
    journal = {name: how.journal for name, how, _ in option_fields(kind)}
    return [
        flag(name).flags[0].split("/")[0]
        for name in _given(ctx, set())
        if journal.get(name) in (Journal.KEPT, Journal.CREATION)
    ]


#: What each run command plays, in the words of RunKind.
_KINDS: Final = {"tournament": "tournament", "play": "match", "sprt": "sprt", "tune": "tune"}


def _open_run(kind: str, ctx: typer.Context, engine_words: list[str], options: RunOptions) -> Run:
    """The run to play: resumed from ``--resume DIR``, or created from the options (in ``--out`` or a new dir)."""
    from ..run import Run, RunError, server_spec

    transcript = None
    if options.debug is not None:
        transcript = debug_option(Path(options.debug))
    try:
        if options.resume is not None:
            given = given_again(ctx, kind)
            if given or engine_words:
                what = "engines" if engine_words else given[0]
                fail(f"--resume takes no engines or game options (got {what}): the journal keeps them")
            run = Run.resume(Path(options.resume), transcript=transcript)
            command = {k: c for c, k in _KINDS.items()}[run.spec.kind.value]
            if command != kind:
                run.close()
                fail(
                    f"{options.resume} holds a {run.spec.kind.value}, not a {_KINDS[kind]}: continue it with"
                    f" quarto-arena {command} --resume {options.resume}"
                )
            movable = {name for name, how, _ in option_fields(kind) if how.journal is Journal.MOVABLE}
            moved = set(_given(ctx, set())) & movable
            if moved:
                kept = run.spec.server
                if kept is None:
                    run.close()
                    fail("--listen, --keys and --wait serve remote:NAME engines; this run has none")
                # What is not given again stays as the run had it.
                listen = options.listen if "listen" in moved else kept.endpoint
                keys = options.keys if "keys" in moved else kept.keys
                wait = options.wait if "wait" in moved else kept.wait
                run.spec = replace(run.spec, server=server_spec(listen, keys, wait))
            try:
                _check_keys(run.spec)
            except RunError:
                run.close()
                raise
            return run
        spec = _build_spec(kind, engine_words, options)
        directory = Path(options.out) if options.out is not None else _default_directory(kind)
        return Run.create(spec, directory, force=options.force, transcript=transcript)
    except RunError as e:
        if transcript is not None:
            transcript.close()
        fail(str(e), e.status)


def cluster_option(address: str | None) -> Any:
    """The ``--cluster`` address (a ClusterAddress), None without one; a usage error (exit 2) when it is malformed or
    Dask is not installed."""
    if address is None:
        return None
    from ..cluster import ClusterAddress
    from ..cluster.connection import distributed
    from ..run import RunError

    try:
        parsed = ClusterAddress.parse(address)
        distributed()
    except RunError as e:
        fail(str(e))
    import logging

    # Dask logs connections, workers and lost schedulers with tracebacks on our standard error; every failure that
    # matters reaches the user as our one line instead.
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    return parsed


def debug_option(directory: Path) -> Any:
    """The ``--debug`` transcript and log, both in ``directory``."""
    import logging

    from quarto_arena.protocol.safelog import SafeFormatter

    from ..transport import Transcript

    try:
        transcript = Transcript(directory / "uqi-transcript.log")
        handler = logging.FileHandler(directory / "debug.log")
    except OSError as e:
        fail(f"--debug {directory}: {e.strerror or e}")
    handler.setFormatter(SafeFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("quarto_arena").addHandler(handler)
    logging.getLogger("quarto_arena").setLevel(logging.DEBUG)
    return transcript


def show_server_log(quiet: bool) -> None:
    """Shows what the server reports (bots connecting, refusals, cuts) on stderr; only warnings with ``--quiet``."""
    import logging

    from quarto_arena.protocol.safelog import SafeFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter("quarto-arena: %(message)s"))
    handler.setLevel(logging.WARNING if quiet else logging.INFO)
    logger = logging.getLogger("quarto_arena.arena.server")
    logger.addHandler(handler)
    logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))  # --debug may have asked for more


def fast_event_loop() -> None:
    """Runs the games on uvloop where it is installed (it is a dependency where it builds): measured in one run of
    ``benchmarks/tournament.py --loops asyncio,uvloop``, 13-22% less arena CPU per turn. ``QUARTO_ARENA_LOOP=asyncio``
    keeps the standard loop."""
    import asyncio
    import os

    if os.environ.get("QUARTO_ARENA_LOOP", "uvloop") == "asyncio":
        return
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


async def _games(
    run: Run,
    view: RunView,
    interrupt: Interrupt,
    announce: Announce,
    web: tuple[str, int] | None = None,
    cluster: Any = None,
    oversubscribe: bool = False,
) -> RunOutcome:
    """Plays the run until ``interrupt``; with ``web``, the live page is served at that address while it goes; on
    ``cluster`` (a ClusterAddress) when given. ``announce`` is called once the run listens where it was told to
    (``--listen``, ``--web``), before its first game."""
    if cluster is not None:
        announce()
        from ..cluster import play_on_cluster

        return await play_on_cluster(run, cluster, view, interrupt=interrupt, oversubscribe=oversubscribe)
    player = None
    if run.spec.server is not None:
        from ..server import server_player

        player = server_player(run)
        await player.serve()  # bound before the header: an endpoint in use is the only line (RunError)
    if web is None:
        announce()
        return await run.run(view, interrupt=interrupt, player=player)
    from ..web.server import run_live

    return await run_live(run, view, web, interrupt=interrupt, announce=announce, player=player)


async def play_with_signals(games: Callable[[Interrupt], Awaitable[RunOutcome]]) -> RunOutcome:
    """``games(interrupt)`` with SIGINT, SIGTERM and SIGHUP turned into a clean stop (the interrupt is set; a second
    signal kills the engines at once), and every engine left killed and reaped when it returns: what every run
    command plays its games with."""
    import asyncio
    import atexit
    import gc
    import signal

    from ..run import Interrupt
    from ..transport import kill_all, shutdown

    interrupt = Interrupt()

    def on_signal(signum: int) -> None:
        if interrupt.event.is_set():  # a second signal: no more waiting for engines to quit politely
            kill_all()
        interrupt.set(signum)

    # A run keeps its counted games and thousands of session objects alive for hours: moving what exists now out of
    # the collector's sight, and collecting the young generation less often, keeps its passes from growing with
    # them (benchmarks/scale.py measures both settings). Process-wide settings, so the command sets them. No full
    # collection before the freeze: here it finds a handful of cycles the imports left, and costs a pass over every
    # object they made (13 ms of a 2-game play's CPU on a loaded machine, benchmarks/startup.py).
    gc.freeze()
    gc.set_threshold(50_000, 10, 10)
    loop = asyncio.get_running_loop()
    handled = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    for signum in handled:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return await games(interrupt)
    finally:
        await shutdown()  # whatever is left of any engine, and the watchdog, killed and reaped (a signal hurries it)
        # Held from the loop's handler to ours: in between, asyncio puts the default back (KeyboardInterrupt for
        # SIGINT, death for SIGTERM), and a second signal there ended a run with a bare 'interrupted' (CI, at load).
        held = signal.pthread_sigmask(signal.SIG_BLOCK, handled)
        try:
            for signum in handled:
                loop.remove_signal_handler(signum)
                signal.signal(signum, _late_signal)  # kept until the standings, the report and the resume hint are out
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        atexit.register(_ignore_stop_signals, handled)


_LATE_SIGNALS: list[int] = []  # signals that came after the games: the shutdown hurries (no report), and finishes


def _late_signal(signum: int, frame: Any) -> None:
    _LATE_SIGNALS.append(signum)


def _ignore_stop_signals(handled: Iterable[int]) -> None:
    """At exit, once every line is out: Python's finalization then puts the default action back on each signal that
    has a Python handler, and a second Ctrl-C or SIGTERM in the rest of it killed the process, losing the 128+N
    status the first signal had chosen. An ignored signal it leaves ignored."""
    import signal

    for signum in handled:
        signal.signal(signum, signal.SIG_IGN)


def _run_command(kind: str, ctx: typer.Context, engine_words: list[str], options: RunOptions) -> None:
    """What ``tournament``, ``play`` and ``sprt`` share: open the run, play it, report, exit with its status."""
    import_to_run("runs")

    from ..output import final_report, rate_run, write_standings
    from ..run import Verdict

    table_format_option(options.fmt)
    cluster, web, every = session_options(options)
    run = _open_run(kind, ctx, engine_words, options)
    if cluster is not None and run.spec.server is not None:
        run.close()
        fail("remote:NAME bots connect in to this machine's server; --cluster plays the games on the workers")
    with run:
        assert run.directory is not None
        spec = run.spec
        done = len(run.records)
        total = "open-ended" if run.total is None else f"{run.total} games"
        title = {"tournament": "Tournament", "play": "Match", "sprt": "SPRT"}[kind]
        header = f"{title} in {run.directory}: {', '.join(spec.names)}; {total}, {done} already played"
        if spec.sprt is not None:
            lower, upper = spec.sprt.bounds
            header += (
                f"; SPRT elo0 {spec.sprt.elo0:g} elo1 {spec.sprt.elo1:g} ({spec.sprt.model.value}),"
                f" LLR bounds ({lower:.3f}, {upper:.3f})"
            )
        if spec.server is not None:
            show_server_log(options.quiet)
        view, announce = run_view(run, header, every, options.quiet)
        outcome = play_run(
            kind,
            run.directory,
            view,
            lambda interrupt: _games(run, view, interrupt, announce, web, cluster, options.oversubscribe),
        )
        rated = rate_run(outcome)  # one fit of the run's games for all that shows them
        try:
            write_standings(run.directory, outcome, rated)
        except OSError as e:
            echo_err(f"quarto-arena: warning: cannot write the standings into {run.directory}: {e.strerror or e}")
        if _LATE_SIGNALS:  # a signal during the shutdown: hurry, the report can be made later (quarto-arena report)
            echo_err(
                f"quarto-arena: report.html not written (stopped); make it with: quarto-arena report {run.directory}"
            )
        else:
            _write_report(run.directory, outcome)
        report = final_report(outcome, rated, spec.table_format)
        with contextlib.suppress(OSError):
            echo_out(report)
    end_of_run(kind, run.directory, outcome)
    verdict = outcome.verdict
    if verdict is not None:
        raise typer.Exit(
            {Verdict.H1: 0, Verdict.H0: 1, Verdict.ENGINE_FAILURE: EXIT_ENGINE, Verdict.NO_DECISION: 4}[verdict]
        )


def run_view(run: Run, header: str, every: Any, quiet: bool) -> tuple[RunView, Announce]:
    """What every run command (and ``tune``) shows while it plays: the progress view on stderr, and the announce
    that prints ``header`` (and the live page's URL, when given one) once the run listens where it was told to
    (``--listen``, ``--web``: an address in use is then the only line, with no header before it). Says first when
    a directory's unplayed run was started over."""
    from ..output import RunView

    if run.replaced_unplayed:
        echo_err(f"quarto-arena: {run.directory} held a run that counted no game: started over in it")

    def announce(url: str | None = None) -> None:
        if not quiet:  # --quiet: only warnings and the result
            echo_err(header)
        if url is not None:
            echo_err(f"live page: {url}")

    spec = run.spec
    view = RunView(
        sys.stderr,
        spec.kind,
        spec.names,
        list(run.records.values()),
        run.total,
        every=every,
        quiet=quiet,
        fmt=spec.table_format,
        interval=spec.rating_interval,
    )
    return view, announce


def session_options(options: RunOptions) -> tuple[Any, tuple[str, int] | None, Any]:
    """``--cluster`` (a ClusterAddress), ``--web`` (an address) and ``--progress-every`` (a ProgressEvery), each
    None when not given; a usage error (exit 2) for a bad one or a bad combination."""
    from ..output import parse_progress_every
    from ..web import WebError, parse_address, require_server

    if options.cluster is not None and options.debug is not None:  # whether Dask is installed or not
        fail("--debug records the UQI lines of engines on this machine; with --cluster they run on the workers")
    if options.cluster is not None and options.web is not None:
        fail("--web cannot be used with --cluster; follow the run from another terminal: quarto-arena serve DIR")
    cluster = cluster_option(options.cluster)
    web = None
    if options.web is not None:
        try:
            web = parse_address(options.web)
            require_server()
        except WebError as e:
            fail(str(e))
    every = None
    if options.progress_every is not None:
        try:
            every = parse_progress_every(options.progress_every)
        except ValueError as e:
            fail(str(e))
    return cluster, web, every


def play_run(
    kind: str, directory: Path, view: RunView, games: Callable[[Interrupt], Awaitable[RunOutcome]]
) -> RunOutcome:
    """Plays a run's games (:func:`play_with_signals`) with its progress on ``view``; whatever stops it early is
    one line naming how to go on, and the exit status of its kind."""
    import asyncio

    from ..errors import ArenaFault, arena_fault
    from ..records import GameRecord
    from ..run import RunError
    from ..web import WebError

    try:
        fast_event_loop()
        outcome = asyncio.run(play_with_signals(games))
    except WebError as e:
        view.close()
        fail(f"{e}; the run in {directory} has not started: continue it with --resume {directory}")
    except RunError as e:
        view.close()
        fail(str(e), e.status)
    except ArenaFault as e:
        view.close()
        kept = f"game {e.record.game_id} aborted, not counted; " if isinstance(e.record, GameRecord) else ""
        fail(f"{e}; {kept}continue with: quarto-arena {kind} --resume {directory}", e.status)
    except OSError as e:
        view.close()
        if arena_fault(e):  # a full disk (or quota): the games counted are safe, the run goes on from them
            fail(
                f"{directory}: {e.strerror or e}: make room, then continue with: quarto-arena {kind} --resume"
                f" {directory}",
                ArenaFault.status,
            )
        fail(f"{directory}: {e.strerror or e}")
    view.close()
    return outcome


def late_signals() -> bool:
    """True when a signal came after the games, during the shutdown: the run hurries to its end (no report)."""
    return bool(_LATE_SIGNALS)


def end_of_run(kind: str, directory: Path, outcome: RunOutcome) -> None:
    """What a run that did not end normally says last on stderr, and its exit status: the games abandoned, then an
    interrupt (128 + N) or an engine failure (3), each with the command that goes on."""
    import signal

    from ..run import Verdict

    resume = f"quarto-arena {kind} --resume {directory}"
    if outcome.aborted:
        n = len(outcome.aborted)
        count, where = f"{n} game{'s' if n > 1 else ''}", directory / "aborted.jsonl"
        if outcome.verdict in (Verdict.H0, Verdict.H1):  # the test needs no more games: nothing went wrong
            echo_err(f"the test decided with {count} still being played: stopped there, not counted (in {where})")
        else:
            echo_err(f"{count} in progress abandoned (in {where}): not counted")
    interrupted = outcome.interrupted if outcome.interrupted is not None else next(iter(_LATE_SIGNALS), None)
    if interrupted is not None:
        name = signal.Signals(interrupted).name
        fail(f"interrupted by {name} after {len(outcome.records)} games; continue with: {resume}", 128 + interrupted)
    if outcome.failure is not None:  # an SPRT's too: its verdict line says only "engine failure", here on stderr
        r = outcome.failure
        fail(
            f"stopped by game {r.game_id}: {r.termination.value}: {r.detail}; fix the engine, then {resume}",
            EXIT_ENGINE,
        )


def _write_report(directory: Path, outcome: RunOutcome) -> None:
    """``report.html`` next to the standings; a failure to write it is a warning, never a lost result."""
    from ..web.report import write_report

    try:
        write_report(directory, outcome, warn=lambda text: echo_err(f"quarto-arena: warning: {text}"))
    except OSError as e:
        echo_err(f"quarto-arena: warning: cannot write the report into {directory}: {e.strerror or e}")


@functools.cache
def _run_option_hints() -> dict[str, Any]:
    """RunOptions' field types, evaluated once for the three run commands (start-up)."""
    import typing

    return typing.get_type_hints(RunOptions)


#: How a run command other than the three above plays its run: ``body(ctx, options, own)``, ``own`` the values of
#: the command's own parameters (``tune``'s engine, ``--param``...).
RunBody = Callable[[typer.Context, RunOptions, dict[str, Any]], None]


def run_options(kind: str, body: RunBody | None = None) -> Callable[[Callable[..., None]], _RunCommand]:
    """Gives a run command its options (every :class:`~..options.RunOptions` field ``kind`` takes), and runs it.

    The decorated function declares only what is its own (``ctx``, the engines) and checks what it must; the run is
    played by ``body``, by default :func:`_run_command`, with the options' values.
    """
    return functools.partial(_RunCommand, kind, body)


class _RunCommand:
    """A run command as typer sees it: ``own``'s parameters, then the run options of ``kind``, each its own parameter.

    Its signature (some forty options) is made when typer first asks for it, that is when it builds this command: a
    command line runs one command, and ``--help`` lists the commands without their options (start-up time).
    """

    def __init__(self, kind: str, body: RunBody | None, own: Callable[..., None]) -> None:
        self.kind, self.body, self.own = kind, body, own
        self.__name__, self.__qualname__, self.__module__ = own.__name__, own.__qualname__, own.__module__
        self.__doc__ = own.__doc__
        self.chosen = [name for name, _, _ in option_fields(kind)]

    @functools.cached_property
    def _own_signature(self) -> inspect.Signature:
        import inspect

        return inspect.signature(self.own, eval_str=True)

    @functools.cached_property
    def __signature__(self) -> inspect.Signature:
        import inspect

        own = self._own_signature
        hints = _run_option_hints()
        declared = [
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=run_option(name, self.kind),
                annotation=hints[name],
            )
            for name in self.chosen
        ]
        return own.replace(parameters=[*own.parameters.values(), *declared])

    @functools.cached_property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]
        import typing

        hints = _run_option_hints()
        return {**typing.get_type_hints(self.own), **{name: hints[name] for name in self.chosen}}

    def __call__(self, **values: Any) -> None:
        own = {name: values[name] for name in self._own_signature.parameters}
        self.own(**own)
        ctx = values["ctx"]
        options = as_given(ctx, RunOptions(**{name: values[name] for name in self.chosen}))
        if self.body is not None:
            self.body(ctx, options, own)
            return
        _run_command(self.kind, ctx, values["engines"] or [], options)


_ENGINES_HELP = (
    "built-in names, commands (quoted), tcp:// or ipc:// endpoints, remote:NAME (a bot that connects in, with "
    "--listen), names from --engines FILE; NAME=ENGINE names one."
)


@app.command()
@run_options("tournament")
def tournament(
    ctx: typer.Context,
    engines: list[str] = typer.Argument(None, metavar="[ENGINE]...", help="Engines: " + _ENGINES_HELP),
) -> None:
    """Run a round-robin or gauntlet tournament in colour-swapped pairs; crash-safe, resumable with --resume DIR.

    The table's columns: rank; player; rating (logistic Elo, pool average 0); margin (95% interval half-width);
    games; points; score (points per game); draw_rate; los_next (likelihood of superiority over the next line);
    forfeits (games lost by an engine failure), then one column per failure reason seen.
    """


@app.command()
@run_options("play")
def play(
    ctx: typer.Context,
    engines: list[str] = typer.Argument(None, metavar="ENGINE ENGINE", help="Two engines: " + _ENGINES_HELP),
) -> None:
    """Play a match between two engines and print the score, Elo and pair statistics; resumable with --resume DIR."""


@app.command()
@run_options("sprt")
def sprt(
    ctx: typer.Context,
    engines: list[str] = typer.Argument(
        None, metavar="NEW BASE", help="The engine under test, then the engine it must beat or match."
    ),
) -> None:
    """Play NEW against BASE in colour-swapped pairs until the SPRT decides. Exit 0: H1 (pass), 1: H0 (fail),
    3: an engine failed, 4: no decision within --max-games."""
    if ctx.params.get("resume") is None and (ctx.params["elo0"] is None or ctx.params["elo1"] is None):
        fail("sprt needs --elo0 and --elo1, e.g. --elo0 0 --elo1 10")
