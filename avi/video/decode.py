"""Video decoding with PyAV: probing, uniform sampling and frame access by time.

Times are seconds from the start of the video stream (the first frame is 0.0 s);
nothing assumes a constant frame rate: every frame's time comes from its pts.
Frames are RGB ``uint8`` arrays of shape (H, W, 3), resized so the long side is
at most ``max_side`` pixels (AVI §4.1 samples at 2 fps and keeps ~720p).

Frame shapes no model can use are refused by :func:`probe` before any model
sees a frame (:func:`frame_shape_problem`): a short side under
:data:`MIN_FRAME_SIDE` pixels, or a long side more than :data:`MAX_ASPECT`
times the short side (a 16x2000 video once took minutes to index: the face
detector upsampled its 10 px short side to 480 px and its long side with it).
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import av
import numpy as np

from avi.errors import InputError
from avi.hashing import sha256_file as file_sha256  # noqa: F401 - re-exported
from avi.input_paths import check_input_path

log = logging.getLogger(__name__)

#: Smallest short side (pixels) of a video frame avi analyses.
MIN_FRAME_SIDE = 16
#: Largest ratio of long side to short side of a video frame avi analyses (32:9 is 3.6, a 10:1 strip still works).
MAX_ASPECT = 10.0


def frame_shape_problem(width: int, height: int) -> str | None:
    """Why frames of ``width`` x ``height`` pixels cannot be analysed, or None when they can.

    Refused: a side of 0 or less, a short side under :data:`MIN_FRAME_SIDE` pixels, a long side over
    :data:`MAX_ASPECT` times the short side. Every model input is bounded on both sides for the shapes that
    pass (the detector, OCR and VLM resize within fixed limits).

    Returns:
        a phrase for the user ("frames are 16x2000 pixels, 125:1; ..."), or None.
    """
    if width <= 0 or height <= 0:
        return f"frames have no size ({width}x{height} pixels)"
    short, long = min(width, height), max(width, height)
    if short < MIN_FRAME_SIDE:
        return (f"frames are {width}x{height} pixels, too small to analyse (the short side must be at least "
                f"{MIN_FRAME_SIDE} px)")
    if long > MAX_ASPECT * short:
        return (f"frames are {width}x{height} pixels, an aspect ratio of {long / short:.0f}:1 (at most "
                f"{MAX_ASPECT:g}:1 can be analysed)")
    return None


@dataclass(frozen=True)
class VideoInfo:
    """What :func:`probe` learns about a video.

    Attributes:
        path: absolute path of the file.
        duration_s: duration of the video stream in seconds (> 0).
        fps: average frame rate (frames per second; 0.0 if unknown).
        width, height: frame size in pixels before resizing.
        start_s: pts of the first frame in seconds (subtracted from all times).
        codec: the video codec's name.
    """

    path: Path
    duration_s: float
    fps: float
    width: int
    height: int
    start_s: float
    codec: str


@dataclass(frozen=True)
class Frame:
    """One decoded frame.

    Attributes:
        t_s: time of the frame in seconds from the start of the video.
        image: RGB uint8 array, shape (H, W, 3), long side <= the requested max_side.
    """

    t_s: float
    image: np.ndarray


def _open(path: Path) -> av.container.InputContainer:
    """The container of ``path``, a path :func:`probe` checked (its name is not checked again here).

    Raises:
        InputError: missing, not a file, empty, unreadable, or without a video stream.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"video not found: {path}")
    if not path.is_file():
        raise InputError(f"not a file: {path}")
    if path.stat().st_size == 0:
        raise InputError(f"video file is empty (0 bytes): {path}")
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a readable video file: {path} ({type(exc).__name__})") from None
    if not container.streams.video:
        container.close()
        raise InputError(f"file has no video stream: {path}")
    return container


def _frame_time(frame: av.VideoFrame, stream: av.video.stream.VideoStream, fallback: float) -> float:
    if frame.pts is not None and stream.time_base is not None:
        return float(frame.pts * stream.time_base)
    return fallback


