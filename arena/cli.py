"""The ``quarto-arena`` command line: thin; parses options, calls the layers below, decides what the user sees.

Exit status (the README's table): 0 success; 1 a finished job whose verdict is negative (``sprt``: H0 accepted;
``check``: the engine does not comply); 2 usage error (bad option, position, file, or a corrupt or foreign journal);
3 engine failure (an engine cannot start, refuses its options or the variant, or fails a game under ``--strict``);
4 ``sprt`` reached ``--max-games`` without a decision; 70 internal error (a bug: please report it); 128 + N when
stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after printing what was played so far and how to resume.

Start-up is kept short (``--help`` and ``show`` answer in well under a tenth of a second): this module imports only
typer at the top; every command imports what it needs when it runs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from quarto_arena.protocol.rules import Position, Variant

    from .compliance import CheckReport, CheckTimeouts
    from .engine import EngineConfig
    from .output import RunView
    from .run import Run, RunOutcome, RunSpec, ServerSpec

app = typer.Typer(
    name="quarto-arena",
    help="UQI, the Universal Quarto Interface: play, check, rate and test Quarto engines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

EXIT_USAGE = 2
EXIT_ENGINE = 3
EXIT_INTERNAL = 70
DEFAULT_MARGIN_MS = 50  # the same as timecontrol.DEFAULT_MARGIN_MS (tested): not imported, for start-up time
DEFAULT_TC = "st=1"
DEFAULT_WAIT = 60.0  # seconds; the same as ServerSpec.wait
ATTRIBUTES = "color,shape,height,fill"


_REPORTED: list[str] = []  # the line fail() printed, so that main() does not add a second one


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Prints one line on stderr and exits with ``code``."""
    line = f"quarto-arena: error: {_one_line(message)}"
    _REPORTED.append(line)
    _err(line)
    raise typer.Exit(code)


def _err(text: str) -> None:
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) must not turn into a traceback
        typer.echo(text, err=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("quarto-arena")
    except PackageNotFoundError:
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"quarto-arena {_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """UQI, the Universal Quarto Interface: play, check, rate and test Quarto engines."""


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: every error becomes one line on stderr and a documented exit status."""
    try:
        code = app(args=argv, prog_name="quarto-arena", standalone_mode=False)
    except (KeyboardInterrupt, typer.Abort):
        _err("quarto-arena: interrupted")
        sys.exit(130)
    except Exception as e:
        # Usage errors come from the click that typer bundles; duck typing keeps us off its private module path.
        format_message = getattr(e, "format_message", None)
        if not callable(format_message):
            import logging

            logging.getLogger(__name__).debug("internal error", exc_info=True)
            _err(f"quarto-arena: internal error (please report it): {type(e).__name__}: {_one_line(str(e))}")
            sys.exit(EXIT_INTERNAL)
        message = _one_line(str(format_message()))
        if message:  # empty when help was shown for a bare command
            _err(f"quarto-arena: error: {message}")
        sys.exit(int(getattr(e, "exit_code", EXIT_USAGE)))
    if code == 130 and not _REPORTED:  # typer turns Ctrl-C inside a command into Exit(130)
        _err("quarto-arena: interrupted")
    sys.exit(code if isinstance(code, int) else 0)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- options shared by several commands ---------------------------------------------------------------------------

VariantOpt = typer.Option(
    "standard", "--variant", metavar="SHAPES", help="Winning shapes: standard, or advanced (also 2x2 squares)."
)
AttributesOpt = typer.Option(
    ATTRIBUTES, "--attributes", metavar="LIST", help="Attributes that count, comma-separated (beginners' rule)."
)
ClaimOpt = typer.Option(
    "auto", "--claim", metavar="MODE", help="auto: wins are automatic; strict: QUARTO! must be called."
)
TcOpt = typer.Option(
    DEFAULT_TC, "--tc", metavar="TC", help="Time control: BASE+INC, st=SECONDS, depth=N, nodes=N, inf (joined by ',')."
)
TimeMarginOpt = typer.Option(
    DEFAULT_MARGIN_MS, "--timemargin", metavar="MS", min=0, help="Overrun tolerated before a time forfeit, ms."
)
ConcurrencyOpt = typer.Option(1, "--concurrency", "-j", metavar="N", help="Games played at once.")
OpeningsOpt = typer.Option(
    None, "--openings", metavar="FILE", help="Openings file: a position or turns per line (instead of random ones)."
)
RandomOpeningsOpt = typer.Option(
    2, "--random-openings", metavar="K", help="Open each pair with K random turns (0: the empty board)."
)
SeedOpt = typer.Option(0, "--seed", metavar="N", help="Seed of the random openings.")
EnginesFileOpt = typer.Option(
    None, "--engines", metavar="FILE", help="TOML engines file (see the README); without ENGINE words, all of them."
)
OptionOpt = typer.Option(
    [], "--option", "-o", metavar="[ENGINE:]ID=VALUE", help="Set a UQI option of one engine, or of every engine."
)
FormatOpt = typer.Option("simple", "--format", metavar="FMT", help="Table format: any tabulate format, csv or json.")
OutOpt = typer.Option(
    None,
    "--out",
    metavar="DIR",
    help="Run directory (journal, PGN, JSON Lines, logs, standings); default out/KIND-TIME.",
)
ResumeOpt = typer.Option(None, "--resume", metavar="DIR", help="Resume the run in DIR (its journal keeps the options).")
ForceOpt = typer.Option(False, "--force", help="Start over in a --out directory that holds a run already.")
ProgressOpt = typer.Option(
    None,
    "--progress-every",
    metavar="N|Ns",
    help="Off a terminal, a status line every N games or N seconds (s, m, h); 1: a line per game. "
    "Default: every 60 s and every tenth of the games.",
)
QuietOpt = typer.Option(False, "--quiet", "-q", help="No progress: only warnings and the result.")
DebugOpt = typer.Option(None, "--debug", metavar="DIR", help="Write every UQI line with a time stamp into DIR.")
ClusterOpt = typer.Option(
    None,
    "--cluster",
    metavar="ADDRESS",
    help="Play the games on a Dask cluster: tcp://SCHEDULER:8786, or local:N worker processes here "
    "(pip install 'quarto-arena[dask]').",
)
OversubscribeOpt = typer.Option(
    False, "--oversubscribe", help="With --cluster: allow machines with more worker threads than cores."
)
WebOpt = typer.Option(
    None,
    "--web",
    metavar="HOST:PORT",
    help="Serve a live page of the run at HOST:PORT, e.g. 127.0.0.1:8080 (port 0: any free one); needs the web extra.",
)
AdjudicateOpt = typer.Option(
    None,
    "--adjudicate",
    metavar="EMPTIES",
    min=1,
    max=12,
    help="End each game at EMPTIES empty squares (at most 12) with the result of perfect play (the solver).",
)
LogLimitOpt = typer.Option(
    "16M", "--log-limit", metavar="SIZE", help="Keep at most SIZE (K, M, G) of each engine's stderr log; 0: none."
)
ListenOpt = typer.Option(
    None,
    "--listen",
    metavar="ENDPOINT",
    help="Serve remote:NAME bots that connect in here: tcp://HOST:PORT (loopback only without --keys).",
)
KeysOpt = typer.Option(
    None, "--keys", metavar="DIR", help="CurveZMQ keys (quarto-arena keys new): arena.key_secret, each NAME.key."
)
WaitOpt = typer.Option(
    DEFAULT_WAIT, "--wait", metavar="SECONDS", min=0, help="How long to wait for remote bots to connect."
)


def _size(text: str) -> int:
    """``16M`` -> bytes (K, M and G are powers of 1024); a usage error otherwise."""
    value = text.strip().upper().removesuffix("B")
    factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:], 1)
    number = value[:-1] if factor > 1 else value
    if not number.isdigit():
        fail(f"--log-limit {text!r}: expected a size such as 16M, 500K or 1000000")
    return int(number) * factor


