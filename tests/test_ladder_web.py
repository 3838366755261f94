"""The ladder's pages in real browsers (as tests/test_web_browser.py does for the run pages): Debian's Chromium
through Playwright and Debian's Firefox over WebDriver BiDi, against a real ladder with a house engine whose
``id name`` is HTML, with JavaScript and without it; plus the server's security (GET only, the Host check) over
plain HTTP."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="needs the web extra (pip install -e '.[web]')")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing (pip install -e '.[dev]')")

from bidi import Firefox  # noqa: E402
from browsers import CLI, FIREFOX, HOSTILE, SHOTS, chromium, evil_bot, shots  # noqa: E402


@pytest.fixture
def ladder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A ladder of three house engines (one named in HTML) with its pages on a free loopback port."""
    evil = tmp_path / "evil.py"
    evil.write_text(evil_bot(pause=0.05))
    argv = [*CLI, "ladder", "run", str(tmp_path / "lad"), "--house", f"evil={sys.executable} {evil}"]
    argv += ["--house", "greedy", "--house", "random", "--tc", "st=0.5", "-j", "2", "--web", "127.0.0.1:0"]
    # A session of its own: the ladder's children (its engines, the pages' refit process) hold its pipes too, and
    # must go with it, or reading the pipes to their end waits for them forever.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    try:
        while line := proc.stderr.readline():
            if m := re.match(r"ladder page: (http://127\.0\.0\.1:\d+/)$", line.strip()):
                yield proc, m.group(1)
                break
        else:
            raise AssertionError("the ladder ended without announcing its page")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)


def status(url: str, method: str = "GET", host: str | None = None) -> int:
    request = urllib.request.Request(url, method=method, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


#: The cells of one column of a table, found by its header: ``COLUMN % (ROOT, HEADER)`` (a JavaScript expression).
COLUMN = """(() => {
    const t = document.querySelector('%s table');
    const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent === '%s');
    return [...t.tBodies[0].rows].map(r => r.cells[i].textContent);
})()"""
#: The leaderboard has its three house engines, each with games.
FILLED = f"({COLUMN % ('#leaderboard-table', 'games')}).filter(n => Number(n) > 0).length === 3"


def test_the_ladder_pages_in_chromium(ladder: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = ladder
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        requests: list[str] = []
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url)
        # The leaderboard fills, a board moves, and the bot named in HTML is shown as that text only.
        page.wait_for_function(f"() => {FILLED}", timeout=90_000)
        page.wait_for_selector("#boards .piece")
        first = page.evaluate("() => document.querySelector('#boards').textContent")
        page.wait_for_function("(before) => document.querySelector('#boards').textContent !== before", arg=first)
        assert HOSTILE in page.evaluate(COLUMN % ("#leaderboard-table", "version"))
        assert page.evaluate("() => window.__pwned") is None and page.locator("img").count() == 0
        assert page.evaluate(COLUMN % ("#leaderboard-table", "online")) == ["yes"] * 3
        page.screenshot(path=str(SHOTS / "ladder.png"), full_page=True)
        # A last game opens in the viewer and steps with the keyboard.
        page.locator("#recent button").first.click()
        page.wait_for_selector("#viewer ol.turns button")
        page.keyboard.press("End")
        label = page.locator("#viewer .turn-label").text_content()
        assert label is not None and re.match(r"turn (\d+) of \1:", label), label
        # A bot's page: its rating as games accumulated, its results per opponent, its recent games in the viewer.
        page.locator("#leaderboard-table a", has_text="greedy").click()
        page.wait_for_url(re.compile(r"/bot/greedy$"))
        page.wait_for_selector("#viewer ol.turns button")
        assert page.evaluate("() => Chart.getChart('rating-chart') !== undefined")
        assert sorted(page.evaluate(COLUMN % ("#opponents-table", "opponent"))) == ["evil", "random"]
        assert page.evaluate(COLUMN % ("#versions-table", "player")) == ["greedy"]
        second = page.locator("#recent button").nth(1)
        number = re.match(r"game (\d+):", second.text_content() or "")
        assert number is not None
        second.click()
        page.wait_for_function(
            f"() => document.querySelector('#viewer .status').textContent.startsWith('Game {number[1]} ')"
        )
        page.keyboard.press("Home")
        assert page.locator("#viewer .turn-label").text_content() == f"start (turn 0 of {_turns(page)})"
        page.evaluate("() => window.scrollTo(0, 0)")  # the tables' sticky heads stay over the rows otherwise
        page.screenshot(path=str(SHOTS / "ladder-bot.png"), full_page=True)
        # A game's page: the viewer at the end of the game, its turns in a table beside it.
        page.locator("#recent a", has_text="page").first.click()
        page.wait_for_url(re.compile(r"/game/\d+$"))
        page.wait_for_selector("#viewer ol.turns button")
        turns = page.evaluate("() => document.querySelectorAll('#turns-section tbody tr').length")
        assert page.locator("#viewer .turn-label").text_content().startswith(f"turn {turns} of {turns}:")
        assert _turns(page) == turns
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(SHOTS / "ladder-game.png"), full_page=True)
        # The ladder stops on SIGTERM; an open page hears it.
        page.goto(url)
        page.wait_for_function(f"() => {FILLED}")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        page.wait_for_function("() => document.querySelector('#status').textContent.includes('ladder has stopped')")
        assert not errors, errors
        assert all(u.startswith(url) or u.startswith("data:") for u in requests), requests


