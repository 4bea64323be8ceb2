#!/usr/bin/env python
"""Prompt prefill and decoding speed of a GGUF with the installed llama-cpp-python build (issue 38).

The cpu profile's questions spend most of their time in the orchestrator's prefill (bench/HISTORY.md, "Seconds per
question as a user meets them"), and its speed depends on how llama.cpp was compiled (scripts/setup.sh's
CMAKE_ARGS). This prints tokens per second for one build; to compare builds, install another wheel into a separate
folder (``pip install --no-deps --target DIR WHEEL``) and run this again with ``PYTHONPATH=DIR``.

    .venv/bin/python scripts/bench_prefill.py [--gguf PATH] [--tokens 1000] [--decode 32] [--json]

Prints: prefill tokens/s (best of ``--repeats`` evaluations of the same prompt from an empty context), decoding
tokens/s (greedy, after a 200-token prompt), the threads, and llama.cpp's system info (the SIMD it was built with).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", type=Path, default=REPO / "models/llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                    help="the model (default: the cpu profile's orchestrator)")
    ap.add_argument("--tokens", type=int, default=1000, help="prompt tokens to prefill (default 1000)")
    ap.add_argument("--decode", type=int, default=32, help="tokens to decode (default 32)")
    ap.add_argument("--repeats", type=int, default=2, help="prefill evaluations; the best is reported (default 2)")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2, as avi's server)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    if not a.gguf.is_file():
        print(f"bench_prefill: no GGUF at {a.gguf} (scripts/setup.sh fetches the orchestrator)", file=sys.stderr)
        return 2
    if a.tokens < 1 or a.decode < 1 or a.repeats < 1:
        print("bench_prefill: --tokens, --decode and --repeats must be at least 1", file=sys.stderr)
        return 2
    import llama_cpp

    model = llama_cpp.Llama(model_path=str(a.gguf), n_ctx=max(a.tokens, 200) + a.decode + 8, n_threads=a.threads,
                            n_threads_batch=a.threads, verbose=False)
    text = " ".join(p.read_text() for p in sorted((REPO / "prompts").glob("*.md")))  # real prompt text
    tokens = model.tokenize(text.encode())
    tokens = (tokens * (a.tokens // max(1, len(tokens)) + 1))[:a.tokens]
    prefill = []
    for _ in range(a.repeats):
        model.reset()
        t0 = time.perf_counter()
        model.eval(tokens)
        prefill.append(time.perf_counter() - t0)
    n, t1 = 0, 0.0
    for _ in model.generate(tokens[:200], temp=0.0, reset=True):
        n += 1
        if n == 1:
            t1 = time.perf_counter()  # after the 200-token prompt and the first token
        if n > a.decode:
            break
    decode_s = time.perf_counter() - t1
    out = {"gguf": str(a.gguf), "llama_cpp": llama_cpp.__version__,
           "llama_cpp_path": str(Path(llama_cpp.__file__).parent), "threads": a.threads,
           "prompt_tokens": len(tokens), "prefill_s": round(min(prefill), 3),
           "prefill_tok_s": round(len(tokens) / min(prefill), 1), "decode_tokens": n - 1,
           "decode_tok_s": round((n - 1) / decode_s, 1) if decode_s > 0 else None,
           "system_info": llama_cpp.llama_print_system_info().decode().strip()}
    if a.json:
        print(json.dumps(out))
    else:
        print(f"{out['llama_cpp_path']} (llama-cpp-python {out['llama_cpp']}), {a.threads} threads")
        print(f"prefill  {out['prompt_tokens']} tokens in {out['prefill_s']} s: {out['prefill_tok_s']} tokens/s")
        print(f"decode   {out['decode_tokens']} tokens: {out['decode_tok_s']} tokens/s")
        print(f"build    {out['system_info']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
