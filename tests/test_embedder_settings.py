"""Embedder-specific settings (issue 19, item 5): Qwen3-Embedding's query instruction on queries only, thresholds
per embedder with their source, and the threshold calibration of scripts/calibrate_thresholds.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from avi.backends.embedder import embed_query
from avi.config_embedders import EMBEDDER_SETTINGS, embedder_settings
from avi.tools.retrieve.common import cached_vectors, entity_min_cosine, merge_min_cosine, query_vector

ROOT = Path(__file__).resolve().parent.parent


class RecordingEmbedder:
    """A fake embedder that records every text it is given (vectors from a hash of the text)."""

    def __init__(self, name: str):
        self.name, self.dim, self.texts = name, 8, []

    def embed(self, texts):
        self.texts += list(texts)
        out = np.array([[hash((t, k)) % 97 + 1.0 for k in range(self.dim)] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_qwen3_queries_get_the_instruction_and_documents_do_not():
    emb = RecordingEmbedder("Qwen/Qwen3-Embedding-4B")
    ctx = SimpleNamespace(backends=SimpleNamespace(embedder=emb))
    query_vector(ctx, "when does the dog fetch?")
    cached_vectors(SimpleNamespace(path="/nowhere"), emb, "captions", ["A dog runs."])
    task = EMBEDDER_SETTINGS["qwen3-embedding"].query_instruction
    assert emb.texts == [f"Instruct: {task}\nQuery:when does the dog fetch?", "A dog runs."]


def test_minilm_queries_are_embedded_as_they_are():
    emb = RecordingEmbedder("all-minilm-l6-v2")
    embed_query(emb, ["a red car"])
    assert emb.texts == ["a red car"]


def test_thresholds_per_embedder_carry_their_source():
    assert embedder_settings("qwen3-embedding-8b") is EMBEDDER_SETTINGS["qwen3-embedding"]
    assert embedder_settings("Qwen3_Embedding-4B") is EMBEDDER_SETTINGS["qwen3-embedding"]
    assert embedder_settings("something-else") is EMBEDDER_SETTINGS["all-minilm-l6-v2"]
    assert not EMBEDDER_SETTINGS["qwen3-embedding"].calibrated
    assert "uncalibrated" in EMBEDDER_SETTINGS["qwen3-embedding"].source
    assert "caption_pairs.jsonl" in EMBEDDER_SETTINGS["all-minilm-l6-v2"].source
    ctx = SimpleNamespace(backends=SimpleNamespace(embedder=RecordingEmbedder("all-minilm-l6-v2")))
    assert (merge_min_cosine(ctx), entity_min_cosine(ctx)) == (0.5, 0.4)


def test_calibration_finds_the_separating_threshold_and_the_pairs_are_labelled():
    spec = importlib.util.spec_from_file_location("calibrate_thresholds", ROOT / "scripts" / "calibrate_thresholds.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sims = np.array([0.9, 0.8, 0.75, 0.6, 0.5, 0.7])
    labels = np.array([True, True, True, False, False, False])
    res = mod.calibrate(sims, labels)
    assert res["accuracy"] == 1.0 and 0.7 < res["threshold"] < 0.75
    rows = [__import__("json").loads(line) for line in mod.PAIRS.read_text().splitlines() if line.strip()]
    assert len(rows) >= 40 and 0 < sum(r["same_event"] for r in rows) < len(rows)
    assert all((r["event_a"] == r["event_b"]) == r["same_event"] and r["text_a"] and r["text_b"] for r in rows)
