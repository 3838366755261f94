"""The ladder's pages as a client without JavaScript gets them (curl, a search engine, a screen reader), and its JSON
API: the real server on a loopback port over a real ladder database (written by the database module with real
games, engines whose names are HTML and whose command lines are paths of a made-up host).

The browsers' side (the same pages with the script, and with it disabled) is tests/test_ladder_web.py; a real
ladder's outputs grepped for this host's paths are in tests/test_ladder_export.py.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Coroutine, Iterator
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("aiohttp", reason="needs the web extra (pip install -e '.[web]')")

from procs import cli
from quarto_arena.arena.ladder import DB_NAME, LadderDB
from quarto_arena.arena.ladder.pages import MAX_PAGE, LadderPages, LadderView
from quarto_arena.arena.ladder.refit import FitWorker
from quarto_arena.arena.ladder.service import Ladder, LadderSettings
from quarto_arena.arena.ladder.views import public_record, scrub_paths
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.protocol.rules import Outcome, Position

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
HTML_BOT = "<i>evil</i>"  # a house engine's name is the operator's choice: any text
HOST_PATHS = ("/home/operator", "/srv/ladder")
BOTS: dict[str, list[tuple[str, str, str]]] = {
    # name: its versions (id name, author, command line as the arena ran it)
    "alpha": [("Alpha 1", "Ann", "/home/operator/venv/bin/python3 -m quarto_arena.engines.greedy")],
    "beta": [("Beta 1", "Bo", "remote:beta"), ("Beta 2", "Bo", "remote:beta")],
    HTML_BOT: [(HOSTILE, "<b>me</b> & you", "/srv/ladder/bots/evil.py --book /srv/ladder/books/x.bin")],
    "delta": [("Delta", "", "remote:delta")],
}


def random_turns(rng: random.Random) -> tuple[list[TurnRecord], Outcome, int]:
    """A random legal game: its turns, how it ended, and how many turns."""
    position, turns = Position.start(), []
    while not position.is_over:
        turn = rng.choice(position.legal_turns())
        position = position.apply(turn)
        turns.append(TurnRecord(str(turn), rng.randrange(1, 500), rng.choice([None, "value 12", "win 3"])))
    return turns, position.outcome, len(turns)


def make_ladder(directory: Path, games: int = 120) -> list[GameRecord]:
    """A ladder database of ``games`` games between :data:`BOTS` (some lost by forfeit, with the host's paths in
    what the referee said); the records as written."""
    rng = random.Random(5)
    db = LadderDB.open(directory / DB_NAME)
    written = []
    names = list(BOTS)
    for k in range(games):
        first, second = rng.sample(names, 2)
        share = k / games
        idents = []
        for name in (first, second):
            versions = BOTS[name]
            id_name, author, source = versions[min(int(share * len(versions)), len(versions) - 1)]
            idents.append(EngineIdentity(id_name, author, 1, source, {"Book": "/srv/ladder/books/x.bin"}))
        turns, outcome, n = random_turns(rng)
        if outcome is Outcome.DRAW:
            result, termination, detail, exit_info = Result.DRAW, Termination.NORMAL, "", {}
        else:
            result = Result.FIRST_WINS if n % 2 else Result.SECOND_WINS
            termination, detail, exit_info = Termination.NORMAL, "", {}
            if k % 9 == 4:  # the loser forfeits: its command line and a path in what was said of it
                loser, source = (second, idents[1].source) if n % 2 else (first, idents[0].source)
                termination = Termination.DISCONNECT if k % 2 else Termination.TIME_FORFEIT
                detail = f"{loser}: cannot start '{source}': No such file or directory"
                exit_info = {loser: "exit code 2; last line 'cannot open /home/operator/book.bin'"}
        record = GameRecord(
            first,
            second,
            result,
            termination,
            detail,
            turns=tuple(turns),
            started="2026-01-02T03:04:05Z",
            exit_info=exit_info,
            engines=(idents[0], idents[1]),
            round=k // 2 + 1,
        )
        number = db.add_game(record, k // 2 + 1)
        written.append(replace(record, game_id=number))
    db.close()
    return written


class Served:
    """The ladder's pages over ``directory``'s database, on a loop of their own in a thread, on a free port."""

    def __init__(self, directory: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.view = LadderView(Ladder(directory, LadderSettings()))
        self.pages = LadderPages(self.view, "127.0.0.1", 0)
        self.run(self._start(directory))

    async def _start(self, directory: Path) -> None:
        # What the ladder does when games were counted: a fit in its fitting process, stored (a bot's rating history
        # is the stored fits), its standings what the pages show.
        worker = FitWorker()
        try:
            fitted, ratings = await worker.fit(directory / DB_NAME, None)
        finally:
            worker.close()
        db = LadderDB.open(directory / DB_NAME)
        try:
            db.save_fit(fitted.through, fitted.games, None, ratings)
        finally:
            db.close()
        self.view.ladder.standings = fitted
        await self.view.start()
        await self.pages.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    def get(self, path: str) -> tuple[int, str, str]:
        """Status, content type and body of ``GET path``, as curl would fetch it."""
        try:
            with urllib.request.urlopen(self.pages.url + path.lstrip("/"), timeout=30) as r:
                return int(r.status), r.headers["Content-Type"], r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.headers["Content-Type"], e.read().decode()

    def json(self, path: str) -> Any:
        status, kind, body = self.get(path)
        assert status == 200 and kind.startswith("application/json"), (path, status, body)
        return json.loads(body)

    def close(self) -> None:
        self.run(self.pages.close())
        self.run(self.view.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def ladder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, list[GameRecord], Path]]:
    directory = tmp_path_factory.mktemp("lad")
    records = make_ladder(directory)
    served = Served(directory)
    try:
        yield served, records, directory
    finally:
        served.close()


class Page(HTMLParser):
    """A page's tables (id of the nearest element that has one -> rows of cell texts), links, scripts and text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.links: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.text: list[str] = []
        self._ids: list[str] = []
        self._stack: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._table: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag not in {"meta", "link", "br", "img", "input"}:
            self._stack.append(tag)
            self._ids.append(a.get("id") or (self._ids[-1] if self._ids else ""))
        if tag == "table":
            self._table = self._ids[-1]
            self.tables.setdefault(self._table, [])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "a":
            self.links.append(a.get("href") or "")
        elif tag == "script":
            self.scripts.append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        if self._stack and self._stack[-1] == tag:
            self._stack.pop()
            self._ids.pop()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if not self._stack or self._stack[-1] != "script":
            self.text.append(data)

    def rows(self, ident: str) -> list[dict[str, str]]:
        """The rows of the table under element ``ident``, as header -> cell."""
        head, *body = self.tables[ident]
        return [dict(zip(head, row, strict=True)) for row in body]


