#!/usr/bin/env bash
# Install everything the app and the test suite need, from this project's own files.
#   scripts/install.sh          the package and the app (pip, from pyproject.toml)
#   scripts/install.sh test     plus test tools, Paimon's native readers (mosaic, vector, fulltext extras), Debian's chromium for the browser test,
#                               and pypaimon 2.1 in its own venv (.venv-pypaimon) for interop,
#                               and the live oracles of the differential tests and benches:
#                               Paimon Java's bundle jar from the paimon-python-ali wheel
#                               (.oracles/paimon-bundle.jar) and pypaimon-rust (.venv-rust)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ "${1:-}" = "test" ]; then
  "$PY" -m pip install -q -e ".[test,mosaic,vector,fulltext]"
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
  # pypaimon builds vector and full-text global indexes with Paimon's native libraries (numpy it has)
  if [ -x .venv-pypaimon/bin/python ]; then
    .venv-pypaimon/bin/pip install -q --no-deps "paimon-vindex==0.5.0" "paimon-ftindex==0.1.0" \
      || echo "install.sh: paimon-vindex/paimon-ftindex not in .venv-pypaimon; pypaimon index tests will skip" >&2
  fi
  # Paimon Java (paimon-bundle 1.0 with Hadoop) ships inside the paimon-python-ali wheel.
  JAR=paimon_python_java/java_dependencies/paimon-python-java-bridge.jar
  if [ ! -s .oracles/paimon-bundle.jar ]; then
    (mkdir -p .oracles/dl && "$PY" -m pip download -q --no-deps "paimon-python-ali==0.1.1" -d .oracles/dl \
      && "$PY" -c "import glob,sys,zipfile; z=zipfile.ZipFile(glob.glob('.oracles/dl/paimon_python_ali-*.whl')[0]); open('.oracles/paimon-bundle.jar','wb').write(z.read(sys.argv[1]))" "$JAR" \
      && rm -rf .oracles/dl) \
      || echo "install.sh: Paimon Java jar not fetched; Java oracle tests will skip" >&2
  fi
  # pypaimon-rust pins nothing we lack: its own venv sees our pyarrow (system site packages).
  if [ ! -x .venv-rust/bin/python ]; then
    ("$PY" -m venv --system-site-packages .venv-rust && .venv-rust/bin/pip install -q --no-deps "pypaimon-rust==0.4.0") \
      || echo "install.sh: pypaimon-rust venv not created; rust oracle checks will skip" >&2
  fi
else
  "$PY" -m pip install -q -e .
fi
