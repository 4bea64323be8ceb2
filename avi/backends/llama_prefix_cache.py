"""A persistent prompt-prefix cache for the embedded llama.cpp server (cpu profile).

Every avi question starts with the same ~1,100-token prefix (system prompt and
tool schemas, identical for every run and video by design, see
avi/agent/loop.py). On 2 CPU cores prefill runs at ~50-70 tokens/s, so that
prefix alone costs 15-25 s per question. This cache saves the model's KV state
after the first completion of a server's life and restores it at the start of
the next server's life; llama-cpp-python then keeps the longest common token
prefix and evaluates only the rest (``Llama.generate``'s prefix matching).

Only the first completion per server process is saved (a ~40 MB write); after
that the cache detaches itself from the model, because within one process the
in-memory KV cache already reuses the prefix. States are keyed by the GGUF's
sha256, the context size and the llama-cpp-python version; a state is never
loaded into another model. The logits array llama-cpp-python keeps beside the
KV state (hundreds of MB) is not stored: a restored prefix is always followed
by at least one decoded token, which refreshes the logits.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence

import numpy as np

MIN_PREFIX_TOKENS = 64
KEEP_FILES = 3


class PrefixStateCache:
    """llama-cpp-python cache (``Llama.set_cache``) backed by ``.npz`` files in a directory.

    Args:
        llama: the model the states belong to (the cache detaches from it after one save).
        directory: where states live; created if missing.
        model_key: identifies model weights, context size and llama.cpp version.
    """

    def __init__(self, llama, directory: Path, model_key: str):
        import llama_cpp

        self._llama = llama
        self._state_cls = llama_cpp.llama.LlamaState
        self.directory = Path(directory) / hashlib.sha256(
            f"{model_key}|{llama.n_ctx()}|{llama_cpp.__version__}".encode()).hexdigest()[:16]
        self.directory.mkdir(parents=True, exist_ok=True)
        self.capacity_bytes = KEEP_FILES * (1 << 28)
        self.hits = 0
        self._index: list[tuple[np.ndarray, Path]] | None = None

    # --- the protocol llama-cpp-python uses: `cache[tokens]`, `tokens in cache`, `cache[tokens] = state`

    def _files(self) -> list[tuple[np.ndarray, Path]]:
        if self._index is None:
            self._index = []
            for p in sorted(self.directory.glob("*.npz"), key=lambda p: -p.stat().st_mtime):
                try:
                    with np.load(p) as z:
                        self._index.append((z["input_ids"].copy(), p))
                except (OSError, ValueError, KeyError):
                    p.unlink(missing_ok=True)  # a torn or foreign file: drop it
        return self._index

    def _best(self, key: Sequence[int]) -> tuple[int, Path] | None:
        key = np.asarray(key, dtype=np.int64)
        best = None
        for ids, path in self._files():
            n = min(len(ids), len(key))
            diff = np.nonzero(ids[:n] != key[:n])[0]
            common = int(diff[0]) if len(diff) else n
            if common >= MIN_PREFIX_TOKENS and (best is None or common > best[0]):
                best = (common, path)
        return best

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._best(key) is not None

    def __getitem__(self, key: Sequence[int]):
        found = self._best(key)
        if found is None:
            raise KeyError("no cached prefix")
        try:
            with np.load(found[1]) as z:
                ids = z["input_ids"]
                state = bytes(z["llama_state"])
                seed = int(z["seed"])
        except (OSError, ValueError, KeyError):  # removed or torn meanwhile (another avi process)
            self._index = None
            raise KeyError("cached prefix unreadable") from None
        self.hits += 1
        os.utime(found[1])  # most recently used
        full = np.zeros(self._llama.n_ctx(), dtype=np.intc)  # llama-cpp-python keeps n_ctx token slots
        full[: len(ids)] = ids
        return self._state_cls(
            input_ids=full, scores=np.zeros((1, self._llama.n_vocab()), dtype=np.single),
            n_tokens=len(ids), llama_state=state, llama_state_size=len(state), seed=seed)

    def __setitem__(self, key: Sequence[int], value) -> None:
        ids = np.asarray(value.input_ids[: value.n_tokens], dtype=np.int64)
        name = hashlib.sha256(ids.tobytes()).hexdigest()[:16] + ".npz"
        tmp = self.directory / f".{name}.{os.getpid()}.tmp.npz"
        np.savez(tmp, input_ids=ids, llama_state=np.frombuffer(value.llama_state, dtype=np.uint8),
                 seed=np.int64(value.seed))
        os.replace(tmp, self.directory / name)
        for old in sorted(self.directory.glob("*.npz"), key=lambda p: -p.stat().st_mtime)[KEEP_FILES:]:
            old.unlink(missing_ok=True)
        self._index = None
        # One save per server life: afterwards the in-memory KV cache reuses prefixes by itself,
        # and llama-cpp-python would otherwise copy the whole state after every completion.
        self._llama.set_cache(None)

    @property
    def cache_size(self) -> int:
        return sum(p.stat().st_size for p in self.directory.glob("*.npz"))
