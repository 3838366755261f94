"""The options of the run commands (``tournament``, ``play``, ``sprt``, ``tune``) and of ``ladder run``, declared
once: :class:`RunOptions`.

Each field is one command-line option: its name is the option's parameter name, its default the dataclass default,
and its metadata (:class:`Flag`) says how it is spelled, which commands take it, how it is shown in ``--help``, and
its journal form (:class:`Journal`: whether the journal keeps it, and so whether ``--resume`` refuses it). The CLI
builds the commands' signatures from it (``arena/cli/runs.py``); :func:`~quarto_arena.arena.run.build_spec` turns
the values into a :class:`~quarto_arena.arena.run.RunSpec`, the journal's form of a run.

A new option is one field here (the commands take it, ``--help`` shows it, ``--resume`` treats it as its journal
form says) plus its use: ``build_spec`` carries a kept one into the spec. ``ladder run`` (:data:`LADDER`) takes the
options that say so, the games' settings among them (:func:`~quarto_arena.arena.settings.game_settings` reads them
for a run and a ladder alike), and declares its own beside them (``arena/cli/ladder.py``); a ladder has no journal,
and the journal forms mean nothing to it. This module imports nothing but the
standard library, so that the CLI's start-up stays short.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "ATTRIBUTES",
    "DEFAULT_MARGIN_MS",
    "DEFAULT_TC",
    "DEFAULT_WAIT",
    "LADDER",
    "RUN_COMMANDS",
    "Flag",
    "Journal",
    "RunOptions",
    "flag",
    "option_fields",
    "parse_size",
]

RUN_COMMANDS = ("tournament", "play", "sprt", "tune")
LADDER = "ladder"
"""``ladder run``, as the options' ``commands`` name it."""
DEFAULT_TC = "st=1"
DEFAULT_WAIT = 60.0
"""Seconds a run waits for its remote engines to connect (``--wait``; ServerSpec.wait's default)."""
ATTRIBUTES = "color,shape,height,fill"
DEFAULT_MARGIN_MS = 50
"""Overrun tolerated before a time forfeit, ms (``--timemargin``): declared here, which the command line imports at
start-up, for the clocks (arena/timecontrol.py) too."""


class Journal(enum.Enum):
    """An option's journal form: what becomes of it when a run is resumed."""

    KEPT = "kept"
    """Part of the run's spec, which the journal keeps whole: ``--resume`` refuses it (the journal has it)."""
    MOVABLE = "movable"
    """Kept in the journal, but ``--resume`` may give it again (where remote bots connect: ``--listen``...)."""
    CREATION = "creation"
    """How a new run is created (``--out``, ``--force``): not kept, and refused by ``--resume``."""
    SESSION = "session"
    """This invocation's only (progress, logging, the live page...): not kept, free with ``--resume``."""


@dataclass(frozen=True, slots=True)
class Flag:
    """How one :class:`RunOptions` field appears on the command line."""

    flags: tuple[str, ...]
    """The option's spellings, e.g. ``("--concurrency", "-j")`` or ``("--strict/--lenient",)``."""
    help: str
    """The ``--help`` line."""
    metavar: str | None = None
    """The value's name in ``--help`` (None for a flag without a value)."""
    journal: Journal = Journal.KEPT
    """What a resume does with it."""
    commands: frozenset[str] = frozenset(RUN_COMMANDS)
    """The commands that take it."""
    minimum: float | None = None
    """The smallest value accepted (typer checks it)."""
    maximum: float | None = None
    """The largest value accepted."""
    per_command: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """A command's own ``default`` or ``help``, where it differs: ``{"sprt": {"default": True}}``."""

    def default_for(self, command: str, default: Any) -> Any:
        """The default ``command`` shows and uses."""
        return self.per_command.get(command, {}).get("default", default)

    def help_for(self, command: str) -> str:
        """The help line ``command`` shows."""
        return str(self.per_command.get(command, {}).get("help", self.help))


def _option(default: Any, *flags: str, help: str, **how: Any) -> Any:
    """A field of :class:`RunOptions`: its default, and its :class:`Flag` as metadata."""
    if isinstance(default, list):
        return field(default_factory=list, metadata={"flag": Flag(flags, help, **how)})
    return field(default=default, metadata={"flag": Flag(flags, help, **how)})