def _variant(variant: str, attributes: str, claim: str) -> Variant:
    from quarto_arena.protocol.notation import NotationError, parse_variant

    try:
        return parse_variant(variant, attributes, claim)
    except NotationError as e:
        fail(str(e))


def _position(text: str, variant: Variant) -> Position:
    from quarto_arena.protocol.notation import NotationError, parse_position

    try:
        return parse_position(text, variant)
    except NotationError as e:
        fail(f"bad position: {e}")


def _table_format(fmt: str) -> str:
    from .output import TABLE_FORMATS

    if fmt not in TABLE_FORMATS:
        fail(f"unknown --format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return fmt


# --- rules: show, perft ---------------------------------------------------------------------------------------


@app.command()
def show(
    position: str = typer.Argument(..., help="Position string (quote it: it has a space), or startpos."),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    turns: str = typer.Option("", "--turns", metavar="TOKENS", help="Turn tokens to play from POSITION first."),
    color: bool | None = typer.Option(None, "--color/--no-color", help="Reverse video for dark pieces."),
) -> None:
    """Draw a position: each piece's four attributes at a glance, the piece in hand and the pieces left."""
    from quarto_arena.protocol.notation import NotationError, parse_turns
    from quarto_arena.protocol.rules import IllegalTurn

    from .display import render

    v = _variant(variant, attributes, claim)
    pos = _position(position, v)
    try:
        pos = pos.play(parse_turns(turns))
    except (NotationError, IllegalTurn) as e:
        fail(f"bad turns: {e}")
    typer.echo(render(pos, color=sys.stdout.isatty() if color is None else color))


@app.command()
def perft(
    position: str = typer.Argument(..., help="Position string (quote it), or startpos."),
    depth: int = typer.Argument(..., help="Number of turns, 0 or more.", min=0, max=32),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    divide: bool = typer.Option(False, "--divide", help="Also print the count below each legal turn."),
) -> None:
    """Count turn sequences of DEPTH turns, every legal token once (SPEC.md §2.5); the count is the last line."""
    from quarto_arena.protocol import rules

    v = _variant(variant, attributes, claim)
    pos = _position(position, v)
    if divide and depth > 0 and not pos.is_over:
        total = 0
        for turn in pos.legal_turns():
            n = rules.perft(pos.apply(turn), depth - 1)
            total += n
            typer.echo(f"{turn} {n}")
        typer.echo(str(total))
        return
    typer.echo(str(rules.perft(pos, depth)))


@app.command("engines")
def list_engines() -> None:
    """List the built-in engines (usable by name wherever an engine is asked for)."""
    from quarto_arena.engines.registry import BUILTIN

    width = max(map(len, BUILTIN))
    for e in BUILTIN.values():
        typer.echo(f"{e.name:<{width}}  {e.description}")


# --- keys ---------------------------------------------------------------------------------------------------------

keys_app = typer.Typer(
    name="keys",
    help="CurveZMQ keys for bots that connect in (--listen ... --keys DIR).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(keys_app)


@keys_app.command("new")
def keys_new(
    name: str = typer.Argument(..., metavar="NAME", help="The bot's name (remote:NAME), or arena for the arena's."),
    directory: str = typer.Option(..., "--dir", metavar="KEYS", help="The keys directory (created if needed)."),
) -> None:
    """Make a key pair: KEYS/NAME.key (public: give it to the other side) and KEYS/NAME.key_secret (keep it).

    The arena's own pair is named arena. A bot's author gets NAME.key_secret and arena.key; the arena keeps
    arena.key_secret and every NAME.key.
    """
    from .server import KeysError, new_key_pair

    try:
        public, secret = new_key_pair(Path(directory), name)
    except KeysError as e:
        fail(str(e))
    typer.echo(f"{public}\n{secret}")


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


def _check_concurrency(concurrency: int, engines: int) -> None:
    """Refuses a concurrency that would run out of file descriptors or processes; warns above the CPU count."""
    import os
    import resource

    if concurrency < 1:
        fail(f"--concurrency must be at least 1, not {concurrency}")
    # Each game holds two engines; each engine about five descriptors on our side (pipes, pidfd, log).
    needed = concurrency * 2 * 5 + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and needed > soft:
        if hard == resource.RLIM_INFINITY or needed <= hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else hard, hard))
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
        _err(
            f"quarto-arena: warning: --concurrency {concurrency} on {cpus} CPUs: engines will share cores and their"
            " clocks keep running (fair only for engines that do not search)"
        )


