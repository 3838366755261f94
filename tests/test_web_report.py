"""What the pages show, without a browser: the viewer's replay of real games, the rating history, report.html's
escaping and policy, the analysis file, a run directory followed as it grows, and the CLI's report and serve."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from quarto_arena.arena.output import standings_table
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.results import rating_table
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import JSONL_NAME, Run, RunKind, RunSpec
from quarto_arena.arena.schedule import OpeningBook
from quarto_arena.arena.settings import GameSettings
from quarto_arena.arena.stats import ScoredGame, Sprt, SprtModel, crosstable_rows, rate
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.arena.web import WebError, parse_address
from quarto_arena.arena.web.model import HISTORY_POINTS, RatingHistory, RunInfo, RunModel, game_view
from quarto_arena.arena.web.report import SCRIPTS, _e, asset, json_for_html, read_analysis, report_html
from quarto_arena.arena.web.rundir import Follower
from quarto_arena.protocol.notation import parse_turn
from quarto_arena.protocol.rules import Position, iter_alignments

CLI = [sys.executable, "-c", "import sys; from quarto_arena.arena.cli import main; main(sys.argv[1:])"]
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def played() -> tuple[RunSpec, list[GameRecord]]:
    """Twelve real games of a three-engine tournament, with random openings."""
    spec = RunSpec(
        RunKind.TOURNAMENT,
        tuple(resolve_engines(["greedy", "random", "minimax"])),
        games=4,
        concurrency=2,
        game=GameSettings(TimeControl.parse("st=1"), book=OpeningBook(random_turns=2, seed=9)),
    )
    with Run.in_memory(spec) as run:
        outcome = asyncio.run(run.run())
    return spec, list(outcome.records)


def final_position(record: GameRecord) -> Position:
    position = Position.start()
    for t in record.turns:
        position = position.apply(parse_turn(t.token))
    return position


def test_the_viewer_replays_every_game_to_the_referees_final_position(played: tuple[RunSpec, list[GameRecord]]) -> None:
    spec, records = played
    index = {n: i for i, n in enumerate(spec.names)}
    for record in records:
        view = game_view(record, index)
        assert view["error"] is None
        assert view["opening"] == 2 and len(view["plies"]) == len(record.turns)
        # The viewer's bookkeeping: the hand piece goes to its square, the given piece into the hand.
        board, hand = list(view["board"]), view["hand"]
        for place, give, _mark, _ms, _score in view["plies"]:
            if place >= 0:
                board[place], hand = hand, -1
            if give >= 0:
                hand = give
        final = final_position(record)
        assert board == [-1 if p is None else p for p in final.board()]
        assert view["plies"][-1][3:] == [record.turns[-1].ms, record.turns[-1].score]
        assert view["lines"] == list(iter_alignments(final))
        if record.result.value != "1/2-1/2":
            assert view["lines"], "a game won on the board shows its line"


def test_a_record_that_cannot_be_replayed_says_where(played: tuple[RunSpec, list[GameRecord]]) -> None:
    _, records = played
    record = records[0]
    bad = replace(record, turns=(*record.turns[:3], TurnRecord("zz", 0), *record.turns[4:]))
    view = game_view(bad, {})
    assert view["error"] is not None and "turn 4 'zz'" in view["error"]
    assert len(view["plies"]) == 3
    assert game_view(replace(record, start="nonsense"), {})["error"].startswith("the game cannot be shown")


def test_the_rating_history_is_thinned_and_ends_at_the_full_fit(played: tuple[RunSpec, list[GameRecord]]) -> None:
    spec, records = played
    history = RatingHistory(spec.names)
    many = [replace(r, game_id=i) for i in range(30) for r in records]  # 360 games
    for r in many:
        history.add(r)
    series = history.series()
    assert len(series["games"]) <= HISTORY_POINTS + 1
    assert series["games"][-1] == len(many)
    assert series["games"] == sorted(series["games"])
    table = rating_table(many, spec.names)
    for s in series["series"]:
        player = next(p for p in table.players if p.name == s["name"])
        assert player.rating is not None and player.margin is not None
        assert s["rating"][-1] == round(player.rating, 1) and s["margin"][-1] == round(player.margin, 1)


@pytest.mark.parametrize("seed", range(6))
def test_the_history_fits_from_tallies_exactly_what_rate_gives_from_every_game(
    played: tuple[RunSpec, list[GameRecord]], seed: int
) -> None:
    _spec, records = played
    rng = random.Random(seed)
    names = ["a", "b", "c", "d"]
    results = [Result.FIRST_WINS, Result.SECOND_WINS, Result.DRAW, Result.UNFINISHED]
    history, games = RatingHistory(names, expected=rng.choice([0, 300])), []
    for i in range(rng.randrange(1, 300)):
        first, second = rng.sample(names[: rng.randrange(2, 5)], 2)
        record = replace(records[0], first=first, second=second, result=rng.choice(results), game_id=i)
        history.add(record)
        if (score := record.result.first_score) is not None:
            games.append(ScoredGame(first, second, score))
    assert history.games == len(games)
    assert history.table() == rate(games, players=names)  # same names, pairs and sums in the same order: bit-equal


@pytest.mark.slow
@pytest.mark.parametrize("copies", [1, 8, 17, 34, 67])  # 12 to 804 games (804: 100 points of 8, plus 4)
def test_a_history_told_the_number_of_games_draws_the_same_points(
    played: tuple[RunSpec, list[GameRecord]], copies: int
) -> None:
    spec, records = played
    many = [replace(r, game_id=i) for i in range(copies) for r in records]
    told, untold = RatingHistory(spec.names, expected=len(many)), RatingHistory(spec.names)
    for r in many:
        told.add(r)
        untold.add(r)
    assert told.series() == untold.series()
    assert told.step == untold.step


def test_the_model_of_an_sprt_follows_the_test(played: tuple[RunSpec, list[GameRecord]]) -> None:
    spec, records = played
    pair = [r for r in records if {r.first, r.second} == {"greedy", "random"}]
    test = Sprt(-10, 10, 0.05, 0.05, SprtModel.NORMALIZED)
    info = RunInfo(RunKind.SPRT, ("greedy", "random"), None, spec.game.variant, "st=1", 1, test)
    model = RunModel(info, [replace(r, game_id=i + 1) for i, r in enumerate(pair)])
    sprt = model.summary()["sprt"]
    assert sprt is not None and len(sprt["llrs"]) == len(pair) // 2
    assert (sprt["lower"], sprt["upper"]) == test.bounds
    assert model.tracker is not None and sprt["llr"] == model.tracker.progress.status.llr


def script_bodies(page: str) -> list[str]:
    return re.findall(r"<script>(.*?)</script>", page, flags=re.S)


def test_the_report_escapes_what_engines_say_and_allows_only_its_own_scripts(
    played: tuple[RunSpec, list[GameRecord]],
) -> None:
    spec, records = played
    hostile = EngineIdentity(id_name=HOSTILE, author="</script><script>alert(1)</script>", source="/secret/path/bot")
    evil = [replace(r, engines=(hostile, hostile), detail=HOSTILE) for r in records]
    page = report_html(RunInfo.of(spec, len(evil)), evil, state="complete")
    assert HOSTILE not in page and "<script>alert" not in page and "/secret/path" not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page  # the tables show it as text
    bodies = script_bodies(page)
    assert len(bodies) == len(SCRIPTS)  # the data is JSON in a non-executed block; no other script
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp is not None
    policy = csp.group(1).replace("&#x27;", "'")
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    for body in bodies:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    data = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', page, flags=re.S)
    assert data is not None and "<" not in data.group(1)
    assert json.loads(data.group(1))["summary"]["engines"]["rows"][0][1] == HOSTILE


def test_json_for_html_cannot_close_its_element() -> None:
    text = json_for_html({"name": "</script><!-- & -->"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"name": "</script><!-- & -->"}


def analysis_line(record: GameRecord, ply: int, **changes: object) -> str:
    """One line as ``quarto-arena analyse`` writes it (arena/analysis.py's game_json on the solver branch)."""
    turn = {
        "ply": ply,
        "player": record.first if ply % 2 == 0 else record.second,
        "turn": record.turns[ply].token,
        "empty": 16 - ply,
        "before": {"value": "win", "turns": 3},
        "after": {"value": "draw", "turns": 5},
        "mistake": "win thrown away",
        "best": ["a1"],
    }
    game = {
        "white": record.first,
        "black": record.second,
        "result": record.result.value,
        "game_id": str(record.game_id),
        "source": "games.pgn:1",
        "turns": [turn],
        "mistakes": [ply],
    }
    game.update(changes)
    return json.dumps(game)


def test_the_analysis_is_matched_to_its_game_and_turn_or_refused(
    played: tuple[RunSpec, list[GameRecord]], tmp_path: Path
) -> None:
    _, records = played
    by_id = {r.game_id: r for r in records}
    a, b = records[0], records[1]
    path = tmp_path / "games.analysis.jsonl"
    lines = [
        analysis_line(a, 3),
        analysis_line(b, 2, white=b.second, black=b.first),  # other players: refused
        analysis_line(b, 2, game_id="999"),  # not in the run
        '{"game_id": ',  # not JSON
    ]
    path.write_text("\n".join(lines) + "\n")
    values, warnings = read_analysis(path, by_id)
    assert list(values) == [a.game_id]
    assert values[a.game_id][3] == {
        "before": "win in 3",
        "after": "draw",
        "mistake": "win thrown away",
        "best": ["a1"],
    }
    assert [v for i, v in enumerate(values[a.game_id]) if i != 3] == [None] * (len(a.turns) - 1)
    assert len(warnings) == 3 and all("games.analysis.jsonl line" in w for w in warnings)
    wrong_turn = json.loads(analysis_line(a, 3))
    wrong_turn["turns"][0]["turn"] = "zz"
    path.write_text(json.dumps(wrong_turn) + "\n")
    values, warnings = read_analysis(path, by_id)
    assert not values and "turn 4 is not 'zz'" in warnings[0]


def run_config(directory: Path, spec: RunSpec, games: int) -> dict[str, Any]:
    """A run directory's config.json, as a run of ``games`` games writes it."""
    config = spec.to_dict()
    config["schedule"] = {"games": games, "digest": "x"}
    (directory / "config.json").write_text(json.dumps(config))
    return config


def test_a_followed_directory_reads_complete_lines_and_starts_again_when_rewritten(
    played: tuple[RunSpec, list[GameRecord]], tmp_path: Path
) -> None:
    spec, records = played
    run_config(tmp_path, spec, 12)
    warnings: list[str] = []
    follower = Follower(tmp_path, warnings.append)
    assert not follower.poll()  # no games.jsonl yet
    path = tmp_path / JSONL_NAME
    lines = [json.dumps(r.to_dict()) + "\n" for r in records]
    with open(path, "w") as f:
        f.write(lines[0] + lines[1][:40])  # the second line is still being written
        f.flush()
        assert follower.poll()
        assert [r.game_id for r in follower.model.records] == [records[0].game_id]
        f.write(lines[1][40:] + "not json\n" + lines[2])
        f.flush()
        assert follower.poll()
    assert [r.game_id for r in follower.model.records] == [r.game_id for r in records[:3]]
    assert warnings == [f"{JSONL_NAME} line 3: not a game record (JSONDecodeError), skipped"]
    tmp = tmp_path / "new.jsonl"
    tmp.write_text(lines[5])
    os.replace(tmp, path)  # a resume rewrites the file from the journal
    assert follower.poll()
    assert [r.game_id for r in follower.model.records] == [records[5].game_id]


def test_a_served_run_shows_its_own_elapsed_time_frozen_once_finished(
    played: tuple[RunSpec, list[GameRecord]], tmp_path: Path
) -> None:
    # Not the server's uptime: the span of the run's games, from its first game's start to its last game's end.
    spec, records = played
    config = run_config(tmp_path, spec, len(records))
    (tmp_path / JSONL_NAME).write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records))
    follower = Follower(tmp_path, print)
    follower.poll()
    from quarto_arena.arena.web.rundir import run_state

    follower.model.state = run_state(follower.model)
    assert follower.model.state == "complete"
    first = follower.model.progress()["elapsed_s"]
    time.sleep(0.05)
    assert follower.model.progress()["elapsed_s"] == first  # frozen: the run is over
    import datetime

    starts = [datetime.datetime.fromisoformat(r.started).timestamp() for r in records]
    ends = [s + sum(t.ms for t in r.turns) / 1000 for s, r in zip(starts, records, strict=True)]
    assert first == pytest.approx(max(ends) - min(starts))
    # A run directory with no game yet has no elapsed time to show (not the server's).
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps(config))
    assert Follower(empty, print).model.progress()["elapsed_s"] is None