def _turns(page: Any) -> int:
    return int(page.evaluate("() => document.querySelectorAll('#viewer ol.turns button').length"))


def test_the_ladder_pages_in_chromium_without_javascript(ladder: tuple[subprocess.Popen[str], str]) -> None:
    """With scripts off, every page is there as the server wrote it: the tables, the links from one to the next."""
    _, url = ladder
    with chromium() as browser:
        page = browser.new_page(java_script_enabled=False, viewport={"width": 1200, "height": 900})
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        # The standings are fitted in the background: a reader without the script reloads (a test too).
        deadline = time.monotonic() + 90
        while True:
            page.goto(url)
            if page.evaluate(FILLED) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert page.evaluate(FILLED)
        assert HOSTILE in page.evaluate(COLUMN % ("#leaderboard-table", "version"))
        assert page.evaluate("document.querySelector('#viewer svg')") is None  # no script ran
        assert page.locator("img").count() == 0
        page.screenshot(path=str(SHOTS / "ladder-noscript.png"), full_page=True)
        # From the leaderboard to a bot's page, from there to a game's page, by their links.
        page.locator("#leaderboard-table a", has_text="evil").click()
        page.wait_for_url(re.compile(r"/bot/evil$"))
        assert HOSTILE in page.evaluate(COLUMN % ("#versions-table", "id name"))
        assert sorted(page.evaluate(COLUMN % ("#opponents-table", "opponent"))) == ["greedy", "random"]
        page.locator("#recent a").first.click()
        page.wait_for_url(re.compile(r"/game/\d+$"))
        tokens = page.evaluate(COLUMN % ("#turns-section", "token"))
        assert tokens and all(re.fullmatch(r"[a-d1-4!0-9a-f]+", t) for t in tokens)
        assert len(page.evaluate(COLUMN % ("#position", "a"))) == 4
        assert "evil" in page.evaluate(COLUMN % ("#players", "bot"))
        page.screenshot(path=str(SHOTS / "ladder-game-noscript.png"), full_page=True)
        assert all(u.startswith(url) or u.startswith("data:") for u in requests), requests


def test_the_ladder_pages_in_firefox_and_the_servers_security(ladder: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = ladder
    # GET only; a host name it was not given is refused (DNS rebinding); an unknown bot or a silly game id is 4xx.
    assert status(url) == 200
    assert status(url, "POST") == 405
    assert status(url, host="attacker.example:80") == 421
    assert status(url + "bot/nobody") == 404
    assert status(url + "api/game/" + "9" * 40) == 400
    assert status(url + "api/v1/bots/%3Cscript%3E") == 404
    shots(FIREFOX)
    firefox = Firefox(str(FIREFOX))
    try:
        firefox.goto(url)
        firefox.wait_for(FILLED, timeout=90)
        firefox.wait_for("document.querySelector('#boards .piece') !== null", timeout=60)
        assert HOSTILE in firefox.evaluate(COLUMN % ("#leaderboard-table", "version"))
        assert firefox.evaluate("window.__pwned") is None
        firefox.screenshot(SHOTS / "ladder-firefox.png")
        firefox.goto(url + "bot/evil")
        firefox.wait_for("document.querySelector('#viewer ol.turns button') !== null", timeout=60)
        assert firefox.evaluate("Chart.getChart('rating-chart') !== undefined")
        cells = firefox.evaluate("[...document.querySelectorAll('#versions-table td')].map(td => td.textContent)")
        assert HOSTILE in cells and "<b>me</b> & you" in cells
        assert firefox.evaluate("document.querySelectorAll('img').length") == 0
        game = firefox.evaluate("document.querySelector('#recent a').getAttribute('href')")
        firefox.goto(url + game.lstrip("/"))
        firefox.wait_for("document.querySelector('#viewer ol.turns button') !== null", timeout=60)
        turns = firefox.evaluate("document.querySelectorAll('#turns-section tbody tr').length")
        assert firefox.evaluate("document.querySelectorAll('#viewer ol.turns button').length") == turns
        assert not firefox.errors(), firefox.errors()
        assert all(u.startswith(url) or u.startswith("data:") for u in firefox.requests()), firefox.requests()
    finally:
        firefox.close()
    # Without JavaScript: the same pages, as the server wrote them.
    firefox = Firefox(str(FIREFOX), javascript=False)
    try:
        firefox.goto(url)
        assert firefox.evaluate(FILLED)  # fitted already (the browser with scripts waited for it)
        assert HOSTILE in firefox.evaluate(COLUMN % ("#leaderboard-table", "version"))
        assert firefox.evaluate("document.querySelector('#viewer svg')") is None  # no script ran
        firefox.goto(url + game.lstrip("/"))
        assert len(firefox.evaluate(COLUMN % ("#turns-section", "token"))) == turns
        firefox.screenshot(SHOTS / "ladder-game-firefox-noscript.png")
        assert all(u.startswith(url) or u.startswith("data:") for u in firefox.requests()), firefox.requests()
    finally:
        firefox.close()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
