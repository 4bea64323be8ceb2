"""Calibrate the caption-similarity threshold of an embedder on labelled caption pairs (issue 19, item 5).

The pairs (``bench/thresholds/caption_pairs.jsonl``) are two clip captions of the same real index, labelled
"same event" (both clips inside one event: one slide of the lecture, one screen of the match broadcast) or
"different event". The events are the ranges of clip indices in :data:`EVENTS`, read off the captions' on-screen
text by hand (``--make-pairs`` draws the pairs from them, seed 19, from the indexes under ``--index-root``,
which it only reads).

For each pair the script embeds both captions with the embedder of the settings (the cpu profile's
all-MiniLM-L6-v2 unless ``AVI_EMBEDDER_*`` says otherwise) and prints, for every candidate threshold (the
midpoints between consecutive sorted similarities), the accuracy of "same event iff cosine >= threshold"; the
best one (ties: the midpoint of the best run) and the accuracy of the thresholds in use. The result for
all-MiniLM-L6-v2 is recorded in ``avi/config_embedders.py`` (``EMBEDDER_SETTINGS``).

    nice -n 19 .venv/bin/python scripts/calibrate_thresholds.py [--pairs F] [--json]
    nice -n 19 .venv/bin/python scripts/calibrate_thresholds.py --make-pairs --index-root ~/.cache/avi/indexes
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAIRS = ROOT / "bench" / "thresholds" / "caption_pairs.jsonl"

INDEXES = {"lecture.mp4": "b290bbb7fda2485c-a6f058aba11e", "mixed.mp4": "6c1bce3aecbf8b57-a6f058aba11e"}
"""The devbench videos' cpu-profile indexes the captions were read from (video -> index directory name)."""

EVENTS = {
    ("lecture.mp4", "title slide LIGHTHOUSES"): (1, 8), ("lecture.mp4", "PHAROS OF ALEXANDRIA slide"): (9, 19),
    ("lecture.mp4", "THE FRESNEL LENS slide"): (26, 40), ("lecture.mp4", "KEEPERS slide"): (41, 53),
    ("lecture.mp4", "AUTOMATION slide"): (54, 67), ("lecture.mp4", "FAMOUS LIGHTHOUSES slide"): (72, 90),
    ("lecture.mp4", "LIGHT CHARACTERISTICS slide"): (91, 107), ("lecture.mp4", "QUESTIONS? slide"): (108, 119),
    ("mixed.mp4", "MATCH DAY opening"): (0, 5), ("mixed.mp4", "first-half play at 0-0"): (9, 14),
    ("mixed.mp4", "GO RIVERS GO advert"): (30, 35), ("mixed.mp4", "HALF TIME screen"): (60, 65),
    ("mixed.mp4", "FULL TIME screen"): (120, 125),
}
"""Events (video, name) -> inclusive clip index range, labelled from the captions' on-screen text."""


def make_pairs(index_root: Path, out: Path, n_each: int = 26, seed: int = 19) -> int:
    """Draw ``n_each`` same-event and ``n_each`` different-event pairs (same video) and write them as JSONL."""
    caps = {}
    for video, name in INDEXES.items():
        lines = (index_root / name / "captions.jsonl").read_text().splitlines()
        caps[video] = {c["clip_index"]: c["text"] for c in map(json.loads, filter(None, lines))}
    rng = random.Random(seed)
    events = list(EVENTS)
    pairs = []
    while sum(a == b for a, b, _, _ in pairs) < n_each:
        e = events[len(pairs) % len(events)] if len(pairs) < len(events) else rng.choice(events)
        lo, hi = EVENTS[e]
        i, j = sorted(rng.sample(range(lo, hi + 1), 2))
        pairs.append((e, e, i, j))
    for e1, e2 in zip(events, events[1:]):  # neighbouring events first: the hard negatives
        if e1[0] == e2[0]:
            pairs.append((e1, e2, rng.randint(*EVENTS[e1]), rng.randint(*EVENTS[e2])))
    while sum(a != b for a, b, _, _ in pairs) < n_each:
        e1, e2 = rng.sample(events, 2)
        if e1[0] == e2[0]:
            pairs.append((e1, e2, rng.randint(*EVENTS[e1]), rng.randint(*EVENTS[e2])))
    with out.open("w") as f:
        for e1, e2, i, j in pairs:
            f.write(json.dumps({"video": e1[0], "index": INDEXES[e1[0]], "clip_a": i, "clip_b": j, "event_a": e1[1],
                                "event_b": e2[1], "same_event": e1 == e2, "text_a": caps[e1[0]][i],
                                "text_b": caps[e1[0]][j]}, ensure_ascii=False) + "\n")
    return len(pairs)


