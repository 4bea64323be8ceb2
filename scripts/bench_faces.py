#!/usr/bin/env python3
"""Face verification on the faces labelled in bench/people: how well a face descriptor tells one person from
another, which is what links person tracks within a video (avi.index.person_subjects) and people across videos
(avi.videos.people). Prints a table; no truth is tuned here.

Faces are cut from the labelled boxes (not detected: this measures the descriptor alone), at native resolution.
Pairs, each scored by the cosine of the two L2-normalised descriptors:

* **same, clean**: two frames of a video that shows one person throughout (:data:`ONE_PERSON`);
* **same, degraded**: a clean face against another frame of the same person, halved, blurred (sigma 1 px) and
  JPEG-compressed at quality 25, then scaled back (a low-quality copy of the footage);
* **same, distorted copy**: carphone_pristine.mp4's labelled faces against carphone_distorted.mp4 (the same
  recording, blurred and blocky; sizes and times agree) at the other labelled times;
* **different**: clean faces of two different videos (both copies of carphone count as one video).

For each model: the mean of each kind of same-person pair, the different pairs' mean, 95th percentile and
maximum, the ROC AUC of clean and of degraded same-person pairs against the different ones, and at the linking
bound (``--bound``, avi's FACE_SAME) the share of same-person pairs linked and of different-person pairs linked.

Usage::

    .venv/bin/python scripts/bench_faces.py [--videos DIR] [--model NAME=ONNX:SIZE:INPUT ...]

``--model`` adds another descriptor graph (NHWC input): INPUT is ``0-255`` (RGB as is), ``0-1`` (divided by 255)
or ``centred`` ((x - 127.5) / 128); avi's FaceRes (``faceres-descriptor``, 224, 0-255) is always measured.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: Videos of bench/people whose labelled faces are all one person's.
ONE_PERSON = ("carphone_pristine.mp4", "WolfgangLanger_Pexels.mp4", "jwpIntro.mp4")
PREP = {"0-255": lambda x: x, "0-1": lambda x: x / 255.0, "centred": lambda x: (x - 127.5) / 128.0}


def degrade(image: np.ndarray) -> np.ndarray:
    """A low-quality copy of an RGB frame: halved, blurred (sigma 1 px), JPEG at quality 25, scaled back."""
    import cv2

    h, w = image.shape[:2]
    small = cv2.GaussianBlur(cv2.resize(image, (w // 2, h // 2), interpolation=cv2.INTER_AREA), (0, 0), 1.0)
    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(small[:, :, ::-1]), [cv2.IMWRITE_JPEG_QUALITY, 25])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    back = cv2.imdecode(buf, cv2.IMREAD_COLOR)[:, :, ::-1]
    return np.ascontiguousarray(cv2.resize(back, (w, h), interpolation=cv2.INTER_LINEAR))


def load_faces(videos: Path, labels: Path) -> list[dict]:
    """The labelled faces (``video``, ``t``, ``person`` or None, ``kind``, ``image``, ``box``) of every kind."""
    from avi.video.decode import VideoReader, probe

    readers: dict[str, VideoReader] = {}

    def frame(video: str, t: float) -> np.ndarray:
        reader = readers.setdefault(video, VideoReader(probe(videos / video), max_side=8192))
        return reader.frames_at([t])[0].image

    rows = [json.loads(line) for line in labels.read_text().splitlines() if line.strip()]
    faces = []
    for rec in rows:
        for f in rec["faces"]:
            person = rec["video"] if rec["video"] in ONE_PERSON and len(rec["faces"]) == 1 else None
            faces.append({"video": rec["video"], "t": rec["t_s"], "person": person, "kind": "clean",
                          "image": frame(rec["video"], rec["t_s"]), "box": f["xyxy"]})
    for f in [f for f in faces if f["person"]]:
        faces.append({**f, "kind": "degraded", "image": degrade(f["image"])})
    if (videos / "carphone_distorted.mp4").exists():
        for f in [f for f in faces if f["video"] == "carphone_pristine.mp4" and f["kind"] == "clean"]:
            faces.append({**f, "video": "carphone_distorted.mp4", "kind": "distorted",
                          "image": frame("carphone_distorted.mp4", f["t"])})
    return faces


def pair_scores(faces: list[dict], vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Cosines of the pairs of each kind (module docstring); ``vectors`` are the faces' descriptors, in order."""
    v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sim = v @ v.T
    out: dict[str, list[float]] = {"same_clean": [], "same_degraded": [], "same_distorted": [], "different": []}
    for a, b in itertools.combinations(range(len(faces)), 2):
        fa, fb = faces[a], faces[b]
        kinds = {fa["kind"], fb["kind"]}
        if fa["person"] and fa["person"] == fb["person"]:
            if fa["t"] == fb["t"]:
                continue  # the same frame twice
            key = {frozenset({"clean"}): "same_clean", frozenset({"clean", "degraded"}): "same_degraded",
                   frozenset({"clean", "distorted"}): "same_distorted"}.get(frozenset(kinds))
            if key:
                out[key].append(sim[a, b])
        elif kinds == {"clean"} and fa["video"] != fb["video"]:
            out["different"].append(sim[a, b])
    return {k: np.array(x) for k, x in out.items()}


