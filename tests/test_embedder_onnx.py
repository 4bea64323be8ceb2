"""The embedder's ONNX export (avi/weights/onnx_export.py) and its runner (avi.backends.embedder.OnnxEmbedder) on
the real all-MiniLM-L6-v2 of the cpu profile: the same vectors as sentence-transformers, chosen by the backend
factory only when the export is present and verified (issue 38: the query embedder's start without torch)."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from avi.config import Settings
from avi.weights.lock import load_lock

SETTINGS = Settings()
LOCK = load_lock(SETTINGS.weights_lock)
SOURCE = LOCK["all-minilm-l6-v2"]
EXPORT = LOCK["all-minilm-l6-v2-onnx"]
TEXTS = ["who walks in first", "A woman in a long black coat crosses the lawn. " * 40, "", "EXIT 42",
         "Ein Mann öffnet den Kofferraum", "红色的车"] * 13  # 78 texts: more than one batch of 64


def _models_dir(tmp: Path) -> Path:
    """A models directory holding only the locked MiniLM (a link to the real one)."""
    src = SOURCE.local_path(SETTINGS.models_dir)
    if not src.is_dir():
        msg = "the cpu profile's MiniLM is not in models/ (scripts/setup.sh fetches it)"
        if os.environ.get("AVI_REQUIRE_SAMPLES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    dest = SOURCE.local_path(tmp)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.symlink_to(src)
    return tmp


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(models_dir, path of an ONNX export made here, unpinned: checked by its vectors only)."""
    from avi.weights.onnx_export import export_onnx

    models = _models_dir(tmp_path_factory.mktemp("models"))
    return models, export_onnx(dataclasses.replace(EXPORT, sha256=""), models, SETTINGS.weights_lock)


def test_onnx_vectors_match_sentence_transformers(exported):
    from avi.backends.embedder import OnnxEmbedder, SentenceTransformerEmbedder

    models, onnx = exported
    model_dir = SOURCE.local_path(models)
    want = SentenceTransformerEmbedder(model_dir, "all-minilm-l6-v2").embed(TEXTS)
    emb = OnnxEmbedder(onnx, model_dir, "all-minilm-l6-v2")
    got = emb.embed(TEXTS)
    assert emb.dim == 384 and got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(emb.embed(TEXTS[3:4]), got[3:4], atol=1e-6)  # alone = beside longer texts (padding masked)
    assert emb.embed([]).shape == (0, 384)
    assert float(got[0] @ got[6]) > 0.999 and float(got[0] @ got[1]) < 0.9


def test_export_is_the_locked_bytes_or_says_why(exported, tmp_path):
    """The pinned export on this torch/transformers: its sha256 matches weights.lock; on other versions the fetch
    fails with the versions named (and, the entry being optional, setup goes on without it)."""
    from avi.errors import WeightsError
    from avi.hashing import sha256_file
    from avi.weights.onnx_export import export_onnx

    models, onnx = exported
    digest = sha256_file(onnx)
    if digest == EXPORT.sha256:
        return
    with pytest.raises(WeightsError, match="another torch or transformers version"):
        export_onnx(EXPORT, models, SETTINGS.weights_lock)
    assert not EXPORT.local_path(models).exists() and not list(EXPORT.local_path(models).parent.glob("*.partial"))


def test_factory_uses_the_export_only_when_it_verifies(exported, tmp_path, caplog):
    import shutil

    from avi.backends.embedder import OnnxEmbedder, SentenceTransformerEmbedder
    from avi.backends.factory import Backends

    onnx = exported[1]
    models = _models_dir(tmp_path / "models")  # the MiniLM without its export
    lock = tmp_path / "weights.lock"
    text = SETTINGS.weights_lock.read_text()
    from avi.hashing import sha256_file

    digest, size = sha256_file(onnx), onnx.stat().st_size  # pin the export made here (its bytes may differ)
    text = text.replace(EXPORT.sha256, digest).replace(f"size = {EXPORT.size}\n", f"size = {size}\n")
    lock.write_text(text)
    s = Settings(models_dir=models, weights_lock=lock)
    target = EXPORT.local_path(models)
    assert isinstance(Backends(s).embedder, SentenceTransformerEmbedder)  # not exported yet
    shutil.copyfile(onnx, target)
    assert isinstance(Backends(s).embedder, OnnxEmbedder)
    assert isinstance(Backends(Settings(models_dir=models, weights_lock=lock, embedder_dtype="bfloat16")).embedder,
                      SentenceTransformerEmbedder)  # asked for another dtype: the torch model
    with open(target, "r+b") as f:  # same size, other bytes: fails its sha256, never loaded
        f.seek(1000)
        f.write(b"\0" * 16)
    os.utime(target, ns=(1, 1))
    with caplog.at_level(logging.WARNING, logger="avi.backends"):
        assert isinstance(Backends(s).embedder, SentenceTransformerEmbedder)
    assert "not using the embedder's ONNX export" in caplog.text


def _lock_of_minilm(tmp: Path, optional: bool) -> Path:
    """weights.lock's two MiniLM entries, the export optional or required."""
    text = SETTINGS.weights_lock.read_text()
    blocks = [b for b in text.split("[[weight]]") if 'name = "all-minilm-l6-v2' in b]
    body = "\n[[weight]]".join([""] + blocks)
    if not optional:
        body = body.replace("optional = true\n", "")
    lock = tmp / "weights.lock"
    lock.write_text(body)
    return lock


@pytest.mark.parametrize("optional", [True, False])
def test_fetch_without_onnx_skips_or_stops_with_one_line(tmp_path, monkeypatch, capsys, optional):
    """Issue 52: the export needs the `onnx` module. Without it an optional entry is skipped with one line naming
    the entry, the cause and the package to install, and the fetch goes on (exit 0); a required one fails with
    that line and exit 4, never an internal error."""
    import sys

    from avi.cli import main

    models = _models_dir(tmp_path / "models")
    monkeypatch.setenv("AVI_WEIGHTS_LOCK", str(_lock_of_minilm(tmp_path, optional)))
    monkeypatch.setenv("AVI_MODELS_DIR", str(models))
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError, as on a machine without it
    with pytest.raises(SystemExit) as exited:
        main(["weights", "fetch", "--profile", "cpu"])
    code, err = exited.value.code, capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "all-minilm-l6-v2-onnx" in ln)
    assert "'onnx'" in line and "pip install onnx" in line and "internal error" not in err, err
    if optional:
        assert code == 0 and line.startswith("skip  all-minilm-l6-v2-onnx: optional")
    else:
        assert code == 4 and line.startswith("FAIL  all-minilm-l6-v2-onnx")
    assert not EXPORT.local_path(models).exists()


def test_an_exporter_failure_is_one_line_naming_the_entry(tmp_path, monkeypatch):
    """torch.onnx's own errors (a RuntimeError subclass: "Module onnx is not installed!" in torch 2.13) become a
    WeightsError naming the entry and the cause."""
    import torch

    from avi.errors import WeightsError
    from avi.weights import fetch

    def broken(*a, **k):
        raise torch.onnx.errors.OnnxExporterError("Module onnx is not installed!")

    models = _models_dir(tmp_path / "models")
    monkeypatch.setattr(torch.onnx, "export", broken)
    with pytest.raises(WeightsError, match=r"all-minilm-l6-v2-onnx.*OnnxExporterError: Module onnx is not installed"):
        fetch(EXPORT, models, lock_path=SETTINGS.weights_lock)
    assert not EXPORT.local_path(models).exists() and not list(EXPORT.local_path(models).parent.glob("*.partial"))
