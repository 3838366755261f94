"""Where a running board tells the other pages its address: a small file in the user's runtime directory.

The live page and the ladder's pages (served by this machine) read it when they are asked for, and give each game
of their viewer an "open on the board" link (``static/board-link.js``); ``report.html``, a file, cannot read it and
takes the address from its own query instead (``report.html?board=http://127.0.0.1:8080/``), which the board prints.

The file names the board's address and process; it is removed when the board stops, and one whose process is gone
(a board killed with SIGKILL) is ignored. Only a loopback address is ever written or read: a link elsewhere would
send a game's turns off this machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Final

__all__ = ["ENV", "board_file", "forget", "is_loopback_url", "running_board", "tell"]

ENV: Final = "QUARTO_ARENA_BOARD_FILE"
"""Environment variable: the file's path instead of the default (tests give each board its own)."""
_LOOPBACK: Final = re.compile(r"http://(127\.0\.0\.1|localhost|\[::1\]):\d{1,5}/\Z")


def board_file() -> Path:
    """``$QUARTO_ARENA_BOARD_FILE``, else ``$XDG_RUNTIME_DIR/quarto-arena/board.json``, else the same under
    ``~/.cache``."""
    given = os.environ.get(ENV)
    if given:
        return Path(given)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    root = Path(runtime) if runtime else Path.home() / ".cache"
    return root / "quarto-arena" / "board.json"


def is_loopback_url(url: str) -> bool:
    """True for ``http://127.0.0.1:PORT/``, ``http://localhost:PORT/`` and ``http://[::1]:PORT/``."""
    return _LOOPBACK.match(url) is not None


def tell(url: str) -> Path | None:
    """Writes the board's address (a loopback one; others are not written) for the other pages; the file's path,
    or None when nothing was written (another address, or the directory cannot be written: no links then)."""
    if not is_loopback_url(url):
        return None
    path = board_file()
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"url": url, "pid": os.getpid()}), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    return path


def forget(url: str) -> None:
    """Removes the file if it still names this board (another board may have written it since)."""
    path = board_file()
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("url") == url and data.get("pid") == os.getpid():
            path.unlink()


def running_board() -> str | None:
    """The address of the board running on this machine, or None (no file, a bad one, or its process is gone)."""
    try:
        data = json.loads(board_file().read_text(encoding="utf-8"))
        url, pid = data["url"], int(data["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(url, str) or not is_loopback_url(url):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's: its page is still this machine's
    return url
