"""What the browser tests share (tests/test_web_browser.py: the run pages; tests/test_ladder_web.py: the ladder's):
the browsers, their flags, where screenshots go, and a bot whose ``id name`` is HTML."""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from procs import CLI

__all__ = ["CHROMIUM", "CLI", "FIREFOX", "FLAGS", "HOSTILE", "SHOTS", "Watch", "chromium", "evil_bot", "shots"]

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
FIREFOX = Path("/usr/bin/firefox-esr")
#: Chromium's flags for a headless run in a container, without its own network traffic.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
#: A name that would run script if a page ever put it into HTML as markup.
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def evil_bot(pause: float = 0.0) -> str:
    """The source of a bot whose name is :data:`HOSTILE` (SPEC: ``id name`` is any text) and whose author is HTML
    too; it plays at random, ``pause`` seconds a turn."""
    return textwrap.dedent(
        f"""
        import random, time
        from quarto_arena.protocol.bot import Bot, run

        class Evil(Bot):
            name = {HOSTILE!r}
            author = "<b>me</b> & you"

            def search(self, position, ctx):
                time.sleep({pause!r})
                return random.choice(position.legal_turns())

        run(Evil(), [])
        """
    )


def shots(browser: Path) -> Path:
    """Skips the test where ``browser`` (Debian's package of that name) is not installed; else the screenshots'
    folder, made."""
    if not browser.exists():
        pytest.skip(f"no {browser}: install Debian's {browser.name} (apt-get install {browser.name})")
    SHOTS.mkdir(exist_ok=True)
    return SHOTS


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """The system's Chromium (never a downloaded one), headless, through Playwright; skips the test where it is not
    installed (:func:`shots`)."""
    from playwright import sync_api

    shots(CHROMIUM)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


class Watch:
    """What a page did (Playwright): script errors, console errors (but those that hold one of ``allowed``: what a
    page logs on purpose), and every request it made."""

    def __init__(self, page: Any, allowed: tuple[str, ...] = ()) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("console", lambda m: self._console(m.type, m.text, allowed))
        page.on("request", lambda r: self.requests.append(r.url))

    def _console(self, kind: str, text: str, allowed: tuple[str, ...]) -> None:
        if kind == "error" and not any(a in text for a in allowed):
            self.errors.append(f"console: {text}")
