#!/usr/bin/env python
"""Benchmark of the cpu profile: index build time and question time, and what the orchestrator gets right.

Builds fresh indexes of a real sample video (vtest.avi, Debian opencv-doc) and
of synthetic videos (tests/synth.py), then asks a fixed set of questions
through the same pipeline as ``avi-run`` (one embedded LLM server for the
whole run). Prints a table and a summary, and writes one JSON line per question.

    .venv/bin/python scripts/bench_cpu.py [--out bench.jsonl] [--only vtest|signs|narrated|asr] [--gguf NAME]

No truth comes from avi itself: the synthetic videos' truths are the generator's
own specs (sign texts and times, scene cuts, colours, spoken sentences), and the
vtest truths are counts a person made by looking at the frames
(``bench/questions/real.jsonl``, method in ``bench/REAL.md``). Answers are judged
by the strict rules of ``avi eval jsonl``: number = the one count the answer's
leading statement gives equals the truth; text = an accepted string as whole words in
the leading statement, no alternatives; choice = avi's letter; interval = IoU with the
truth >= 0.5; time = the one time the leading statement gives, within 0.5 s; a hedged
answer ("cannot tell", "a guess", "not measured") is wrong.

Word error rates (``jiwer``, a test extra) are raw: jiwer's standard normalisation
on both texts; the second figure also maps stated spelling variants on both sides
(``tests/wer.py``).

Figures to quote: index build seconds and real-time factor (build time / video
length) per video; per question the seconds, iterations and tool calls; the
share of the question's time spent in LLM calls vs. tools; accuracy; the machine
they were measured on (printed from the machine).
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
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from machine import machine_line  # noqa: E402 - scripts/machine.py

from avi.backends import Backends  # noqa: E402
from avi.config import Settings  # noqa: E402
from avi.eval.answer_reading import hedges, stated_number, strict_text  # noqa: E402
from avi.index.build import ensure_index  # noqa: E402
from avi.offline import enforce_offline_env  # noqa: E402
from avi.pipeline import ask  # noqa: E402
from avi.video.spans import temporal_iou  # noqa: E402

VTEST = Path("/usr/share/doc/opencv-doc/examples/data/vtest.avi")
REAL = REPO / "bench" / "questions" / "real.jsonl"
IOU_THRESHOLD = 0.5  # interval answers: right when IoU with the truth >= this (as in `avi eval jsonl`)
TIME_TOLERANCE_S = 0.5  # "at what second": right when the answer's first number is this close to the truth


@dataclass
class Case:
    """One benchmark question.

    Attributes:
        video: ``vtest``, ``signs`` or ``narrated``.
        kind: ``number``, ``text``, ``choice``, ``interval`` or ``time`` (rules in the module docstring).
        truth: the number, the accepted strings, the letter, ``[start_s, end_s]`` or the time in seconds.
        source: where the truth comes from (never from avi).
    """

    video: str
    question: str
    kind: str
    truth: Any
    source: str


def _real(qid: str) -> Case:
    """A vtest question and its person-made truth from bench/questions/real.jsonl."""
    for line in REAL.read_text().splitlines():
        rec = json.loads(line) if line.strip() else {}
        if rec.get("qid") == qid:
            return Case("vtest", rec["question"], rec["type"], rec["answer"], f"{qid}: {rec['how']}")
    raise SystemExit(f"{qid} is not in {REAL}")


def cases() -> list[Case]:
    """The questions, with truths from the synthetic videos' specs and from bench/questions/real.jsonl."""
    from synth import narrated_video_spec, sign_video_spec

    signs = sign_video_spec()
    exit_sign, room_sign = signs.texts
    cut = signs.scenes[1][0]
    (code, _), (meet, _) = [(sp.text, sp.start_s) for sp in narrated_video_spec()[1]]
    assert "pineapple" in code and "north gate" in meet  # the truths below are these sentences' words
    return [
        _real("real-vtest-07"),  # around 0:44: 3 people (stable from 42.5 to 45.5 s)
        _real("real-vtest-06"),  # at 0:20: 7 people
        Case("signs", "What number is written on the EXIT sign?", "text", [exit_sign.text.split()[1]],
             f"spec: {exit_sign.text!r} drawn"),
        Case("signs", "What room is shown on the sign after the scene changes?", "text", [room_sign.text.split()[1]],
             f"spec: {room_sign.text!r} drawn after the cut"),
        Case("signs", "When is the EXIT sign on screen? Answer with a time span.", "interval",
             [exit_sign.start_s, exit_sign.end_s], "spec: the sign's drawing times"),
        Case("signs", "What colour is the background at the start of the video? A. red B. blue C. green",
             "choice", "B", f"spec: first scene {signs.scenes[0][1]}"),
        Case("signs", "Is there a person in the video? A. yes B. no", "choice", "B", "spec: nothing but text and a "
             "square is drawn"),
        Case("signs", "At what second does the scene change?", "time", cut, "spec: the hard cut"),
        Case("narrated", "What is the secret code word that is spoken in the video?", "text", ["pineapple"],
             f"spec: {code!r} spoken"),
        Case("narrated", "Where does the speaker want to meet?", "text", ["north gate", "northgate"],
             f"spec: {meet!r} spoken"),
    ]


def _stated_time(answer: str | None) -> float | None:
    """The one time (seconds) the answer's leading statement gives: "12.5 s", "at 0:12" or a bare number."""
    from avi.eval.answer_reading import leading_statement
    from avi.video.timecode import clock_times_in

    lead = leading_statement(answer)
    clocks = [v for _, v in clock_times_in(lead)]
    nums = [float(x) for x in re.findall(r"(?<![\d.:])\d+(?:\.\d+)?(?![\d:])", lead)]
    values = set(clocks) | (set(nums) if not clocks else set())
    return values.pop() if len(values) == 1 else None


