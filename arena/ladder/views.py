"""What the ladder shows the world: the values of its pages and of its JSON API, made in one place from the
standings and the database's rows, and what a game's record may say in public.

Every page (:mod:`.render`), every answer of the API and every feed of the event stream (:mod:`.pages`) is one of
these values, so a new fact about a bot (a ban, a dodge, a provisional rating) is added here once: a field of a view
(defaulting to empty, rendered when present) and the line of :func:`leaderboard` or :func:`bot_page` that fills it.

Public records. The database keeps how each engine was run (its command line or endpoint, the options the arena set:
the operator's business); nothing the ladder publishes does (``ladder export``, the pages, the API):
:func:`public_record` drops them and takes every path of the host out of the free text (a house engine that could
not start says its command line in the game's ``detail``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..output import game_comment
from ..records import EngineIdentity, GameRecord, Termination
from .db import BotRow, TallyRow
from .standings import Standing, Standings, labels, opponents, shown, version_label

__all__ = [
    "API_VERSION",
    "PUBLIC_SITE",
    "BotPage",
    "GameLine",
    "GamePage",
    "Leaderboard",
    "Line",
    "Live",
    "OpponentLine",
    "Side",
    "VersionLine",
    "bot_page",
    "game_line",
    "game_page",
    "leaderboard",
    "plain",
    "public_identity",
    "public_record",
    "scrub_paths",
]

API_VERSION: Final = 1
"""The version of the JSON API (``/api/v1/...``): bumped when a field changes meaning or goes away, not when one
is added."""


# ----------------------------------------------------------------------------------------------------------------
# Public records

PUBLIC_SITE: Final = "?"
"""The PGN ``Site`` of the games the ladder publishes: unknown, in PGN's words (the host's name is the operator's)."""

_PATH: Final = re.compile(r"(?<![\w.:/~-])~?/[^\s'\"()\[\]{},;]*")
"""An absolute (or home) path in free text: a ``/`` that no word, dot, colon or slash precedes (``1/2-1/2``,
``tcp://host`` and relative paths are left alone), up to a space, a quote or a bracket."""


def scrub_paths(text: str, commands: Mapping[str, str] | None = None) -> str:
    """``text`` without a path of the host: each of ``commands`` (a command line -> the engine's name) replaced by
    its name, then every absolute path by its last part (``/home/op/bots/evil.py`` -> ``evil.py``)."""
    for command, name in (commands or {}).items():
        if command:
            text = text.replace(command, name)
    if "/" not in text:
        return text
    return _PATH.sub(lambda m: m.group(0).rstrip("/").rpartition("/")[2], text)


def public_identity(ident: EngineIdentity) -> EngineIdentity:
    """What an engine said of itself (name, author, protocol), without how the arena ran it (command line, options)."""
    return EngineIdentity(ident.id_name, ident.author, ident.protocol)


def public_record(record: GameRecord) -> GameRecord:
    """``record`` as the ladder publishes it: the engines' identities without command lines or options, and no path
    of the host in its detail or exit information."""
    commands = {e.source: name for e, name in zip(record.engines, (record.first, record.second), strict=False)}
    return replace(
        record,
        detail=scrub_paths(record.detail, commands),
        exit_info={name: scrub_paths(text, commands) for name, text in record.exit_info.items()},
        engines=tuple(public_identity(e) for e in record.engines),
    )


# ----------------------------------------------------------------------------------------------------------------
# The views


@dataclass(frozen=True, slots=True)
class Live:
    """What the running ladder knows now besides the database: who is online, what is being played, how."""

    online: Mapping[str, int] = field(default_factory=dict)
    """Slots of each bot online."""
    playing: Mapping[str, int] = field(default_factory=dict)
    """Pairs in flight of each bot."""
    running: int = 0
    """Games being played."""
    tc: str = ""
    """The time control."""
    variant: str = ""
    """The rules, in words."""
    concurrency: int = 0
    """Games at once."""


