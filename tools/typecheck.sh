#!/usr/bin/env bash
# mypy cannot follow setuptools' package-dir mapping (protocol/ -> quarto_arena.protocol) nor the editable
# install's import hook, so we give it the installed layout as a farm of symlinks and check the three packages.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
farm="$here/.mypy_cache/layout"
mkdir -p "$farm/quarto_arena"
for pkg in protocol arena engines; do
  ln -sfn "$here/$pkg" "$farm/quarto_arena/$pkg"
done
cd "$here"
MYPYPATH="$farm" exec "${PYTHON:-python}" -m mypy -p quarto_arena.protocol -p quarto_arena.arena -p quarto_arena.engines "$@"