def _build_spec(kind: str, engine_words: list[str], options: dict[str, Any]) -> RunSpec:
    """A run from the command line's values; a usage error (exit 2) is one line."""
    from .run import RunError, RunKind, build_spec

    o = options
    test = None
    if kind == "sprt":
        test = (o["elo0"], o["elo1"], o["alpha"], o["beta"], o["model"])
    try:
        spec = build_spec(
            RunKind({"tournament": "tournament", "play": "match", "sprt": "sprt"}[kind]),
            engine_words,
            engines_file=None if o["engines_file"] is None else Path(o["engines_file"]),
            option_settings=o["option"],
            gauntlet=bool(o.get("gauntlet")),
            rounds=o.get("rounds", 1),
            games=o.get("games", 2),
            max_games=o.get("max_games", 0),
            concurrency=o["concurrency"],
            tc=o["tc"],
            margin_ms=o["timemargin"],
            shapes=o["variant"],
            attributes=o["attributes"],
            claims=o["claim"],
            openings_file=None if o["openings"] is None else Path(o["openings"]),
            random_turns=None if o["openings"] is not None and not o["random_openings_given"] else o["random_openings"],
            seed=o["seed"],
            strict=o["strict"],
            sprt=test,
            rating_interval=o.get("rating_interval", 0),
            table_format=o["fmt"],
            log_limit=_size(o["log_limit"]),
            server=_server_spec(o),
            adjudicate=o["adjudicate"],
        )
        _check_keys(spec)
    except RunError as e:
        fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)
    if o.get("cluster") is None:  # on a cluster, -j is games in flight there, not here
        _check_concurrency(spec.concurrency, len(spec.engines))
    return spec


def _server_spec(options: dict[str, Any]) -> ServerSpec | None:
    """``--listen``, ``--keys`` and ``--wait`` as a run's server settings (None without ``--listen``)."""
    from quarto_arena.protocol.bot import EndpointError, parse_endpoint

    from .run import RunError, ServerSpec

    listen, keys = options["listen"], options["keys"]
    if listen is None:
        if keys is not None:
            raise RunError("--keys goes with --listen")
        return None
    try:
        # Plain ZeroMQ authenticates nobody and encrypts nothing: only this machine may connect then.
        endpoint = parse_endpoint(listen, allow_remote=keys is not None)
    except EndpointError as e:
        hint = "; serving other machines takes --keys DIR (CurveZMQ)" if "not a loopback" in str(e) else ""
        raise RunError(f"--listen: {str(e).split('; pass --allow-remote')[0]}{hint}") from None
    return ServerSpec(endpoint, None if keys is None else str(Path(keys).resolve()), float(options["wait"]))


def _check_keys(spec: RunSpec) -> None:
    """Reads the keys a run's server needs, so that a missing one is a usage error before anything starts."""
    if spec.server is not None:
        from .server import server_for

        server_for(spec.server, spec.remote)


