"""Engine- and peer-supplied strings never reach a terminal, a log line or a file raw (SPEC §6).

An engine that puts escape sequences in every string it chooses is run through ``play``, ``--lenient`` play and
``check``; not one escape, bell, carriage return or bidi override reaches stdout, stderr or the run's files. And the
code is grepped for the places where text leaves the arena, so that a new one cannot skip :func:`safe_text`.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from quarto_arena.engines.testing import command as hostile
from quarto_arena.protocol.safelog import SafeFormatter
from quarto_arena.protocol.text import safe_text

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]
ROOT = Path(__file__).resolve().parent.parent
# What must never come out: C0 controls but the line feed, DEL, C1 (8-bit CSI/OSC), bidi controls, separators.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def unsafe(text: str) -> list[str]:
    return sorted({repr(c) for c in UNSAFE.findall(text)})


def test_safe_text_replaces_every_unsafe_character() -> None:
    attack = "a\x1b]0;t\x07b\x1b[2J\rc\u202ed\x9b1m\ud800e\u2028f\tg\x00"
    shown = safe_text(attack, None)
    assert unsafe(shown) == []
    assert shown == "a\ufffd]0;t\ufffdb\ufffd[2J\ufffdc\ufffdd\ufffd1m\ufffde\ufffdf\ufffdg\ufffd"
    assert safe_text("x" * 300) == "x" * 200 + "..."
    assert safe_text("plain text, ünïcödé and ♜ stay") == "plain text, ünïcödé and ♜ stay"


def test_the_log_formatter_makes_messages_safe_and_keeps_tracebacks() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "engine said %s", ("\x1b[2J\x07",), None)
    assert SafeFormatter("%(message)s").format(record) == "engine said \ufffd[2J\ufffd"


@pytest.mark.parametrize("where", ["play", "newgame", "uqi", "malformed"])
def test_no_escape_from_an_engine_reaches_the_terminal_or_the_files(where: str, tmp_path: Path) -> None:
    engine = "esc=" + " ".join(hostile("escape_strings", where))
    out = tmp_path / "run"
    args = ["play", engine, "greedy", "--games", "2", "--tc", "st=0.1", "--lenient", "--out", str(out)]
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, errors="surrogateescape")
    assert "Traceback" not in r.stderr
    assert unsafe(r.stdout) == [] and unsafe(r.stderr) == [], (r.stdout, r.stderr)
    # The engine's strings were shown (replaced, not dropped): the operator sees that something was there.
    assert "\ufffd" in r.stdout + r.stderr
    for path in out.iterdir():
        if path.suffix in (".pgn", ".jsonl", ".csv", ".txt", ".html"):
            assert unsafe(path.read_text(errors="surrogateescape")) == [], path


def test_check_shows_the_engine_s_name_safely() -> None:
    r = subprocess.run(
        [*CLI, "check", " ".join(hostile("escape_strings", "play"))], capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in r.stderr
    assert unsafe(r.stdout) == [] and unsafe(r.stderr) == [], (r.stdout, r.stderr)
    assert "esc\ufffd" in r.stdout + r.stderr


# Where text leaves the arena for a terminal or a log: each such line is here, with why it is safe. A new one fails
# this test until it goes through safe_text (or echo_err/echo_out, which apply it) and is added.
ALLOWED = {
    "arena/console.py": ['sys.stderr.write(INTERRUPTED + "\\n")'],  # our own words, nothing a peer sent
    "arena/cli/app.py": [
        "typer.echo(_safe_lines(text), err=True)",  # echo_err: every line through safe_text
        "typer.echo(_safe_lines(text))",  # echo_out: likewise
        'typer.echo(f"quarto-arena {package_version()}")',  # our own version
    ],
    "arena/cli/tools.py": [
        "typer.echo(render(pos, color=sys.stdout.isatty() if color is None else color))",  # a parsed position
        'typer.echo(f"{turn} {n}")',  # perft: turns and counts
        "typer.echo(str(total))",
        "typer.echo(str(rules.perft(pos, depth)))",
        'typer.echo(f"{e.name:<{width}}  {e.description}")',  # built-in engines, our own text
        'typer.echo(f"{public}\\n{secret}")',  # keys we made (Z85)
        'typer.echo("")',
        "typer.echo(str(path))",  # a path the user gave
        "typer.echo(",  # analyse --json: json.dumps of turns and numbers
        'typer.echo(f"unproven within {seconds:g} s")',
        'typer.echo(f"best turn found: {best[0]}")',
        'typer.echo(f"{how}, for the player to move")',
        "typer.echo(f\"best: {' '.join(best)}\")",
        'typer.echo(f"{result.nodes:,} nodes, {result.seconds:.2f} s")',
        'typer.echo(f"wrote {done.pgn} and {done.jsonl}", err=True)',
        'sys.stderr.write("\\r\\x1b[K" + self.text())',  # analyse's progress line: counts and times only
        'sys.stderr.write("\\r\\x1b[K")',
    ],
    # new-bot: our own templates, the directory the user named, commands built from them
    "arena/cli/newbot.py": [
        "typer.echo(f\"Wrote a {starter.title} bot to {directory}: {', '.join(starter.files)}\")",
        "typer.echo(f\"Building and running it needs {', '.join(missing)}, which is not on this machine's PATH.\")",
        'typer.echo("")',
        'typer.echo("Build it:")',
        'typer.echo(f"  cd {shlex.quote(str(directory))} && {step}")',
        "typer.echo(\"Run it (it speaks UQI on standard input and output; type 'uqi', then 'quit'):\")",
        'typer.echo(f"  {command}")',
        'typer.echo("Then check that it follows the protocol, and play it against the random bot:")',
        'typer.echo(f"  quarto-arena check {engine}")',
        'typer.echo(f"  quarto-arena play {engine} random --games 40 --tc st=0.05")',
        "typer.echo(line)",  # ladder_steps: the same name and command, and our own text
    ],
}
SINK = re.compile(
    r"typer\.echo\(|click\.echo\(|\bprint\(|sys\.(stdout|stderr)\.write|logging\.Formatter\(|StreamHandler\(|"
    r"FileHandler\(|basicConfig\(|\.setFormatter\("
)


def test_every_way_out_goes_through_safe_text() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "arena").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for line in path.read_text().splitlines():
            code = line.split("#", 1)[0].strip()
            if SINK.search(code):
                found.setdefault(rel, []).append(code)
    unexplained = []
    for rel, lines in found.items():
        for code in lines:
            if "safe_text(" in code or "SafeFormatter(" in code or code in ALLOWED.get(rel, []):
                continue
            if code.startswith("handler = logging.") and "Handler(" in code:
                continue  # a handler: its setFormatter line must name SafeFormatter (checked above)
            unexplained.append(f"{rel}: {code}")
    assert unexplained == []
    # Engines' warnings go through Complaints.warn, and whatever logging prints without a handler of ours is safe.
    engine = (ROOT / "arena/engine.py").read_text()
    assert 'self._log.warning("%s: %s", self.engine, safe_text(message, None))' in engine
    assert "logging.lastResort.setFormatter(SafeFormatter())" in (ROOT / "arena/cli/app.py").read_text()


@pytest.mark.parametrize(
    ("argv", "logs"),
    [(["play", "--help"], True), (["rate", "/nonexistent"], True), (["show", "startpos"], False), (["--help"], False)],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_logging_is_made_safe_before_any_command_that_may_log(argv: list[str], logs: bool) -> None:
    # A command that starts engines, servers or workers, or reads a run, gets logging's last resort made safe
    # before it runs; help and the commands that do none of that do not import logging at all (start-up).
    code = f"""
import contextlib, io, sys
from quarto_arena.arena.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    with contextlib.suppress(SystemExit):
        main({argv!r})
imported = "logging" in sys.modules
import logging
print(imported, type(logging.lastResort.formatter).__name__ if logging.lastResort else None)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == (["True", "SafeFormatter"] if logs else ["False", "NoneType"])
