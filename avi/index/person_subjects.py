"""Person subjects on the cpu profile: the person tracks of one video linked into one subject per person (issue 36).

The tracker (:mod:`avi.index.tracks`) ends a track when a person leaves the picture, is hidden for a while or a
shot changes, so one person is often several tracks. This stage links them, the way AVI's subject registry keeps
"the same person across clips" (AVI §3.1) and the way re-identification links tracklets offline (e.g. Wang et
al., *TrackletNet Tracker*, ACM MM 2019: appearance similarity between tracklets with no time overlap, merged
by clustering):

1. **Samples**: up to :data:`SAMPLES` boxes of each person track, spread over its span, are cut from the decoded
   frames (the same pixels as the track's boxes).
2. **Face descriptor** (when the face models are installed): BlazeFace on the upper :data:`HEAD_PART` of the
   person box (upscaled to at least :data:`HEAD_SIDE` pixels so small faces reach the detector's scale; the upper
   60 % holds the face both of a standing figure and of a head-and-shoulders close-up); a face of at least
   :data:`MIN_FACE_PX` pixels scoring at least :data:`MIN_FACE_SCORE` gets HSE FaceRes's 1024-d descriptor
   (:class:`~avi.backends.people.face_descriptor.FaceDescriber`), L2-normalised. Two tracks' faces score the mean
   cosine over all pairs of their descriptors: not human's distance-based ``match.similarity``, which saturates at
   1 for the low-norm descriptors of dark faces (a concert video's singer and guitarist scored 1.0 there), and not
   the cosine of mean descriptors, which rises as frames are averaged (0.69 for two cartoon characters whose
   frame pairs score 0.38).
3. **Clothing**: the hue-saturation histogram (OpenCV ``calcHist``, 16 hue x 8 saturation bins) of the torso
   (20-55 % of the box's height) and of the legs (55-95 %), both over the middle 60 % of its width, L2-normalised
   and averaged over the samples: the colour-histogram baseline of person re-identification (Gray & Tao, ECCV
   2008; Farenzena et al., CVPR 2010 split the body the same way). Compared by correlation.
4. **Linking**: two tracks whose spans overlap are different people (cannot-link). Faces decide where both tracks
   have one and the faces agree (at least :data:`FACE_SAME`) or clearly differ (below :data:`FACE_DIFFERENT`: a
   cannot-link); in between, or without two faces, clothing decides (at least :data:`CLOTHING_SAME`).
   Average-linkage agglomerative clustering merges the best pair of clusters while its mean margin over the
   deciding thresholds is at least 0 and no cannot-link pair joins.

5. **Kept faces**: up to :data:`KEPT_FACES` of each subject's face descriptors, spread over its tracks, are kept
   in the index (``person_faces.npz``, :func:`save_subject_faces`), so that people can be linked across videos
   (:mod:`avi.videos.people`) without decoding the videos again.

Face thresholds: same-person frame pairs of one track scored 0.84 and 0.85 (clear faces: carphone, a Pexels
interview), 0.60-0.67 (a cartoon, a dark concert); different people 0.16-0.48, and 0.61 for the dark concert's
two musicians: so faces link only above 0.7 and separate only below 0.4, from six tracks of four videos, no
identity labels; clothing decides the rest.

On vtest.avi (768x576, faces 7-27 px) no face is large enough, so clothing decides: the three people labelled
as leaving and coming back score 0.76, 0.82 and 0.83 between their labelled tracks, the best pair of different
labelled people 0.69 (``scripts/bench_tracks.py``; :data:`CLOTHING_SAME` and :data:`SAMPLES` were set on those
eight labels, so figures on them are optimistic). Clustered with the video's other 34 person tracks, one of the
three comebacks is linked and no labelled pair wrongly: the tracker's identity switches between people walking
side by side leave a person's pieces overlapping in time by a frame, which the cannot-link keeps apart
(bench/tracks/README.md).
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import cv2
import numpy as np

from avi.backends.embedder import normalise_rows
from avi.backends.people.face_descriptor import FaceDescriber
from avi.backends.people.reader import face_model_paths
from avi.index.tracks import tracker_id

#: Boxes sampled per track (spread over its span).
SAMPLES = 8
#: Least face side (pixels of the analysed frame) for a face descriptor; FaceRes reads 224 px crops.
MIN_FACE_PX = 32.0
#: Least BlazeFace score for a face to describe a person.
MIN_FACE_SCORE = 0.6
#: Mean face cosine at or above which two tracks show the same face, and below which two different faces.
FACE_SAME = 0.7
FACE_DIFFERENT = 0.4
#: Clothing histogram correlation at or above which two tracks show the same clothes.
CLOTHING_SAME = 0.75
#: Torso and legs as fractions of the person box's height; both over the middle of its width.
TORSO = (0.20, 0.55)
LEGS = (0.55, 0.95)
MIDDLE = (0.20, 0.80)
#: The upper fraction of a person box searched for a face, and the side it is upscaled to at least.
HEAD_PART = 0.6
HEAD_SIDE = 192
#: Frames decoded and held at once (a long video's samples are read in batches).
FRAME_BATCH = 64
#: Face descriptors kept per person subject in the index (``person_faces.npz``, for linking across videos).
KEPT_FACES = 16
#: Width of one face descriptor (HSE FaceRes).
FACE_DIM = FaceDescriber.dim
#: The index file that keeps them.
FACES_FILE = "person_faces.npz"


def linker_id(faces: bool) -> str:
    """Identifies the linking for the index key (:func:`avi.index.tracks.tracker_id`): a change of a constant
    above, or of whether the face models are installed, builds new subjects.

    Args:
        faces: whether the face models take part."""
    return (f"persons-v2:samples={SAMPLES},kept_faces={KEPT_FACES},head={HEAD_PART:g}@{HEAD_SIDE}px,"
            f"face>={MIN_FACE_PX:g}px@{MIN_FACE_SCORE:g}~cos{FACE_DIFFERENT:g}-{FACE_SAME:g},"
            f"hs16x8~{CLOTHING_SAME:g},faces={'blazeface+faceres' if faces else 'none'}")


def tracks_stage_id(settings) -> str:
    """The tracks stage's own id, its part of the index key (:func:`avi.index.build.index_components`): the
    tracker (:func:`avi.index.tracks.tracker_id`) and the linking of its person tracks into subjects
    (:func:`linker_id`, with or without the face models ``settings`` has installed)."""
    return tracker_id(linker_id(face_model_paths(settings) is not None))


@dataclass
class TrackLook:
    """What one person track looks like.

    Attributes:
        track_id: the track's id (``T3``).
        first_s, last_s: its span in seconds (two tracks in view at once are two people).
        clothing: float32 (256,) torso and legs histograms, or None when no box had pixels.
        faces: float32 (K, 1024) L2-normalised face descriptors of K sampled boxes, or None when no face was
            large enough.
    """

    track_id: str
    first_s: float
    last_s: float
    clothing: np.ndarray | None
    faces: np.ndarray | None


def _hs_hist(pixels: np.ndarray) -> np.ndarray:
    hsv = cv2.cvtColor(np.ascontiguousarray(pixels), cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1], None, [16, 8], [0, 180, 0, 256]).flatten()
    norm = float(np.linalg.norm(hist))
    return hist / norm if norm > 0 else hist


def clothing_histogram(image: np.ndarray, box: Sequence[float]) -> np.ndarray | None:
    """Torso and legs hue-saturation histograms of a person box (module docstring, step 3).

    Args:
        image: HxWx3 uint8 RGB frame.
        box: the person's pixel xyxy box in ``image``.

    Returns:
        float32 (256,): the torso's 128 bins then the legs', each L2-normalised; None when a part has no pixel.
    """
    h, w = image.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    bw, bh = x2 - x1, y2 - y1
    xa, xb = int(max(0.0, x1 + MIDDLE[0] * bw)), int(min(float(w), x1 + MIDDLE[1] * bw))
    parts = []
    for lo, hi in (TORSO, LEGS):
        ya, yb = int(max(0.0, y1 + lo * bh)), int(min(float(h), y1 + hi * bh))
        if xb <= xa or yb <= ya:
            return None
        parts.append(_hs_hist(image[ya:yb, xa:xb]))
    return np.concatenate(parts).astype(np.float32)


def clothing_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Correlation (-1..1) of two :func:`clothing_histogram` results (OpenCV ``HISTCMP_CORREL``)."""
    return float(cv2.compareHist(a.astype(np.float32), b.astype(np.float32), cv2.HISTCMP_CORREL))