def forfeits_by_bot(records: list[GameRecord]) -> dict[str, Counter[str]]:
    """Games each bot's latest version lost by a forfeit (what its line of the leaderboard counts), by reason,
    counted from the records."""
    out: dict[str, Counter[str]] = {}
    for r in records:
        if r.termination.is_failure:
            side = 1 if r.result is Result.FIRST_WINS else 0
            loser = (r.first, r.second)[side]
            if r.engines[side].id_name == BOTS[loser][-1][0]:
                out.setdefault(loser, Counter())[r.termination.value] += 1
    return out


def rating_text(line: dict[str, Any]) -> str:
    """A line of ``ladder standings --format json``'s rating as the pages write it."""
    mark = " (provisional)" if line["provisional"] else ""
    return f"{line['rating']:.1f} ± {line['margin']:.1f}{mark}"


def _assert_safe(body: str) -> None:
    """Nothing an engine said runs, and the page loads script from the server's files only."""
    assert "<script>window" not in body and "<img" not in body and "<i>evil" not in body
    page = Page(body)
    for script in page.scripts:
        assert script.get("type") == "application/json" or (script.get("src") or "").startswith("/static/"), script


def test_the_leaderboard_is_a_complete_table_without_javascript(ladder: tuple[Served, list[GameRecord], Path]) -> None:
    served, records, directory = ladder
    status, kind, body = served.get("/")
    assert status == 200 and kind.startswith("text/html")
    _assert_safe(body)
    page = Page(body)
    rows = page.rows("leaderboard-table")
    assert list(rows[0]) == ["rank", "bot", "version", "rating", "games", "score", "forfeits", "online", "slots",
                             "playing", "last seen"]  # fmt: skip
    # The latest version of each bot, ranked as `ladder standings` ranks them, with the same numbers.
    table = json.loads(cli("ladder", "standings", str(directory), "--format", "json").stdout)
    assert [(r["rank"], r["bot"]) for r in rows] == [(str(t["rank"]), t["bot"]) for t in table]
    for r, t in zip(rows, table, strict=True):
        assert r["rating"] == rating_text(t) and r["games"] == str(t["games"])
    assert {r["bot"] for r in rows} == set(BOTS)
    forfeits = forfeits_by_bot(records)
    assert {r["bot"]: r["forfeits"] for r in rows} == {
        b: str(sum(forfeits[b].values())) if b in forfeits else "" for b in BOTS
    }
    evil = next(r for r in rows if r["bot"] == HTML_BOT)
    assert evil["version"] == HOSTILE  # its id name, as text
    assert next(r for r in rows if r["bot"] == "beta")["version"] == "Beta 2 (beta#2)"
    # The last games link to their pages; the status line says what is rated.
    last = max(r.game_id for r in records)
    assert f"/game/{last}" in page.links and f"/bot/{HTML_BOT.replace('<', '%3C').replace('>', '%3E')}" in " ".join(
        page.links
    ).replace("%2F", "/")
    assert f"{len(records)} games rated" in "".join(page.text)