def _open_run(kind: str, ctx: typer.Context, engine_words: list[str], options: dict[str, Any]) -> Run:
    """The run to play: resumed from ``--resume DIR``, or created from the options (in ``--out`` or a new dir)."""
    from .run import Run, RunError

    transcript = None
    if options["debug"] is not None:
        transcript = _debug(Path(options["debug"]))
    try:
        if options["resume"] is not None:
            served = {"listen", "keys", "wait"}  # where bots connect is no game option: a resume may move it
            given = _given(
                ctx, {"resume", "quiet", "progress_every", "debug", "web", "cluster", "oversubscribe"} | served
            )
            if given or engine_words:
                what = "engines" if engine_words else "--" + given[0].replace("_", "-")
                fail(f"--resume takes no engines or game options (got {what}): the journal keeps them")
            run = Run.resume(Path(options["resume"]), transcript=transcript)
            moved = served & set(_given(ctx, set()))
            if moved:
                kept = run.spec.server
                if kept is None:
                    run.close()
                    fail("--listen, --keys and --wait serve remote:NAME engines; this run has none")
                # What is not given again stays as the run had it.
                stored = {"listen": kept.endpoint, "keys": kept.keys, "wait": kept.wait}
                options = {**options, **{k: v for k, v in stored.items() if k not in moved}}
                run.spec = replace(run.spec, server=_server_spec(options))
            try:
                _check_keys(run.spec)
            except RunError:
                run.close()
                raise
            return run
        spec = _build_spec(kind, engine_words, options)
        directory = Path(options["out"]) if options["out"] is not None else _default_directory(kind)
        return Run.create(spec, directory, force=options["force"], transcript=transcript)
    except RunError as e:
        if transcript is not None:
            transcript.close()
        fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)


def _cluster(address: str | None) -> Any:
    """The ``--cluster`` address (a ClusterAddress), None without one; a usage error (exit 2) when it is malformed or
    Dask is not installed."""
    if address is None:
        return None
    from .cluster import ClusterAddress
    from .cluster.connection import distributed
    from .run import RunError

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


def _debug(directory: Path) -> Any:
    """The ``--debug`` transcript and log, both in ``directory``."""
    import logging

    from .transport import Transcript

    try:
        transcript = Transcript(directory / "uqi-transcript.log")
        handler = logging.FileHandler(directory / "debug.log")
    except OSError as e:
        fail(f"--debug {directory}: {e.strerror or e}")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("quarto_arena").addHandler(handler)
    logging.getLogger("quarto_arena").setLevel(logging.DEBUG)
    return transcript


