"""Frame–text scorers for boundary_detect (avi/backends/clip_scorer.py) on tiny random-weight CLIP models
built at test time (.venv-gpu only): transformers CLIPModel and, when installed, open_clip.

Random weights: shapes, value ranges, batching and the local-only loading paths are asserted, never semantics.
Run: ``.venv-gpu/bin/python -m pytest -m gpu_paths tests/test_clip_scorer.py -q``; ``AVI_TEST_DEVICE=cuda``
runs the scorers on a GPU, in float16 unless ``AVI_TEST_DTYPE`` says otherwise (tests/gpu_device.py: the
tolerances per dtype).
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu_paths
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from gpu_device import DEVICE, dtype, skip_on_cpu, tolerance  # noqa: E402
from synth import make_video, sign_video_spec  # noqa: E402
from tiny_models import build_tiny_hf_clip, build_tiny_open_clip  # noqa: E402

from avi.backends import Backends  # noqa: E402
from avi.backends.clip_scorer import FrameTextScorer, HfClipScorer, OpenClipScorer  # noqa: E402
from avi.config import Settings  # noqa: E402
from avi.errors import AviError  # noqa: E402
from avi.tools.base import ToolContext  # noqa: E402
from avi.tools.boundary import boundary_detect  # noqa: E402
from avi.video.decode import Frame, VideoReader, probe  # noqa: E402

ON = dict(device=DEVICE, dtype=dtype("clip"))  # where the scorers under test run
ATOL = tolerance("clip")
PREPROCESS_ATOL = 5e-3  # resizing as tensors (torchvision, antialiased bicubic) vs PIL: 3e-4 measured on the cpu


def _frames(n: int = 7, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = [(90, 160), (120, 120), (64, 200)]
    return [rng.integers(0, 256, size=(*sizes[i % 3], 3), dtype=np.uint8) for i in range(n)]


@pytest.fixture(scope="module")
def hf_clip_dir(tmp_path_factory):
    return build_tiny_hf_clip(tmp_path_factory.mktemp("tiny-hf-clip"))


@pytest.fixture(scope="module")
def open_clip_dir(tmp_path_factory):
    pytest.importorskip("open_clip")
    return build_tiny_open_clip(tmp_path_factory.mktemp("tiny-open-clip"))


def _check_scores(scorer, frames):
    assert isinstance(scorer, FrameTextScorer)
    s = scorer.score(frames, "the red square")
    assert s.shape == (len(frames),) and s.dtype == np.float32
    assert np.all(s >= -1.0) and np.all(s <= 1.0) and np.isfinite(s).all()
    assert np.ptp(s) > 0  # different frames, different scores
    single = np.concatenate([scorer.score([f], "the red square") for f in frames])
    assert np.allclose(s, single, atol=ATOL)
    assert scorer.score([], "x").shape == (0,)
    assert not np.allclose(s, scorer.score(frames, "green"), atol=1e-6)  # the text matters
    return s


def test_hf_clip_scorer_shapes_range_and_batching(hf_clip_dir):
    frames = _frames()
    small = HfClipScorer(hf_clip_dir, batch_size=2, **ON)
    big = HfClipScorer(hf_clip_dir, batch_size=64, **ON)
    assert small.name == f"hf-clip:{hf_clip_dir.name}" and small.device == DEVICE
    assert str(next(small._model.parameters()).dtype) == f"torch.{dtype('clip')}"
    s = _check_scores(small, frames)
    assert np.allclose(s, big.score(frames, "the red square"), atol=ATOL)
    # Frame objects are accepted as well as arrays
    assert np.allclose(s[:2], small.score([Frame(0.0, frames[0]), Frame(0.5, frames[1])], "the red square"), atol=ATOL)


def test_hf_clip_scores_are_the_models_cosine(hf_clip_dir):
    """Same numbers as CLIPModel's own forward: logits_per_image / exp(logit_scale)."""
    from transformers import CLIPModel, CLIPProcessor

    frames = _frames(4)
    model = CLIPModel.from_pretrained(hf_clip_dir, local_files_only=True).eval()
    proc = CLIPProcessor.from_pretrained(hf_clip_dir, local_files_only=True)
    with torch.no_grad():
        out = model(**proc(text=["the red square"], images=frames, return_tensors="pt", padding=True))
        expect = (out.logits_per_image[:, 0] / model.logit_scale.exp()).numpy()
    assert np.allclose(HfClipScorer(hf_clip_dir, **ON).score(frames, "the red square"), expect, atol=ATOL)


def test_hf_clip_scorer_errors(tmp_path):
    with pytest.raises(AviError, match="not found"):
        HfClipScorer(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AviError, match="cannot load"):
        HfClipScorer(tmp_path / "empty")


def test_non_rgb_frame_is_rejected(hf_clip_dir):
    with pytest.raises(ValueError, match="RGB"):
        HfClipScorer(hf_clip_dir, **ON).score([np.zeros((4, 4), np.uint8)], "x")


def test_backends_pick_the_configured_scorer(hf_clip_dir, open_clip_dir):
    assert isinstance(Backends(Settings(clip_model_dir=hf_clip_dir)).clip_scorer, HfClipScorer)
    both = Settings(clip_model_dir=hf_clip_dir, open_clip_model=f"local-dir:{open_clip_dir}")
    assert isinstance(Backends(both).clip_scorer, OpenClipScorer)  # open_clip wins when both are set


