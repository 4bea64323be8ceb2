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


@dataclass(frozen=True)
class Shape:
    """A filled ``kind`` (``circle``, ``square`` or ``triangle``) ``size`` px wide, drawn from ``start_s``
    (inclusive) to ``end_s`` (exclusive); its bounding box's top-left corner is at ``(x0, y)`` at ``start_s``
    and moves horizontally at ``speed_px_s`` (negative: to the left, 0: still)."""

    kind: str
    start_s: float
    end_s: float
    color: str = "red"
    size: int = 80
    x0: int = 40
    y: int = 140
    speed_px_s: float = 0.0

    def box(self, t: float) -> tuple[int, int, int, int]:
        """``(left, top, right, bottom)`` of the shape's bounding box at time ``t``."""
        x = int(round(self.x0 + (t - self.start_s) * self.speed_px_s))
        return x, self.y, x + self.size, self.y + self.size


SHAPE_KINDS = ("circle", "square", "triangle")


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
    shapes: list[Shape] = field(default_factory=list)  # drawn after the boxes, under the texts


def render_frame(spec: Spec, t: float, rng: np.random.Generator) -> np.ndarray:
    """The RGB frame of ``spec`` at time ``t`` (seconds)."""
    bg = [c for s, c in spec.scenes if s <= t + 1e-9][-1]
    img = Image.new("RGB", spec.size, bg)
    draw = ImageDraw.Draw(img)
    for b in spec.boxes:
        if b.start_s <= t < b.end_s:
            x = int(b.x0 + (t - b.start_s) * b.speed_px_s)
            draw.rectangle([x, b.y, x + b.side, b.y + b.side], fill=b.color)
    for sh in spec.shapes:
        if sh.start_s <= t < sh.end_s:
            _draw_shape(draw, sh, t)
    for tx in spec.texts:
        if tx.start_s <= t < tx.end_s:
            draw.text(tx.xy, tx.text, fill=tx.color, font=ImageFont.load_default(size=tx.size))
    arr = np.asarray(img, dtype=np.int16)
    if spec.noise:
        arr = arr + rng.integers(-spec.noise, spec.noise + 1, size=arr.shape[:2])[..., None]
    return np.clip(arr, 0, 255).astype(np.uint8)


def _draw_shape(draw: ImageDraw.ImageDraw, sh: Shape, t: float) -> None:
    x0, y0, x1, y1 = sh.box(t)
    if sh.kind == "circle":
        draw.ellipse([x0, y0, x1, y1], fill=sh.color)
    elif sh.kind == "square":
        draw.rectangle([x0, y0, x1, y1], fill=sh.color)
    elif sh.kind == "triangle":
        draw.polygon([(x0, y1), ((x0 + x1) / 2, y0), (x1, y1)], fill=sh.color)
    else:
        raise ValueError(f"unknown shape kind {sh.kind!r} (one of {', '.join(SHAPE_KINDS)})")