_TOURNAMENT = frozenset({"tournament"})
_SPRT = frozenset({"sprt"})
_MATCHES = frozenset({"tournament", "play", "sprt"})  # not tune: one engine of its own, no table, no remote bots
_GAMES = frozenset({*RUN_COMMANDS, LADDER})  # how the games are played, whoever plays them: the ladder's too


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The values of a run command's options; the fields' order is the order ``--help`` lists them in."""

    gauntlet: bool = _option(
        False, "--gauntlet", help="The first engine against each of the others.", commands=_TOURNAMENT
    )
    games: int = _option(
        2,
        "--games",
        metavar="N",
        help="Games per encounter per round (even: whole pairs).",
        commands=frozenset({"tournament", "play"}),
        per_command={"play": {"help": "Number of games (colours alternate, in pairs)."}},
    )
    rounds: int = _option(
        1, "--rounds", metavar="N", help="Rounds: each repeats every encounter.", commands=_TOURNAMENT
    )
    elo0: float | None = _option(None, "--elo0", metavar="ELO", help="Elo under H0 (in --model units).", commands=_SPRT)
    elo1: float | None = _option(
        None, "--elo1", metavar="ELO", help="Elo under H1 (in --model units); above --elo0.", commands=_SPRT
    )
    alpha: float = _option(
        0.05, "--alpha", metavar="P", help="False positive rate (accept H1 when H0 holds).", commands=_SPRT
    )
    beta: float = _option(
        0.05, "--beta", metavar="P", help="False negative rate (accept H0 when H1 holds).", commands=_SPRT
    )
    model: str = _option(
        "normalized", "--model", metavar="MODEL", help="Units of the bounds: normalized or logistic.", commands=_SPRT
    )
    max_games: int = _option(
        0,
        "--max-games",
        metavar="N",
        help="Give up (exit 4) after N games; 0: never.",
        commands=_SPRT,
        minimum=0,
    )
    strict: bool = _option(
        False,
        "--strict/--lenient",
        help="Stop at the first engine failure (exit 3).",
        per_command={
            "sprt": {"default": True, "help": "Stop at the first engine failure (exit 3) or count it as a loss."}
        },
    )
    rating_interval: int = _option(
        0,
        "--rating-interval",
        metavar="N",
        help="Interim table every N games.",
        commands=_TOURNAMENT,
        minimum=0,
    )
    engines_file: str | None = _option(
        None,
        "--engines",
        metavar="FILE",
        help="TOML engines file (see the README); without ENGINE words, all of them.",
        per_command={"tune": {"help": "TOML engines file (see the README): ENGINE names one of its engines."}},
    )
    option: list[str] = _option(  # noqa: RUF009 (a list default becomes a default_factory)
        [],
        "--option",
        "-o",
        metavar="[ENGINE:]ID=VALUE",
        help="Set a UQI option of one engine, or of every engine.",
        commands=_GAMES,
    )
    concurrency: int = _option(1, "--concurrency", "-j", metavar="N", help="Games played at once.", commands=_GAMES)
    tc: str = _option(
        DEFAULT_TC,
        "--tc",
        metavar="TC",
        help="Time control: BASE+INC, st=SECONDS, depth=N, nodes=N, inf (joined by ',').",
        commands=_GAMES,
    )
    timemargin: int = _option(
        DEFAULT_MARGIN_MS,
        "--timemargin",
        metavar="MS",
        minimum=0,
        help="Overrun tolerated before a time forfeit, ms.",
        commands=_GAMES,
    )
    variant: str = _option(
        "standard",
        "--variant",
        metavar="SHAPES",
        help="Winning shapes: standard, or advanced (also 2x2 squares).",
        commands=_GAMES,
    )
    attributes: str = _option(
        ATTRIBUTES,
        "--attributes",
        metavar="LIST",
        help="Attributes that count, comma-separated (beginners' rule).",
        commands=_GAMES,
    )
    claim: str = _option(
        "auto",
        "--claim",
        metavar="MODE",
        help="auto: wins are automatic; strict: QUARTO! must be called.",
        commands=_GAMES,
    )
    openings: str | None = _option(
        None,
        "--openings",
        metavar="FILE",
        help="Openings file: a position or turns per line (instead of random ones).",
        commands=_GAMES,
    )
    random_openings: int | None = _option(
        2,
        "--random-openings",
        metavar="K",
        help="Open each pair with K random turns (0: the empty board).",
        commands=_GAMES,
    )
    """None: not given, with ``--openings`` (giving both is an error)."""
    seed: int = _option(
        0,
        "--seed",
        metavar="N",
        help="Seed of the random openings.",
        commands=_GAMES,
        per_command={"tune": {"help": "Seed of the random openings and of the perturbations."}},
    )
    fmt: str = _option(
        "simple", "--format", metavar="FMT", help="Table format: any tabulate format, csv or json.", commands=_MATCHES
    )
    out: str | None = _option(
        None,
        "--out",
        metavar="DIR",
        help="Run directory (journal, PGN, JSON Lines, logs, standings); default out/KIND-TIME.",
        journal=Journal.CREATION,
    )
    resume: str | None = _option(
        None,
        "--resume",
        metavar="DIR",
        help="Resume the run in DIR (its journal keeps the options).",
        journal=Journal.SESSION,
    )
    force: bool = _option(
        False, "--force", help="Start over in a --out directory that holds a run already.", journal=Journal.CREATION
    )
    interleave: bool = _option(
        True,
        "--interleave/--no-interleave",
        commands=_MATCHES,
        help="Game k of every encounter before game k+1 of any (pairs kept together); --no-interleave: encounter by"
        " encounter, as cutechess.",
    )
    progress_every: str | None = _option(
        None,
        "--progress-every",
        metavar="N|Ns",
        help="Off a terminal, a status line every N games or N seconds (s, m, h); 1: a line per game. "
        "Default: every 60 s and every tenth of the games.",
        journal=Journal.SESSION,
    )
    quiet: bool = _option(
        False,
        "--quiet",
        "-q",
        help="No progress: only warnings and the result.",
        journal=Journal.SESSION,
        commands=_GAMES,
        per_command={LADDER: {"help": "No line per game or connection, but a summary of them every 10 minutes."}},
    )
    debug: str | None = _option(
        None,
        "--debug",
        metavar="DIR",
        help="Write every UQI line with a time stamp into DIR.",
        journal=Journal.SESSION,
        commands=_GAMES,
    )
    log_limit: str = _option(
        "16M",
        "--log-limit",
        metavar="SIZE",
        help="Keep at most SIZE (K, M, G) of each engine's stderr log; 0: none.",
        commands=_GAMES,
    )
    listen: str | None = _option(
        None,
        "--listen",
        commands=_MATCHES | {LADDER},
        metavar="ENDPOINT",
        help="Serve remote:NAME bots that connect in here: tcp://HOST:PORT (loopback only without --keys).",
        journal=Journal.MOVABLE,
        per_command={LADDER: {"help": "Where bots connect in: tcp://HOST:PORT (needs --keys)."}},
    )
    keys: str | None = _option(
        None,
        "--keys",
        commands=_MATCHES | {LADDER},
        metavar="DIR",
        help="CurveZMQ keys (quarto-arena keys new): arena.key_secret, each NAME.key.",
        journal=Journal.MOVABLE,
        per_command={LADDER: {"help": "Keys: arena.key_secret, and a NAME.key per bot (read as it changes)."}},
    )
    wait: float = _option(
        DEFAULT_WAIT,
        "--wait",
        commands=_MATCHES,
        metavar="SECONDS",
        minimum=0,
        help="How long to wait for remote bots to connect.",
        journal=Journal.MOVABLE,
    )
    web: str | None = _option(
        None,
        "--web",
        metavar="HOST:PORT",
        help="Serve a live page of the run at HOST:PORT, e.g. 127.0.0.1:8080 (port 0: any free one); needs the web "
        "extra.",
        journal=Journal.SESSION,
        commands=_GAMES,
    )
    adjudicate: int | None = _option(
        None,
        "--adjudicate",
        metavar="EMPTIES",
        minimum=1,
        maximum=12,
        help="End each game at EMPTIES empty squares (at most 12) with the result of perfect play (the solver).",
        commands=_GAMES,
    )
    cluster: str | None = _option(
        None,
        "--cluster",
        metavar="ADDRESS",
        help="Play the games on a Dask cluster: tcp://SCHEDULER:8786, or local:N worker processes here "
        "(pip install 'quarto-arena[dask]').",
        journal=Journal.SESSION,
    )
    oversubscribe: bool = _option(
        False,
        "--oversubscribe",
        help="With --cluster: allow machines with more worker threads than cores.",
        journal=Journal.SESSION,
    )


def parse_size(text: str, option: str) -> int:
    """``16M`` -> bytes (K, M and G are powers of 1024); ValueError naming ``option`` otherwise."""
    value = text.strip().upper().removesuffix("B")
    factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:], 1)
    number = value[:-1] if factor > 1 else value
    if not number.isdigit():
        raise ValueError(f"{option} {text!r}: expected a size such as 16M, 500K or 1000000")
    return int(number) * factor


def flag(name: str) -> Flag:
    """The :class:`Flag` of the field ``name``."""
    (found,) = (f for f in fields(RunOptions) if f.name == name)
    result: Flag = found.metadata["flag"]
    return result


def option_fields(command: str) -> list[tuple[str, Flag, Any]]:
    """The options ``command`` takes, in ``--help`` order: (name, flag, the default it uses)."""
    chosen = []
    for f in fields(RunOptions):
        how: Flag = f.metadata["flag"]
        if command in how.commands:
            default = [] if f.default_factory is list else f.default
            chosen.append((f.name, how, how.default_for(command, default)))
    return chosen
