"""The ladder's ratings: the Elo MLE of every counted game (the estimator of ``quarto-arena rate``), one player per
version of a bot, on a scale anchored at one player; which versions are provisional; forfeits, dodges and results
per opponent. Pure functions of a :class:`~.db.LadderState` (one snapshot of the database).

Players. A version is named by its bot alone while the bot has one version, ``NAME#N`` (its N-th version) once it
has more, and a bot's retired versions (``ladder retire``, or beyond :data:`~.db.VERSIONS_KEPT`) are one player,
``NAME#retired``, whose games go on counting for their opponents. ``ladder export`` names the players the same way,
so ``rate`` on the export fits the same players (``ladder standings --by-version --all`` shows every one of them).

The scale. Ratings are anchored: the ladder's anchor (``--anchor NAME=ELO`` on ``ladder run``; by default the first
house engine at 0, kept from the ladder's first start) holds its rating, so a newcomer's arrival moves the others
only within their margins. A bot named as the anchor stands for its latest version on the board with games. Without
a house engine or an anchor the pool's average is 0. Players who never met anyone connected to the anchor are in
a pool of their own, averaging 0 (:attr:`Standing.pool`).

Provisional. A version is *established* once it has played :data:`PROVISIONAL_GAMES` games against
:data:`PROVISIONAL_OPPONENTS` different bots (or every other bot with games, on a smaller ladder) and its margin is
at most :data:`PROVISIONAL_MARGIN` (or it has played :data:`ESTABLISHED_GAMES` games); until then it is provisional:
shown as such, and ranked after every established version whatever its rating. ``benchmarks/ladder_provisional.py``
measures what that buys.

Stored fits. A fit of a large ladder takes seconds (1,000 bots and a million games: half a minute), so the ladder
refits in a process of its own and stores each fit (:meth:`~.db.LadderDB.save_fit`); ``ladder standings`` uses the
stored fit when it is of the same anchor and either current or the tallies are too many to fit at once
(:data:`FRESH_ROWS`), and fits afresh otherwise (:func:`fresh_fit`). Games, points, forfeits and dodges are always
counted from the versions' totals of the same snapshot, so they are exact even when the ratings are those of a fit a
few games old.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..records import Result
from ..stats import RatingError, RatingTable, ScoredGame, rate
from .db import BotRow, LadderState, TallyRow

__all__ = [
    "ESTABLISHED_GAMES",
    "FRESH_ROWS",
    "PROVISIONAL_GAMES",
    "PROVISIONAL_MARGIN",
    "PROVISIONAL_OPPONENTS",
    "Opponent",
    "Standing",
    "Standings",
    "default_anchor",
    "established",
    "fit_ratings",
    "fresh_fit",
    "labels",
    "opponents",
    "scored",
    "shown",
    "standings",
    "stored_ratings",
    "version_label",
]

PROVISIONAL_GAMES: Final = 30
"""Games a version plays before it can be established."""
PROVISIONAL_OPPONENTS: Final = 5
"""Different bots it has played (fewer on a ladder with fewer other bots with games: all of them)."""
PROVISIONAL_MARGIN: Final = 100.0
"""The largest margin (half the 95% interval, Elo) of an established version."""
ESTABLISHED_GAMES: Final = 300
"""Games after which a version is established whatever its margin: one that wins (or loses) nearly every game keeps
a wide margin however long it plays (nobody takes a point off ``perfect`` on a ladder of weaker bots), and is no
newcomer by then."""
FRESH_ROWS: Final = 20_000
"""Tallies up to which :func:`standings` fits afresh when the stored fit is behind (about half a second)."""
RETIRED: Final = "retired"


def version_label(bot: str, number: int, versions: int) -> str:
    """The player name of a bot's version ``number`` (0: its retired versions) when it has ``versions`` versions."""
    if number == 0:
        return f"{bot}#{RETIRED}"
    return bot if versions <= 1 else f"{bot}#{number}"


def labels(bots: Iterable[BotRow]) -> dict[tuple[str, int], str]:
    """(bot, version number) -> the player that version's games are rated as (a retired one: the bot's pool)."""
    return {
        (b.name, v.number): version_label(b.name, 0 if v.retired else v.number, len(b.versions))
        for b in bots
        for v in b.versions
    }


