"""Where the in-process models run (issue 37): a device and a dtype per model, part of the settings (the fields
are inherited by :class:`avi.config.Settings`; this module imports no torch).

Every in-process model of the gpu profile has a ``<role>_device`` and a ``<role>_dtype`` setting, role one of
``vlm`` (Qwen3-VL, transformers), ``detector`` (Grounding-DINO), ``clip`` (boundary_detect's CLIP, transformers or
open_clip) and ``embedder`` (sentence-transformers: Qwen3-Embedding, or the cpu profile's MiniLM). ``auto`` is
CUDA when torch sees a GPU, else the CPU; an ``auto`` dtype is :data:`GPU_DTYPE`'s for the role on CUDA (bfloat16;
float16 for CLIP, trained and released in half precision) and float32 on the CPU. What ``auto`` becomes on this
machine is :func:`avi.backends.devices.placement`; ``avi doctor`` checks it, ``avi config show`` prints it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DTYPES = ("auto", "float32", "bfloat16", "float16")
ROLES = ("vlm", "detector", "clip", "embedder")
GPU_DTYPE = {"vlm": "bfloat16", "detector": "bfloat16", "clip": "float16", "embedder": "bfloat16"}
"""The dtype ``auto`` means on CUDA, per role."""

_DEVICE = r"^(auto|cpu|mps|cuda(:\d+)?)$"
_DEVICE_HELP = "auto (CUDA when torch sees a GPU, else cpu), cpu, cuda, cuda:N"
_DTYPE_HELP = "auto ({gpu} on CUDA, float32 on cpu), float32, bfloat16 or float16"

Dtype = Literal["auto", "float32", "bfloat16", "float16"]


def _device_field(what: str):
    return Field(default="auto", pattern=_DEVICE, description=f"torch device of {what}: {_DEVICE_HELP}")


def _dtype_field(role: str):
    return Field(default="auto", description="weights and activations: " + _DTYPE_HELP.format(gpu=GPU_DTYPE[role]))


class DeviceSettings(BaseModel):
    """The device and dtype settings of the in-process models (a base of :class:`avi.config.Settings`)."""

    vlm_device: str = _device_field("the in-process Qwen3-VL (vlm_model_dir)")
    vlm_dtype: Dtype = _dtype_field("vlm")
    vlm_batch_size: int = Field(default=24, ge=1, le=256, description="in-process VLM: requests (clips) decoded "
                                "together in one generate; the index build captions that many clips at once "
                                "(caption_concurrency is for a VLM server); 1 = one request at a time. 24 fits "
                                "an H200 (140 GiB): 0.424 clips/s, peak 84.6 GiB with 10 frames of 1280x720 and "
                                "128 new tokens a clip (16: 0.385, 61.8 GiB); a batch that does not fit a "
                                "smaller GPU is split in halves and later batches stay at the size that fit")
    detector_device: str = _device_field("Grounding-DINO (detector_model_dir)")
    detector_dtype: Dtype = _dtype_field("detector")
    detector_batch_size: int = Field(default=8, ge=1, le=256, description="Grounding-DINO: frames per forward pass")
    clip_device: str = _device_field("boundary_detect's CLIP (clip_model_dir, open_clip_model)")
    clip_dtype: Dtype = _dtype_field("clip")
    embedder_device: str = _device_field("the sentence-transformers embedder (embedder_model_dir or the locked one)")
    embedder_dtype: Dtype = _dtype_field("embedder")
