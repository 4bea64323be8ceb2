#!/usr/bin/env python
"""OCR accuracy and cost on rendered frames with known text and on real video frames read by eye.

Rendered part: 1280x720 frames (640x360 for ``lowres``), each with one random sign-like string (upper case
letters and digits, 3-6 characters, sometimes two words) in Pillow's default font at a random position and
colour pair over a plain or noisy background. Conditions:

    plain        text 24/32/48/64/96 px (``--n`` frames; reported per size: the 24 px and 32 px rows are the
                 issue's targets)
    small        text 12/16/20 px in a 1280x720 frame
    blur         text 32 px, then a Gaussian blur of sigma 1.5-2.5 px over the frame
    perspective  text 32-48 px drawn on a patch, the patch warped by a random perspective (corners moved by up
                 to 25 % of its height, rotation up to ~10 degrees)
    lowres       text 12-18 px in a 640x360 frame (low-resolution video)

Real part: ``bench/ocr/real.jsonl`` (text transcribed by eye, see bench/ocr/README.md), frames decoded with
avi's reader from ``--videos``; a row with ``text`` counts as found when its normalised text is inside the
normalised OCR output (letters and digits only), and as exact when the lines centred inside the row's ``region``
(rows with one text item each; the engine still reads the whole frame, a region is where it reads closely) are
that text and nothing else; a row with empty ``text`` (no legible text) counts its false lines
(>= 2 letters/digits).

Engines, run on the same frames one after the other (so machine load hits them alike):

    before   rapidocr 3.10 with its default settings (the engine before issue 15 part 4)
    knobs    RapidOcrEngine(passes=False): ImageNet detector normalisation, box threshold 0.3, polygon box
             scores, detector input long side in [960, 1152] px; one pass
    after    RapidOcrEngine(): knobs + zoom tiles around unread candidates (+ regions where given)
    latin    after, decoding in Latin script only (text_extract for a Latin-script question; issue 36 item 6)

Exact match is normalised (case and spaces ignored); CER is edit distance / length. Seconds per frame are
wall time of ``read`` (p50 / mean).

    .venv/bin/python scripts/bench_ocr.py [--n 200] [--n-cond 40] [--seed 0] [--engines before,knobs,after]
    .venv/bin/python scripts/bench_ocr.py --scan bikes.mp4,box.mp4,vtest.avi [--scan-fps 1]   # non-Latin reads
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from avi.backends import Backends
from avi.backends.boxes import centre_inside
from avi.backends.captioner import normalise_text
from avi.backends.ocr import RapidOcrEngine
from avi.backends.ocr_script import LATIN, is_latin_text
from avi.backends.types import OcrLine
from avi.config import Settings
from avi.offline import enforce_offline_env
from avi.video.decode import Frame, VideoReader, probe

ROOT = Path(__file__).resolve().parent.parent
ALPHABET = string.ascii_uppercase + string.digits


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (characters)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def colours(rng: random.Random) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(background, foreground) RGB pair, dark on light or light on dark."""
    bg = tuple(rng.randrange(0, 90) for _ in range(3))
    fg = tuple(rng.randrange(190, 256) for _ in range(3))
    return (fg, bg) if rng.random() < 0.5 else (bg, fg)


def background(rng: random.Random, size: tuple[int, int], bg: tuple[int, ...], noisy: bool) -> np.ndarray:
    """RGB uint8 (H, W, 3) plain or noisy (+-25 uniform) background; ``size`` is (width, height)."""
    arr = np.empty((size[1], size[0], 3), np.int16)
    arr[:] = bg
    if noisy:
        arr += np.random.default_rng(rng.randrange(1 << 30)).integers(-25, 26, arr.shape, dtype=np.int16)
    return arr.clip(0, 255).astype(np.uint8)


