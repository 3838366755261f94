"""A tune's pages in real browsers (Debian's Chromium through Playwright, Debian's Firefox over WebDriver BiDi): the
live page of a real tune fills its parameters and trajectories, its boards move and it hears the end; report.html
opens offline with every chart drawn from the tune's own numbers, its tables read without JavaScript, and its
viewer steps through the games. Screenshots go to screenshots/."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="needs the web extra (pip install -e '.[web]')")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing (pip install -e '.[dev]')")

import test_web_browser as run_pages  # noqa: E402
from bidi import Firefox  # noqa: E402
from browsers import CLI, SHOTS  # noqa: E402
from test_web_browser import offline_page, start_live  # noqa: E402

# The run pages' browsers, the same fixtures: a tune's pages are driven as a run's are.
browser = run_pages.browser
firefox = run_pages.firefox

TUNABLE = f"{sys.executable} -m quarto_arena.engines.testing.tunable"
PARAMS = ["--param", "P1=450,0,1000,40,0.05", "--param", "P2=300,0,1000,40,0.05"]
CHARTS = ("trajectory-0", "trajectory-1", "c-chart", "a-chart", "r-chart", "rate-chart")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tune's directory (with its report.html)."""
    out = tmp_path_factory.mktemp("tunes") / "t"
    args = ["tune", TUNABLE, *PARAMS, "--pairs", "40", "--tc", "st=1", "-j", "2", "-q", "--out", str(out)]
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def tune_csv(directory: Path) -> list[dict[str, str]]:
    with (directory / "tune.csv").open() as f:
        return list(csv.DictReader(f))


#: What the page's charts hold: each trajectory's y range and last point, each chart's dataset labels.
CHARTS_JS = """(ids) => Object.fromEntries(ids.map(id => {
    const c = Chart.getChart(id);
    if (!c) return [id, null];
    const d = c.data.datasets[0].data;
    return [id, {labels: c.data.datasets.map(s => s.label), last: d.length ? d[d.length - 1] : null, n: d.length,
                 min: c.options.scales.y.min, max: c.options.scales.y.max}];
}))"""


def check_charts(charts: dict[str, Any], directory: Path) -> None:
    """The charts hold the tune's numbers: each trajectory ends on tune.json's value, inside the range."""
    state = json.loads((directory / "tune.json").read_text())
    rows = tune_csv(directory)
    for i, name in enumerate(("P1", "P2")):
        chart = charts[f"trajectory-{i}"]
        assert chart["labels"][0] == name and (chart["min"], chart["max"]) == (0, 1000)
        assert chart["last"] == {"x": state["pairs"], "y": state["values"][name]}
    # The gains up to the last pair of the schedule (the tune is complete), where they are C_END and R_END.
    last = max(int(r["pair"]) for r in rows)
    assert last == state["pairs_total"]
    assert charts["c-chart"]["labels"] == ["c P1", "c P2"]
    assert charts["c-chart"]["last"]["x"] == last and charts["r-chart"]["last"]["x"] == last
    assert charts["c-chart"]["last"]["y"] == pytest.approx(state["params"]["P1"]["c_end"] / 1000)
    assert charts["r-chart"]["last"]["y"] == pytest.approx(state["params"]["P1"]["r_end"])
    assert charts["a-chart"]["last"]["y"] == pytest.approx(0.05 * 40**2)  # a_end = r_end c_end^2
    assert charts["rate-chart"]["n"] >= 1 and charts["rate-chart"]["last"]["y"] > 0


@pytest.mark.slow
def test_the_report_opens_offline_with_the_tunes_charts_and_its_viewer(browser: Any, tuned: Path) -> None:
    context, page, refused = offline_page(browser)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto((tuned / "report.html").as_uri())
    page.wait_for_selector("#viewer ol.turns button")
    page.wait_for_function("() => Chart.getChart('rate-chart') !== undefined")
    check_charts(page.evaluate(CHARTS_JS, list(CHARTS)), tuned)
    # The viewer steps through the first game with the keyboard.
    first = page.locator("#viewer .turn-label").text_content()
    page.keyboard.press("End")
    assert page.locator("#viewer .turn-label").text_content() != first
    page.select_option("#game-select", "7")
    assert "tunable" in (page.locator("#viewer").inner_text())
    page.screenshot(path=str(SHOTS / "tune-report.png"), full_page=True)
    assert not refused, refused
    assert not errors, errors
    context.close()


