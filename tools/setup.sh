#!/usr/bin/env bash
# Installs what torchport needs on a fresh Debian 12 machine and installs torchport itself into
# .venv (with torch 2.13.0, the CPU build). Used by both README commands: tools/quickstart.sh and
# .ci/run. Idempotent. Pass --test to also install the test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

echo "=== Debian packages ==="
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
  g++ cmake ninja-build python3-venv python3-dev \
  googletest libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libmimalloc-dev \
  clang-14 libclang-rt-14-dev >/dev/null
if [ "${1:-}" = "--test" ]; then
  # the report pages' browser tests (tests/python/test_pages_browser.py)
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    chromium chromium-driver >/dev/null
fi

echo "=== Python environment (.venv) ==="
[ -x "$ROOT/.venv/bin/python" ] || python3 -m venv "$ROOT/.venv"
# pip warns once per package about index folders this machine lacks; keep every other message.
pip_install() {
  "$ROOT/.venv/bin/pip" install -q "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}
pip_install --upgrade pip
pip_install torch==2.13.0
if [ "${1:-}" = "--test" ]; then
  # The sdist, then the wheel built from that sdist (as pip builds one from PyPI), installed with the
  # test extras. tools/wheel_check.sh checks this same wheel (WHEEL_CHECK_REUSE=1, as .ci/run does)
  # instead of compiling the core a second time.
  pip_install build==1.6.1
  rm -rf build/dist
  mkdir -p build/dist
  # Debian's cmake (a native binary): scikit-build-core gives `cmake --version` a few seconds, which a
  # Python-wrapper cmake earlier on PATH can miss on a busy machine
  [ -x /usr/bin/cmake ] && export CMAKE_EXECUTABLE="${CMAKE_EXECUTABLE:-/usr/bin/cmake}"
  "$ROOT/.venv/bin/python" -m build --outdir build/dist . >build/dist/build.log 2>&1 \
    || { tail -n 40 build/dist/build.log; exit 1; }
  wheel=$(ls build/dist/torchport-*.whl)
  pip_install "$wheel[test]"
  # the same version may be installed already (a second run): the new build replaces it
  pip_install --no-deps --force-reinstall "$wheel"
  # The corpus projects' own dependencies (never torchport's), apart from .venv, for
  # tests/corpus/entry.py; reinstalled only when tests/corpus/requirements.txt changes.
  # pip compares what it puts in that directory with .venv's packages, and they conflict on purpose:
  # librosa 0.9 needs a setuptools older than torch's minimum, datasets pins an fsspec older than s3fs's,
  # and the python-dateutil they get is newer than botocore's limit (as measured in a CI log). Only the
  # corpus harnesses see the two together, and they use neither s3fs nor botocore nor torch's setuptools.
  # So pip's resolver report (its "ERROR" lines) is switched off with --no-warn-conflicts, and the
  # expected conflict is said in one line.
  deps="$ROOT/build/corpus-deps"
  if ! cat tests/corpus/requirements*.txt | cmp -s - "$deps/.requirements.txt"; then
    rm -rf "$deps"
    pip_install --no-warn-conflicts --target "$deps" -r tests/corpus/requirements.txt
    # both installs make bin/: pip keeps the first's and says so; the harnesses run no script from it
    pip_install --no-warn-conflicts --target "$deps" --no-deps -r tests/corpus/requirements-nodeps.txt \
      2> >(grep -v "^WARNING: Target directory .*/bin already exists" >&2)
    cat tests/corpus/requirements*.txt > "$deps/.requirements.txt"
    echo "corpus dependencies: build/corpus-deps (apart from .venv; their setuptools, fsspec and" \
      "python-dateutil differ from what .venv's packages ask, on purpose: pip's conflict check is off)"
  fi
else
  pip_install .
fi
echo "torchport installed: $("$ROOT/.venv/bin/torchport" --version)"
