"""The perception memory: one SQLite file per index (``memory.sqlite``) holding what the index's tools measured.

Built by :func:`build_memory` from the index's own files (the captioner's boxes of every sampled frame, its OCR
lines, ``tracks.json`` with person subjects, ``transcript.jsonl``, the shot list) plus one sequential decode of the
sampled frames for what only pixels give (per-frame brightness and main colour, each box's main colour, flat shapes,
and the people models' readings on frames with a person). Nothing in it is generated text: every row is a
measurement, with the time it was made. It is not part of the index key: a memory of another version
(:data:`MEMORY_VERSION`) or with the people models switched differently is rebuilt in place, alone
(:func:`avi.index.memory_stage.ensure_memory`), so adding the memory never rebuilds an index.

Schema (times in seconds on the video's timeline, boxes in pixels of the analysed frame, xyxy; ``cx``/``cy`` the
box centre as a fraction of the frame's width/height, 0 = left/top)::

    meta(key TEXT PRIMARY KEY, value TEXT)        -- version, duration_s, fps, width, height, detector, vocabulary
                                                     (JSON list), coverage (JSON: what each modality read, below)
    frames(t_s REAL PRIMARY KEY, clip INTEGER, shot INTEGER, brightness REAL,     -- mean luma 0-255
           colour TEXT, colour_share REAL, colours TEXT,                          -- main colour name; JSON top 3
           people_read INTEGER, ocr_read INTEGER)                                 -- 1 where that model ran here
    boxes(id INTEGER PRIMARY KEY, t_s REAL, label TEXT, score REAL, x1 REAL, y1 REAL, x2 REAL, y2 REAL,
          cx REAL, cy REAL, track TEXT, subject TEXT, colour TEXT)              -- every detector box
    people(box_id INTEGER, t_s REAL, posture TEXT, arms_raised INTEGER, expression TEXT,
           expression_score REAL, hands INTEGER, holding TEXT)                   -- one row per person box read
    texts(id INTEGER PRIMARY KEY, t_s REAL, clip INTEGER, start_s REAL, end_s REAL, text TEXT, norm TEXT,
          score REAL)                                                           -- OCR lines, per clip read
    speech(id INTEGER PRIMARY KEY, start_s REAL, end_s REAL, text TEXT, norm TEXT, source TEXT)
    shots(idx INTEGER PRIMARY KEY, start_s REAL, end_s REAL)
    cuts(t_s REAL)                                                              -- first frame of each new shot
    tracks(id TEXT PRIMARY KEY, label TEXT, first_s REAL, last_s REAL, frames INTEGER, entry TEXT, exit TEXT,
           subject TEXT, dx REAL, dy REAL, score REAL)   -- dx, dy: centre motion first->last box, frame fractions
    shapes(t_s REAL, kind TEXT, colour TEXT, x1 REAL, y1 REAL, x2 REAL, y2 REAL, cx REAL, cy REAL)

``coverage`` says, per modality (``objects``, ``people``, ``text``, ``speech``, ``shapes``, ``cuts``,
``pixels``), whether it was measured and where (``{"read": true, "frames": "every sampled frame"}``); a "no" is
only answered from a modality that was read over the asked time (:mod:`avi.memory.evaluate`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from avi.video.decode import VideoInfo

log = logging.getLogger(__name__)

MEMORY_FILE = "memory.sqlite"
MEMORY_VERSION = "memory-v3"  # v2: the detector's class list as the vocabulary; v3: objects read only with boxes
#: the people models read at most one sampled frame per this many seconds (the frames with a person box)
PEOPLE_EVERY_S = 1.0

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE frames(t_s REAL PRIMARY KEY, clip INTEGER, shot INTEGER, brightness REAL, colour TEXT,
                    colour_share REAL, colours TEXT, people_read INTEGER, ocr_read INTEGER);
CREATE TABLE boxes(id INTEGER PRIMARY KEY, t_s REAL, label TEXT, score REAL, x1 REAL, y1 REAL, x2 REAL, y2 REAL,
                   cx REAL, cy REAL, track TEXT, subject TEXT, colour TEXT);
CREATE INDEX boxes_label_t ON boxes(label, t_s);
CREATE TABLE people(box_id INTEGER, t_s REAL, posture TEXT, arms_raised INTEGER, expression TEXT,
                    expression_score REAL, hands INTEGER, holding TEXT);
CREATE TABLE texts(id INTEGER PRIMARY KEY, t_s REAL, clip INTEGER, start_s REAL, end_s REAL, text TEXT, norm TEXT,
                   score REAL);
CREATE TABLE speech(id INTEGER PRIMARY KEY, start_s REAL, end_s REAL, text TEXT, norm TEXT, source TEXT);
CREATE TABLE shots(idx INTEGER PRIMARY KEY, start_s REAL, end_s REAL);
CREATE TABLE cuts(t_s REAL);
CREATE TABLE tracks(id TEXT PRIMARY KEY, label TEXT, first_s REAL, last_s REAL, frames INTEGER, entry TEXT,
                    exit TEXT, subject TEXT, dx REAL, dy REAL, score REAL);
CREATE TABLE shapes(t_s REAL, kind TEXT, colour TEXT, x1 REAL, y1 REAL, x2 REAL, y2 REAL, cx REAL, cy REAL);
"""


