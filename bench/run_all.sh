#!/usr/bin/env bash
# Runs every section of docs/benchmarks.md one after another, as issue 11 asks ("every section in one
# session, on a quiet machine"). Each command writes its own log, which starts and ends with the date,
# the load average and the commit, so a reader can see whether the machine was quiet.
#
#   bash bench/run_all.sh OUTDIR [CORE]
#
# CORE: a Release build of the C++ core (default build/mbench/torchport). Takes about 40 minutes on the
# 2-core VM. Needs the test environment (bash tools/setup.sh --test), GNU time, and the rehearsal
# extension built (torchport rehearse --build).
set -euo pipefail
out=${1:?usage: bash bench/run_all.sh OUTDIR [CORE]}
core=${2:-build/mbench/torchport}
cd "$(dirname "$0")/.."
[ -x "$core" ] || { echo "run_all.sh: no core at $core (cmake -S . -B build/mbench -DCMAKE_BUILD_TYPE=Release -DTORCHPORT_BUILD_TESTS=OFF && cmake --build build/mbench)" >&2; exit 2; }
mkdir -p "$out"
export TORCHPORT_CORE=$PWD/$core PYTHONPATH=$PWD/python:$PWD
run() {
  local name=$1; shift
  { echo "== $name: $*"; date -u; cat /proc/loadavg; git rev-parse --short HEAD; } > "$out/$name.log"
  local rc=0
  "$@" >> "$out/$name.log" 2>&1 || rc=$?
  { echo "rc=$rc"; date -u; cat /proc/loadavg; } >> "$out/$name.log"
  echo "$name: rc=$rc"
}
five() {  # a benchmark that prints one run: five runs
  local name=$1; shift
  for i in 1 2 3 4 5; do run "$name$i" "$@"; done
}
run rehearse python bench/rehearse_bench.py --runs 5 --steps 10
run check_ops python bench/check_ops_bench.py
run shapes python bench/shapes_bench.py --repeat 7
five runtime python bench/runtime_bench.py
run storage python bench/storage_bench.py --mib 1024 --files 64 --repeat 5
run verify20 python bench/verify_bench.py --steps 20 --repeat 5
run verify100 python bench/verify_bench.py --steps 100 --repeat 5
five probe python bench/probe_bench.py
run peers python bench/migrate_vs_peers_bench.py --skip libcst --skip libcst2 --repeat 5
run migrate python bench/migrate_bench.py --core "$core" --repeat 5
run third_party python bench/third_party_bench.py --core "$core" --runs 5
run large_file python bench/large_file_bench.py --repeat 5
run large_dense50 python bench/large_file_bench.py --repeat 5 --sizes 50 --kinds dense
run parse python bench/parse_bench.py --repeat 5
five lexer python bench/lexer_bench.py
# Last: it writes 8 x 1.4 GB, whose page-cache writeback would be measured by whatever ran next.
run scale python bench/migrate_site_packages.py --core "$core" --jobs 2