def test_the_reports_parameters_read_without_javascript(browser: Any, tuned: Path) -> None:
    context, page, _ = offline_page(browser, javascript=False)
    page.goto((tuned / "report.html").as_uri())
    table = page.locator("table.params").inner_text()
    state = json.loads((tuned / "tune.json").read_text())
    for name in ("P1", "P2"):
        assert name in table and f"-o {name}={state['options'][name]}" in page.locator("#params pre").inner_text()
    assert "The game viewer needs JavaScript" in page.locator("#games").inner_text()
    context.close()


@pytest.mark.slow
def test_the_live_page_of_a_real_tune_fills_and_hears_the_end(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "live"
    args = ["tune", TUNABLE, *PARAMS, "-o", "Think=30", "--pairs", "12", "--tc", "st=2", "-j", "2", "-q"]
    proc, url = start_live(args, out)
    try:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        requests: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url)
        # The parameters fill, and the trajectories grow past the start.
        page.wait_for_function("() => document.querySelectorAll('#params-table table.params tbody tr').length === 2")
        page.wait_for_function(
            "() => Chart.getChart('trajectory-0') && Chart.getChart('trajectory-0').data.datasets[0].data.length > 1",
            timeout=60_000,
        )
        page.wait_for_selector("#boards .piece", timeout=60_000)
        page.screenshot(path=str(SHOTS / "tune-live.png"), full_page=True)
        page.locator("#recent button").first.click()
        page.wait_for_selector("#viewer ol.turns button")
        assert proc.wait(timeout=180) == 0
        page.wait_for_function("() => document.querySelector('#status').textContent.includes('server has stopped')")
        assert "complete" in (page.locator("#status").text_content() or "")
        check_charts(page.evaluate(CHARTS_JS, list(CHARTS)), out)  # the last feed: the tune's final numbers
        assert not errors, errors
        assert all(u.startswith(url) or u.startswith("data:") for u in requests), requests
        page.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_firefox_draws_the_reports_charts_and_steps_its_viewer(firefox: Firefox, tuned: Path) -> None:
    firefox.goto((tuned / "report.html").as_uri())
    firefox.wait_for("document.querySelector('#viewer ol.turns button') !== null")
    firefox.wait_for("typeof Chart !== 'undefined' && Chart.getChart('rate-chart') !== undefined")
    check_charts(firefox.evaluate(f"({CHARTS_JS})({json.dumps(list(CHARTS))})"), tuned)
    first = firefox.evaluate("document.querySelector('#viewer .turn-label').textContent")
    firefox.press("End")
    assert firefox.evaluate("document.querySelector('#viewer .turn-label').textContent") != first
    firefox.screenshot(SHOTS / "tune-report-firefox.png")
    assert not firefox.errors(), firefox.errors()
    assert all(u.startswith(("file://", "data:")) for u in firefox.requests()), firefox.requests()


@pytest.mark.slow
def test_firefox_follows_the_live_page_of_a_real_tune(firefox: Firefox, tmp_path: Path) -> None:
    out = tmp_path / "live"
    args = ["tune", TUNABLE, *PARAMS, "-o", "Think=30", "--pairs", "8", "--tc", "st=2", "-j", "2", "-q"]
    proc, url = start_live(args, out)
    try:
        seen = len(firefox.events)
        firefox.goto(url)
        firefox.wait_for("document.querySelectorAll('#params-table table.params tbody tr').length === 2", timeout=60)
        firefox.wait_for(
            "Chart.getChart('trajectory-1') !== undefined && Chart.getChart('trajectory-1').data.datasets[0].data"
            ".length > 1",
            timeout=60,
        )
        firefox.screenshot(SHOTS / "tune-live-firefox.png")
        assert proc.wait(timeout=180) == 0
        firefox.wait_for("document.querySelector('#status').textContent.includes('server has stopped')", timeout=30)
        check_charts(firefox.evaluate(f"({CHARTS_JS})({json.dumps(list(CHARTS))})"), out)
        assert not firefox.errors(), firefox.errors()
        del firefox.events[:seen]
        assert all(u.startswith(url) or u.startswith("data:") for u in firefox.requests()), firefox.requests()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
