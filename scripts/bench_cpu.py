#!/usr/bin/env python
"""Benchmark of the cpu profile: index build time and question time, and what the orchestrator gets right.

Builds fresh indexes of a real sample video (vtest.avi, Debian opencv-doc) and
of the synthetic sign video (tests/synth.py; ground truth known), then asks a
fixed set of questions with known answers through the same pipeline as
``avi-run`` (one embedded LLM server for the whole run). Prints a table and a
summary, and writes one JSON line per question.

    .venv/bin/python scripts/bench_cpu.py [--out bench.jsonl] [--only vtest|signs] [--gguf NAME]

Figures to quote: index build seconds and real-time factor (build time / video
length) per video; per question the seconds, iterations and tool calls; the
share of the question's time spent in LLM calls vs. tools; accuracy.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from avi.backends import Backends  # noqa: E402
from avi.config import Settings  # noqa: E402
from avi.index.build import ensure_index  # noqa: E402
from avi.offline import enforce_offline_env  # noqa: E402
from avi.pipeline import ask  # noqa: E402

VTEST = Path("/usr/share/doc/opencv-doc/examples/data/vtest.avi")


@dataclass
class Case:
    video: str
    question: str
    check: str  # regex the answer must match (case-insensitive)
    truth: str  # what is right, in words


CASES = [
    Case("vtest", "About how many people are visible at 0:40?", r"\b3\b|three", "3 (HOG count at 40 s)"),
    Case("vtest", "How many people can be seen at 1:10?", r"\b{n}\b", "HOG count at 70 s"),
    Case("signs", "What number is written on the EXIT sign?", r"\b42\b", "42"),
    Case("signs", "What room is shown on the sign after the scene changes?", r"7B", "7B"),
    Case("signs", "When is the EXIT sign on screen? Answer with a time span.", r"interval", "[4 s, 9 s]"),
    Case("signs", "What colour is the background at the start of the video? A. red B. blue C. green",
         r"choice:B", "B (navy)"),
    Case("signs", "Is there a person in the video? A. yes B. no", r"choice:B", "B (no people)"),
    Case("signs", "At what second does the scene change?", r"\b(9\.[5-9]|10(\.[0-5])?)\b", "10 s (hard cut)"),
    Case("narrated", "What is the secret code word that is spoken in the video?", r"pineapple", "pineapple (spoken)"),
    Case("narrated", "Where does the speaker want to meet?", r"north ?gate", "the north gate (spoken)"),
]

MEGAMIND = ("Of course. You don't judge a book by its cover or a person from the outside. Oh, that's a relief to "
            "hear. You judge them based on their actions. Well, that seems kind of petty, don't you think?")


def _hog_count(backends: Backends, t: float) -> int:
    from avi.video.decode import VideoReader, probe

    frame = VideoReader(probe(VTEST)).frames_at([t])[0]
    return len(backends.detector.detect(frame, ["person"]).detections)


def _asr_row(backends: Backends, name: str, path: Path, reference: str, starts: list[float] | None) -> None:
    import jiwer

    from avi.video.audio import load_audio

    audio, decoder = load_audio(path)
    t0 = time.perf_counter()
    segs = backends.asr.transcribe(audio, language="en")
    dt = time.perf_counter() - t0
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip()])
    hyp = " ".join(s.text for s in segs).replace("Northgate", "north gate").replace(" 7 ", " seven ")
    wer = jiwer.wer(norm(reference), norm(hyp))
    err = "-"
    if starts and len(segs) == len(starts):
        err = f"{max(abs(s.start_s - t) for s, t in zip(segs, starts)):.2f}"
    length = audio.size / 16000
    print(f"| {name} | {length:.1f} | {decoder} | {dt:.2f} | {dt / length:.3f} | {wer:.1%} | {err} |", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=None, help="JSONL with one record per question")
    p.add_argument("--only", choices=["vtest", "signs", "narrated"], help="one video only")
    p.add_argument("--gguf", default=None, help="weights.lock entry of the orchestrator (default: settings)")
    args = p.parse_args()
    enforce_offline_env()

    from synth import make_narrated_video, make_video, narrated_video_spec, sign_video_spec

    work = Path(tempfile.mkdtemp(prefix="avi-bench-"))
    overrides = {"index_root": work / "indexes", "trace_dir": work / "traces"}
    if args.gguf:
        overrides["llm_gguf"] = args.gguf
    settings = Settings(**overrides)
    backends = Backends(settings)
    spec, speech = narrated_video_spec()
    narrated, truth = make_narrated_video(work / "narrated.mp4", spec, speech, work)
    videos = {"vtest": VTEST, "signs": make_video(work / "signs.mp4", sign_video_spec()), "narrated": narrated}
    if args.only:
        videos = {args.only: videos[args.only]}

    print(f"# avi cpu benchmark  ({time.strftime('%Y-%m-%d %H:%M')}, orchestrator {settings.llm_gguf}, "
          f"{settings.llm_threads} threads)\n")
    print("## index build (fresh)\n")
    print("| video | length s | clips | build s | transcript s | captions s | embeddings s | real-time factor |")
    print("|---|---|---|---|---|---|---|---|")
    for name, path in videos.items():
        t0 = time.perf_counter()
        idx = ensure_index(path, settings, backends, progress=False)
        dt = time.perf_counter() - t0
        dur = idx.duration_s
        b = idx.manifest["build_seconds"]
        print(f"| {name} | {dur:.1f} | {idx.manifest['counts']['clips']} | {dt:.1f} | {b['transcript']:.1f} | "
              f"{b['captions']:.1f} | {b['embeddings']:.1f} | {dt / dur:.2f} |")

    print("\n## speech recognition (Whisper base int8, VAD)\n")
    print("| audio | length s | decoder | ASR s | real-time factor | WER | start error s |")
    print("|---|---|---|---|---|---|---|")
    _asr_row(backends, "narrated (espeak-ng)", narrated, " ".join(t for _, _, t in truth), [t0 for t0, _, _ in truth])
    megamind = VTEST.with_name("Megamind.avi")
    if megamind.exists():
        _asr_row(backends, "Megamind.avi (real dialogue, AC3)", megamind, MEGAMIND, None)

    print("\n## questions\n")
    print("| video | question | answer | right | s | iterations | tool calls | LLM s | tools s | prompt tok |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    records = []
    t_server = time.perf_counter()
    backends.llm  # noqa: B018 - start the server once; its start-up is reported separately
    t_server = time.perf_counter() - t_server
    for i, case in enumerate(CASES):
        if case.video not in videos:
            continue
        check = case.check
        if "{n}" in check:
            n = _hog_count(backends, 70.0)
            check = check.format(n=n)
            case = Case(case.video, case.question, check, f"{n} (HOG count at 70 s)")
        result = ask(videos[case.video], case.question, settings, backends, progress=False)
        tr = result.trace
        tr.write(settings.traces_dir() / f"{i:02d}-{case.video}.json")
        tot = tr.totals()
        if check == "interval":
            right = result.interval is not None and result.interval[0] <= 5.0 and result.interval[1] >= 8.0
        elif check.startswith("choice:"):
            right = result.choice == check.split(":")[1]
        else:
            right = bool(re.search(check, result.answer or "", re.I))
        rec = {"video": case.video, "question": case.question, "answer": result.answer, "choice": result.choice,
               "interval": result.interval, "truth": case.truth, "right": right, "seconds": tr.seconds,
               "iterations": tr.iterations, "forced": tr.forced, "totals": tot,
               "tools": [s.tool for s in tr.steps if s.kind == "tool_call"]}
        records.append(rec)
        ans = (result.answer or "-").replace("|", "/")[:40]
        print(f"| {case.video} | {case.question[:48]} | {ans} | {'yes' if right else 'no'} | "
              f"{tr.seconds['agent']:.1f} | {tr.iterations} | {tot['tool_calls']} | {tot['llm_seconds']:.1f} | "
              f"{tot['tool_seconds']:.1f} | {tot['prompt_tokens']} |", flush=True)
    backends.close()

    if records:
        secs = [r["seconds"]["agent"] for r in records]
        llm = sum(r["totals"]["llm_seconds"] for r in records)
        tools = sum(r["totals"]["tool_seconds"] for r in records)
        print(f"\naccuracy {sum(r['right'] for r in records)}/{len(records)}; question seconds median "
              f"{statistics.median(secs):.1f} (min {min(secs):.1f}, max {max(secs):.1f}); LLM share "
              f"{llm / max(1e-9, llm + tools):.0%} of LLM+tool time; server start {t_server:.1f}s")
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print(f"\ntraces: {settings.traces_dir()}  (work dir {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
