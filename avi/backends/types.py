"""Typed results shared by every backend of a model role.

One result type per role, whatever model produced it (the shape of
roboflow/supervision's ``Detections``): the agent, tools and index never see a
backend's native output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from avi.untrusted import defang

Box = tuple[float, float, float, float]
"""A box in pixels of the analysed frame, ``(x1, y1, x2, y2)`` (xyxy)."""


@dataclass(frozen=True)
class Detection:
    """One detected object.

    Attributes:
        label: the requested label it answers (e.g. ``"person"``).
        score: confidence in [0, 1].
        box: pixel xyxy in the analysed frame.
        t_s: time of the frame in seconds.
        frame_size: (width, height) of the analysed frame in pixels.
        cls: the detector's own class when it differs in kind from the asked word (COCO ``"bicycle"`` for
            ``"bike"``); None for open-vocabulary detectors.
    """

    label: str
    score: float
    box: Box
    t_s: float
    frame_size: tuple[int, int]
    cls: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["cls"] is None:
            del d["cls"]
        d["box"] = [round(v, 1) for v in self.box]
        d["score"] = round(self.score, 3)
        return d


@dataclass(frozen=True)
class DetectionResult:
    """Detections for one frame plus the labels this backend cannot detect.

    Attributes:
        detections: after NMS, sorted by score (descending).
        unsupported: requested labels the backend has no model for.
    """

    t_s: float
    detections: list[Detection]
    unsupported: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OcrLine:
    """One line of recognised text.

    Attributes:
        text: the recognised string.
        score: recognition confidence in [0, 1].
        box: pixel xyxy (axis-aligned hull of the detected quadrilateral).
        t_s: time of the frame in seconds.
    """

    text: str
    score: float
    box: Box
    t_s: float

    def __post_init__(self) -> None:
        # on-screen text is the video's: never avi's own syntax (avi/untrusted.py)
        object.__setattr__(self, "text", defang(self.text))

    def to_dict(self) -> dict:
        return {"text": self.text, "score": round(self.score, 3), "box": [round(v, 1) for v in self.box], "t_s": self.t_s}


@dataclass
class Caption:
    """The caption of one clip.

    Attributes:
        clip_index: 0-based clip number.
        start_s, end_s: clip bounds in seconds.
        text: the natural-language caption that is embedded and retrieved.
        captioner: name of the captioner that wrote it (stored in the index).
        data: structured fields behind the text (subject registry, OCR, counts).
    """

    clip_index: int
    start_s: float
    end_s: float
    text: str
    captioner: str
    data: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a caption retells the video (its on-screen text, its speech): never avi's own syntax (avi/untrusted.py)
        self.text = defang(self.text)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Caption":
        return cls(**d)
