# Types of the C extension built from _solver.c; _solver_py.Core is the same class in pure Python.
from collections.abc import Sequence

EXACT: int  # the #define: a depth no game reaches, the search is exact

class Core:
    nodes: int
    aborted: bool
    best_move: int
    def __init__(self, lines: Sequence[int], counted: int, maps: Sequence[Sequence[int]], tt_bits: int) -> None: ...
    def search(
        self,
        occupied: int,
        planes: int,
        hand: int,
        alpha: int,
        beta: int,
        max_nodes: int = 0,
        seconds: float = 0.0,
        depth: int = ...,
        win_order: bool = False,
    ) -> int: ...
    def root_turns(
        self,
        occupied: int,
        planes: int,
        hand: int,
        alpha: int,
        beta: int,
        max_nodes: int = 0,
        seconds: float = 0.0,
        depth: int = ...,
        win_order: bool = False,
    ) -> list[int] | None: ...
    def stop(self) -> None: ...
    def reset_stop(self) -> None: ...
    def clear(self) -> None: ...
