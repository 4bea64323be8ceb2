"""Shot boundaries (hard cuts) of a whole video, from every decoded frame.

PySceneDetect's content detector (``scenedetect.ContentDetector``: the frame-to-frame change of hue,
saturation and luma, thresholded; Castellano, PySceneDetect docs "Detection Algorithms") runs on every
frame through the PyAV backend, so a cut is placed to the frame, not to the 2 fps sampling grid of the
perception captions. The list is computed once per video and kept as ``shots.json`` in the video's index
directory (written atomically; not part of the index key, so an index never needs a rebuild for it).

Times are seconds on the video's own timeline; a cut time is the time of the first frame of the new shot.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DETECTOR = "pyscenedetect-content"
THRESHOLD = 27.0
"""ContentDetector's default threshold (mean HSV change, 0–255 scale)."""
MIN_SHOT_FRAMES = 15
"""ContentDetector's default shortest shot, in frames (flashes shorter than this are not cuts)."""
CACHE_NAME = "shots.json"


@dataclass(frozen=True)
class ShotList:
    """The hard cuts of one video.

    Attributes:
        cuts_s: times (s) of the first frame of each new shot, ascending; empty for one continuous shot.
        duration_s: length of the video (s).
        method: how the cuts were found (for the trace).
    """

    cuts_s: tuple[float, ...]
    duration_s: float
    method: str = DETECTOR

    def cuts_in(self, start_s: float, end_s: float) -> list[float]:
        """Cuts with ``start_s < t < end_s`` (a cut exactly at a range edge does not change the shot inside it)."""
        return [t for t in self.cuts_s if start_s < t < end_s]

    def shots(self) -> list[tuple[float, float]]:
        """``(start_s, end_s)`` of every shot, in order, covering ``[0, duration_s]``."""
        edges = [0.0, *self.cuts_s, self.duration_s]
        return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def detect_cuts(video: str | Path, threshold: float = THRESHOLD, min_shot_frames: int = MIN_SHOT_FRAMES) -> list[float]:
    """Run the content detector over every frame of ``video``.

    Returns:
        cut times in seconds, ascending (the start of every shot but the first).

    Raises:
        OSError / RuntimeError: the video cannot be opened or decoded (PySceneDetect's own errors).
    """
    from scenedetect import ContentDetector, SceneManager, open_video

    stream = open_video(str(video), backend="pyav")
    manager = SceneManager()
    manager.add_detector(ContentDetector(threshold=threshold, min_scene_len=min_shot_frames))
    manager.detect_scenes(stream, show_progress=False)
    scenes = manager.get_scene_list()
    return [round(start.get_seconds(), 3) for start, _ in scenes[1:]]


def _read_cache(path: Path, duration_s: float) -> ShotList | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("detector") != DETECTOR or data.get("threshold") != THRESHOLD \
            or data.get("min_shot_frames") != MIN_SHOT_FRAMES or not isinstance(data.get("cuts_s"), list):
        return None
    try:
        cuts = tuple(float(t) for t in data["cuts_s"])
    except (TypeError, ValueError):
        return None
    if not all(math.isfinite(t) for t in cuts) or list(cuts) != sorted(cuts):
        return None  # a damaged cache: detected again
    return ShotList(cuts, duration_s)


def video_shots(video: str | Path, duration_s: float, cache_dir: str | Path | None = None) -> ShotList | None:
    """The :class:`ShotList` of ``video``, from ``cache_dir/shots.json`` when present, else detected (and
    cached there when ``cache_dir`` is writable).

    Returns:
        the shot list, or None when the video cannot be read by the detector (logged; callers go without).
    """
    cache = Path(cache_dir) / CACHE_NAME if cache_dir is not None else None
    if cache is not None and cache.exists():
        got = _read_cache(cache, duration_s)
        if got is not None:
            return got
    try:
        cuts = detect_cuts(video)
    except Exception as exc:  # noqa: BLE001 - any decoder failure: no shot list, the caller says so
        log.warning("shot detection failed on %s: %s", video, exc)
        return None
    shots = ShotList(tuple(t for t in cuts if 0.0 < t < duration_s), duration_s)
    if cache is not None:
        payload = {"detector": DETECTOR, "threshold": THRESHOLD, "min_shot_frames": MIN_SHOT_FRAMES,
                   "cuts_s": list(shots.cuts_s)}
        try:
            fd, tmp = tempfile.mkstemp(prefix=".shots-", dir=cache.parent)
            with os.fdopen(fd, "w") as f:
                json.dump(payload, f)
            os.replace(tmp, cache)
        except OSError as exc:  # a read-only index: the list is still returned
            log.info("could not cache the shot list in %s: %s", cache.parent, exc)
    return shots
