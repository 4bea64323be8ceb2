"""``avi eval BENCH`` and ``avi eval report RESULTS`` (issue 6).

``avi eval lvbench --annotations video_info.meta.jsonl --videos DIR --out lvbench.jsonl`` loads the
benchmark's questions, builds each video's index once, answers every question and appends one
JSON line per question (answer, its score in both modes, trace path, telemetry) as soon as it is
answered; rerunning the same command resumes. The tables (official and strict, per category, with
95 % CIs clustered by video) are printed at the end, and at any time by ``avi eval report``.

``avi eval jsonl --annotations FILE_OR_FOLDER [--videos DIR] --out r.jsonl [--split NAME] [--subset N]`` runs a
benchmark written as JSON lines (format: ``bench/README.md``; loader, rules and report: :mod:`avi.eval.jsonl`).
"""

from __future__ import annotations

import json
from pathlib import Path

from avi.errors import InputError

DEVBENCH_VIDEOS = Path.home() / ".cache" / "avi" / "devbench" / "videos"
"""Where ``bench/make_videos.py`` puts the development benchmark's videos (``avi eval jsonl``'s default)."""


def _add_bench(sub, name: str, title: str, file_hint: str, add_common, extra=None) -> None:
    from avi.cli.batch import add_executor_args
    from avi.cli.common import add_answer_rules

    p = sub.add_parser(name, help=f"run {title} ({file_hint})",
                       description=f"Answer every {title} question with avi and score it. One JSON line per "
                                   f"question goes to --out as soon as it is answered; rerun to resume.")
    p.add_argument("--annotations", type=Path, required=True, help=f"the annotation file ({file_hint})")
    if name == "jsonl":
        p.add_argument("--videos", type=Path, default=DEVBENCH_VIDEOS,
                       help="folder the questions' relative video names are found in (default: the folder "
                            "bench/make_videos.py fills, ~/.cache/avi/devbench/videos)")
    else:
        p.add_argument("--videos", type=Path, required=True, help="folder of the benchmark's video files")
    p.add_argument("--out", type=Path, required=True, help="results file (.jsonl); job file and traces go next to it")
    p.add_argument("--limit", type=int, help="only the first N questions (a quick look; the report counts "
                                             "only these)")
    p.add_argument("--seed", type=int, default=0, help="seed of LongVideoBench's official random choice on "
                                                       "unparseable answers (default 0)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    if name != "jsonl":
        p.add_argument("--preset", choices=["paper"],
                       help="paper: the AVI paper's setting for this benchmark (AVI §4.1, Table 1): no transcript "
                            "unless the benchmark's setting has subtitles (LongVideoBench: its subtitle files, no "
                            "ASR), no frame budget, at most 10 iterations, no answer rules (the Review answer is "
                            "delivered); printed at the start and stored in the job file and every results line "
                            "(docs/evaluation.md, 'Reproducing the paper's table')")
    if extra:
        extra(p)
    add_executor_args(p)
    add_answer_rules(p)
    add_common(p)
    p.set_defaults(fn=cmd_eval, bench=name)


def add_eval_parser(sub, add_common) -> None:
    """Register ``avi eval`` with one subcommand per benchmark and ``report``."""
    e = sub.add_parser("eval", help="run a benchmark (LVBench, Video-MME, LongVideoBench, Charades-STA: official "
                                    "and strict metrics; or your own questions as JSON lines: avi eval jsonl)",
                       description="Benchmark harness. The benchmark videos are not shipped: download them "
                                   "and their annotation files (docs/evaluation.md).")
    bsub = e.add_subparsers(dest="bench_command", required=True, parser_class=sub._parser_class)

    _add_bench(bsub, "lvbench", "LVBench", "video_info.meta.jsonl", add_common)

    def videomme(p):
        p.add_argument("--duration", default="long", help="short, medium, long (default), several "
                                                          "(comma-separated) or all")
        p.add_argument("--with-subtitles", action="store_true", help="give each video its subtitle file")
        p.add_argument("--subtitles-dir", type=Path, help="default: <videos>/../subtitle")

    _add_bench(bsub, "videomme", "Video-MME", "videomme.json (lmms-eval rows) or output_test_template.json",
               add_common, videomme)

    def lvb(p):
        p.add_argument("--duration-groups", default="3600", help="15, 60, 600, 3600 (default: 3600, the long "
                                                                 "subset), several comma-separated, or all")
        p.add_argument("--no-subtitles", dest="with_subtitles", action="store_false",
                       help="do not give the videos their subtitle files")
        p.add_argument("--subtitles-dir", type=Path, help="default: <videos>/../subtitles")

    _add_bench(bsub, "longvideobench", "LongVideoBench", "lvb_val.json", add_common, lvb)

    def charades(p):
        p.add_argument("--durations", type=Path, help="video lengths (Charades_v1_test.csv or JSON) to clip "
                                                      "spans to [0, duration]")

    _add_bench(bsub, "charades", "Charades-STA", "charades_sta_test.txt or the JSON form", add_common, charades)

    def jsonl(p):
        p.add_argument("--subset", type=int, metavar="N",
                       help="a quick look: N questions picked round-robin over the question types in file "
                            "order (deterministic; the report says it is a subset)")
        p.add_argument("--split", metavar="NAME",
                       help="only the questions whose split key is NAME (avi's benchmark: tune, to develop on; "
                            "report, only to report: bench/README.md)")

    _add_bench(bsub, "jsonl", "JSONL", "a .jsonl file or a folder of them; format: bench/README.md",
               add_common, jsonl)

    r = bsub.add_parser("report", help="print the tables of a results file (also while a run is going)")
    r.add_argument("results", type=Path, metavar="RESULTS", help="a results .jsonl written by avi eval")
    r.add_argument("--json", action="store_true", help="one JSON object instead of the tables")
    r.add_argument("--seed", type=int, help="LongVideoBench random-choice seed (default: the run's)")
    r.add_argument("--split", metavar="NAME", help="jsonl runs: only the questions whose split key is NAME (the "
                                                   "tables of one split of a run over several)")
    r.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    r.set_defaults(fn=cmd_eval_report)


def _loader_options(args) -> dict:
    opts = {}
    for key in ("duration", "with_subtitles", "subtitles_dir", "duration_groups", "durations"):
        if hasattr(args, key):
            opts[key] = getattr(args, key)
    return opts


def _print_report(report, as_json: bool) -> None:
    from avi.eval.scoring import format_report

    if as_json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(format_report(report))


def _score_run(bench: str, questions, records, source: dict, seed: int):
    """The report of a run: :func:`avi.eval.jsonl.score_jsonl` for ``jsonl`` (with its subset note), else
    :func:`avi.eval.scoring.score`."""
    if bench == "jsonl":
        from avi.eval.jsonl_report import score_jsonl

        return score_jsonl(questions, records, subset=source.get("subset"), annotations=source.get("annotations"),
                           split=source.get("split"))
    from avi.eval.scoring import score

    return score(questions, records, benchmark=bench, seed=seed)


def cmd_eval(args) -> int:
    """Run one benchmark; exit 0 when the run finished (failed questions are part of the score, not an error)."""
    from avi.cli.batch import make_executor
    from avi.cli.common import settings_from_args
    from avi.eval.loaders import load_benchmark
    from avi.eval.scoring import grade
    from avi.jobs.results import read_records
    from avi.jobs.runner import run_job

    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be at least 1")
    if not args.videos.is_dir():
        hint = " (run .venv/bin/python bench/make_videos.py to fill it, or give --videos)" \
            if args.bench == "jsonl" and args.videos == DEVBENCH_VIDEOS else ""
        raise InputError(f"--videos {args.videos} is not a folder{hint}")
    if args.out.suffix.lower() not in {".jsonl", ".json"}:
        raise InputError(f"--out should be a .jsonl file, got {args.out}")
    from avi.places import check_not_an_input

    check_not_an_input(args.out, [(args.annotations, "the annotations")])
    if args.annotations.is_dir() and args.out.expanduser().absolute().parent == args.annotations.absolute():
        raise InputError(f"--out {args.out} is inside the annotations folder {args.annotations}: a later run would "
                         f"read the results as questions; choose another --out")
    options = _loader_options(args)
    subset = None
    if args.bench == "jsonl":
        from avi.eval.jsonl import load_jsonl, select_split, stratified_subset

        if args.subset is not None and args.limit is not None:
            raise InputError("use --subset or --limit, not both")
        questions = load_jsonl(args.annotations, args.videos)
        if args.split is not None:
            questions = select_split(questions, args.split)
        if args.subset is not None:
            picked = stratified_subset(questions, args.subset)
            if len(picked) < len(questions):
                subset = {"n": len(picked), "of": len(questions)}
            questions = picked
    else:
        questions = load_benchmark(args.bench, args.annotations, args.videos, **options)
    if args.limit:
        questions = questions[:args.limit]
    if not questions:
        raise InputError(f"{args.annotations}: no questions left after the selection ({options or 'none'})")
    source = {"benchmark": args.bench, "annotations": str(args.annotations.resolve()),
              "videos": str(args.videos.resolve()), "options": {k: str(v) for k, v in options.items()},
              "limit": args.limit, "seed": args.seed}
    if args.bench == "jsonl":
        source["subset"] = subset
        source["split"] = args.split
    settings = settings_from_args(args)
    preset = None
    if getattr(args, "preset", None) == "paper":
        from avi.eval.preset import apply_paper_preset, preset_banner

        explicit = {"transcript": getattr(args, "transcript", None),
                    "max_iterations": getattr(args, "max_iterations", None),
                    "answer_rules": getattr(args, "answer_rules", None)}
        settings, options, preset = apply_paper_preset(args.bench, settings, options, explicit)
        if options != _loader_options(args):  # the subtitle option changed: load the questions with it
            questions = load_benchmark(args.bench, args.annotations, args.videos, **options)
            questions = questions[:args.limit] if args.limit else questions
            source["options"] = {k: str(v) for k, v in options.items()}
        source["preset"] = preset
        print(preset_banner(args.bench, preset), flush=True)
    from avi.jobs.runner import traces_dir_for
    from avi.places import check_places, job_places

    check_places(job_places(settings, args.out, traces_dir_for(args.out)))  # before any work
    executor = make_executor(args, settings)
    summary = run_job(questions, args.out, executor, kind=f"eval:{args.bench}", source=source,
                      grade=lambda q, rec: {"score": grade(q, rec, seed=args.seed),
                                            **({"preset": preset["name"]} if preset else {})},
                      retry_failed=args.retry_failed, progress=not args.quiet)
    report = _score_run(args.bench, questions, read_records(args.out), source, args.seed)
    _print_report(report, args.json)
    if not args.json:
        print(f"Run: {summary['answered']} answered now, {summary['skipped']} from before, {summary['failed']} "
              f"failed; results {args.out}")
    return 0


def cmd_eval_report(args) -> int:
    """Print the report of a results file (its job file gives the questions, so missing ones count)."""
    from avi.jobs.results import job_questions, read_job, read_records

    job = read_job(args.results)
    kind = str(job.get("kind", ""))
    if not kind.startswith("eval:"):
        raise InputError(f"{args.results} was written by avi {kind or '?'}, not avi eval")
    source = dict(job.get("source") or {})
    seed = args.seed if args.seed is not None else int(source.get("seed") or 0)
    bench, questions = kind.split(":", 1)[1], job_questions(args.results)
    if args.split is not None:
        if bench != "jsonl":
            raise InputError(f"--split is for avi eval jsonl runs; {args.results} is a {bench} run")
        from avi.eval.jsonl import select_split

        questions, source["split"] = select_split(questions, args.split), args.split
    report = _score_run(bench, questions, read_records(args.results), source, seed)
    _print_report(report, args.json)
    return 0

