"""Starting a child process that dies with its parent: the arena's engines, and the engine a bridge serves."""

from __future__ import annotations

import shutil
import subprocess
import sys

__all__ = ["launcher_prefix"]

_launcher: list[list[str]] = []


def launcher_prefix() -> list[str]:
    """argv words put before a child's command: ``setpriv --pdeathsig KILL --`` where it can be used, else none.

    The kernel then kills the child when the thread that started it ends, even by SIGKILL: an engine is not left
    running when its arena or bridge is killed. Start the child from the thread that lives as long as its parent
    (the event loop's). Probed once per process (util-linux's setpriv may be missing or too old)."""
    if not _launcher:
        prefix: list[str] = []
        setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
        if setpriv is not None:
            probe = subprocess.run(
                [setpriv, "--pdeathsig", "KILL", "--", "true"], capture_output=True, check=False, timeout=10
            )
            if probe.returncode == 0:
                prefix = [setpriv, "--pdeathsig", "KILL", "--"]
        _launcher.append(prefix)
    return _launcher[0]
