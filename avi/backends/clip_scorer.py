"""Frame–text similarity role for ``boundary_detect`` (AVI §3.3.2: "frame-level
similarity scores using a CLIP model").

Backends:
    * :class:`OpenClipScorer`: an ``open_clip`` model (the paper's CLIP) from a
      local checkpoint: a built-in architecture name plus a checkpoint file, or
      ``local-dir:/path`` holding ``open_clip_config.json`` and the weights.
    * :class:`HfClipScorer`: a transformers ``CLIPModel`` + ``CLIPProcessor``
      saved in a local directory (``save_pretrained`` layout).

Both load from disk only (never a hub, never a pretrained *tag* that would be
downloaded), run batched ``no_grad`` forward passes and return the cosine
similarity between each frame's image embedding and the text's embedding.
On CUDA they run in half precision (``clip_dtype``; float16 by default) and, by
default, preprocess the frames on the GPU too (issue 37: the CPU image processor
was 90 % of the time): the frames go to the device as one uint8 tensor per size and
are resized, cropped and normalised there by the library's own transforms
(transformers' torchvision image processor; open_clip's torchvision ``Compose``).
Needs torch (and open_clip_torch or transformers): the ``gpu`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from avi.errors import AviError


@runtime_checkable
class FrameTextScorer(Protocol):
    """Scores frames against a text with a dual (image/text) encoder.

    Attributes:
        name: backend and model, e.g. ``"open_clip:ViT-L-14"`` (shown in observations).
    """

    name: str

    def score(self, frames: Sequence[Any], text: str) -> np.ndarray:
        """Cosine similarity of each frame with ``text``.

        Args:
            frames: RGB uint8 images of shape (H, W, 3) in pixels (or objects with
                such an ``.image``, e.g. :class:`avi.video.decode.Frame`).
            text: the event description.

        Returns:
            float32 array of shape (len(frames),), values in [-1, 1].
        """
        ...


def _image(frame: Any) -> np.ndarray:
    img = getattr(frame, "image", frame)
    img = np.asarray(img)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"expected an RGB image of shape (H, W, 3), got shape {img.shape}")
    return img.astype(np.uint8, copy=False)


def _device(device: str | None) -> str:
    from avi.backends.devices import resolve_device

    return resolve_device(device)


def _dtype(dtype, device: str):
    """The torch dtype for ``dtype``: a torch dtype as it is; a name, None or "auto" by
    :func:`avi.backends.devices.resolve_dtype` (float16 on CUDA, float32 elsewhere)."""
    from avi.backends.devices import resolve_dtype, torch_dtype

    if dtype is not None and not isinstance(dtype, str):
        return dtype
    return torch_dtype(resolve_dtype(dtype, device, "clip"))


def _by_size(images: list[np.ndarray], batch_size: int) -> list[list[int]]:
    """Indices of ``images`` grouped by (H, W), at most ``batch_size`` per group, groups in first-seen order."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, img in enumerate(images):
        groups.setdefault(img.shape[:2], []).append(i)
    return [idx[k:k + batch_size] for idx in groups.values() for k in range(0, len(idx), batch_size)]


def _to_device(images: list[np.ndarray], device: str):
    """uint8 tensor (N, 3, H, W) on ``device`` of same-size RGB images (one copy to the device)."""
    import torch

    return torch.from_numpy(np.stack(images)).to(device, non_blocking=True).permute(0, 3, 1, 2)


def _cosine(image_feats, text_feat) -> np.ndarray:
    """Cosine similarity of each row of ``image_feats`` (n, d) with ``text_feat`` (1, d), as float32 (n,)."""
    import torch

    a = torch.nn.functional.normalize(image_feats.float(), dim=-1)
    b = torch.nn.functional.normalize(text_feat.float(), dim=-1)
    return (a @ b.T).squeeze(-1).clamp(-1.0, 1.0).cpu().numpy().astype(np.float32)


def _features(out):
    """transformers < 5 returns the projected features; 5.x a BaseModelOutputWithPooling holding them."""
    return out if hasattr(out, "shape") else out.pooler_output


