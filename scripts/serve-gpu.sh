#!/usr/bin/env bash
# Start the gpu profile's vLLM servers on one 8-GPU node, for operators who prefer a shell script to `avi serve`.
#
# These are the commands `avi serve --dry-run` prints for the default layout (tests/test_serve.py checks they
# match, so edit both together; a custom layout belongs in avi.toml's [serve] table, used by `avi serve`):
#
#   GPU 0,1   orchestrator  Qwen3-32B, tensor parallel 2                     127.0.0.1:8000
#   GPU 2-6   vlm           Qwen3-VL-8B-Instruct, 5 data-parallel replicas    127.0.0.1:8001
#   GPU 7     embedder      Qwen3-Embedding-4B (memory 0.45) + in-process CV tools   127.0.0.1:8002
#
# Weights are read from $AVI_MODELS_DIR (default <repo>/models), logs go to <home>/logs/serve/<role>.log
# (home: $AVI_HOME, default ${XDG_CACHE_HOME:-~/.cache}/avi). The VLM reads the frames avi sends it as files
# from <home>/vlm-media (--allowed-local-media-path; avi writes there when AVI_VLM_MEDIA_DIR is set, as printed at
# the end). Ctrl-C or SIGTERM stops every server; so does one server exiting. Usage: scripts/serve-gpu.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODELS="${AVI_MODELS_DIR:-$ROOT/models}"
HOME_DIR="${AVI_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/avi}"
LOGS="$HOME_DIR/logs/serve"
MEDIA="$HOME_DIR/vlm-media"
START_TIMEOUT_S="${START_TIMEOUT_S:-1200}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
mkdir -p "$LOGS" "$MEDIA"

PIDS=()
ROLES=()

start() {  # start ROLE GPUS COMMAND...: one server in its own process group, output in $LOGS/ROLE.log
  local role=$1 gpus=$2
  shift 2
  echo "# CUDA_VISIBLE_DEVICES=$gpus $*" >"$LOGS/$role.log"
  CUDA_VISIBLE_DEVICES=$gpus setsid "$@" >>"$LOGS/$role.log" 2>&1 &
  PIDS+=("$!")
  ROLES+=("$role")
  echo "started $role (pid $!, GPUs $gpus); log $LOGS/$role.log"
}

stop() {  # SIGTERM every server's process group, wait up to 30 s, then SIGKILL
  trap - EXIT INT TERM
  local pid i
  for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for i in $(seq 30); do
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && break; pid=; done
    [ -z "${pid:-}" ] && break
    sleep 1
  done
  for pid in "${PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  echo "stopped ${#PIDS[@]} server(s)"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wait_ready() {  # wait_ready ROLE PID PORT NAME: until GET /v1/models lists NAME
  local role=$1 pid=$2 port=$3 name=$4 t=0
  until curl -sf "http://127.0.0.1:$port/v1/models" 2>/dev/null | grep -q "\"$name\""; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "error: $role server exited before it was ready; last lines of $LOGS/$role.log:" >&2
      tail -n 5 "$LOGS/$role.log" >&2
      exit 1
    fi
    if [ "$t" -ge "$START_TIMEOUT_S" ]; then
      echo "error: $role server did not list $name within $START_TIMEOUT_S s; see $LOGS/$role.log" >&2
      exit 1
    fi
    sleep 2
    t=$((t + 2))
  done
  echo "ready  $role  http://127.0.0.1:$port/v1  ($name)"
}

# --host/--port come last (as avi serve puts them): nothing before them can bind another address
start orchestrator 0,1 vllm serve "$MODELS/llm/Qwen3-32B" --served-model-name qwen3-32b \
  --tensor-parallel-size 2 --max-model-len 32768 \
  --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3 --host 127.0.0.1 --port 8000
start vlm 2,3,4,5,6 vllm serve "$MODELS/vlm/Qwen3-VL-8B-Instruct" --served-model-name qwen3-vl-8b \
  --data-parallel-size 5 --max-model-len 65536 --allowed-local-media-path "$MEDIA" \
  --limit-mm-per-prompt '{"image": 64, "video": 0}' --host 127.0.0.1 --port 8001
start embedder 7 vllm serve "$MODELS/embedder/Qwen3-Embedding-4B" --served-model-name qwen3-embedding-4b \
  --max-model-len 8192 --gpu-memory-utilization 0.45 \
  --runner pooling --host 127.0.0.1 --port 8002

wait_ready orchestrator "${PIDS[0]}" 8000 qwen3-32b
wait_ready vlm "${PIDS[1]}" 8001 qwen3-vl-8b
wait_ready embedder "${PIDS[2]}" 8002 qwen3-embedding-4b

cat <<'EOF'
# for avi processes (ask, index, batch):
export AVI_PROFILE=gpu
export AVI_LLM_BASE_URL=http://127.0.0.1:8000/v1
export AVI_LLM_MODEL=qwen3-32b
export AVI_VLM_BASE_URL=http://127.0.0.1:8001/v1
export AVI_VLM_MODEL=qwen3-vl-8b
EOF
echo "export AVI_VLM_MEDIA_DIR=$MEDIA"
cat <<'EOF'
export AVI_EMBEDDER_BASE_URL=http://127.0.0.1:8002/v1
export AVI_EMBEDDER_MODEL=qwen3-embedding-4b
export CUDA_VISIBLE_DEVICES=7
EOF
echo "serving; Ctrl-C or SIGTERM stops every server"
wait -n "${PIDS[@]}" || true
echo "error: a server exited; stopping the others (logs in $LOGS)" >&2
exit 1
