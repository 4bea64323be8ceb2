"""Object tracks over the index's sampled frames (issue 36): who or what stays in view, from when to when.

The cpu captioner keeps every box its COCO detector finds in every sampled frame (``data["boxes"]`` of each
caption, :class:`avi.backends.captioner.PerceptionCaptioner`); this stage links them in time with ByteTrack
(Zhang et al., *ByteTrack: Multi-Object Tracking by Associating Every Detection Box*, ECCV 2022: high-score
boxes matched to Kalman-predicted tracks by IoU first, low-score boxes second) from Roboflow's maintained
``trackers`` library, with boxes matched by *buffered* IoU (each box enlarged by 0.3 of its width and height on
every side before the IoU: the BIoU of Yang et al., *Hard to Track Objects with Irregular Motions and Similar
Appearances? Make It Easier by Buffering the Matching Space*, WACV 2023, §3; the library's ``BIoU``): at the
index's 2 fps a walking person's boxes in two sampled frames barely overlap, and plain IoU broke their tracks.
One tracker runs per detector class (a person track never turns into a bicycle), timed by the frames' own
seconds (the index samples at 2 fps, not the 30 fps ByteTrack's defaults assume), and every tracker is reset at a
shot change and across a gap in the sampled frames (a failed clip), so no track spans a cut. Tracks seen in
fewer than ``min_frames`` frames are dropped as detector noise.

Each track (``tracks.json`` in the index) is::

    {"id": "T3", "label": "person", "first_s": 12.0, "last_s": 19.5, "frames": 16,
     "boxes": [[t_s, x1, y1, x2, y2], ...],          # pixels in the analysed frame, xyxy
     "entry": "left", "exit": "in view at the shot's end", "score": 0.71}

Person tracks also get ``"subject": "P2", "linked_by": "clothing"`` when the index links them into one subject
per person (:mod:`avi.index.person_subjects`, after this stage).

``entry``/``exit``: the frame edge the first/last box touches (``left``, ``right``, ``top``, ``bottom``), or
``in view at the shot's start``/``end`` when the shot begins/ends with it in view, or ``inside`` (it appeared or
vanished inside the picture: behind something, or the detector's recall).
"""

from __future__ import annotations

import warnings
from bisect import bisect_right

import numpy as np

from avi.backends.boxes import box_iou
from avi.backends.types import Caption

#: Classes not tracked: the Haar/blazeface ``face`` boxes live inside person boxes and have their own tool.
UNTRACKED = frozenset({"face"})
#: A box edge within this fraction of the frame's side from the border touches it.
EDGE_FRACTION = 0.03

#: The tracker's defaults (:func:`build_tracks`); with the library's version they are part of the index key
#: (:func:`tracker_id`), so a change of either builds new tracks instead of keeping stale ones.
LOST_SECONDS = 5.0
MIN_IOU = 0.03
MIN_FRAMES = 2
#: BIoU's buffer: each box grows by this fraction of its width and height on every side before matching (the
#: paper's and the library's first-association value).
BUFFER_RATIO = 0.3

SHOT_START = "in view at the shot's start"
SHOT_END = "in view at the shot's end"


def frame_boxes(captions: list[Caption]) -> list[tuple[float, list[tuple[str, float, list[float]]]]]:
    """Every sampled frame's stored boxes in time order: ``[(t_s, [(label, score, [x1, y1, x2, y2]), ...])]``.

    Captions without ``data["boxes"]`` (other captioners, failed clips) contribute no frames."""
    out = []
    for cap in captions:
        for t_s, boxes in cap.data.get("boxes") or []:
            out.append((float(t_s), [(str(b[0]), float(b[1]), [float(v) for v in b[2:6]]) for b in boxes]))
    out.sort(key=lambda fb: fb[0])
    return out


def _shot_starts(captions: list[Caption]) -> list[float]:
    return sorted(float(t) for cap in captions for t in cap.data.get("shot_changes_s") or [])


def _frame_size(captions: list[Caption]) -> tuple[int, int] | None:
    for cap in captions:
        size = cap.data.get("frame_size")
        if size:
            return int(size[0]), int(size[1])
    return None