def test_a_bots_page_shows_one_rating_line_per_version_its_forfeits_and_each_opponent(
    ladder: tuple[Served, list[GameRecord], Path],
) -> None:
    served, records, directory = ladder
    status, kind, body = served.get("/bot/beta")
    assert status == 200 and kind.startswith("text/html")
    _assert_safe(body)
    page = Page(body)
    versions = page.rows("versions-table")
    by_version = json.loads(cli("ladder", "standings", str(directory), "--format", "json", "--by-version").stdout)
    expected = [t for t in by_version if t["bot"] == "beta"]
    assert [(v["player"], v["id name"], v["rating"]) for v in versions] == [
        (t["player"], t["id_name"], rating_text(t)) for t in sorted(expected, key=str)
    ]
    assert [v["player"] for v in versions] == ["beta#1", "beta#2"]
    # Results against each opponent and forfeits by reason, counted from the records.
    mine = [r for r in records if "beta" in (r.first, r.second)]
    against: dict[str, Counter[str]] = {}
    forfeits: Counter[str] = Counter()
    for r in mine:
        side = 0 if r.first == "beta" else 1
        other = (r.second, r.first)[side]
        score = r.result.first_score if side == 0 else 1 - (r.result.first_score or 0)
        outcome = {1.0: "wins", 0.5: "draws", 0.0: "losses"}[score or 0.0]
        against.setdefault(other, Counter())[outcome] += 1
        if r.termination.is_failure and score == 0.0:
            forfeits[r.termination.value] += 1
    shown = {o["opponent"]: o for o in page.rows("opponents-table")}
    assert set(shown) == set(against)
    for name, c in against.items():
        assert (shown[name]["wins"], shown[name]["draws"], shown[name]["losses"]) == (
            str(c["wins"]), str(c["draws"]), str(c["losses"]),
        )  # fmt: skip
    assert {r["reason"]: int(r["games lost"]) for r in page.rows("forfeits")} == dict(forfeits)
    assert forfeits  # the fixture has some
    # Its recent games, newest first, each a link to its page; the opponents link to theirs.
    ids = sorted((r.game_id for r in mine), reverse=True)[:20]
    assert [link for link in page.links if link.startswith("/game/")] == [f"/game/{i}" for i in ids]
    assert "/bot/alpha" in page.links
    # The chart's data: one line per version.
    data = json.loads(re.search(r'<script type="application/json" id="bot-data">(.*?)</script>', body, re.S)[1])
    assert [s["name"] for s in data["history"]["series"]] == ["beta#1", "beta#2"]
    assert served.get("/bot/nobody")[0] == 404


