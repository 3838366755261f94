"""``quarto-arena new-bot LANG DIR``: a starter bot in Python, C, JavaScript, Rust or Java, and what to do next."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import typer

from .app import app, fail


@app.command("new-bot")
def new_bot(
    language: str = typer.Argument(..., metavar="LANG", help="python, c, javascript, rust or java."),
    directory: Path = typer.Argument(..., metavar="DIR", help="Where to write it (created; must be empty)."),
) -> None:
    """Write a small, complete UQI bot to start from: it passes `check` and beats `random`."""
    from quarto_arena.engines.starters import StarterError, write_starter

    try:
        starter = write_starter(language, directory)
    except StarterError as e:
        fail(str(e))
    command = shlex.join(starter.command(directory, sys.executable))
    name = directory.name or "bot"
    engine = shlex.quote(f"{name}={command}")
    typer.echo(f"Wrote a {starter.title} bot to {directory}: {', '.join(starter.files)}")
    missing = [t for t in starter.tools if shutil.which(t) is None]
    if missing:
        typer.echo(f"Building and running it needs {', '.join(missing)}, which is not on this machine's PATH.")
    typer.echo("")
    if starter.build:
        typer.echo("Build it:")
        for step in starter.build:
            typer.echo(f"  cd {shlex.quote(str(directory))} && {step}")
    typer.echo("Run it (it speaks UQI on standard input and output; type 'uqi', then 'quit'):")
    typer.echo(f"  {command}")
    typer.echo("Then check that it follows the protocol, and play it against the random bot:")
    typer.echo(f"  quarto-arena check {engine}")
    typer.echo(f"  quarto-arena play {engine} random --games 40 --tc st=0.05")