def test_a_directory_without_a_run_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WebError, match="no such run directory"):
        Follower(tmp_path / "missing", print)
    with pytest.raises(WebError, match="not a run directory"):
        Follower(tmp_path, print)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        (":0", ("127.0.0.1", 0)),
        ("[::1]:9", ("::1", 9)),
        ("80", ("127.0.0.1", 80)),
    ],
)
def test_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["localhost:http", "1.2.3.4:70000", "host:"])
def test_bad_addresses(text: str) -> None:
    with pytest.raises(WebError, match="expected HOST:PORT"):
        parse_address(text)


def test_the_inlined_scripts_are_the_shipped_files() -> None:
    for name in SCRIPTS:
        assert asset(name).strip(), name
    assert "Chart.js v4" in asset("static/vendor/chart.umd.min.js")[:200]


# ----------------------------------------------------------------------------------------------------------------
# The CLI


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_every_run_writes_its_report_and_report_rewrites_it_with_the_analysis(tmp_path: Path) -> None:
    out = tmp_path / "m"
    done = run_cli("play", "greedy", "random", "--games", "4", "--tc", "st=1", "--out", str(out), "-q")
    assert done.returncode == 0, done.stderr
    report = out / "report.html"
    page = report.read_text()
    assert "<h1>Match: greedy, random</h1>" in page and "4 of 4 games, complete" in page
    records = [GameRecord.from_dict(json.loads(line)) for line in (out / JSONL_NAME).read_text().splitlines()]
    (out / "games.analysis.jsonl").write_text(analysis_line(records[1], 4) + "\nrubbish\n")
    again = run_cli("report", str(out))
    assert again.returncode == 0 and again.stdout.strip() == str(report)
    assert "games.analysis.jsonl line 2: not an analysed game of this run" in again.stderr
    data = re.search(r'id="run-data">(.*?)</script>', report.read_text(), flags=re.S)
    assert data is not None
    games = json.loads(data.group(1))["games"]
    assert games[1]["values"][4]["mistake"] == "win thrown away"
    assert games[0]["values"] is None