def test_a_games_page_shows_who_played_its_turns_and_its_final_position(
    ladder: tuple[Served, list[GameRecord], Path],
) -> None:
    served, records, _ = ladder
    game = next(r for r in records if HTML_BOT in (r.first, r.second) and r.termination.is_failure)
    status, kind, body = served.get(f"/game/{game.game_id}")
    assert status == 200 and kind.startswith("text/html")
    _assert_safe(body)
    page = Page(body)
    players = page.rows("players")
    assert [p["bot"] for p in players] == [game.first, game.second]
    assert HOSTILE in [p["id name"] for p in players] and "<b>me</b> & you" in [p["author"] for p in players]
    turns = page.rows("turns-section")
    assert [t["token"] for t in turns] == [t.token for t in game.turns]
    assert [int(t["ms"]) for t in turns] == [t.ms for t in game.turns]
    # The final position: the pieces on the board are those the turns placed.
    board = page.rows("position")
    placed = sum(1 for row in board for square, cell in row.items() if square and cell)
    assert placed == sum(1 for t in game.turns if len(t.token) > 1 and t.token[0] in "abcd")
    assert not any(p in body for p in HOST_PATHS)
    assert "cannot start" in body  # what the referee said, without the command line
    for bad, code in (("/game/0", 404), (f"/game/{10**6}", 404), ("/game/x", 400), ("/game/" + "9" * 40, 400)):
        assert served.get(bad)[0] == code, bad


def test_the_api_answers_standings_bots_and_games_in_pages(ladder: tuple[Served, list[GameRecord], Path]) -> None:
    served, records, directory = ladder
    standings = served.json("/api/v1/standings")
    assert standings["api"] == 1 and standings["games"] == len(records)
    table = json.loads(cli("ladder", "standings", str(directory), "--format", "json").stdout)
    assert [s["bot"] for s in standings["lines"]] == [t["bot"] for t in table]
    assert [s["rating"] for s in standings["lines"]] == pytest.approx([t["rating"] for t in table])
    assert {s["bot"]: s["forfeits"] for s in standings["lines"]} == {
        b: dict(forfeits_by_bot(records).get(b, {})) for b in BOTS
    }
    bot = served.json("/api/v1/bots/" + urllib.request.quote(HTML_BOT, safe=""))
    assert bot["bot"] == HTML_BOT and bot["versions"][0]["id_name"] == HOSTILE
    assert sum(o["games"] for o in bot["opponents"]) == bot["games"]
    # A game: the public record, every turn.
    game = records[7]
    answer = served.json(f"/api/v1/games/{game.game_id}")
    assert (answer["first"]["bot"], answer["second"]["bot"], answer["result"]) == (
        game.first, game.second, game.result.value,
    )  # fmt: skip
    assert answer["turns"] == [[t.token, t.ms, t.score] for t in game.turns]
    # Every game, page by page, in order, once each; then a bot's games only.
    seen, since = [], 0
    while True:
        page = served.json(f"/api/v1/games?since={since}&limit=7")
        seen += [g["id"] for g in page["games"]]
        assert len(page["games"]) <= 7
        if page["next"] is None:
            break
        since = page["next"]
    assert seen == sorted(r.game_id for r in records)
    beta = served.json("/api/v1/games?bot=beta&limit=500")
    assert [g["id"] for g in beta["games"]] == [r.game_id for r in records if "beta" in (r.first, r.second)]
    assert all("beta" in (g["first"]["bot"], g["second"]["bot"]) for g in beta["games"])
    later = served.json(f"/api/v1/games?bot=beta&since={beta['games'][3]['id']}&limit=2")
    assert [g["id"] for g in later["games"]] == [g["id"] for g in beta["games"][4:6]] and later["next"] is not None
    # Bad requests: one line naming what is wrong.
    for path, code in (
        (f"/api/v1/games?limit={MAX_PAGE + 1}", 400),
        ("/api/v1/games?limit=0", 400),
        ("/api/v1/games?since=-1", 400),
        ("/api/v1/games?since=" + "9" * 19, 400),
        ("/api/v1/games?bot=nobody", 404),
        ("/api/v1/bots/nobody", 404),
        ("/api/v1/games/123456", 404),
    ):
        status, _, body = served.get(path)
        assert status == code and body.count("\n") == 1, (path, status, body)


