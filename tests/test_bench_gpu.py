"""scripts/bench_gpu.py --tiny (issue 37, item 4): every section runs through avi's backends on the tiny models on
the cpu and records the code path before issue 37 beside the one after it, with a projection for an hour of video
(.venv-gpu; about a minute on 2 cores, hence also marked slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu_paths, pytest.mark.slow, pytest.mark.timeout(600)]
pytest.importorskip("torchvision")
pytest.importorskip("qwen_vl_utils")
pytest.importorskip("sentence_transformers")

REPO = Path(__file__).resolve().parent.parent


def test_tiny_bench_runs_every_section_before_and_after(tmp_path):
    out, md = tmp_path / "bench.json", tmp_path / "bench.md"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_gpu.py"), "--tiny", "--out", str(out),
                        "--markdown", str(md), "--work", str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=540)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["tiny"] is True and data["device"] == "cpu"
    vlm = data["vlm"]
    assert [run["batch"] for run in vlm["runs"]] == [1, 2] and vlm["runs"][0]["label"].startswith("before")
    for run in vlm["runs"]:
        assert "error" not in run, run
        assert run["completion_tokens"] == run["batch"] * 8  # the end-of-text token is off: exactly --new-tokens
        assert run["prefill_tokens_per_s"] > 0 and run["decode_tokens_per_s"] > 0 and run["clips_per_s"] > 0
        assert run["image_tokens_per_clip"] > 0 and run["prompt_tokens_per_clip"] > run["image_tokens_per_clip"]
    det = data["detector"]["runs"]
    assert [r["vectorised"] for r in det] == [False, True, True] and all(r["frames_per_s"] > 0 for r in det)
    assert len({r["boxes_per_frame"] for r in det}) == 1  # float32 on the cpu: the same boxes either way
    assert [r["device_preprocess"] for r in data["clip"]["runs"]] == [False, True]
    assert all(r["frames_per_s"] > 0 for r in data["clip"]["runs"])
    assert all(r["captions_per_s"] > 0 for r in data["embedder"]["runs"])
    proj = data["projection"]
    assert proj["before"]["batch"] == 1 and proj["after"]["minutes_per_hour_1_gpu"] > 0
    # the 1-GPU figure is rounded to 0.1 min and the 8-GPU one to 0.01 min: they agree within 0.05 / 8 + 0.005
    assert proj["after"]["minutes_per_hour_8_gpus"] == pytest.approx(proj["after"]["minutes_per_hour_1_gpu"] / 8,
                                                                    abs=0.05 / 8 + 0.005 + 1e-9)
    text = md.read_text()
    assert "## Captions: tiny Qwen3-VL" in text and "## One hour of 720p video" in text and "| before |" in text
    assert not list(tmp_path.glob("avi-bench-gpu-*"))  # the random-weight models are removed after the run