def render(rng: random.Random, text: str, size: int, noisy: bool, frame_size: tuple[int, int] = (1280, 720),
           warp: float = 0.0) -> np.ndarray:
    """One RGB frame (``frame_size`` = (width, height)) with ``text`` drawn at ``size`` px.

    ``warp`` > 0 draws the text on a patch and warps the patch by a random perspective whose corners move by up
    to ``warp`` x the patch height.
    """
    bg, fg = colours(rng)
    img = Image.fromarray(background(rng, frame_size, bg, noisy))
    font = ImageFont.load_default(size=size)
    l, t, r, b = ImageDraw.Draw(img).textbbox((0, 0), text, font=font)
    fw, fh = frame_size
    if warp <= 0:
        w, h = r, b
        x, y = rng.randrange(10, max(11, fw - 10 - w)), rng.randrange(10, max(11, fh - 10 - h))
        ImageDraw.Draw(img).text((x, y), text, fill=fg, font=font)
        return np.asarray(img)
    pad = size // 2
    patch = Image.new("RGB", (r + 2 * pad, b + 2 * pad), bg)
    ImageDraw.Draw(patch).text((pad, pad), text, fill=fg, font=font)
    pw, ph = patch.size
    src = np.float32([[0, 0], [pw, 0], [pw, ph], [0, ph]])
    dst = src + np.float32([[rng.uniform(-warp, warp) * ph for _ in range(2)] for _ in range(4)])
    tilt = rng.uniform(-0.18, 0.18) * pw  # up to ~10 degrees of rotation
    dst[:, 1] += np.float32([0, tilt, tilt, 0])
    dst -= dst.min(axis=0)
    ow, oh = int(dst[:, 0].max()) + 1, int(dst[:, 1].max()) + 1
    m = cv2.getPerspectiveTransform(src, dst)
    warped = cv2.warpPerspective(np.asarray(patch), m, (ow, oh), flags=cv2.INTER_CUBIC, borderValue=bg)
    mask = cv2.warpPerspective(np.full((ph, pw), 255, np.uint8), m, (ow, oh)) > 0
    arr = np.asarray(img).copy()
    x, y = rng.randrange(10, max(11, fw - 10 - ow)), rng.randrange(10, max(11, fh - 10 - oh))
    arr[y:y + oh, x:x + ow][mask] = warped[mask]
    return arr


def make_case(rng: random.Random, condition: str, i: int) -> tuple[str, str, np.ndarray]:
    """(bucket, truth, RGB frame) of one rendered case."""
    words = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 6))) for _ in range(rng.choice([1, 1, 2]))]
    truth = " ".join(words)
    noisy = rng.random() < 0.5
    if condition == "plain":
        size = rng.choice([24, 32, 48, 64, 96])
        return f"plain {size}px", truth, render(rng, truth, size, noisy)
    if condition == "small":
        size = rng.choice([12, 16, 20])
        return f"small {size}px", truth, render(rng, truth, size, noisy)
    if condition == "blur":
        sigma = rng.uniform(1.5, 2.5)
        return "blur 32px s1.5-2.5", truth, cv2.GaussianBlur(render(rng, truth, 32, noisy), (0, 0), sigma)
    if condition == "perspective":
        return "perspective 32-48px", truth, render(rng, truth, rng.choice([32, 40, 48]), noisy, warp=0.25)
    if condition == "lowres":
        return "lowres 640x360 12-18px", truth, render(rng, truth, rng.choice([12, 14, 16, 18]), noisy, (640, 360))
    raise ValueError(condition)


class DefaultRapidOcr:
    """rapidocr 3.10 with its default settings, read as the engine did before issue 15 part 4 (``before``)."""

    name = "rapidocr-defaults"

    def __init__(self, model_paths: dict[str, str]):
        from rapidocr import RapidOCR

        params = {"Global.log_level": "error"}
        params.update({f"{k.capitalize()}.model_path": str(v) for k, v in model_paths.items()})
        self._engine = RapidOCR(params=params)

    def read(self, frame: Frame, regions=None) -> list[OcrLine]:
        """Lines of an RGB frame; ``regions`` is ignored."""
        result = self._engine(cv2.cvtColor(frame.image, cv2.COLOR_RGB2BGR))
        if getattr(result, "boxes", None) is None or getattr(result, "txts", None) is None:
            return []
        lines = []
        for quad, text, score in zip(result.boxes, result.txts, result.scores):
            q = np.asarray(quad, dtype=float).reshape(-1, 2)
            if str(text).strip() and float(score) >= 0.5:
                lines.append(OcrLine(str(text).strip(), float(score),
                                     (q[:, 0].min(), q[:, 1].min(), q[:, 0].max(), q[:, 1].max()), frame.t_s))
        return sorted(lines, key=lambda ln: (round(ln.box[1] / 20), ln.box[0]))


