"""Smoke test of the installed llama.cpp build: load a GGUF, prefill a prompt, decode a few tokens.

``scripts/setup.sh`` builds llama.cpp with AVX512 where ``/proc/cpuinfo`` lists AVX512 with VNNI and VBMI (1.46x the
prompt tokens per second of the AVX2 build on a 2-core AMD EPYC: bench/HISTORY.md, "Seconds per question"). A build
for instructions the CPU runs badly can die inside ``llama_decode`` (a native build did, on a Xeon with
AVX512-FP16), so setup runs this module in a child process after the weights are fetched and reinstalls the AVX2
build when it does not exit 0. It runs the kernels the orchestrator runs: one batched prefill of the prompt (the
matrix-matrix path) and greedy single-token decoding (the matrix-vector path), and checks that every row of logits
is finite and not constant.

Run: ``python -m avi.backends.llama_smoke [--model PATH]`` (default: the ``llm_gguf`` entry of ``weights.lock``,
verified). Exit status 0 and one line of figures when the build works; 1 with the reason when the logits are bad or
the model cannot load; a crash ends the process with the signal's status.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Plain prose, long enough that the prefill is one batch of well over 32 tokens (llama.cpp's batched GEMM path).
PROMPT = ("A camera on a street corner records people walking past a bakery in the morning. Some carry bags, "
          "one rides a bicycle, two stop to read a sign in the window, and a delivery van parks for a few minutes "
          "before driving away towards the river. Later the light changes, the shop opens its door, and a queue "
          "forms along the pavement while a dog waits beside a bench. Describe what happens in the first minute:")


@dataclass
class SmokeResult:
    """What one smoke run measured.

    Attributes:
        prompt_tokens: tokens prefilled in one batch.
        generated: tokens decoded one at a time (greedy).
        prefill_tok_s: prompt tokens per second.
        decode_tok_s: decoded tokens per second.
        text: the greedy continuation (for a person to glance at; not checked).
    """

    prompt_tokens: int
    generated: int
    prefill_tok_s: float
    decode_tok_s: float
    text: str


def _check_row(row: np.ndarray, where: str) -> None:
    if not np.all(np.isfinite(row)):
        raise RuntimeError(f"non-finite logits after {where}")
    if float(np.ptp(row)) == 0.0:
        raise RuntimeError(f"constant logits after {where}")


def smoke(model_path: Path, *, threads: int | None = None, new_tokens: int = 8) -> SmokeResult:
    """Load ``model_path`` with llama.cpp and decode greedily after one batched prefill of :data:`PROMPT`.

    Args:
        model_path: a GGUF file.
        threads: llama.cpp threads (default: llama.cpp's choice).
        new_tokens: tokens decoded one at a time after the prefill.

    Returns:
        :class:`SmokeResult`.

    Raises:
        RuntimeError: a row of logits is not finite or is constant (a broken build).
        ValueError: llama-cpp-python cannot load the file.
    """
    from llama_cpp import Llama

    llm = Llama(model_path=str(model_path), n_ctx=512, n_batch=512, logits_all=True, verbose=False,
                **({"n_threads": threads} if threads else {}))
    tokens = llm.tokenize(PROMPT.encode())
    t0 = time.perf_counter()
    llm.eval(tokens)
    t1 = time.perf_counter()
    _check_row(llm.scores[llm.n_tokens - 1], "the prefill")
    out = []
    for _ in range(new_tokens):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(token)
        llm.eval([token])
        _check_row(llm.scores[llm.n_tokens - 1], f"decoding token {len(out)}")
    t2 = time.perf_counter()
    text = llm.detokenize(out).decode("utf-8", errors="replace")
    return SmokeResult(prompt_tokens=len(tokens), generated=len(out), prefill_tok_s=len(tokens) / max(t1 - t0, 1e-9),
                       decode_tok_s=len(out) / max(t2 - t1, 1e-9), text=text)


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring. Returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m avi.backends.llama_smoke",
                                 description="check that the installed llama.cpp build decodes on this CPU")
    ap.add_argument("--model", type=Path, help="a GGUF file (default: the configured llm_gguf, verified)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: llama.cpp's choice)")
    args = ap.parse_args(argv)
    try:
        path = args.model
        if path is None:
            from avi.config import Settings
            from avi.weights.checks import resolve

            settings = Settings.load(None)
            path = resolve(settings.llm_gguf, settings.models_dir, settings.weights_lock)
        if not path.is_file():
            raise ValueError(f"{path}: no such file")
        r = smoke(path, threads=args.threads)
    except Exception as exc:  # noqa: BLE001 - one line for setup.sh, which only reads the status
        print(f"llama.cpp smoke test failed: {exc}", file=sys.stderr)
        return 1
    import llama_cpp

    print(f"llama.cpp {llama_cpp.__version__} decodes on this CPU: {r.prompt_tokens} prompt tokens at "
          f"{r.prefill_tok_s:.0f}/s, {r.generated} greedy tokens at {r.decode_tok_s:.0f}/s ({path.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
