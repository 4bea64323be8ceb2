#!/usr/bin/env python
"""Seconds per question as a user meets them: each question one ``avi-run --json`` process (issue 38).

Runs the questions of a JSONL benchmark (default: the ``report`` split of ``bench/questions``; format:
``bench/README.md``) one at a time, each as its own ``avi-run --json --quiet`` process on its video(s), and
reports per question and as p50/p90:

* **answer s**: the process's own seconds to its answer (``seconds.total`` of the JSON: probe, index open or
  build, the agent; Python's start and imports are not in it);
* **exit s**: the wall clock of the whole process, start to exit (what the user waits for the prompt);
* **LLM calls**: model calls of the question from its trace (one per step with model time; an option-scores
  step counts each of its permutations);
* **prompt tok** and **gen tok**: the trace's totals (``telemetry.prompt_tokens``, ``completion_tokens``);
* **right**: the answer by the benchmark's strict rules (``avi.eval.jsonl.grade_jsonl``, as ``avi eval``
  scores it; ``-`` for a question outside the score), and the strict accuracy over the scored questions.

Index the videos first (``avi index DIR``): a question whose video has no index builds it, and its answer
seconds then hold the build (the ``index s`` column shows it). The LLM stages that only some questions use are
built by the first question that needs them (issue 38), inside that question's seconds.

Every avi-run gets ``AVI_PARSE_LEAVE_ONE_OUT=1``: with the memory route on, a question's own pair in the parse's
example bank (written from ``tune`` questions) is left out, so ``tune`` is measured as a question no example was
written from (``report`` has none in the bank: nothing changes there). ``--out`` is written after every question
(``"partial": true`` until the last), so a run cut short keeps what it measured.

It runs the code of the checkout it is run from (``avi.cli.run_main`` with this repository first on
``PYTHONPATH``, under the Python that runs the script), not whatever ``avi-run`` is installed.

    .venv/bin/python scripts/bench_latency.py                       # report split, ~/.cache/avi/devbench/videos
    .venv/bin/python scripts/bench_latency.py --split tune --limit 5 --json
    .venv/bin/python scripts/bench_latency.py --questions my.jsonl --videos DIR -- --answer-rules none

``--score FILE`` runs nothing and prints avi eval's strict report (by answer type, source, tag; interval mIoU) of a
saved ``--out`` file. Arguments after ``--`` go to every ``avi-run``. Prints a table (``--json``: one JSON object;
``--out`` also writes the JSON). A question whose process fails is listed with its exit status and left out of
the percentiles of what it did not report.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VIDEOS = Path.home() / ".cache" / "avi" / "devbench" / "videos"
METRICS = ("answer_s", "exit_s", "llm_calls", "prompt_tokens", "completion_tokens")
RECORD_FIELDS = ("answer", "choice", "interval", "choices", "order", "answer_type", "cannot_tell")
HEADERS = {"qid": "question", "correct": "right", "index_s": "index s", "answer_s": "answer s", "exit_s": "exit s",
           "llm_calls": "LLM calls", "prompt_tokens": "prompt tok", "completion_tokens": "gen tok",
           "status": "status"}
RUN_MAIN = "import sys; sys.argv[0] = 'avi-run'; from avi.cli import run_main; sys.exit(run_main())"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags; what follows ``--`` is kept in ``extra`` for every avi-run."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=Path, default=REPO / "bench" / "questions",
                   help="a .jsonl file or a folder of them (default bench/questions)")
    p.add_argument("--split", default="report", help="the questions' split (default report; 'all' for every one)")
    p.add_argument("--limit", type=int, help="the first N questions of the selection")
    p.add_argument("--qids", help="only these questions of the selection (comma-separated ids, in the split's order)")
    p.add_argument("--videos", type=Path, default=DEFAULT_VIDEOS,
                   help=f"folder the questions' videos are in (default {DEFAULT_VIDEOS})")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds one avi-run may take (default 1800)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--out", type=Path, help="also write the JSON object here")
    p.add_argument("--traces", type=Path, metavar="DIR",
                   help="keep each question's trace as DIR/<qid>.json (default: a temporary folder, deleted)")
    p.add_argument("--score", type=Path, metavar="FILE",
                   help="run nothing: print the strict scores by answer type, source and tag of a saved --out FILE "
                        "(avi eval's report, from each question's record)")
    args = p.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        p.error("--limit must be at least 1")
    args.extra = extra
    return args


def select_questions(args: argparse.Namespace) -> list:
    """The questions to time: the split's (``all``: every one), those named by ``--qids``, the first ``--limit``.

    Raises:
        AviError: a ``--qids`` id is not in the selection.
    """
    from avi.errors import AviError
    from avi.eval.jsonl import load_jsonl, select_split

    questions = load_jsonl(args.questions, args.videos)
    if args.split != "all":
        questions = select_split(questions, args.split)
    if getattr(args, "qids", None):
        wanted = {q.strip() for q in args.qids.split(",") if q.strip()}
        missing = sorted(wanted - {q.qid for q in questions})
        if missing:
            raise AviError(f"--qids: not in split {args.split!r}: {', '.join(missing)}")
        questions = [q for q in questions if q.qid in wanted]
    return questions[:args.limit] if args.limit else questions


def command_for(q, trace: Path, extra: list[str] = ()) -> list[str]:
    """The avi-run command line of question ``q`` (a :class:`avi.jobs.spec.JobQuestion`)."""
    argv = [sys.executable, "-c", RUN_MAIN]
    for video in q.videos or [q.video]:
        argv += ["--video", str(video)]
    argv += ["--question", q.question, "--json", "--quiet", "--trace", str(trace)]
    if q.subtitles:
        argv += ["--subtitles", str(q.subtitles)]
    if q.answer_type and q.answer_type != "auto":
        argv += ["--answer-type", q.answer_type]
    return argv + list(extra)


def llm_calls(trace: dict) -> int:
    """Model calls in a trace: one per step with model time or tokens; an option-scores step, one per permutation."""
    n = 0
    for step in trace.get("steps") or []:
        data = step.get("observation_data") or {}
        perms = len(data.get("permutations") or []) + len(data.get("prior_permutations") or []) \
            if isinstance(data, dict) else 0
        if perms:
            n += perms
        elif step.get("llm_seconds") or step.get("prompt_tokens") or step.get("completion_tokens"):
            n += 1
    return n


def last_json(stdout: str) -> dict | None:
    """The last line of ``stdout`` that is a JSON object (avi-run --json prints one), or None."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


