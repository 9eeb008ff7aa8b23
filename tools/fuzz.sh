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
# Targets run TORCHPORT_FUZZ_JOBS at a time (default: the number of CPUs; each target is one
# single-threaded process), so the whole run takes about SECONDS x targets / jobs.
# The last line of each target's report (runs, time) goes to build/fuzz/summary.tsv.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seed=${2:-0}
python=${PYTHON:-.venv/bin/python}
jobs=${TORCHPORT_FUZZ_JOBS:-$(nproc)}
mkdir -p build/fuzz/artifacts build/fuzz/logs build/fuzz/seeds
summary=build/fuzz/summary.tsv
[ -f "$summary" ] || printf 'target\tseconds\tseed\truns\tresult\n' >"$summary"
status=build/fuzz/status
rm -rf "$status"
mkdir -p "$status"
names=()

run_one() {  # name, extra seed directory ("" for none), command... (runs in the background)
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
    printf '%s\t%s\t%s\t%s\tFAILED (exit %s)\n' "$name" "$((SECONDS - start))" "$seed" "${runs:-?}" "$rc" \
      >"$status/$name"
  else
    printf '%s\t%s\t%s\t%s\tclean\n' "$name" "$((SECONDS - start))" "$seed" "${runs:-?}" >"$status/$name"
  fi
}

# start() runs one target in the background, waiting first while `jobs` targets are running
start() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  names+=("$1")
  run_one "$@" &
}

for fuzzer in build/fuzz/*_fuzzer; do
  [ -f "$fuzzer" ] && [ -x "$fuzzer" ] || continue  # not the corpus-<name> folders
  name=$(basename "$fuzzer")
  [ -n "${TORCHPORT_FUZZ_ONLY:-}" ] && [ "$name" != "$TORCHPORT_FUZZ_ONLY" ] && continue
  start "$name" build/fuzz/seeds "$fuzzer"
done
for target in fuzz/python/*_fuzz.py; do
  name=$(basename "$target" .py)
  [ -n "${TORCHPORT_FUZZ_ONLY:-}" ] && [ "$name" != "$TORCHPORT_FUZZ_ONLY" ] && continue
  start "$name" "" env PYTHONPATH=python "$python" "$target"
done
wait

# the reports, in the order the targets started
failed=()
for name in "${names[@]}"; do
  line=$(cat "$status/$name" 2>/dev/null || printf '%s\t?\t%s\t?\tFAILED (no status)\n' "$name" "$seed")
  printf '%s\n' "$line" >>"$summary"
  IFS=$'\t' read -r _ took _ runs result <<<"$line"
  if [ "$result" = clean ]; then
    printf '%s: clean, %s runs in %s s\n' "$name" "$runs" "$took"
  else
    printf '\n=== fuzz target %s %s: its whole report (build/fuzz/logs/%s.log) ===\n' "$name" "$result" "$name"
    cat "build/fuzz/logs/$name.log"
    printf '=== end of %s; the crash input is in build/fuzz/artifacts/%s-* ===\n' "$name" "$name"
    failed+=("$name")
  fi
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz targets that failed: ${failed[*]}"
  exit 1
fi
