# Types of the C extension built from _turns.c (optional: arena/turns.py runs every turn in Python without it).
from collections.abc import Callable
from typing import Any

CHUNK: int  # bytes read at once from an engine's output, as ProcessTransport reads them

class Rules:
    def __init__(self, through: tuple[tuple[tuple[int, tuple[int, ...]], ...], ...], strict: bool, /) -> None: ...

class Path:
    fast_turns: int
    handed_over: int
    def __init__(
        self,
        game: object,
        variant: object,
        sessions: tuple[Any, Any],
        transports: tuple[Any, Any],
        rules: Rules,
        loop: object,
        answered: Callable[..., None],
        clocks: tuple[Any, Any],
        gos: tuple[str, str] | None,
        deadlines: tuple[float, float] | None,
        safeties: tuple[float, float],
        in_fds: tuple[int, ...],
        adjudicate: int,
    ) -> None: ...
    def arm(self, side: int, /) -> None: ...
    def disarm(self) -> None: ...

class Reader:
    def __init__(self, transport: object, fd: int) -> None: ...
    def attach(self, path: Path | None, side: int = 0, /) -> None: ...
    def __call__(self) -> None: ...

def setup(
    parties: tuple[type, ...],
    calls: dict[str, tuple[str, ...]],
    values: dict[str, tuple[str, ...]],
    value_types: tuple[type, type, type],
    turns: tuple[tuple[object, ...], ...],
    outcome: type,
    /,
) -> None: ...
def clock(clock: Callable[[], float] | None, /) -> None: ...
