"""A match: N games between two engines in colour-swapped pairs, restarting an engine that crashed.

Also how an engine is named on the command line (:func:`engine_config`) and the match summary (:func:`summarize`),
so that the CLI only parses options and prints. Whatever happens — a crash, an exception, Ctrl-C — every engine
process the match started is killed and reaped before :func:`play_match` returns or raises.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from quarto_arena.arena.engine import Deadlines, EngineConfig, EngineError, EngineSession
from quarto_arena.arena.records import GameRecord, Result, Termination
from quarto_arena.arena.referee import GameSpec, play_game
from quarto_arena.arena.schedule import Opening
from quarto_arena.arena.transport import Transcript

__all__ = ["MatchSummary", "builtin_command", "distinct_names", "engine_config", "play_match", "summarize"]

_NAMED: Final = re.compile(r"([A-Za-z0-9_.\-]+)=(\S.*)\Z", re.DOTALL)


def builtin_command(name: str) -> list[str] | None:
    """The argv of built-in engine ``name`` (``random``, ``greedy``, ...), or None when there is no such engine."""
    from quarto_arena.engines import registry

    return registry.command(name) if name in registry.BUILTIN else None


def engine_config(spec: str, name: str | None = None) -> EngineConfig:
    """An engine as given on the command line: a built-in name, a command line, or a ZeroMQ endpoint.

    ``NAME=SPEC`` names it; ``name`` (from ``--name``) overrides both. Raises ValueError for an empty or unreadable
    command line.
    """
    text = spec.strip()
    m = _NAMED.match(text)
    if m and not text.startswith(("tcp://", "ipc://")):
        name = name or m.group(1)
        text = m.group(2).strip()
    if text.startswith(("tcp://", "ipc://")):
        return EngineConfig(name or text, endpoint=text)
    builtin = builtin_command(text)
    if builtin is not None:
        return EngineConfig(name or text, command=tuple(builtin))
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise ValueError(f"engine {spec!r}: {e}") from None
    if not argv:
        raise ValueError(f"engine {spec!r}: empty command")
    return EngineConfig(name or Path(argv[0]).name, command=tuple(argv))


def distinct_names(configs: Sequence[EngineConfig]) -> list[EngineConfig]:
    """The same engines, renamed ``NAME-2``, ``NAME-3``... where display names repeat."""
    seen: Counter[str] = Counter()
    out = []
    for cfg in configs:
        seen[cfg.name] += 1
        out.append(cfg if seen[cfg.name] == 1 else replace(cfg, name=f"{cfg.name}-{seen[cfg.name]}"))
    return out


async def play_match(
    a: EngineConfig,
    b: EngineConfig,
    games: int,
    template: GameSpec,
    *,
    openings: Sequence[Opening] = (),
    deadlines: Deadlines | None = None,
    log_dir: Path | None = None,
    transcript: Transcript | None = None,
    on_game: Callable[[GameRecord], None] | None = None,
    require_start: bool = True,
) -> list[GameRecord]:
    """Plays ``games`` games, ``a`` giving first in odd-numbered games; pair ``k`` uses ``openings[k]`` (cycling).

    Both engines are started first: an :class:`EngineError` there means an engine cannot be started and is raised
    as it is (with ``require_start=False`` the first game starts them instead, and a failed start loses it).
    During the match an engine that failed is restarted before its next game (a failed restart loses that game).
    An engine that refuses ``newgame`` or ``setoption`` stops the match: its record is passed to
    ``on_game``, then the EngineError is raised.
    """
    if a.name == b.name:
        raise ValueError(f"both engines are named {a.name!r}; give them distinct names")
    sessions = [
        EngineSession(
            cfg,
            deadlines=deadlines,
            stderr_path=None if log_dir is None else log_dir / f"{cfg.name}.stderr.log",
            transcript=transcript,
        )
        for cfg in (a, b)
    ]
    records: list[GameRecord] = []
    try:
        if require_start:
            started = await asyncio.gather(*(s.start() for s in sessions), return_exceptions=True)
            for outcome in started:
                if isinstance(outcome, BaseException):
                    raise outcome
        for k in range(games):
            first, second = sessions if k % 2 == 0 else sessions[::-1]
            opening = openings[(k // 2) % len(openings)] if openings else Opening()
            spec = replace(
                template,
                game_id=k + 1,
                start=None if opening.start == "startpos" else opening.start,
                opening=opening.turns,
            )
            record = await play_game(first, second, spec)
            records.append(record)
            if on_game is not None:
                on_game(record)
            if record.termination is Termination.ENGINE_ERROR:
                raise EngineError(record.detail)
    finally:
        # Shielded so that a second interrupt during the clean-up cannot leave a process behind.
        await asyncio.shield(asyncio.gather(*(s.quit() for s in sessions)))
    return records


@dataclass(frozen=True, slots=True)
class MatchSummary:
    """A match from one engine's point of view."""

    engine: str
    """The engine whose view this is."""
    opponent: str
    """The other engine."""
    wins: int
    """Games won."""
    losses: int
    """Games lost."""
    draws: int
    """Games drawn."""
    forfeits: dict[str, Counter[str]]
    """Engine name -> termination reason -> number of games that engine lost that way."""
    pentanomial: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    """Colour-swapped pairs (games 1+2, 3+4, ...) by the engine's points in them: [LL, LD, WL+DD, WD, WW]."""

    @property
    def games(self) -> int:
        """Scored games."""
        return self.wins + self.losses + self.draws

    @property
    def score(self) -> float:
        """Points per game, 0..1 (0.5 when no game was scored)."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5


def summarize(records: Sequence[GameRecord], engine: str, opponent: str) -> MatchSummary:
    """Wins, losses, draws of ``engine`` and the forfeits of both; aborted games are not scored."""
    wins = losses = draws = 0
    forfeits: dict[str, Counter[str]] = {}
    points: dict[int, float] = {}
    for r in records:
        if r.termination is Termination.ABORTED or r.result is Result.UNFINISHED:
            continue
        loser = r.loser
        if loser is None:
            draws += 1
            points[r.game_id] = 0.5
        elif loser == engine:
            losses += 1
            points[r.game_id] = 0.0
        else:
            wins += 1
            points[r.game_id] = 1.0
        if r.termination.is_failure and loser is not None:
            forfeits.setdefault(loser, Counter())[r.termination.value] += 1
    penta = [0, 0, 0, 0, 0]
    for first_of_pair in range(1, max(points, default=0) + 1, 2):
        if first_of_pair in points and first_of_pair + 1 in points:
            penta[round(2 * (points[first_of_pair] + points[first_of_pair + 1]))] += 1
    a, b, c, d, e = penta
    return MatchSummary(engine, opponent, wins, losses, draws, forfeits, (a, b, c, d, e))
