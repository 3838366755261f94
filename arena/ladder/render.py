"""The ladder's pages as complete HTML, written on the server from the views of :mod:`.views`: the leaderboard, a
bot's page and a game's page read whole without JavaScript (curl, a search engine, a screen reader get the tables);
the script (``static/quarto.js``) only adds the live updates, the chart and the game viewer.

Every string from the data is escaped here (engines name themselves: ``<script>`` is shown, not run); the data the
script needs is in the page as JSON (``<script type="application/json">``, which no browser runs, with ``<``, ``>``
and ``&`` escaped), so the Content Security Policy still allows only the server's own script files.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

from quarto_arena.protocol.notation import piece_description

from ..output import MARGIN_NOTE
from ..records import TurnRecord
from ..web.model import Replay, replay
from ..web.report import json_for_html, served_page
from .views import BotPage, GameLine, GamePage, Leaderboard, Line, plain

__all__ = ["bot_html", "game_html", "leaderboard_html"]

LEADERBOARD_HEADERS: Final = (
    "rank", "bot", "version", "rating", "games", "score", "forfeits", "online", "slots", "playing", "last seen",
)  # fmt: skip
"""The leaderboard's columns (the script's live table has the same)."""
_HEX: Final = "0123456789abcdef"


def _e(value: object) -> str:
    return html.escape(str(value))


def _page(template: str, title: str, **markup: str) -> str:
    """``templates/TEMPLATE`` with the shared head, the title (escaped here) and ``markup`` (HTML made here). No
    analysis board is named: a ladder's pages are public, and a board running on the ladder's host is its operator's,
    not its readers'."""
    return served_page(template, title, "", **markup)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], css: str, empty: str) -> str:
    """A table of cells already in HTML (``<td>``/``<th>`` included)."""
    body = "".join(f"<tr>{''.join(row)}</tr>" for row in rows)
    if not body:
        body = f'<tr><td class="note" colspan="{len(headers)}">{_e(empty)}</td></tr>'
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _td(text: object = "", css: str = "") -> str:
    return f'<td class="{css}">{_e(text)}</td>' if css else f"<td>{_e(text)}</td>"


def _num(value: float | int | None) -> str:
    return '<td class="n"></td>' if value is None else f'<td class="n">{value}</td>'


def _rating(rating: float | None, margin: float | None, provisional: bool) -> str:
    if rating is None:
        return '<td class="n"></td>'
    text = f"{rating:.1f} ± {margin or 0.0:.1f}"
    mark = ' <abbr class="provisional" title="provisional: too few games or opponents yet">(provisional)</abbr>'
    return f'<td class="n">{text}{mark if provisional else ""}</td>'


def _score(score: float | None) -> str:
    return '<td class="n"></td>' if score is None else f'<td class="n">{100 * score:.1f}%</td>'


def _forfeits(by_reason: Mapping[str, int]) -> str:
    total = sum(by_reason.values())
    if not total:
        return '<td class="n"></td>'
    reasons = ", ".join(f"{n} {reason}" for reason, n in by_reason.items())
    return f'<td class="n" title="{_e(reasons)}">{total}</td>'


def bot_link(name: str) -> str:
    """A link to a bot's page."""
    return f'<a href="/bot/{quote(name, safe="")}">{_e(name)}</a>'


def _version(line: Line) -> str:
    text = f"{line.id_name} ({line.player})" if line.player != line.bot else line.id_name
    return _td(text)


def _line(line: Line) -> list[str]:
    house = " (house)" if line.house else ""
    return [
        _num(line.rank),
        f"<td>{bot_link(line.bot)}{house}</td>",
        _version(line),
        _rating(line.rating, line.margin, line.provisional),
        _num(line.games),
        _score(line.score),
        _forfeits(line.forfeits),
        _td("yes" if line.online else ""),
        _num(line.slots),
        _num(line.playing or None),
        _td(line.last_seen),
    ]


def leaderboard_table(board: Leaderboard) -> str:
    """The leaderboard's table."""
    return _table(LEADERBOARD_HEADERS, (_line(line) for line in board.lines), "standings", "No bot yet.")


def status_text(board: Leaderboard) -> str:
    """The status line under the title (the script writes the same as the ladder goes on)."""
    return (
        f"{board.online} online · {board.running} games being played · {board.games} games rated · {board.variant}"
        f" · time control {board.tc} · {board.concurrency} at once"
    )


def _games(games: Iterable[GameLine]) -> str:
    """The items of a list of games, each a link to its page."""
    items = [
        f'<li><a href="/game/{g.id}">game {g.id}: {_e(g.first)} vs {_e(g.second)}, {_e(g.result)} {_e(g.reason)}</a>'
        "</li>"
        for g in games
    ]
    return "".join(items) or '<li class="note">none yet</li>'


def _notices(notices: Iterable[str]) -> str:
    return "".join(f"<li>{_e(n)}</li>" for n in notices) or '<li class="note">none</li>'


def leaderboard_html(board: Leaderboard) -> str:
    """The leaderboard page (the live boards are the script's: the page is made once per change of the standings,
    not at every turn)."""
    return _page(
        "ladder.html",
        "Ladder",
        status=_e(status_text(board)),
        table=leaderboard_table(board),
        note=f"<p class=note>{_e(MARGIN_NOTE)}.</p>",
        recent=_games(board.recent),
        notices=_notices(board.notices),
    )


