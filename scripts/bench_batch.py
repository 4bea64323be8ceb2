#!/usr/bin/env python
"""Throughput of ``avi batch`` on the cpu profile: local executor at concurrency 1 vs higher, and Ray.

Makes N synthetic videos with known text (tests/synth.py: a sign, a scene cut, a second
sign), asks each the same questions (their truths are the drawn texts), and runs the batch
once per configuration with a FRESH index root each time, so every run pays for its
index builds and the overlap of the index and question stages is part of the figure.
The orchestrator is the real embedded Qwen2.5-Coder-1.5B (one llama.cpp server per run).

    .venv/bin/python scripts/bench_batch.py [--videos 4] [--questions 3] [--duration 20]
        [--configs local-1,local-2,ray-2] [--keep DIR]

Prints the machine it ran on (CPUs, memory, OS, read from the machine), and per
configuration: questions/hour, index minutes per video minute, seconds, questions
right, failed; and the ratio of each configuration's throughput to local-1
(measured in the same run). An answer is right when the drawn word or number is
in it as a whole token (anchored: "3" is not found in "13", "3.5" or "DOCK 35").
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from machine import machine_line  # noqa: E402 - scripts/machine.py
from synth import Spec, Text, make_video  # noqa: E402

from avi.config import Settings  # noqa: E402
from avi.jobs.spec import JobQuestion  # noqa: E402
from avi.offline import enforce_offline_env  # noqa: E402

SIGNS = [("EXIT 42", "ROOM 7B"), ("GATE 19", "DOCK 3"), ("EXIT 85", "ROOM 12C"), ("GATE 64", "LEVEL 2"),
         ("EXIT 11", "ROOM 5A"), ("GATE 77", "DOCK 9")]
QUESTIONS = [("What number is written on the sign in the first scene?", lambda a, b: a.split()[-1]),
             ("What is written on the sign after the scene changes?", lambda a, b: b.split()[-1]),
             ("What word is on the first sign, before the number?", lambda a, b: a.split()[0])]


def make_job(folder: Path, n_videos: int, n_questions: int, duration: float) -> tuple[list[JobQuestion], dict]:
    """Synthetic videos and their questions; returns (questions, qid -> the drawn word or number)."""
    qs, truth = [], {}
    cut = duration / 2
    for i in range(n_videos):
        first, second = SIGNS[i % len(SIGNS)]
        video = make_video(folder / f"v{i + 1}.mp4", Spec(
            duration_s=duration, scenes=[(0.0, "navy"), (cut, "darkgreen")],
            texts=[Text(first, 1.0, cut - 1.0), Text(second, cut + 1.0, duration - 1.0)]))
        for k, (question, expect) in enumerate(QUESTIONS[:n_questions]):
            qid = f"v{i + 1}#{k + 1}"
            qs.append(JobQuestion(qid=qid, video=video, question=question))
            truth[qid] = expect(first, second)
    return qs, truth


def is_right(answer: str | None, truth: str) -> bool:
    """Whether ``truth`` (a drawn word or number) is in ``answer`` as a whole token, case aside.

    Anchored on both sides: no letter, digit or underscore next to it, and no decimal point joining it to
    another number ("3" is not in "13", "3.5" or "DOCK 35"; it is in "DOCK 3." and "(3)").
    """
    pattern = rf"(?<!\w)(?<!\d\.){re.escape(truth)}(?!\w|\.\d)"
    return re.search(pattern, answer or "", re.I) is not None


def run_config(name: str, questions, truth, work: Path, llm_stages: bool = True) -> dict:
    from avi.jobs.local import LocalExecutor
    from avi.jobs.ray_executor import RayExecutor
    from avi.jobs.runner import run_job

    kind, n = name.split("-")
    settings = Settings(home=work / name / "home", index_root=work / name / "indexes", graph_llm=llm_stages,
                        summary_llm=llm_stages)
    if kind == "local":
        executor = LocalExecutor(settings, concurrency=int(n))
    else:
        executor = RayExecutor(settings, "local", concurrency=int(n), num_cpus=max(2, int(n)))
    out = work / name / "results.jsonl"
    t0 = time.perf_counter()
    summary = run_job(questions, out, executor, kind="batch", source={"bench": name}, progress=True)
    wall = time.perf_counter() - t0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    right = sum(1 for r in recs if r["status"] == "ok" and is_right(r.get("answer"), truth[r["qid"]]))
    return {"config": name, "seconds": round(wall, 1), "questions": len(recs), "right": right,
            "failed": summary["failed"], "questions_per_hour": round(len(recs) / wall * 3600, 1),
            "index_minutes_per_video_minute": summary.get("index_minutes_per_video_minute"),
            "agent_seconds_per_question": summary.get("agent_seconds_per_question"),
            "tokens_per_question": summary.get("tokens_per_question")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=int, default=4)
    p.add_argument("--questions", type=int, default=3, choices=[1, 2, 3])
    p.add_argument("--duration", type=float, default=20.0, help="seconds per synthetic video")
    p.add_argument("--configs", default="local-1,local-2,ray-2",
                   help="comma-separated: local-N (threads, N questions at once), ray-N (a local Ray instance with "
                        "max(2, N) CPUs, N questions at once; index tasks run beside them)")
    p.add_argument("--no-llm-stages", action="store_true",
                   help="index without the LLM graph-extraction and summary stages (captions, subjects, embeddings "
                        "only): on 2 cores those stages share the one llama.cpp server with the questions")
    p.add_argument("--keep", type=Path, help="keep the work folder here (default: a temporary one)")
    args = p.parse_args()
    enforce_offline_env()
    work = args.keep or Path(tempfile.mkdtemp(prefix="avi-bench-batch-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        (work / "videos").mkdir(parents=True, exist_ok=True)
        questions, truth = make_job(work / "videos", args.videos, args.questions, args.duration)
        rows = []
        for name in args.configs.split(","):
            row = run_config(name.strip(), questions, truth, work, llm_stages=not args.no_llm_stages)
            rows.append(row)
            print(json.dumps(row), flush=True)
        base = rows[0]["questions_per_hour"]
        print(f"\n{len(questions)} questions over {args.videos} videos of {args.duration:.0f} s "
              f"({args.videos * args.duration / 60:.1f} video minutes), cpu profile"
              + (", index without the LLM stages" if args.no_llm_stages else ""))
        print(f"machine: {machine_line()}")
        print(f"{'config':10s} {'q/hour':>8s} {'x ' + rows[0]['config']:>12s} {'index min/video min':>20s} "
              f"{'seconds':>8s} {'right':>6s} {'failed':>6s}")
        for r in rows:
            print(f"{r['config']:10s} {r['questions_per_hour']:8.1f} {r['questions_per_hour'] / base:12.2f} "
                  f"{r['index_minutes_per_video_minute'] or 0:20.3f} {r['seconds']:8.0f} "
                  f"{r['right']:>3d}/{r['questions']:<2d} {r['failed']:6d}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
