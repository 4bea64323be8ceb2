"""avi.backends.llama_smoke: the check scripts/setup.sh runs on an AVX512 build of llama.cpp before keeping it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from avi.backends import llama_smoke


def _tiny_gguf():
    from avi.config import Settings
    from avi.weights import resolve

    s = Settings()
    return resolve("smollm2-135m-instruct", s.models_dir, s.weights_lock)


def test_smoke_prefills_one_batch_and_decodes_greedily():
    r = llama_smoke.smoke(_tiny_gguf(), new_tokens=4)
    assert r.prompt_tokens > 32  # llama.cpp's batched matrix-matrix path, not only matrix-vector
    assert r.generated == 4 and r.prefill_tok_s > 0 and r.decode_tok_s > 0


@pytest.mark.parametrize("row, reason", [(np.array([0.1, np.nan, 0.3]), "non-finite"),
                                         (np.array([0.1, np.inf, 0.3]), "non-finite"),
                                         (np.full(5, 0.25), "constant")])
def test_bad_logits_fail_the_check(row, reason):
    with pytest.raises(RuntimeError, match=reason):
        llama_smoke._check_row(row, "the prefill")
    llama_smoke._check_row(np.array([0.1, 0.2, 0.3]), "the prefill")


def test_command_line_status_is_what_setup_reads(tmp_path):
    """setup.sh runs the module in a child process and keeps the build only on exit status 0."""
    ok = subprocess.run([sys.executable, "-m", "avi.backends.llama_smoke", "--model", str(_tiny_gguf())],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "decodes on this CPU" in ok.stdout
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"GGUF but not really")
    failed = subprocess.run([sys.executable, "-m", "avi.backends.llama_smoke", "--model", str(bad)],
                            capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and failed.stderr.startswith("llama.cpp smoke test failed:")
    assert llama_smoke.main(["--model", str(tmp_path / "missing.gguf")]) == 1
