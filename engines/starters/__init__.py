"""Starter bots, one per language, that ``quarto-arena new-bot LANG DIR`` writes: small, complete UQI engines.

Each speaks every part of UQI (SPEC.md), searches a little (alpha-beta, deepening until its time is spent) and
passes ``quarto-arena check``. The templates are package data: the folder of each language holds the files
written, with their paths below it. :data:`STARTERS` says how each is built and run; :func:`write_starter` writes
one. Nothing here prints: the CLI shows the commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final

__all__ = ["STARTERS", "Starter", "StarterError", "write_starter"]


class StarterError(Exception):
    """A starter that cannot be written: an unknown language, or a directory that is not empty."""


@dataclass(frozen=True, slots=True)
class Starter:
    """One language's starter bot."""

    language: str
    """The name ``new-bot`` takes."""
    title: str
    """The language as a reader names it."""
    files: tuple[str, ...]
    """The files written, relative to the bot's directory."""
    build: tuple[str, ...]
    """The commands that build it, run in its directory (none for a script)."""
    argv: tuple[str, ...]
    """The command that runs it: ``{dir}`` stands for its directory, ``{python}`` for this Python."""
    tools: tuple[str, ...]
    """The programs building and running it needs."""

    def command(self, directory: Path, python: str) -> list[str]:
        """The command that runs the bot written to ``directory``, from any working directory."""
        where = str(directory.resolve())
        return [a.replace("{dir}", where).replace("{python}", python) for a in self.argv]


STARTERS: Final[dict[str, Starter]] = {
    s.language: s
    for s in (
        Starter("python", "Python (the SDK)", ("bot.py",), (), ("{python}", "{dir}/bot.py"), ()),
        Starter("c", "C", ("bot.c",), ("cc -O2 -o bot bot.c",), ("{dir}/bot",), ("cc",)),
        Starter("javascript", "JavaScript (Node.js)", ("bot.js",), (), ("node", "{dir}/bot.js"), ("node",)),
        Starter(
            "rust",
            "Rust (std only)",
            ("Cargo.toml", "src/main.rs"),
            ("cargo build --release --offline",),
            ("{dir}/target/release/quarto-bot",),
            ("cargo",),
        ),
        Starter(
            "java",
            "Java (the JDK only)",
            ("QuartoBot.java",),
            ("javac QuartoBot.java",),
            # One garbage collector thread and the quick compiler only: no pause or compilation burst of the JVM's
            # own competes with a search of a few milliseconds on a loaded machine.
            ("java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", "{dir}", "QuartoBot"),
            ("javac", "java"),
        ),
    )
}
"""Language -> its starter, in the order the README presents them."""


def _template(language: str, name: str) -> Traversable:
    node = resources.files(__name__).joinpath(language)
    for part in name.split("/"):
        node = node.joinpath(part)
    return node


def write_starter(language: str, directory: Path) -> Starter:
    """Writes the starter bot for ``language`` into ``directory`` (created; it must not hold files already).

    Raises :class:`StarterError` naming the problem; an existing file is never overwritten.
    """
    starter = STARTERS.get(language.lower())
    if starter is None:
        raise StarterError(f"no starter bot for {language!r}; choose from {', '.join(STARTERS)}")
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise StarterError(f"{directory} already exists and is not an empty directory")
    try:
        for name in starter.files:
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_template(starter.language, name).read_bytes())
    except OSError as e:
        raise StarterError(f"cannot write {directory}: {e.strerror or e}") from None
    return starter
