"""Synthetic test videos with known ground truth, made at test time with PyAV and Pillow.

Nothing here is committed as media: every test builds the videos it needs in a
temporary directory (a few hundred kB, well under a second each).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import av
import numpy as np
from PIL import Image, ImageDraw, ImageFont


@dataclass(frozen=True)
class Text:
    """Text drawn from ``start_s`` (inclusive) to ``end_s`` (exclusive) at pixel ``xy``."""

    text: str
    start_s: float
    end_s: float
    xy: tuple[int, int] = (60, 140)
    size: int = 64
    color: str = "white"


@dataclass(frozen=True)
class Box:
    """A filled square moving right at ``speed_px_s`` between ``start_s`` and ``end_s``."""

    start_s: float
    end_s: float
    color: str = "red"
    side: int = 80
    x0: int = 40
    y: int = 240
    speed_px_s: float = 120.0


@dataclass
class Spec:
    """A whole synthetic video.

    Attributes:
        scenes: ``(start_s, background colour)``; a new entry is a hard cut.
    """

    duration_s: float = 20.0
    fps: int = 10
    size: tuple[int, int] = (640, 360)
    scenes: list[tuple[float, str]] = field(default_factory=lambda: [(0.0, "navy")])
    texts: list[Text] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    noise: int = 0  # gray-level noise amplitude (0 = clean synthetic frames)


def render_frame(spec: Spec, t: float, rng: np.random.Generator) -> np.ndarray:
    """The RGB frame of ``spec`` at time ``t`` (seconds)."""
    bg = [c for s, c in spec.scenes if s <= t + 1e-9][-1]
    img = Image.new("RGB", spec.size, bg)
    draw = ImageDraw.Draw(img)
    for b in spec.boxes:
        if b.start_s <= t < b.end_s:
            x = int(b.x0 + (t - b.start_s) * b.speed_px_s)
            draw.rectangle([x, b.y, x + b.side, b.y + b.side], fill=b.color)
    for tx in spec.texts:
        if tx.start_s <= t < tx.end_s:
            draw.text(tx.xy, tx.text, fill=tx.color, font=ImageFont.load_default(size=tx.size))
    arr = np.asarray(img, dtype=np.int16)
    if spec.noise:
        arr = arr + rng.integers(-spec.noise, spec.noise + 1, size=arr.shape[:2])[..., None]
    return np.clip(arr, 0, 255).astype(np.uint8)


def make_video(path: Path, spec: Spec, codec: str = "libx264") -> Path:
    """Encode ``spec`` to ``path`` (container from the suffix) and return the path."""
    rng = np.random.default_rng(0)
    path = Path(path)
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=spec.fps)
        stream.width, stream.height = spec.size
        stream.pix_fmt = "yuv420p"
        if codec == "libx264":
            stream.options = {"preset": "ultrafast", "crf": "20"}
        n = int(round(spec.duration_s * spec.fps))
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(render_frame(spec, i / spec.fps, rng), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def sign_video_spec() -> Spec:
    """The standard test video: 20 s, two scenes, two signs, one moving red square.

    Ground truth:
        * hard cut at 10.0 s (navy -> dark green);
        * "EXIT 42" on screen 4.0-9.0 s; "ROOM 7B" on screen 12.0-17.0 s;
        * a red square moving right 1.0-3.0 s.
    """
    return Spec(
        duration_s=20.0,
        scenes=[(0.0, "navy"), (10.0, "darkgreen")],
        texts=[Text("EXIT 42", 4.0, 9.0), Text("ROOM 7B", 12.0, 17.0)],
        boxes=[Box(1.0, 3.0)],
    )
