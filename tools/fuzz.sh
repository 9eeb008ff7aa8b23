#!/usr/bin/env bash
# Runs every fuzz target: the libFuzzer ones of fuzz/*_fuzzer.cc (built by .ci/run into build/fuzz)
# and the Atheris ones of fuzz/python/*_fuzz.py, each for SECONDS, seeded with the committed
# regression corpus (fuzz/corpus/<name>/: every input that ever crashed one, so a fixed bug stays
# fixed) and the seeds .ci/run copies into build/fuzz/seeds. Crash inputs go to
# build/fuzz/artifacts/. A target that fails prints its whole report, under its name, and the run
# exits 1 after the others have run.
#
#   bash tools/fuzz.sh [SECONDS] [SEED]     # SECONDS default 60; SEED default 0 (libFuzzer picks)
#   TORCHPORT_FUZZ_ONLY=parse_fuzzer bash tools/fuzz.sh 1800     # one target, a campaign
#
# The last line of each target's report (runs, time) goes to build/fuzz/summary.tsv.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seed=${2:-0}
python=${PYTHON:-.venv/bin/python}
mkdir -p build/fuzz/artifacts build/fuzz/logs build/fuzz/seeds
summary=build/fuzz/summary.tsv
[ -f "$summary" ] || printf 'target\tseconds\tseed\truns\tresult\n' >"$summary"
failed=()

run_one() {  # name, extra seed directory ("" for none), command...
  local name=$1 extra=$2
  shift 2
  local log=build/fuzz/logs/$name.log
  mkdir -p "build/fuzz/corpus-$name"
  local dirs=("build/fuzz/corpus-$name")
  [ -d "fuzz/corpus/$name" ] && dirs+=("fuzz/corpus/$name")
  [ -n "$extra" ] && dirs+=("$extra")
  local start=$SECONDS
  "$@" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -seed="$seed" \
    -artifact_prefix="build/fuzz/artifacts/$name-" "${dirs[@]}" >"$log" 2>&1
  local rc=$?
  local runs
  runs=$(grep -oE '^(Done|#)[ ]?[0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+$')
  if [ "$rc" -ne 0 ]; then
    printf '%s\t%s\t%s\t%s\tFAILED (exit %s)\n' "$name" "$((SECONDS - start))" "$seed" "${runs:-?}" "$rc" >>"$summary"
    printf '\n=== fuzz target %s FAILED (exit %s): its whole report (%s) ===\n' "$name" "$rc" "$log"
    cat "$log"
    printf '=== end of %s; the crash input is in build/fuzz/artifacts/%s-* ===\n' "$name" "$name"
    failed+=("$name")
  else
    printf '%s\t%s\t%s\t%s\tclean\n' "$name" "$((SECONDS - start))" "$seed" "${runs:-?}" >>"$summary"
    printf '%s: clean, %s runs in %s s\n' "$name" "${runs:-?}" "$((SECONDS - start))"
  fi
}

for fuzzer in build/fuzz/*_fuzzer; do
  [ -f "$fuzzer" ] && [ -x "$fuzzer" ] || continue  # not the corpus-<name> folders
  name=$(basename "$fuzzer")
  [ -n "${TORCHPORT_FUZZ_ONLY:-}" ] && [ "$name" != "$TORCHPORT_FUZZ_ONLY" ] && continue
  run_one "$name" build/fuzz/seeds "$fuzzer"
done
for target in fuzz/python/*_fuzz.py; do
  name=$(basename "$target" .py)
  [ -n "${TORCHPORT_FUZZ_ONLY:-}" ] && [ "$name" != "$TORCHPORT_FUZZ_ONLY" ] && continue
  PYTHONPATH=python run_one "$name" "" "$python" "$target"
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz targets that failed: ${failed[*]}"
  exit 1
fi
