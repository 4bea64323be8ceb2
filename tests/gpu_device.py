"""Where the ``gpu_paths`` tests run (issue 37, item 2), and how close their numbers must be.

``AVI_TEST_DEVICE`` (default ``cpu``; e.g. ``cuda``) is the device the tiny random-weight models run on;
``AVI_TEST_DTYPE`` their dtype (default: float32 on the cpu, else the role's ``auto`` dtype: bfloat16, float16
for CLIP). CI runs them on the cpu in float32; ``scripts/gpu_check.sh`` on a GPU, in both float32 and the
default half precision.

Tolerances (:func:`tolerance`), absolute, on values in [-1, 1] (cosine similarities, probabilities) or
normalised box coordinates, of the tiny models of tests/tiny_models.py against a reference computed in the same
run:

==========  ======  ============================================================================
dtype       atol    why
==========  ======  ============================================================================
float32     1e-5    on the cpu: the same arithmetic up to summation order
float32     2e-3    on CUDA: cuDNN's convolutions (patch embeddings) use TF32 by default
float16     1e-2    10-bit mantissa: ~5e-4 relative per operation, a few layers deep
bfloat16    5e-2    7-bit mantissa: ~4e-3 relative per operation
==========  ======  ============================================================================

Comparisons of discrete outcomes (argmax tokens, labels chosen by the highest probability, boxes kept by NMS,
Grounding-DINO's top-k choice of its queries) between two computations are exact only in float32 (:func:`exact`);
in half precision a near tie can go the other way, so those tests check the float32 run alone.
"""

from __future__ import annotations

import os

import pytest

DEVICE = os.environ.get("AVI_TEST_DEVICE", "cpu")


def dtype(role: str) -> str:
    """The dtype name the tests run ``role``'s model in (``vlm``, ``detector``, ``clip``, ``embedder``)."""
    from avi.backends.devices import resolve_dtype

    return os.environ.get("AVI_TEST_DTYPE") or resolve_dtype("auto", DEVICE, role)


def tolerance(role: str) -> float:
    """The absolute tolerance of ``role``'s numbers in the test dtype on the test device (table above)."""
    name = dtype(role)
    if name == "float32":
        return 1e-5 if DEVICE == "cpu" else 2e-3
    return {"float16": 1e-2, "bfloat16": 5e-2}[name]


def exact(role: str) -> bool:
    """Whether discrete outcomes of ``role``'s model may be compared between two computations (float32 only)."""
    return dtype(role) == "float32"


def skip_unless_exact(role: str) -> None:
    """Skip a test comparing discrete outcomes when ``role`` runs in half precision."""
    if not exact(role):
        pytest.skip(f"{role} in {dtype(role)}: argmax and NMS outcomes may flip on near ties (compared in float32)")


def skip_on_cpu() -> None:
    """Skip a device-against-cpu comparison when the tests run on the cpu (it would compare the cpu with itself)."""
    if DEVICE == "cpu":
        pytest.skip("AVI_TEST_DEVICE is cpu: nothing to compare the cpu with")
