"""The C programs the benchmarks run, compiled into a run's scratch folder: the example C bot (an instant opponent
for the arena) and the instant engines of benchmarks/peers/."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
C_BOT = ROOT / "engines" / "c" / "quarto_bot.c"
PEERS = ROOT / "benchmarks" / "peers"


def compile_c(source: Path, into: Path, name: str | None = None) -> Path:
    """``source`` compiled with ``cc -O2`` into the folder ``into``, named ``name`` (default: the source's stem).
    Without a C compiler the benchmark ends with a one-line error naming what it needed."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit(f"error: a C compiler (cc) is needed to build {source.relative_to(ROOT)}")
    binary = into / (name or source.stem)
    subprocess.run([cc, "-O2", "-I", str(source.parent), "-o", str(binary), str(source)], check=True)
    return binary
