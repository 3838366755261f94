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
    typer.echo("")
    for line in ladder_steps(name, starter.language, command):
        typer.echo(line)


def ladder_steps(name: str, language: str, command: str) -> list[str]:
    """What ``new-bot`` prints last: the way to a ladder (an arena that serves, SPEC §3.4). The author makes the key
    pair and sends only its public half; the bot connects in with ``--stay``, the bridge carrying a stdio bot and
    the Python SDK connecting by itself."""
    key = shlex.quote(f"keys/{name}.key_secret")
    connect = f"--connect tcp://HOST:PORT --name {shlex.quote(name)} --key {key} --server-key arena.key --stay"
    if language == "python":
        play = f"{command} {connect}"
    else:
        play = f"{shlex.join([sys.executable, '-m', 'quarto_arena.protocol.bridge'])} {connect} -- {command}"
    return [
        "To play on a ladder (an arena that serves), make your own key pair and send the operator only the public",
        f"half, keys/{name}.key (keep keys/{name}.key_secret to yourself); the operator gives you arena.key:",
        f"  quarto-arena keys new {shlex.quote(name)} --dir keys",
        "Then connect, from any machine (no open port needed); --stay waits for the ladder to read your key:",
        f"  {play}",
    ]
