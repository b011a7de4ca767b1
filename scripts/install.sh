#!/usr/bin/env bash
# Install everything the app and the test suite need, from this project's own files.
#   scripts/install.sh          the package and the app (pip, from pyproject.toml)
#   scripts/install.sh test     plus test tools, Debian's chromium for the browser test,
#                               and pypaimon 2.1 in its own venv (.venv-pypaimon) for interop
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ "${1:-}" = "test" ]; then
  "$PY" -m pip install -q -e ".[test]"
  if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
        || echo "install.sh: could not install chromium; the browser test will skip" >&2
    else
      echo "install.sh: not root, chromium not installed; the browser test will skip" >&2
    fi
  fi
  if [ ! -x .venv-pypaimon/bin/python ]; then
    ("$PY" -m venv .venv-pypaimon && .venv-pypaimon/bin/pip install -q "pypaimon==2.1.*") \
      || echo "install.sh: pypaimon venv not created; interop tests will skip" >&2
  fi
else
  "$PY" -m pip install -q -e .
fi