def person_face(image: np.ndarray, box: Sequence[float], faces, describer) -> np.ndarray | None:
    """The face descriptor of the person in ``box``, or None (module docstring, step 2).

    Args:
        image: HxWx3 uint8 RGB frame.
        box: the person's pixel xyxy box.
        faces: a :class:`~avi.backends.people.faces.FaceDetector`.
        describer: a :class:`~avi.backends.people.face_descriptor.FaceDescriber`.
    """
    h, w = image.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    xa, xb = int(max(0.0, x1)), int(min(float(w), x2))
    ya, yb = int(max(0.0, y1)), int(min(float(h), y1 + HEAD_PART * (y2 - y1)))
    if xb - xa < 4 or yb - ya < 4:
        return None
    head = image[ya:yb, xa:xb]
    k = max(1.0, HEAD_SIDE / max(head.shape[:2]))
    if k > 1.0:
        head = cv2.resize(head, (round(head.shape[1] * k), round(head.shape[0] * k)), interpolation=cv2.INTER_LINEAR)
    found = [f for f in faces.detect(head) if f.score >= MIN_FACE_SCORE]
    if not found:
        return None
    best = max(found, key=lambda f: f.score)
    fbox = (xa + best.box[0] / k, ya + best.box[1] / k, xa + best.box[2] / k, ya + best.box[3] / k)
    if min(fbox[2] - fbox[0], fbox[3] - fbox[1]) < MIN_FACE_PX:
        return None
    return describer.describe(image, [fbox])[0].vector


