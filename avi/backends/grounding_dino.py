"""Open-vocabulary object detection with Grounding DINO (gpu profile; AVI §3.3.2 ``object_detect``).

Grounding DINO (Liu et al. 2023, "Grounding DINO: Marrying DINO with Grounded
Pre-Training for Open-Set Object Detection") scores 900 box queries against
every token of a text prompt. AVI (§3.3.2, §4.1) uses it for the Perceive
phase's ``object_detect`` tool with NMS at IoU 0.5.

Two backends implement the :class:`~avi.backends.detector.Detector` protocol:

* :class:`GroundingDinoDetector`: the transformers implementation
  (``AutoProcessor`` + ``AutoModelForZeroShotObjectDetection``) from a local
  directory in Hugging Face format (``config.json``, ``model.safetensors``,
  processor and tokenizer files, e.g. a copy of IDEA-Research/grounding-dino-tiny).
* :class:`GroundingDinoOriginalDetector`: the original implementation
  (PyPI ``groundingdino-py``) and its checkpoint format (a ``*.py`` config plus a
  ``*.pth`` checkpoint, and a local ``bert-base-uncased/`` text encoder). It
  needs ``transformers<5``: its BERT wrapper calls
  ``BertModel.get_extended_attention_mask``, which transformers 5 removed.

:func:`load_grounding_dino` picks the backend from the directory's contents.

Prompt format (both backends): lowercase labels, each ending with ``" ."``,
e.g. ``"person . red car ."``. Each kept box query is mapped back to exactly
one requested label (:func:`match_label`); queries matching none are dropped.
Boxes are pixel xyxy of the original frame, clipped to it, with per-label NMS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from avi.backends.boxes import nms
from avi.backends.grounding_text import build_prompt, label_token_spans, match_label, normalize_label  # noqa: F401
from avi.backends.types import Detection, DetectionResult
from avi.errors import AviError
from avi.video.decode import Frame


def _frame_size(frame: Frame) -> tuple[int, int]:
    """(height, width) of a frame in pixels."""
    h, w = frame.image.shape[:2]
    return int(h), int(w)


def _finish(frame: Frame, boxes: np.ndarray, scores: np.ndarray, phrases: Sequence[str], label_probs: np.ndarray,
            canonical: list[str], requested: list[str], iou_threshold: float) -> list[Detection]:
    """Map, clip and NMS one frame's kept queries.

    Args:
        boxes: (N, 4) pixel xyxy in the original frame.
        scores: (N,) box scores in [0, 1].
        phrases: N decoded phrases.
        label_probs: (N, L) per label, the highest token probability of the box.
    """
    h, w = _frame_size(frame)
    per_label: dict[int, list[tuple[tuple[float, float, float, float], float]]] = {}
    for box, score, phrase, probs in zip(boxes, scores, phrases, label_probs):
        idx = match_label(phrase, canonical, probs)
        if idx is None:
            continue
        x1, y1, x2, y2 = (float(v) for v in box)
        x1, x2 = min(max(x1, 0.0), w), min(max(x2, 0.0), w)
        y1, y2 = min(max(y1, 0.0), h), min(max(y2, 0.0), h)
        if x2 <= x1 or y2 <= y1:
            continue
        per_label.setdefault(idx, []).append(((x1, y1, x2, y2), float(score)))
    dets: list[Detection] = []
    for idx, items in per_label.items():
        bxs = [b for b, _ in items]
        scs = [s for _, s in items]
        dets += [Detection(requested[idx], scs[k], bxs[k], frame.t_s, (w, h)) for k in nms(bxs, scs, iou_threshold)]
    dets.sort(key=lambda d: -d.score)
    return dets


def _batches(frames: Sequence[Frame], batch_size: int) -> list[list[int]]:
    """Indices of ``frames`` grouped by frame size, at most ``batch_size`` per group."""
    by_size: dict[tuple[int, int], list[int]] = {}
    for i, f in enumerate(frames):
        by_size.setdefault(_frame_size(f), []).append(i)
    return [idx[k:k + batch_size] for idx in by_size.values() for k in range(0, len(idx), batch_size)]


def _device(device: str | None) -> str:
    from avi.backends.devices import resolve_device

    return resolve_device(device)


def _check_thresholds(box_threshold: float, text_threshold: float, iou_threshold: float) -> None:
    for name, v in (("box_threshold", box_threshold), ("text_threshold", text_threshold),
                    ("iou_threshold", iou_threshold)):
        if not 0.0 <= float(v) <= 1.0:
            raise AviError(f"detector {name} must be in [0, 1], got {v}")


class GroundingDinoDetector:
    """Grounding DINO through transformers, from a local directory (gpu profile).

    Open vocabulary: every label is supported. Per frame the model sees the
    prompt built by :func:`build_prompt`; the processor's
    ``post_process_grounded_object_detection`` keeps queries whose best token
    probability exceeds ``box_threshold`` and names each by the tokens above
    ``text_threshold``, with boxes scaled to the original frame (``target_sizes``
    = (H, W)). Each query is then mapped to one requested label
    (:func:`match_label`), clipped to the frame and NMS-ed per label.

    Labels whose prompt exceeds the model's ``max_text_len`` (256 tokens) are
    split over several forward passes. By default the post-processing runs on whole
    tensors (:mod:`avi.backends.grounding_post`, issue 37); ``vectorised=False`` takes
    the processor's per-box post-processing and :func:`match_label` instead (the
    reference path, kept for comparison).

    Args:
        model_dir: local directory with ``config.json``, weights and the processor
            (``save_pretrained`` layout). Never downloaded (``local_files_only``).
        box_threshold: minimum box score in [0, 1] (0.35 and 0.25 below are the original demo defaults;
            AVI does not state its thresholds).
        text_threshold: minimum token probability in [0, 1] for a token to name the box.
        iou_threshold: per-label NMS IoU (AVI §4.1: 0.5).
        device: ``"cuda"``, ``"cpu"``...; None or ``"auto"`` = cuda if available, else cpu.
        batch_size: frames per forward pass (frames of one size are batched).
        dtype: weights and activations (``"bfloat16"``, a torch dtype...); None or ``"auto"`` =
            bfloat16 on CUDA, float32 elsewhere (:func:`avi.backends.devices.resolve_dtype`).
        vectorised: post-processing on whole tensors (True) or per box (False, the reference).

    Raises:
        AviError: missing directory or files, transformers not installed, a
            threshold outside [0, 1].
    """

    vocabulary = "any object named in text"
    class_list = None  # open vocabulary
    detect_all = None  # it needs words

    def __init__(self, model_dir: str | Path, box_threshold: float = 0.35, text_threshold: float = 0.25,
                 iou_threshold: float = 0.5, device: str | None = None, batch_size: int = 4, dtype=None,
                 vectorised: bool = True):
        _check_thresholds(box_threshold, text_threshold, iou_threshold)
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").is_file():
            raise AviError(f"no Grounding-DINO model (config.json) in {model_dir}")
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
        except ImportError as exc:
            raise AviError("Grounding-DINO needs torch and transformers: pip install 'avi[gpu]'") from exc
        self.name = f"grounding-dino:{model_dir.name}"
        self.box_threshold = float(box_threshold)
        self.text_threshold = float(text_threshold)
        self.iou_threshold = float(iou_threshold)
        self.batch_size = max(1, int(batch_size))
        self.device = _device(device)
        self.dtype = _dtype(dtype, self.device)
        self.vectorised = bool(vectorised)
        try:
            self.processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
            self.model = AutoModelForZeroShotObjectDetection.from_pretrained(model_dir, local_files_only=True,
                                                                             dtype=self.dtype)
        except (OSError, ValueError) as exc:
            raise AviError(f"cannot load Grounding-DINO from {model_dir}: {str(exc).splitlines()[0]}") from exc
        self.model.to(self.device).eval()
        self.max_text_len = int(getattr(self.model.config, "max_text_len", 256))
        tok = self.processor.tokenizer
        self._sep_ids = {int(i) for i in (tok.convert_tokens_to_ids("."), tok.sep_token_id) if i is not None}

    def supports(self, label: str) -> bool:
        """Always True: Grounding DINO is open vocabulary."""
        return True

    def detect(self, frame: Frame, labels: Sequence[str]) -> DetectionResult:
        """Detections of ``labels`` in one frame (see :meth:`detect_batch`)."""
        return self.detect_batch([frame], labels)[0]

    def detect_batch(self, frames: Sequence[Frame], labels: Sequence[str]) -> list[DetectionResult]:
        """Detections of ``labels`` in each frame, frames of one size batched per forward pass.

        Args:
            frames: RGB uint8 frames, shape (H, W, 3) each.
            labels: object names (free text).

        Returns:
            one :class:`DetectionResult` per frame, in order: boxes pixel xyxy in
            that frame, scores in [0, 1], sorted by score; ``unsupported`` empty.
        """
        results: list[list[Detection]] = [[] for _ in frames]
        _, canonical, requested = build_prompt(labels)
        if frames and canonical:
            for group in self._label_groups(canonical):
                prompt = " ".join(f"{canonical[i]} ." for i in group)
                names = [canonical[i] for i in group]
                asked = [requested[i] for i in group]
                for idx in _batches(frames, self.batch_size):
                    for i, dets in zip(idx, self._run([frames[i] for i in idx], prompt, names, asked)):
                        results[i] += dets
        out = []
        for frame, dets in zip(frames, results):
            dets.sort(key=lambda d: -d.score)
            out.append(DetectionResult(frame.t_s, dets, []))
        return out

    def _label_groups(self, canonical: list[str]) -> list[list[int]]:
        """Label indices packed so each group's prompt fits ``max_text_len`` tokens."""
        budget = self.max_text_len - 2  # [CLS] and [SEP]
        tok = self.processor.tokenizer
        groups: list[list[int]] = [[]]
        used = 0
        for i, label in enumerate(canonical):
            n = len(tok(f"{label} .", add_special_tokens=False)["input_ids"])
            if groups[-1] and used + n > budget:
                groups.append([])
                used = 0
            groups[-1].append(i)
            used += n
        return groups

    def _run(self, frames: list[Frame], prompt: str, canonical: list[str], requested: list[str]) -> list[list[Detection]]:
        import torch
        from PIL import Image

        images = [Image.fromarray(np.ascontiguousarray(f.image)) for f in frames]
        inputs = self.processor(images=images, text=[prompt] * len(images), return_tensors="pt").to(
            self.device, self.dtype)  # floating tensors only: the token ids stay integers
        with torch.inference_mode():
            outputs = self.model(**inputs)
        if self.vectorised:
            return self._select(frames, outputs, inputs["input_ids"][0].tolist(), canonical, requested)
        sizes = [_frame_size(f) for f in frames]
        posts = self.processor.post_process_grounded_object_detection(
            outputs, inputs["input_ids"], threshold=self.box_threshold, text_threshold=self.text_threshold,
            target_sizes=sizes)
        # the queries post-processing kept (the same rule as transformers': best token probability > threshold)
        probs = torch.sigmoid(outputs.logits.float())  # (B, Q, max_text_len)
        keep = probs.max(dim=-1).values > self.box_threshold
        out = []
        for b, (frame, post) in enumerate(zip(frames, posts)):
            ids = inputs["input_ids"][b].tolist()
            spans = label_token_spans(ids, self._sep_ids, len(canonical))
            kept = probs[b][keep[b]]  # (N, max_text_len)
            label_probs = np.zeros((len(post["scores"]), len(canonical)), dtype=np.float32)
            if kept.shape[0] == label_probs.shape[0]:  # else no tie-break information (cannot happen in float32)
                for j, span in enumerate(spans):
                    if span:
                        label_probs[:, j] = kept[:, span].max(dim=-1).values.cpu().numpy()
            phrases = post.get("text_labels", None)
            if phrases is None:  # transformers < 4.51
                phrases = post["labels"]
            out.append(_finish(frame, post["boxes"].float().cpu().numpy().reshape(-1, 4),
                               post["scores"].float().cpu().numpy().reshape(-1), list(phrases), label_probs,
                               canonical, requested, self.iou_threshold))
        return out


    def _select(self, frames: list[Frame], outputs, ids: list[int], canonical: list[str],
                requested: list[str]) -> list[list[Detection]]:
        """Detections of one batch (frames of one size, one prompt) by :func:`select_detections`."""
        from avi.backends.grounding_post import label_mask, select_detections

        probs = outputs.logits.float().sigmoid()  # (B, Q, max_text_len)
        mask = label_mask(label_token_spans(ids, self._sep_ids, len(canonical)), probs.shape[-1], probs.device)
        h, w = _frame_size(frames[0])
        picked = select_detections(probs, outputs.pred_boxes, mask, (h, w), self.box_threshold, self.text_threshold,
                                   self.iou_threshold)
        return [[Detection(requested[int(k)], float(s), tuple(float(v) for v in b), f.t_s, (w, h))
                 for b, s, k in zip(*sel)] for f, sel in zip(frames, picked)]


