#!/usr/bin/env python3
"""The analysis board (``quarto-arena board``) as a person uses it: a real board process, driven through a real
browser (Debian's Chromium, by Playwright) where there is one, else through its HTTP API as the page calls it.

- **Click to colours**, at 12, 13 and 14 empty squares: from the click (at 12: the piece given, which plays the
  turn that leaves 12 empty squares; at 13 and 14, where the solver waits to be asked: the "solve" button) to the
  first coloured square and to every turn valued ("Solved"), median over the positions. Baseline, measured in the
  same run on the same positions: the solver alone in this process (one thread, a fresh solver per position,
  ``Solver.turn_value`` of each distinct turn), which is the work the board shares between its workers.
- **Memory**: the board process's resident set at start, then after 25, 50 and 100 positions analysed (9 to 12
  empty squares, through the API), and after a day's worth of open tabs (the bounds of arena/board/solving.py).
- **An engine's turn through the page**: in a game against greedy (st=1), from the person's click to the engine's
  turn drawn on the board; the engine's own time (its record's ms, on the board's clock) beside it. And "ask an
  engine" (greedy): from the button to its turn shown.

    python benchmarks/board.py [--twelve 5] [--deep 2] [--memory 100] [--games 2] [--api]

The machine this runs on may be shared and loaded: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from quarto_arena.engines.greedy import safe_turns
from quarto_arena.protocol.rules import Position, Turn, Variant
from quarto_arena.protocol.solver import Solver
from quarto_arena.protocol.symmetry import canonical_key
from solver import sample_positions  # benchmarks/solver.py: the same kind of positions as its figures

STANDARD = "standard color,shape,height,fill auto"
CHROMIUM = Path("/usr/bin/chromium")
COLOURED = "#board circle.v-win, #board circle.v-draw, #board circle.v-loss"


def sample(empties: int, seed: int) -> Position:
    """One position of benchmarks/solver.py's kind (random safe turns): ``empties`` empty squares, a piece in hand."""
    return sample_positions(Variant(), empties, 1, seed)[0]


def quiet_turn(position: Position) -> Turn:
    """A turn that leaves the game going with a piece in hand (the position after it is one to colour)."""
    for turn in safe_turns(position) or position.legal_turns():
        after = position.apply(turn)
        if not after.is_over and after.hand is not None:
            return turn
    raise AssertionError(f"no quiet turn in {position}")


def solver_alone(position: Position) -> tuple[float, float]:
    """Seconds the solver alone takes to value every legal turn of ``position`` (distinct ones once): wall and CPU."""
    solver = Solver(position.variant)
    seen: set[int] = set()
    t0, c0 = time.perf_counter(), time.process_time()
    for turn in position.legal_turns():
        child = position.apply(turn)
        key = canonical_key(child) if not child.is_over else -1
        if key in seen:
            continue
        seen.add(key)
        solver.turn_value(position, turn)
    return time.perf_counter() - t0, time.process_time() - c0


class Board:
    """A board process and requests to it, as its page makes them."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, token: str) -> None:
        self.proc, self.url, self.token = proc, url, token

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.url + "api/" + path,
            json.dumps(body).encode(),
            {"Content-Type": "application/json", "X-Board-Token": self.token},
        )
        with urllib.request.urlopen(request, timeout=600) as r:
            return json.loads(r.read())

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "api/state", timeout=60) as r:
            return dict(json.loads(r.read()))

    def cpu(self) -> float:
        """CPU seconds the board process has used (its threads included)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def solve(self, position: Position, tab: str) -> float:
        """Seconds until every turn of ``position`` is valued, asked as the page asks."""
        t0 = time.perf_counter()
        seen = ""
        while True:
            body = {"tab": tab, "variant": STANDARD, "start": str(position), "turns": [], "solve": True, "seen": seen}
            answer = self.post("position", body)
            seen = answer["seen"]
            if answer["solver"]["done"]:
                return time.perf_counter() - t0


@contextlib.contextmanager
def board(*args: str) -> Iterator[Board]:
    with tempfile.TemporaryDirectory(prefix="qa-board-bench-") as tmp:
        log = Path(tmp) / "board.log"
        env = {**os.environ, "QUARTO_ARENA_BOARD_FILE": str(Path(tmp) / "board.json")}
        cli = [sys.executable, "-c", "from quarto_arena.arena.console import main; main()"]
        argv = [*cli, "board", "--web", "127.0.0.1:0", "--out", str(Path(tmp) / "out"), *args]
        with log.open("wb") as f:
            proc = subprocess.Popen(argv, stderr=f, stdout=subprocess.DEVNULL, env=env, start_new_session=True)
        try:
            while not (m := re.search(r"^board: (\S+) ", log.read_text(), re.MULTILINE)):
                if proc.poll() is not None:
                    raise SystemExit(f"the board did not start: {log.read_text()}")
                time.sleep(0.05)
            url = m.group(1)
            with urllib.request.urlopen(url, timeout=60) as r:
                found = re.search(r'data-token="([^"]+)"', r.read().decode())
            assert found is not None
            yield Board(proc, url, found.group(1))
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def line(label: str, times: list[float], base: list[float] | None = None) -> str:
    median = statistics.median(times)
    text = f"{label:<44} median {median:7.2f} s  (min {min(times):.2f}, max {max(times):.2f}; n={len(times)})"
    if base:
        alone = statistics.median(base)
        text += f"   solver alone {alone:6.2f} s, ratio {median / alone:.2f}"
    return text


