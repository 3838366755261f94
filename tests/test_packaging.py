"""The three folders install under quarto_arena.*, every package is listed, and no generic name leaks."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"protocol": "quarto_arena.protocol", "arena": "quarto_arena.arena", "engines": "quarto_arena.engines"}


def _listed_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def _packages_on_disk() -> set[str]:
    found = set()
    for folder, dotted in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([dotted, *rel.parts]))
    return found | _data_folders()


def _data_folders() -> set[str]:
    """Folders below a package that hold its data files (the pages' assets, the starter bots' templates):
    setuptools treats each as a package."""
    found = set()
    roots = ((ROOT / "arena" / "web", "quarto_arena.arena.web"), (STARTERS, "quarto_arena.engines.starters"))
    for root, dotted in roots:
        found |= {
            ".".join([dotted, *p.parent.relative_to(root).parts])
            for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.parent != root
        }
    return found


STARTERS = ROOT / "engines" / "starters"


def test_every_data_folder_is_a_listed_package() -> None:
    # A data folder left out of the list ships anyway, but every build then prints setuptools' ~80-line warning
    # per folder ("Package ... is absent from the `packages` configuration").
    missing = _data_folders() - _listed_packages()
    assert not missing, f"add these data folders to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_every_package_folder_is_listed_in_pyproject() -> None:
    missing = _packages_on_disk() - _listed_packages()
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_every_listed_package_exists() -> None:
    stale = _listed_packages() - _packages_on_disk()
    assert not stale, f"listed in pyproject.toml but not on disk: {sorted(stale)}"


def test_each_package_ships_py_typed() -> None:
    for folder in FOLDERS:
        assert (ROOT / folder / "py.typed").exists(), f"{folder}/py.typed is missing"


def test_no_generic_name_is_importable(tmp_path: Path) -> None:
    # Run from an empty directory so that the checkout itself is not on sys.path.
    code = (
        "import importlib.util, sys\n"
        "leaks = [n for n in ('protocol', 'arena', 'engines') if importlib.util.find_spec(n) is not None]\n"
        "import quarto_arena.protocol.rules, quarto_arena.arena.cli, quarto_arena.engines\n"
        "print(','.join(leaks))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"generic top-level names importable: {out.stdout.strip()}"


def _package_data() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(config["tool"]["setuptools"].get("package-data", {}))


def test_every_file_the_web_pages_need_is_package_data() -> None:
    # The report and the live page read their script, style, templates and the charting library from the installed
    # package: a file left out of package-data works in a checkout and breaks in the wheel.
    web = ROOT / "arena" / "web"
    files = {p for p in web.rglob("*") if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts}
    assert files, "arena/web has no static files"
    shipped = set()
    for package, globs in _package_data().items():
        if package.startswith("quarto_arena.arena.web"):
            where = web.joinpath(*package.split(".")[3:])
            shipped |= {p for g in globs for p in where.glob(g)}  # resolved this way when the wheel is built
    missing = sorted(p.relative_to(web).as_posix() for p in files - shipped)
    assert not missing, f"add to [tool.setuptools.package-data] (the file's folder as a package): {missing}"


def test_every_starter_template_is_package_data() -> None:
    # quarto-arena new-bot copies these from the installed package: one left out works here and breaks in the wheel.
    from quarto_arena.engines.starters import STARTERS as LANGUAGES

    files = {STARTERS / language / name for language, starter in LANGUAGES.items() for name in starter.files}
    assert all(f.is_file() for f in files), sorted(str(f) for f in files if not f.is_file())
    shipped = {f for f in files if f.suffix == ".py"}  # modules of a listed package ship as code
    for package, globs in _package_data().items():
        if package.startswith("quarto_arena.engines.starters."):
            where = STARTERS.joinpath(*package.split(".")[3:])
            shipped |= {p for g in globs for p in where.glob(g)}
    missing = sorted(p.relative_to(STARTERS).as_posix() for p in files - shipped)
    assert not missing, f"add to [tool.setuptools.package-data] (the file's folder as a package): {missing}"


def test_the_charting_library_ships_with_its_licences() -> None:
    vendor = ROOT / "arena" / "web" / "static" / "vendor"
    for script, licence in (
        ("chart.umd.min.js", "chart.js.LICENSE.md"),
        ("chartjs-chart-matrix.min.js", "chartjs-chart-matrix.LICENSE"),
    ):
        assert (vendor / script).is_file()
        assert "MIT License" in (vendor / licence).read_text() or "MIT license" in (vendor / licence).read_text()


def _extensions() -> dict[str, tuple[list[str], bool]]:
    """The ``Extension(name, sources, optional=...)`` calls of setup.py, read without running it."""
    found = {}
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Extension":
            name, sources = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[1])
            optional = any(k.arg == "optional" and ast.literal_eval(k.value) is True for k in node.keywords)
            found[name] = (sources, optional)
    return found


def test_every_c_module_is_an_optional_extension_with_a_stub() -> None:
    """A C module in a package folder (not the example bot in engines/c) is built by setup.py, optionally, so that
    an install without a compiler still works; its types come from a .pyi shipped next to it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = config["tool"]["setuptools"]["package-data"]
    extensions = _extensions()
    for folder, dotted in FOLDERS.items():
        for source in (ROOT / folder).rglob("*.c"):
            if source.parent == ROOT / "engines" / "c" or STARTERS in source.parents:
                continue  # bots' sources, not extensions
            rel = source.relative_to(ROOT / folder)
            module = ".".join([dotted, *rel.parent.parts, source.stem])
            assert module in extensions, f"setup.py builds no extension {module} from {source.relative_to(ROOT)}"
            sources, optional = extensions[module]
            assert sources == [str(source.relative_to(ROOT))] and optional, f"{module}: {sources}, optional={optional}"
            assert source.with_suffix(".pyi").exists(), f"{module} has no type stub"
            package = ".".join([dotted, *rel.parent.parts])
            assert source.with_suffix(".pyi").name in package_data.get(package, []), f"ship {module}'s .pyi"
    assert extensions, "setup.py declares the solver's C core"


def test_the_cluster_package_imports_without_dask_and_dask_is_an_extra() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert not any(d.startswith("distributed") for d in config["project"]["dependencies"])
    assert any(d.startswith("distributed") for d in config["project"]["optional-dependencies"]["dask"])
    # Without the extra (here: its import made to fail), the package and the CLI still import.
    code = (
        "import sys; sys.modules['distributed'] = sys.modules['dask'] = None\n"
        "import quarto_arena.arena.cluster, quarto_arena.arena.cli\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_the_readme_ci_recipe_installs_from_the_repository() -> None:
    # quarto-arena is on no package index: "pip install quarto-arena" fails a copied job before any game. The recipe
    # checks the repository out beside the bot's (path: P) and installs ./P; .ci/readme-recipe runs that line.
    readme = (ROOT / "README.md").read_text()
    installs = re.findall(r"^ *- run: pip install (\S+)$", readme, re.M)
    assert len(installs) == 1, installs
    paths = re.findall(r"^ *with: \{.*repository: [^,]+,.*path: ([^ ,}]+).*\}$", readme, re.M)
    assert installs[0].startswith("git+https://") or [f"./{p}" for p in paths] == installs, (installs, paths)
    assert '"quarto-arena[dask]"' not in readme.replace('pip install "quarto-arena[dask]"`', "")
    assert (ROOT / ".ci" / "readme-recipe").stat().st_mode & 0o111
    assert ".ci/readme-recipe" in (ROOT / ".ci" / "run").read_text()