def row_for(qid: str, returncode: int, wall_s: float, stdout: str, stderr: str = "") -> dict:
    """One question's row from its process: exit status, wall seconds, the printed JSON and its trace file."""
    row = {"qid": qid, "status": "ok" if returncode == 0 else f"exit {returncode}", "exit_s": round(wall_s, 2),
           "index_s": None, "answer_s": None, "llm_calls": None, "prompt_tokens": None, "completion_tokens": None,
           "answer": None}
    out = last_json(stdout)
    if out is None:
        row["error"] = " ".join((stderr or "no JSON printed").split())[-300:]
        return row
    seconds = out.get("seconds") or {}
    telemetry = out.get("telemetry") or {}
    row["record"] = {"status": "ok", **{k: out.get(k) for k in RECORD_FIELDS},
                     "route": (out.get("memory") or {}).get("route")}
    row.update(answer=out.get("answer"), index_s=seconds.get("index"), answer_s=seconds.get("total"),
               prompt_tokens=telemetry.get("prompt_tokens"), completion_tokens=telemetry.get("completion_tokens"),
               llm_calls=telemetry.get("llm_replies"))
    trace_path = out.get("trace")
    if trace_path:
        try:
            row["llm_calls"] = llm_calls(json.loads(Path(trace_path).read_text()))
        except (OSError, ValueError):
            pass
    return row


def run_env() -> dict[str, str]:
    """The environment every avi-run gets: this one, this repository first on ``PYTHONPATH``, and
    ``AVI_PARSE_LEAVE_ONE_OUT=1`` unless set (module docstring)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    env.setdefault("AVI_PARSE_LEAVE_ONE_OUT", "1")
    return env


def run_one(q, work: Path, extra: list[str], timeout: float) -> dict:
    """Time one question as its own avi-run process."""
    trace = work / f"{q.qid}.json"
    env = run_env()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(command_for(q, trace, extra), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        row = row_for(q.qid, 124, time.perf_counter() - t0, "", f"timed out after {timeout:g} s")
        row["status"] = "timeout"
        return row
    return row_for(q.qid, proc.returncode, time.perf_counter() - t0, proc.stdout, proc.stderr)


def grade(row: dict, q) -> dict:
    """Add the strict grade of the row's answer (``correct``: True/False, None when the question is not scored;
    ``iou`` for an interval) by the benchmark's own rules; a failed process counts as wrong."""
    from avi.eval.jsonl import grade_jsonl

    g = grade_jsonl(q, row.get("record"))
    row["correct"] = g["correct"] if g["scored"] else None
    if g["iou"] is not None:
        row["iou"] = round(g["iou"], 3)
    return row


def write_out(path: Path | None, rows: list[dict], args, *, partial: bool) -> dict:
    """The run's JSON object (questions, summary, source: the selection, avi-run's extra flags and every ``AVI_*``
    setting of the environment); written to ``path`` (through a temporary file, so a cut leaves the last whole
    one) when given."""
    result = {"questions": rows, "summary": summarize(rows), "partial": partial,
              "source": {"questions": str(args.questions), "split": args.split, "limit": args.limit,
                         "qids": args.qids, "videos": str(args.videos), "extra": args.extra, "repo": str(REPO),
                         "env": {k: v for k, v in sorted(run_env().items()) if k.startswith("AVI_")}}}
    if path:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(result, indent=1, ensure_ascii=False))
        tmp.replace(path)
    return result


