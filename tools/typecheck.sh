#!/usr/bin/env bash
# Strict mypy over quarto_arena's three packages, errors at the files' real paths (tools/typecheck.py says how).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec "${PYTHON:-python}" "$here/tools/typecheck.py" "$@"
