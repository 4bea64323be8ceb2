#!/usr/bin/env python
"""The cpu people models on real frames labelled by eye (bench/people/frames.jsonl): precision and recall (issue 36).

Models (avi/backends/people/, weights.lock): BlazeFace faces, MediaPipe Hands (``hands``: palm detector and hand
landmarks, looking closer in the COCO detector's person boxes as avi does; scored by hand presence), human's palm
detector alone (``palms``, for comparison), MoveNet MultiPose (people and their keypoints) and the FER2013
mini-Xception (expressions). For each detector, per labelled frame, detections are matched greedily in descending
score to unmatched truth boxes:

* faces and people: IoU >= ``--iou`` (0.5, as WIDER FACE and COCO score);
* hands and palms: the detection's centre lies inside the labelled hand box (a palm box covers the palm only, and
  a hand box from landmarks misses a cut-off part of the hand), so IoU against a whole-hand box would not measure
  it.

An unmatched detection whose centre lies in an ``ignore_regions`` area labelled with its class is not scored.
Precision = matched / scored detections, recall = matched / truth boxes, at the threshold the model runs with in
avi (its upstream default, printed) and over a sweep. Expressions are read on the labelled face boxes (so the
classifier is measured apart from the detector) for faces whose expression is not ``unclear``: accuracy and the
confusion counts. Postures (:mod:`avi.backends.people.posture`) are read from the keypoints of the pose matched
to each labelled person (IoU, at avi's threshold) and compared where the label is not ``unclear``; raised arms too.

    .venv/bin/python scripts/bench_people.py [--frames bench/people/frames.jsonl] [--videos DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from avi.backends.boxes import box_iou, centre_inside

ROOT = Path(__file__).resolve().parents[1]
SWEEP = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def iou_match(det: Sequence[float], truth: Sequence[float], iou: float) -> bool:
    """True when the pixel xyxy boxes overlap with IoU >= ``iou``."""
    return box_iou(det, truth) >= iou


def score_frame(dets: Sequence[tuple[Sequence[float], float]], truths: Sequence[Sequence[float]],
                ignore: Sequence[Sequence[float]], matches: Callable[[Sequence[float], Sequence[float]], bool],
                threshold: float) -> tuple[int, int, int]:
    """Greedy matching of one frame's detections to its truth boxes.

    Args:
        dets: (pixel xyxy box, score) per detection.
        truths: pixel xyxy truth boxes.
        ignore: pixel xyxy regions where an unmatched detection is not scored.
        matches: whether a detection box matches a truth box.
        threshold: detections scoring below it are dropped.

    Returns:
        (true positives, scored false positives, truth boxes).
    """
    used = [False] * len(truths)
    tp = fp = 0
    for box, score in sorted(dets, key=lambda d: -d[1]):
        if score < threshold:
            continue
        hit = next((i for i, t in enumerate(truths) if not used[i] and matches(box, t)), None)
        if hit is not None:
            used[hit] = True
            tp += 1
        elif not any(centre_inside(box, r) for r in ignore):
            fp += 1
    return tp, fp, len(truths)


def precision_recall(rows: Sequence[tuple[int, int, int]]) -> dict:
    """Totals of :func:`score_frame` rows as precision, recall and counts (None where undefined)."""
    tp, fp, n = (sum(r[i] for r in rows) for i in range(3))
    return {"precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / n, 3) if n else None, "tp": tp, "fp": fp, "truth": n}


def _ignore(rec: dict, label: str) -> list:
    return [r["xyxy"] for r in rec.get("ignore_regions", []) if label in r["labels"]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=Path, default=ROOT / "bench" / "people" / "frames.jsonl")
    ap.add_argument("--videos", type=Path, default=Path.home() / ".cache" / "avi" / "devbench" / "videos")
    ap.add_argument("--iou", type=float, default=0.5, help="IoU for a face or person match (default 0.5)")
    ap.add_argument("--pose-input", type=int, default=None,
                    help="MoveNet's square input side in pixels, a multiple of 32 (default: avi's, 256)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    a = ap.parse_args(argv)
    if a.pose_input is not None and (a.pose_input < 32 or a.pose_input % 32):
        ap.error("--pose-input must be a positive multiple of 32")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    from avi.backends.coco_detector import NanoDetDetector
    from avi.backends.people import (
        ExpressionClassifier,
        FaceDetector,
        HandDetector,
        PalmDetector,
        PoseEstimator,
        posture,
    )
    from avi.config import Settings
    from avi.offline import enforce_offline_env
    from avi.video.decode import VideoReader, probe
    from avi.weights import resolve

    enforce_offline_env()
    if not a.frames.is_file():
        print(f"bench_people: no labelled frames at {a.frames}", file=sys.stderr)
        return 2
    truth = [json.loads(line) for line in a.frames.read_text().splitlines() if line.strip()]
    missing = sorted({r["video"] for r in truth if not (a.videos / r["video"]).exists()})
    if missing:
        print(f"bench_people: videos not in {a.videos}: {', '.join(missing)}", file=sys.stderr)
        return 2
    s = Settings()
    path = {n: resolve(n, s.models_dir, s.weights_lock) for n in (
        "blazeface", "handdetect", "movenet-multipose", "emotion", "mediapipe-palm-detection-full",
        "mediapipe-hand-landmark-full", "nanodet-m-coco")}
    # Built with a floor under every threshold of the sweep; scored at each threshold below.
    faces = FaceDetector(path["blazeface"], min_score=min(SWEEP) - 0.01)
    palms = PalmDetector(path["handdetect"], min_score=min(SWEEP) - 0.01)
    hands = HandDetector(path["mediapipe-palm-detection-full"], path["mediapipe-hand-landmark-full"],
                         min_presence=min(SWEEP) - 0.01)
    coco = NanoDetDetector(path["nanodet-m-coco"])

    def detect_hands(image):  # avi looks closer at the people its COCO detector boxes
        return hands.detect(image, [box for cls, _, box in coco.raw(image) if cls == "person"])
    poses = PoseEstimator(path["movenet-multipose"], min_score=min(SWEEP) - 0.01,
                          **({"input_size": a.pose_input} if a.pose_input else {}))
    expressions = ExpressionClassifier(path["emotion"])
    defaults = {kind: inspect.signature(cls).parameters["min_score"].default  # the threshold avi constructs with
                for kind, cls in (("faces", FaceDetector), ("palms", PalmDetector), ("people", PoseEstimator))}
    defaults["hands"] = inspect.signature(HandDetector).parameters["min_presence"].default

    iou = a.iou
    kinds = {  # kind -> (truth boxes of a record, ignore label, detector (objects with .box, .score), match)
        "faces": (lambda r: [f["xyxy"] for f in r.get("faces", [])], "face", faces.detect,
                  lambda d, t: iou_match(d, t, iou)),
        "hands": (lambda r: [h["xyxy"] for h in r.get("hands", [])], "hand", detect_hands, centre_inside),
        "palms": (lambda r: [h["xyxy"] for h in r.get("hands", [])], "hand", palms.detect, centre_inside),
        "people": (lambda r: [p["xyxy"] for p in r.get("postures", [])], "person", poses.estimate,
                   lambda d, t: iou_match(d, t, iou)),
    }
    dets = {k: [] for k in kinds}
    ms = {k: [] for k in kinds}
    expr_pairs: list[tuple[str, str]] = []
    posture_pairs: list[tuple[str, str]] = []
    arms_pairs: list[tuple[bool, bool]] = []
    readers: dict[str, VideoReader] = {}
    for rec in truth:
        reader = readers.setdefault(rec["video"], VideoReader(probe(a.videos / rec["video"]), max_side=8192))
        image = reader.frames_at([rec["t_s"]])[0].image
        for kind, (_, _, detect, _) in kinds.items():
            t0 = time.perf_counter()
            dets[kind].append(detect(image))
            ms[kind].append((time.perf_counter() - t0) * 1000)
        # Posture on each labelled person matched (IoU, best pose first) by a pose at avi's threshold.
        free = sorted([p for p in dets["people"][-1] if p.score > defaults["people"]], key=lambda p: -p.score)
        for person in rec.get("postures", []):
            hit = next((p for p in free if iou_match(p.box, person["xyxy"], iou)), None)
            if hit is None:
                continue
            free.remove(hit)
            read = posture(hit.keypoints)
            if person.get("posture", "unclear") != "unclear":
                posture_pairs.append((person["posture"], read.posture))
            if "arms_raised" in person:
                arms_pairs.append((bool(person["arms_raised"]), read.arms_raised))
        labelled = [f for f in rec.get("faces", []) if f.get("expression", "unclear") != "unclear"]
        if labelled:
            for f, e in zip(labelled, expressions.classify(image, [tuple(f["xyxy"]) for f in labelled])):
                expr_pairs.append((f["expression"], e.label))

    report: dict = {"frames": len(truth), "videos": sorted({r["video"] for r in truth}), "iou": iou,
                    "pose_input": poses.input_size, "models": {}}
    print(f"{len(truth)} labelled frames from {len(report['videos'])} videos; faces and people matched at IoU >= "
          f"{iou}, hands and palms by their centre inside the hand box\n")
    print(f"{'model':<8} {'threshold':>9} {'precision':>9} {'recall':>7} {'tp':>4} {'fp':>4} {'truth':>5}")
    for kind, (truth_of, label, _, match) in kinds.items():
        sweep = {}
        for thr in sorted({*SWEEP, defaults[kind]}):
            rows = [score_frame([(o.box, o.score) for o in d], truth_of(r), _ignore(r, label), match, thr)
                    for r, d in zip(truth, dets[kind])]
            sweep[thr] = precision_recall(rows)
        for thr, pr in sweep.items():
            mark = " *" if thr == defaults[kind] else ""
            print(f"{kind:<8} {thr:>9.2f} {pr['precision'] if pr['precision'] is not None else '-':>9} "
                  f"{pr['recall'] if pr['recall'] is not None else '-':>7} {pr['tp']:>4} {pr['fp']:>4} "
                  f"{pr['truth']:>5}{mark}")
        report["models"][kind] = {"default_threshold": defaults[kind], "at_default": sweep[defaults[kind]],
                                  "sweep": {str(t): v for t, v in sweep.items()},
                                  "ms_per_frame_median": round(float(np.median(ms[kind])), 1)}
        print()
    print("* the threshold avi runs the model with (upstream's default)")
    right = sum(t == p for t, p in expr_pairs)
    report["expressions"] = {"faces": len(expr_pairs), "right": right,
                             "accuracy": round(right / len(expr_pairs), 3) if expr_pairs else None,
                             "confusion": {f"{t}->{p}": n for (t, p), n in sorted(Counter(expr_pairs).items())}}
    print(f"\nexpressions on labelled face boxes: {right}/{len(expr_pairs)} right "
          f"({report['expressions']['accuracy']}); truth->read: {report['expressions']['confusion']}")
    right_p = sum(t == p for t, p in posture_pairs)
    report["postures"] = {"people": len(posture_pairs), "right": right_p,
                          "accuracy": round(right_p / len(posture_pairs), 3) if posture_pairs else None,
                          "confusion": {f"{t}->{p}": n for (t, p), n in sorted(Counter(posture_pairs).items())}}
    arms = Counter(arms_pairs)
    report["arms_raised"] = {"people": len(arms_pairs), "tp": arms[(True, True)], "fp": arms[(False, True)],
                             "fn": arms[(True, False)], "tn": arms[(False, False)]}
    print(f"postures of matched people (truth not unclear): {right_p}/{len(posture_pairs)} right "
          f"({report['postures']['accuracy']}); truth->read: {report['postures']['confusion']}")
    print(f"arms raised on matched people: {report['arms_raised']}")
    print("ms per frame (median): " + ", ".join(f"{k} {v['ms_per_frame_median']}" for k, v in report["models"].items()))
    if a.json:
        a.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
