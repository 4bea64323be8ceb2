"""Grounding-DINO post-processing on whole tensors (issue 37, item 5): from the model's token probabilities and
boxes to labelled, clipped, NMS-ed detections for a batch of frames, with no Python loop over boxes.

transformers' ``post_process_grounded_object_detection`` names each kept box query by decoding the prompt tokens
above the text threshold, one ``tokenizer.decode`` per box, and :func:`avi.backends.grounding_dino.match_label`
then maps each phrase to a label with regular expressions; with a few hundred boxes a frame that took seconds per
batch on a GPU (issue 37). Here every step is a tensor operation on the model's device:

* a query is kept when its best token probability exceeds ``box_threshold`` (transformers' rule; the score);
* it is named by the label whose prompt tokens pass ``text_threshold`` in the largest share, ties going to the
  label with the higher token probability, then to the earlier label. Where the decoded phrase is exactly one
  label's tokens this is :func:`match_label`'s word-level Jaccard (k of n tokens: k/n), and both rules agree;
  they differ only for a phrase running over two labels without their ``.`` separator passing the threshold,
  which this rule does not penalise;
* boxes (normalised cx, cy, w, h) become pixel xyxy of the original frame, clipped to it; empty ones are dropped;
* NMS per label at ``iou_threshold`` (``torchvision.ops.batched_nms``; OpenCV per label without torchvision).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def label_mask(spans: Sequence[Sequence[int]], n_tokens: int, device=None):
    """Bool tensor (L, T): ``mask[l, t]`` when prompt position ``t`` belongs to label ``l``.

    Args:
        spans: per label, its token positions (:func:`avi.backends.grounding_dino.label_token_spans`).
        n_tokens: T, the model's text length (``max_text_len``; the logits' last dimension).
    """
    import torch

    mask = torch.zeros((len(spans), n_tokens), dtype=torch.bool, device=device)
    for j, span in enumerate(spans):
        pos = [p for p in span if p < n_tokens]
        if pos:
            mask[j, pos] = True
    return mask


def select_detections(probs, boxes, mask, size: tuple[int, int], box_threshold: float, text_threshold: float,
                      iou_threshold: float) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Kept, labelled, clipped and NMS-ed boxes of each frame of a batch (see the module docstring).

    Args:
        probs: (B, Q, T) float token probabilities (sigmoid of the logits) of Q box queries over T positions.
        boxes: (B, Q, 4) float normalised cx, cy, w, h in [0, 1].
        mask: (L, T) bool, the positions of each of L labels (:func:`label_mask`).
        size: (height, width) of the frames in pixels (one size per batch).
        box_threshold, text_threshold, iou_threshold: in [0, 1].

    Returns:
        per frame ``(xyxy float32 (N, 4) pixels, scores float32 (N,), label indices int64 (N,))``, by score,
        highest first.
    """
    import torch

    h, w = size
    probs, boxes = probs.float(), boxes.float()
    scores = probs.amax(dim=-1)  # (B, Q)
    m = mask.to(probs.device)
    n_label = m.sum(dim=-1).clamp(min=1)  # (L,)
    above = (probs > text_threshold).to(probs.dtype)  # (B, Q, T)
    share = torch.einsum("bqt,lt->bql", above, m.to(probs.dtype)) / n_label  # (B, Q, L)
    label_prob = probs.unsqueeze(2).masked_fill(~m, 0.0).amax(dim=-1)  # (B, Q, L)
    best = share.amax(dim=-1, keepdim=True)  # (B, Q, 1)
    label = torch.where(share == best, label_prob, torch.full_like(label_prob, -1.0)).argmax(dim=-1)  # first max
    cx, cy, bw, bh = boxes.unbind(-1)
    xyxy = torch.stack([(cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h], dim=-1)
    xyxy[..., 0::2] = xyxy[..., 0::2].clamp(0.0, float(w))
    xyxy[..., 1::2] = xyxy[..., 1::2].clamp(0.0, float(h))
    valid = (scores > box_threshold) & (best.squeeze(-1) > 0) & (xyxy[..., 2] > xyxy[..., 0]) \
        & (xyxy[..., 3] > xyxy[..., 1])
    out = []
    for b in range(probs.shape[0]):
        idx = valid[b].nonzero().squeeze(-1)
        bx, sc, lb = xyxy[b, idx], scores[b, idx], label[b, idx]
        keep = _batched_nms(bx, sc, lb, iou_threshold)
        out.append((bx[keep].cpu().numpy().astype(np.float32), sc[keep].cpu().numpy().astype(np.float32),
                    lb[keep].cpu().numpy().astype(np.int64)))
    return out


def _batched_nms(boxes, scores, labels, iou_threshold: float):
    """Indices kept by per-label NMS, by score, highest first (torchvision; OpenCV per label without it)."""
    import torch

    if boxes.shape[0] == 0:
        return torch.zeros((0,), dtype=torch.long, device=boxes.device)
    try:
        from torchvision.ops import batched_nms
    except (ImportError, RuntimeError):  # torchvision missing, or a build that does not match torch
        from avi.backends.boxes import nms

        bx, sc, lb = boxes.cpu().tolist(), scores.cpu().tolist(), labels.cpu().tolist()
        keep = []
        for lab in sorted(set(lb)):
            idx = [i for i, v in enumerate(lb) if v == lab]
            keep += [idx[k] for k in nms([bx[i] for i in idx], [sc[i] for i in idx], iou_threshold)]
        keep.sort(key=lambda i: -sc[i])
        return torch.tensor(keep, dtype=torch.long, device=boxes.device)
    return batched_nms(boxes, scores, labels, iou_threshold)