def text_box(tx: Text) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` of the pixels :func:`render_frame` draws for ``tx``."""
    img = Image.new("RGB", (8, 8))
    return tuple(int(v) for v in ImageDraw.Draw(img).textbbox(tx.xy, tx.text,
                                                                font=ImageFont.load_default(size=tx.size)))


def _video_stream(out, spec: Spec, codec: str):
    """A yuv420p video stream of ``spec``'s size and rate in the output container ``out``."""
    stream = out.add_stream(codec, rate=spec.fps)
    stream.width, stream.height = spec.size
    stream.pix_fmt = "yuv420p"
    if codec == "libx264":
        stream.options = {"preset": "ultrafast", "crf": "20"}
    return stream


def make_video(path: Path, spec: Spec, codec: str = "libx264") -> Path:
    """Encode ``spec`` to ``path`` (container from the suffix) and return the path."""
    rng = np.random.default_rng(0)
    path = Path(path)
    with av.open(str(path), "w") as out:
        stream = _video_stream(out, spec, codec)
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


def speak(text: str, wav_path: Path, words_per_minute: int = 150) -> np.ndarray:
    """Synthesise ``text`` with espeak-ng (Debian package) and return mono float32 samples at 16 kHz."""
    import shutil
    import subprocess
    import wave

    exe = shutil.which("espeak-ng")
    if exe is None:
        raise RuntimeError("espeak-ng is not installed (scripts/setup.sh --test installs it)")
    subprocess.run([exe, "-v", "en-us", "-s", str(words_per_minute), "-w", str(wav_path), text], check=True,
                   capture_output=True)
    with wave.open(str(wav_path)) as w:
        rate, n = w.getframerate(), w.getnframes()
        pcm = np.frombuffer(w.readframes(n), dtype=np.int16).astype(np.float32) / 32768.0
    # resample to 16 kHz by linear interpolation (espeak-ng writes 22.05 kHz)
    t_out = np.arange(int(len(pcm) * 16000 / rate)) / 16000
    return np.interp(t_out, np.arange(len(pcm)) / rate, pcm).astype(np.float32)


@dataclass(frozen=True)
class Speech:
    """``text`` spoken starting at ``start_s``."""

    text: str
    start_s: float


def make_narrated_video(path: Path, spec: Spec, speech: list[Speech], workdir: Path,
                        codec: str = "libx264", progress=None) -> tuple[Path, list[tuple[float, float, str]]]:
    """Encode ``spec`` with an AAC audio track in which each :class:`Speech` is said at its time.

    ``progress``, when given, is called as ``progress(frames_done, frames_total)`` after each video frame.

    Returns:
        (path, truth): ``truth`` lists ``(start_s, end_s, text)`` of each utterance, the end
        being where espeak-ng's audio for it stops.
    """
    rate = 16000
    audio = np.zeros(int(spec.duration_s * rate), dtype=np.float32)
    truth = []
    for i, sp in enumerate(speech):
        clip = speak(sp.text, Path(workdir) / f"speech-{i}.wav")
        a = int(sp.start_s * rate)
        clip = clip[: max(0, len(audio) - a)]
        audio[a:a + len(clip)] += clip
        voiced = np.nonzero(np.abs(clip) > 0.02)[0]
        t0 = sp.start_s + (voiced[0] / rate if len(voiced) else 0.0)
        t1 = sp.start_s + (voiced[-1] / rate if len(voiced) else 0.0)
        truth.append((round(float(t0), 2), round(float(t1), 2), sp.text))
    rng = np.random.default_rng(0)
    path = Path(path)
    with av.open(str(path), "w") as out:
        vs = _video_stream(out, spec, codec)
        aus = out.add_stream("aac", rate=rate)
        aus.layout = "mono"
        n = int(round(spec.duration_s * spec.fps))
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(render_frame(spec, i / spec.fps, rng), format="rgb24")
            for packet in vs.encode(frame):
                out.mux(packet)
            if progress is not None:
                progress(i + 1, n)
        for packet in vs.encode():
            out.mux(packet)
        step = 1024
        pcm = np.clip(audio, -1, 1)
        for i in range(0, len(pcm), step):
            chunk = pcm[i:i + step]
            if len(chunk) < step:
                chunk = np.pad(chunk, (0, step - len(chunk)))
            af = av.AudioFrame.from_ndarray(chunk[None, :].astype(np.float32), format="fltp", layout="mono")
            af.sample_rate = rate
            af.pts = i
            for packet in aus.encode(af):
                out.mux(packet)
        for packet in aus.encode():
            out.mux(packet)
    return path, truth


def narrated_video_spec() -> tuple[Spec, list[Speech]]:
    """A 24 s video whose answers are only spoken: a plain grey screen with a counter-free picture.

    Ground truth: "The secret code word is pineapple." said at 4 s; "Meet me at the north gate at
    seven o'clock." said at 14 s. Nothing about either is shown on screen.
    """
    spec = Spec(duration_s=24.0, scenes=[(0.0, "dimgray")], boxes=[Box(2.0, 6.0, color="orange")])
    speech = [Speech("The secret code word is pineapple.", 4.0),
              Speech("Meet me at the north gate at seven o'clock.", 14.0)]
    return spec, speech


def news_video_spec() -> Spec:
    """A 30 s "news" video for boundary_detect: five shots, each with its own caption text.

    Ground truth (hard cuts, two of them off the 2 fps sampling grid):
        * 0.0-6.0 s navy, "WEATHER REPORT";
        * 6.0-13.3 s dark green, "GOAL SCORED" (a red square moves across 8.0-11.0 s);
        * 13.3-21.0 s maroon, "BREAKING NEWS";
        * 21.0-25.7 s dark orange, "TRAFFIC UPDATE";
        * 25.7-30.0 s purple, "GOOD NIGHT".
    """
    shots = [(0.0, "navy", "WEATHER REPORT"), (6.0, "darkgreen", "GOAL SCORED"), (13.3, "maroon", "BREAKING NEWS"),
             (21.0, "darkorange", "TRAFFIC UPDATE"), (25.7, "purple", "GOOD NIGHT")]
    ends = [s for s, _, _ in shots[1:]] + [30.0]
    return Spec(duration_s=30.0, scenes=[(s, c) for s, c, _ in shots],
                texts=[Text(t, s, e) for (s, _, t), e in zip(shots, ends)],
                boxes=[Box(8.0, 11.0)], noise=4)


def news_video_cuts() -> list[float]:
    """The cut times (s) of :func:`news_video_spec`."""
    return [s for s, _ in news_video_spec().scenes[1:]]


def many_cuts_spec() -> Spec:
    """A 40 s video with 9 hard cuts at irregular times (some off the 2 fps grid), frame noise
    and a red square moving across two cuts (motion that must not read as a cut).

    Ground truth: the cut times are the ``scenes`` starts after 0.
    """
    starts = [0.0, 3.2, 7.0, 11.6, 15.0, 19.4, 24.0, 27.3, 32.0, 36.5]
    colours = ["navy", "darkgreen", "maroon", "teal", "darkorange", "purple", "olive", "black", "crimson", "gray"]
    return Spec(duration_s=40.0, scenes=list(zip(starts, colours)), boxes=[Box(5.0, 13.0, speed_px_s=60.0)],
                noise=8)
