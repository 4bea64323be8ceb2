#!/usr/bin/env python
"""OCR accuracy of the configured OCR backend on rendered frames with known text.

Renders ``--n`` 1280x720 frames, each with one random sign-like string (upper
case letters and digits, 3-10 characters, sometimes two words) at a random
size (24-96 px), position and colour pair over a plain or noisy background,
with Pillow's default font. Reads each frame with the backend ``text_extract``
uses (rapidocr PP-OCRv6 in the cpu profile) and prints the exact-match rate
(normalised: case and spaces ignored), the character error rate (edit distance
/ length) and seconds per frame.

    .venv/bin/python scripts/bench_ocr.py [--n 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import time

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from avi.backends import Backends
from avi.backends.captioner import normalise_text
from avi.config import Settings
from avi.offline import enforce_offline_env
from avi.video.decode import Frame


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (characters)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def render(rng: random.Random, text: str, size: int, noisy: bool) -> np.ndarray:
    """One 1280x720 RGB frame with ``text`` drawn at ``size`` px."""
    bg = tuple(rng.randrange(0, 90) for _ in range(3))
    fg = tuple(rng.randrange(190, 256) for _ in range(3))
    if rng.random() < 0.5:
        bg, fg = fg, bg
    img = Image.new("RGB", (1280, 720), bg)
    if noisy:
        arr = np.asarray(img).astype(np.int16)
        arr += np.random.default_rng(rng.randrange(1 << 30)).integers(-25, 26, arr.shape, dtype=np.int16)
        img = Image.fromarray(arr.clip(0, 255).astype(np.uint8))
    font = ImageFont.load_default(size=size)
    draw = ImageDraw.Draw(img)
    w, h = draw.textbbox((0, 0), text, font=font)[2:]
    x, y = rng.randrange(10, max(11, 1270 - w)), rng.randrange(10, max(11, 710 - h))
    draw.text((x, y), text, fill=fg, font=font)
    return np.asarray(img)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    enforce_offline_env()
    rng = random.Random(args.seed)
    ocr = Backends(Settings()).ocr
    alphabet = string.ascii_uppercase + string.digits
    exact, cers, secs, by_size = 0, [], [], {}
    for i in range(args.n):
        words = [''.join(rng.choice(alphabet) for _ in range(rng.randint(3, 6))) for _ in range(rng.choice([1, 1, 2]))]
        truth = " ".join(words)
        size = rng.choice([24, 32, 48, 64, 96])
        frame = Frame(float(i), render(rng, truth, size, noisy=rng.random() < 0.5))
        t0 = time.perf_counter()
        lines = ocr.read(frame)
        secs.append(time.perf_counter() - t0)
        got = normalise_text(" ".join(line.text for line in lines)).replace(" ", "")
        want = normalise_text(truth).replace(" ", "")
        ok = got == want
        exact += ok
        cers.append(min(1.0, edit_distance(got, want) / max(1, len(want))))
        by_size.setdefault(size, []).append(ok)
    print(f"# OCR accuracy, {ocr.name}, {args.n} rendered frames (seed {args.seed})\n")
    print(f"exact match {exact / args.n:.3f}; mean CER {statistics.mean(cers):.3f}; "
          f"p50 {np.percentile(secs, 50):.3f} s/frame, p95 {np.percentile(secs, 95):.3f} s/frame")
    print("by text height: " + ", ".join(f"{s}px {sum(v) / len(v):.2f} (n={len(v)})" for s, v in sorted(by_size.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