class HfClipScorer:
    """transformers ``CLIPModel`` + ``CLIPProcessor`` from a local directory.

    Args:
        model_dir: a directory written by ``save_pretrained`` (config.json, weights,
            tokenizer and preprocessor files), e.g. openai/clip-vit-large-patch14.
        device: torch device; ``None`` or ``"auto"`` picks CUDA when available, else CPU.
        batch_size: frames per image forward pass.
        dtype: a torch dtype or its name; None or ``"auto"`` = float16 on CUDA, float32 elsewhere.
        device_preprocess: resize/crop/normalise the frames as tensors on the model's device (the
            processor's torchvision backend with ``device=``); False = the processor on the CPU over arrays
            (as before issue 37); None = on when the device is not the CPU (and the processor has the
            torchvision backend). Frames are grouped by size either way.

    Raises:
        AviError: the directory is missing or does not hold a loadable CLIP model.
    """

    def __init__(self, model_dir: Path, device: str | None = None, batch_size: int = 32, dtype=None,
                 device_preprocess: bool | None = None):
        from avi.offline import enforce_offline_env

        enforce_offline_env()
        model_dir = Path(model_dir)
        if not model_dir.is_dir():
            raise AviError(f"CLIP model directory not found: {model_dir} (set clip_model_dir to a local "
                           f"transformers CLIP directory)")
        try:
            import torch  # noqa: F401
            from transformers import CLIPModel, CLIPProcessor
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise AviError("transformers and torch are needed for the CLIP scorer: pip install 'avi[gpu]'") from exc
        self.device = _device(device)
        self.batch_size = max(1, batch_size)
        self.dtype = dtype = _dtype(dtype, self.device)
        try:
            self._model = CLIPModel.from_pretrained(model_dir, local_files_only=True, dtype=dtype).to(self.device)
            self._processor = CLIPProcessor.from_pretrained(model_dir, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise AviError(f"cannot load a CLIP model from {model_dir}: {exc}") from None
        self._model.eval()
        self._max_text = int(getattr(self._model.config.text_config, "max_position_embeddings", 77))
        # the torchvision backend takes tensors and a device; the PIL one (no torchvision) does not
        tensors = "Torchvision" in "".join(c.__name__ for c in type(self._processor.image_processor).__mro__)
        self.device_preprocess = tensors and (self.device != "cpu" if device_preprocess is None
                                              else bool(device_preprocess))
        self.name = f"hf-clip:{model_dir.name}"

    def pixel_values(self, images: list[np.ndarray]):
        """The model's input for same-size RGB uint8 images (H, W, 3): float (N, 3, S, S) on the device."""
        proc = self._processor.image_processor
        if self.device_preprocess:
            px = proc(images=list(_to_device(images, self.device)), return_tensors="pt",
                      device=self.device)["pixel_values"]
        else:
            px = proc(images=images, return_tensors="pt")["pixel_values"]
        return px.to(self.device, self.dtype)

    def score(self, frames: Sequence[Any], text: str) -> np.ndarray:
        """See :meth:`FrameTextScorer.score`; float32 (n_frames,) in [-1, 1]."""
        import torch

        images = [_image(f) for f in frames]
        if not images:
            return np.zeros((0,), dtype=np.float32)
        out = np.zeros((len(images),), dtype=np.float32)
        with torch.no_grad():
            tok = self._processor(text=[text], return_tensors="pt", padding=True, truncation=True,
                                  max_length=self._max_text)
            tok = {k: v.to(self.device) for k, v in tok.items() if k in ("input_ids", "attention_mask")}
            text_feat = _features(self._model.get_text_features(**tok))
            for idx in _by_size(images, self.batch_size):
                px = self.pixel_values([images[i] for i in idx])
                out[idx] = _cosine(_features(self._model.get_image_features(pixel_values=px)), text_feat)
        return out


class OpenClipScorer:
    """An ``open_clip`` model from a local checkpoint (AVI's CLIP tool).

    Args:
        model_name: a built-in open_clip architecture (e.g. ``"ViT-L-14"``) used with
            ``checkpoint``, or ``"local-dir:/path"`` to a directory holding
            ``open_clip_config.json`` and its weights (``checkpoint`` is then ignored).
        checkpoint: local weights file (.safetensors, .bin, .pt) for a built-in name.
        device: torch device; ``None`` or ``"auto"`` picks CUDA when available, else CPU.
        batch_size: frames per image forward pass.
        dtype: a torch dtype or its name; None or ``"auto"`` = float16 on CUDA, float32 elsewhere. The whole
            model is cast (as HF CLIP loads in one dtype; open_clip's LayerNorm computes in the input's dtype).
        device_preprocess: the preprocessing ``Compose``'s resize, crop and normalisation run as tensors on
            the model's device, on a batch of frames of one size; False = per frame with PIL on the CPU (as
            before issue 37); None = on when the device is not the CPU.

    Raises:
        AviError: open_clip is not installed, a hub model or pretrained tag was named
            (that would download), or the checkpoint is missing.
    """

    def __init__(self, model_name: str, checkpoint: Path | None = None, device: str | None = None,
                 batch_size: int = 32, dtype=None, device_preprocess: bool | None = None):
        from avi.offline import enforce_offline_env

        enforce_offline_env()
        try:
            import open_clip
            import torch
        except ImportError as exc:
            raise AviError("open_clip is not installed: pip install open_clip_torch (the 'gpu' extra)") from exc
        if model_name.startswith("hf-hub:"):
            raise AviError(f"open_clip model {model_name!r} would be downloaded from the Hugging Face hub; "
                           f"download it beforehand and use 'local-dir:/path' or a checkpoint file")
        pretrained = None
        if model_name.startswith("local-dir:"):
            local = Path(model_name.split(":", 1)[1])
            if not (local / "open_clip_config.json").is_file():
                raise AviError(f"{local} has no open_clip_config.json (needed by open_clip_model={model_name!r})")
            if not any(p.suffix in {".safetensors", ".bin", ".pth"} for p in local.iterdir()):  # what open_clip reads
                raise AviError(f"{local} holds no open_clip weights (.safetensors, .bin, .pth)")
            label = local.name
        else:
            if checkpoint is None or not Path(checkpoint).is_file():
                raise AviError(f"open_clip model {model_name!r} needs a local checkpoint file "
                               f"(open_clip_checkpoint); got {checkpoint!s}. Pretrained tags are not used: "
                               f"they download weights.")
            pretrained = str(checkpoint)
            label = model_name
        self.device = _device(device)
        self.batch_size = max(1, batch_size)
        self.dtype = _dtype(dtype, self.device)
        try:  # loaded in float32 on the CPU, then cast whole: every parameter in one dtype, as HF CLIP
            self._model, _, self._preprocess = open_clip.create_model_and_transforms(
                model_name, pretrained=pretrained, device="cpu", precision="fp32")
            self._tokenizer = open_clip.get_tokenizer(model_name)
        except (RuntimeError, ValueError, OSError, KeyError) as exc:
            raise AviError(f"cannot load open_clip model {model_name!r}: {exc}") from None
        self._model.to(device=self.device, dtype=self.dtype).eval()
        self._torch = torch
        on = self.device != "cpu" if device_preprocess is None else bool(device_preprocess)
        self._tensor_steps = _tensor_steps(self._preprocess) if on else None
        self.device_preprocess = self._tensor_steps is not None
        self.name = f"open_clip:{label}"

    def pixel_values(self, images: list[np.ndarray]):
        """The model's input for same-size RGB uint8 images (H, W, 3): float (N, 3, S, S) on the device."""
        torch = self._torch
        if self._tensor_steps is None:
            from PIL import Image

            x = torch.stack([self._preprocess(Image.fromarray(img)) for img in images])
        else:
            x = _to_device(images, self.device).float() / 255.0
            for step in self._tensor_steps:
                x = step(x)
        return x.to(self.device, self.dtype)

    def score(self, frames: Sequence[Any], text: str) -> np.ndarray:
        """See :meth:`FrameTextScorer.score`; float32 (n_frames,) in [-1, 1]."""
        torch = self._torch
        images = [_image(f) for f in frames]
        if not images:
            return np.zeros((0,), dtype=np.float32)
        out = np.zeros((len(images),), dtype=np.float32)
        with torch.no_grad():
            text_feat = self._model.encode_text(self._tokenizer([text]).to(self.device))
            for idx in _by_size(images, self.batch_size):
                out[idx] = _cosine(self._model.encode_image(self.pixel_values([images[i] for i in idx])), text_feat)
        return out


def _tensor_steps(preprocess) -> list | None:
    """The steps of open_clip's preprocessing ``Compose`` that work on a batched float tensor in [0, 1]
    (torchvision's Resize, CenterCrop, Normalize...), in order, with the PIL-only ones (RGB conversion,
    ``ToTensor``) left out; None when a step is neither (then the frames are preprocessed on the CPU)."""
    from torchvision import transforms as T

    steps = []
    for t in getattr(preprocess, "transforms", []):
        name = (type(t).__name__ + getattr(t, "__name__", "")).lower()
        if isinstance(t, T.ToTensor) or "convert" in name:  # ToTensor, RGB conversion: frames are RGB arrays
            continue
        if isinstance(t, (T.Resize, T.CenterCrop, T.Normalize)):
            if isinstance(t, T.Resize):
                t = T.Resize(t.size, interpolation=t.interpolation, max_size=t.max_size, antialias=True)
            steps.append(t)
        else:
            return None
    return steps
