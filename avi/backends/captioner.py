"""Clip captioning role (the database's clip captions, AVI §3.2.1).

Backends:
    * :class:`PerceptionCaptioner` (cpu profile): no VLM weights can be
      installed on a plain CPU machine, so the caption is *measured*, not
      generated: OCR text, object counts per class (the cpu detector's 80 COCO
      classes, with where each is in the frame), person and face counts, shot
      changes, dominant colours and motion, written as one plain-language paragraph plus the
      structured fields behind it. The caption says that it is a perception
      caption, and the index records the captioner's name.
    * :class:`avi.backends.vlm.VlmCaptioner` (gpu profile): Qwen3-VL through an
      OpenAI-compatible endpoint or in-process transformers, subject registry JSON.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from avi.backends.box_words import box_words
from avi.backends.coco_detector import text_regions
from avi.backends.detector import Detector, all_detections
from avi.backends.ocr import OcrEngine, read_lines
from avi.backends.people.reader import caption_words
from avi.backends.shapes import CAPTION_MAX_STD, describe_shapes, find_shapes
from avi.backends.types import Caption, Detection
from avi.video.analysis import frame_stats, motion_level
from avi.video.clips import Clip
from avi.video.decode import Frame

#: ``data["failed"]`` of a clip none of whose frames could be decoded (every captioner).
NO_FRAMES = "no frames could be decoded in this clip"


@runtime_checkable
class Captioner(Protocol):
    """Describes one clip from its sampled frames."""

    name: str

    def caption(self, clip: Clip, frames: list[Frame], previous: Frame | None = None) -> Caption:
        """Caption of ``clip``; ``previous`` is the last frame of the clip before it.

        A clip that cannot be described (no frames, an invalid model reply) is still returned, with
        ``data["failed"]`` saying why (:data:`NO_FRAMES` when ``frames`` is empty).
        """
        ...


def normalise_text(text: str) -> str:
    """Key for de-duplicating OCR strings: lower case, single spaces, no edge punctuation."""
    return re.sub(r"\s+", " ", text).strip(" .,:;'\"").lower()


def _fmt_t(t: float) -> str:
    return f"{t:.1f}s"


def _count_phrase(counts: list[int], noun: str, plural: str) -> str:
    top = max(counts) if counts else 0
    if top == 0:
        return f"no {plural} detected"
    lo = min(counts)
    spread = f"{lo}–{top} per frame" if lo != top else f"{top} in every sampled frame"
    return f"up to {top} {noun if top == 1 else plural} visible ({spread})"


def _object_phrase(label: str, seq: list[int]) -> str:
    top = max(seq)
    seen = sum(n > 0 for n in seq)
    return f"{label} (up to {top}, in {seen} of {len(seq)} frames)"


def per_frame_size(frames: list[Frame]) -> tuple[int, int]:
    """``(width, height)`` in pixels of the clip's frames (the first one's)."""
    return int(frames[0].image.shape[1]), int(frames[0].image.shape[0])


class PerceptionCaptioner:
    """Caption built from OCR, detector counts and pixel statistics (cpu profile).

    Args:
        ocr: OCR engine, run on ``ocr_frames`` evenly spaced frames of the clip.
        detector: run on every sampled frame: every class it knows (``detect_all``, the cpu COCO detector) or
            the labels person and face.
        ocr_frames: frames per clip given to OCR (OCR costs ~0.3 s per frame here).
        people: a :class:`~avi.backends.people.reader.PeopleReader`, or None. Given, the people of one frame of
            each clip that shows people (the frame with the most person boxes, the one nearest the clip's middle
            among equals) are read: posture, raised arms and what a hand is on; the caption says it
            ("People read at 12.5s: a person (left, medium) standing, a hand on a cup"; people
            with nothing read are left out, :func:`~avi.backends.people.reader.caption_words`) so retrieval finds it
            (issue 36, item 3), ``data["people_read"]`` keeps the readings.
    """

    name = "perception-caption-v5"  # v3: OCR passes, COCO objects; v4: flat geometric shapes; v5: every box kept
    #: an object class seen in one sampled frame only is named when its best box scores at least this
    single_frame_score = 0.5

    def __init__(self, ocr: OcrEngine, detector: Detector, ocr_frames: int = 3, people=None):
        self.ocr = ocr
        self.detector = detector
        self.ocr_frames = max(1, ocr_frames)
        self.people = people

    def _read_people(self, frames: list[Frame], per_frame: list, people: list[int]) -> dict | None:
        """The people readings of the clip's frame with the most person boxes (``{"t_s", "people"}``), or None."""
        if self.people is None or max(people) == 0:
            return None
        middle = (len(frames) - 1) / 2
        i = max(range(len(frames)), key=lambda k: (people[k], -abs(k - middle)))
        readings = self.people.read(frames[i].image, per_frame[i])
        return {"t_s": frames[i].t_s, "people": readings} if readings else None

    def _present(self, seq: list[int], best: Detection | None) -> bool:
        """Agreement across neighbouring frames: seen in two sampled frames, or once with a confident box."""
        return sum(n > 0 for n in seq) >= 2 or (best is not None and best.score >= self.single_frame_score)

    def caption(self, clip: Clip, frames: list[Frame], previous: Frame | None = None) -> Caption:
        if not frames:  # a failed clip (damaged timestamps, corrupt packets): the index manifest lists it
            return Caption(clip.index, clip.start_s, clip.end_s,
                           "No frames could be decoded in this clip.",
                           self.name, {"frames": [], "frames_s": [], "failed": NO_FRAMES})
        per_frame = [all_detections(self.detector, f) for f in frames]
        counts: dict[str, list[int]] = {"person": [0] * len(frames), "face": [0] * len(frames)}
        best: dict[str, Detection] = {}
        first_seen: dict[str, float] = {}
        for i, (f, dets) in enumerate(zip(frames, per_frame)):
            for d in dets:
                counts.setdefault(d.label, [0] * len(frames))[i] += 1
                first_seen.setdefault(d.label, f.t_s)
                if d.label not in best or d.score > best[d.label].score:
                    best[d.label] = d
        people, faces = counts["person"], counts["face"]
        objects = {label: seq for label, seq in counts.items()
                   if label not in ("person", "face") and self._present(seq, best.get(label))}
        step = max(1, len(frames) // self.ocr_frames)
        ocr_picks = list(zip(frames, per_frame))[step // 2:: step][: self.ocr_frames]
        ocr_frames = [f for f, _ in ocr_picks]
        texts: dict[str, dict] = {}
        for f, dets in ocr_picks:
            for line in read_lines(self.ocr, f, text_regions(dets)):  # signs on vehicles, screens: read closely
                key = normalise_text(line.text)
                if sum(ch.isalnum() for ch in key) < 2:  # single glyphs are mostly OCR noise on texture
                    continue
                if key not in texts or line.score > texts[key]["score"]:
                    texts[key] = {"text": line.text, "score": round(line.score, 3),
                                  "t_s": texts.get(key, {}).get("t_s", f.t_s)}
        # flat geometric shapes (graphics, overlays, signs) on the OCR frames; strict flatness keeps real surfaces out
        shapes_at = [(f.t_s, find_shapes(f.image, max_std=CAPTION_MAX_STD)) for f in ocr_frames]
        shape_peak = max(shapes_at, key=lambda ts: len(ts[1]), default=(0.0, []))
        stats = frame_stats([f.t_s for f in frames], [f.image for f in frames],
                            previous=previous.image if previous is not None else None)
        level = motion_level(stats.motion)
        registry = {}
        for kind, seq in (("person", people), ("face", faces), *objects.items()):
            if max(seq) > 0:
                registry[kind] = {
                    "name": kind,
                    "appearance": [box_words(best[kind].box, best[kind].frame_size)],
                    "identity": [f"{kind} found by the {self.detector.name} detector"],
                    "first_seen": first_seen[kind],
                    "max_count": max(seq),
                }
        text_list = sorted(texts.values(), key=lambda d: d["t_s"])
        parts = [f"People: {_count_phrase(people, 'person', 'people')}."]
        read = self._read_people(frames, per_frame, people)
        described = [(r, caption_words(r)) for r in read["people"]] if read else []
        described = [(r, words) for r, words in described if words]
        if described:
            parts.append(f"People read at {_fmt_t(read['t_s'])}: "
                         + "; ".join(f"a person ({box_words(r.box, per_frame_size(frames))}) {words}"
                                     for r, words in described) + ".")
        if max(faces) > 0:
            parts.append(f"Faces: {_count_phrase(faces, 'face', 'faces')}.")
        if objects:
            parts.append("Objects: " + "; ".join(
                f"{_object_phrase(label, seq)} ({box_words(best[label].box, best[label].frame_size)})"
                for label, seq in sorted(objects.items(), key=lambda kv: (-sum(kv[1]), kv[0]))) + ".")
        if shape_peak[1]:
            parts.append(f"Shapes: {describe_shapes(shape_peak[1])} (at {_fmt_t(shape_peak[0])}; "
                         f"{', '.join(str(len(b)) for _, b in shapes_at)} in the frames at "
                         f"{', '.join(_fmt_t(t) for t, _ in shapes_at)}).")
        if text_list:
            parts.append("On-screen text: " + "; ".join(f'"{d["text"]}"' for d in text_list) + ".")
        else:
            parts.append("No on-screen text read.")
        if stats.colours:
            parts.append("Dominant colours: " + ", ".join(f"{n} {round(100 * s)}%" for n, s in stats.colours) + ".")
        parts.append(f"Motion: {level}.")
        if stats.shot_changes_s:
            parts.append("Shot change at " + ", ".join(_fmt_t(t) for t in stats.shot_changes_s) + ".")
        data = {
            "subject_registry": registry,
            "people_per_frame": [[f.t_s, n] for f, n in zip(frames, people)],
            "faces_per_frame": [[f.t_s, n] for f, n in zip(frames, faces)],
            "objects_per_frame": {label: [[f.t_s, n] for f, n in zip(frames, seq)] for label, seq in objects.items()},
            "ocr": text_list,
            "shapes_per_frame": [[t, len(b)] for t, b in shapes_at],
            "shapes": [{"kind": b.kind, "colour": b.colour, "box": list(b.box), "t_s": shape_peak[0]}
                       for b in shape_peak[1]],
            "ocr_frames_s": [f.t_s for f in ocr_frames],
            "shot_changes_s": stats.shot_changes_s,
            "motion": round(stats.motion, 4),
            "motion_level": level,
            "colours": [[n, round(s, 3)] for n, s in stats.colours],
            "frames_s": [f.t_s for f in frames],
            # every box of every sampled frame, for the index's tracks (avi/index/tracks.py)
            "boxes": [[f.t_s, [[d.label, round(d.score, 3), *(round(v, 1) for v in d.box)] for d in dets]]
                      for f, dets in zip(frames, per_frame)],
            "frame_size": list(per_frame_size(frames)),
        }
        if read:
            data["people_read"] = {"t_s": read["t_s"], "people": [r.to_dict() for r in read["people"]]}
        return Caption(clip.index, clip.start_s, clip.end_s, " ".join(parts), self.name, data)
