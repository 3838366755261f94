"""Values a run asks for once a game or once a turn, made cheaply: remembered by the identity of what they depend
on, or, for frozen dataclasses, built by setting their slots (:func:`slot_setters`).

A run's games share one variant and one pair of time controls (the same objects); ``functools.lru_cache`` on them
hashes the frozen dataclass on every call, which runs Python code (the dataclass's ``__hash__`` and each enum
member's). :func:`by_identity` looks the objects up by ``id`` first and falls back to the function, so its answers
are the function's own; the cache holds the objects, so an ``id`` cannot be reused while its entry exists.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = ["by_identities", "by_identity", "slot_setters"]

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


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setter of each field of a frozen dataclass with slots, in the order of its fields.

    ``object.__new__(cls)`` then one call of each, in order, make the value ``cls(...)`` makes (equal, same hash,
    still frozen) at under half the cost: a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``. For the values the arena makes once a turn or once a game; a ``__post_init__`` is not
    run, so its caller checks what it checks. Tests hold each such maker to its class."""
    return tuple(vars(cls)[f.name].__set__ for f in dataclasses.fields(cls))