def sample_boxes(track: dict, samples: int = SAMPLES) -> list[list[float]]:
    """Up to ``samples`` of the track's ``[t_s, x1, y1, x2, y2]`` boxes, evenly spread over them."""
    boxes = track["boxes"]
    if len(boxes) <= samples:
        return list(boxes)
    return [boxes[i] for i in sorted({int(round(j)) for j in np.linspace(0, len(boxes) - 1, samples)})]


def track_looks(tracks: list[dict], frames_at: Callable[[list[float]], list], faces=None,
                describer=None) -> list[TrackLook]:
    """How each person track looks (module docstring, steps 1-3).

    Args:
        tracks: the index's tracks (:func:`avi.index.tracks.build_tracks`); only ``label == "person"`` are read.
        frames_at: sampled seconds -> objects with ``.t_s`` and ``.image`` (HxWx3 uint8 RGB in the pixels of the
            tracks' boxes), in sorted time order (:meth:`avi.video.decode.VideoReader.frames_at`).
        faces, describer: the face detector and descriptor, or None for clothing only.
    """
    people = [t for t in tracks if t.get("label") == "person"]
    at: dict[float, list[tuple[str, list[float]]]] = {}  # sampled second -> (track id, box) to read there
    for t in people:
        for b in sample_boxes(t):
            at.setdefault(round(float(b[0]), 3), []).append((t["id"], [float(v) for v in b[1:5]]))
    hists: dict[str, list[np.ndarray]] = {t["id"]: [] for t in people}
    descs: dict[str, list[np.ndarray]] = {t["id"]: [] for t in people}
    wanted = sorted(at)
    for k in range(0, len(wanted), FRAME_BATCH):  # a batch of decoded frames at a time, not the whole video's
        batch = wanted[k:k + FRAME_BATCH]
        for t_s, frame in zip(batch, frames_at(batch)):
            for track_id, box in at[t_s]:
                hist = clothing_histogram(frame.image, box)
                if hist is not None:
                    hists[track_id].append(hist)
                if faces is not None and describer is not None:
                    desc = person_face(frame.image, box, faces, describer)
                    if desc is not None:
                        descs[track_id].append(desc)
    return [TrackLook(t["id"], float(t["first_s"]), float(t["last_s"]),
                      np.mean(hists[t["id"]], axis=0).astype(np.float32) if hists[t["id"]] else None,
                      normalise_rows(np.stack(descs[t["id"]])) if descs[t["id"]] else None) for t in people]


