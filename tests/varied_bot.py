"""A legal, seeded UQI bot whose answers come in every shape a stdio engine may give them (tests/test_turns.py).

    python tests/varied_bot.py SEED [SHAPES [hang:N | exit:N]]

Each ``go`` is answered with a seeded choice of turn (as the broken bots choose: a win when there is one, else a
gift that does not lose at once) in a seeded choice of shape: the plain ``turn TOKEN`` line alone in its write;
an ``info`` line with a score, in the same write or in a write of its own some milliseconds before; an ``error``
line first; the line split over two writes; a ``\\r\\n`` ending; an upper-case token; an ``info string`` alone
first; ``sleep`` waits 30 ms before a plain line. SHAPES (comma-separated names) limits the choice. Both choices are
seeded by SEED and the position alone, so the same games are played whichever process plays them (at concurrency
2 too), and two builds of the arena can be held to the same records. ``hang:N``: after N answers the process stops
answering (it sleeps); ``exit:N``: it exits just after its Nth answer. Every ``go`` line the bot is sent is copied to
its standard error (the run's log of it), so that a test can check the clocks it was told.
"""

from __future__ import annotations

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from quarto_arena.engines.testing._base import MinimalBot
from quarto_arena.protocol.uqi import Go, format_command

SHAPES = ("plain", "info_with", "info_before", "error_first", "split", "crlf", "upper", "string_first", "sleep")


class VariedBot(MinimalBot):
    """Plays as MinimalBot does, seeded, each answer in a seeded shape."""

    name = "VariedBot"

    def __init__(self, seed: int, shapes: tuple[str, ...], end: str = "") -> None:
        super().__init__()
        self.seed = seed
        self.shapes = shapes
        how, _, after = end.partition(":")
        self.hang_after = int(after) if how == "hang" else None
        self.exit_after = int(after) if how == "exit" else None

    def write(self, text: str) -> None:
        """One write of ``text`` as it is (several lines, or part of one)."""
        sys.stdout.write(text)
        sys.stdout.flush()

    def on_go(self, go: Go) -> None:
        sys.stderr.write(f"{format_command(go)}\n")
        sys.stderr.flush()
        if self.position is None or self.position.is_over:
            self.send("error go no position to search")
            return
        if self.hang_after is not None and self.gos > self.hang_after:
            time.sleep(3600)
        self.rng = random.Random(f"{self.seed} {self.position}")
        token = self.choose(self.position).token
        shape = self.rng.choice(self.shapes)
        score = self.rng.randrange(-50, 50)
        if shape == "plain":
            self.write(f"turn {token}\n")
        elif shape == "info_with":
            self.write(f"info depth 1 score value {score}\nturn {token}\n")
        elif shape == "info_before":
            self.write(f"info depth 2 score value {score}\n")
            time.sleep(0.003)
            self.write(f"turn {token}\n")
        elif shape == "error_first":
            self.write(f"error thinking about {token}\nturn {token}\n")
        elif shape == "split":
            self.write(f"turn {token[:1]}")
            time.sleep(0.003)
            self.write(f"{token[1:]}\n")
        elif shape == "crlf":
            self.write(f"turn {token}\r\n")
        elif shape == "upper":
            self.write(f"turn {token.upper()}\n")
        elif shape == "sleep":
            time.sleep(0.03)
            self.write(f"turn {token}\n")
        else:
            self.write("info string considering\n")
            time.sleep(0.003)
            self.write(f"turn {token}\n")
        if self.exit_after is not None and self.gos >= self.exit_after:
            self.exit(0)


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    shapes = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 and sys.argv[2] else SHAPES
    VariedBot(seed, shapes, sys.argv[3] if len(sys.argv) > 3 else "").run()


if __name__ == "__main__":
    main()
