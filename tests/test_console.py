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


@pytest.mark.parametrize(
    ("args", "imported"),
    [
        (["play", "a", "b"], True),
        (["tournament", "a", "b"], True),
        (["check", "greedy"], True),
        (["play", "--help"], False),
        (["show", "startpos"], False),
    ],
)
def test_a_command_s_own_imports_come_first_under_the_hold(args: list[str], imported: bool) -> None:
    # What the command imports when it runs is imported by load_commands, under the hold; not for help or show.
    out = run(f"""
        from quarto_arena.arena.cli.app import load_commands
        load_commands({args!r}, to_run=True)
        print(all(m in sys.modules for m in ("asyncio", "quarto_arena.arena.engine", "quarto_arena.arena.run")))
    """)
    assert out == str(imported)
