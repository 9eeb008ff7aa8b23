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
  googletest libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev \
  clang-14 libclang-rt-14-dev >/dev/null

echo "=== Python environment (.venv) ==="
[ -x "$ROOT/.venv/bin/python" ] || python3 -m venv "$ROOT/.venv"
# pip warns once per package about index folders this machine lacks; keep every other message.
pip_install() {
  "$ROOT/.venv/bin/pip" install -q "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}
pip_install --upgrade pip
pip_install torch==2.13.0
if [ "${1:-}" = "--test" ]; then
  pip_install ".[test]"
else
  pip_install .
fi
echo "torchport installed: $("$ROOT/.venv/bin/torchport" --version)"
