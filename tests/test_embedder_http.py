"""OpenAIEmbedder against a local OpenAI-compatible test double (tests/fake_openai_server.py)."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from fake_openai_server import FakeOpenAIServer, fake_embedding

from avi.backends.embedder import Embedder, OpenAIEmbedder
from avi.errors import AviError, LLMUnavailableError


@pytest.fixture
def server():
    with FakeOpenAIServer(models=("emb-a", "emb-b"), embedding_dim=24) as srv:
        yield srv


def unit(v):
    return v / np.linalg.norm(v)


def test_model_dim_and_probe(server):
    emb = OpenAIEmbedder(server.base_url)
    assert isinstance(emb, Embedder)
    assert emb.name == "emb-a" and emb.dim == 24  # first listed model; dim from the probe
    (probe,) = server.embedding_requests
    assert probe["model"] == "emb-a" and isinstance(probe["input"], list) and len(probe["input"]) == 1
    assert OpenAIEmbedder(server.base_url, model="emb-b").name == "emb-b"


def test_batches_order_and_normalisation(server):
    emb = OpenAIEmbedder(server.base_url, batch_size=64)
    texts = [f"caption number {i}" for i in range(150)]
    vecs = emb.embed(texts)
    assert vecs.shape == (150, 24) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    for i in (0, 63, 64, 149):
        np.testing.assert_allclose(vecs[i], unit(fake_embedding(texts[i], 24)), atol=1e-5)
    reqs = server.embedding_requests[1:]  # after the probe
    assert [len(r["input"]) for r in reqs] == [64, 64, 22]
    assert [t for r in reqs for t in r["input"]] == texts
    assert all(r["model"] == "emb-a" and r["encoding_format"] == "float" for r in reqs)
    np.testing.assert_array_equal(emb.embed([texts[5]])[0], vecs[5])  # deterministic


def test_empty_inputs(server):
    emb = OpenAIEmbedder(server.base_url)
    n = len(server.embedding_requests)
    out = emb.embed([])
    assert out.shape == (0, 24) and out.dtype == np.float32
    assert len(server.embedding_requests) == n  # no request for nothing
    emb.embed(["", "x"])
    assert server.embedding_requests[-1]["input"] == [" ", "x"]


def test_unknown_model_and_http_errors(server):
    with pytest.raises(AviError, match="no model 'nope'.*emb-a, emb-b"):
        OpenAIEmbedder(server.base_url, model="nope")
    emb = OpenAIEmbedder(server.base_url)
    server.models = ["renamed"]  # the server stops serving emb-a: HTTP 404 on /embeddings
    with pytest.raises(AviError, match="HTTP 404") as info:
        emb.embed(["a"])
    assert not isinstance(info.value, LLMUnavailableError)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_server():
    with pytest.raises(LLMUnavailableError, match="cannot reach the embedding server"):
        OpenAIEmbedder(f"http://127.0.0.1:{_closed_port()}/v1")


def test_server_gone_after_start():
    srv = FakeOpenAIServer().start()
    emb = OpenAIEmbedder(srv.base_url)
    srv.stop()
    with pytest.raises(LLMUnavailableError, match="lost the embedding server"):
        emb.embed(["a"])
