"""Frames as chat message parts: thinned, JPEG data URLs labelled with their time, or files for a local server."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np

from avi.video.decode import Frame


def thin_frames(frames: list[Frame], max_frames: int) -> list[Frame]:
    """At most ``max_frames`` of ``frames``, evenly spread, first and last kept, order preserved."""
    n = len(frames)
    if max_frames <= 0:
        return []
    if n <= max_frames:
        return list(frames)
    if max_frames == 1:
        return [frames[n // 2]]
    idx = np.round(np.linspace(0, n - 1, max_frames)).astype(int)
    return [frames[i] for i in idx]


def jpeg_data_url(image: np.ndarray, quality: int = 85) -> str:
    """``data:image/jpeg;base64,...`` of an RGB uint8 array (H, W, 3), at its own size."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def images_as_files(messages: list[dict], folder: Path) -> list[dict]:
    """A copy of ``messages`` whose base64 ``data:image/...`` parts are written to ``folder`` as files
    (``000.jpg``, ``001.jpg``, …, in order) and replaced by their ``file://`` URLs (absolute paths).

    Other parts, and images that already are URLs, are kept as they are. ``folder`` must exist.
    """
    out, n = [], 0
    for msg in messages:
        content = msg.get("content")
        if not isinstance(content, list):
            out.append(msg)
            continue
        parts = []
        for part in content:
            url = (part.get("image_url") or {}).get("url") if part.get("type") == "image_url" else None
            if isinstance(url, str) and url.startswith("data:image/") and ";base64," in url:
                head, data = url.split(",", 1)
                ext = {"jpeg": "jpg", "png": "png", "webp": "webp"}.get(head[len("data:image/"):].split(";")[0], "img")
                path = (folder / f"{n:03d}.{ext}").resolve()
                path.write_bytes(base64.b64decode(data))
                n += 1
                part = {**part, "image_url": {**part["image_url"], "url": path.as_uri()}}
            parts.append(part)
        out.append({**msg, "content": parts})
    return out


def frame_label(t_s: float) -> str:
    """The text part placed before each frame: ``Frame at 12.5s`` (seconds from the video start)."""
    return f"Frame at {t_s:.1f}s"


def frames_to_content(frames: list[Frame], max_frames: int, quality: int = 85) -> list[dict]:
    """OpenAI user-content parts for frames: a time label then the JPEG, per frame.

    Args:
        frames: decoded frames (long side already <= 1280 px; sent at their own size).
        max_frames: frames are thinned uniformly to at most this many.
        quality: JPEG quality (1-95).

    Returns:
        ``[{"type": "text", "text": "Frame at 12.5s"}, {"type": "image_url", "image_url":
        {"url": "data:image/jpeg;base64,..."}}, ...]``: two parts per kept frame, in time order.
    """
    parts: list[dict] = []
    for f in sorted(thin_frames(frames, max_frames), key=lambda f: f.t_s):
        parts.append({"type": "text", "text": frame_label(f.t_s)})
        parts.append({"type": "image_url", "image_url": {"url": jpeg_data_url(f.image, quality)}})
    return parts