def _side(box: list[float], size: tuple[int, int]) -> str:
    """The frame edge ``box`` touches (the nearest, when it touches two), or "inside"."""
    w, h = size
    gaps = {"left": box[0] / w, "right": (w - box[2]) / w, "top": box[1] / h, "bottom": (h - box[3]) / h}
    side, gap = min(gaps.items(), key=lambda kv: kv[1])
    return side if gap <= EDGE_FRACTION else "inside"


def tracker_id(linker: str = "") -> str:
    """Which tracker and settings make ``tracks.json`` (part of the index key; a change gives a new index that
    copies the transcript, captions and embeddings of the old one, :mod:`avi.index.reuse`):
    ``"bytetrack@trackers-VERSION|...|LINKER"``
    (``trackers-none`` where the library is not installed: a gpu-profile environment, whose captioner keeps no
    boxes; without the buffer setting and ``linker``, which make no difference there).

    Args:
        linker: what links the person tracks into subjects (:func:`avi.index.person_subjects.linker_id`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        lib = version("trackers")
    except PackageNotFoundError:
        lib = "none"
    key = f"bytetrack@trackers-{lib}|lost={LOST_SECONDS}|iou={MIN_IOU}|min_frames={MIN_FRAMES}"
    # without the library no track is made, so the buffer changes nothing: such an environment (the gpu venv)
    # keeps the key its indexes were built under before the buffer came (no rebuild of their LLM-built graph)
    return key if lib == "none" else f"{key}|biou={BUFFER_RATIO}" + (f"|{linker}" if linker else "")


def build_tracks(captions: list[Caption], *, fps: float, min_frames: int = MIN_FRAMES,
                 lost_seconds: float = LOST_SECONDS, activation_score: float = 0.0, high_score: float = 0.0,
                 min_iou: float = MIN_IOU, buffer_ratio: float = BUFFER_RATIO) -> list[dict]:
    """Tracks of every detector class over the captions' stored boxes (module docstring for the record).

    Args:
        captions: the index's captions in any order; ``data["boxes"]`` holds ``[t_s, [[label, score, x1, y1,
            x2, y2], ...]]`` per sampled frame, ``data["frame_size"]`` the analysed frame's ``[width, height]``
            (pixels), ``data["shot_changes_s"]`` the cuts.
        fps: the index's sampling rate (frames per second); a gap over 1.5 frame periods between sampled
            frames resets the trackers.
        min_frames: tracks matched in fewer frames are dropped.
        lost_seconds: how long a track that lost its box is kept for re-association (seconds).
        activation_score: a box scoring at least this starts a new track (ByteTrack's track threshold).
        high_score: boxes at or above this are matched first, the rest second (ByteTrack's two stages). Both
            default to 0: the captioner stores only the boxes its detector keeps, at per-class thresholds chosen
            on labelled frames (:data:`avi.backends.coco_detector.BENCH_THRESHOLDS`), so every stored box is a
            confident one and the detector's threshold is the track threshold.
        min_iou: the least IoU between a predicted track box and a box for them to be matched (buffered IoU).
        buffer_ratio: BIoU's buffer (module docstring); 0 is plain IoU.

    ``lost_seconds``, ``min_iou`` and ``buffer_ratio`` are set for 2 fps sampling, not ByteTrack's 30 fps defaults
    (1 s, 0.1, plain IoU): a walking person moves about a box width between two sampled frames and the detector
    misses people for a frame or several. On the eight people labelled in vtest.avi (``scripts/bench_tracks.py``)
    the mean span IoU with plain IoU was 0.40 at 1.5 s / 0.1, 0.49 at 3 s / 0.03 and 0.57 at 5 s / 0.03 (the best
    of six settings tried on those same labels); with the buffer at 5 s / 0.03 it is 0.65, 0.67, 0.83 and 0.81 for
    buffers of 0.1, 0.2, 0.3 and 0.5 (8 of 8 people at IoU 0.6 or more from 0.3 on; 42 person tracks instead of
    71). The buffer is the paper's value, not picked from the sweep; the labels are still the only ones, so these
    figures are optimistic.

    Returns:
        tracks in order of first appearance, ids ``T1``, ``T2``, …; empty when no caption stored boxes.
    """
    frames = frame_boxes(captions)
    size = _frame_size(captions)
    if not frames or size is None:
        return []
    import supervision as sv  # only where there are boxes to track (cpu captioner; the gpu venv has neither)
    from trackers import BIoU, ByteTrackTracker
    cuts = _shot_starts(captions)
    trackers: dict[str, ByteTrackTracker] = {}
    runs: dict[int, dict] = {}  # id(tracklet) -> its record (the tracklet object kept alive in it)
    shot_first_t: float | None = None
    prev_t: float | None = None
    shot_ends: list[tuple[float, float]] = []  # (first, last sampled second) of every stretch between resets

    def new_tracker() -> ByteTrackTracker:
        return ByteTrackTracker(lost_track_buffer=max(1, round(30 * lost_seconds)), frame_rate=fps,
                                track_activation_threshold=activation_score, minimum_consecutive_frames=1,
                                minimum_iou_threshold=min_iou, high_conf_det_threshold=high_score,
                                iou=BIoU(buffer_ratio=buffer_ratio))

    for t_s, boxes in frames:
        crossed_cut = prev_t is not None and bisect_right(cuts, t_s) > bisect_right(cuts, prev_t)
        gap = prev_t is not None and t_s - prev_t > 1.5 / fps
        if prev_t is None or crossed_cut or gap:
            if prev_t is not None:
                shot_ends.append((shot_first_t, prev_t))
            trackers.clear()
            shot_first_t = t_s
        by_label: dict[str, list[tuple[float, list[float]]]] = {}
        for label, score, box in boxes:
            if label not in UNTRACKED:
                by_label.setdefault(label, []).append((score, box))
        for label in sorted(set(by_label) | set(trackers)):
            got = by_label.get(label, [])
            tracker = trackers.get(label)
            if tracker is None:
                if not got:
                    continue
                tracker = trackers[label] = new_tracker()
            xyxy = np.array([b for _, b in got], dtype=np.float32).reshape(-1, 4)
            scores = np.array([s for s, _ in got], dtype=np.float32)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tracker.update(sv.Detections(xyxy=xyxy, confidence=scores), timestamp=t_s)
            for tracklet in tracker.tracks:
                if tracklet.time_since_update != 0 or not len(xyxy):
                    continue
                state = [float(v) for v in np.asarray(tracklet.get_state_bbox()).reshape(4)]
                best = max(range(len(got)), key=lambda j: box_iou(state, got[j][1]))  # the box it was updated with
                rec = runs.setdefault(id(tracklet), {"tracklet": tracklet, "label": label, "boxes": [],
                                                     "scores": []})
                if rec["boxes"] and rec["boxes"][-1][0] == t_s:
                    continue
                rec["boxes"].append([t_s, *(round(float(v), 1) for v in xyxy[best])])
                rec["scores"].append(float(scores[best]))
        prev_t = t_s
    shot_ends.append((shot_first_t, prev_t))

    def shot_of(t: float) -> tuple[float, float]:
        return next((s for s in shot_ends if s[0] <= t <= s[1]), (t, t))

    kept = [r for r in sorted(runs.values(), key=lambda r: (r["boxes"][0][0], r["boxes"][0][1]))
            if len(r["boxes"]) >= min_frames]
    tracks = []
    for i, rec in enumerate(kept):
        first, last = rec["boxes"][0], rec["boxes"][-1]
        shot = shot_of(first[0])
        tracks.append({
            "id": f"T{i + 1}", "label": rec["label"], "first_s": first[0], "last_s": last[0],
            "frames": len(rec["boxes"]), "boxes": rec["boxes"],
            "entry": SHOT_START if first[0] <= shot[0] else _side(first[1:], size),
            "exit": SHOT_END if last[0] >= shot[1] else _side(last[1:], size),
            "score": round(float(np.mean(rec["scores"])), 3),
        })
    return tracks
