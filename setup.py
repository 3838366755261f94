"""Builds the solver's C core; all other metadata is in pyproject.toml.

The extension is optional, as msgpack's and PyYAML's are: where it cannot be compiled (no compiler, no Python
headers) the build warns and goes on, and quarto_arena.protocol.solver uses its pure-Python mirror.
"""

from __future__ import annotations

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """Optimises for speed with compilers that take GCC's flags (the search is the whole point of the module)."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "unix":
            for ext in self.extensions:
                ext.extra_compile_args = ["-O3", *ext.extra_compile_args]
        super().build_extensions()


setup(
    ext_modules=[
        Extension("quarto_arena.protocol._solver", ["protocol/_solver.c"], optional=True),
        Extension("quarto_arena.arena._turns", ["arena/_turns.c"], optional=True),
    ],
    cmdclass={"build_ext": BuildExt},
)
