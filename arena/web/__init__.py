"""quarto_arena.arena.web: a run seen in a browser.

- :mod:`.model`: what the pages show, as plain JSON values (standings as games arrive, games for the viewer);
- :mod:`.report`: ``report.html``, one self-contained file per run (tables, plots, the game viewer);
- :mod:`.rundir`: a run directory read whole or followed as another process writes it;
- :mod:`.server`: the live page, an aiohttp server in the arena's own event loop, updates pushed as Server-Sent
  Events (needs the ``web`` extra: ``pip install "quarto-arena[web]"``);
- ``static/`` and ``templates/``: the page, its script, its style, and the charting library (Chart.js, MIT); the
  analysis board's page, script and style (served by :mod:`quarto_arena.arena.board`), and ``board-link.js``, which
  gives the viewer's game an "open on the board" link while a board runs.

Nothing here prints; nothing here is imported until a command needs it (the CLI's start-up time).
"""

from __future__ import annotations

from ..errors import ArenaError, ExitStatus

__all__ = ["WebError", "parse_address", "require_server"]


class WebError(ArenaError):
    """A page that cannot be served or written: a bad address, a port in use, a missing extra. One line."""

    status = ExitStatus.USAGE
    reason = "web"


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6; ``:8080`` or a bare ``8080`` mean 127.0.0.1) -> (host, port)."""
    value = text.strip()
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host.removeprefix("[").removesuffix("]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise WebError(f"--web {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8080 (port 0: any free port)")
    return host, int(port)


def require_server() -> None:
    """Raises :class:`WebError` when the server's library (aiohttp, the ``web`` extra) cannot be imported."""
    try:
        import aiohttp  # noqa: F401 - imported to see that it can be
    except ImportError:
        raise WebError('the live page needs the web extra: pip install "quarto-arena[web]" (aiohttp)') from None