def normalise(text: str) -> str:
    """Lower case, letters and digits only, single spaces: what text and speech patterns are matched against."""
    return " ".join(re.sub(r"[\W_]+", " ", str(text).lower()).split())


def memory_id(people: bool) -> str:
    """What a memory file was built with: :data:`MEMORY_VERSION` and whether the people models ran."""
    return f"{MEMORY_VERSION}|people={'on' if people else 'off'}"


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class _Box:
    """A stored detector box in the shape :class:`~avi.backends.people.reader.PeopleReader` reads."""

    def __init__(self, label: str, box: list[float]):
        self.label, self.cls, self.box = label, None, tuple(box)


def _speech_coverage(info: dict, segments: list[dict]) -> dict:
    sources = [str(s) for s in info.get("sources") or []]
    if info.get("mode") == "off" or not sources:
        return {"read": False, "why": "no transcript was made (transcript = off)"}
    return {"read": True, "sources": sources, "segments": len(segments)}


def _shot_list(index_dir: Path, video: Path | None, duration_s: float, captions: list[dict]):
    """``(cuts, method)``: PySceneDetect's cuts (cached in the index's shots.json), else the captions' colour
    histogram shot changes at the sampled frames."""
    from avi.video.shots import video_shots

    shots = video_shots(video, duration_s, index_dir) if video is not None and video.is_file() else None
    if shots is not None:
        return list(shots.cuts_s), shots.method
    cuts = sorted({float(t) for c in captions for t in (c.get("data") or {}).get("shot_changes_s") or []})
    return cuts, "colour histogram at the sampled frames"


