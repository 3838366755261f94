"""Finding what is left of an engine: every process, zombies included, in given process groups or sessions."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Collection
from pathlib import Path


def processes_in_groups(pgids: Collection[int]) -> list[str]:
    """``pid (state) cmdline`` of every process whose process group or session is one of ``pgids``.

    Each engine leads its own session, so a child that left the engine's group is still found.
    """
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended while we looked
        # Fields after the command name in parentheses: state, ppid, pgrp, session, ...
        state, _ppid, pgrp, session = stat.rsplit(")", 1)[1].split()[:4]
        if int(pgrp) in pgids or int(session) in pgids:
            out.append(f"{entry.name} ({state}) {cmdline.strip()}")
    return out


def wait_listening(endpoint: str, proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Waits until something accepts TCP connections at ``endpoint`` (an arena reports a dead endpoint at once, so a
    test must not connect before the server it just started is up)."""
    port = int(endpoint.rsplit(":", 1)[1])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server exited with {proc.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise AssertionError(f"nothing listens on {endpoint}")
