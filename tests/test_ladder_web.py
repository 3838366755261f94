"""The ladder's pages in real browsers (as tests/test_web_browser.py does for the run pages): Debian's Chromium
through Playwright and Debian's Firefox over WebDriver BiDi, against a real ladder with a house engine whose
``id name`` is HTML; plus the server's security (GET only, the Host check) over plain HTTP."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="needs the web extra (pip install -e '.[web]')")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing (pip install -e '.[dev]')")

from bidi import Firefox  # noqa: E402
from browsers import CHROMIUM, CLI, FIREFOX, FLAGS, HOSTILE, SHOTS, evil_bot, shots  # noqa: E402


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


def test_the_ladder_pages_in_chromium(ladder: tuple[subprocess.Popen[str], str]) -> None:
    shots(CHROMIUM)
    proc, url = ladder
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        requests: list[str] = []
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url)
        # The leaderboard fills, a board moves, and the bot named in HTML is shown as that text only.
        page.wait_for_function(
            """() => [...document.querySelectorAll('#leaderboard-table tbody tr')].filter(
                tr => Number(tr.children[4].textContent) > 0).length === 3""",
            timeout=90_000,
        )
        page.wait_for_selector("#boards .piece")
        first = page.evaluate("() => document.querySelector('#boards').textContent")
        page.wait_for_function("(before) => document.querySelector('#boards').textContent !== before", arg=first)
        versions = page.evaluate(
            "() => [...document.querySelectorAll('#leaderboard-table tbody tr')].map(tr => tr.children[2].textContent)"
        )
        assert HOSTILE in versions
        assert page.evaluate("() => window.__pwned") is None and page.locator("img").count() == 0
        online = page.evaluate(
            "() => [...document.querySelectorAll('#leaderboard-table tbody tr')].map(tr => tr.children[6].textContent)"
        )
        assert online == ["yes"] * 3
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
        opponents = page.evaluate(
            "() => [...document.querySelectorAll('#opponents-table tbody tr')].map(tr => tr.children[0].textContent)"
        )
        assert sorted(opponents) == ["evil", "random"]
        page.locator("#recent button").nth(1).click()
        page.keyboard.press("Home")
        assert page.locator("#viewer .turn-label").text_content() == f"start (turn 0 of {_turns(page)})"
        page.screenshot(path=str(SHOTS / "ladder-bot.png"), full_page=True)
        # The ladder stops on SIGTERM; an open page hears it.
        page.go_back()
        page.wait_for_selector("#leaderboard-table tbody tr")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        page.wait_for_function("() => document.querySelector('#status').textContent.includes('ladder has stopped')")
        assert not errors, errors
        assert all(u.startswith(url) or u.startswith("data:") for u in requests), requests
        browser.close()


def _turns(page: Any) -> int:
    return int(page.evaluate("() => document.querySelectorAll('#viewer ol.turns button').length"))


def test_the_ladder_pages_in_firefox_and_the_servers_security(ladder: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = ladder
    # GET only; a host name it was not given is refused (DNS rebinding); an unknown bot or a silly game id is 4xx.
    assert status(url) == 200
    assert status(url, "POST") == 405
    assert status(url, host="attacker.example:80") == 421
    assert status(url + "bot/nobody") == 404
    assert status(url + "api/game/" + "9" * 40) == 400
    assert status(url + "api/bot/%3Cscript%3E") == 404
    shots(FIREFOX)
    firefox = Firefox(str(FIREFOX))
    try:
        firefox.goto(url)
        firefox.wait_for(
            """[...document.querySelectorAll('#leaderboard-table tbody tr')].filter(
                tr => Number(tr.children[4].textContent) > 0).length === 3""",
            timeout=90,
        )
        firefox.wait_for("document.querySelector('#boards .piece') !== null", timeout=60)
        versions = firefox.evaluate(
            "[...document.querySelectorAll('#leaderboard-table tbody tr')].map(tr => tr.children[2].textContent)"
        )
        assert HOSTILE in versions and firefox.evaluate("window.__pwned") is None
        firefox.screenshot(SHOTS / "ladder-firefox.png")
        firefox.goto(url + "bot/evil")
        firefox.wait_for("document.querySelector('#viewer ol.turns button') !== null", timeout=60)
        assert firefox.evaluate("Chart.getChart('rating-chart') !== undefined")
        cells = firefox.evaluate("[...document.querySelectorAll('#versions-table td')].map(td => td.textContent)")
        assert HOSTILE in cells and "<b>me</b> & you" in cells
        assert firefox.evaluate("document.querySelectorAll('img').length") == 0
        assert not firefox.errors(), firefox.errors()
        assert all(u.startswith(url) or u.startswith("data:") for u in firefox.requests()), firefox.requests()
    finally:
        firefox.close()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
