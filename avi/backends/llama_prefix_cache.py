"""A persistent prompt-prefix cache for the embedded llama.cpp server (cpu profile).

Every avi question starts with the same ~1,100-token prefix (system prompt and
tool schemas, identical for every run and video by design, see
avi/agent/loop.py). On 2 CPU cores prefill runs at ~50-70 tokens/s, so that
prefix alone costs 15-25 s per question. This cache saves the model's KV state
after the first completion of a server's life and restores it at the start of
the next server's life; llama-cpp-python then keeps the longest common token
prefix and evaluates only the rest (``Llama.generate``'s prefix matching).

States are kept per *family* of prompts (the same first :data:`MIN_PREFIX_TOKENS` tokens: the agent's system
prompt and tools, or the memory route's parse prompt, issue 53), one file each: a completion's state is saved when
its family has none, or when the family's stored state shares less than :data:`STALE_SHARE` of the prompt (its
prompt files or tool list changed since); otherwise nothing is written, so each family's state is written once per
machine and prompt version, not once per completion. A stored state is only loaded when it matches more of the
prompt than the model's own KV cache already does (within one process the in-memory cache reuses the prefix).

Nor is it touched: llama-cpp-python's own ``save_state`` copies the whole
logits array and its ``load_state`` scans it (``rest[rest > 0] = 0``), and the
server's model keeps a row per context slot (16,384 x 151,936 floats, 10 GB of
address space for Qwen2.5). Measured on this project's 2-core machines: a
restore took 5.7 s and a save 2.6 s, for a 1,200-token prefix whose prefill
alone costs 16 s. :func:`lean_state_io` replaces both with versions that move
only the token ids and llama.cpp's own state.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence

import numpy as np

MIN_PREFIX_TOKENS = 64
#: a family's stored state that shares less than this share of a new prompt of the family is stale: replaced
STALE_SHARE = 0.5
KEEP_FILES = 3


def lean_state_io(llama) -> None:
    """Make ``llama.save_state`` / ``llama.load_state`` skip the logits array (see the module docstring).

    The saved :class:`llama_cpp.llama.LlamaState` carries an empty ``scores`` array; a loaded one leaves the
    model's logits as they are and marks the model for evaluation, so the next ``generate`` decodes at least
    one token (llama-cpp-python replays the last prompt token when the whole prompt was restored) and the
    logits it samples from are fresh. Idempotent.

    Raises:
        RuntimeError: llama.cpp rejected a state (as the library's own ``load_state``).
    """
    import ctypes

    import llama_cpp

    if getattr(llama.load_state, "_avi_lean", False):
        return

    def save_state():
        size = llama_cpp.llama_state_get_size(llama._ctx.ctx)  # noqa: SLF001 - the library's own context
        buf = (ctypes.c_uint8 * int(size))()
        n_bytes = int(llama_cpp.llama_state_get_data(llama._ctx.ctx, buf, size))  # noqa: SLF001
        if n_bytes > int(size):
            raise RuntimeError("Failed to copy llama state data")
        return llama_cpp.llama.LlamaState(
            input_ids=llama.input_ids[: llama.n_tokens].copy(), scores=np.zeros((0, llama.n_vocab()), np.single),
            n_tokens=llama.n_tokens, llama_state=bytes(memoryview(buf)[:n_bytes]), llama_state_size=n_bytes,
            seed=llama._seed)  # noqa: SLF001

    def load_state(state) -> None:
        data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
        if llama_cpp.llama_state_set_data(llama._ctx.ctx, data, state.llama_state_size) != state.llama_state_size:  # noqa: SLF001
            raise RuntimeError("Failed to set llama state data")
        llama.input_ids[:] = 0
        llama.input_ids[: state.n_tokens] = state.input_ids[: state.n_tokens]
        llama.n_tokens = state.n_tokens
        llama._requires_eval = True  # noqa: SLF001 - the restored logits are not live: decode before sampling
        llama._seed = state.seed  # noqa: SLF001

    save_state._avi_lean = load_state._avi_lean = True
    llama.save_state, llama.load_state = save_state, load_state


class PrefixStateCache:
    """llama-cpp-python cache (``Llama.set_cache``) backed by ``.npz`` files in a directory.

    The states it gives back carry no logits, which llama-cpp-python's own ``load_state`` cannot take, so the cache
    installs :func:`lean_state_io` on the model it is made for.

    Args:
        llama: the model the states belong to.
        directory: where states live; created if missing.
        model_key: identifies model weights, context size and llama.cpp version.
    """

    def __init__(self, llama, directory: Path, model_key: str):
        import llama_cpp

        lean_state_io(llama)
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

    def _in_memory(self, key: Sequence[int]) -> int:
        """How many leading tokens of ``key`` the model's own KV cache already holds."""
        n = int(getattr(self._llama, "n_tokens", 0) or 0)
        ids = getattr(self._llama, "input_ids", None)
        if ids is None or n == 0:
            return 0
        have = np.asarray(ids[:n], dtype=np.int64)
        key = np.asarray(key, dtype=np.int64)
        m = min(len(have), len(key))
        diff = np.nonzero(have[:m] != key[:m])[0]
        return int(diff[0]) if len(diff) else m

    def _useful(self, key: Sequence[int]) -> tuple[int, Path] | None:
        found = self._best(key)
        return found if found is not None and found[0] > self._in_memory(key) else None

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._useful(key) is not None

    def __getitem__(self, key: Sequence[int]):
        found = self._useful(key)
        if found is None:
            raise KeyError("no cached prefix longer than the model's own")
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
        return self._state_cls(
            input_ids=ids.astype(np.intc), scores=np.zeros((0, self._llama.n_vocab()), dtype=np.single),
            n_tokens=len(ids), llama_state=state, llama_state_size=len(state), seed=seed)

    @staticmethod
    def _family(ids: np.ndarray) -> str:
        """A prompt's family: its first :data:`MIN_PREFIX_TOKENS` tokens (the start of its system prompt)."""
        return hashlib.sha256(np.asarray(ids[:MIN_PREFIX_TOKENS], dtype=np.int64).tobytes()).hexdigest()[:8]

    def __setitem__(self, key: Sequence[int], value) -> None:
        ids = np.asarray(value.input_ids[: value.n_tokens], dtype=np.int64)
        if len(ids) < MIN_PREFIX_TOKENS:
            return
        family = self._family(ids)
        stale = []
        for old_ids, path in self._files():
            if not path.name.startswith(family + "-"):
                continue
            n = min(len(old_ids), len(ids))
            diff = np.nonzero(old_ids[:n] != ids[:n])[0]
            common = int(diff[0]) if len(diff) else n
            if common >= STALE_SHARE * n:
                return  # the family's stored state still holds this prompt's stable part
            stale.append(path)  # its prompts changed (a new prompt file or tool list): replaced below
        name = f"{family}-{hashlib.sha256(ids.tobytes()).hexdigest()[:12]}.npz"
        tmp = self.directory / f".{name}.{os.getpid()}.tmp.npz"
        np.savez(tmp, input_ids=ids, llama_state=np.frombuffer(value.llama_state, dtype=np.uint8),
                 seed=np.int64(value.seed))
        os.replace(tmp, self.directory / name)
        for old in stale:
            old.unlink(missing_ok=True)
        for old in sorted(self.directory.glob("*.npz"), key=lambda p: -p.stat().st_mtime)[KEEP_FILES:]:
            old.unlink(missing_ok=True)
        self._index = None

    @property
    def cache_size(self) -> int:
        return sum(p.stat().st_size for p in self.directory.glob("*.npz"))