@dataclass(frozen=True, slots=True)
class GameLine:
    """A counted game in a list."""

    id: int
    """Its number (``/game/ID``)."""
    first: str
    """The bot that gave the first piece."""
    second: str
    """The other bot."""
    result: str
    """``1-0``, ``0-1`` or ``1/2-1/2``, from the first bot's side."""
    reason: str
    """How it ended, in words."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the leaderboard: a bot's latest version (or a bot online with no game yet)."""

    rank: int | None
    """1 for the best; None with no rating."""
    bot: str
    """The bot (its key's name)."""
    player: str
    """The rated player: the version's name in the export (``NAME`` or ``NAME#N``)."""
    version: int
    """The version's number (0: no game yet)."""
    id_name: str
    """What the version called itself."""
    author: str
    """Its ``id author``."""
    rating: float | None
    """Its rating."""
    margin: float | None
    """Half-width of its 95% interval."""
    games: int
    """Games counted."""
    points: float
    """Points scored."""
    score: float | None
    """Fraction of the possible points."""
    house: bool
    """A house engine."""
    last_seen: str
    """When the bot was last seen (UTC, ISO 8601; ``now`` for a bot online with no game)."""
    online: bool = False
    """Connected now."""
    slots: int | None = None
    """Its slots, when online."""
    playing: int = 0
    """Pairs it is playing now."""
    provisional: bool = False
    """Its rating is provisional (too few games or opponents yet)."""
    forfeits: Mapping[str, int] = field(default_factory=dict)
    """Games it lost by a forfeit, by reason (``time forfeit``, ``disconnect``...)."""
    dodges: int = 0
    """The bot's dodges charged: games it left while paired (lost)."""


@dataclass(frozen=True, slots=True)
class Leaderboard:
    """The leaderboard page (``/``), ``/api/v1/standings`` and the event stream's ``ladder`` event."""

    lines: tuple[Line, ...]
    """Best first; then the lines with no rating."""
    games: int
    """Games rated."""
    online: int
    """Bots online."""
    running: int
    """Games being played."""
    tc: str
    """The time control."""
    variant: str
    """The rules."""
    concurrency: int
    """Games at once."""
    recent: tuple[GameLine, ...]
    """The last games counted, newest first."""
    notices: tuple[str, ...]
    """The ladder's last notes (keys added or removed...), newest first."""


@dataclass(frozen=True, slots=True)
class VersionLine:
    """One version of a bot and its rating (each version is rated as its own player)."""

    number: int
    """1, 2..."""
    player: str
    """Its name in the standings and the export."""
    id_name: str
    """What it called itself."""
    author: str
    """Its ``id author``."""
    first_seen: str
    """Its first counted game (UTC)."""
    rating: float | None
    """Its rating."""
    margin: float | None
    """Half-width of the 95% interval."""
    games: int
    """Games counted."""
    points: float
    """Points scored."""
    score: float | None
    """Fraction of the possible points."""
    provisional: bool = False
    """Its rating is provisional."""
    retired: bool = False
    """Taken off the board (``ladder retire``, or a version beyond the bot's last few): its games stay, rated with
    the bot's other retired versions as one player (``player`` is that one's)."""


@dataclass(frozen=True, slots=True)
class OpponentLine:
    """A bot's results against one opponent (every version of both)."""

    opponent: str
    """The opponent bot."""
    games: int
    """Games between the two."""
    wins: int
    """Won."""
    draws: int
    """Drawn."""
    losses: int
    """Lost."""
    points: float
    """Points scored."""
    score: float
    """Fraction of the possible points."""
    lost_by_forfeit: int
    """Games lost by a forfeit (included in ``losses``)."""
    won_by_forfeit: int
    """Games the opponent forfeited (included in ``wins``)."""


@dataclass(frozen=True, slots=True)
class BotPage:
    """A bot's page (``/bot/NAME``) and ``/api/v1/bots/NAME``."""

    bot: str
    """The bot."""
    house: bool
    """A house engine."""
    first_seen: str
    """When it first connected (UTC)."""
    last_seen: str
    """When it was last seen."""
    online: bool
    """Connected now."""
    slots: int | None
    """Its slots, when online."""
    playing: int
    """Pairs it is playing now."""
    games: int
    """Games counted."""
    versions: tuple[VersionLine, ...]
    """Its versions, oldest first, one rating each."""
    opponents: tuple[OpponentLine, ...]
    """Its results against each opponent, by name."""
    forfeits: Mapping[str, int]
    """Games it lost by a forfeit, by reason."""
    recent: tuple[GameLine, ...]
    """Its last games, newest first."""
    history: Mapping[str, Any]
    """Each version's rating as games were counted: ``{"games": [...], "series": [{"name", "rating", "margin"}]}``
    (the chart's data; ``null`` where a version had no rating yet)."""
    dodges: int = 0
    """The bot's dodges charged: games it left while paired (lost)."""
    banned: str | None = None
    """Why the operator banned it (its rating is hidden, its games kept); None when it is not."""