def auc(same: np.ndarray, different: np.ndarray) -> float:
    """ROC AUC: the chance that a same-person pair scores above a different-person pair (ties count half)."""
    if not len(same) or not len(different):
        return float("nan")
    return float((same[:, None] > different[None, :]).mean() + 0.5 * (same[:, None] == different[None, :]).mean())


def describer_fn(spec: str):
    """``NAME=ONNX:SIZE:INPUT`` -> (name, faces -> (N, D) descriptors) with avi's face crop (the box enlarged 1.4
    times and squared, :func:`avi.backends.people._common.face_crops`)."""
    import onnxruntime as ort

    from avi.backends.people._common import face_crops

    name, rest = spec.split("=", 1)
    path, size, prep = rest.rsplit(":", 2)
    if prep not in PREP:
        raise SystemExit(f"bench_faces: input {prep!r} is not one of {', '.join(PREP)}")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inp, out = session.get_inputs()[0].name, session.get_outputs()[0].name

    def run(faces):
        return np.stack([session.run([out], {inp: PREP[prep](face_crops(f["image"], [f["box"]], int(size), 1.4))})
                         [0][0] for f in faces]).astype(np.float64)
    return name, run


def main(argv: list[str] | None = None) -> int:
    from avi.backends.people import FaceDescriber
    from avi.config import Settings
    from avi.index.person_subjects import FACE_SAME
    from avi.weights import resolve

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=Path, default=Path.home() / ".cache/avi/devbench/videos")
    ap.add_argument("--labels", type=Path, default=REPO / "bench/people/frames.jsonl")
    ap.add_argument("--model", action="append", default=[], help="NAME=ONNX:SIZE:INPUT, another descriptor")
    ap.add_argument("--bound", type=float, default=FACE_SAME, help="the linking bound (default avi's FACE_SAME)")
    a = ap.parse_args(argv)
    if not a.labels.is_file() or not a.videos.is_dir():
        print(f"bench_faces: need {a.labels} and the sample videos in {a.videos} (bench/make_videos.py)",
              file=sys.stderr)
        return 2
    s = Settings()
    describer = FaceDescriber(resolve("faceres-descriptor", s.models_dir, s.weights_lock))
    models = [("faceres-descriptor (avi)",
               lambda faces: np.stack([describer.describe(f["image"], [f["box"]])[0].vector for f in faces]))]
    models += [describer_fn(spec) for spec in a.model]
    faces = load_faces(a.videos, a.labels)
    kinds = [f["kind"] for f in faces]
    one = sum(bool(f["person"]) for f in faces if f["kind"] == "clean")
    print(f"{kinds.count('clean')} labelled faces ({one} of one person in {len(ONE_PERSON)} videos), "
          f"{kinds.count('degraded')} degraded, {kinds.count('distorted')} from the distorted copy; "
          f"linking bound {a.bound:g}")
    head = ("model", "same clean", "same degraded", "same distorted", "diff mean", "diff p95", "diff max",
            "AUC clean", "AUC degraded", f"same clean >= {a.bound:g}", f"diff >= {a.bound:g}")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for name, run in models:
        sc = pair_scores(faces, np.asarray(run(faces), np.float64))
        d = sc["different"]
        cells = [name] + [f"{sc[k].mean():.2f}" if len(sc[k]) else "-" for k in ("same_clean", "same_degraded",
                                                                                 "same_distorted")]
        cells += [f"{d.mean():.2f}", f"{np.percentile(d, 95):.2f}", f"{d.max():.2f}",
                  f"{auc(sc['same_clean'], d):.3f}", f"{auc(sc['same_degraded'], d):.3f}",
                  f"{(sc['same_clean'] >= a.bound).mean():.2f} of {len(sc['same_clean'])}",
                  f"{(d >= a.bound).mean():.2f} of {len(d)}"]
        print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
