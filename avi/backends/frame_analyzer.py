"""Frame analysis role (the ``frame_analysis`` tool, AVI §3.3.2).

Backends:
    * :class:`PerceptionFrameAnalyzer` (cpu profile): no VLM can run here, so
      it *measures* the frames instead of reading them: per frame the objects
      the detector finds (80 COCO classes on cpu), people and face counts,
      what the people models read about each person (posture, facial
      expression, hands and what they are on; :mod:`avi.backends.people.reader`,
      issue 36), the text OCR reads and the dominant colours, plus shot changes
      and motion over the run. It cannot interpret the question; its output
      says so, so the orchestrator does not mistake it for a VLM.
    * :class:`avi.backends.vlm.VlmFrameAnalyzer` (gpu profile): Qwen3-VL, frames
      sent as an image list with timestamps.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from avi.backends.box_words import box_words
from avi.backends.detector import Detector, all_detections
from avi.backends.ocr import OcrEngine, read_lines
from avi.backends.shapes import CAPTION_MAX_STD, describe_shapes, find_shapes
from avi.video.analysis import colour_names, frame_stats, motion_level
from avi.video.decode import Frame


@dataclass
class FrameAnalysis:
    """Answer of a frame analyzer.

    Attributes:
        text: what the analyzer says about the frames (for the LLM).
        data: structured details for the trace.
    """

    text: str
    data: dict = field(default_factory=dict)


@runtime_checkable
class FrameAnalyzer(Protocol):
    """Looks at frames to answer a specific question about them."""

    name: str

    def analyze(self, frames: list[Frame], question: str, script: str | None = None) -> FrameAnalysis:
        """What ``frames`` show about ``question``; ``script``: the script on-screen text is read in where the
        analyser reads text with OCR (:data:`avi.backends.ocr_script.LATIN`, None: every script)."""
        ...


class PerceptionFrameAnalyzer:
    """Measured description of frames (cpu profile stand-in for a VLM).

    Args:
        ocr: run on every frame.
        detector: run on every frame: every class it knows (``detect_all``) or the labels person and face.
        people: reads each person box (:class:`~avi.backends.people.reader.PeopleReader`), on frames with a
            person only; None leaves people at counts.
    """

    name = "perception-frame-analyzer-v2"  # v2: flat geometric shapes

    def __init__(self, ocr: OcrEngine, detector: Detector, people=None):
        self.ocr = ocr
        self.detector = detector
        self.people = people
        if people is not None:
            self.name = "perception-frame-analyzer-v3"  # v3: people read by the people models

    def analyze(self, frames: list[Frame], question: str, script: str | None = None) -> FrameAnalysis:
        """Measured rows of ``frames``, identical neighbours merged; on-screen text read in ``script`` (the
        question's, :func:`avi.backends.ocr_script.question_script`; None: every script)."""
        rows = []
        runs: list[list] = []  # [first_t, last_t, n, description]: identical neighbours merged
        for f in frames:
            row = measure_frame(self.ocr, self.detector, f, self.people, script)
            rows.append(row)
            desc = describe_row(row)
            if runs and runs[-1][3] == desc:
                runs[-1][1] = f.t_s
                runs[-1][2] += 1
            else:
                runs.append([f.t_s, f.t_s, 1, desc])
        lines = [(f"{a:.1f}s" if n == 1 else f"{a:.1f}–{b:.1f}s ({n} frames)") + f": {d}" for a, b, n, d in runs]
        stats = frame_stats([f.t_s for f in frames], [f.image for f in frames])
        summary = f"Motion {motion_level(stats.motion)}"
        summary += ("; shot changes at " + ", ".join(f"{t:.1f}s" for t in stats.shot_changes_s)) \
            if stats.shot_changes_s else "; no shot change"
        text = ("Measured description (cpu profile has no VLM; the question is not interpreted, "
                "only detected objects, people/faces" + (" (each person's posture, face and hands read by models)"
                                                        if self.people is not None else "")
                + ", flat geometric shapes, on-screen text, colours and motion are measured):\n"
                + "\n".join(lines) + "\n" + summary + ".")
        return FrameAnalysis(text, {"question": question, "frames": rows,
                                    "shot_changes_s": stats.shot_changes_s, "motion": round(stats.motion, 4)})


def measure_frame(ocr: OcrEngine, detector: Detector, frame: Frame, people=None, script: str | None = None) -> dict:
    """What the cpu profile measures in one frame: ``{"t_s", "people", "faces", "objects": {label: count},
    "text": [str], "colours": [name], "shapes": str, "shape_kinds": ["colour kind"], "persons": [...]}`` (detector
    classes, OCR lines, dominant colour names, flat geometric shapes; ``persons``: what ``people``, a
    :class:`~avi.backends.people.reader.PeopleReader`, read about each person box, with its position in words);
    text read in ``script`` (None: every script; :func:`avi.backends.ocr.read_lines`)."""
    dets = all_detections(detector, frame)
    objects = Counter(d.label for d in dets if d.label not in ("person", "face"))
    shapes = find_shapes(frame.image, max_std=CAPTION_MAX_STD)
    size = (frame.image.shape[1], frame.image.shape[0])
    persons = [{**r.to_dict(), "where": box_words(r.box, size), "reading": r.describe()}
               for r in (people.read(frame.image, dets) if people is not None else [])]
    return {"t_s": frame.t_s, "people": sum(d.label == "person" for d in dets), "persons": persons,
            "faces": sum(d.label == "face" for d in dets), "objects": dict(objects),
            "text": [line.text for line in read_lines(ocr, frame, (), script)],
            "colours": [n for n, _ in colour_names(frame.image)],
            "shapes": describe_shapes(shapes), "shape_kinds": sorted({f"{b.colour} {b.kind}" for b in shapes})}


def describe_row(row: dict) -> str:
    """One line for a :func:`measure_frame` row: people, faces, objects, shapes, text, colours."""
    people, faces, objects, shapes, texts = row["people"], row["faces"], row["objects"], row["shapes"], row["text"]
    desc = f"{people} {'person' if people == 1 else 'people'}"
    if faces:
        desc += f", {faces} face{'s' if faces > 1 else ''}"
    read = [f"person {p['where']}: {p['reading']}" for p in row.get("persons", []) if p["reading"]]
    if read:
        desc += " (" + " | ".join(read) + ")"
    if objects:
        desc += "; objects " + ", ".join(f"{label} x{n}" for label, n in sorted(objects.items()))
    if shapes:
        desc += f"; shapes {shapes}"
    desc += "; text " + (", ".join(f'"{t}"' for t in texts) if texts else "none")
    return desc + "; colours " + (", ".join(row["colours"]) or "n/a")
