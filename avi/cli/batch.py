"""``avi batch``: many videos, many questions, one resumable results file (issue 9).

The executor flags are shared with ``avi eval`` (:func:`add_executor_args`, :func:`make_executor`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from avi.cli.common import add_answer_rules
from avi.errors import InputError


def add_executor_args(p: argparse.ArgumentParser) -> None:
    """Flags that choose and size the executor (local threads or Ray)."""
    g = p.add_argument_group("execution")
    g.add_argument("--concurrency", type=int, default=1,
                   help="questions answered at once (default 1; raise it against vLLM endpoints, which batch "
                        "concurrent requests)")
    g.add_argument("--index-workers", type=int, default=1, help="index builds at once, local executor (default 1)")
    g.add_argument("--retries", type=int, default=2, help="extra attempts after a transient failure (model "
                                                          "server unreachable or timing out; default 2)")
    g.add_argument("--retry-failed", action="store_true", help="also redo questions whose last record failed")
    g.add_argument("--ray", metavar="ADDRESS", help="run on Ray: 'auto' (this machine's cluster, after `ray "
                                                    "start`), 'local' (a Ray instance started here) or HOST:PORT")
    g.add_argument("--ray-cpus", type=int, help="CPUs of a --ray local instance (default: all)")
    g.add_argument("--index-gpus", type=float, default=0.0,
                   help="Ray GPUs per index task (in-process CV models on GPU nodes; default 0)")
    g.add_argument("--question-gpus", type=float, default=0.0, help="Ray GPUs per question task (default 0)")


def make_executor(args, settings):
    """The executor the flags ask for.

    Raises:
        InputError: a count below 1 (or retries below 0).
    """
    if args.concurrency < 1 or args.index_workers < 1:
        raise InputError("--concurrency and --index-workers must be at least 1")
    if args.retries < 0:
        raise InputError("--retries must be 0 or more")
    if args.concurrency > 1 and not settings.llm_base_url:
        print(f"avi: warning: --concurrency {args.concurrency} against the embedded llama.cpp server: it has one "
              f"slot, so concurrent questions evict each other's cached prompt prefix and each takes several times "
              f"longer (scripts/bench_batch.py); 1 is faster on the cpu profile", file=sys.stderr)
    if args.ray:
        from avi.jobs.ray_executor import RayExecutor

        return RayExecutor(settings, args.ray, concurrency=args.concurrency, num_cpus=args.ray_cpus,
                           index_resources={"num_gpus": args.index_gpus} if args.index_gpus else None,
                           question_resources={"num_gpus": args.question_gpus} if args.question_gpus else None,
                           retries=args.retries)
    from avi.jobs.local import LocalExecutor

    return LocalExecutor(settings, concurrency=args.concurrency, index_workers=args.index_workers,
                         retries=args.retries)


def add_batch_parser(sub, add_common) -> None:
    """Register ``avi batch``."""
    b = sub.add_parser(
        "batch", help="answer many questions over many videos; one JSON line per question, resumable",
        description="Index each video once, answer every question, append one JSON line per question to --out "
                    "as soon as it is answered. Rerun the same command to resume after a kill: finished "
                    "questions are skipped. A failing video or question is recorded with its error and the "
                    "batch goes on.")
    b.add_argument("input", type=Path, metavar="MANIFEST_OR_FOLDER",
                   help="a JSONL/CSV manifest of videos and questions, or a folder of videos (with --questions)")
    b.add_argument("--questions", type=Path, help="with a folder: questions asked of every video (one per line, "
                                                  "or JSONL objects)")
    b.add_argument("--out", type=Path, required=True, help="results file (.jsonl); its job file and traces "
                                                           "folder go next to it")
    b.add_argument("--json", action="store_true", help="print the final summary as one JSON object")
    add_executor_args(b)
    add_answer_rules(b)
    add_common(b)
    b.set_defaults(fn=cmd_batch)


def print_summary(summary: dict, out: Path, as_json: bool) -> None:
    """The final summary: JSON, or a few readable lines."""
    if as_json:
        print(json.dumps({**summary, "results": str(out)}))
        return
    s = summary
    print(f"Questions: {s['questions']}  done {s['done']}  failed {s['failed']}  missing {s['missing']}  "
          f"(this run: {s['answered']} answered, {s['skipped']} already finished)")
    if "seconds" in s:
        rate = f"  {s['questions_per_hour']} questions/hour" if "questions_per_hour" in s else ""
        print(f"Time: {s['seconds']:.0f} s{rate}")
    if "index_minutes_per_video_minute" in s:
        print(f"Index: {s['index_minutes_per_video_minute']} min per video minute")
    if "frames_per_question" in s:
        print(f"Per question: {s['frames_per_question']} frames, {s['tokens_per_question']:.0f} tokens, "
              f"{s['agent_seconds_per_question']} s agent")
    print(f"Results: {out}")


def cmd_batch(args) -> int:
    """``avi batch``: exit 0 when every question has a record with status ok, 1 when some failed."""
    from avi.cli.common import settings_from_args
    from avi.input_paths import check_input_path
    from avi.jobs.manifest import folder_job, load_manifest
    from avi.jobs.runner import run_job, traces_dir_for
    from avi.places import check_not_an_input, check_places, job_places

    for path, what in ((args.input, "the manifest or folder"), (args.questions, "the questions file"),
                       (args.out, "--out")):
        if path is not None:
            check_input_path(path, what)
    if args.input.is_dir():
        if args.questions is None:
            raise InputError(f"{args.input} is a folder: give the questions for its videos with --questions FILE")
        questions = folder_job(args.input, args.questions)
        source = {"folder": str(args.input.resolve()), "questions": str(args.questions.resolve())}
    else:
        if args.questions is not None:
            raise InputError("--questions goes with a folder of videos; a manifest carries its own questions")
        questions = load_manifest(args.input)
        source = {"manifest": str(args.input.resolve())}
    if args.out.suffix.lower() not in {".jsonl", ".json"}:
        raise InputError(f"--out should be a .jsonl file, got {args.out}")
    check_not_an_input(args.out, [(args.input, "the manifest"), (args.questions, "the questions file")]
                       + [(v, "a video of the job") for q in questions for v in (q.videos or [q.video])]
                       + [(q.subtitles, "a subtitle file of the job") for q in questions])
    settings = settings_from_args(args)
    check_places(job_places(settings, args.out, traces_dir_for(args.out)))  # before any work
    executor = make_executor(args, settings)
    # as avi-run: questions wait only for the captions and embeddings; a question whose tool needs the entity graph
    # or the summary builds it then (avi/index/lazy.py). avi eval builds every stage first (comparable runs).
    executor.stages = "search" if settings.index_llm_stages == "after" else "all"
    summary = run_job(questions, args.out, executor, kind="batch", source=source, retry_failed=args.retry_failed,
                      progress=not args.quiet)
    print_summary(summary, args.out, args.json)
    if summary["failed"]:
        print(f"avi: {summary['failed']} question(s) failed; their errors are in {args.out}", file=sys.stderr)
        return 1
    return 0
