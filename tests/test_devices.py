"""Device and dtype settings of the in-process models (issue 37, item 1): the ``<role>_device`` / ``<role>_dtype``
settings, what ``auto`` resolves to with and without a GPU, that the factory hands them to every backend, and
what ``avi doctor`` and ``avi config show`` say. No model is loaded: the backends are replaced by recorders."""

from __future__ import annotations

import pytest

import avi.backends.devices as devices
from avi.backends import Backends
from avi.config import Settings
from avi.config_devices import ROLES
from avi.doctor import device_checks
from avi.errors import InputError


def test_settings_default_to_auto_and_refuse_bad_values():
    s = Settings()
    for role in ROLES:
        assert getattr(s, f"{role}_device") == "auto" and getattr(s, f"{role}_dtype") == "auto"
    assert s.vlm_batch_size == 24 and s.detector_batch_size == 8
    assert Settings.load(vlm_device="cuda:1", clip_dtype="float32").vlm_device == "cuda:1"
    with pytest.raises(InputError, match="'detector_device'"):
        Settings.load(detector_device="gpu")
    with pytest.raises(InputError, match="'embedder_dtype'"):
        Settings.load(embedder_dtype="half")


def test_auto_is_the_gpu_in_half_precision_when_torch_sees_one(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert [devices.placement(Settings(), r) for r in ROLES] == [("cpu", "float32")] * 4
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    got = {r: devices.placement(Settings(), r) for r in ROLES}
    assert got == {"vlm": ("cuda", "bfloat16"), "detector": ("cuda", "bfloat16"), "clip": ("cuda", "float16"),
                   "embedder": ("cuda", "bfloat16")}
    assert devices.placement(Settings(vlm_device="cpu", clip_dtype="float32"), "vlm") == ("cpu", "float32")
    assert devices.placement(Settings(clip_dtype="float32"), "clip") == ("cuda", "float32")


def test_check_placement_says_what_cannot_run(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "torch sees no GPU" in devices.check_placement("cuda:0", "bfloat16")
    assert "float16 on the cpu" in devices.check_placement("cpu", "float16")
    assert devices.check_placement("cpu", "float32") is None and devices.check_placement("cpu", "bfloat16") is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Old GPU")
    assert "sees 1 GPU" in devices.check_placement("cuda:1", "float16")
    assert "Old GPU has no bfloat16" in devices.check_placement("cuda", "bfloat16")
    assert devices.check_placement("cuda", "float16") is None
    with pytest.raises(Exception, match="unknown dtype"):
        devices.torch_dtype("int8")


def test_the_factory_passes_device_dtype_and_batch_to_every_backend(monkeypatch, tmp_path):
    import avi.backends.clip_scorer as clip_scorer
    import avi.backends.embedder as embedder
    import avi.backends.grounding_dino as gdino
    import avi.backends.vlm as vlm

    seen = {}

    def recorder(name):
        def make(*args, **kw):
            seen[name] = kw
            return name
        return make

    monkeypatch.setattr(vlm, "TransformersVlmBackend", recorder("vlm"))
    monkeypatch.setattr(gdino, "load_grounding_dino", recorder("detector"))
    monkeypatch.setattr(clip_scorer, "HfClipScorer", recorder("hf_clip"))
    monkeypatch.setattr(clip_scorer, "OpenClipScorer", recorder("open_clip"))
    monkeypatch.setattr(embedder, "SentenceTransformerEmbedder", recorder("embedder"))
    s = Settings(vlm_model_dir=tmp_path, vlm_device="cuda:1", vlm_dtype="float16", vlm_batch_size=4,
                 detector_model_dir=tmp_path, detector_device="cuda:2", detector_dtype="float32", detector_batch_size=3,
                 clip_model_dir=tmp_path, clip_device="cpu", embedder_model_dir=tmp_path, embedder_dtype="bfloat16",
                 frame_reuse=False)
    b = Backends(s)
    assert (b.vlm, b.detector, b.clip_scorer, b.embedder) == ("vlm", "detector", "hf_clip", "embedder")
    assert seen["vlm"] == {"device": "cuda:1", "dtype": "float16", "max_batch": 4}
    assert {k: seen["detector"][k] for k in ("device", "dtype", "batch_size")} == \
        {"device": "cuda:2", "dtype": "float32", "batch_size": 3}
    assert seen["hf_clip"] == {"device": "cpu", "dtype": "auto"}
    assert seen["embedder"] == {"device": "auto", "dtype": "bfloat16"}
    assert Backends(Settings(open_clip_model="local-dir:/x", clip_dtype="float16")).clip_scorer == "open_clip"
    assert seen["open_clip"] == {"device": "auto", "dtype": "float16"}


def test_the_index_build_captions_a_full_batch_of_the_in_process_vlm(monkeypatch, tmp_path):
    """Issue 37: in-process, the captioner's concurrency is vlm_batch_size (caption_concurrency would leave a
    batch of 24 a third full); against a VLM server it is caption_concurrency."""
    import avi.backends.llm as llm
    import avi.backends.vlm as vlm

    class InProcess:
        name = "qwen3-vl"

        def __init__(self, *args, max_batch, **kw):
            self.max_concurrency = max_batch

    monkeypatch.setattr(vlm, "TransformersVlmBackend", InProcess)
    monkeypatch.setattr(vlm, "OpenAIVlmBackend", lambda client, media_dir=None: "server")
    monkeypatch.setattr(llm.ChatClient, "connect", classmethod(lambda cls, *a, **kw: "client"))

    def concurrency(**kw) -> int:
        return Backends(Settings(**kw)).captioner.concurrency

    assert concurrency(vlm_model_dir=tmp_path) == 24
    assert concurrency(vlm_model_dir=tmp_path, vlm_batch_size=4, caption_concurrency=16) == 4
    assert concurrency(vlm_model_dir=tmp_path, vlm_batch_size=32, caption_concurrency=2) == 32
    server = Backends(Settings(vlm_base_url="http://127.0.0.1:9/v1", vlm_batch_size=4, caption_concurrency=16))
    assert server.vlm == "server" and server.captioner.concurrency == 16


def test_doctor_checks_the_in_process_models(monkeypatch, tmp_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rows = {r.name: r for r in device_checks(Settings())}  # the cpu profile: the embedder alone
    assert list(rows) == ["device embedder"] and rows["device embedder"].status == "ok"
    assert rows["device embedder"].detail == "cpu float32"
    rows = {r.name: r for r in device_checks(Settings(vlm_model_dir=tmp_path, vlm_device="cuda",
                                                      clip_model_dir=tmp_path, embedder_base_url="http://x/v1"))}
    assert list(rows) == ["device vlm", "device clip"]
    assert rows["device vlm"].status == "FAIL" and "torch sees no GPU" in rows["device vlm"].detail
    assert "vlm_device cuda" in rows["device vlm"].detail and rows["device clip"].status == "ok"
    assert devices.in_process_roles(Settings(vlm_model_dir=tmp_path, vlm_base_url="http://x/v1")) == ["embedder"]


def test_config_show_lists_the_settings_and_where_auto_puts_each_model(monkeypatch, capsys):
    from avi.cli import main

    for key in [k for k in __import__("os").environ if k.startswith("AVI_")]:
        monkeypatch.delenv(key)
    with pytest.raises(SystemExit) as done:
        main(["config", "show"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert 'vlm_device = "auto"' in out and 'clip_dtype = "auto"' in out and "vlm_batch_size = 24" in out
    assert "# where the in-process models run on this machine" in out
    assert '#   embedder: ' in out and 'embedder_device = "auto"' in out
    import json

    with pytest.raises(SystemExit):
        main(["config", "show", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert set(data["placement"]) == set(ROLES) and data["settings"]["detector_dtype"] == "auto"