def probe(path: Path) -> VideoInfo:
    """Open a video and read its duration, frame rate and size.

    The duration comes from the stream or container header; when neither gives
    one, the video is decoded once to find the last frame's time.

    Raises:
        InputError: the file is missing, empty, unreadable, has no video stream,
            has no decodable frames (zero length), or its frame shape cannot be
            analysed (:func:`frame_shape_problem`).
    """
    path = check_input_path(path, "the video").resolve()
    container = _open(path)
    try:
        stream = container.streams.video[0]
        fps = float(stream.average_rate) if stream.average_rate else 0.0
        width, height = stream.codec_context.width, stream.codec_context.height
        codec = stream.codec_context.name
        first_t: float | None = None
        last_t = 0.0
        n = 0
        duration = None
        if stream.duration is not None and stream.time_base is not None:
            duration = float(stream.duration * stream.time_base)
        elif container.duration is not None:
            duration = container.duration / av.time_base
        # Decode the first frame (proves the stream is decodable and gives the start pts).
        try:
            for frame in container.decode(stream):
                first_t = _frame_time(frame, stream, 0.0)
                last_t = first_t
                n += 1
                width, height = frame.width, frame.height
                break
            if first_t is not None and (duration is None or duration <= 0):
                for frame in container.decode(stream):
                    last_t = _frame_time(frame, stream, last_t + (1 / fps if fps else 0.04))
                    n += 1
                frame_dur = 1.0 / fps if fps else 0.0
                duration = (last_t - first_t) + frame_dur
        except av.error.FFmpegError as exc:
            if first_t is None:
                raise InputError(f"cannot decode video: {path} ({type(exc).__name__})") from None
        if first_t is None or not width or not height:
            raise InputError(f"video has no frames (zero length): {path}")
        if duration is None or duration <= 0 or not math.isfinite(duration):
            raise InputError(f"video has zero length: {path}")
        problem = frame_shape_problem(int(width), int(height))
        if problem:
            raise InputError(f"video {problem}: {path}")
        return VideoInfo(path, float(duration), fps, int(width), int(height), float(first_t), codec)
    finally:
        container.close()


def target_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    scale = min(1.0, max_side / max(width, height))
    w = max(2, int(round(width * scale / 2)) * 2)
    h = max(2, int(round(height * scale / 2)) * 2)
    return w, h


@dataclass
class DecodeStats:
    """Packets that failed to decode and were skipped (counted, the first one logged per file).

    Attributes:
        bad_packets: how many packets were skipped.
        first_error: the decoder's message for the first one (None when there was none).
    """

    bad_packets: int = 0
    first_error: str | None = None

    def skipped(self, path: Path, exc: Exception) -> None:
        """Count one skipped packet of ``path``; the first is logged as a warning."""
        self.bad_packets += 1
        if self.first_error is None:
            self.first_error = f"{type(exc).__name__}: {exc}"
            log.warning("%s: a packet could not be decoded (%s); undecodable packets are skipped and counted",
                        path, self.first_error)

    def to_dict(self) -> dict:
        """``{"undecodable_packets": n, "first_decode_error": message or None}``."""
        return {"undecodable_packets": self.bad_packets, "first_decode_error": self.first_error}


def _timed_frames(container, stream, start_s: float,
                  stats: DecodeStats | None = None) -> Iterator[tuple[float, av.VideoFrame]]:
    """Decode ``stream`` from the container's position, yielding (seconds from start, frame).

    Packets that fail to decode (corrupt data mid-stream) are skipped and counted in
    ``stats``; a frame without pts gets the previous time plus 1 ms.
    """
    t = start_s
    for packet in container.demux(stream):
        try:
            frames = packet.decode()
        except av.error.FFmpegError as exc:
            if stats is not None:
                stats.skipped(Path(container.name), exc)
            continue
        for frame in frames:
            t = _frame_time(frame, stream, t + 1e-3)
            yield t - start_s, frame


def _to_rgb(frame: av.VideoFrame, max_side: int) -> np.ndarray:
    w, h = target_size(frame.width, frame.height, max_side)
    if (w, h) == (frame.width, frame.height):
        return frame.to_ndarray(format="rgb24")
    return frame.reformat(width=w, height=h, format="rgb24").to_ndarray()


