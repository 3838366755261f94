"""Values a run asks for once a game or once a turn, made cheaply: the one module for both devices.

- Remembered answers (:func:`by_identity`, :func:`by_identities`). A run's games share one variant, one pair of
  time controls, one opening per pair (the same objects); ``functools.lru_cache`` on them hashes the frozen
  dataclass on every call, which runs Python code (the dataclass's ``__hash__`` and each enum member's). These look
  the objects up by ``id`` first and fall back to the function, so their answers are the function's own; the cache
  holds the objects, so an ``id`` cannot be reused while its entry exists. Every identity cache of the arena is one
  of these: a new one is a decorator, not a dict of its own.
- Frozen dataclasses built by setting their slots (:func:`maker`): a frozen dataclass's ``__init__`` sets each
  field through ``object.__setattr__``; the maker, written from ``dataclasses.fields`` as arena/codec.py writes its
  coders, sets the slots directly. A field added to the class is in its maker with no other edit.

Both are speed devices, and the budget of CONTRIBUTING.md applies: a new one comes with a figure from a run users
make.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Final, TypeVar, overload

__all__ = ["SIZE", "by_identities", "by_identity", "maker"]

A = TypeVar("A")
R = TypeVar("R")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

SIZE: Final = 64
"""Entries kept before a cache starts again (a run uses one or two)."""
_BY_VALUE: Final = (int, str)
"""The argument types looked up by value (hashed in C, and made anew by arithmetic: a game's number is not the same
object in the two games of a pair); any other argument is looked up by identity."""


def by_identity(function: Callable[[A], R]) -> Callable[[A], R]:
    """``function`` of one argument, remembered by the argument's identity (the common case, at its least cost)."""
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


@overload
def by_identities(function: F, /) -> F: ...
@overload
def by_identities(*, size: int = SIZE) -> Callable[[F], F]: ...
def by_identities(function: F | None = None, /, *, size: int = SIZE) -> F | Callable[[F], F]:
    """``function`` of positional arguments, remembered by their identities (ints and strings by value); with
    ``size``, keeping that many answers before starting again."""

    def decorate(function: F) -> F:
        cache: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}

        @functools.wraps(function)
        def remembered(*args: Any) -> Any:
            key = tuple([a if type(a) in _BY_VALUE else id(a) for a in args])
            found = cache.get(key)
            if found is not None and all([a is b for a, b in zip(found[0], args, strict=True)]):
                return found[1]
            value = function(*args)
            if len(cache) >= size:
                cache.clear()
            cache[key] = (args, value)
            return value

        return remembered  # type: ignore[return-value]

    return decorate if function is None else decorate(function)


_MISSING: Final = dataclasses.MISSING


def maker(cls: type[T]) -> Callable[..., T]:
    """A function of keyword arguments, one per field of the frozen slotted dataclass ``cls`` (a field's default,
    or its factory's value, when it is not given), that makes the value ``cls(...)`` makes (equal, same hash, still
    frozen) at under half the cost, by setting its slots directly. For the values the arena makes once a turn or once
    a game; a ``__post_init__`` is not run, so the caller checks what it checks. Keyword arguments, so that a field
    added in the middle of the class cannot shift the others' values.

    Written once per class from ``dataclasses.fields`` and compiled (as dataclasses write ``__init__``, and as
    arena/codec.py writes its coders); tests/test_serialized.py holds each maker of the arena to its class."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not all(f.init for f in fields):
        raise TypeError(f"{cls.__name__} has fields its __post_init__ derives: make it with {cls.__name__}(...)")
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_MISSING": _MISSING}
    params, body = [], []
    for i, f in enumerate(fields):
        namespace[f"_set{i}"] = vars(cls)[f.name].__set__
        if f.default is not _MISSING:
            namespace[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        elif f.default_factory is not _MISSING:
            namespace[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"    if {f.name} is _MISSING:\n        {f.name} = _factory{i}()")
        else:
            params.append(f.name)
        body.append(f"    _set{i}(value, {f.name})")
    head = f"def make_{cls.__name__}(*, {', '.join(params)}):\n    value = _new(_cls)\n"
    source = head + "\n".join(body) + "\n    return value\n"
    exec(source, namespace)  # source written here, from the class's own fields
    made: Callable[..., T] = namespace[f"make_{cls.__name__}"]
    made.__qualname__ = made.__name__
    made.__doc__ = f"``{cls.__name__}(...)`` of keyword arguments, its slots set directly (:func:`memo.maker`)."
    return made
