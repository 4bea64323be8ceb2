"""Device and dtype of the in-process models (issue 37): the ``<role>_device`` / ``<role>_dtype`` settings
(:mod:`avi.config_devices`) resolved on this machine, and what ``avi doctor`` checks about them.

``auto`` is CUDA when torch sees a GPU, else the CPU; an ``auto`` dtype is the role's half-precision type on CUDA
(:data:`avi.config_devices.GPU_DTYPE`) and float32 elsewhere. torch is imported only when a value must be resolved.
"""

from __future__ import annotations

from typing import Any

from avi.config_devices import GPU_DTYPE, ROLES
from avi.errors import AviError


def resolve_device(device: str | None) -> str:
    """``"auto"`` or None -> ``"cuda"`` when torch sees a GPU, else ``"cpu"``; any other value as it is.

    Raises:
        AviError: ``auto`` asked with torch not installed.
    """
    if device and device != "auto":
        return device
    try:
        import torch
    except ImportError:
        raise AviError("device 'auto' needs torch to look for a GPU: pip install 'avi[gpu]'") from None
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str | None, device: str, role: str = "vlm") -> str:
    """The dtype name for ``device``: ``"auto"``/None -> the role's half precision on CUDA
    (:data:`~avi.config_devices.GPU_DTYPE`), ``"float32"`` elsewhere; any other value as it is."""
    if dtype and dtype != "auto":
        return dtype
    return GPU_DTYPE.get(role, "bfloat16") if str(device).startswith("cuda") else "float32"


def torch_dtype(name: str) -> Any:
    """``torch.<name>`` (``"bfloat16"`` -> ``torch.bfloat16``).

    Raises:
        AviError: not a floating-point torch dtype.
    """
    import torch

    dt = getattr(torch, str(name), None)
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise AviError(f"unknown dtype {name!r} (float32, bfloat16 or float16)")
    return dt


def placement(settings, role: str) -> tuple[str, str]:
    """``(device, dtype name)`` of one role's model under ``settings`` on this machine.

    Args:
        settings: :class:`avi.config.Settings` (its ``<role>_device`` and ``<role>_dtype``).
        role: one of :data:`avi.config_devices.ROLES`.
    """
    if role not in ROLES:
        raise ValueError(f"unknown model role {role!r}: one of {', '.join(ROLES)}")
    device = resolve_device(getattr(settings, f"{role}_device", "auto"))
    return device, resolve_dtype(getattr(settings, f"{role}_dtype", "auto"), device, role)


def in_process_roles(settings) -> list[str]:
    """The roles whose model runs in this process under ``settings`` (an endpoint replaces it): the VLM with
    ``vlm_model_dir`` and no ``vlm_base_url``, Grounding-DINO with ``detector_model_dir``, CLIP with
    ``open_clip_model`` or ``clip_model_dir``, the embedder unless ``embedder_base_url`` is set."""
    roles = []
    if getattr(settings, "vlm_model_dir", None) and not getattr(settings, "vlm_base_url", None):
        roles.append("vlm")
    if getattr(settings, "detector_model_dir", None):
        roles.append("detector")
    if getattr(settings, "open_clip_model", None) or getattr(settings, "clip_model_dir", None):
        roles.append("clip")
    if not getattr(settings, "embedder_base_url", None):
        roles.append("embedder")
    return roles


def placement_lines(settings) -> list[str]:
    """TOML comment lines, one per role, saying where ``auto`` puts each model on this machine (``avi config
    show``): ``# vlm: cuda:0 (NVIDIA H200) bfloat16 (vlm_device = "auto", vlm_dtype = "auto"; in-process)``."""
    used = set(in_process_roles(settings))
    lines = ["# where the in-process models run on this machine (<role>_device, <role>_dtype):"]
    for role in ROLES:
        asked = f'{role}_device = "{getattr(settings, role + "_device")}", {role}_dtype = ' \
                f'"{getattr(settings, role + "_dtype")}"'
        try:
            where = describe(*placement(settings, role))
        except AviError as exc:
            where = f"unknown ({exc})"
        lines.append(f"#   {role}: {where} ({asked}; {'in-process' if role in used else 'not in-process here'})")
    return lines


def check_placement(device: str, dtype: str) -> str | None:
    """What is wrong with running a model on ``device`` in ``dtype`` here, or None when it can run.

    Checked: torch is installed; a CUDA device exists (``cuda:N`` below the GPU count); bfloat16 is supported
    on that GPU; half precision is not asked of the CPU (float16 matrix products there are slow or missing).
    """
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'avi[gpu]')"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return f"{device} asked, but torch sees no GPU (torch {torch.__version__}, CUDA {torch.version.cuda})"
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            return f"{device} asked, but torch sees {torch.cuda.device_count()} GPU(s)"
        if dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
            return f"{torch.cuda.get_device_name(index)} has no bfloat16: set the dtype to float16 or float32"
    elif device == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            return "mps asked, but torch sees no Apple GPU"
    elif dtype == "float16":
        return "float16 on the cpu is slow or unsupported: use float32 or bfloat16 there"
    return None


def describe(device: str, dtype: str) -> str:
    """``"cuda:0 (NVIDIA H200) bfloat16"`` or ``"cpu float32"``: a placement for people."""
    if device.startswith("cuda"):
        try:
            import torch

            index = int(device.split(":")[1]) if ":" in device else 0
            return f"{device} ({torch.cuda.get_device_name(index)}) {dtype}"
        except Exception:  # noqa: BLE001 - a name is only decoration
            pass
    return f"{device} {dtype}"


def peak_memory_gib(device: str) -> float | None:
    """The most GPU memory torch allocated on ``device`` since the last reset, in GiB; None off CUDA."""
    if not str(device).startswith("cuda"):
        return None
    import torch

    return torch.cuda.max_memory_allocated(device) / 2**30


def synchronize(device: str) -> None:
    """Wait for the work queued on ``device`` (a no-op off CUDA): timings read after it are the device's."""
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)