@dataclass(frozen=True, slots=True)
class Side:
    """Who played one side of a game."""

    bot: str
    """The bot."""
    version: int
    """Its version's number."""
    player: str
    """The version's name in the standings and the export."""
    id_name: str | None
    """What the engine called itself in this game."""
    author: str | None
    """Its ``id author``."""


@dataclass(frozen=True, slots=True)
class GamePage:
    """A game's page (``/game/ID``) and ``/api/v1/games/ID``: the public record."""

    id: int
    """Its number."""
    pair: int
    """The pair it belongs to (two games from one opening, colours swapped)."""
    started: str
    """UTC start, ISO 8601."""
    first: Side
    """Who gave the first piece."""
    second: Side
    """The other side."""
    result: str
    """``1-0``, ``0-1`` or ``1/2-1/2``."""
    termination: str
    """``normal`` or the forfeit's reason."""
    reason: str
    """How it ended, in words."""
    detail: str
    """What happened, as the referee said it."""
    variant: str
    """``SHAPES ATTRS CLAIMS``."""
    time_control: str
    """The time control."""
    start: str
    """``startpos`` or the position string it started from."""
    opening: tuple[str, ...]
    """Turns of the opening book (the first turns below)."""
    turns: tuple[tuple[str, int, str | None], ...]
    """Every turn: token, milliseconds, the engine's reported score."""


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_FIELDS: Final = {
    cls: tuple(f.name for f in dataclasses.fields(cls))
    for cls in (Live, GameLine, Line, Leaderboard, VersionLine, OpponentLine, BotPage, Side, GamePage)
}

# ----------------------------------------------------------------------------------------------------------------
# The one place where standings and rows become views


def plain(value: Any) -> Any:
    """A view as plain JSON values, as ``dataclasses.asdict`` makes them without its deep copies (a leaderboard of a
    thousand bots in a few milliseconds rather than sixty)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    fields = _FIELDS.get(kind)
    if fields is not None:
        return {name: plain(getattr(value, name)) for name in fields}
    if kind is tuple or kind is list:
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def game_line(record: GameRecord) -> GameLine:
    """A game in a list (``record`` public: see :func:`public_record`)."""
    return GameLine(record.game_id, record.first, record.second, record.result.value, game_comment(record))


def _authors(bots: Iterable[BotRow]) -> dict[tuple[str, int], str]:
    return {(b.name, v.number): v.author for b in bots for v in b.versions}


def leaderboard(
    standings: Standings | None,
    bots: Sequence[BotRow],
    live: Live,
    recent: Iterable[GameRecord] = (),
    notices: Iterable[str] = (),
) -> Leaderboard:
    """The leaderboard: each bot's latest version on the board, ranked as ``ladder standings`` ranks them (banned
    bots and retired versions left out), then the bots online that have no line yet. ``standings``: the ladder's
    (every line), ``bots``: for the versions' authors."""
    authors = _authors(bots)
    lines = []
    every = standings.lines if standings is not None else ()
    for s in shown(every):
        lines.append(
            Line(
                s.rank,
                s.bot,
                s.player,
                s.version,
                s.id_name,
                authors.get((s.bot, s.version), ""),
                s.rating,
                s.margin,
                s.games,
                s.points,
                s.score,
                s.house,
                s.last_seen,
                s.bot in live.online,
                live.online.get(s.bot),
                live.playing.get(s.bot, 0),
                s.provisional,
                s.forfeits,
                s.dodges,
            )
        )
    known = {s.bot for s in every}  # a banned bot online is not shown as a newcomer
    for name in sorted(set(live.online) - known):  # online, not in the last fit's bots yet
        lines.append(
            Line(
                rank=None, bot=name, player=name, version=0, id_name="", author="", rating=None, margin=None,
                games=0, points=0.0, score=None, house=False, last_seen="now", online=True,
                slots=live.online[name], playing=live.playing.get(name, 0), provisional=True,
            )
        )  # fmt: skip
    return Leaderboard(
        tuple(lines),
        standings.games if standings is not None else 0,
        len(live.online),
        live.running,
        live.tc,
        live.variant,
        live.concurrency,
        tuple(game_line(public_record(r)) for r in recent),
        tuple(scrub_paths(n) for n in notices),
    )


