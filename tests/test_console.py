"""The console script's entry point (arena/console.py): Ctrl-C held while the command line imports itself.

The end-to-end behaviour (an interrupt at any moment of the start-up gives 130 and one line) is in
tests/test_compliance.py; here, the parts: the hold itself, each case in a Python process of its own (the signal
handlers are that process's, not pytest's), and what a command imports under it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import os, signal, sys, threading, time
from quarto_arena.arena.console import HeldInterrupts

def interrupt_myself():
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(100):  # handled at a bytecode boundary of the main thread: give it some
        time.sleep(0.001)
"""


def run(body: str) -> str:
    code = PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_ctrl_c_inside_the_block_is_held_and_raised_at_its_end() -> None:
    out = run("""
        steps = []
        try:
            with HeldInterrupts() as held:
                interrupt_myself()
                steps.append(held.caught)  # the block went on: nothing was raised inside it
        except KeyboardInterrupt:
            steps.append("raised at the end")
        print(steps, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    """)
    assert out == "[True, 'raised at the end'] True"


def test_no_ctrl_c_no_exception_and_the_default_handler_back() -> None:
    out = run("""
        with HeldInterrupts() as held:
            inside = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        print(inside, held.caught, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    """)
    assert out == "False False True"


def test_an_error_in_the_block_is_the_error_raised() -> None:
    out = run("""
        try:
            with HeldInterrupts():
                interrupt_myself()
                raise ValueError("bad")
        except ValueError as e:
            print("ValueError", e, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    """)
    assert out == "ValueError bad True"


def test_another_handler_or_thread_is_left_alone() -> None:
    out = run("""
        seen = []
        signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
        with HeldInterrupts() as held:
            interrupt_myself()
        print(seen == [signal.SIGINT], held.caught)  # the program's own handler got it
        signal.signal(signal.SIGINT, signal.default_int_handler)
        errors = []
        def in_a_thread():
            try:
                with HeldInterrupts() as held:
                    pass
            except BaseException as e:
                errors.append(e)
        thread = threading.Thread(target=in_a_thread)
        thread.start()
        thread.join()
        print(errors)
    """)
    assert out == "True False\n[]"


def test_the_collector_is_paused_in_the_block_and_what_an_import_made_is_frozen() -> None:
    # Imports make long-lived objects and little garbage: no collector pass while they run (some fifty in a 2-game
    # play), and what they made is frozen rather than scanned at the first pass after. A block that imports nothing
    # freezes nothing; a block inside another leaves the collector to the outer one; one begun with the collector
    # off leaves it off.
    out = run("""
        import gc
        passes = []
        gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info["generation"]))
        with HeldInterrupts():
            inside = gc.isenabled()
            import json, csv, difflib, decimal
            with HeldInterrupts():
                pass
            inner = gc.isenabled()
        frozen = gc.get_freeze_count()
        with HeldInterrupts():
            pass
        print(inside, inner, passes, frozen > 10_000, gc.get_freeze_count() == frozen, gc.isenabled())
        gc.disable()
        with HeldInterrupts():
            pass
        print(gc.isenabled())
    """)
    assert out == "False False [] True True True\nFalse"


@pytest.mark.parametrize(("module", "expected"), [("runs", True), ("check", True), (None, False)])
def test_a_command_s_own_imports_come_first_under_the_hold(module: str | None, expected: bool) -> None:
    # What an engine command imports when it runs, import_to_run imports first, under the hold; loading the command
    # modules alone (for --help, show, or a usage error) does not import it.
    call = f"import_to_run({module!r})" if module else "pass"
    out = run(f"""
        from quarto_arena.arena.cli.app import import_to_run, load_commands
        load_commands([])
        {call}
        print(all(m in sys.modules for m in ("asyncio", "quarto_arena.arena.engine", "quarto_arena.arena.run")))
    """)
    assert out == str(expected)


def test_a_usage_error_does_not_wait_for_a_run_s_imports() -> None:
    # typer reads a command's options before its body imports what a run needs: a misspelt option of play is
    # refused without them.
    out = run("""
        from quarto_arena.arena.cli.app import main
        try:
            main(["play", "a", "b", "--no-such-option"])
        except SystemExit as e:
            print(e.code, "quarto_arena.arena.run" in sys.modules, "asyncio" in sys.modules)
    """)
    assert out == "2 False False"