def _show_server_log(quiet: bool) -> None:
    """Shows what the server reports (bots connecting, refusals, cuts) on stderr; only warnings with ``--quiet``."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("quarto-arena: %(message)s"))
    handler.setLevel(logging.WARNING if quiet else logging.INFO)
    logger = logging.getLogger("quarto_arena.arena.server")
    logger.addHandler(handler)
    logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))  # --debug may have asked for more


def _fast_event_loop() -> None:
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


async def _play(
    run: Run, view: RunView, web: tuple[str, int] | None = None, cluster: Any = None, oversubscribe: bool = False
) -> RunOutcome:
    """Runs with SIGINT, SIGTERM and SIGHUP turned into a clean stop (engines killed, finished games synced); with
    ``web``, the live page is served at that address while the run goes; on ``cluster`` (a ClusterAddress) when
    given."""
    import asyncio
    import gc
    import signal

    from .run import Interrupt
    from .transport import kill_all, shutdown

    interrupt = Interrupt()

    def on_signal(signum: int) -> None:
        if interrupt.event.is_set():  # a second signal: no more waiting for engines to quit politely
            kill_all()
        interrupt.set(signum)

    # A run keeps its counted games and thousands of session objects alive for hours: moving what exists now out of
    # the collector's sight, and collecting the young generation less often, keeps its passes from growing with
    # them (benchmarks/scale.py measures both settings). Process-wide settings, so the command sets them.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 10, 10)
    loop = asyncio.get_running_loop()
    handled = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    for signum in handled:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        if cluster is not None:
            from .cluster import play_on_cluster

            return await play_on_cluster(run, cluster, view, interrupt=interrupt, oversubscribe=oversubscribe)
        player = None
        if run.spec.server is not None:
            from .server import server_player

            player = server_player(run)
        if web is None:
            return await run.run(view, interrupt=interrupt, player=player)
        from .web.server import run_live

        return await run_live(
            run, view, web, interrupt=interrupt, announce=lambda url: _err(f"live page: {url}"), player=player
        )
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
        await shutdown()  # whatever is left of any engine, and the watchdog, killed and reaped


def _run_command(kind: str, ctx: typer.Context, engine_words: list[str], options: dict[str, Any]) -> None:
    """What ``tournament``, ``play`` and ``sprt`` share: open the run, play it, report, exit with its status."""
    import asyncio
    import signal

    from .output import RunView, final_report, parse_progress_every, write_standings
    from .run import RunError, Verdict
    from .web import WebError, parse_address, require_server

    _table_format(options["fmt"])
    cluster = _cluster(options["cluster"])
    if cluster is not None and options["debug"] is not None:
        fail("--debug records the UQI lines of engines on this machine; with --cluster they run on the workers")
    if cluster is not None and options["web"] is not None:
        fail("--web cannot be used with --cluster; follow the run from another terminal: quarto-arena serve DIR")
    web = None
    if options["web"] is not None:
        try:
            web = parse_address(options["web"])
            require_server()
        except WebError as e:
            fail(str(e))
    every = None
    if options["progress_every"] is not None:
        try:
            every = parse_progress_every(options["progress_every"])
        except ValueError as e:
            fail(str(e))
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
        _err(header)
        if spec.server is not None:
            _show_server_log(options["quiet"])
        view = RunView(
            sys.stderr,
            spec.kind,
            spec.names,
            list(run.records.values()),
            run.total,
            every=every,
            quiet=options["quiet"],
            fmt=spec.table_format,
            interval=spec.rating_interval,
        )
        try:
            _fast_event_loop()
            outcome = asyncio.run(_play(run, view, web, cluster, options["oversubscribe"]))
        except WebError as e:
            view.close()
            fail(f"{e}; the run in {run.directory} has not started: continue it with --resume {run.directory}")
        except RunError as e:
            view.close()
            fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)
        except OSError as e:
            view.close()
            fail(f"{run.directory}: {e.strerror or e}")
        view.close()
        try:
            write_standings(run.directory, outcome)
        except OSError as e:
            _err(f"quarto-arena: warning: cannot write the standings into {run.directory}: {e.strerror or e}")
        _write_report(run.directory, outcome)
        report = final_report(outcome, spec.table_format)
        with contextlib.suppress(OSError):
            typer.echo(report)
    resume = f"quarto-arena {kind} --resume {run.directory}"
    if outcome.aborted:
        n = len(outcome.aborted)
        _err(
            f"{n} game{'s' if n > 1 else ''} in progress abandoned (in {run.directory / 'aborted.jsonl'}): not counted"
        )
    if outcome.interrupted is not None:
        name = signal.Signals(outcome.interrupted).name
        fail(
            f"interrupted by {name} after {len(outcome.records)} games; continue with: {resume}",
            128 + outcome.interrupted,
        )
    if outcome.failure is not None:
        r = outcome.failure
        if spec.sprt is None or r.termination.value == "engine error":
            fail(
                f"stopped by game {r.game_id}: {r.termination.value}: {r.detail}; fix the engine, then {resume}",
                EXIT_ENGINE,
            )
    verdict = outcome.verdict
    if verdict is not None:
        raise typer.Exit(
            {Verdict.H1: 0, Verdict.H0: 1, Verdict.ENGINE_FAILURE: EXIT_ENGINE, Verdict.NO_DECISION: 4}[verdict]
        )


def _write_report(directory: Path, outcome: RunOutcome) -> None:
    """``report.html`` next to the standings; a failure to write it is a warning, never a lost result."""
    from .web.report import write_report

    try:
        write_report(directory, outcome, warn=lambda text: _err(f"quarto-arena: warning: {text}"))
    except OSError as e:
        _err(f"quarto-arena: warning: cannot write the report into {directory}: {e.strerror or e}")


#: The options play, tournament and sprt share: name, type, declaration (each command adds its own).
_RUN_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("engines_file", str | None, EnginesFileOpt),
    ("option", list[str], OptionOpt),
    ("concurrency", int, ConcurrencyOpt),
    ("tc", str, TcOpt),
    ("timemargin", int, TimeMarginOpt),
    ("variant", str, VariantOpt),
    ("attributes", str, AttributesOpt),
    ("claim", str, ClaimOpt),
    ("openings", str | None, OpeningsOpt),
    ("random_openings", int, RandomOpeningsOpt),
    ("seed", int, SeedOpt),
    ("fmt", str, FormatOpt),
    ("out", str | None, OutOpt),
    ("resume", str | None, ResumeOpt),
    ("force", bool, ForceOpt),
    ("progress_every", str | None, ProgressOpt),
    ("quiet", bool, QuietOpt),
    ("debug", str | None, DebugOpt),
    ("log_limit", str, LogLimitOpt),
    ("listen", str | None, ListenOpt),
    ("keys", str | None, KeysOpt),
    ("wait", float, WaitOpt),
    ("web", str | None, WebOpt),
    ("adjudicate", int | None, AdjudicateOpt),
    ("cluster", str | None, ClusterOpt),
    ("oversubscribe", bool, OversubscribeOpt),
)


def _run_options(kind: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Gives a run command the options every run command shares, after its own, and runs it.

    The decorated function declares only what is its own (``ctx``, the engines, its particular options) and checks
    what it must; the run is played by :func:`_run_command` with every value.
    """
    import inspect
    import typing

    def decorate(own: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(own, eval_str=True)
        shared = [
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=declared, annotation=hint)
            for name, hint, declared in _RUN_OPTIONS
        ]

        def command(**values: Any) -> None:
            own(**{name: values[name] for name in signature.parameters})
            ctx = values["ctx"]
            values["random_openings_given"] = "random_openings" in _given(ctx, set())
            _run_command(kind, ctx, values["engines"] or [], values)

        command.__name__, command.__doc__, command.__module__ = own.__name__, own.__doc__, own.__module__
        command.__signature__ = signature.replace(parameters=[*signature.parameters.values(), *shared])  # type: ignore[attr-defined]
        command.__annotations__ = {**typing.get_type_hints(own), **{name: hint for name, hint, _ in _RUN_OPTIONS}}
        return command

    return decorate


