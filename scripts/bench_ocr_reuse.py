#!/usr/bin/env python
"""What reusing unchanged OCR windows saves and changes in a ``text_extract`` call's frames (issue 38).

For each ``VIDEO:START:END`` range, the 16 frames a ``text_extract`` call reads there (evenly spaced, as
``perceive_max_frames``), each with the detector's vehicle and screen boxes as regions to read closely (as the tool
does), are read by the cpu profile's OCR twice on the same frames: without window reuse, then with a fresh
:class:`avi.backends.frame_reuse.WindowReuse` (zoom tiles and region crops whose pixels did not change since the last
frame are not read again). Prints per range the seconds of each, their ratio, the windows reused and read, the
frames whose lines (text and score) differ, and the texts only one of the two read.

    .venv/bin/python scripts/bench_ocr_reuse.py [VIDEO:START:END ...] [--videos DIR] [--json]

Default ranges: street, box, lecture and title-card footage of the development benchmark's videos.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VIDEOS = Path.home() / ".cache" / "avi" / "devbench" / "videos"
DEFAULT_RANGES = ("vtest.avi:0:40", "vtest.avi:30:50", "box.mp4:0:20", "cityCC0.mpg:0:20", "iscc_demo.3gp:0:30",
                  "lecture.mp4:100:200", "bikes.mp4:0:15")
FRAMES = 16


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ranges", nargs="*", default=list(DEFAULT_RANGES), help="VIDEO:START:END (seconds)")
    ap.add_argument("--videos", type=Path, default=DEFAULT_VIDEOS, help=f"folder of the videos ({DEFAULT_VIDEOS})")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from avi.backends.factory import Backends
    from avi.backends.frame_reuse import WindowReuse
    from avi.config import Settings
    from avi.offline import enforce_offline_env
    from avi.tools.perceive import text_regions
    from avi.video.decode import probe, sample_frames

    enforce_offline_env()
    jobs = []
    for spec in a.ranges:
        try:
            name, start, end = spec.rsplit(":", 2)
            start_s, end_s = float(start), float(end)
        except ValueError:
            print(f"bench_ocr_reuse: {spec!r} is not VIDEO:START:END", file=sys.stderr)
            return 2
        path = Path(name) if Path(name).is_file() else a.videos / name
        if not path.is_file() or end_s <= start_s:
            print(f"bench_ocr_reuse: {spec}: no such video or an empty range", file=sys.stderr)
            return 2
        jobs.append((spec, path, start_s, end_s))
    backends = Backends(Settings())
    engine = backends._ocr_engine()  # the cpu profile's RapidOcrEngine (its reuse is set per run below)
    detector = backends.detector
    rows = []
    for spec, path, start_s, end_s in jobs:
        frames = list(sample_frames(probe(path), fps=FRAMES / (end_s - start_s), start_s=start_s,
                                    end_s=end_s))[:FRAMES]
        regions = [text_regions(detector.detect_all(f)) for f in frames]
        read, seconds = {}, {}
        for mode in ("read every window", "window reuse"):
            engine.window_reuse = WindowReuse() if mode == "window reuse" else None
            t0 = time.perf_counter()
            read[mode] = [sorted((ln.text, round(ln.score, 2)) for ln in engine.read(f, r))
                          for f, r in zip(frames, regions)]
            seconds[mode] = time.perf_counter() - t0
        reuse = engine.window_reuse
        before, after = read["read every window"], read["window reuse"]
        texts_b = {t for lines in before for t, _ in lines}
        texts_a = {t for lines in after for t, _ in lines}
        rows.append({"range": spec, "frames": len(frames), "seconds_before": round(seconds["read every window"], 2),
                     "seconds_after": round(seconds["window reuse"], 2),
                     "ratio": round(seconds["window reuse"] / seconds["read every window"], 3),
                     "windows_reused": reuse.reused, "windows_read": reuse.computed,
                     "frames_differing": sum(x != y for x, y in zip(before, after)),
                     "texts_only_before": sorted(texts_b - texts_a), "texts_only_after": sorted(texts_a - texts_b)})
    total_b = sum(r["seconds_before"] for r in rows)
    total_a = sum(r["seconds_after"] for r in rows)
    out = {"rows": rows, "seconds_before": round(total_b, 2), "seconds_after": round(total_a, 2),
           "ratio": round(total_a / total_b, 3) if total_b else None}
    if a.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    for r in rows:
        print(f"{r['range']:<22} {r['frames']:>2} frames  {r['seconds_before']:6.1f} s -> {r['seconds_after']:6.1f} s "
              f"(x{r['ratio']:.2f})  windows reused {r['windows_reused']}/{r['windows_reused'] + r['windows_read']}"
              f"  frames differing {r['frames_differing']}  only before {r['texts_only_before']}"
              f"  only after {r['texts_only_after']}")
    print(f"all ranges: {total_b:.1f} s -> {total_a:.1f} s (x{out['ratio']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
