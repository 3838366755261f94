"""``quarto-arena check``: the compliance check of one engine, local, connecting in (``remote:NAME``) or on every
worker of a cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from ..compliance import CheckReport, CheckTimeouts
    from ..engine import EngineConfig
    from ..run import ServerSpec

from .app import EXIT_ENGINE, app, echo_out, fail, import_to_run, run_option
from .runs import cluster_option, show_server_log

KeysOpt = run_option("keys")
ListenOpt = run_option("listen")
WaitOpt = run_option("wait")

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
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Fail on a warning too: every should of SPEC.md (inputs an arena never sends, the time kept back).",
    ),
    timeout_scale: float = typer.Option(
        1.0, "--timeout-scale", metavar="X", min=0.01, help="Multiply every deadline (e.g. 3 on a slow machine)."
    ),
    verbose: bool = typer.Option(False, "--verbose", help="Print every step's I/O, not only a failed step's."),
    transcript: str | None = typer.Option(
        None, "--transcript", metavar="FILE", help="Write every line of the whole exchange, with time stamps, to FILE."
    ),
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
    import_to_run("check")
    import asyncio

    from ..compliance import CheckTimeouts, format_report, run_check
    from ..roster import RosterError, resolve_engines
    from ..run import RunError, server_spec

    try:
        (config,) = resolve_engines([engine])
        served = server_spec(listen, keys, wait)
        if (config.remote is None) != (served is None):
            what = "--listen serves remote:NAME engines only" if served else f"{config.describe()} needs --listen"
            raise RunError(what)
    except (RosterError, RunError) as e:
        fail(str(e))
    timeouts = CheckTimeouts().scaled(timeout_scale)
    address = cluster_option(cluster)
    if address is not None:
        if served is not None:
            fail("remote:NAME bots connect in to this machine; --cluster checks on the workers")
        if transcript is not None:
            fail("--transcript writes one engine's exchange; with --cluster, use --verbose (every worker's lines)")
        _check_on_cluster(address, config, timeouts, keep_going, strict, verbose)
    if served is None:
        report = asyncio.run(run_check(config, timeouts=timeouts, keep_going=keep_going, strict=strict))
    else:
        show_server_log(quiet=False)
        try:
            report = asyncio.run(_check_remote(config, served, timeouts, keep_going, strict))
        except RunError as e:
            fail(str(e), e.status)
    if not report.started:
        fail(report.steps[0].reason, EXIT_ENGINE)
    if transcript is not None:
        _write_transcript(transcript, report)
    for line in format_report(report, verbose=verbose):
        echo_out(line)
    raise typer.Exit(0 if report.complies else 1)


def _write_transcript(path: str, report: CheckReport) -> None:
    """``--transcript FILE``: the whole exchange; a file that cannot be written is a usage error."""
    from pathlib import Path

    from ..compliance import format_transcript

    try:
        Path(path).write_text("\n".join(format_transcript(report)) + "\n", encoding="utf-8")
    except OSError as e:
        fail(f"--transcript {path}: {e.strerror or e}")


async def _check_remote(
    config: EngineConfig, served: ServerSpec, timeouts: CheckTimeouts, keep_going: bool, strict: bool
) -> CheckReport:
    """``check remote:NAME``: serves, waits for the bot (RunError, an engine failure, when it does not come), checks."""
    from ..compliance import run_check
    from ..run import RunError
    from ..server import ServerError, server_for

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
        return await run_check(config, timeouts=timeouts, keep_going=keep_going, strict=strict, connector=server.lease)
    finally:
        await server.close()


def _check_on_cluster(
    address: Any, config: Any, timeouts: Any, keep_going: bool, strict: bool, verbose: bool
) -> NoReturn:
    """``check --cluster``: the check on every worker; a complying worker gets its summary line, any other its whole
    report. Exit 0 when the engine complies everywhere, 3 when a worker cannot start it, else 1. The workers run the
    plain check; ``--strict`` judges their reports here (:func:`~..compliance.strict_report`)."""
    import asyncio
    import dataclasses

    from ..cluster import Cluster
    from ..compliance import format_report, strict_report
    from ..run import RunError

    async def on_each() -> Any:
        async with Cluster.connect(address) as c:
            return await c.check(config, timeouts, keep_going)

    try:
        results = asyncio.run(on_each())
    except RunError as e:
        fail(str(e), e.status)
    if strict:
        results = [dataclasses.replace(r, report=strict_report(r.report, keep_going=keep_going)) for r in results]
    for r in results:
        lines = format_report(r.report, verbose=verbose)
        if not r.report.started:
            lines = [f"{lines[-1]}: {r.report.steps[0].reason}"]
        shown = lines if verbose or not r.report.complies else lines[-1:]
        echo_out(f"worker {r.worker}: " + "\n".join(shown))
    if not all(r.report.started for r in results):
        raise typer.Exit(EXIT_ENGINE)
    raise typer.Exit(0 if all(r.report.complies for r in results) else 1)
