"""The exception tree: arena/errors.py's drawing is the classes' own, and any error of it ends a command in one line
with its own exit status."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
import textwrap

import pytest
from quarto_arena.arena import errors
from quarto_arena.protocol.bot import EndpointError, parse_endpoint
from quarto_arena.protocol.errors import ExitStatus, QuartoError


def _import_everything() -> None:
    """Every module of the three packages, so that every subclass of the root exists (an extra's may be missing)."""
    for package in ("quarto_arena.protocol", "quarto_arena.arena", "quarto_arena.engines"):
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            if info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as e:
                if e.name not in ("distributed", "aiohttp", "playwright"):
                    raise


def _drawn() -> list[tuple[int, str, str, str, str]]:
    """The docstring's rows: (depth, class name, status column, reason column, module)."""
    doc = errors.__doc__ or ""
    rows = []
    for line in doc.splitlines():
        m = re.match(r"^    ((?:[│ ]   |[├└]── )*)(\w+)(?: \(\w+\))?\s+(\d[\d, ]*?)\s{2,}(.+?)\s{2,}([\w.]+)$", line)
        if m:
            depth = len(m.group(1)) // 4
            rows.append((depth, m.group(2), m.group(3), m.group(4), m.group(5)))
    return rows


def _actual() -> list[tuple[int, type[QuartoError]]]:
    """The classes under the root, depth first, each level in the order the docstring lists them."""
    order = {name: i for i, (_, name, *_) in enumerate(_drawn())}
    found: list[tuple[int, type[QuartoError]]] = [(0, QuartoError)]

    def walk(cls: type[QuartoError], depth: int) -> None:
        public = [c for c in cls.__subclasses__() if not c.__name__.startswith("_")]
        for sub in sorted(public, key=lambda c: (order.get(c.__name__, len(order)), c.__name__)):
            found.append((depth, sub))
            walk(sub, depth + 1)

    walk(QuartoError, 1)
    return found


def test_the_drawn_tree_is_the_class_tree() -> None:
    _import_everything()
    drawn = [(depth, name) for depth, name, *_ in _drawn()]
    actual = [(depth, cls.__name__) for depth, cls in _actual()]
    assert drawn == actual, "arena/errors.py's docstring must draw every error class, where it is"


def test_each_class_has_the_status_reason_and_module_drawn() -> None:
    _import_everything()
    classes = {cls.__name__: cls for _, cls in _actual()}
    for _, name, status, reason, module in _drawn():
        cls = classes[name]
        assert cls.status == int(status.split(",")[0]), name
        assert cls.reason == reason.split(",")[0].strip(), name
        assert cls.__module__ == "quarto_arena." + module, name


def test_exit_statuses_are_the_readmes_table() -> None:
    assert [int(s) for s in ExitStatus] == [0, 1, 2, 3, 4, 5, 70, 128]


def test_an_instance_narrows_its_class_reason_and_status() -> None:
    from quarto_arena.arena.run import RunError

    assert (RunError("x").status, RunError("x", engine=True).status) == (ExitStatus.USAGE, ExitStatus.ENGINE)
    assert RunError("x", engine=True).engine and not RunError("x").engine
    with pytest.raises(EndpointError) as caught:
        parse_endpoint("tcp://192.0.2.1:5555")
    assert caught.value.reason == "not_loopback"
    assert caught.value.problem == "endpoint 'tcp://192.0.2.1:5555': 192.0.2.1 is not a loopback address"
    assert str(caught.value) == f"{caught.value.problem}; {caught.value.remedy}"
    with pytest.raises(EndpointError) as caught:
        parse_endpoint("tcp//127.0.0.1:5555")
    assert caught.value.reason == "endpoint" and caught.value.remedy == ""


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ("JournalError('the journal is foreign')", 2),
        ("EngineError('greedy: stalled', Termination.STALL)", 3),
        ("RunError('an engine failed', engine=True)", 3),
        ("NotationError('bad\\n position')", 2),
    ],
)
def test_an_error_of_the_tree_reaching_main_is_one_line_and_its_status(error: str, status: int) -> None:
    # A command that lets the error escape, run by the real main() in a real process.
    code = textwrap.dedent(
        f"""
        import sys
        from quarto_arena.arena.cli import app, main
        from quarto_arena.arena.engine import EngineError
        from quarto_arena.arena.journal import JournalError
        from quarto_arena.arena.records import Termination
        from quarto_arena.arena.run import RunError
        from quarto_arena.protocol.notation import NotationError

        @app.command("boom")
        def boom() -> None:
            raise {error}

        main(["boom"])
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == status, r.stderr
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("quarto-arena: error: "), r.stderr
    assert "Traceback" not in r.stderr
