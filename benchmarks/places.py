"""Places a change of each kind touches, before and after (issue 37's figure), counted on git revisions.

Each kind is stood for by one existing member, and its places are the source files and lines (not tests, not docs)
that name it as a word: a run option (``random_openings``), a game option that a run keeps in its journal and the
ladder takes too (``--timemargin``, ``margin_ms``), a record field (``exit_info``), a termination reason
(``STALL``/``"stall"``), a UQI command (``isready``), a ladder column (``dodges``). A proxy, and said as one: a new
member of the kind goes where its like is named (its declaration, its reading, its uses), and what a declaration
drives (a codec, a table of options) names it nowhere else.

    python benchmarks/places.py [REV ...]        # default: main HEAD
"""

from __future__ import annotations

import subprocess
import sys

KINDS = (
    ("run option", r"random_openings|random-openings"),
    ("game option (a run's and the ladder's)", r"timemargin|margin_ms"),
    ("record field", r"exit_info"),
    ("termination reason", r"STALL|\"stall\""),
    ("UQI command", r"isready"),
    ("ladder column", r"dodges"),
)
SOURCES = ("arena", "protocol", "engines", "benchmarks")


def places(rev: str, pattern: str) -> tuple[int, int]:
    """(files, lines) in ``rev``'s sources whose lines name ``pattern`` as a word."""
    out = subprocess.run(
        ["git", "grep", "-c", "-w", "-E", pattern, rev, "--", *SOURCES, ":!benchmarks/places.py"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    counts = [int(line.rsplit(":", 1)[1]) for line in out.splitlines() if line]
    return len(counts), sum(counts)


def main() -> None:
    revs = sys.argv[1:] or ["main", "HEAD"]
    names = [
        subprocess.run(["git", "rev-parse", "--short", r], capture_output=True, text=True).stdout.strip() for r in revs
    ]
    print(
        "| kind (its member) | "
        + " | ".join(f"{r} ({n}): files / lines" for r, n in zip(revs, names, strict=True))
        + " |"
    )
    print("|---" * (len(revs) + 1) + "|")
    for kind, pattern in KINDS:
        cells = [f"{f} / {n}" for f, n in (places(r, pattern) for r in revs)]
        print(f"| {kind} (`{pattern}`) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