def _versions(page: BotPage) -> str:
    headers = ("version", "player", "id name", "author", "first seen", "rating", "games", "score", "status")
    rows = []
    for v in page.versions:
        status = "retired" if v.retired else ""
        rows.append(
            [
                _num(v.number),
                _td(v.player),
                _td(v.id_name),
                _td(v.author),
                _td(v.first_seen),
                _rating(v.rating, v.margin, v.provisional),
                _num(v.games),
                _score(v.score),
                _td(status),
            ]
        )
    return _table(headers, rows, "small versions", "No game counted yet.")


def _opponents(page: BotPage) -> str:
    headers = ("opponent", "games", "wins", "draws", "losses", "score", "lost by forfeit", "won by forfeit")
    rows = [
        [
            f"<td>{bot_link(o.opponent)}</td>",
            _num(o.games),
            _num(o.wins),
            _num(o.draws),
            _num(o.losses),
            _score(o.score),
            _num(o.lost_by_forfeit),
            _num(o.won_by_forfeit),
        ]
        for o in page.opponents
    ]
    return _table(headers, rows, "small opponents", "No game counted yet.")


def _bot_status(page: BotPage) -> str:
    where = f"online with {page.slots} slot(s), {page.playing} pair(s) in play" if page.online else "offline"
    house = "house engine · " if page.house else ""
    return f"{house}{where} · {page.games} games · first seen {page.first_seen} · last seen {page.last_seen}"


def bot_html(page: BotPage) -> str:
    """A bot's page."""
    rows = [[_td(reason), _num(n)] for reason, n in page.forfeits.items()]
    forfeits = _table(("reason", "games lost"), rows, "small forfeits", "No forfeit.")
    dodges = "" if page.dodges is None else f"Games left while paired: {page.dodges}."
    banned = "" if page.banned is None else f'<p class="banned">Banned by the operator: {_e(page.banned)}</p>'
    data = {"history": page.history, "recent": plain(page.recent)}
    return _page(
        "bot.html",
        f"Ladder: {page.bot}",
        bot=_e(page.bot),
        status=_e(_bot_status(page)),
        banned=banned,
        versions=_versions(page),
        forfeits=forfeits,
        dodges=f'<p id="dodges">{_e(dodges)}</p>' if dodges else "",
        opponents=_opponents(page),
        recent=_games(page.recent),
        data=json_for_html(data),
    )


def _board(r: Replay) -> str:
    """The final position as a table (row 4 on top, as ``quarto-arena show`` draws it), and the piece in hand."""
    error = f"<p class=note>{_e(r.error)}</p>" if r.error else ""
    if r.position is None:
        return error
    board = r.position.board()
    rows = []
    for row in range(3, -1, -1):
        cells = [f"<th>{row + 1}</th>"]
        for col in range(4):
            p = board[row * 4 + col]
            cells.append("<td></td>" if p is None else f"<td>{_HEX[p]} <small>{piece_description(p)}</small></td>")
        rows.append(cells)
    table = _table(("", "a", "b", "c", "d"), rows, "position", "")
    hand = r.position.hand
    held = f"<p>In hand: {_HEX[hand]} ({piece_description(hand)}).</p>" if hand is not None else ""
    return table + held + error


def _players(game: GamePage) -> str:
    headers = ("side", "bot", "player", "id name", "author", "time used")
    used = [0, 0]
    for i, (_, ms, _) in enumerate(game.turns):
        used[i % 2] += ms
    rows = [
        [_td(label), f"<td>{bot_link(s.bot)}</td>", _td(s.player), _td(s.id_name or ""), _td(s.author or ""),
         f'<td class="n">{used[i] / 1000:.2f} s</td>']
        for i, (label, s) in enumerate((("first", game.first), ("second", game.second)))
    ]  # fmt: skip
    return _table(headers, rows, "small players", "")


def _turns(game: GamePage) -> str:
    rows = []
    book = len(game.opening)
    for i, (token, ms, score) in enumerate(game.turns):
        side = game.first if i % 2 == 0 else game.second
        note = "opening" if i < book else ""
        rows.append([_num(i + 1), _td(side.bot), _td(token, "turn"), _num(ms), _td(score or ""), _td(note)])
    return _table(("turn", "by", "token", "ms", "score", ""), rows, "small turns", "No turn was played.")


def game_meta(game: GamePage, rules: str) -> str:
    """The line under a game's title."""
    when = game.started.replace("T", " ").removesuffix("Z").removesuffix("+00:00") + " UTC" if game.started else "?"
    return f"{game.result} ({game.reason}) · {when} · pair {game.pair} · {rules} · time control {game.time_control}"


def game_html(game: GamePage, viewer: Mapping[str, Any]) -> str:
    """A game's page; ``viewer``: the game in the viewer's encoding, with its players' names."""
    r = replay(game.variant, game.start, [TurnRecord(t, ms, s) for t, ms, s in game.turns])
    rules = game.variant if r.position is None else r.position.variant.describe()
    detail = f"<p>{_e(game.detail)}</p>" if game.detail and game.detail != game.reason else ""
    return _page(
        "game.html",
        f"Game {game.id}: {game.first.player} vs {game.second.player}",
        game=str(game.id),
        meta=_e(game_meta(game, rules)),
        players=_players(game) + detail,
        turns=_turns(game),
        position=_board(r),
        data=json_for_html(viewer),
    )
