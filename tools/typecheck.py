"""Strict mypy over quarto_arena's three packages, with errors reported at the files' real paths.

setuptools installs ``protocol/`` as ``quarto_arena.protocol`` (and ``arena/``, ``engines/`` likewise: the
``package-dir`` table in pyproject.toml). mypy cannot follow that mapping from the command line, nor the editable
install's import hook, so this gives it every file with its module name (mypy's ``BuildSource``): the same build
``mypy -p quarto_arena.protocol ...`` would make, with the options of pyproject.toml's ``[tool.mypy]``.

Usage: ``python tools/typecheck.py [MYPY OPTIONS]`` (exit 0 clean, 1 type errors, 2 mypy could not run).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent


def sources(root: Path = ROOT) -> list[BuildSource]:
    """Every module and stub of the packages in pyproject.toml's ``package-dir``, at its real (relative) path."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    found = []
    for package, folder in config["tool"]["setuptools"]["package-dir"].items():
        base = root / folder
        for path in sorted([*base.rglob("*.py"), *base.rglob("*.pyi")]):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(BuildSource(str(path.relative_to(root)), ".".join((package, *parts))))
    return found


def main(argv: list[str]) -> int:
    """Runs the check; prints mypy's messages and summary line."""
    _, options = process_options(["--config-file", str(ROOT / "pyproject.toml"), *argv, "-c", "pass"])
    chosen = sources()
    try:
        result = build.build(chosen, options, stdout=sys.stdout, stderr=sys.stderr)
        messages = result.errors
    except CompileError as e:
        messages = e.messages
    for line in messages:
        print(line)
    files = len(chosen)
    errors = sum(1 for m in messages if ": error:" in m)
    if errors:
        bad = len({m.split(":", 1)[0] for m in messages if ": error:" in m})
        plural = "s" * (errors != 1), "s" * (bad != 1)
        print(f"Found {errors} error{plural[0]} in {bad} file{plural[1]} (checked {files} source files)")
        return 1
    print(f"Success: no issues found in {files} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
