#!/usr/bin/env python3
"""``quarto-arena check`` on every bot the project has: the built-in engines, the example bots (C, JavaScript), the
starters of ``new-bot`` (written and built here), the broken bots of ``engines/testing`` and yesterday's bots.
Prints one row per bot: ``pass`` (no warning), ``warn`` (complies, with warnings: the steps), ``FAIL`` (the steps),
and the verdict of ``--strict`` (judged on the same run, every step run). A bot whose tools are missing is skipped.

    python benchmarks/check_table.py [--only NAME ...] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import quarto_arena.engines
from quarto_arena.arena.compliance import CheckReport, run_check, strict_report
from quarto_arena.arena.engine import EngineConfig
from quarto_arena.arena.roster import engine_config
from quarto_arena.engines.registry import BUILTIN
from quarto_arena.engines.starters import STARTERS, write_starter
from quarto_arena.engines.testing import BROKEN, NONCOMPLIANT, YESTERDAY, command

ENGINES = Path(quarto_arena.engines.__file__).parent


def bots(workdir: Path) -> list[tuple[str, str, EngineConfig]]:
    """(group, name, engine) for every bot, the starters and the C example built in ``workdir``."""
    out = [("built-in", name, engine_config(name)) for name in sorted(BUILTIN)]
    if shutil.which("cc"):
        binary = workdir / "c-example"
        subprocess.run(["cc", "-O2", "-o", str(binary), str(ENGINES / "c" / "quarto_bot.c")], check=True)
        out.append(("example", "c", EngineConfig("c", command=(str(binary),))))
    if shutil.which("node"):
        out.append(("example", "js", EngineConfig("js", command=("node", str(ENGINES / "js" / "quarto_bot.js")))))
    for language, starter in STARTERS.items():
        if any(shutil.which(tool) is None for tool in starter.tools):
            continue
        directory = workdir / f"starter-{language}"
        write_starter(language, directory)
        for step in starter.build:
            subprocess.run(step, shell=True, cwd=directory, check=True, capture_output=True)
        out.append(
            ("starter", language, EngineConfig(language, command=tuple(starter.command(directory, sys.executable))))
        )
    for group, names in (("broken", (*BROKEN, *NONCOMPLIANT)), ("yesterday", YESTERDAY)):
        out += [(group, name, EngineConfig(name, command=tuple(command(name)))) for name in sorted(names)]
    return out


def verdict(report: CheckReport) -> str:
    if not report.complies:
        return "FAIL " + ",".join(map(str, report.failed))
    return "warn " + ",".join(map(str, report.warned)) if report.warned else "pass"


async def check_all(engines: list[tuple[str, str, EngineConfig]], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(config: EngineConfig) -> CheckReport:
        async with gate:
            return await run_check(config, keep_going=True)

    reports = await asyncio.gather(*(one(config) for _, _, config in engines))
    print(f"{'group':<10} {'bot':<28} {'check':<22} check --strict")
    for (group, name, _), report in zip(engines, reports, strict=True):
        print(f"{group:<10} {name:<28} {verdict(report):<22} {verdict(strict_report(report, keep_going=True))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], help="check only this bot (repeat)")
    parser.add_argument("--concurrency", type=int, default=2, help="checks at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quarto-check-table-") as workdir:
        engines = [e for e in bots(Path(workdir)) if not args.only or e[1] in args.only]
        asyncio.run(check_all(engines, args.concurrency))


if __name__ == "__main__":
    main()