class LatinReads:
    """The avi engine reading in Latin script only, as text_extract does for a Latin-script question."""

    def __init__(self, engine):
        self.engine = engine

    def read(self, frame: Frame, regions=None) -> list[OcrLine]:
        return self.engine.read(frame, regions=regions, script=LATIN)


def engines(names: list[str]) -> dict:
    """The engines to compare, by name (see the module docstring)."""
    ocr = Backends(Settings()).ocr
    base = getattr(ocr, "engine", ocr)  # under frame reuse's ReusingOcr
    if not isinstance(base, RapidOcrEngine):
        return {ocr.name: ocr}
    paths = {"det": base._engine.cfg.Det.model_path, "rec": base._engine.cfg.Rec.model_path,
             "cls": base._engine.cfg.Cls.model_path}
    paths = {k: v for k, v in paths.items() if v}
    make = {"before": lambda: DefaultRapidOcr(paths), "knobs": lambda: RapidOcrEngine(paths, passes=False),
            "after": lambda: ocr, "latin": lambda: LatinReads(ocr)}
    return {name: make[name]() for name in names}


def squash(text: str) -> str:
    """Normalised text without spaces (the comparison key)."""
    return normalise_text(text).replace(" ", "")


def letters(text: str) -> str:
    """Lower-case letters and digits only: the real rows' comparison key (a separator dot between words, read as
    '-' or '.', or dropped, is not the text)."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


def run_rendered(eng: dict, args) -> tuple[dict, dict]:
    """Per bucket and engine: list of (exact, cer); per engine: seconds per frame."""
    rng = random.Random(args.seed)
    res: dict = {}
    secs: dict = {name: [] for name in eng}
    plan = [("plain", args.n)] + [(c, args.n_cond) for c in ("small", "blur", "perspective", "lowres")]
    for condition, count in plan:
        for i in range(count):
            bucket, truth, img = make_case(rng, condition, i)
            frame = Frame(float(i), img)
            for name, e in eng.items():
                t0 = time.perf_counter()
                lines = e.read(frame)
                secs[name].append(time.perf_counter() - t0)
                got, want = squash(" ".join(ln.text for ln in lines)), squash(truth)
                cer = min(1.0, edit_distance(got, want) / max(1, len(want)))
                res.setdefault(bucket, {}).setdefault(name, []).append((got == want, cer))
    return res, secs


def run_real(eng: dict, truth_path: Path, videos: Path) -> tuple[dict, dict]:
    """Per real row and engine: (found, output text, exact); per engine: seconds per frame. Rows with missing videos
    are skipped."""
    rows = [json.loads(line) for line in truth_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict = {}
    secs: dict = {name: [] for name in eng}
    readers: dict = {}
    for row in rows:
        path = videos / row["video"]
        if not path.exists():
            continue
        if row["video"] not in readers:
            readers[row["video"]] = VideoReader(probe(path))
        frame = readers[row["video"]].frames_at([row["t_s"]])[0]
        regions = [row["region"]] if row.get("region") else None
        key = f"{row['video']}@{row['t_s']}" + (f" region {row['region']}" if regions else "")
        for name, e in eng.items():
            t0 = time.perf_counter()
            lines = e.read(frame, regions=regions)
            secs[name].append(time.perf_counter() - t0)
            text = " ".join(ln.text for ln in lines)
            if row["text"]:
                ok = letters(row["text"]) in letters(text)
            else:
                ok = not any(sum(ch.isalnum() for ch in ln.text) >= 2 for ln in lines)
            inside = " ".join(ln.text for ln in lines if regions and centre_inside(ln.box, regions[0]))
            exact = bool(row["text"]) and regions is not None and letters(row["text"]) == letters(inside)
            out.setdefault(key, {"truth": row["text"], "region": regions is not None})[name] = (ok, text, exact)
    return out, secs


def run_scan(ocr, videos: Path, names: list[str], fps: float) -> None:
    """Every frame at ``fps`` of each video read in every script and in Latin script: per video, the frames where
    the every-script read has a non-Latin line (what a Latin-script question would have been shown), and what
    the Latin read gives there in their place (its lines that the every-script read did not have). No truth."""
    print(f"# Non-Latin reads on real footage ({fps:g} frames a second; every script vs Latin script)\n")
    print("| video | frames | with a non-Latin line | non-Latin lines (score) | Latin read there: lines in their place |")
    print("|---|---|---|---|---|")
    for name in names:
        info = probe(videos / name)
        times = [i / fps for i in range(int(info.duration_s * fps))]
        hit = 0
        glyphs, instead = [], []
        for frame in VideoReader(info, 1280).frames_at(times):
            every = ocr.read(frame)
            if all(is_latin_text(ln.text) for ln in every):
                continue
            hit += 1
            glyphs += [f"{ln.text} {ln.score:.2f}" for ln in every if not is_latin_text(ln.text)]
            had = {ln.text for ln in every}
            instead += [f"{ln.text} {ln.score:.2f}" for ln in ocr.read(frame, script=LATIN) if ln.text not in had]
        print(f"| {name} | {len(times)} | {hit} | {len(glyphs)}: {'; '.join(glyphs[:8])} | {len(instead)}"
              + (f": {'; '.join(instead[:8])}" if instead else "") + " |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200, help="plain frames (sizes 24-96 px)")
    p.add_argument("--n-cond", type=int, default=40, help="frames per other condition")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--engines", default="before,knobs,after")
    p.add_argument("--truth", type=Path, default=ROOT / "bench" / "ocr" / "real.jsonl")
    p.add_argument("--videos", type=Path, default=Path.home() / ".cache" / "avi" / "devbench" / "videos")
    p.add_argument("--no-real", action="store_true")
    p.add_argument("--scan", default="", help="comma-separated videos under --videos: count the frames read with "
                   "a non-Latin line, and what Latin reads give there (runs nothing else)")
    p.add_argument("--scan-fps", type=float, default=1.0)
    args = p.parse_args()
    enforce_offline_env()
    if args.scan:
        run_scan(Backends(Settings()).ocr, args.videos, args.scan.split(","), args.scan_fps)
        return 0
    eng = engines(args.engines.split(","))
    names = list(eng)
    if args.n or args.n_cond:  # --n 0 --n-cond 0: the real frames only
        res, secs = run_rendered(eng, args)
        print(f"# OCR accuracy, rendered frames (seed {args.seed}): exact match (mean CER)\n")
        print("| bucket | n | " + " | ".join(names) + " |")
        print("|---|---|" + "---|" * len(names))
        for bucket, per in res.items():
            n = len(per[names[0]])
            cells = [f"{sum(e for e, _ in per[k]) / n:.2f} ({statistics.mean(c for _, c in per[k]):.2f})" for k in names]
            print(f"| {bucket} | {n} | " + " | ".join(cells) + " |")
        print("| s/frame p50 / mean | | " + " | ".join(
            f"{np.percentile(secs[k], 50):.3f} / {statistics.mean(secs[k]):.3f}" for k in names) + " |")
    if not args.no_real and args.truth.exists():
        real, rsecs = run_real(eng, args.truth, args.videos)
        print("\n# Real frames (bench/ocr/real.jsonl): found / no false text; OCR output\n")
        print("| frame | truth | " + " | ".join(names) + " |")
        print("|---|---|" + "---|" * len(names))
        for key, row in real.items():
            cells = [f"{'ok' if row[k][0] else 'MISS'}: {row[k][1][:40]!r}" for k in names]
            print(f"| {key} | {row['truth'] or '(none)'} | " + " | ".join(cells) + " |")
        print("| found rate | | " + " | ".join(
            f"{sum(r[k][0] for r in real.values()) / max(1, len(real)):.2f}" for k in names) + " |")
        texts = [r for r in real.values() if r["truth"]]
        print("| found rate, rows with text | | " + " | ".join(
            f"{sum(r[k][0] for r in texts) / max(1, len(texts)):.2f} of {len(texts)}" for k in names) + " |")
        boxed = [r for r in texts if r["region"]]
        print("| exact match, rows with a region | | " + " | ".join(
            f"{sum(r[k][2] for r in boxed) / max(1, len(boxed)):.2f} of {len(boxed)}" for k in names) + " |")
        print("| s/frame p50 / mean | | " + " | ".join(
            f"{np.percentile(rsecs[k], 50):.3f} / {statistics.mean(rsecs[k]):.3f}" for k in names if rsecs[k]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
