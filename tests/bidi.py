"""A small WebDriver BiDi client, to drive the system's Firefox in the browser tests.

Playwright drives stock Firefox only through its experimental BiDi channel, which asks for commands that Debian's
Firefox ESR does not have yet (``emulation.setMediaFeaturesOverride``), and Selenium needs geckodriver, which
Debian does not package. Firefox speaks the W3C WebDriver BiDi protocol itself, over a WebSocket
(``--remote-debugging-port``): the few commands the tests need are written here, over aiohttp's WebSocket client.

Synchronous on the outside (the tests are plain functions): the connection lives on an event loop in a thread of
its own, so that it works beside Playwright's sync API (which keeps a loop running in the main thread).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp

#: WebDriver's code points for the keys the viewer answers (W3C WebDriver, "keyboard actions").
KEYS = {"ArrowLeft": "\ue012", "ArrowRight": "\ue014", "Home": "\ue011", "End": "\ue010"}


class BidiError(Exception):
    """The browser answered a command with an error, or did not answer."""


class Firefox:
    """A headless Firefox in a process group of its own, with one tab, driven over WebDriver BiDi."""

    def __init__(self, executable: str, *, timeout: float = 30.0, javascript: bool = True) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="qa-firefox-")
        # No first-run pages, no updates or telemetry: the browser asks the network for nothing of its own.
        Path(self._profile.name, "user.js").write_text(
            "\n".join(
                f'user_pref("{name}", {value});'
                for name, value in (
                    ("browser.shell.checkDefaultBrowser", "false"),
                    ("datareporting.policy.dataSubmissionEnabled", "false"),
                    ("app.update.enabled", "false"),
                    ("browser.startup.homepage_override.mstone", '"ignore"'),
                    ("network.connectivity-service.enabled", "false"),
                    # Off: the page's own scripts do not run (what a reader without JavaScript gets); the tests'
                    # expressions (:meth:`evaluate`) still do.
                    ("javascript.enabled", "true" if javascript else "false"),
                )
            )
        )
        self.proc = subprocess.Popen(
            [executable, "--headless", "--no-remote", "--profile", self._profile.name, "--remote-debugging-port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its content processes share the group: one kill ends them all
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bidi", daemon=True)
        self._thread.start()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        try:
            url = self._endpoint(timeout)
            self._run(self._connect(url), timeout)
            self.command("session.new", {"capabilities": {}})
            tree = self.command("browsingContext.getTree", {})
            self.context: str = tree["contexts"][0]["context"]
            self.command("session.subscribe", {"events": ["log.entryAdded", "network.beforeRequestSent"]})
        except BaseException:
            self.close()
            raise

    # --- the connection ----------------------------------------------------------------------------------------

    def _endpoint(self, timeout: float) -> str:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise BidiError(f"firefox exited (status {self.proc.wait()}) before it listened")
            if m := re.search(r"WebDriver BiDi listening on (ws://\S+)", line):
                # The rest of stderr is drained in the background, so that the browser never blocks on it.
                threading.Thread(target=self.proc.stderr.read, daemon=True).start()
                return m.group(1).rstrip("/") + "/session"
        raise BidiError(f"firefox did not listen within {timeout:g} s")

    async def _connect(self, url: str) -> None:
        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(url, max_msg_size=64 * 2**20)
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for message in self._ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(message.data)
            future = self._pending.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)
            elif data.get("type") == "event":
                self.events.append(data)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(BidiError("the browser closed the connection"))

    async def _command(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        await self._ws.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        reply = await future
        if reply.get("type") == "error":
            raise BidiError(f"{method}: {reply.get('error')}: {reply.get('message')}")
        result: dict[str, Any] = reply["result"]
        return result

    def _run(self, work: Any, timeout: float) -> Any:
        try:
            return asyncio.run_coroutine_threadsafe(asyncio.wait_for(work, timeout), self._loop).result()
        except TimeoutError:
            raise BidiError(f"no answer within {timeout:g} s") from None

    def command(self, method: str, params: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """Sends one command and returns its result."""
        result: dict[str, Any] = self._run(self._command(method, params), timeout)
        return result

    def close(self) -> None:
        """Ends the session, kills the browser's process group and reaps it."""
        if hasattr(self, "_ws"):
            with contextlib.suppress(BidiError, aiohttp.ClientError, ConnectionError):
                self._run(self._command("session.end", {}), 5)
            self._run(self._ws.close(), 5)
            self._run(self._http.close(), 5)
            self._loop.call_soon_threadsafe(self._reader.cancel)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()
        self._profile.cleanup()

    # --- what the tests do -------------------------------------------------------------------------------------

    def goto(self, url: str) -> None:
        self.command("browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page, passed through JSON (``undefined`` is None)."""
        result = self.command(
            "script.evaluate",
            {
                "expression": f"JSON.stringify((v => v === undefined ? null : v)({expression}))",
                "target": {"context": self.context},
                "awaitPromise": True,
                "resultOwnership": "none",
            },
        )
        if result.get("type") == "exception":
            raise BidiError(f"script error: {result['exceptionDetails'].get('text')} in {expression!r}")
        return json.loads(result["result"]["value"])

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Polls a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BidiError(f"not true within {timeout:g} s: {expression}")
            time.sleep(0.05)

    def press(self, key: str) -> None:
        """A key pressed and released, as the keyboard sends it (``KEYS``)."""
        value = KEYS[key]
        self.command(
            "input.performActions",
            {
                "context": self.context,
                "actions": [
                    {
                        "type": "key",
                        "id": "keyboard",
                        "actions": [{"type": "keyDown", "value": value}, {"type": "keyUp", "value": value}],
                    }
                ],
            },
        )

    def screenshot(self, path: Path) -> None:
        data = self.command("browsingContext.captureScreenshot", {"context": self.context, "origin": "document"})
        path.write_bytes(base64.b64decode(data["data"]))

    def errors(self) -> list[str]:
        """Script errors and console errors the page logged so far."""
        return [
            str(e["params"].get("text"))
            for e in self.events
            if e.get("method") == "log.entryAdded"
            and e["params"].get("level") == "error"
            and e["params"].get("source", {}).get("context") == self.context
        ]

    def requests(self) -> list[str]:
        """Every URL the page asked for so far."""
        return [
            str(e["params"]["request"]["url"])
            for e in self.events
            if e.get("method") == "network.beforeRequestSent" and e["params"].get("context") == self.context
        ]
