"""quarto_arena.arena.ladder: a standing arena that bots join and leave at will, its ratings kept in a database.

- :mod:`.schema`: the database's schema, its version and the migrations from each earlier one;
- :mod:`.db`: ``DIR/ladder.db`` (SQLite, WAL): owns every query; the rest sees plain records;
- :mod:`.matchmaking`: who plays whom next, a pure function of who is online and what has been played;
- :mod:`.rules`: earned slots, benches, the dodging rule, who may register: pure values and functions;
- :mod:`.standings`: the Elo fit of every counted game (the estimator of ``rate``), per version of each bot,
  anchored, with provisional versions, forfeits and dodges;
- :mod:`.refit`: the fitting process, kept for the ladder's life;
- :mod:`.service`: :class:`Ladder`, the server (:mod:`..server`) and the games, until stopped;
- :mod:`.views`: what the ladder publishes (its pages, its JSON API, its export), made in one place;
- :mod:`.render`: the pages as HTML, written on the server;
- :mod:`.pages`: the pages, the API and the event stream, served by :mod:`..web`'s server.
"""

from .db import (
    DB_NAME,
    VERSIONS_KEPT,
    BotRow,
    CheckReport,
    DirectoryLock,
    LadderDB,
    LadderDBError,
    LadderState,
    TallyRow,
    VersionRow,
)
from .matchmaking import Pairing, next_pairs, pair_key
from .standings import Standing, Standings, labels, opponents, standings, version_label

__all__ = [
    "DB_NAME",
    "VERSIONS_KEPT",
    "BotRow",
    "CheckReport",
    "DirectoryLock",
    "LadderDB",
    "LadderDBError",
    "LadderState",
    "Pairing",
    "Standing",
    "Standings",
    "TallyRow",
    "VersionRow",
    "labels",
    "next_pairs",
    "opponents",
    "pair_key",
    "standings",
    "version_label",
]