def judge(case: Case, answer: str | None, choice: str | None, interval: list[float] | None) -> tuple[bool, Any]:
    """(right, what the rule read) of one answer by the case's rule (see the module docstring)."""
    if case.kind in ("number", "time", "text") and hedges({}, answer):  # "cannot tell ...; best guess: 3"
        return False, None
    if case.kind == "number":
        value = stated_number(answer)
        return value is not None and value == float(case.truth), value
    if case.kind == "time":
        value = _stated_time(answer)
        return value is not None and abs(value - float(case.truth)) <= TIME_TOLERANCE_S, value
    if case.kind == "text":
        found = strict_text(answer, case.truth)
        return found is not None, found
    if case.kind == "choice":
        return choice == case.truth, choice
    if case.kind == "interval":
        iou = temporal_iou(case.truth, interval) if interval else 0.0
        return iou >= IOU_THRESHOLD, round(iou, 3)
    raise ValueError(f"unknown rule {case.kind!r}")


MEGAMIND = ("Of course. You don't judge a book by its cover or a person from the outside. Oh, that's a relief to "
            "hear. You judge them based on their actions. Well, that seems kind of petty, don't you think?")


def _asr_row(backends: Backends, name: str, path: Path, reference: str, starts: list[float] | None) -> str:
    from wer import normalised_wer, raw_wer  # tests/wer.py (jiwer)

    from avi.video.audio import load_audio

    audio, decoder = load_audio(path)
    t0 = time.perf_counter()
    segs = backends.asr.transcribe(audio, language="en")
    dt = time.perf_counter() - t0
    hyp = " ".join(s.text for s in segs)
    err = "-"
    if starts and len(segs) == len(starts):
        err = f"{max(abs(s.start_s - t) for s, t in zip(segs, starts)):.2f}"
    length = audio.size / 16000
    print(f"| {name} | {length:.1f} | {decoder} | {dt:.2f} | {dt / length:.3f} | {raw_wer(reference, hyp):.1%} | "
          f"{normalised_wer(reference, hyp):.1%} | {err} |", flush=True)
    return f"- {name}: {hyp}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=None, help="JSONL with one record per question")
    p.add_argument("--only", choices=["vtest", "signs", "narrated", "asr"],
                   help="one video only, or only the speech recognition table (no index, no LLM)")
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
        videos = {args.only: videos[args.only]} if args.only in videos else {}

    print(f"# avi cpu benchmark  ({time.strftime('%Y-%m-%d %H:%M')}, orchestrator {settings.llm_gguf}, "
          f"{settings.llm_threads} threads)\n\nmachine: {machine_line()}\n")
    if videos:
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

    if args.only in (None, "asr"):
        print("\n## speech recognition (Whisper base int8, VAD)\n")
        print("| audio | length s | decoder | ASR s | real-time factor | WER raw | WER normalised | start error s |")
        print("|---|---|---|---|---|---|---|---|")
        heard = [_asr_row(backends, "narrated (espeak-ng)", narrated, " ".join(t for _, _, t in truth),
                          [t0 for t0, _, _ in truth])]
        megamind = VTEST.with_name("Megamind.avi")
        if megamind.exists():
            heard.append(_asr_row(backends, "Megamind.avi (real dialogue, AC3)", megamind, MEGAMIND, None))
        print("\nwhat was heard:\n" + "\n".join(heard))

    records = []
    if videos:
        print("\n## questions\n")
        print("| video | question | answer | truth | right | s | iterations | tool calls | LLM s | tools s | prompt tok |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        t_server = time.perf_counter()
        backends.llm  # noqa: B018 - start the server once; its start-up is reported separately
        t_server = time.perf_counter() - t_server
    for i, case in enumerate(cases()):
        if case.video not in videos:
            continue
        result = ask(videos[case.video], case.question, settings, backends, progress=False)
        tr = result.trace
        tr.write(settings.traces_dir() / f"{i:02d}-{case.video}.json")
        tot = tr.totals()
        right, read = judge(case, result.answer, result.choice, result.interval)
        rec = {"video": case.video, "question": case.question, "answer": result.answer, "choice": result.choice,
               "interval": result.interval, "rule": case.kind, "truth": case.truth, "truth_source": case.source,
               "read": read, "right": right, "seconds": tr.seconds, "iterations": tr.iterations,
               "forced": tr.forced, "totals": tot, "tools": [s.tool for s in tr.steps if s.kind == "tool_call"]}
        records.append(rec)
        ans = (result.answer or "-").replace("|", "/")[:40]
        print(f"| {case.video} | {case.question[:48]} | {ans} | {case.truth} | {'yes' if right else 'no'} | "
              f"{tr.seconds['agent']:.1f} | {tr.iterations} | {tot['tool_calls']} | {tot['llm_seconds']:.1f} | "
              f"{tot['tool_seconds']:.1f} | {tot['prompt_tokens']} |", flush=True)
    backends.close()

    if records:
        secs = [r["seconds"]["agent"] for r in records]
        llm = sum(r["totals"]["llm_seconds"] for r in records)
        tools = sum(r["totals"]["tool_seconds"] for r in records)
        print(f"\naccuracy {sum(r['right'] for r in records)}/{len(records)} (interval: IoU >= {IOU_THRESHOLD}); "
              f"question seconds median {statistics.median(secs):.1f} (min {min(secs):.1f}, max {max(secs):.1f}); "
              f"LLM share {llm / max(1e-9, llm + tools):.0%} of LLM+tool time; server start {t_server:.1f}s")
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print(f"\ntraces: {settings.traces_dir()}  (work dir {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