def _dtype(dtype, device: str):
    """The torch dtype for ``dtype`` (a name, a torch dtype, or None/"auto": see :func:`resolve_dtype`)."""
    from avi.backends.devices import resolve_dtype, torch_dtype

    if dtype is not None and not isinstance(dtype, str):
        return dtype
    return torch_dtype(resolve_dtype(dtype, device, "detector"))


class GroundingDinoOriginalDetector:
    """Grounding DINO through the original implementation (PyPI ``groundingdino-py``), same protocol.

    Directory layout (the IDEA-Research release): one ``*.py`` model config
    (e.g. ``GroundingDINO_SwinT_OGC.py``), one ``*.pth`` checkpoint
    (``{"model": state_dict}``, e.g. ``groundingdino_swint_ogc.pth``) and a
    ``bert-base-uncased/`` directory (tokenizer + BertModel) that replaces the
    config's ``text_encoder_type`` so nothing is downloaded. Frames are resized
    to a short side of 800 px (long side at most 1333) and normalised with
    ImageNet mean/std as in ``groundingdino.util.inference``; the model's
    normalised cxcywh boxes are scaled to the original frame.

    Needs ``groundingdino-py`` and ``transformers<5`` (checked on 0.4.0 with
    transformers 4.57.6, torch 2.14.1, CPU; without its compiled ``_C`` extension
    deformable attention runs the slower pure-PyTorch path).

    Args:
        model_dir: the directory above.
        box_threshold, text_threshold, iou_threshold, device, batch_size: as for
            :class:`GroundingDinoDetector`.

    Raises:
        AviError: missing files, groundingdino-py missing, transformers >= 5.
    """

    vocabulary = "any object named in text"
    class_list = None  # open vocabulary
    detect_all = None  # it needs words

    def __init__(self, model_dir: str | Path, box_threshold: float = 0.35, text_threshold: float = 0.25,
                 iou_threshold: float = 0.5, device: str | None = None, batch_size: int = 4):
        _check_thresholds(box_threshold, text_threshold, iou_threshold)
        model_dir = Path(model_dir)
        configs = sorted(model_dir.glob("*.py"))
        ckpts = sorted(model_dir.glob("*.pth"))
        bert = model_dir / "bert-base-uncased"
        if len(configs) != 1 or len(ckpts) != 1 or not (bert / "config.json").is_file():
            raise AviError(f"{model_dir} needs one *.py config, one *.pth checkpoint and bert-base-uncased/ "
                           "(original Grounding-DINO layout)")
        try:
            import torch
            import transformers
            from groundingdino.models import build_model
            from groundingdino.util.misc import clean_state_dict
            from groundingdino.util.slconfig import SLConfig
        except ImportError as exc:
            raise AviError("the original Grounding-DINO needs groundingdino-py: pip install groundingdino-py "
                           "'transformers<5'") from exc
        if int(transformers.__version__.split(".")[0]) >= 5:
            raise AviError(f"groundingdino-py does not run on transformers {transformers.__version__} "
                           "(BertModel.get_extended_attention_mask was removed in 5.0): use the transformers "
                           "format directory instead, or transformers<5")
        from transformers import AutoTokenizer

        self.name = f"groundingdino-py:{ckpts[0].stem}"
        self.box_threshold = float(box_threshold)
        self.text_threshold = float(text_threshold)
        self.iou_threshold = float(iou_threshold)
        self.batch_size = max(1, int(batch_size))
        self.device = _device(device)
        args = SLConfig.fromfile(str(configs[0]))
        args.device = self.device
        args.text_encoder_type = str(bert)
        self.model = build_model(args)
        state = torch.load(ckpts[0], map_location="cpu", weights_only=False)
        self.model.load_state_dict(clean_state_dict(state.get("model", state)), strict=False)
        self.model.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(bert), local_files_only=True)
        self.max_text_len = int(getattr(args, "max_text_len", 256))
        self._sep_ids = {int(i) for i in (self.tokenizer.convert_tokens_to_ids("."), self.tokenizer.sep_token_id)
                         if i is not None}

    def supports(self, label: str) -> bool:
        """Always True: Grounding DINO is open vocabulary."""
        return True

    def detect(self, frame: Frame, labels: Sequence[str]) -> DetectionResult:
        """Detections of ``labels`` in one frame (see :meth:`detect_batch`)."""
        return self.detect_batch([frame], labels)[0]

    def detect_batch(self, frames: Sequence[Frame], labels: Sequence[str]) -> list[DetectionResult]:
        """As :meth:`GroundingDinoDetector.detect_batch`; labels beyond ``max_text_len`` tokens are not seen."""
        prompt, canonical, requested = build_prompt(labels)
        results: list[list[Detection]] = [[] for _ in frames]
        if frames and canonical:
            for idx in _batches(frames, self.batch_size):
                for i, dets in zip(idx, self._run([frames[i] for i in idx], prompt, canonical, requested)):
                    results[i] = dets
        return [DetectionResult(f.t_s, d, []) for f, d in zip(frames, results)]

    def _run(self, frames: list[Frame], prompt: str, canonical: list[str], requested: list[str]) -> list[list[Detection]]:
        import torch
        import torch.nn.functional as F

        mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
        h, w = _frame_size(frames[0])
        scale = min(800 / min(h, w), 1333 / max(h, w))
        size = (max(1, round(h * scale)), max(1, round(w * scale)))
        x = torch.stack([torch.from_numpy(np.ascontiguousarray(f.image)).permute(2, 0, 1) for f in frames]).float() / 255
        x = F.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=True)
        x = ((x - mean) / std).to(self.device)
        with torch.inference_mode():
            outputs = self.model(x, captions=[prompt] * len(frames))
        probs = outputs["pred_logits"].float().sigmoid().cpu()  # (B, Q, 256)
        cxcywh = outputs["pred_boxes"].float().cpu()  # (B, Q, 4), normalised
        ids = self.tokenizer(prompt)["input_ids"]
        spans = label_token_spans(ids, self._sep_ids, len(canonical))
        out = []
        for b, frame in enumerate(frames):
            scores = probs[b].max(dim=-1).values
            keep = scores > self.box_threshold
            p, bx = probs[b][keep], cxcywh[b][keep]
            xyxy = torch.stack([bx[:, 0] - bx[:, 2] / 2, bx[:, 1] - bx[:, 3] / 2,
                                bx[:, 0] + bx[:, 2] / 2, bx[:, 1] + bx[:, 3] / 2], dim=-1)
            xyxy = xyxy * torch.tensor([w, h, w, h], dtype=xyxy.dtype)
            phrases = []
            for row in p:
                pos = [i for i in (row[:len(ids)] > self.text_threshold).nonzero().flatten().tolist()
                       if 0 < i < len(ids) - 1]
                phrases.append(self.tokenizer.decode([ids[i] for i in pos]))
            label_probs = np.zeros((p.shape[0], len(canonical)), dtype=np.float32)
            for j, span in enumerate(spans):
                if span:
                    label_probs[:, j] = p[:, span].max(dim=-1).values.numpy()
            out.append(_finish(frame, xyxy.numpy().reshape(-1, 4), scores[keep].numpy(), phrases, label_probs,
                               canonical, requested, self.iou_threshold))
        return out


def load_grounding_dino(model_dir: str | Path, **kwargs) -> GroundingDinoDetector | GroundingDinoOriginalDetector:
    """The Grounding-DINO backend for a local directory, chosen by its format.

    ``config.json`` (Hugging Face format) selects :class:`GroundingDinoDetector`;
    a ``*.pth`` checkpoint (original release) selects :class:`GroundingDinoOriginalDetector`.

    Args:
        model_dir: local model directory.
        **kwargs: thresholds, device, batch_size, dtype (see the classes; the original runs in float32).

    Raises:
        AviError: the directory is missing or holds neither format.
    """
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise AviError(f"Grounding-DINO model directory not found: {model_dir}")
    if (model_dir / "config.json").is_file():
        return GroundingDinoDetector(model_dir, **kwargs)
    if any(model_dir.glob("*.pth")):
        kwargs.pop("dtype", None)  # the original implementation runs in float32
        return GroundingDinoOriginalDetector(model_dir, **kwargs)
    raise AviError(f"{model_dir} holds no Grounding-DINO model (config.json or *.pth checkpoint)")
