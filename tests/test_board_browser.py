"""The analysis board's page in real browsers: Debian's Chromium driven by Playwright, Debian's Firefox over WebDriver
BiDi (tests/bidi.py), against a real board process (tests/boards.py) with real engines.

Chromium goes through what a person does: a typo in the position field (one line under it), a position whose
every turn is coloured by the solver as the values come, a turn played by clicks and stepped back with the keys, a
position set up by hand, an engine asked (its info lines shown as text, whatever they hold), a game against an
engine played by clicks to its end, and the "open on the board" links of report.html and the live page. Firefox
colours a position and plays a turn. Screenshots go to screenshots/, which git ignores: the README's picture is
taken as board-readme.png, and a change to the page that should show in the README is copied over the tracked
readme-board.png by hand (CONTRIBUTING.md), so that running the tests leaves the checkout as it was.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="needs the web extra (pip install -e '.[web]')")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing (pip install -e '.[dev]')")

from bidi import Firefox  # noqa: E402
from boards import BoardProcess, board_process, sample  # noqa: E402
from browsers import CLI, FIREFOX, HOSTILE, SHOTS, Watch, chromium, shots  # noqa: E402
from procs import STEADY_TC, cli  # noqa: E402
from quarto_arena.protocol.notation import NotationError, parse_position  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.extra("web")]

#: A bot whose info lines are HTML, and which plays at random.
EVIL_INFO = textwrap.dedent(
    f"""
    import random
    from quarto_arena.protocol.bot import run

    def choose(position, ctx):
        ctx.info(depth=1, string={HOSTILE!r})
        return random.choice(position.legal_turns())

    run(choose, [])
    """
)

#: What a board's page may log as an error on purpose: the answer 400 to a position with a typo.
_REFUSED = "the server responded with a status of 400"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoardProcess]:
    folder = tmp_path_factory.mktemp("board")
    evil = folder / "evil.py"
    evil.write_text(EVIL_INFO)
    args = ["--engine", "greedy", "--engine", "perfect", "--engine", f"evil={sys.executable} {evil}"]
    with board_process(folder, *args) as b:
        yield b


COLOURED = "document.querySelectorAll('#board circle.v-win, #board circle.v-draw, #board circle.v-loss')"
"""The empty squares the solver has coloured."""


def coloured(page: Any) -> int:
    return int(page.evaluate(f"() => {COLOURED}.length"))


def set_position(page: Any, text: str) -> None:
    page.fill("#position-input", text)
    page.click("#position-form button[type=submit]")


def test_a_person_at_the_board_in_chromium(browser: Any, board: BoardProcess) -> None:
    page = browser.new_page(viewport={"width": 1250, "height": 1000})
    watch = Watch(page, allowed=(_REFUSED,))
    page.goto(board.url)
    page.wait_for_selector("#ask-engine option", state="attached")
    # A typo: one line under the field, the notation's own words; the board shown stays as it was.
    typo = "..../..x./..../.... 7"
    with pytest.raises(NotationError) as expected:
        parse_position(typo)
    set_position(page, typo)
    page.wait_for_function("() => document.querySelector('#position-error').textContent !== ''")
    assert page.locator("#position-error").text_content() == str(expected.value)
    assert page.locator("#position-text").text_content() == "..../..../..../.... -"
    # Twelve empty squares: the solver colours every empty square, and lists every turn.
    position = sample(12, 58)  # a win in 11 for the player to move: every colour on the board
    set_position(page, str(position))
    page.wait_for_function(
        "() => document.querySelector('#solver-status').textContent.startsWith('Solved')", timeout=180_000
    )
    assert page.locator("#position-error").text_content() == ""
    assert coloured(page) == 12
    assert page.locator("#solver-list li").count() == len(position.legal_turns())
    ranks = page.evaluate("() => [...document.querySelectorAll('#solver-list li')].map(li => li.className)")
    order = {"v-win": 2, "v-draw": 1, "v-loss": 0}
    assert [order[c] for c in ranks] == sorted((order[c] for c in ranks), reverse=True)
    # A square, then a piece to give: the gives are coloured for that square.
    square = page.locator("#board circle.slot.target").first
    name = square.get_attribute("data-square")
    square.click()
    page.wait_for_selector(
        "#pieces .piece-button.legal.v-win, #pieces .piece-button.legal.v-draw, #pieces .piece-button.legal.v-loss"
    )
    page.screenshot(path=str(SHOTS / "board-readme.png"), clip={"x": 0, "y": 0, "width": 1250, "height": 900})
    piece = page.locator("#pieces .piece-button.legal").first
    played = f"{name}{piece.get_attribute('data-piece')}"
    piece.click()
    page.wait_for_function(
        "(t) => document.querySelector('#line-label').textContent.startsWith('turn 1 of 1: ' + t)", arg=played
    )
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => document.querySelector('#line-label').textContent.startsWith('start (turn 0 of 1)')")
    page.wait_for_function(f"() => {COLOURED}.length === 12")
    page.keyboard.press("End")
    page.wait_for_function("() => document.querySelector('#line-label').textContent.startsWith('turn 1 of 1')")
    # A position set up by hand: a piece, then a square.
    page.click("#setup-toggle")
    page.click("#setup-clear")
    page.click("#setup-pieces .piece-button[data-piece='5']")
    page.locator("#board circle[data-square='b2']").click()
    assert page.locator("#position-input").input_value() == "..../..../.5../.... -"
    page.click("#setup-done")
    page.wait_for_function("() => document.querySelector('#position-text').textContent === '..../..../.5../.... -'")
    # An engine asked: its turn beside the solver's value of it; info lines are text, whatever they hold.
    set_position(page, str(position))
    page.wait_for_function(
        "() => document.querySelector('#solver-status').textContent.startsWith('Solved')", timeout=180_000
    )
    page.select_option("#ask-engine", "perfect")
    page.fill("#ask-limit", STEADY_TC)  # perfect proves this position in a few ms
    page.click("#ask-button")
    page.wait_for_function(
        "() => document.querySelector('#ask-result').textContent.includes('perfect plays')", timeout=60_000
    )
    result = page.locator("#ask-result").text_content() or ""
    assert re.search(r"perfect plays \w+ in \d+ ms .*solver: (win in \d+|draw|loss in \d+)", result), result
    assert page.locator("#ask-info").text_content()
    page.select_option("#ask-engine", "evil")
    page.click("#ask-button")
    page.wait_for_function(
        "() => document.querySelector('#ask-result').textContent.includes('evil plays')", timeout=60_000
    )
    assert HOSTILE in (page.locator("#ask-info").text_content() or "")
    assert page.evaluate("() => window.__pwned") is None and page.locator("img").count() == 0
    # A game against greedy, played by clicks to its end.
    page.uncheck("#game-from-here")
    page.select_option("#game-mover", "human")
    page.select_option("#game-other", "greedy")
    page.fill("#game-tc", "st=0.3")
    page.click("#game-start")
    page.wait_for_function("() => document.querySelector('#board-title').textContent.startsWith('Game ')")
    for _ in range(20):
        # The server's state first; then the page, once it shows that very position.
        game = board.wait_game(lambda g: not g["playing"] or g["asked"])
        turns = len(game["tokens"])
        page.wait_for_selector(f"#board[data-ply='{turns}']")
        if not game["playing"]:
            break
        page.wait_for_function("() => document.querySelector('#game-status').textContent.includes('your turn')")
        if page.locator("#hand .piece-icon").count() == 0:
            page.locator("#pieces .piece-button.legal").first.click()
        else:
            page.locator("#board circle.slot.target").first.click()
            if page.locator("#pieces .piece-button.legal").count():
                page.locator("#pieces .piece-button.legal").last.click()
        board.wait_game(lambda g, n=turns: len(g["tokens"]) > n or not g["playing"])
    page.wait_for_function("() => document.querySelector('#game-saved').textContent.startsWith('saved in')")
    status = page.locator("#game-status").text_content() or ""
    game = board.state()["game"]
    assert f"Result {game['result']} ({game['termination']})" in status
    assert page.locator("#board-title").text_content() == f"Game {game['id']}: human vs greedy"
    page.screenshot(path=str(SHOTS / "board.png"), full_page=True)
    assert not watch.errors, watch.errors
    assert all(u.startswith(board.url) for u in watch.requests), watch.requests
    page.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "r"
    done = cli("play", "random", "greedy", "--games", "2", "--tc", "st=0.1", "-q", "--out", str(out), timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return out


def test_games_open_on_the_board_from_the_report_and_the_live_page(browser: Any, tmp_path: Path, run: Path) -> None:
    with board_process(tmp_path / "b", str(run)) as board:
        printed = next(line for line in board.log.read_text().splitlines() if line.startswith("report with links"))
        report = printed.split(": ", 1)[1]
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(report)
        link = page.locator("#viewer a.board-link")
        link.wait_for()
        page.keyboard.press("End")
        href = link.get_attribute("href") or ""
        assert href.startswith(board.url + "?")
        game = page.evaluate("() => JSON.parse(document.querySelector('#run-data').textContent).games[0]")
        n = len(game["plies"])
        assert f"k={n}" in href
        page.goto(href)
        page.wait_for_selector("#game-turns button")
        assert page.locator("#game-turns button").count() == n
        page.wait_for_function(
            "(n) => document.querySelector('#line-label').textContent.startsWith(`turn ${n} of ${n}`)", arg=n
        )
        title = page.locator("#board-title").text_content() or ""
        assert title.startswith("a link: random - greedy") or title.startswith("a link: greedy - random"), title
        # Without a board's address the report has no such link.
        page.goto(report.split("?")[0])
        page.wait_for_selector("#viewer ol.turns button")
        assert page.locator("a.board-link").count() == 0
        # The live page of a run, served while the board runs, finds it by itself.
        env = {**os.environ, "QUARTO_ARENA_BOARD_FILE": str(board.board_file)}
        serve = subprocess.Popen(
            [*CLI, "serve", str(run), "--web", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            assert serve.stderr is not None
            url = serve.stderr.readline().split(" at ")[1].split(" ")[0]
            page.goto(url)
            page.locator("#recent button").first.click()
            page.locator("#viewer a.board-link").wait_for()
            assert (page.locator("#viewer a.board-link").get_attribute("href") or "").startswith(board.url + "?")
        finally:
            serve.terminate()
            serve.wait(timeout=60)
        page.close()


@pytest.fixture(scope="module")
def firefox() -> Iterator[Firefox]:
    shots(FIREFOX)
    browser = Firefox(str(FIREFOX))
    yield browser
    browser.close()


def test_firefox_colours_a_position_and_plays_a_turn(firefox: Firefox, board: BoardProcess) -> None:
    firefox.goto(board.url)
    position = sample(11, 22)
    firefox.evaluate(f"(() => {{ document.querySelector('#position-input').value = {str(position)!r}; return 1; }})()")
    firefox.evaluate("document.querySelector('#position-form button[type=submit]').click()")
    firefox.wait_for("document.querySelector('#solver-status').textContent.startsWith('Solved')", timeout=180)
    assert firefox.evaluate(f"{COLOURED}.length") == 11
    click = "(el => el.dispatchEvent(new MouseEvent('click', {{bubbles: true}})))(document.querySelector('{}'))"
    firefox.evaluate(click.format("#board circle.slot.target"))
    firefox.wait_for("document.querySelectorAll('#pieces .piece-button.legal').length > 0")
    firefox.evaluate(click.format("#pieces .piece-button.legal"))
    firefox.wait_for("document.querySelector('#line-label').textContent.startsWith('turn 1 of 1')")
    firefox.press("ArrowLeft")
    firefox.wait_for("document.querySelector('#line-label').textContent.startsWith('start (turn 0 of 1)')")
    firefox.screenshot(SHOTS / "board-firefox.png")
    assert not firefox.errors(), firefox.errors()
    assert all(u.startswith(board.url) or u.startswith("data:") for u in firefox.requests()), firefox.requests()
