"""The ``tune`` command: SPSA over a bot's spin options (arena/tune), a run of the one runner, on this machine or a
Dask cluster, journaled and resumable; it ends with the tuned values as ``-o`` options and the ``sprt`` command that
would confirm them."""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..options import RunOptions
from .app import app, echo_err, echo_out, fail, import_to_run
from .runs import (
    _check_concurrency,
    _default_directory,
    _given,
    debug_option,
    end_of_run,
    given_again,
    late_signals,
    play_run,
    run_options,
    run_view,
    session_options,
)

if TYPE_CHECKING:
    from ..run import Interrupt, RunOutcome
    from ..tune import Tune

_PARAM_HELP = (
    "A spin option to tune, repeatable: START inside [MIN, MAX] (inside the declared range); C_END the perturbation"
    " and R_END the learning rate at the end, as fishtest means them (defaults: a twentieth of the range, 0.002)."
)
_OWN = {"engine": "engines", "param": "--param", "pairs": "--pairs", "spsa_alpha": "--spsa-alpha"}
_OWN |= {"spsa_gamma": "--spsa-gamma", "spsa_a": "--spsa-a"}


def _tune(ctx: typer.Context, options: RunOptions, own: dict[str, Any]) -> None:
    """Opens the tune (new, or ``--resume``), plays it, writes its report, prints the values, exits with its
    status."""
    import_to_run("tune")

    cluster, web, every = session_options(options)
    tune = _open_tune(ctx, options, own)
    with tune:
        run = tune.run
        assert run.directory is not None
        directory = run.directory
        spec, t = run.spec, tune.tune
        params = ", ".join(t.names)
        header = (
            f"Tune in {directory}: {t.engine} ({spec.names[0]} against {spec.names[1]}) over {params};"
            f" {t.gains.pairs} pairs, {tune.tuner.pairs} already played"
        )
        view, announce = run_view(run, header, every, options.quiet)

        async def games(interrupt: Interrupt) -> RunOutcome:
            if web is None:
                announce()
                return await tune.play(view, interrupt=interrupt, cluster=cluster, oversubscribe=options.oversubscribe)
            from ..tune.live import play_live

            return await play_live(tune, view, web, interrupt=interrupt, announce=announce)

        outcome = play_run("tune", directory, view, games)
        if late_signals():
            echo_err(f"quarto-arena: report.html not written (stopped); make it with: quarto-arena report {directory}")
        else:
            _write_report(tune, outcome)
        with contextlib.suppress(OSError):
            echo_out(_summary(tune))
    end_of_run("tune", directory, outcome)


def _open_tune(ctx: typer.Context, options: RunOptions, own: dict[str, Any]) -> Tune:
    """The tune to play: resumed from ``--resume DIR``, or made from the options once they are all valid (the
    engine started and checked) and only then written (in ``--out`` or a new directory)."""
    from ..run import RunError
    from ..tune import Tune, TuneError, build_tune, gains_of

    transcript = None if options.debug is None else debug_option(Path(options.debug))
    try:
        if options.resume is not None:
            given = [_OWN[name] for name in _given(ctx, set()) if name in _OWN] + given_again(ctx, "tune")
            if given:
                fail(f"--resume takes no engine, --param or game options (got {given[0]}): the journal keeps them")
            return Tune.resume(Path(options.resume), transcript=transcript)
        if own["pairs"] is None:
            fail("tune needs --pairs N: the colour-swapped pairs of games to play, one iteration each")
        gains = gains_of(own["pairs"], own["spsa_alpha"], own["spsa_gamma"], own["spsa_a"])
        spec, tune = build_tune(own["engine"] or [], options, own["param"], gains)
        if options.cluster is None:  # on a cluster, -j is games in flight there, not here
            _check_concurrency(spec.concurrency, len(spec.engines))
        directory = Path(options.out) if options.out is not None else _default_directory("tune")
        return Tune.create(spec, tune, directory, force=options.force, transcript=transcript)
    except (RunError, TuneError) as e:
        if transcript is not None:
            transcript.close()
        fail(str(e), e.status)


def _write_report(tune: Tune, outcome: RunOutcome) -> None:
    """``report.html``; a failure to write it is a warning, never a lost result."""
    from ..tune.pages import write_tune_report

    directory = tune.run.directory
    assert directory is not None
    try:
        write_tune_report(tune, outcome)
    except OSError as e:
        echo_err(f"quarto-arena: warning: cannot write the report into {directory}: {e.strerror or e}")


def _summary(tune: Tune) -> str:
    """What a tune prints last: the values, the ``-o`` options to paste, the ``sprt`` line that would confirm
    them against the start values."""
    t, tuner, spec = tune.tune, tune.tuner, tune.run.spec
    state = "tuned" if tuner.pairs >= t.gains.pairs else "so far"
    lines = [f"{t.engine} after {tuner.pairs} of {t.gains.pairs} pairs ({2 * tuner.pairs} games), {state}:"]
    width = max(len(n) for n in t.names)
    for p, value in zip(t.params, tuner.theta, strict=True):
        lines.append(f"  {p.name:<{width}}  {value:10.3f}   start {p.start:g}, range [{p.min}, {p.max}]")
    tuned = tune.options()
    lines.append("options: " + " ".join(f"-o {n}={v}" for n, v in tuned.items()))
    word = shlex.quote(t.word)
    command = ["quarto-arena sprt", f"new={word}", f"base={word}"]
    if t.engines_file is not None:
        command.append(f"--engines {shlex.quote(t.engines_file)}")
    tuned_keys = {n.lower() for n in t.names}
    command += [
        f"-o {shlex.quote(f'{k}={v}')}" for k, v in spec.engines[0].options.items() if k.lower() not in tuned_keys
    ]
    command += [f"-o new:{n}={v}" for n, v in tuned.items()]
    command += [f"-o base:{p.name}={round(p.start)}" for p in t.params]
    command += [f"--tc {shlex.quote(spec.game.time_control.text)}", "--elo0 0 --elo1 5"]
    lines.append("confirm them against the start values with:")
    lines.append("  " + " ".join(command))
    return "\n".join(lines)


@app.command()
@run_options("tune", _tune)
def tune(
    ctx: typer.Context,
    engine: list[str] = typer.Argument(
        None,
        metavar="ENGINE",
        help="The engine to tune: a command (quoted), a built-in name, a tcp:// or ipc:// endpoint, or a name from"
        " --engines FILE.",
    ),
    param: list[str] = typer.Option([], "--param", metavar="NAME=START,MIN,MAX[,C_END[,R_END]]", help=_PARAM_HELP),
    pairs: int = typer.Option(None, "--pairs", metavar="N", help="Colour-swapped pairs to play: one iteration each."),
    spsa_alpha: float = typer.Option(0.602, "--spsa-alpha", metavar="A", help="Decay of the learning rate."),
    spsa_gamma: float = typer.Option(0.101, "--spsa-gamma", metavar="G", help="Decay of the perturbation."),
    spsa_a: float = typer.Option(0.1, "--spsa-a", metavar="F", help="SPSA's stability constant A, a share of --pairs."),
) -> None:
    """Tune an engine's spin options with SPSA (as fishtest does): pairs of games between the engine with its values
    perturbed up and down, each pair moving them; crash-safe, resumable with --resume DIR. Ends with the tuned
    values as -o options and the sprt command that would confirm them."""
