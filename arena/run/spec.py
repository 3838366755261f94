"""What defines a run: :class:`RunSpec` (kept whole in the journal, so ``--resume`` needs no options), built from
the command line's values by :func:`build_spec`, and :class:`RunError`, the one failure of a run that cannot start
or go on."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from quarto_arena.protocol.notation import NotationError

from .. import codec
from ..engine import EngineConfig, EngineError
from ..errors import ArenaError, ExitStatus
from ..options import DEFAULT_WAIT, RunOptions, parse_size
from ..roster import RosterError, apply_options, config_from_dict, name_endpoints, resolve_roster
from ..schedule import Format, Schedule, ScheduleError
from ..settings import GameSettings, game_settings
from ..stats import Sprt, SprtModel, StatsError
from ..transport import DEFAULT_STDERR_LIMIT


class RunError(ArenaError):
    """A run that cannot start or go on; one line. ``engine`` is True when an engine is to blame."""

    status = ExitStatus.USAGE
    reason = "run"

    def __init__(self, message: str, *, engine: bool = False) -> None:
        super().__init__(message, status=ExitStatus.ENGINE if engine else ExitStatus.USAGE)

    @property
    def engine(self) -> bool:
        """True for an engine failure (exit status 3), False for a usage or configuration problem (2)."""
        return self.status is ExitStatus.ENGINE


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """Where the bots of a run's ``remote:NAME`` engines connect in (``--listen``, ``--keys``, ``--wait``)."""

    endpoint: str
    """The endpoint the arena binds its ROUTER to (``tcp://HOST:PORT``; loopback unless ``keys``)."""
    keys: str | None = None
    """The keys directory (absolute): CurveZMQ authentication and encryption; None: plain ZeroMQ on loopback."""
    wait: float = DEFAULT_WAIT
    """Seconds to wait for every remote bot to connect before the first game (and for an absent bot's game)."""

    def __post_init__(self) -> None:
        if not self.wait >= 0:
            raise RunError(f"--wait must be a number of seconds, 0 or more, not {self.wait}")

    def to_dict(self) -> dict[str, Any]:
        """Plain types for the journal header (every field, by :mod:`..codec`)."""
        return codec.to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ServerSpec:
        """The inverse of :meth:`to_dict` (KeyError, TypeError, ValueError on bad data)."""
        return codec.from_dict(cls, d)


class RunKind(enum.Enum):
    """Which command a run belongs to: it decides the output, not how games are played."""

    TOURNAMENT = "tournament"  #: a round-robin or gauntlet of any number of engines
    MATCH = "match"  #: ``play``: two engines, a fixed number of games
    SPRT = "sprt"  #: two engines until the sequential test decides
    TUNE = "tune"  #: ``tune``: one engine as two (its options perturbed either way), pair by pair (arena/tune)