def test_open_clip_scorer_local_dir_and_checkpoint_file(open_clip_dir):
    import json

    import open_clip
    from PIL import Image
    from tiny_models import TINY_OPEN_CLIP_CFG

    frames = _frames()
    local = OpenClipScorer(f"local-dir:{open_clip_dir}", batch_size=3, device_preprocess=False, **ON)
    assert str(next(local._model.parameters()).dtype) == f"torch.{dtype('clip')}"  # the whole model, as HF CLIP
    assert local.name == f"open_clip:{open_clip_dir.name}"
    s = _check_scores(local, frames)
    # the same weights through a registered architecture name + a checkpoint file
    cfg_dir = open_clip_dir.parent / "cfg"
    cfg_dir.mkdir(exist_ok=True)
    (cfg_dir / "avi-tiny-test.json").write_text(json.dumps(TINY_OPEN_CLIP_CFG))
    open_clip.add_model_config(cfg_dir)
    named = OpenClipScorer("avi-tiny-test", open_clip_dir / "tiny.pt", batch_size=64, **ON)
    assert named.name == "open_clip:avi-tiny-test"
    # preprocessing differs (OPENAI mean/std vs the local dir's 0.5): compare with the model's own forward instead
    model, _, pre = open_clip.create_model_and_transforms(f"local-dir:{open_clip_dir}")
    tok = open_clip.get_tokenizer(f"local-dir:{open_clip_dir}")
    with torch.no_grad():
        img = model.encode_image(torch.stack([pre(Image.fromarray(f)) for f in frames]), normalize=True)
        txt = model.encode_text(tok(["the red square"]), normalize=True)
    assert np.allclose(s, (img @ txt.T)[:, 0].numpy(), atol=ATOL)
    assert named.score(frames, "the red square").shape == (len(frames),)


@pytest.mark.parametrize("kind", ["hf", "open_clip"])
def test_preprocessing_as_tensors_on_the_device_gives_the_same_scores(kind, hf_clip_dir, open_clip_dir):
    """Issue 37: frames resized, cropped and normalised as one tensor per size on the model's device (forced on
    here, so the cpu runs it too) score as the processor's own path does."""
    frames = _frames()
    make = ((lambda **kw: HfClipScorer(hf_clip_dir, **ON, **kw)) if kind == "hf"
            else (lambda **kw: OpenClipScorer(f"local-dir:{open_clip_dir}", **ON, **kw)))
    on, off = make(device_preprocess=True), make(device_preprocess=False)
    assert on.device_preprocess and not off.device_preprocess
    assert make().device_preprocess == (DEVICE != "cpu")  # by default only off the cpu
    px = on.pixel_values(frames[:3:3] * 2)  # two frames of one size
    assert px.shape[0] == 2 and px.device.type == DEVICE.split(":")[0]
    assert px.dtype == next(on._model.parameters()).dtype
    assert np.allclose(on.score(frames, "the red square"), off.score(frames, "the red square"),
                       atol=ATOL + PREPROCESS_ATOL)


def test_device_scores_match_the_cpu(hf_clip_dir, open_clip_dir):
    """On a GPU (AVI_TEST_DEVICE), both scorers in the test dtype give the cpu's float32 scores within tolerance."""
    skip_on_cpu()
    frames = _frames()
    for make in (lambda **kw: HfClipScorer(hf_clip_dir, **kw),
                 lambda **kw: OpenClipScorer(f"local-dir:{open_clip_dir}", **kw)):
        cpu = make(device="cpu", dtype="float32").score(frames, "the red square")
        assert np.allclose(make(**ON).score(frames, "the red square"), cpu, atol=ATOL + PREPROCESS_ATOL)


def test_open_clip_refuses_downloads(tmp_path):
    pytest.importorskip("open_clip")
    for name, ckpt in (("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K", None), ("ViT-B-32", None),
                       ("ViT-B-32", tmp_path / "missing.pt"), (f"local-dir:{tmp_path}", None)):
        with pytest.raises(AviError):
            OpenClipScorer(name, ckpt)


def test_boundary_detect_runs_with_a_real_clip_scorer(tmp_path, hf_clip_dir):
    """The tool end to end with HfClipScorer on decoded frames (random weights: only the plumbing)."""
    video = make_video(tmp_path / "signs.mp4", sign_video_spec())
    s = Settings(clip_model_dir=hf_clip_dir, frame_budget=0, clip_device=DEVICE, clip_dtype=dtype("clip"))
    ctx = ToolContext(settings=s, index=None, video=VideoReader(probe(video)), backends=Backends(s))
    obs = boundary_detect.run(ctx, {"time_ranges": [[0, 20]], "event": "a green room"})
    assert not obs.error, obs.text
    assert obs.data["method"] == "clip" and obs.data["scorer"].startswith("hf-clip:")
    assert len(obs.data["raw"]) == len(obs.data["smoothed"]) == len(obs.frames_s) == 41
    (t0, t1), = obs.evidence
    assert 0.0 <= t0 < t1 <= 20.0
