"""quarto_arena.arena: runs engine processes and games, tournaments, statistics and the CLI."""

from __future__ import annotations


def package_version() -> str:
    """The installed quarto-arena version (``--version``; a cluster's coordinator and workers must run the same)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("quarto-arena")
    except PackageNotFoundError:
        return "unknown"