_ENGINES_HELP = (
    "built-in names, commands (quoted), tcp:// or ipc:// endpoints, remote:NAME (a bot that connects in, with "
    "--listen), names from --engines FILE; NAME=ENGINE names one."
)


@app.command()
@_run_options("tournament")
def tournament(
    ctx: typer.Context,
    engines: list[str] = typer.Argument(None, metavar="[ENGINE]...", help="Engines: " + _ENGINES_HELP),
    gauntlet: bool = typer.Option(False, "--gauntlet", help="The first engine against each of the others."),
    games: int = typer.Option(2, "--games", metavar="N", help="Games per encounter per round (even: whole pairs)."),
    rounds: int = typer.Option(1, "--rounds", metavar="N", help="Rounds: each repeats every encounter."),
    strict: bool = typer.Option(False, "--strict/--lenient", help="Stop at the first engine failure (exit 3)."),
    rating_interval: int = typer.Option(
        0, "--rating-interval", metavar="N", min=0, help="Interim table every N games."
    ),
) -> None:
    """Run a round-robin or gauntlet tournament in colour-swapped pairs; crash-safe, resumable with --resume DIR.

    The table's columns: rank; player; rating (logistic Elo, pool average 0); margin (95% interval half-width);
    games; points; score (points per game); draw_rate; los_next (likelihood of superiority over the next line);
    forfeits (games lost by an engine failure), then one column per failure reason seen.
    """


@app.command()
@_run_options("play")
def play(
    ctx: typer.Context,
    engines: list[str] = typer.Argument(None, metavar="ENGINE ENGINE", help="Two engines: " + _ENGINES_HELP),
    games: int = typer.Option(2, "--games", metavar="N", help="Number of games (colours alternate, in pairs)."),
    strict: bool = typer.Option(False, "--strict/--lenient", help="Stop at the first engine failure (exit 3)."),
) -> None:
    """Play a match between two engines and print the score, Elo and pair statistics; resumable with --resume DIR."""


@app.command()
@_run_options("sprt")
def sprt(
    ctx: typer.Context,
    engines: list[str] = typer.Argument(
        None, metavar="NEW BASE", help="The engine under test, then the engine it must beat or match."
    ),
    elo0: float | None = typer.Option(None, "--elo0", metavar="ELO", help="Elo under H0 (in --model units)."),
    elo1: float | None = typer.Option(
        None, "--elo1", metavar="ELO", help="Elo under H1 (in --model units); above --elo0."
    ),
    alpha: float = typer.Option(0.05, "--alpha", metavar="P", help="False positive rate (accept H1 when H0 holds)."),
    beta: float = typer.Option(0.05, "--beta", metavar="P", help="False negative rate (accept H0 when H1 holds)."),
    model: str = typer.Option(
        "normalized", "--model", metavar="MODEL", help="Units of the bounds: normalized or logistic."
    ),
    max_games: int = typer.Option(
        0, "--max-games", metavar="N", min=0, help="Give up (exit 4) after N games; 0: never."
    ),
    strict: bool = typer.Option(
        True, "--strict/--lenient", help="Stop at the first engine failure (exit 3) or count it as a loss."
    ),
) -> None:
    """Play NEW against BASE in colour-swapped pairs until the SPRT decides. Exit 0: H1 (pass), 1: H0 (fail),
    3: an engine failed, 4: no decision within --max-games."""
    if ctx.params.get("resume") is None and (elo0 is None or elo1 is None):
        fail("sprt needs --elo0 and --elo1, e.g. --elo0 0 --elo1 10")


# --- rate --------------------------------------------------------------------------------------------------------


@app.command()
def rate(
    files: list[str] = typer.Argument(..., metavar="FILE.pgn...", help="PGN files (ours or any tool's)."),
    fmt: str = FormatOpt,
    anchor: str | None = typer.Option(
        None, "--anchor", metavar="NAME=ELO", help="Fix one rating (default: pool average 0)."
    ),
) -> None:
    """Print the Elo table (and forfeits by reason) of the games in PGN files, then the crosstable."""
    from collections import Counter

    from .output import format_table, results_table
    from .pgn import PgnError, read_games
    from .records import Termination
    from .stats import ScoredGame, crosstable_rows, rating_rows
    from .stats import rate as fit

    _table_format(fmt)
    anchored = None
    if anchor is not None:
        name, sep, elo = anchor.rpartition("=")
        try:
            anchored = (name, float(elo))
        except ValueError:
            fail(f"--anchor {anchor!r}: expected NAME=ELO, e.g. greedy=1500")
        if not sep or not name:
            fail(f"--anchor {anchor!r}: expected NAME=ELO, e.g. greedy=1500")
    scored: list[ScoredGame] = []
    forfeits: dict[str, Counter[Termination]] = {}
    failures = {t.value: t for t in Termination if t.is_failure}
    try:
        for path in files:
            for g in read_games(path):
                white, black, score = g.tags.get("White", "?"), g.tags.get("Black", "?"), g.white_score
                if score is None:
                    continue
                scored.append(ScoredGame(white, black, score))
                reason = failures.get(g.tags.get("Termination", ""))
                if reason is not None and score != 0.5:
                    forfeits.setdefault(black if score == 1.0 else white, Counter())[reason] += 1
    except PgnError as e:
        fail(str(e))
    if not scored:
        fail("no finished games in " + ", ".join(files))
    try:
        table = fit(scored, anchor=anchored)
    except ValueError as e:
        fail(str(e))
    for p in table.players:
        forfeits.setdefault(p.name, Counter())
    typer.echo(format_table(results_table(rating_rows(table), forfeits), fmt))
    if fmt not in ("csv", "json"):
        typer.echo("")
        typer.echo(format_table(crosstable_rows(table), fmt))


