"""What the analysis board's tests share (tests/test_board.py, tests/test_board_browser.py): a real ``quarto-arena
board`` process on a free loopback port, and a small client of its API that sends what its page sends."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procs import CLI, tied
from quarto_arena.engines.greedy import safe_turns
from quarto_arena.protocol.rules import Position, Variant

__all__ = ["STANDARD", "BoardProcess", "board_process", "descendants", "sample"]

STANDARD = "standard color,shape,height,fill auto"


def sample(empties: int, seed: int = 1, variant: Variant | None = None) -> Position:
    """An unfinished position with ``empties`` empty squares and a piece in hand, from a game of random safe turns."""
    rng = random.Random(f"{seed}-{empties}")
    variant = variant or Variant()
    while True:
        p = Position.start(variant)
        while not p.is_over and 16 - p.placed > empties:
            p = p.apply(rng.choice(safe_turns(p) or p.legal_turns()))
        if not p.is_over and 16 - p.placed == empties and p.hand is not None:
            return p


@dataclass
class BoardProcess:
    """A running board, and requests to it as its page makes them."""

    proc: subprocess.Popen[bytes]
    url: str
    token: str
    log: Path
    directory: Path
    board_file: Path

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str]:
        """Any request: its status and its body's text."""
        req = urllib.request.Request(self.url + path.lstrip("/"), body, headers or {}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def post(self, path: str, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
        """A POST as the page makes it (the token, JSON): the status and the JSON answer (or the text)."""
        sent = {"Content-Type": "application/json", "X-Board-Token": self.token, **headers}
        status, text = self.request("POST", f"api/{path}", json.dumps(body).encode(), sent)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def ok(self, path: str, body: dict[str, Any]) -> Any:
        """A POST that must succeed: its JSON answer."""
        status, answer = self.post(path, body)
        assert status == 200, (status, answer)
        return answer

    def state(self) -> dict[str, Any]:
        """The engines and the game, as the page's feed has them."""
        return dict(json.loads(self.request("GET", "api/state")[1]))

    def games(self) -> dict[str, Any]:
        """The games opened from a file."""
        return dict(json.loads(self.request("GET", "api/games")[1]))

    def solve(
        self, start: str, turns: list[str] | None = None, *, tab: str = "t", variant: str = STANDARD, **more: Any
    ) -> dict[str, Any]:
        """Asks for a position's values as the page does, again and again until the solver has them all."""
        seen = ""
        deadline = time.monotonic() + 600
        while True:
            body = {"tab": tab, "variant": variant, "start": start, "turns": turns or [], "solve": True, "seen": seen}
            answer: dict[str, Any] = self.ok("position", {**body, **more})
            seen = answer["seen"]
            solver = answer["solver"]
            game = answer.get("game")
            if (solver["done"] or not solver["deep"]) and (game is None or game["done"]):
                return answer
            assert time.monotonic() < deadline, "the solver did not finish in 10 minutes"

    def wait_game(self, condition: Callable[[dict[str, Any]], bool], timeout: float = 120) -> dict[str, Any]:
        """The game's state once ``condition`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            game = self.state()["game"]
            if game is not None and condition(game):
                return dict(game)
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"the game did not get there: {game}"
            time.sleep(0.05)

    def stop(self, signum: int = signal.SIGINT) -> int:
        """Stops the board as Ctrl-C does; its exit status."""
        self.proc.send_signal(signum)
        return self.proc.wait(timeout=60)


@contextlib.contextmanager
def board_process(
    tmp: Path, *args: str, env: dict[str, str] | None = None, web: str | None = "127.0.0.1:0"
) -> Iterator[BoardProcess]:
    """``quarto-arena board ARGS`` on a free loopback port (``--web WEB``; None: the board's default), its games in
    ``tmp/out``, its address file in ``tmp``; killed with its process group at the end."""
    tmp.mkdir(parents=True, exist_ok=True)
    log = tmp / "board.log"
    board_file = tmp / "board.json"
    directory = tmp / "out"
    environ = {**os.environ, "QUARTO_ARENA_BOARD_FILE": str(board_file), **(env or {})}
    argv = [*CLI, "board", *(["--web", web] if web is not None else []), "--out", str(directory), *args]
    with log.open("wb") as f:
        proc = subprocess.Popen(tied(argv), stdout=subprocess.DEVNULL, stderr=f, start_new_session=True, env=environ)
    try:
        deadline = time.monotonic() + 120
        while not (m := re.search(r"^board: (http://127\.0\.0\.1:\d+/) ", log.read_text(), re.MULTILINE)):
            assert proc.poll() is None, f"the board exited with {proc.returncode}: {log.read_text()}"
            assert time.monotonic() < deadline, f"the board did not start: {log.read_text()}"
            time.sleep(0.05)
        url = m.group(1)
        with urllib.request.urlopen(url, timeout=60) as r:
            page = r.read().decode()
        token = re.search(r'data-token="([^"]+)"', page)
        assert token is not None, page
        yield BoardProcess(proc, url, token.group(1), log, directory, board_file)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def descendants(pid: int) -> list[str]:
    """``pid cmdline`` of every live process below ``pid`` (zombies excluded): what the board has running."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            if state == "Z":
                continue
            children.setdefault(int(ppid), []).append(int(entry.name))
            names[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    out, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(f"{child} {names.get(child, '')}")
        todo.extend(children.get(child, []))
    return out
