#!/usr/bin/env python
"""Object tracks of the index on real footage vs person spans labelled by eye (issue 36, item 4).

``bench/tracks/vtest_people.jsonl`` holds the spans of people in vtest.avi (first and last second in view, one
record per continuous appearance, a ``probe``: a time and a pixel point on that person in the 768x576 frame,
and a ``how`` line). This script opens (building when needed) the cpu index of each labelled video, and for every
label takes the person tracks (``tracks.json``, :mod:`avi.index.tracks`) that have a box within half a second of
the probe time holding the probe point (a 20-pixel margin); the one whose box centre is nearest the point is the
label's track. Prints per label the track, its span, entry and exit and the span IoU, then the mean
span IoU and how many labels reach IoU 0.6 (issue 36's bar).

    .venv/bin/python scripts/bench_tracks.py [--labels bench/tracks/vtest_people.jsonl] [--json out.json]

Builds the index with the machine's cpu settings (about 1-2 minutes for vtest.avi on 2 cores when it is new).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIDEO_DIRS = (Path("/usr/share/doc/opencv-doc/examples/data"), Path.home() / ".cache/avi/devbench/videos")


def span_iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Temporal IoU of two closed spans in seconds (0 when they do not meet)."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union > 0 else float(a == b)


def probe_distance(track: dict, t_s: float, xy: list[float], scale: tuple[float, float],
                   margin: float = 20.0) -> float | None:
    """Pixel distance from the point ``xy`` (label pixels, scaled to the analysed frame by ``scale``) to the centre
    of the nearest box of ``track`` within 0.5 s of ``t_s`` that contains the point with ``margin`` pixels to spare
    (a person walks about 20 pixels in half a second here); None when no box does."""
    x, y = xy[0] * scale[0], xy[1] * scale[1]
    found = [((x - (x1 + x2) / 2) ** 2 + (y - (y1 + y2) / 2) ** 2) ** 0.5
             for t, x1, y1, x2, y2 in track["boxes"]
             if abs(t - t_s) <= 0.5 and x1 - margin <= x <= x2 + margin and y1 - margin <= y <= y2 + margin]
    return min(found, default=None)


def person_of(label_id: str) -> str:
    """The person a label is about: its id without the appearance number (``red-jacket-2`` -> ``red-jacket``)."""
    return re.sub(r"-\d+$", "", label_id)


def subject_links(rows: list[dict]) -> dict:
    """Pairwise linking of the labelled appearances by the tracks' person subjects: over every pair of labels of
    one video whose probes found a track, how many pairs of the same person share a subject (recall) and how many
    linked pairs are of one person (precision); None where a ratio has no pairs."""
    found = [r for r in rows if r["subject"]]
    same = diff = linked_same = linked_diff = 0
    for i, a in enumerate(found):
        for b in found[i + 1:]:
            if a["video"] != b["video"] or a["track"] == b["track"]:
                continue
            one_person = person_of(a["id"]) == person_of(b["id"])
            linked = a["subject"] == b["subject"]
            same += one_person
            diff += not one_person
            linked_same += one_person and linked
            linked_diff += linked and not one_person
    linked = linked_same + linked_diff
    return {"same": same, "different": diff, "linked_same": linked_same, "linked_different": linked_diff,
            "precision": round(linked_same / linked, 3) if linked else None,
            "recall": round(linked_same / same, 3) if same else None}


def find_video(name: str) -> Path:
    for d in VIDEO_DIRS:
        if (d / name).exists():
            return d / name
    raise SystemExit(f"bench_tracks: {name} not found in {', '.join(map(str, VIDEO_DIRS))} (scripts/setup.sh "
                     "installs vtest.avi with opencv-doc)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", type=Path, default=ROOT / "bench/tracks/vtest_people.jsonl")
    ap.add_argument("--json", type=Path, help="write the per-label results here")
    args = ap.parse_args(argv)

    from avi.backends import Backends
    from avi.config import Settings
    from avi.index.build import ensure_index
    from avi.offline import enforce_offline_env

    enforce_offline_env()
    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    settings = Settings()
    backends = Backends(settings)
    rows = []
    subjects: dict[str, int] = {}
    try:
        for video in sorted({lab["video"] for lab in labels}):
            index = ensure_index(find_video(video), settings, backends, progress=True, stages="search")
            tracks = [t for t in index.tracks if t["label"] == "person"]
            m = index.manifest["video"]
            size = next((c.data.get("frame_size") for c in index.captions if c.data.get("frame_size")), None)
            scale = (size[0] / m["width"], size[1] / m["height"]) if size else (1.0, 1.0)
            subjects[video] = len({t.get("subject") for t in tracks if t.get("subject")})
            print(f"{video}: {len(index.tracks)} tracks, {len(tracks)} of people in {subjects[video]} subjects "
                  f"(median {sorted(t['last_s'] - t['first_s'] for t in tracks)[len(tracks) // 2]:.1f} s)"
                  if tracks else f"{video}: no person tracks", file=sys.stderr)
            for lab in (x for x in labels if x["video"] == video):
                span = (lab["first_s"], lab["last_s"])
                near = [(d, t) for t in tracks
                        if (d := probe_distance(t, lab["probe"]["t_s"], lab["probe"]["xy"], scale)) is not None]
                best = min(near, key=lambda dt: dt[0])[1] if near else None
                iou = span_iou(span, (best["first_s"], best["last_s"])) if best else 0.0
                rows.append({"id": lab["id"], "video": video, "label_span": list(span),
                             "track": best["id"] if best else None,
                             "subject": best.get("subject") if best else None,
                             "track_span": [best["first_s"], best["last_s"]] if best else None,
                             "entry": best["entry"] if best else None, "exit": best["exit"] if best else None,
                             "span_iou": round(iou, 3), "tracks_at_probe": len(near)})
    finally:
        backends.close()
    print(f"{'label':22} {'label span':>13} {'track':>6} {'track span':>13} {'IoU':>5}  entry / exit")
    for r in rows:
        ts = f"{r['track_span'][0]:.1f}-{r['track_span'][1]:.1f}" if r["track_span"] else "-"
        print(f"{r['id']:22} {r['label_span'][0]:5.1f}-{r['label_span'][1]:<6.1f} {r['track'] or '-':>6} {ts:>13} "
              f"{r['span_iou']:5.2f}  {r['entry']} / {r['exit']}")
    ious = [r["span_iou"] for r in rows]
    print(f"mean span IoU {sum(ious) / len(ious):.3f}; labels at IoU >= 0.6: {sum(i >= 0.6 for i in ious)} of "
          f"{len(ious)}")
    links = subject_links(rows)
    print(f"subject links between labelled appearances: {links['linked_same']} of {links['same']} same-person pairs "
          f"linked, {links['linked_different']} of {links['different']} different-person pairs linked "
          f"(precision {links['precision']}, recall {links['recall']})")
    if args.json:
        args.json.write_text(json.dumps({"labels": rows, "subject_links": links, "person_subjects": subjects},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