_ENGINES: Final = codec.hook(decode=lambda engines, _: tuple(config_from_dict(e) for e in engines))
"""Engines read with their names checked (:func:`~..roster.config_from_dict`)."""


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything that defines a run; kept whole in the journal header so ``--resume`` needs no options."""

    kind: RunKind
    """The command: what the output shows."""
    engines: tuple[EngineConfig, ...] = field(metadata=_ENGINES)
    """The engines, in command-line (or engines-file) order; the first is the gauntlet's hero, or SPRT's NEW."""
    format: Format = Format.ROUND_ROBIN
    """Round-robin or gauntlet."""
    rounds: int = 1
    """Rounds: each repeats every encounter."""
    games: int | None = 2
    """Games per encounter per round (an even number makes whole colour-swapped pairs); None: until the SPRT
    decides."""
    concurrency: int = 1
    """Games played at the same time."""
    game: GameSettings = field(default_factory=GameSettings, metadata=codec.hook(inline=True))
    """What every game of the run shares (the ladder's type too); the journal keeps its fields flat among the run's,
    as it did before they were one value (written inline, :mod:`..codec`)."""
    strict: bool = False
    """Stop at the first engine failure instead of forfeiting and going on."""
    sprt: Sprt | None = None
    """The sequential test (SPRT runs only)."""
    rating_interval: int = 0
    """Show an interim table every this many games (0: never)."""
    table_format: str = "simple"
    """How the CLI prints tables (any tabulate format, csv, json)."""
    event: str = "quarto-arena tournament"
    """The PGN Event tag."""
    log_limit: int = DEFAULT_STDERR_LIMIT
    """Bytes of each engine's standard error kept in its log file (the cut is marked in the file)."""
    server: ServerSpec | None = None
    """Where remote engines connect in; set exactly when the run has ``remote:NAME`` engines."""
    interleave: bool = field(default=True, metadata=codec.hook(missing=False))
    """Pair ``j`` of every encounter before pair ``j + 1`` of any (False: encounter by encounter, as cutechess, and
    as every journal written before interleaving existed, which lacks the field)."""

    def __post_init__(self) -> None:
        if self.log_limit < 0:
            raise RunError(f"--log-limit cannot be negative ({self.log_limit})")
        if self.concurrency < 1:
            raise RunError(f"--concurrency must be at least 1, not {self.concurrency}")
        if self.rating_interval < 0:
            raise RunError(f"the rating interval cannot be negative ({self.rating_interval})")
        if (self.kind is RunKind.SPRT) != (self.sprt is not None):
            raise RunError("an SPRT run needs its test, and only an SPRT run has one")
        if self.kind is not RunKind.TOURNAMENT and len(self.engines) != 2:
            raise RunError(f"{self.kind.value} takes two engines, not {len(self.engines)}")
        if self.remote and self.server is None:
            raise RunError(f"remote:{self.remote[0]} connects in: give --listen tcp://HOST:PORT for it to connect to")
        if self.server is not None and not self.remote:
            raise RunError("--listen serves remote:NAME engines, and none is given")

    @property
    def remote(self) -> list[str]:
        """The names of the bots that connect in (the ``remote:NAME`` engines)."""
        return [e.remote for e in self.engines if e.remote is not None]

    @property
    def names(self) -> list[str]:
        """The engines' display names."""
        return [e.name for e in self.engines]

    def schedule(self) -> Schedule:
        """Every game of the run (raises ScheduleError for impossible settings)."""
        return Schedule(
            self.names,
            fmt=self.format,
            rounds=self.rounds,
            games=self.games,
            book=self.game.book,
            interleave=self.interleave,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain msgpack/JSON types for the journal header (the inverse of :meth:`from_dict`): every field, by
        :mod:`..codec`."""
        return codec.to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        """Rebuilds a spec from :meth:`to_dict`; raises :class:`RunError` naming what is wrong."""
        try:
            return codec.from_dict(cls, d)
        except KeyError as e:
            raise RunError(f"the journal's configuration lacks {e}") from None
        except (TypeError, ValueError, AttributeError, NotationError) as e:
            raise RunError(f"the journal's configuration is invalid: {e}") from None


def server_spec(listen: str | None, keys: str | None, wait: float) -> ServerSpec | None:
    """``--listen``, ``--keys`` and ``--wait`` as a run's server settings (None without ``--listen``); a
    :class:`RunError` naming a bad one."""
    if listen is None:
        if keys is not None:
            raise RunError("--keys goes with --listen")
        return None
    from quarto_arena.protocol.endpoint import EndpointError, parse_endpoint

    try:
        # Plain ZeroMQ authenticates nobody and encrypts nothing: only this machine may connect then.
        endpoint = parse_endpoint(listen, allow_remote=keys is not None)
    except EndpointError as e:
        # The bot's remedy (--allow-remote) is not the arena's: serving other machines takes keys here.
        hint = "; serving other machines takes --keys DIR (CurveZMQ)" if e.reason == "not_loopback" else ""
        raise RunError(f"--listen: {e.problem}{hint}") from None
    return ServerSpec(endpoint, None if keys is None else str(Path(keys).resolve()), float(wait))


def build_spec(kind: RunKind, engine_words: Sequence[str], options: RunOptions | None = None) -> RunSpec:
    """A run from the command line's values (:class:`RunOptions`; its defaults where None); :class:`RunError` (a
    usage error) naming a bad one.

    ``random_openings`` None with ``openings`` means the file's openings; giving both is an error. An SPRT needs
    ``elo0`` and ``elo1``; ``max_games`` bounds its games (0: none). Unnamed ZeroMQ engines are named after their
    ``id name`` (they are asked). ``listen`` is where ``remote:NAME`` engines connect in (required with them,
    refused without). A tune takes one engine and plays it as two copies, ``NAME+`` and ``NAME-`` (arena/tune gives
    them their options game by game), ``games`` games in all.
    """
    o = RunOptions() if options is None else options
    try:
        log_limit = parse_size(o.log_limit, "--log-limit")
        server = server_spec(o.listen, o.keys, o.wait)
        game = game_settings(o)
        what = "play" if kind is RunKind.MATCH else kind.value
        wanted, words = (1, "one engine") if kind is RunKind.TUNE else (2, "two engines")
        if kind is not RunKind.TOURNAMENT and o.engines_file is None and len(engine_words) > wanted:
            # Most often a command with arguments left unquoted: each of its words would be an engine. Said before
            # the words are looked up, which would only complain about the first that is no program.
            raise RunError(
                f"{what} takes {words}, not {len(engine_words)}: an engine command with spaces is one word,"
                f' quote it ("python3 ./bot.py", "./bot --fast")'
            )
        roster = resolve_roster(engine_words, None if o.engines_file is None else Path(o.engines_file))
        configs = apply_options([w.config for w in roster], o.option)
        if kind is not RunKind.TOURNAMENT and len(configs) != wanted:
            raise RunError(f"{what} takes {words}, not {len(configs)}")
        test = None
        if kind is RunKind.SPRT:
            if o.elo0 is None or o.elo1 is None:
                raise RunError("sprt needs --elo0 and --elo1, e.g. --elo0 0 --elo1 10")
            if o.elo0 >= o.elo1:
                raise RunError(f"--elo0 {o.elo0:g} must be below --elo1 {o.elo1:g} (H0 is the worse hypothesis)")
            try:
                sprt_model = SprtModel(o.model)
            except ValueError:
                raise RunError(f"unknown --model {o.model!r}; choose normalized or logistic") from None
            test = Sprt(o.elo0, o.elo1, o.alpha, o.beta, sprt_model)
            test.pentanomial((1, 1, 1, 1, 1))  # bounds no outcome can reach raise here, not in the middle of the run
        explicit = {w.config.name for w in roster if w.explicit}
        if any(c.endpoint is not None and c.name not in explicit for c in configs):
            try:
                configs = asyncio.run(name_endpoints(configs, explicit))
            except EngineError as e:
                raise RunError(str(e), engine=True) from None
        if kind is RunKind.TUNE:  # one engine playing itself, its copies named for the side they perturb
            (tuned,) = configs
            configs = [replace(tuned, name=f"{tuned.name[:63]}{side}") for side in "+-"]
        spec = RunSpec(
            kind=kind,
            engines=tuple(configs),
            format=Format.GAUNTLET if o.gauntlet else Format.ROUND_ROBIN,
            rounds=o.rounds,
            games=(None if not o.max_games else o.max_games + o.max_games % 2) if kind is RunKind.SPRT else o.games,
            concurrency=o.concurrency,
            game=game,
            strict=o.strict,
            sprt=test,
            rating_interval=o.rating_interval,
            table_format=o.fmt,
            event=f"quarto-arena {'play' if kind is RunKind.MATCH else kind.value}",
            log_limit=log_limit,
            server=server,
            interleave=o.interleave,
        )
        spec.schedule()
    except (RosterError, NotationError, ScheduleError, StatsError, ValueError) as e:
        raise RunError(str(e)) from None
    return spec
