"""Hides the optional extras named in ``QUARTO_ARENA_TEST_WITHOUT`` (``dask``, ``web``, ``browser``, comma-separated)
from every Python process started with this folder first on ``PYTHONPATH``: importing them fails as if they were not
installed. ``pytest --without EXTRA`` (tests/conftest.py) sets both for the test process and everything it starts, so
that one environment with every extra also runs the quick loop as an environment without them would."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

#: The top-level modules each extra installs (those the project imports).
MODULES = {"dask": ("distributed", "dask"), "web": ("aiohttp",), "browser": ("playwright",)}


class Without:
    """A meta path finder that refuses the modules of some extras, before any other finder is asked."""

    def __init__(self, extras: Sequence[str]) -> None:
        self.extras = tuple(extras)
        self.hidden = {module for extra in extras for module in MODULES[extra]}

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """Refuses a hidden module (and its submodules) as a missing one; anything else is another finder's."""
        if name.partition(".")[0] in self.hidden:
            raise ModuleNotFoundError(f"No module named {name!r} (QUARTO_ARENA_TEST_WITHOUT)", name=name)
        return None


def extras_hidden() -> tuple[str, ...]:
    """The extras ``QUARTO_ARENA_TEST_WITHOUT`` names (an unknown one is an error: a typo must not test nothing)."""
    names = tuple(n for n in os.environ.get("QUARTO_ARENA_TEST_WITHOUT", "").split(",") if n)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        raise SystemExit(f"QUARTO_ARENA_TEST_WITHOUT: unknown extra {unknown[0]!r}; known: {', '.join(MODULES)}")
    return names


def hide(extras: Sequence[str]) -> None:
    """Makes the modules of ``extras`` unimportable in this process (once)."""
    if extras and not any(isinstance(f, Without) for f in sys.meta_path):
        finder = Without(extras)
        for module in list(sys.modules):
            if module.partition(".")[0] in finder.hidden:
                del sys.modules[module]
        sys.meta_path.insert(0, finder)


hide(extras_hidden())
