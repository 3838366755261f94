"""The CLI imports only the module of the command it runs (start-up), and still knows every command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from quarto_arena.arena.cli.app import ALL_COMMAND_MODULES, COMMAND_MODULES

CLI = [sys.executable, "-c", "from quarto_arena.arena.cli import main; main()"]


def _in_fresh_process(code: str) -> object:
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(r.stdout)


def test_the_table_names_every_command_of_the_app_in_its_help_order() -> None:
    names = _in_fresh_process(
        """
        import json
        from quarto_arena.arena.cli import app, load_commands
        load_commands()
        commands = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]
        groups = [g.typer_instance.info.name for g in app.registered_groups]
        print(json.dumps(commands + groups))
        """
    )
    assert names == list(COMMAND_MODULES)
    assert set(COMMAND_MODULES.values()) == set(ALL_COMMAND_MODULES)


@pytest.mark.parametrize("command", list(COMMAND_MODULES))
def test_a_command_loads_its_own_module_alone(command: str) -> None:
    loaded = _in_fresh_process(
        f"""
        import json, sys
        from quarto_arena.arena.cli import app, load_commands
        load_commands([{command!r}, "--help"])
        commands = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]
        groups = [g.typer_instance.info.name for g in app.registered_groups]
        modules = [m for m in {list(ALL_COMMAND_MODULES)!r} if "quarto_arena.arena.cli." + m in sys.modules]
        print(json.dumps([commands + groups, modules]))
        """
    )
    assert isinstance(loaded, list)
    names, modules = loaded
    assert command in names
    own = COMMAND_MODULES[command]
    # check declares --cluster with the run commands' helpers, tune is a run command (its options, its play) and
    # ladder run takes the run commands' options as they do (run_options): these bring runs along; nothing else does.
    assert set(modules) == ({own, "runs"} if own in ("check", "tune", "ladder") else {own})


@pytest.mark.parametrize("command", list(COMMAND_MODULES))
def test_a_command_is_built_alone_and_the_app_keeps_every_command(command: str) -> None:
    # typer builds every command of the app it runs: a command runs from a copy holding only itself (start-up).
    found = _in_fresh_process(
        f"""
        import json
        from quarto_arena.arena.cli.app import _app_to_run, app, load_commands
        load_commands()
        before = len(app.registered_commands) + len(app.registered_groups)
        one = _app_to_run([{command!r}, "--help"])
        names = [c.name or c.callback.__name__.replace("_", "-") for c in one.registered_commands]
        names += [g.typer_instance.info.name for g in one.registered_groups]
        after = len(app.registered_commands) + len(app.registered_groups)
        print(json.dumps([names, before == after, _app_to_run(["ladderr"]) is app]))
        """
    )
    assert found == [[command], True, True]


def test_help_lists_the_commands_as_the_whole_app_does() -> None:
    # --help builds a listing (each command's name and help, not its options): it must show what the app shows.
    found = _in_fresh_process(
        """
        import json, typer
        from quarto_arena.arena.cli.app import _app_to_run, app, load_commands
        load_commands()
        def shown(which):
            command = typer.main.get_command(which)
            return command.get_help(typer.Context(command, info_name="quarto-arena", max_content_width=100))
        listing = [_app_to_run(args) for args in ([], ["--help"], ["-h"], ["--version"])]
        print(json.dumps([[shown(x) == shown(app) for x in listing], [x is app for x in listing], shown(app)]))
        """
    )
    assert isinstance(found, list)
    same, whole, text = found
    assert same == [True] * 4
    assert whole == [False] * 4
    assert all(f"\n  {name} " in text for name in COMMAND_MODULES)


def test_help_and_a_misspelt_command_still_see_every_command() -> None:
    listing = subprocess.run([*CLI, "--help"], capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0
    for name in COMMAND_MODULES:
        assert f"\n  {name} " in listing.stdout, name
    typo = subprocess.run([*CLI, "ladderr"], capture_output=True, text=True, timeout=60)
    assert typo.returncode == 2
    assert typo.stderr == "quarto-arena: error: No such command 'ladderr'. Did you mean 'ladder'?\n"


def test_analysing_a_position_imports_nothing_of_games() -> None:
    # `analyse POSITION` is timed with its start-up (issue 24): PGN, the rating tables and the process pool serve
    # `analyse FILE.pgn` only, and cost about a quarter of the position's start-up.
    found = _in_fresh_process(
        """
        import contextlib, io, json, sys
        from quarto_arena.arena.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main(["analyse", "0..d/9178/...b/5af. 2", "--json"])
        heavy = ("quarto_arena.arena.pgn", "quarto_arena.arena.stats", "concurrent.futures.process")
        print(json.dumps([json.loads(out.getvalue())["value"], [m for m in heavy if m in sys.modules]]))
        """
    )
    assert found == ["loss", []]


#: What only a run (or the live page, a server, a report) needs: a command that plays no game imports none of it.
RUN_MACHINERY = (
    "asyncio",
    "uvloop",
    "zmq",
    "msgpack",
    "tabulate",
    "aiohttp",
    "distributed",
    "quarto_arena.arena.run",
    "quarto_arena.arena.engine",
    "quarto_arena.arena.journal",
    "quarto_arena.arena.output",
    "quarto_arena.arena.web.report",
    "quarto_arena.arena.web.server",
)


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["show", "startpos"], ["perft", "startpos", "1"], ["check", "--help"], ["analyse", "--help"]],
    ids=" ".join,
)
def test_commands_that_play_no_game_import_no_run_machinery(argv: list[str]) -> None:
    found = _in_fresh_process(
        f"""
        import contextlib, io, json, sys
        from quarto_arena.arena.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main({argv!r})
        print(json.dumps([bool(out.getvalue()), [m for m in {list(RUN_MACHINERY)!r} if m in sys.modules]]))
        """
    )
    assert found == [True, []]


def test_a_short_play_imports_nothing_only_other_runs_need(tmp_path: Path) -> None:
    # A 2-game play (issue 24: its start-up is most of its cost) imports no ZeroMQ, live page, Dask, ladder, server
    # or directory reader, no tabulate for its usual table, and no rotating log file's handler (logging.handlers, and
    # pickle with it: a service's log); a test of real games between two built-in engines.
    argv = ["play", "random", "greedy", "--games", "2", "--tc", "st=0.05", "--out", str(tmp_path / "run"), "-q"]
    found = _in_fresh_process(
        f"""
        import contextlib, io, json, sys
        from quarto_arena.arena.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main({argv!r})
        others = ("zmq", "tabulate", "aiohttp", "distributed", "sqlite3", "quarto_arena.arena.web.server",
                  "quarto_arena.arena.web.rundir", "quarto_arena.arena.cluster", "quarto_arena.arena.server",
                  "quarto_arena.arena.ladder", "quarto_arena.arena.compliance", "quarto_arena.arena.analysis",
                  "logging.handlers", "pickle")
        print(json.dumps(["Score of random vs greedy" in out.getvalue(), [m for m in others if m in sys.modules]]))
        """
    )
    assert found == [True, []]
    assert (tmp_path / "run" / "report.html").is_file()
