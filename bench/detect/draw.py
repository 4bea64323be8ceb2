"""Re-extract the labelled frames of bench/detect/frames.jsonl and draw their boxes for review.

    .venv/bin/python bench/detect/draw.py --out /tmp/x                  # every labelled frame, boxes drawn
    .venv/bin/python bench/detect/draw.py --out /tmp/x --only vtest.avi@12.0 --grid 40 --scale 2
    .venv/bin/python bench/detect/draw.py --out /tmp/x --times bikes.mp4 0.2 0.6   # unlabelled frames (labelling)

Frames come from avi's own decoder (nearest frame by pts, native size), so a record's ``t_s`` is the exact
time of the decoded frame. No detector is involved anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from PIL import Image, ImageDraw

from avi.video.decode import VideoReader, probe

HERE = Path(__file__).resolve().parent
VIDEOS = Path(os.environ.get("AVI_DEVBENCH_VIDEOS", Path.home() / ".cache/avi/devbench/videos"))
COLORS = {"person": "red", "bicycle": "lime", "car": "cyan", "motorcycle": "magenta", "truck": "yellow",
          "bus": "orange", "cup": "blue", "cell phone": "white", "chair": "pink"}


def frame_image(video: str, t: float) -> tuple[Image.Image, float]:
    """The decoded frame nearest to ``t`` at native size, and its exact time."""
    info = probe(VIDEOS / video)
    fr = VideoReader(info, max_side=100000).frames_at([t])[0]
    return Image.fromarray(fr.image), fr.t_s


def render(img: Image.Image, boxes, scale: float, grid: int, ignore_regions=()) -> Image.Image:
    w, h = img.size
    out = img.resize((int(w * scale), int(h * scale)), Image.LANCZOS) if scale != 1 else img.copy()
    d = ImageDraw.Draw(out)
    if grid:
        for x in range(0, w, grid):
            d.line([(x * scale, 0), (x * scale, h * scale)], fill=(255, 255, 0) if x % (grid * 5) else (255, 0, 255))
            d.text((x * scale + 2, 2), str(x), fill="yellow")
            d.text((x * scale + 2, h * scale - 12), str(x), fill="yellow")
        for y in range(0, h, grid):
            d.line([(0, y * scale), (w * scale, y * scale)], fill=(255, 255, 0) if y % (grid * 5) else (255, 0, 255))
            d.text((2, y * scale + 2), str(y), fill="yellow")
            d.text((w * scale - 30, y * scale + 2), str(y), fill="yellow")
    for g in ignore_regions or []:
        x1, y1, x2, y2 = (v * scale for v in g["xyxy"])
        d.rectangle([x1 + 1, y1 + 1, x2 - 1, y2 - 1], outline=(128, 128, 128), width=1)
        d.text((x1 + 3, y2 - 12), "ignore " + "/".join(g["labels"]), fill=(160, 160, 160))
    for i, b in enumerate(boxes or []):
        x1, y1, x2, y2 = (v * scale for v in b["xyxy"])
        c = COLORS.get(b["label"], "white")
        d.rectangle([x1, y1, x2, y2], outline=c, width=1 if scale < 2 else 2)
        d.text((x1 + 2, y1 + 1), f"{i}{b['label'][:3]}", fill=c)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the PNGs")
    ap.add_argument("--labels", default=str(HERE / "frames.jsonl"))
    ap.add_argument("--only", nargs="*", help="VIDEO or VIDEO@T filters")
    ap.add_argument("--times", nargs="+", help="VIDEO T [T...]: render unlabelled frames instead")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--grid", type=int, default=0, help="grid step in frame pixels (0 = none)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.times:
        recs = [{"video": a.times[0], "t_s": float(t), "boxes": None} for t in a.times[1:]]
    else:
        recs = [json.loads(line) for line in open(a.labels) if line.strip()]
    for r in recs:
        key = f"{r['video']}@{r['t_s']}"
        if a.only and not any(f == r["video"] or f == key for f in a.only):
            continue
        img, t = frame_image(r["video"], r["t_s"])
        if "width" in r and img.size != (r["width"], r["height"]):
            print(f"warning: {key} decodes at {img.size}, record says {r['width']}x{r['height']}")
        name = f"{Path(r['video']).stem}_{t:07.3f}.png"
        render(img, r.get("boxes"), a.scale, a.grid, r.get("ignore_regions")).save(out / name)
        print(out / name, f"t={t}", img.size, len(r.get("boxes") or []), "boxes")


if __name__ == "__main__":
    main()
