"""quarto_arena.arena.ladder: a standing arena that bots join and leave at will, its ratings kept in a database.

- :mod:`.db`: ``DIR/ladder.db`` (SQLite, WAL): owns every SQL statement; the rest sees plain records;
- :mod:`.matchmaking`: who plays whom next, a pure function of who is online and what has been played;
- :mod:`.standings`: the Elo fit of every counted game (the estimator of ``rate``), per version of each bot;
- :mod:`.service`: :class:`Ladder`, the server (:mod:`..server`) and the games, until stopped;
- :mod:`.views`: what the ladder publishes (its pages, its JSON API, its export), made in one place;
- :mod:`.render`: the pages as HTML, written on the server;
- :mod:`.pages`: the pages, the API and the event stream, served by :mod:`..web`'s server.
"""

from .db import DB_NAME, BotRow, LadderDB, LadderDBError, ResultRow, VersionRow
from .matchmaking import Pairing, next_pairs, pair_key
from .standings import Standing, Standings, fit, version_label

__all__ = [
    "DB_NAME",
    "BotRow",
    "LadderDB",
    "LadderDBError",
    "Pairing",
    "ResultRow",
    "Standing",
    "Standings",
    "VersionRow",
    "fit",
    "next_pairs",
    "pair_key",
    "version_label",
]