# --- click to colours -------------------------------------------------------------------------------------------


Figures = tuple[list[float], list[float], list[float], list[float], list[float]]
"""Per position: seconds to the first colour, to every colour, the solver alone's; CPU seconds, board and alone."""


def colours_in_browser(b: Board, empties: int, count: int) -> Figures:
    """Click to colours through Chromium, position by position."""
    from playwright.sync_api import sync_playwright

    figures: Figures = ([], [], [], [], [])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1250, "height": 1000})
        page.goto(b.url)
        page.wait_for_selector("#board[data-ply]", state="attached")
        for i in range(count):
            if empties == 12:
                before = sample(13, 100 + i)
                turn = quiet_turn(before)
                shown, after = before, before.apply(turn)
            else:
                shown = after = sample(empties, 200 + i)
            page.fill("#position-input", str(shown))
            page.click("#position-form button[type=submit]")
            page.wait_for_function(
                f"() => document.querySelector('#position-text').textContent.startsWith({str(shown)!r})"
            )
            page.wait_for_selector("#board[data-ply='0']", state="attached")
            if empties == 12:
                assert turn.place is not None and turn.give is not None
                square = "abcd"[turn.place % 4] + str(turn.place // 4 + 1)
                page.locator(f"#board circle[data-square='{square}']").click()
                target = page.locator(f"#pieces .piece-button[data-piece='{turn.give:x}']")
            else:
                target = page.locator("#solve-deeper")
            target.wait_for()
            c0 = b.cpu()
            t0 = page.evaluate("() => performance.now()")
            target.click()
            t1 = page.wait_for_function(
                f"() => document.querySelectorAll({COLOURED!r}).length > 0 && performance.now()", timeout=1_800_000
            ).json_value()
            t2 = page.wait_for_function(
                "() => document.querySelector('#solver-status').textContent.startsWith('Solved') && performance.now()",
                timeout=1_800_000,
            ).json_value()
            record(figures, empties, i, (t1 - t0) / 1000, (t2 - t0) / 1000, b.cpu() - c0, after)
        browser.close()
    return figures


def colours_by_api(b: Board, empties: int, count: int) -> Figures:
    """The same through the API (no browser): the first answer with a value, and the last."""
    figures: Figures = ([], [], [], [], [])
    for i in range(count):
        position = sample(empties, 300 + i)
        c0, t0 = b.cpu(), time.perf_counter()
        seen, got = "", None
        while True:
            body = {"tab": "bench", "variant": STANDARD, "start": str(position), "solve": True, "seen": seen}
            answer = b.post("position", {**body, "deep": True})
            seen = answer["seen"]
            if got is None and answer["solver"]["valued"]:
                got = time.perf_counter() - t0
            if answer["solver"]["done"]:
                break
        done = time.perf_counter() - t0
        record(figures, empties, i, done if got is None else got, done, b.cpu() - c0, position)
    return figures


def record(figures: Figures, empties: int, i: int, first: float, done: float, cpu: float, position: Position) -> None:
    wall, used = solver_alone(position)
    for values, value in zip(figures, (first, done, wall, cpu, used), strict=True):
        values.append(value)
    print(
        f"  {empties} empty, position {i + 1}: first colour {first:.2f} s, all {done:.2f} s ({cpu:.2f} s CPU);"
        f" solver alone {wall:.2f} s ({used:.2f} s CPU)",
        flush=True,
    )


# --- memory ---------------------------------------------------------------------------------------------------------


def memory(b: Board, count: int, start: float) -> list[str]:
    out = [f"board process at start: {start:.1f} MiB resident; before the memory run: {b.rss_mib():.1f} MiB"]
    t0 = time.perf_counter()
    for i in range(count):
        b.solve(sample(9 + i % 4, 400 + i), tab=f"tab{i % 3}")
        if i + 1 in (25, 50, count):
            out.append(
                f"after {i + 1:>3} positions analysed (9-12 empty squares): {b.rss_mib():.1f} MiB resident"
                f" ({time.perf_counter() - t0:.0f} s)"
            )
    # A day of open tabs asking about positions they never finish: the bounds hold the rest.
    for i in range(600):
        b.post(
            "position", {"tab": f"day{i}", "variant": STANDARD, "start": str(sample(14, 500 + i % 50)), "solve": True}
        )
    out.append(f"after 600 more tabs asking about 14-empty positions: {b.rss_mib():.1f} MiB resident")
    return out


# --- an engine's turn through the page ----------------------------------------------------------------------------


def engine_turns(b: Board, games: int) -> list[str]:
    from playwright.sync_api import sync_playwright

    trips: list[float] = []
    own: list[float] = []
    asks: list[float] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1250, "height": 1000})
        page.goto(b.url)
        page.wait_for_selector("#ask-engine option", state="attached")
        page.uncheck("#show-solver")  # the person plays on the page alone: no solver in the measurement
        for _ in range(games):
            page.uncheck("#game-from-here")
            page.select_option("#game-mover", "human")
            page.select_option("#game-other", "greedy")
            page.fill("#game-tc", "st=1")
            page.click("#game-start")
            page.wait_for_function("() => document.querySelector('#board-title').textContent.startsWith('Game ')")
            while True:
                deadline = time.monotonic() + 60
                while not ((g := b.state()["game"]) and (g["asked"] or not g["playing"])):
                    assert time.monotonic() < deadline
                    time.sleep(0.02)
                n = len(g["tokens"])
                page.wait_for_selector(f"#board[data-ply='{n}']", state="attached")
                if not g["playing"]:
                    break
                if page.locator("#hand .piece-icon").count():
                    page.locator("#board circle.slot.target").first.click()
                target = page.locator("#pieces .piece-button.legal")
                if not target.count():
                    break  # the square clicked ended the game
                t0 = page.evaluate("() => performance.now()")
                target.first.click()
                t1 = page.wait_for_function(
                    f"() => (document.querySelector('#board').dataset.ply === '{n + 2}' ||"
                    " /is over/.test(document.querySelector('#game-status').textContent)) && performance.now()",
                    timeout=60_000,
                ).json_value()
                g = b.state()["game"]
                if len(g["tokens"]) == n + 2:
                    trips.append((t1 - t0) / 1000)
                    plies = g["plies"]
                    own.append(plies[n + 1][3] / 1000)
        page.check("#show-solver")
        asked = str(sample(10, 600))
        page.fill("#position-input", asked)
        page.click("#position-form button[type=submit]")
        page.wait_for_function(f"() => document.querySelector('#position-text').textContent.startsWith({asked!r})")
        page.select_option("#ask-engine", "greedy")
        page.fill("#ask-limit", "st=1")
        for _ in range(10):
            t0 = page.evaluate("() => performance.now()")
            page.click("#ask-button")
            t1 = page.wait_for_function(
                "() => document.querySelector('#ask-result').textContent.includes('greedy plays') && performance.now()"
            ).json_value()
            asks.append((t1 - t0) / 1000)
            page.evaluate("() => { document.querySelector('#ask-result').textContent = ''; }")
        browser.close()
    ms = 1000
    return [
        f"person's click to greedy's turn on the board: median {statistics.median(trips) * ms:.0f} ms"
        f" (min {min(trips) * ms:.0f}, max {max(trips) * ms:.0f}; n={len(trips)});"
        f" greedy's own time on the board's clock: median {statistics.median(own) * ms:.0f} ms",
        f"'Ask for its turn' (greedy, st=1) to its turn shown: median {statistics.median(asks) * ms:.0f} ms"
        f" (min {min(asks) * ms:.0f}, max {max(asks) * ms:.0f}; n={len(asks)})",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--twelve", type=int, default=5, help="positions at 12 empty squares")
    parser.add_argument("--deep", type=int, default=2, help="positions at 13 and at 14 empty squares")
    parser.add_argument("--memory", type=int, default=100, help="positions analysed for the memory figure")
    parser.add_argument("--games", type=int, default=2, help="games against greedy for the engine's round trip")
    parser.add_argument("--api", action="store_true", help="through the HTTP API, without a browser")
    args = parser.parse_args()
    browser = not args.api and CHROMIUM.exists()
    if browser:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            browser = False
    how = "through Chromium (Playwright)" if browser else "through the HTTP API"
    print(f"quarto-arena board, {how}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    report: list[str] = []
    with board("--engine", "greedy") as b:
        start = b.rss_mib()
        for empties, count in ((12, args.twelve), (13, args.deep), (14, args.deep)):
            if count <= 0:
                continue
            first, done, alone, cpu, alone_cpu = (colours_in_browser if browser else colours_by_api)(b, empties, count)
            report.append(line(f"click to the first colour, {empties} empty", first))
            report.append(line(f"click to every turn coloured, {empties} empty", done, alone))
            report.append(line(f"  CPU of the board process, {empties} empty", cpu, alone_cpu))
        if args.memory > 0:
            report.extend(memory(b, args.memory, start))
        if browser and args.games > 0:
            report.extend(engine_turns(b, args.games))
    print()
    print("\n".join(report))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