def face_cosine(a: TrackLook, b: TrackLook) -> float:
    """Mean cosine over all pairs of two tracks' face descriptors (module docstring, step 2); both need faces."""
    return float(np.mean(a.faces @ b.faces.T))


def score_matrices(looks: list[TrackLook]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairwise comparison of the tracks (module docstring, step 4).

    Returns:
        ``(face, clothing, apart)``: (N, N) float64 mean face cosines (NaN where either track has no face),
        clothing correlations (NaN where either has no clothing histogram) and a bool matrix, True where two tracks
        cannot be one person (their spans overlap: two tracks in view at once; and the diagonal).
    """
    n = len(looks)
    face = np.full((n, n), np.nan)
    clothing = np.full((n, n), np.nan)
    with_face = [i for i, lk in enumerate(looks) if lk.faces is not None]
    for a, i in enumerate(with_face):
        for j in with_face[a + 1:]:
            face[i, j] = face[j, i] = face_cosine(looks[i], looks[j])
    dressed = [i for i, lk in enumerate(looks) if lk.clothing is not None]
    if len(dressed) > 1:
        corr = np.corrcoef(np.stack([looks[i].clothing for i in dressed]).astype(np.float64))
        clothing[np.ix_(dressed, dressed)] = corr
    first = np.array([lk.first_s for lk in looks])
    last = np.array([lk.last_s for lk in looks])
    apart = (first[:, None] <= last[None, :]) & (first[None, :] <= last[:, None])
    return face, clothing, apart


def link_looks(looks: list[TrackLook], face_same: float = FACE_SAME, face_different: float = FACE_DIFFERENT,
               clothing_same: float = CLOTHING_SAME) -> list[list[int]]:
    """Average-linkage clustering of the tracks with cannot-links (module docstring, step 4).

    A pair's score is its margin over the deciding threshold: the face cosine minus ``face_same`` when both tracks
    have faces that agree, else the clothing correlation minus ``clothing_same``. A pair that cannot be one person
    (:func:`score_matrices`), faces below ``face_different`` and a pair with nothing to compare block the clusters
    they join from merging. Clusters merge best mean margin first while it is at least 0.

    Returns:
        clusters as lists of indices into ``looks``, each in index order, clusters ordered by their first index.
    """
    n = len(looks)
    if n == 0:
        return []
    face, clothing, apart = score_matrices(looks)
    has_face = ~np.isnan(face)
    by_face = has_face & (face >= face_same)
    margin = np.where(by_face, face - face_same, clothing - clothing_same)
    blocked = apart | np.isnan(margin) | (has_face & (face < face_different))
    total = np.where(blocked, 0.0, margin)  # sums of the pairs' margins between clusters
    count = np.ones((n, n))
    active = np.ones(n, bool)
    members = [[i] for i in range(n)]
    while True:
        mean = np.where(blocked | ~active[:, None] | ~active[None, :], -np.inf, total / count)
        x, y = np.unravel_index(int(np.argmax(mean)), mean.shape)
        if not np.isfinite(mean[x, y]) or mean[x, y] < 0:
            break
        x, y = min(x, y), max(x, y)
        total[x, :] += total[y, :]
        total[:, x] = total[x, :]
        count[x, :] += count[y, :]
        count[:, x] = count[x, :]
        blocked[x, :] |= blocked[y, :]
        blocked[:, x] = blocked[x, :]
        blocked[x, x] = True
        active[y] = False
        members[x] += members[y]
    return sorted((sorted(members[i]) for i in range(n) if active[i]), key=lambda c: c[0])


def link_person_tracks(tracks: list[dict], frames_at: Callable[[list[float]], list], faces=None,
                       describer=None) -> list[dict]:
    """Give every person track a ``subject`` (``P1``, ``P2``, … in order of first appearance) and say by what its
    subject's tracks were linked (``linked_by``: ``face`` when every pair of its tracks has faces that agree,
    ``clothing`` otherwise, ``alone`` for a subject of one track); tracks of other classes are left as they are.

    Args:
        tracks: the index's tracks, changed in place.
        frames_at: as in :func:`track_looks`.
        faces, describer: the face models, or None for clothing only.

    Returns:
        the person subjects ``[{"id": "P1", "tracks": ["T1", "T9"], "spans": [[first_s, last_s], ...],
        "linked_by": "clothing", "faces": array or None}]``; empty when there is no person track. ``faces`` is a
        float32 (K, 1024) array of up to :data:`KEPT_FACES` L2-normalised face descriptors of its tracks, spread
        over them (None without a face): what :func:`save_subject_faces` keeps for linking across videos.
    """
    looks = track_looks(tracks, frames_at, faces, describer)
    if not looks:
        return []
    by_id = {t["id"]: t for t in tracks}
    subjects = []
    for k, cluster in enumerate(link_looks(looks)):
        members = [by_id[looks[i].track_id] for i in cluster]
        faced = all(looks[i].faces is not None and looks[j].faces is not None
                    and face_cosine(looks[i], looks[j]) >= FACE_SAME for i in cluster for j in cluster if i < j)
        linked_by = "alone" if len(cluster) == 1 else ("face" if faced else "clothing")
        sid = f"P{k + 1}"
        for t in members:
            t["subject"], t["linked_by"] = sid, linked_by
        kept = [looks[i].faces for i in cluster if looks[i].faces is not None]
        subjects.append({"id": sid, "tracks": [t["id"] for t in members],
                         "spans": [[t["first_s"], t["last_s"]] for t in members], "linked_by": linked_by,
                         "faces": _spread(np.concatenate(kept), KEPT_FACES) if kept else None})
    return subjects


def _spread(rows: np.ndarray, k: int) -> np.ndarray:
    """At most ``k`` of ``rows``, evenly spread over them (in order)."""
    if len(rows) <= k:
        return rows
    return rows[sorted({int(round(j)) for j in np.linspace(0, len(rows) - 1, k)})]


def save_subject_faces(path: Path, subjects: list[dict]) -> None:
    """Write the person subjects' face descriptors (:func:`link_person_tracks`' ``faces``) to ``path`` (an npz
    archive: one float16 (K, 1024) array per subject id with faces; empty when none has), atomically (a
    temporary file renamed into place).

    Raises:
        OSError: the file cannot be written.
    """
    arrays = {s["id"]: np.asarray(s["faces"], np.float16) for s in subjects if s.get("faces") is not None}
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_subject_faces(path: Path) -> dict[str, np.ndarray]:
    """The face descriptors :func:`save_subject_faces` wrote: subject id -> float32 (K, :data:`FACE_DIM`), rows
    L2-normalised again (float16 storage); {} when ``path`` does not exist.

    Raises:
        ValueError: the file is not such an archive: truncated, empty, not a zip, holding pickles, or an array
            that is not (K >= 1, :data:`FACE_DIM`) of finite numbers (the message names the subject and shape).
        OSError: it cannot be read.
    """
    if not path.exists():
        return {}
    try:
        with np.load(path, allow_pickle=False) as archive:
            raw = {sid: archive[sid] for sid in archive.files}
    except (zipfile.BadZipFile, EOFError, KeyError) as exc:
        raise ValueError(f"{path.name} is not an npz archive ({type(exc).__name__}: {exc})") from None
    out = {}
    for sid, rows in raw.items():
        if rows.ndim != 2 or not len(rows) or rows.shape[1] != FACE_DIM or rows.dtype.kind != "f":
            raise ValueError(f"{path.name}: {sid} holds an array of shape {rows.shape} ({rows.dtype}), not "
                             f"(K, {FACE_DIM}) numbers")
        rows = rows.astype(np.float32)
        if not np.isfinite(rows).all():
            raise ValueError(f"{path.name}: {sid} holds values that are not finite")
        out[sid] = normalise_rows(rows)
    return out