def build_memory(index_dir: Path, info: VideoInfo | None, duration_s: float, transcript_info: dict, settings: Any,
                 backends: Any, *, people: bool = True, progress: bool = False) -> dict:
    """Build ``index_dir/memory.sqlite`` from the index's files and one decode of its sampled frames.

    Args:
        index_dir: an index directory, or a build's work directory, holding captions.jsonl, tracks.json and
            transcript.jsonl.
        info: the video's probe (:func:`avi.video.decode.probe`; decoded once at the index's sampling rate), or
            None when the file is gone (only what the index's files hold is recorded).
        duration_s: its length in seconds.
        transcript_info: the manifest's ``transcript`` record (which sources the transcript read).
        settings: :class:`avi.config.Settings` (``fps``, ``max_side``, ``models_dir``, ``weights_lock``).
        backends: :class:`avi.backends.Backends` (its detector's name and vocabulary).
        people: run the people models (posture, raised arms, expression, hands) on one sampled frame per
            :data:`PEOPLE_EVERY_S` seconds that has a person box; off, or without their weights, the ``people``
            modality is recorded as not read.
        progress: a progress bar on stderr.

    Returns:
        ``{"rows": {table: count}, "seconds": float, "bytes": int, "id": memory_id}``.

    Raises:
        OSError: the index directory cannot be written (nothing is left behind: the file is written to a
            temporary name and moved into place).
    """
    from tqdm import tqdm

    from avi.backends.shapes import CAPTION_MAX_STD, find_shapes
    from avi.video.analysis import box_colours, colour_names
    from avi.video.decode import sample_frames

    t0 = time.perf_counter()
    index_dir, video, duration = Path(index_dir), (info.path if info is not None else None), float(duration_s)
    captions = _read_jsonl(index_dir / "captions.jsonl")
    segments = _read_jsonl(index_dir / "transcript.jsonl")
    tracks = json.loads((index_dir / "tracks.json").read_text()) if (index_dir / "tracks.json").exists() else []
    reader, people_why = None, None
    if people:
        try:
            from avi.backends.people.reader import PeopleReader

            reader = PeopleReader.from_models(settings.models_dir, settings.weights_lock)
        except Exception as exc:  # noqa: BLE001 - missing or bad people weights: the modality is not read
            people_why = f"the people models could not be loaded ({' '.join(str(exc).split())[:160]})"
    else:
        people_why = "the people models are switched off (memory_people = false)"
    cuts, cut_method = _shot_list(index_dir, video, duration, captions)
    edges = [0.0, *cuts, duration]
    shot_spans = [(a, b) for a, b in zip(edges, edges[1:]) if b > a]

    def shot_of(t: float) -> int:
        return max(0, int(np.searchsorted(np.asarray(cuts), t, side="right")))

    # what the captioner measured, by sampled frame
    boxes_at: dict[float, list] = {}
    clip_of: dict[float, int] = {}
    ocr_frames: set[float] = set()
    texts = []
    shapes_seen = 0
    for cap in captions:
        data = cap.get("data") or {}
        for t, boxes in data.get("boxes") or []:
            boxes_at[round(float(t), 3)] = boxes
        for t in data.get("frames_s") or []:
            clip_of[round(float(t), 3)] = int(cap["clip_index"])
        ocr_frames.update(round(float(t), 3) for t in data.get("ocr_frames_s") or [])
        for line in data.get("ocr") or []:
            texts.append((float(line.get("t_s", cap["start_s"])), int(cap["clip_index"]), float(cap["start_s"]),
                          float(cap["end_s"]), str(line.get("text", "")), float(line.get("score", 0.0))))
        shapes_seen += len(data.get("shapes_per_frame") or [])
    track_of: dict[tuple[float, int], tuple[str, str | None]] = {}
    for tr in tracks:
        for b in tr.get("boxes") or []:
            track_of[(round(float(b[0]), 3), _box_key(b[1:5]))] = (tr["id"], tr.get("subject"))

    sampled = sorted(set(clip_of) | set(boxes_at))
    tmp = index_dir / f".{MEMORY_FILE}.tmp-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    try:
        db.executescript(SCHEMA)
        width = height = 0
        people_frames = 0
        last_people_t = -1e9
        frames_iter = sample_frames(info, fps=settings.fps, max_side=settings.max_side) if info else iter(())
        bar = tqdm(total=len(boxes_at) or None, desc=f"memory {(video or index_dir).name}", unit="frame",
                   disable=not progress,
                   file=sys.stderr, leave=False)
        seen_t: set[float] = set()
        for frame in frames_iter:
            t = _nearest(frame.t_s, sampled)
            if t is None or t in seen_t:
                continue
            seen_t.add(t)
            bar.update(1)
            img = frame.image
            height, width = img.shape[:2]
            names = colour_names(img, top=3, min_share=0.05)
            luma = float(np.dot(img.reshape(-1, 3)[:: max(1, img.size // 3 // 40000)].mean(axis=0),
                                [0.299, 0.587, 0.114]))
            stored = boxes_at.get(t) or []
            read_people = None
            if reader is not None and any(b[0] == "person" for b in stored) and t - last_people_t >= PEOPLE_EVERY_S - 1e-6:
                last_people_t = t
                people_frames += 1
                read_people = reader.read(img, [_Box(b[0], b[2:6]) for b in stored])
            db.execute("INSERT INTO frames VALUES (?,?,?,?,?,?,?,?,?)",
                       (t, clip_of.get(t), shot_of(t), round(luma, 2), names[0][0] if names else None,
                        round(names[0][1], 3) if names else None, json.dumps([[n, round(s, 3)] for n, s in names]),
                        int(read_people is not None), int(t in ocr_frames)))
            for b in stored:
                label, score, box = str(b[0]), float(b[1]), [float(v) for v in b[2:6]]
                colours = box_colours(img, box, top=1)
                tid, subject = track_of.get((t, _box_key(box)), (None, None))
                cur = db.execute("INSERT INTO boxes(t_s,label,score,x1,y1,x2,y2,cx,cy,track,subject,colour) "
                                 "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                                 (t, label, score, *box, (box[0] + box[2]) / 2 / width, (box[1] + box[3]) / 2 / height,
                                  tid, subject, colours[0] if colours else None))
                if read_people is not None and label == "person":
                    r = next((r for r in read_people if _box_key(r.box) == _box_key(box)), None)
                    if r is not None:
                        db.execute("INSERT INTO people VALUES (?,?,?,?,?,?,?,?)",
                                   (cur.lastrowid, t, r.posture, None if r.arms_raised is None else int(r.arms_raised),
                                    r.expression[0] if r.expression else None,
                                    round(r.expression[1], 3) if r.expression else None, r.hands,
                                    json.dumps(r.holding)))
            for s in find_shapes(img, max_std=CAPTION_MAX_STD):
                x1, y1, x2, y2 = s.box
                db.execute("INSERT INTO shapes VALUES (?,?,?,?,?,?,?,?,?)",
                           (t, s.kind, s.colour, x1, y1, x2, y2, (x1 + x2) / 2 / width, (y1 + y2) / 2 / height))
        bar.close()
        db.executemany("INSERT INTO texts(t_s,clip,start_s,end_s,text,norm,score) VALUES (?,?,?,?,?,?,?)",
                       [(t, c, a, b, text, normalise(text), s) for t, c, a, b, text, s in texts])
        db.executemany("INSERT INTO speech(start_s,end_s,text,norm,source) VALUES (?,?,?,?,?)",
                       [(float(s["start_s"]), float(s["end_s"]), str(s["text"]), normalise(s["text"]),
                         str(s.get("source", ""))) for s in segments])
        db.executemany("INSERT INTO shots VALUES (?,?,?)", [(i, a, b) for i, (a, b) in enumerate(shot_spans)])
        db.executemany("INSERT INTO cuts VALUES (?)", [(t,) for t in cuts])
        for tr in tracks:
            bx = tr.get("boxes") or []
            dx = dy = 0.0
            if len(bx) >= 2 and width and height:
                dx = ((bx[-1][1] + bx[-1][3]) - (bx[0][1] + bx[0][3])) / 2 / width
                dy = ((bx[-1][2] + bx[-1][4]) - (bx[0][2] + bx[0][4])) / 2 / height
            db.execute("INSERT INTO tracks VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (tr["id"], tr["label"], tr["first_s"], tr["last_s"], tr.get("frames", len(bx)),
                        tr.get("entry"), tr.get("exit"), tr.get("subject"), round(dx, 4), round(dy, 4),
                        tr.get("score")))
        frames_n = len(seen_t)
        coverage = {
            # the boxes are the captioner's: a captioner that keeps none (the gpu profile's VLM) read no objects,
            # and an empty boxes table is then no "nothing there"
            "objects": ({"read": True, "frames": "every sampled frame", "fps": settings.fps} if frames_n and boxes_at
                        else {"read": False, "why": "the captioner recorded no detector boxes" if frames_n else
                              "no frame was decoded"}),
            "pixels": {"read": frames_n > 0, "frames": "every sampled frame"},
            "shapes": {"read": frames_n > 0, "frames": "every sampled frame"},
            "people": ({"read": True, "frames": f"one frame per {PEOPLE_EVERY_S:g} s with a person box",
                        "frames_read": people_frames} if reader is not None else {"read": False, "why": people_why}),
            "text": {"read": bool(ocr_frames), "frames": "the captioner's OCR frames of each clip",
                     "frames_read": len(ocr_frames)},
            "speech": _speech_coverage(transcript_info or {}, segments),
            "cuts": {"read": True, "method": cut_method},
        }
        detector = getattr(backends, "detector", None)
        vocabulary = list((detector.class_list if detector is not None else None) or [])  # [] = open vocabulary
        meta = {"id": memory_id(reader is not None or not people), "version": MEMORY_VERSION,
                "duration_s": duration, "fps": settings.fps, "width": width, "height": height,
                "detector": getattr(detector, "name", ""), "vocabulary": json.dumps(vocabulary),
                "coverage": json.dumps(coverage), "people_requested": json.dumps(bool(people))}
        db.executemany("INSERT INTO meta VALUES (?,?)", [(k, str(v)) for k, v in meta.items()])
        db.commit()
        rows = {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # noqa: S608 - fixed table names
                for t in ("frames", "boxes", "people", "texts", "speech", "shots", "cuts", "tracks", "shapes")}
    except BaseException:
        db.close()
        tmp.unlink(missing_ok=True)  # a failed build leaves no half-written file beside the index
        raise
    else:
        db.close()
    os.chmod(tmp, 0o600)
    os.replace(tmp, index_dir / MEMORY_FILE)
    return {"rows": rows, "seconds": round(time.perf_counter() - t0, 2),
            "bytes": (index_dir / MEMORY_FILE).stat().st_size, "id": meta["id"]}


