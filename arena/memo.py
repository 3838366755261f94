"""Values a run asks for once a game, remembered by the identity of what they depend on.

A run's games share one variant and one pair of time controls (the same objects); ``functools.lru_cache`` on them
hashes the frozen dataclass on every call, which runs Python code (the dataclass's ``__hash__`` and each enum
member's). :func:`by_identity` looks the objects up by ``id`` first and falls back to the function, so its answers
are the function's own; the cache holds the objects, so an ``id`` cannot be reused while its entry exists.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, TypeVar

__all__ = ["by_identities", "by_identity"]

A = TypeVar("A")
B = TypeVar("B")
R = TypeVar("R")

SIZE: Final = 64
"""Entries kept before a cache starts again (a run uses one or two)."""


def by_identity(function: Callable[[A], R]) -> Callable[[A], R]:
    """``function`` of one argument, remembered by the argument's identity."""
    cache: dict[int, tuple[A, R]] = {}

    @functools.wraps(function)
    def remembered(argument: A) -> R:
        found = cache.get(id(argument))
        if found is not None and found[0] is argument:
            return found[1]
        value = function(argument)
        if len(cache) >= SIZE:
            cache.clear()
        cache[id(argument)] = (argument, value)
        return value

    return remembered


def by_identities(function: Callable[[A, B], R]) -> Callable[[A, B], R]:
    """``function`` of two arguments, remembered by both arguments' identities."""
    cache: dict[tuple[int, int], tuple[A, B, R]] = {}

    @functools.wraps(function)
    def remembered(a: A, b: B) -> R:
        found = cache.get((id(a), id(b)))
        if found is not None and found[0] is a and found[1] is b:
            return found[2]
        value = function(a, b)
        if len(cache) >= SIZE:
            cache.clear()
        cache[id(a), id(b)] = (a, b, value)
        return value

    return remembered