# --- report, serve ---------------------------------------------------------------------------------------------------


@app.command()
def report(
    directory: str = typer.Argument(..., metavar="DIR", help="A run directory (finished, or still being played)."),
) -> None:
    """Write DIR/report.html again from the run's journal: tables, plots and the game viewer in one offline file.

    Every run writes it when it ends; run this after `quarto-arena analyse DIR/games.pgn` to add the per-turn
    values, or to see a run that is still being played. Prints the report's path.
    """
    from .web import WebError
    from .web.report import write_directory_report

    try:
        path = write_directory_report(Path(directory), warn=lambda text: _err(f"quarto-arena: warning: {text}"))
    except WebError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{directory}: cannot write the report: {e.strerror or e}")
    typer.echo(str(path))


@app.command()
def serve(
    directory: str = typer.Argument(..., metavar="DIR", help="A run directory (finished, or still being played)."),
    web: str = typer.Option(
        "127.0.0.1:8080", "--web", metavar="HOST:PORT", help="Where to serve the page (port 0: any free one)."
    ),
) -> None:
    """Serve the live page of a run directory, finished or still being written by another process, until Ctrl-C.

    Needs the web extra (pip install "quarto-arena[web]"). Stopping it with Ctrl-C or SIGTERM is its normal end
    (exit status 0).
    """
    import asyncio

    from .web import WebError, parse_address, require_server

    try:
        address = parse_address(web)
        require_server()
        from .web.server import serve_directory

        asyncio.run(
            serve_directory(
                Path(directory),
                address,
                announce=lambda url: _err(f"serving {directory} at {url} (Ctrl-C stops)"),
                warn=lambda text: _err(f"quarto-arena: warning: {text}"),
            )
        )
    except WebError as e:
        fail(str(e))


# --- check ---------------------------------------------------------------------------------------------------------


@app.command()
def check(
    engine: str = typer.Argument(
        ...,
        metavar="ENGINE",
        help="A built-in name, a quoted command line, tcp://HOST:PORT / ipc://PATH, or remote:NAME (a bot that "
        "connects in, with --listen); NAME=ENGINE names it.",
    ),
    keep_going: bool = typer.Option(False, "--keep-going", help="Run every step, not only up to the first failure."),
    timeout_scale: float = typer.Option(
        1.0, "--timeout-scale", metavar="X", min=0.01, help="Multiply every deadline (e.g. 3 on a slow machine)."
    ),
    verbose: bool = typer.Option(False, "--verbose", help="Print every step's I/O, not only a failed step's."),
    listen: str | None = ListenOpt,
    keys: str | None = KeysOpt,
    wait: float = WaitOpt,
    cluster: str | None = typer.Option(
        None,
        "--cluster",
        metavar="ADDRESS",
        help="Run the check on every worker of a Dask cluster (tcp://SCHEDULER:8786 or local:N) instead of here.",
    ),
) -> None:
    """Check that an engine speaks UQI: numbered steps, the I/O of a failed step; exit 0 only if it complies."""
    import asyncio

    from .compliance import CheckTimeouts, format_report, run_check
    from .roster import RosterError, resolve_engines
    from .run import RunError

    try:
        (config,) = resolve_engines([engine])
        served = _server_spec({"listen": listen, "keys": keys, "wait": wait})
        if (config.remote is None) != (served is None):
            what = "--listen serves remote:NAME engines only" if served else f"{config.describe()} needs --listen"
            raise RunError(what)
    except (RosterError, RunError) as e:
        fail(str(e))
    timeouts = CheckTimeouts().scaled(timeout_scale)
    address = _cluster(cluster)
    if address is not None:
        if served is not None:
            fail("remote:NAME bots connect in to this machine; --cluster checks on the workers")
        _check_on_cluster(address, config, timeouts, keep_going, verbose)
    if served is None:
        report = asyncio.run(run_check(config, timeouts=timeouts, keep_going=keep_going))
    else:
        _show_server_log(quiet=False)
        try:
            report = asyncio.run(_check_remote(config, served, timeouts, keep_going))
        except RunError as e:
            fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)
    if not report.started:
        fail(report.steps[0].reason, EXIT_ENGINE)
    for line in format_report(report, verbose=verbose):
        typer.echo(line)
    raise typer.Exit(0 if report.complies else 1)