@pytest.mark.slow
def test_report_and_serve_refuse_what_is_not_a_run_in_one_line(tmp_path: Path) -> None:
    for args in (("report", str(tmp_path / "none")), ("serve", str(tmp_path), "--web", "127.0.0.1:0")):
        done = run_cli(*args)
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("quarto-arena: error: "), done.stderr


@pytest.mark.slow
def test_web_refuses_a_bad_address_or_a_missing_extra_before_the_run(tmp_path: Path) -> None:
    out = tmp_path / "r"
    done = run_cli("play", "greedy", "random", "--out", str(out), "--web", "localhost:http")
    assert done.returncode == 2 and "expected HOST:PORT" in done.stderr and done.stderr.count("\n") == 1
    assert not out.exists()
    code = "import sys; sys.modules['aiohttp'] = None; from quarto_arena.arena.cli import main; main(sys.argv[1:])"
    for args in (["play", "greedy", "random", "--out", str(out), "--web", ":0"], ["serve", str(tmp_path)]):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert 'pip install "quarto-arena[web]"' in done.stderr and done.stderr.count("\n") == 1
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.extra("web")
def test_web_on_a_port_in_use_is_one_line_and_the_run_can_be_resumed(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = tmp_path / "r"
        done = run_cli("play", "greedy", "random", "--games", "2", "--out", str(out), "--web", f"127.0.0.1:{port}")
    assert done.returncode == 2, done.stderr
    assert "cannot listen there" in done.stderr and f"--resume {out}" in done.stderr
    resumed = run_cli("play", "--resume", str(out), "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "report.html").exists()


def test_the_pages_tables_are_the_commands_tables(played: tuple[RunSpec, list[GameRecord]]) -> None:
    spec, records = played
    forfeit = replace(records[0], termination=Termination.TIME_FORFEIT, detail="random: time forfeit")
    games = [forfeit, *records[1:]]
    summary = RunModel(RunInfo.of(spec, 12), games).summary()
    table = standings_table(games, spec.names)
    assert summary["table"]["headers"] == list(table.headers)
    assert summary["table"]["rows"] == [list(row) for row in table.rows]
    cross = crosstable_rows(rating_table(games, spec.names))
    assert summary["crosstable"]["names"] == list(cross.headers[1:])
    for row, cells in zip(cross.rows, summary["crosstable"]["cells"], strict=True):
        assert [None if c is None else f"{c[0]:g}/{c[1]}" for c in cells] == list(row[1:])
    assert dict(summary["terminations"])["time forfeit"] == 1
    assert sum(n for _, n in summary["terminations"]) == len(games)


GATED_BOT = """
import pathlib, random, time
from quarto_arena.protocol.bot import Bot, run

GATE = pathlib.Path(__file__).with_name("gate")

class Gated(Bot):
    name = "gated"
    games = 0
    fresh = False

    def new_game(self, variant):
        self.fresh = True  # the game starts at the next search (an engine started early is made ready once more)

    def search(self, position, ctx):
        if self.fresh:
            self.fresh = False
            self.games += 1
            while int(GATE.read_text()) < self.games:  # the test lets the games start a few at a time
                time.sleep(0.02)
        return random.choice(position.legal_turns())

run(Gated(), [])
"""
"""A bot that starts a game only once the file ``gate`` beside it holds at least that game's number: the pace of
a run set by the test, not by how fast the machine runs the bot, the arena and the server."""


def http(url: str, *, method: str = "GET", host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, method=method)
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.mark.slow
@pytest.mark.extra("web")
def test_serve_follows_a_run_another_process_is_writing(tmp_path: Path) -> None:
    """The page follows a run's games as they come. The run plays three games at a time, each three started when
    the test has seen the last three done, the first three once the page has said that it cannot see the games in
    flight: a run that finished before the server was up (a loaded machine) cannot pass for one the page followed,
    nor fail the test."""
    bot = tmp_path / "slow.py"
    bot.write_text(GATED_BOT)
    gate = tmp_path / "gate"

    def allow(games: int) -> None:
        (tmp_path / "gate.new").write_text(str(games))
        os.replace(tmp_path / "gate.new", gate)  # the bot never reads a half-written number

    allowed = 0  # no game starts until the page is up: however slow serve starts, it sees the games come
    allow(allowed)
    out = tmp_path / "t"
    run = subprocess.Popen(
        [
            *CLI,
            "play",
            f"slow={sys.executable} {bot}",
            "greedy",
            "--games",
            "12",
            "--tc",
            "inf",  # the bot waits for the gate in its search: no clock to lose on, the safety deadline bounds it
            "--out",
            str(out),
            "-q",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    serve = None
    try:
        deadline = time.monotonic() + 60
        while not (out / "config.json").exists():  # the run directory exists once the run has started
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.05)
        serve = subprocess.Popen([*CLI, "serve", str(out), "--web", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        assert serve.stderr is not None
        line = serve.stderr.readline()
        m = re.search(r"at (http://127\.0\.0\.1:\d+/) ", line)
        assert m, line
        url = m.group(1)
        # Another process plays the run: the page cannot see its games in flight, and says where they are shown.
        progress = json.loads(http(url + "api/summary")[2])["progress"]
        assert progress["done"] == 0 and progress["running"] is None
        boards = json.loads(http(url + "api/boards")[2])
        assert boards["games"] == [] and boards["in_flight"] == "shown by the run's own --web"
        allowed = 3
        allow(allowed)
        seen = []
        while True:
            status, _, body = http(url + "api/summary")
            assert status == 200
            done = json.loads(body)["progress"]["done"]
            if not seen or done != seen[-1]:
                seen.append(done)
            if done == 12:
                break
            if done >= allowed:
                allowed += 3
                allow(allowed)
            assert time.monotonic() < deadline, seen
            time.sleep(0.2)
        assert len(seen) >= 4, f"the page did not follow the games as they came: {seen}"
        assert run.wait(timeout=60) == 0
        status, headers, body = http(url)
        assert status == 200 and b"<h1>Match: slow, greedy</h1>" in body
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        status, _, body = http(url + "api/game/3")
        assert status == 200 and json.loads(body)["id"] == 3
        assert http(url + "api/game/99")[0] == 404
        assert http(url + "static/../../pyproject.toml")[0] == 404
        assert http(url + "api/summary", method="POST")[0] == 405  # read-only
        assert http(url, host="attacker.example")[0] == 421  # a page elsewhere cannot read it by DNS rebinding
        serve.send_signal(signal.SIGINT)
        assert serve.wait(timeout=30) == 0  # Ctrl-C is how a server ends
    finally:
        for proc in (run, serve):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.extra("web")
def test_malformed_requests_get_a_4xx_and_at_most_one_log_line_a_second(
    played: tuple[RunSpec, list[GameRecord]], caplog: pytest.LogCaptureFixture
) -> None:
    from quarto_arena.arena.web.server import LOG_EVERY, LiveServer

    spec, records = played
    garbage = [
        b"GET /api/game/" + b"9" * 4300 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "GET /api/game/\u00b2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode(),
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n",
        b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: \x1b]0;pwned\x07\r\n\r\n",
    ]

    async def attack() -> tuple[list[int], float]:
        server = LiveServer(RunModel(RunInfo.of(spec, 12), records), "127.0.0.1", 0)
        statuses = []
        async with server:
            t0 = time.monotonic()
            for _ in range(40):
                for request in garbage:
                    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                    writer.write(request)
                    await writer.drain()
                    line = await reader.readline()
                    statuses.append(int(line.split()[1]) if line.startswith(b"HTTP/1.") else 0)
                    writer.close()
            elapsed = time.monotonic() - t0
        return statuses, elapsed

    with caplog.at_level(logging.DEBUG, logger="aiohttp"):
        statuses, elapsed = asyncio.run(attack())
    assert all(400 <= s < 500 for s in statuses), sorted(set(statuses))
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert 1 <= len(lines) <= 1 + elapsed / LOG_EVERY, [r.getMessage() for r in lines]
    assert all(r.exc_info is None and "\n" not in r.getMessage() and "\x1b" not in r.getMessage() for r in lines)


@pytest.mark.extra("web")
def test_open_pages_are_capped_and_a_closed_one_frees_its_place(
    played: tuple[RunSpec, list[GameRecord]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from quarto_arena.arena.web import server as web_server

    monkeypatch.setattr(web_server, "MAX_STREAMS", 3)
    spec, records = played

    async def status_of(port: int) -> tuple[int, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        await writer.drain()
        line = await reader.readline()
        return int(line.split()[1]), writer

    async def pages() -> list[int]:
        statuses = []
        async with web_server.LiveServer(RunModel(RunInfo.of(spec, 12), records), "127.0.0.1", 0) as server:
            opened = [await status_of(server.port) for _ in range(4)]
            statuses += [s for s, _ in opened]
            opened[0][1].close()
            await asyncio.sleep(0.5)  # the server sees the closed page at its next write
            status, writer = await status_of(server.port)
            statuses.append(status)
            for _, w in [*opened[1:], (status, writer)]:
                w.close()
        return statuses

    assert asyncio.run(pages()) == [200, 200, 200, 503, 200]


@given(st.text(alphabet=st.sampled_from("&<>\"'a;#x\u00e9\U0001f600") | st.characters()))
def test_the_report_escapes_text_as_html_escape_does(text: str) -> None:
    import html

    assert _e(text) == html.escape(text, quote=True)


def test_the_report_lists_the_games_in_the_schedule_s_order_not_as_they_finished(
    played: tuple[RunSpec, list[GameRecord]],
) -> None:
    spec, records = played
    finished = records[1::2] + records[0::2]  # pair partners finish out of order, at -j 2 they do
    page = report_html(RunInfo.of(spec, len(records)), finished, state="complete")
    listed = [int(n) for n in re.findall(r'<tr><td><a href="#game-(\d+)">', page)]
    assert listed == sorted(r.game_id for r in records)
    data = json.loads(re.search(r'<script type="application/json" id="run-data">(.*?)</script>', page, re.S)[1])
    assert [g["id"] for g in data["games"]] == listed


def test_a_followed_file_is_read_in_bounded_parts_and_an_endless_line_is_skipped(
    played: tuple[RunSpec, list[GameRecord]], tmp_path: Path
) -> None:
    # A 4 GiB sparse games.jsonl took serve to 3 GB: read whole, then split. Here 40 MiB of NUL bytes (one endless
    # line) between real games: read in parts, the endless line skipped without being held, the games around it kept.
    import tracemalloc

    from quarto_arena.arena.web import rundir

    spec, records = played
    run_config(tmp_path, spec, 12)
    path = tmp_path / JSONL_NAME
    with open(path, "wb") as f:
        f.write((json.dumps(records[0].to_dict()) + "\n").encode())
        f.truncate(f.tell() + 40 * rundir.MAX_LINE)  # a hole: reads as NUL bytes, takes no disk
        f.seek(0, os.SEEK_END)
        f.write(("\n" + json.dumps(records[1].to_dict()) + "\n").encode())
    warnings: list[str] = []
    follower = Follower(tmp_path, warnings.append)
    tracemalloc.start()
    polls = 0
    try:
        while True:
            follower.poll()
            polls += 1
            if not follower.behind:
                break
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert polls == -(-path.stat().st_size // rundir.READ_PER_POLL)
    assert peak < 3 * rundir.READ_PER_POLL, peak
    assert [r.game_id for r in follower.model.records] == [records[0].game_id, records[1].game_id]
    assert warnings == [f"{JSONL_NAME} line 2: longer than 1 MiB, skipped"]