def scored(tallies: Iterable[TallyRow], bots: Iterable[BotRow]) -> list[ScoredGame]:
    """The tallies as the rating fit sees them: at most three rows (wins, draws, losses, with their counts) per two
    players who met, whatever the colours and terminations. The fit has no first-player advantage, so a game of B
    against A scoring s is one of A against B scoring 1 - s: the ratings and margins are those of the games one by
    one (``rate`` on the export), and the rows are bounded by the pairs of players, not the games."""
    named = labels(bots)
    pairs: dict[tuple[str, str], list[int]] = {}
    for t in tallies:
        score = t.score
        if score is None:
            continue
        a, b = named[(t.first, t.first_version)], named[(t.second, t.second_version)]
        if a > b:
            a, b, score = b, a, 1.0 - score
        counts = pairs.setdefault((a, b), [0, 0, 0])
        counts[0 if score == 1.0 else 1 if score == 0.5 else 2] += t.count
    return [
        ScoredGame(a, b, score, n)
        for (a, b), counts in pairs.items()
        for score, n in zip((1.0, 0.5, 0.0), counts, strict=True)
        if n
    ]


def established(games: int, opponents: int, margin: float | None, others: int) -> bool:
    """True for a version past the provisional bounds; ``others``: bots with games other than its own."""
    if games < PROVISIONAL_GAMES or opponents < min(PROVISIONAL_OPPONENTS, others) or margin is None:
        return False
    return margin <= PROVISIONAL_MARGIN or games >= ESTABLISHED_GAMES


