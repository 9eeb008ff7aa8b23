#!/usr/bin/env bash
# The README's first command: install torchport (tools/setup.sh), then run its main job on the
# example CUDA project shipped in examples/cuda_project:
#   1. analyze it for Ascend (npu): what is CUDA-specific, what will not work there;
#   2. migrate it for npu, writing the rewritten project and Ascend-compatible reports;
#   3. migrate it for cpu and train the migrated copy for a few steps on this machine, where the
#      original (which needs CUDA) cannot run;
#   4. train the npu-migrated copy on this machine too, under `torchport rehearse --target npu`;
#   5. verify that the migrated project trains like the original (`torchport verify`: a verdict and,
#      when they differ, the first step and layer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
OUT=build/quickstart
mkdir -p "$OUT"

echo; echo "=== torchport analyze examples/cuda_project --target npu ==="
torchport analyze examples/cuda_project --target npu || true   # exit 1 = findings, by design

echo; echo "=== torchport migrate examples/cuda_project -o $OUT --target npu ==="
torchport migrate examples/cuda_project -o "$OUT" --target npu --force
echo; echo "--- $OUT/cuda_project_npu/torchport-report/change_list.csv (first rows) ---"
head -n 12 "$OUT/cuda_project_npu/torchport-report/change_list.csv"

echo; echo "=== torchport migrate examples/cuda_project -o $OUT --target cpu, then train it ==="
torchport migrate examples/cuda_project -o "$OUT" --target cpu --force -q
(cd "$OUT/cuda_project_cpu" && python train.py --steps 3 --out "$PWD/ckpt.pt")
echo; echo "=== train the npu-migrated copy here, on the rehearsal device: torchport rehearse --target npu ==="
(cd "$OUT/cuda_project_npu" && torchport rehearse --target npu --memory 32GiB train.py --steps 3 --out "$PWD/ckpt.pt")
echo; echo "=== does the migrated project train like the original? torchport verify ==="
torchport verify examples/cuda_project --target cpu --steps 3 -- --steps 3 --out ckpt.pt
echo; echo "Done. The npu project is in $OUT/cuda_project_npu, its reports in torchport-report/"
echo "(open $OUT/cuda_project_npu/torchport-report/index.html in a browser)."
