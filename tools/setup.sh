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
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  g++ cmake ninja-build python3-venv \
  googletest libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev \
  clang-14 libclang-rt-14-dev >/dev/null

echo "=== Python environment (.venv) ==="
[ -x "$ROOT/.venv/bin/python" ] || python3 -m venv "$ROOT/.venv"
"$ROOT/.venv/bin/pip" install -q --upgrade pip
"$ROOT/.venv/bin/pip" install -q torch==2.13.0
if [ "${1:-}" = "--test" ]; then
  "$ROOT/.venv/bin/pip" install -q ".[test]"
else
  "$ROOT/.venv/bin/pip" install -q .
fi
echo "torchport installed: $("$ROOT/.venv/bin/torchport" --version)"