def percentile(values: list[float], p: float) -> float | None:
    """The ``p``-th percentile (0-100) by linear interpolation between closest ranks; None for no values."""
    vals = sorted(float(v) for v in values if v is not None)
    if not vals:
        return None
    k = (len(vals) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def summarize(rows: list[dict]) -> dict:
    """p50 and p90 of each metric over the rows that report it, and how many questions ran and failed."""
    out = {"questions": len(rows), "failed": sum(r["status"] != "ok" for r in rows)}
    for m in METRICS:
        vals = [r[m] for r in rows if r.get(m) is not None]
        out[m] = {"p50": _round(percentile(vals, 50)), "p90": _round(percentile(vals, 90)), "n": len(vals)}
    graded = [r["correct"] for r in rows if r.get("correct") is not None]
    out["strict"] = {"right": sum(graded), "scored": len(graded),
                     "accuracy": round(100.0 * sum(graded) / len(graded), 1) if graded else None}
    ious = [r["iou"] for r in rows if r.get("iou") is not None]
    out["interval_miou"] = round(sum(ious) / len(ious), 3) if ious else None
    return out


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


COUNTS = ("llm_calls", "prompt_tokens", "completion_tokens")


def _cell(v, column: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.0f}" if column in COUNTS and v.is_integer() else f"{v:.1f}"
    return str(v)


def format_table(rows: list[dict], summary: dict) -> str:
    """The rows and the p50/p90 lines as a plain-text table."""
    cols = ["qid", "index_s", "answer_s", "exit_s", "llm_calls", "prompt_tokens", "completion_tokens", "correct",
            "status"]
    body = [[_cell(r.get(c), c) for c in cols] for r in rows]
    for p in ("p50", "p90"):
        body.append([p, "", *[_cell(summary[c][p], c) if c in METRICS else "" for c in cols[2:-1]], ""])
    head = [HEADERS[c] for c in cols]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 or i == len(cols) - 1 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    sep = "  ".join("-" * w for w in widths)
    lines = [line(head), sep, *[line(b) for b in body[:len(rows)]], sep, *[line(b) for b in body[len(rows):]]]
    tail = f"\n{summary['questions']} questions, {summary['failed']} failed"
    strict = summary.get("strict") or {}
    if strict.get("scored"):
        tail += f"; strict accuracy {strict['accuracy']:.1f} % ({strict['right']}/{strict['scored']})"
    if summary.get("interval_miou") is not None:
        tail += f"; interval mIoU {summary['interval_miou']:.3f}"
    return "\n".join(lines) + tail


def score_saved(path: Path, args: argparse.Namespace) -> str:
    """avi eval's strict report (:func:`avi.eval.jsonl_report.score_jsonl`) of a saved ``--out`` file: its split
    and limit select the questions again (``--questions``, ``--videos``), each row's ``record`` is its answer; a
    failed row counts as missing (wrong).

    Raises:
        OSError, ValueError: the file cannot be read or is not JSON; KeyError: it has no ``questions``.
    """
    from avi.eval.jsonl_report import format_jsonl_report, score_jsonl

    saved = json.loads(path.read_text())
    source = saved.get("source", {})
    args.split, args.limit = source.get("split", args.split), source.get("limit")
    args.qids = source.get("qids")
    # seconds: each question's avi-run process, start to exit (what the per-route seconds report)
    records = {row["qid"]: {"qid": row["qid"], "seconds": {"agent": row.get("exit_s")}, **row["record"]}
               for row in saved["questions"] if row.get("record")}
    return format_jsonl_report(score_jsonl(select_questions(args), records,
                                           split=None if args.split == "all" else args.split))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(REPO))
    from avi.errors import AviError

    if args.score:
        try:
            print(score_saved(args.score, args))
        except (OSError, ValueError, KeyError, AviError) as exc:
            print(f"bench_latency: {args.score}: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        questions = select_questions(args)
    except AviError as exc:
        print(f"bench_latency: {exc}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="avi-latency-") as tmp:
        work = Path(tmp)
        if args.traces:
            try:
                args.traces.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                print(f"bench_latency: --traces {args.traces}: {exc.strerror or exc}", file=sys.stderr)
                return 2
            work = args.traces
        for i, q in enumerate(questions, 1):
            if not args.json:
                print(f"[{i}/{len(questions)}] {q.qid}", file=sys.stderr, flush=True)
            rows.append(grade(run_one(q, work, args.extra, args.timeout), q))
            if args.out and i < len(questions):
                write_out(args.out, rows, args, partial=True)
    summary = summarize(rows)
    result = write_out(args.out, rows, args, partial=False)
    print(json.dumps(result, ensure_ascii=False) if args.json else format_table(rows, summary))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