def _opponents(tallies: Iterable[TallyRow], bot: str) -> tuple[OpponentLine, ...]:
    """Results of ``bot`` per opponent (:func:`.standings.opponents`), as the pages show them."""
    return tuple(
        OpponentLine(
            o.opponent,
            o.games,
            o.wins,
            o.draws,
            o.losses,
            o.points,
            o.points / o.games,
            o.forfeit_losses,
            o.forfeit_wins,
        )
        for o in opponents(tallies, bot)
        if o.games
    )


def bot_page(
    bot: BotRow,
    lines: Iterable[Standing],
    tallies: Iterable[TallyRow],
    recent: Iterable[GameRecord],
    history: Iterable[tuple[int, int, float, float]],
    live: Live,
) -> BotPage:
    """A bot's page: ``lines`` are its lines of the ladder's standings (every version, retired ones together),
    ``tallies`` its games counted (:meth:`~.db.LadderDB.tallies`), ``history`` the stored fits' ratings of its
    versions (:meth:`~.db.LadderDB.history`)."""
    mine = {s.player: s for s in lines if s.bot == bot.name}
    hidden = bot.banned is not None  # a banned bot's rating is hidden (its games are not)
    named = labels([bot])
    versions = []
    for v in bot.versions:
        player = named[(bot.name, v.number)]
        s = mine.get(player)
        versions.append(
            VersionLine(
                v.number,
                player,
                v.id_name,
                v.author,
                v.first_seen,
                None if s is None or hidden else s.rating,
                None if s is None or hidden else s.margin,
                0 if s is None else s.games,
                0.0 if s is None else s.points,
                None if s is None else s.score,
                s is not None and s.provisional,
                v.retired is not None,
            )
        )
    played = _opponents(tallies, bot.name)
    forfeits: dict[str, int] = {}
    for s in mine.values():
        for reason, n in s.forfeits.items():
            forfeits[reason] = forfeits.get(reason, 0) + n
    return BotPage(
        bot.name,
        bot.house,
        bot.first_seen,
        bot.last_seen,
        bot.name in live.online,
        live.online.get(bot.name),
        live.playing.get(bot.name, 0),
        sum(o.games for o in played),
        tuple(versions),
        played,
        {t.value: forfeits[t.value] for t in Termination if forfeits.get(t.value)},
        tuple(game_line(public_record(r)) for r in recent),
        _history(bot, () if hidden else history),
        max((s.dodges for s in mine.values()), default=0),
        bot.banned,
    )


def _history(bot: BotRow, history: Iterable[tuple[int, int, float, float]]) -> dict[str, Any]:
    """The chart's data: one line per version (and one for its retired versions together), on the games counted
    when each fit was stored."""
    series: dict[int, dict[int, tuple[float, float]]] = {}
    for games, number, rating, margin in history:
        series.setdefault(number, {})[games] = (rating, margin)
    xs = sorted({g for at in series.values() for g in at})
    return {
        "games": xs,
        "series": [
            {
                "name": version_label(bot.name, number, len(bot.versions)),
                "rating": [round(at[g][0], 1) if g in at else None for g in xs],
                "margin": [round(at[g][1], 1) if g in at else None for g in xs],
            }
            for number, at in sorted(series.items(), key=lambda item: item[0] or len(bot.versions) + 1)
        ],
    }


def game_page(
    record: GameRecord, first_version: int, second_version: int, players: Mapping[tuple[str, int], str]
) -> GamePage:
    """A counted game as the public sees it (``players``: each version's player name, :func:`.standings.labels`)."""
    record = public_record(record)
    engines = (*record.engines, EngineIdentity(), EngineIdentity())
    sides = tuple(
        Side(bot, number, players.get((bot, number), bot), e.id_name, e.author)
        for bot, number, e in zip(
            (record.first, record.second), (first_version, second_version), engines[:2], strict=True
        )
    )
    return GamePage(
        record.game_id,
        record.round,
        record.started,
        sides[0],
        sides[1],
        record.result.value,
        record.termination.value,
        game_comment(record),
        record.detail,
        record.variant,
        record.time_control,
        record.start,
        record.opening,
        tuple((t.token, t.ms, t.score) for t in record.turns),
    )