def default_anchor(settings: Mapping[str, Any]) -> tuple[str, float] | None:
    """The ladder's anchor as its settings keep it (None: the pool's average)."""
    anchor = settings.get("anchor")
    return None if not anchor else (str(anchor[0]), float(anchor[1]))


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the standings: one version of a bot (or a bot's retired versions together)."""

    rank: int | None
    """1 for the best established line, provisional lines after every established one; None with no rating."""
    bot: str
    """The bot (its key's name)."""
    player: str
    """The rated player: the version's name as in the export."""
    version: int
    """The version's number (1, 2...; 0 for the bot's retired versions together)."""
    id_name: str
    """What the version called itself."""
    rating: float | None
    """Its rating (None with no game, or not yet fitted)."""
    margin: float | None
    """Half-width of its 95% interval."""
    games: int
    """Games counted."""
    points: float
    """Points scored."""
    opponents: int
    """Different bots it has played."""
    provisional: bool
    """Not yet established (see the module's docstring): ranked after the established lines."""
    forfeits: Mapping[str, int] = field(default_factory=dict)
    """Games it lost by a failure of its own, by termination (``time forfeit``, ``stall``, ``disconnect``...)."""
    dodges: int = 0
    """The bot's dodges charged (gone before the second game of a pair; shown on every line of the bot)."""
    house: bool = False
    """A --house engine."""
    last_seen: str = ""
    """When the bot was last seen."""
    banned: str | None = None
    """Why the bot is banned (its lines are shown only with ``all``)."""
    retired: bool = False
    """A retired version (shown only with ``all``)."""
    pool: int = 0
    """The pool of connected players it is in (0: the anchor's, or the largest); ratings of two pools do not compare."""

    @property
    def score(self) -> float | None:
        """Fraction of the possible points."""
        return self.points / self.games if self.games else None

    def as_dict(self) -> dict[str, Any]:
        """The line as JSON values (what ``ladder standings --format json`` and the pages give)."""
        return {
            "rank": self.rank,
            "player": self.player,
            "bot": self.bot,
            "version": self.version,
            "id_name": self.id_name,
            "rating": self.rating,
            "margin": self.margin,
            "games": self.games,
            "points": self.points,
            "score": self.score,
            "opponents": self.opponents,
            "provisional": self.provisional,
            "forfeits": dict(self.forfeits),
            "dodges": self.dodges,
            "house": self.house,
            "banned": self.banned,
            "retired": self.retired,
            "pool": self.pool,
            "last_seen": self.last_seen,
        }


@dataclass(frozen=True, slots=True)
class Standings:
    """The table, and what it comes from."""

    lines: tuple[Standing, ...]
    """Established lines best first, then provisional ones best first, then those with no rating."""
    games: int
    """Games counted (scored and tallied)."""
    through: int
    """The last game the ratings saw (the number of the last game counted, when fitted afresh)."""
    last: int
    """The number of the last game counted."""
    anchor: tuple[str, float] | None
    """The anchor the ratings hold (a player's name and rating), None for the pool's average."""
    fresh: bool
    """True when fitted now, False when these are the ladder's stored ratings."""
    table: RatingTable | None = None
    """The fit, when fitted now."""
    damaged: tuple[str, ...] = ()
    """Tallies left out because their checksum fails."""


@dataclass(frozen=True, slots=True)
class Opponent:
    """What one bot did against one other bot (every version, both colours)."""

    opponent: str
    games: int
    wins: int
    draws: int
    losses: int
    forfeit_wins: int
    """Wins by the opponent's failure (a time forfeit, a stall...)."""
    forfeit_losses: int
    """Losses by its own failure."""

    @property
    def points(self) -> float:
        """Points scored."""
        return self.wins + self.draws / 2

    def as_dict(self) -> dict[str, Any]:
        """As JSON values."""
        return {
            "opponent": self.opponent,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "points": self.points,
            "forfeit_wins": self.forfeit_wins,
            "forfeit_losses": self.forfeit_losses,
        }


def opponents(tallies: Iterable[TallyRow], bot: str) -> list[Opponent]:
    """Results of ``bot`` per opponent, by name: what shows two keys that trade results (one always losing to the
    other), which the ladder does not judge by itself (README: what the ladder does and does not detect)."""
    counts: dict[str, list[int]] = {}
    for t in tallies:
        if bot not in (t.first, t.second) or t.first == t.second:
            continue
        mine = t.first == bot
        other = t.second if mine else t.first
        c = counts.setdefault(other, [0, 0, 0, 0, 0, 0])
        won = t.result is (Result.FIRST_WINS if mine else Result.SECOND_WINS)
        lost = t.result is (Result.SECOND_WINS if mine else Result.FIRST_WINS)
        c[0] += t.count
        c[1] += t.count * won
        c[2] += t.count * (t.result is Result.DRAW)
        c[3] += t.count * lost
        c[4] += t.count * (won and t.termination.is_failure)
        c[5] += t.count * (lost and t.termination.is_failure)
    return [Opponent(name, *c) for name, c in sorted(counts.items())]


def fit_ratings(
    state: LadderState, anchor: tuple[str, float] | None
) -> tuple[RatingTable | None, tuple[str, float] | None]:
    """A fresh fit of every tally, anchored at ``anchor`` resolved to a player (:func:`_anchor_player`); the fit and
    the anchor it holds. Raises RatingError for an anchor that is no player (or has no game)."""
    games = scored(state.tallies, state.bots)
    if not games:
        return None, None
    pinned = _anchor_player(state, anchor, games)
    return rate(games, anchor=pinned), pinned


def fresh_fit(state: LadderState, anchor: tuple[str, float] | None = None, refit: bool = False) -> bool:
    """Whether :func:`standings` fits afresh (and needs the tallies): when asked, when there is no stored fit of
    this anchor (``anchor``, else the ladder's), or when the stored fit is behind and the tallies are few enough
    (:data:`FRESH_ROWS`)."""
    anchor = anchor if anchor is not None else default_anchor(state.settings)
    stored = state.fit
    if refit or stored is None or stored.anchor != anchor:
        return state.counted > 0
    return stored.through < state.last and state.tally_rows <= FRESH_ROWS


def standings(
    state: LadderState,
    anchor: tuple[str, float] | None = None,
    *,
    by_version: bool = False,
    everything: bool = False,
    fresh: bool = False,
) -> Standings:
    """The standings of a snapshot. ``anchor`` (default: the ladder's) is a bot or a player, with its rating.
    ``by_version``: every version on the board, not each bot's latest; ``everything``: retired versions and banned
    bots too. ``fresh``: fit now (the snapshot must hold the tallies: :func:`fresh_fit`); else the stored fit's
    ratings (none without one of this anchor). Raises RatingError for an anchor given that is no player."""
    asked = anchor
    anchor = anchor if anchor is not None else default_anchor(state.settings)
    stored = state.fit if state.fit is not None and state.fit.anchor == anchor else None
    table: RatingTable | None = None
    ratings: dict[str, tuple[float, float, int]] = {}
    pinned: tuple[str, float] | None = None
    through = state.last
    if fresh:
        try:
            table, pinned = fit_ratings(state, anchor)
        except RatingError:
            if asked is not None:
                raise
            table, pinned = fit_ratings(state, None)  # the ladder's anchor has no game yet
        if table is not None:
            ratings = {
                p.name: (p.rating, p.margin, p.pool)
                for p in table.players
                if p.rating is not None and p.margin is not None
            }
    elif stored is not None:
        named = labels(state.bots)
        for (bot, number), (rating, margin) in stored.ratings.items():
            player = f"{bot}#{RETIRED}" if number == 0 else named.get((bot, number))
            if player is not None:
                ratings[player] = (rating, margin, 0)
        pinned, through = stored.anchor, stored.through
    else:
        through = 0
    lines = shown(_lines(state, ratings), by_version=by_version, everything=everything)
    games = sum(t.wins + t.draws + t.losses for t in state.totals) // 2
    return Standings(lines, games, through, state.last, pinned, fresh, table, state.damaged)


def shown(lines: Iterable[Standing], *, by_version: bool = False, everything: bool = False) -> tuple[Standing, ...]:
    """The lines to show, ranked: each bot's latest version on the board (``by_version``: every one), without banned
    bots and retired versions (``everything``: with them); established lines first, best first, then provisional
    ones, then those with no rating."""
    chosen = [s for s in lines if everything or (s.banned is None and not s.retired)]
    if not by_version:
        latest: dict[str, Standing] = {}
        for s in chosen:
            if not s.retired and (s.bot not in latest or s.version > latest[s.bot].version):
                latest[s.bot] = s
        chosen = [s for s in chosen if s.retired or latest.get(s.bot) is s]
    chosen.sort(key=lambda s: (s.rating is None, s.provisional, -(s.rating or 0.0), s.player))
    rank = 0
    out = []
    for s in chosen:
        if s.rating is not None:
            rank += 1
        out.append(replace(s, rank=rank if s.rating is not None else None))
    return tuple(out)


def _anchor_player(
    state: LadderState, anchor: tuple[str, float] | None, games: Sequence[ScoredGame]
) -> tuple[str, float] | None:
    """The player an anchor names: a player by its name, or a bot by its latest version on the board with games."""
    if anchor is None:
        return None
    name, elo = anchor
    played = {g.white for g in games} | {g.black for g in games}
    if name in played:
        return anchor
    bot = next((b for b in state.bots if b.name == name), None)
    if bot is not None:
        named = labels([bot])
        for v in reversed(bot.versions):
            player = named[(bot.name, v.number)]
            if not v.retired and player in played:
                return player, elo
    known = ", ".join(sorted(played)) or "none"
    raise RatingError(f"anchor {name!r} is not one of the players with games: {known}")


def _lines(state: LadderState, ratings: Mapping[str, tuple[float, float, int]]) -> list[Standing]:
    """Every line: each version of each bot on the board, each bot's retired versions together, each bot with no
    version yet; unranked. Counts from the versions' totals."""
    retired = {(b.name, v.number) for b in state.bots for v in b.versions if v.retired}
    counts: dict[tuple[str, int], list[int]] = {}  # (bot, number or 0) -> wins, draws, losses
    forfeits: dict[tuple[str, int], dict[str, int]] = {}
    for t in state.totals:
        key = (t.bot, 0 if (t.bot, t.version) in retired else t.version)
        c = counts.setdefault(key, [0, 0, 0])
        c[0] += t.wins
        c[1] += t.draws
        c[2] += t.losses
        if t.termination.is_failure and t.losses:
            by = forfeits.setdefault(key, {})
            by[t.termination.value] = by.get(t.termination.value, 0) + t.losses
    playing = {bot for (bot, _), c in counts.items() if sum(c)}
    lines: list[Standing] = []
    for b in state.bots:
        entries = [(v.number, v.id_name, False) for v in b.versions if not v.retired]
        if any(v.retired for v in b.versions):
            entries.append((0, "", True))
        if not b.versions:
            entries = [(0, "", False)]
        others = len(playing - {b.name})
        for number, id_name, is_retired in entries:
            player = version_label(b.name, number, len(b.versions)) if b.versions else b.name
            rating, margin, pool = ratings.get(player, (None, None, 0))
            wins, draws, losses = counts.get((b.name, number), [0, 0, 0])
            n = wins + draws + losses
            opponents = state.opponents.get((b.name, number), 0)
            lines.append(
                Standing(
                    None,
                    b.name,
                    player,
                    number,
                    id_name,
                    rating,
                    margin,
                    n,
                    wins + draws / 2,
                    opponents,
                    not established(n, opponents, margin, others),
                    forfeits.get((b.name, number), {}),
                    state.dodges.get(b.name, (0, 0))[0],
                    b.house,
                    b.last_seen,
                    b.banned,
                    is_retired,
                    pool,
                )
            )
    return lines


def stored_ratings(table: RatingTable, bots: Sequence[BotRow]) -> list[tuple[str, int, float, float]]:
    """A fit's ratings as :meth:`~.db.LadderDB.save_fit` keeps them: (bot, version number or 0, rating, margin)."""
    by_player = {version_label(b.name, 0, len(b.versions)): (b.name, 0) for b in bots if b.versions}
    for (bot, number), player in labels(bots).items():
        if not player.endswith(f"#{RETIRED}"):
            by_player[player] = (bot, number)
    out = []
    for p in table.players:
        if p.rating is not None and p.margin is not None and p.name in by_player:
            bot, number = by_player[p.name]
            out.append((bot, number, p.rating, p.margin))
    return out