def _box_key(box) -> tuple:
    return tuple(round(float(v)) for v in box)


def _nearest(t_s: float, times: list[float]) -> float | None:
    """The captioner's sampled time (``times``, ascending) a decoded frame's time stands for (within a quarter of a
    second), or None."""
    import bisect

    i = bisect.bisect_left(times, t_s)
    near = [times[j] for j in (i - 1, i) if 0 <= j < len(times)]
    best = min(near, key=lambda t: abs(t - t_s), default=None)
    return best if best is not None and abs(best - t_s) <= 0.25 else None


# ------------------------------------------------------------------------------------------------ reading


class Memory:
    """Read access to a ``memory.sqlite`` (opened read-only; safe to share between threads for reads).

    Attributes:
        path: the file.
        meta: the ``meta`` table as a dict (strings).
        coverage: what each modality read (module docstring).
        duration_s, fps: of the video and of the sampled frames.
        width, height: of the analysed frames, pixels.
        vocabulary: the detector's classes (empty for an open-vocabulary detector).

    Raises:
        MemoryUnreadable: the file is missing, not SQLite, or lacks the schema's tables.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self.db.row_factory = sqlite3.Row
            self.meta = {r["key"]: r["value"] for r in self.db.execute("SELECT key, value FROM meta")}
            self.coverage = json.loads(self.meta["coverage"])
            self.vocabulary = list(json.loads(self.meta.get("vocabulary") or "[]"))
            self.duration_s = float(self.meta["duration_s"])
            self.fps = float(self.meta["fps"])
            self.width, self.height = int(self.meta["width"]), int(self.meta["height"])
            for table in ("frames", "boxes", "people", "texts", "speech", "shots", "cuts", "tracks", "shapes"):
                self.db.execute(f"SELECT 1 FROM {table} LIMIT 1")  # noqa: S608 - fixed names
        except (sqlite3.Error, KeyError, ValueError, TypeError) as exc:
            raise MemoryUnreadable(f"{self.path}: {type(exc).__name__}: {exc}") from None

    def rows(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        """The rows of a read-only SQL query."""
        return self.db.execute(sql, params).fetchall()

    def covered(self, modality: str) -> bool:
        """Whether ``modality`` (``objects``, ``people``, ``text``, ``speech``, ``shapes``, ``cuts``, ``pixels``)
        was read when the memory was built."""
        return bool((self.coverage.get(modality) or {}).get("read"))

    def frame_times(self, start_s: float = 0.0, end_s: float | None = None) -> list[float]:
        """The sampled frames' times in ``[start_s, end_s]``."""
        end = self.duration_s if end_s is None else end_s
        return [r[0] for r in self.db.execute("SELECT t_s FROM frames WHERE t_s >= ? AND t_s <= ? ORDER BY t_s",
                                              (start_s - 1e-6, end + 1e-6))]

    def close(self) -> None:
        self.db.close()


class MemoryUnreadable(Exception):
    """A memory file that cannot be read (it is rebuilt by :func:`avi.index.memory_stage.ensure_memory`)."""