async def _check_remote(
    config: EngineConfig, served: ServerSpec, timeouts: CheckTimeouts, keep_going: bool
) -> CheckReport:
    """``check remote:NAME``: serves, waits for the bot (RunError, an engine failure, when it does not come), checks."""
    from .compliance import run_check
    from .run import RunError
    from .server import ServerError, server_for

    assert config.remote is not None
    server = server_for(served, [config.remote])
    try:
        try:
            await server.start()
        except ServerError as e:
            raise RunError(str(e)) from None
        if await server.wait_for(served.wait):
            absent = f"remote:{config.remote} did not connect to {served.endpoint} within {served.wait:g} s"
            raise RunError(absent, engine=True)
        return await run_check(config, timeouts=timeouts, keep_going=keep_going, connector=server.lease)
    finally:
        await server.close()


def _check_on_cluster(address: Any, config: Any, timeouts: Any, keep_going: bool, verbose: bool) -> NoReturn:
    """``check --cluster``: the check on every worker; a complying worker gets its summary line, any other its whole
    report. Exit 0 when the engine complies everywhere, 3 when a worker cannot start it, else 1."""
    import asyncio

    from .cluster import Cluster
    from .compliance import format_report
    from .run import RunError

    async def on_each() -> Any:
        async with Cluster.connect(address) as c:
            return await c.check(config, timeouts, keep_going)

    try:
        results = asyncio.run(on_each())
    except RunError as e:
        fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)
    for r in results:
        lines = format_report(r.report, verbose=verbose)
        if not r.report.started:
            lines = [f"{lines[-1]}: {r.report.steps[0].reason}"]
        shown = lines if verbose or not r.report.complies else lines[-1:]
        typer.echo(f"worker {r.worker}: " + "\n".join(shown))
    if not all(r.report.started for r in results):
        raise typer.Exit(EXIT_ENGINE)
    raise typer.Exit(0 if all(r.report.complies for r in results) else 1)


# --- analyse -------------------------------------------------------------------------------------------------------


@app.command()
def analyse(
    target: str = typer.Argument(
        ...,
        metavar="POSITION|FILE.pgn",
        help="A position string (quote it: it has a space) or startpos; or a PGN file.",
    ),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    seconds: float | None = typer.Option(
        None, "--time", min=0.001, help="Bound each search to S seconds (the value may then be unproven)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: the value object, or the PGN summary."),
    from_empties: int = typer.Option(
        12, "--from", min=1, max=16, help="PGN: analyse from the first position with at most EMPTIES empty squares."
    ),
    out: str | None = typer.Option(
        None, "--out", help="PGN: directory for NAME.analysis.pgn and NAME.analysis.jsonl (default: the input's)."
    ),
) -> None:
    """Solve a position (value, turns to the end, every best turn), or find the mistakes in the games of a PGN file.

    The variant options apply to a position, and to games without a Variant tag.
    """
    import json
    from pathlib import Path

    v = _variant(variant, attributes, claim)
    if target.lower().endswith(".pgn") or Path(target).is_file():
        _analyse_games(target, v, seconds, from_empties, out, as_json)
        return
    from .analysis import Analyser

    position = _position(target, v)
    if position.is_over:
        fail("the game is over in this position: there is nothing to analyse")
    result = Analyser(seconds).position(position)
    value = result.value
    best = [str(t) for t in result.best]
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "value": None if value is None else value.verdict.value,
                    "turns": None if value is None else value.turns,
                    "best": best,
                    "proven": value is not None,
                    "nodes": result.nodes,
                    "seconds": round(result.seconds, 3),
                }
            )
        )
        return
    if value is None:
        typer.echo(f"unproven within {seconds:g} s")
        typer.echo(f"best turn found: {best[0]}")
    else:
        how = "draw" if value.verdict.value == "draw" else f"{value.verdict.value} in {value.turns} turns"
        typer.echo(f"{how}, for the player to move")
        typer.echo(f"best: {' '.join(best)}")
    typer.echo(f"{result.nodes:,} nodes, {result.seconds:.2f} s")


def _analyse_games(
    target: str, variant: Variant, seconds: float | None, from_empties: int, out: str | None, as_json: bool
) -> None:
    """``analyse FILE.pgn``: annotated PGN and JSON Lines written, mistakes and the per-engine summary printed."""
    from pathlib import Path

    from .analysis import Analyser, AnalysisError, GameAnalysis, summarize, summary_rows
    from .output import format_table
    from .pgn import PgnError

    path = Path(target)
    if not path.is_file():
        fail(f"{path}: no such file")

    def report(index: int, game: GameAnalysis) -> None:
        for t in game.analysed:
            if t.mistake is not None and not as_json:
                typer.echo(
                    f"game {index + 1} ({game.white} vs {game.black}): turn {t.ply + 1} {t.turn} by {t.player}, "
                    f"{t.empty} empty: {t.mistake} (was {t.before}, now {t.after})"
                )

    try:
        done = Analyser(seconds).file(path, variant, from_empties, None if out is None else Path(out), report)
    except (PgnError, AnalysisError) as e:
        fail(str(e))
    except OSError as e:
        fail(f"{e.filename or path}: {e.strerror or e}")
    if not done.games:
        fail(f"{path}: no games")
    typer.echo(format_table(summary_rows(summarize(done.games)), "json" if as_json else "simple"))
    typer.echo(f"wrote {done.pgn} and {done.jsonl}", err=True)