def sample_frames(
    info: VideoInfo,
    fps: float = 2.0,
    max_side: int = 1280,
    start_s: float = 0.0,
    end_s: float | None = None,
    stats: DecodeStats | None = None,
) -> Iterator[Frame]:
    """Yield frames at ``fps`` over ``[start_s, end_s)`` in one sequential decode.

    For each sampling time k/fps the first frame at or after it is taken, so a
    variable frame rate video is sampled by its real timestamps. Decode errors
    in the middle of a stream (corrupt packets) are skipped and counted in ``stats``.

    Args:
        info: result of :func:`probe`.
        fps: sampling rate in frames per second (> 0).
        max_side: long side of the returned images in pixels.
        start_s, end_s: time window in seconds; ``end_s=None`` means the end.
        stats: where skipped packets are counted (see :class:`DecodeStats`).
    """
    if fps <= 0:
        raise ValueError("fps must be > 0")
    end = info.duration_s if end_s is None else min(end_s, info.duration_s)
    step = 1.0 / fps
    next_t = max(0.0, start_s)
    container = _open(info.path)
    try:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if start_s > 1.0:
            container.seek(int((start_s + info.start_s - 1.0) / stream.time_base), stream=stream, backward=True)
        for t, frame in _timed_frames(container, stream, info.start_s, stats):
            if t >= end:
                return
            if t + 1e-6 < next_t:
                continue
            yield Frame(round(t, 3), _to_rgb(frame, max_side))
            while next_t <= t + 1e-6:
                next_t += step
    finally:
        container.close()


class VideoReader:
    """Frame access by timestamp for the agent's perceive tools.

    Keeps a small LRU cache of decoded frames, because the agent often looks at
    the same moments with several tools. Packets skipped as undecodable are counted
    in ``stats`` (:class:`DecodeStats`).
    """

    def __init__(self, info: VideoInfo, max_side: int = 1280, cache_size: int = 256):
        self.info = info
        self.stats = DecodeStats()
        self.max_side = max_side
        self._cache: OrderedDict[float, Frame] = OrderedDict()
        self._cache_size = cache_size

    def frames_at(self, times_s: Sequence[float]) -> list[Frame]:
        """Return, for each requested time, the decoded frame nearest to it.

        Args:
            times_s: times in seconds; clipped to [0, duration]. Output order
                follows the sorted, de-duplicated times.
        """
        wanted = sorted({round(min(max(0.0, t), self.info.duration_s), 3) for t in times_s})
        out: dict[float, Frame] = {}
        missing = []
        for t in wanted:
            if t in self._cache:
                self._cache.move_to_end(t)
                out[t] = self._cache[t]
            else:
                missing.append(t)
        if missing:
            for t, frame in zip(missing, self._decode_nearest(missing)):
                out[t] = frame
                self._cache[t] = frame
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return [out[t] for t in wanted]

    def _decode_nearest(self, times: list[float]) -> list[Frame]:
        container = _open(self.info.path)
        results: list[Frame] = []
        try:
            stream = container.streams.video[0]
            it = None
            prev: tuple[float, av.VideoFrame] | None = None
            cur: tuple[float, av.VideoFrame] | None = None
            for target in times:
                need_seek = it is None or cur is None or target - cur[0] > 5.0
                if need_seek:
                    it, prev, cur = self._seek(container, stream, target)
                # advance until the current frame is at/after the target
                while cur is not None and cur[0] < target:
                    prev = cur
                    cur = next(it, None)
                candidates = [c for c in (prev, cur) if c is not None]
                best = min(candidates, key=lambda c: abs(c[0] - target))
                results.append(Frame(round(best[0], 3), _to_rgb(best[1], self.max_side)))
        finally:
            container.close()
        return results

    def _seek(self, container, stream, target: float):
        """Seek to a keyframe before ``target`` and return a frame iterator.

        Some containers (AVI) seek imprecisely; if the first frame lands after
        the target, seek further back, and in the end decode from the start.
        """
        for back in (1.0, 10.0, None):
            if back is None:
                container.seek(0)
            else:
                pos = max(0.0, target - back) + self.info.start_s
                container.seek(int(pos / stream.time_base), stream=stream, backward=True)
            it = _timed_frames(container, stream, self.info.start_s, self.stats)
            first = next(it, None)
            if first is None:
                continue
            if first[0] <= target + 1e-3 or back is None:
                return it, None, first
        return iter(()), None, None