def calibrate(sims: np.ndarray, labels: np.ndarray) -> dict:
    """Best threshold for "same iff sim >= t" over the midpoints of the sorted similarities.

    Returns:
        ``{threshold, accuracy, range: [lo, hi]}``: ``threshold`` is the middle of the widest run of
        thresholds reaching the best accuracy, ``range`` that run's bounds.
    """
    s = np.sort(np.unique(sims))
    cands = np.concatenate([[s[0] - 1e-3], (s[1:] + s[:-1]) / 2, [s[-1] + 1e-3]])
    accs = np.array([np.mean((sims >= t) == labels) for t in cands])
    best = accs.max()
    idx = np.flatnonzero(accs == best)
    runs, start = [], idx[0]
    for a, b in zip(idx, idx[1:]):
        if b != a + 1:
            runs.append((start, a))
            start = b
    runs.append((start, idx[-1]))
    lo, hi = max(runs, key=lambda r: cands[r[1]] - cands[r[0]])
    return {"threshold": round(float((cands[lo] + cands[hi]) / 2), 3), "accuracy": round(float(best), 4),
            "range": [round(float(cands[lo]), 3), round(float(cands[hi]), 3)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--make-pairs", action="store_true", help="draw the pairs from the indexes (read only) first")
    ap.add_argument("--index-root", type=Path, default=Path.home() / ".cache" / "avi" / "indexes")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.make_pairs:
        print(f"wrote {make_pairs(args.index_root, args.pairs)} pairs to {args.pairs}", file=sys.stderr)
    from avi.backends import Backends
    from avi.config import Settings
    from avi.config_embedders import embedder_settings

    rows = [json.loads(line) for line in args.pairs.read_text().splitlines() if line.strip()]
    backends = Backends(Settings())
    emb = backends.embedder
    va = np.asarray(emb.embed([r["text_a"] for r in rows]), dtype=np.float64)
    vb = np.asarray(emb.embed([r["text_b"] for r in rows]), dtype=np.float64)
    va /= np.linalg.norm(va, axis=1, keepdims=True)
    vb /= np.linalg.norm(vb, axis=1, keepdims=True)
    sims = np.sum(va * vb, axis=1)
    labels = np.array([bool(r["same_event"]) for r in rows])
    res = calibrate(sims, labels)
    cur = embedder_settings(emb.name)
    res.update(embedder=emb.name, pairs=len(rows), same=int(labels.sum()),
               same_sims=[round(float(x), 3) for x in np.sort(sims[labels])],
               different_sims=[round(float(x), 3) for x in np.sort(sims[~labels])],
               accuracy_at_merge_min_cosine={str(cur.merge_min_cosine): round(float(np.mean(
                   (sims >= cur.merge_min_cosine) == labels)), 4)})
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"{emb.name}: {len(rows)} pairs ({res['same']} same event)")
        print(f"same-event cosines:      {res['same_sims']}")
        print(f"different-event cosines: {res['different_sims']}")
        print(f"best threshold {res['threshold']} (accuracy {res['accuracy']:.3f} for any threshold in "
              f"{res['range']}); in use {cur.merge_min_cosine}: accuracy "
              f"{res['accuracy_at_merge_min_cosine'][str(cur.merge_min_cosine)]:.3f}")
    backends.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
