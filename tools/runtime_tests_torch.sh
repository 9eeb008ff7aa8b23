#!/usr/bin/env bash
# Runs torchport's runtime tests (tests/python/test_runtime_*.py) under another torch release, in a venv of its
# own, build/venv-torch-<version>: `bash tools/runtime_tests_torch.sh 2.14.1 [pytest options]`. CI runs it for the
# newest torch (README, "Supported torch"); the main venv (.venv) keeps torch 2.13.0.
#
# The venv gets that torch from PyPI (a CUDA build on Linux: it runs without a GPU), the runtime tests'
# dependencies at the versions pyproject.toml's `test` extra pins, and torchport from this source tree as an
# editable install would give it (a .pth naming python/, plus torchport_autohook.pth, so the start-up hook is
# the installed one); the C++ core is $TORCHPORT_CORE, or else one built in build/ (python/torchport/_core.py).
#
# `tools/runtime_tests_torch.sh --download VERSION` only downloads what the venv will install (into
# build/venv-torch-<version>/wheelhouse), and runs nothing: .ci/run starts it in the background at its
# beginning, so that the 2.9 GB come over the network while the core compiles. A later run installs from that
# wheelhouse alone (pip --no-index) when the download finished; otherwise from PyPI, as without it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
download_only=false
if [ "${1:-}" = "--download" ]; then
  download_only=true
  shift
fi
version=${1:?usage: tools/runtime_tests_torch.sh [--download] TORCH_VERSION [pytest options]}
shift
venv=$ROOT/build/venv-torch-$version
t0=$SECONDS

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# torchport's dependencies and the runtime tests', with the pins of the test extra (one a line: markers
# such as `; python_version < '3.11'` stay whole)
reqs=$venv/requirements.txt
python3 - "$version" >"$reqs" <<'PY'
import re, sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = {"pytest", "pytest-xdist", "pytest-rerunfailures", "safetensors", "accelerate", "transformers",
          "pyyaml", "ipykernel", "nbclient", "nbformat"}
test = [d for d in project["optional-dependencies"]["test"]
        if re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower() in wanted]
print("\n".join([f"torch=={sys.argv[1]}", *project["dependencies"], *test]))
PY
# A machine may cap torch in pip's constraints (`pip config list`: global.constraint), so that an unpinned
# `pip install torch` cannot pull a newer CUDA build. This venv pins torch exactly: it keeps every other
# constraint of that file and drops only the torch / torchvision lines.
cons=$venv/constraints.txt
: >"$cons"
for f in $("$venv/bin/pip" config list 2>/dev/null | sed -n "s/^[a-z.:]*constraint='\(.*\)'$/\1/p"); do
  [ -f "$f" ] && grep -v -E '^[[:space:]]*(torch|torchvision)[[:space:]]*([<>=!~;[]|$)' "$f" >>"$cons" || true
done
# pip warns once per package about index folders this machine lacks; keep every other message. pip's own
# cache stays out of it: the wheels are 2.9 GB, and a second copy of them in ~/.cache/pip is what filled
# the disk of one CI machine (stop 42: "No space left on device" while installing)
quiet_pip() {
  PIP_NO_CACHE_DIR=1 PIP_CONSTRAINT=$cons "$venv/bin/pip" "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}
wheels=$venv/wheelhouse
if $download_only; then
  rm -rf "$wheels" "$wheels.done"
  quiet_pip download -q -d "$wheels" -r "$reqs"
  touch "$wheels.done"
  echo "downloaded for torch $version: $(du -sh "$wheels" | cut -f1) in $((SECONDS - t0)) s"
  exit 0
fi
if [ -f "$wheels.done" ]; then
  # an sdist there would need its build tools from the index: then PyPI, as without the download
  quiet_pip install -q --no-index --find-links "$wheels" -r "$reqs" || quiet_pip install -q -r "$reqs"
  # installed: the wheels are not needed again, and they are as big as a second torch
  rm -rf "$wheels" "$wheels.done"
else
  quiet_pip install -q -r "$reqs"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$ROOT/python" >"$site/torchport-src.pth"
cp python/torchport_autohook.pth "$site/"
got=$("$venv/bin/python" -c 'import torch, torchport; print(torch.__version__, torchport.__file__)')
echo "torch and torchport in $venv: $got ($((SECONDS - t0)) s to set up)"
case "$got" in "$version"*"$ROOT/python/torchport/__init__.py") ;; *) echo "wrong torch or torchport" >&2; exit 1 ;; esac

# the rehearsal device is a C++ extension built against this torch (cached per torch version)
"$venv/bin/python" -m torchport rehearse --build
"$venv/bin/python" -m pytest -p no:cacheprovider "$@" tests/python/test_runtime_*.py
echo "runtime tests under torch $version: $((SECONDS - t0)) s in all"