def _shape(value: Any) -> Any:
    """A JSON value's shape: the keys of objects (recursively), the shape of a list's first item, the kind of a
    scalar (a number, text, a flag; null fits any)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return None if value is None else type(value).__name__.replace("int", "float")


def _fits(sample: Any, answer: Any, where: str) -> None:
    if where.endswith(".forfeits"):  # reason -> games: its keys are the reasons seen
        assert isinstance(sample, dict) and isinstance(answer, dict) and set(answer.values()) <= {"float"}, where
    elif isinstance(sample, dict):
        assert isinstance(answer, dict) and set(sample) == set(answer), (where, sorted(sample), sorted(answer))
        for k in sample:
            _fits(sample[k], answer[k], f"{where}.{k}")
    elif isinstance(sample, list):
        assert isinstance(answer, list), where
        if sample and answer:
            _fits(sample[0], answer[0], f"{where}[0]")
    elif sample is not None and answer is not None:
        assert sample == answer, (where, sample, answer)


def test_the_readmes_samples_have_the_shape_of_the_apis_answers(ladder: tuple[Served, list[GameRecord], Path]) -> None:
    served, records, _ = ladder
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    samples = dict(re.findall(r"<!-- api-sample: (\S+) -->\n```json\n(.*?)```", readme, re.S))
    assert set(samples) == {"standings", "bots", "game", "games", "event"}, sorted(samples)
    game = next(r for r in records if r.termination.is_failure).game_id
    answers = {
        "standings": served.json("/api/v1/standings"),
        "bots": served.json("/api/v1/bots/beta"),
        "game": served.json(f"/api/v1/games/{game}"),
        "games": served.json("/api/v1/games?bot=beta&limit=2"),
        "event": json.loads(served.pages.feed("ladder")),
    }
    for name, text in samples.items():
        _fits(_shape(json.loads(text)), _shape(answers[name]), name)


def test_nothing_served_carries_a_command_line_or_a_path_of_the_host(
    ladder: tuple[Served, list[GameRecord], Path],
) -> None:
    served, records, _ = ladder
    paths = ["/", "/api/v1/standings", "/api/v1/games?limit=500", "/api/boards"]
    paths += [f"/bot/{urllib.request.quote(b, safe='')}" for b in BOTS]
    paths += [f"/api/v1/bots/{urllib.request.quote(b, safe='')}" for b in BOTS]
    paths += [f"/{kind}/{r.game_id}" for r in records for kind in ("game", "api/game", "api/v1/games")]
    for path in paths:
        status, _, body = served.get(path)
        assert status == 200, path
        for secret in (*HOST_PATHS, "remote:", "python3", "book.bin", "Book"):
            assert secret not in body, (path, secret)


def test_a_public_record_keeps_who_played_and_drops_how_they_were_run() -> None:
    ident = EngineIdentity("Evil 2", "Eve", 1, "/srv/bots/evil --net /srv/nets/a.nn", {"Net": "/srv/nets/a.nn"})
    record = GameRecord(
        "evil",
        "greedy",
        Result.SECOND_WINS,
        Termination.DISCONNECT,
        "evil: cannot start '/srv/bots/evil --net /srv/nets/a.nn': No such file or directory",
        exit_info={"evil": "exit code 1; last line 'no /srv/nets/a.nn'"},
        engines=(ident, EngineIdentity("Greedy 1.0", "quarto-arena", 1, "/usr/bin/python3 -m greedy")),
    )
    public = public_record(record)
    assert public.engines == (EngineIdentity("Evil 2", "Eve", 1), EngineIdentity("Greedy 1.0", "quarto-arena", 1))
    assert public.detail == "evil: cannot start 'evil': No such file or directory"
    assert public.exit_info == {"evil": "exit code 1; last line 'no a.nn'"}
    assert (public.first, public.second, public.result, public.turns) == ("evil", "greedy", record.result, ())
    # Paths go, what merely has a slash stays.
    assert scrub_paths("1/2-1/2 at tcp://127.0.0.1:5556, see ~/x/y and (/a/b/c.py) or a/b") == (
        "1/2-1/2 at tcp://127.0.0.1:5556, see y and (c.py) or a/b"
    )


def test_the_pages_show_the_ladders_moderation_provisional_ratings_and_dodges(tmp_path: Path) -> None:
    """What the ladder keeps beside the games reaches the pages and the API: a banned bot is off the leaderboard and
    its page says why and shows no rating; a retired version is marked and rated as the bot's retired versions; a
    dodge charged is counted; a version of few games is provisional, here and in ``ladder standings`` alike."""
    records = make_ladder(tmp_path, games=60)
    db = LadderDB.open(tmp_path / DB_NAME)
    try:
        assert db.ban("delta", "trading results") and db.retire("beta", 1)
        pair = records[-1].round + 1
        db.add_dodge("alpha", "beta", pair, records[-1].game_id)
    finally:
        db.close()
    served = Served(tmp_path)
    try:
        standings = served.json("/api/v1/standings")
        assert "delta" not in {s["bot"] for s in standings["lines"]}
        assert Page(served.get("/")[2]).rows("leaderboard-table")[0]["bot"] != "delta"
        table = json.loads(cli("ladder", "standings", str(tmp_path), "--format", "json").stdout)
        assert [(s["bot"], s["provisional"], s["dodges"]) for s in standings["lines"]] == [
            (t["bot"], t["provisional"], t["dodges"]) for t in table
        ]
        assert {s["bot"]: s["dodges"] for s in standings["lines"]}["alpha"] == 1
        assert any(s["provisional"] for s in standings["lines"])  # 60 games: nobody is established yet
        banned = served.json("/api/v1/bots/delta")
        assert banned["banned"] == "trading results" and banned["games"] > 0
        assert all(v["rating"] is None for v in banned["versions"]) and banned["history"]["series"] == []
        assert "Banned by the operator: trading results" in served.get("/bot/delta")[2]
        beta = served.json("/api/v1/bots/beta")
        assert [(v["number"], v["player"], v["retired"]) for v in beta["versions"]] == [
            (1, "beta#retired", True), (2, "beta#2", False),
        ]  # fmt: skip
        by_version = json.loads(cli("ladder", "standings", str(tmp_path), "--format", "json", "--all").stdout)
        retired = next(t for t in by_version if t["player"] == "beta#retired")
        assert beta["versions"][0]["rating"] == pytest.approx(retired["rating"])
        assert [s["name"] for s in beta["history"]["series"]] == ["beta#2", "beta#retired"]
        assert served.json("/api/v1/bots/alpha")["dodges"] == 1
        assert "Games left while paired: 1." in served.get("/bot/alpha")[2]
        # A game of the retired version names its player as the standings and the export do.
        first_beta = next(r for r in records if "beta" in (r.first, r.second))
        game = served.json(f"/api/v1/games/{first_beta.game_id}")
        side = game["first"] if game["first"]["bot"] == "beta" else game["second"]
        assert (side["version"], side["player"]) == (1, "beta#retired")
    finally:
        served.close()
