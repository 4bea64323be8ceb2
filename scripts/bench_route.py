#!/usr/bin/env python
"""The perception memory's route alone, per question of a benchmark split (issue 53): parse, check, evaluate,
route; the host's answers scored strictly; no agent step.

For each question (one process, indexes built first with ``avi index``): the question is read as the agent reads
it, the orchestrator parses it into a typed query (the parse's examples leave out the question's own bank pair,
as ``scripts/bench_latency.py`` runs it), :func:`avi.agent.memory_check.check_query` grounds it,
:func:`avi.memory.evaluate.evaluate` runs it on the video's ``memory.sqlite`` and
:func:`avi.agent.memory_route.decide` takes the route. A question the host answers is scored by the benchmark's
strict rules (``avi.eval.jsonl.grade_jsonl``) on the host's answer, exactly what ``avi-run`` would deliver with
``memory_route`` on; a question routed to the agent is only listed (with ``memory_observation`` off the agent then
runs as without the route, so its answer is the route-off run's).

Prints per route: questions, host answers right, parse seconds p50/p90; then one line per question (route, reason,
query, answer). ``--out`` writes the JSON (written after every question). Run it alone on the machine.

``--agent-from RUN --composite FILE``: the whole run with the route on, from this run and a route-off
``scripts/bench_latency.py --out`` run ``RUN`` of the same questions (same commit, route off, none partial):
a host row takes the host's answer, an agent row the route-off answer (with ``memory_observation`` off the agent
runs as without the route); seconds: a host row the route's seconds plus the route-off process's time outside
answering (start, index load: ``exit_s - answer_s``), an agent row the route-off ``exit_s`` plus the route's
seconds. FILE is in ``bench_latency.py --out`` form (``"composite": true``), so ``bench_latency.py --score FILE``
prints the strict table per type and per route.

    .venv/bin/python scripts/bench_route.py --split tune --out route_tune.json
    .venv/bin/python scripts/bench_route.py --split tune --agent-from off.json --composite on.json
    .venv/bin/python scripts/bench_latency.py --score on.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_latency import DEFAULT_VIDEOS, percentile, select_questions, summarize  # noqa: E402


def load_run(path: Path) -> dict:
    """A route-off ``bench_latency.py --out`` run, as ``{qid: row}``.

    Raises:
        ValueError: the file is not such a run: not JSON, partial, run with the memory route on, or without rows.
    """
    try:
        saved = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read as a bench_latency run ({exc})") from exc
    if not isinstance(saved, dict) or not isinstance(saved.get("questions"), list):
        raise ValueError(f"{path}: not a bench_latency --out file (no questions)")
    if saved.get("partial"):
        raise ValueError(f"{path}: a partial run (it stopped before its last question)")
    env = (saved.get("source") or {}).get("env") or {}
    if str(env.get("AVI_MEMORY_ROUTE", "")).lower() in ("1", "true", "yes", "on") or saved.get("composite"):
        raise ValueError(f"{path}: run with the memory route on; the agent rows need a route-off run")
    return {row["qid"]: row for row in saved["questions"]}


def composite(rows: list[dict], off: dict[str, dict]) -> list[dict]:
    """The route-on rows of the whole run (module docstring) from this run's ``rows`` and the route-off ``off``.

    Raises:
        ValueError: a question of ``rows`` has no row in ``off``.
    """
    missing = [r["qid"] for r in rows if r["qid"] not in off]
    if missing:
        raise ValueError(f"the route-off run has no row for {', '.join(missing)}")
    out = []
    for r in rows:
        base = off[r["qid"]]
        row = {k: v for k, v in base.items() if k not in ("record", "correct", "iou")}
        record = dict(base.get("record") or {"status": base.get("status")})
        outside = (base.get("exit_s") or 0.0) - (base.get("answer_s") or 0.0)
        if r["route"] == "host":
            record.update(status="ok", answer=r["answer"], choice=r.get("choice"), interval=r.get("interval"),
                          cannot_tell=False, route="host")
            row.update(status="ok", answer=r["answer"], answer_s=r["seconds"], llm_calls=1,
                       exit_s=round(r["seconds"] + max(outside, 0.0), 2), correct=r["correct"])
            if r.get("iou") is not None:
                row["iou"] = round(r["iou"], 3)
        else:
            if base.get("record"):
                record["route"] = "agent"
            row.update(exit_s=round((base.get("exit_s") or 0.0) + r["seconds"], 2),
                       off_exit_s=base.get("exit_s"), correct=base.get("correct"))
            if base.get("iou") is not None:
                row["iou"] = base["iou"]
        row.update(record=record, route=r["route"], route_s=r["seconds"], off_correct=base.get("correct"))
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=Path, default=REPO / "bench" / "questions")
    p.add_argument("--split", default="tune", help="the questions' split (default tune; 'all' for every one)")
    p.add_argument("--qids", help="only these questions (comma-separated ids)")
    p.add_argument("--limit", type=int, help="the first N questions of the selection")
    p.add_argument("--videos", type=Path, default=DEFAULT_VIDEOS)
    p.add_argument("--out", type=Path, help="write the JSON object here (after every question)")
    p.add_argument("--agent-from", type=Path, metavar="RUN",
                   help="a route-off bench_latency.py --out run of the same questions (with --composite)")
    p.add_argument("--composite", type=Path, metavar="FILE",
                   help="write the whole route-on run here, in bench_latency --out form (needs --agent-from)")
    args = p.parse_args(argv)
    if (args.agent_from is None) != (args.composite is None):
        p.error("--agent-from and --composite go together")
    off: dict[str, dict] = {}
    if args.agent_from is not None:
        try:
            off = load_run(args.agent_from)
        except ValueError as exc:
            print(f"bench_route: {exc}", file=sys.stderr)
            return 2

    from avi.agent.loop import Agent
    from avi.agent.memory_step import memory_step
    from avi.backends import Backends
    from avi.config import Settings
    from avi.errors import AviError
    from avi.eval.jsonl import grade_jsonl
    from avi.pipeline import orchestrator, prepare
    from avi.prompts import PromptLibrary
    from avi.questions import clean_question
    from avi.tools import ToolContext
    from avi.trace import Trace
    from avi.video.decode import VideoReader

    try:
        questions = select_questions(args)
        if off:
            lacking = [q.qid for q in questions if q.qid not in off]
            if lacking:
                raise ValueError(f"{args.agent_from}: no row for {', '.join(lacking)}")
        settings = Settings.load(memory_route=True, parse_leave_one_out=True)
    except (AviError, ValueError) as exc:
        print(f"bench_route: {exc}", file=sys.stderr)
        return 2
    backends = Backends(settings)
    llm = orchestrator(backends)
    prompts = PromptLibrary(settings.prompts_dir)
    prepared: dict[str, object] = {}
    rows: list[dict] = []
    for i, jq in enumerate(questions, 1):
        print(f"[{i}/{len(questions)}] {jq.qid}", file=sys.stderr, flush=True)
        key = str(jq.video)
        if key not in prepared:
            prepared[key] = prepare(Path(jq.video), settings, backends, progress=False)
        pv = prepared[key]
        ctx = ToolContext(settings=settings, index=pv.index, video=VideoReader(pv.info, settings.max_side),
                          backends=backends)
        agent = Agent(llm, ctx, prompts, settings)
        question = clean_question(jq.question, settings.question_max_chars)
        t0 = time.perf_counter()
        routed = memory_step(llm, prompts, ctx, agent.parse(question), Trace(question=question))
        seconds = time.perf_counter() - t0
        row = {"qid": jq.qid, "route": routed.route, "reason": routed.reason, "seconds": round(seconds, 2),
               "query": None if routed.parse is None or routed.parse.query is None
               else routed.parse.query.model_dump(mode="json", exclude_defaults=True),
               "answer": None, "correct": None}
        if routed.route == "host" and routed.answer is not None:
            a = routed.answer
            record = {"status": "ok", "answer": a.text, "choice": a.choice, "interval": a.interval,
                      "cannot_tell": False}
            g = grade_jsonl(jq, record)
            row.update(answer=a.text, choice=a.choice, interval=a.interval,
                       correct=g["correct"] if g["scored"] else None, iou=g["iou"])
        rows.append(row)
        if args.out:
            args.out.write_text(json.dumps({"questions": rows, "split": args.split,
                                            "partial": i < len(questions)}, indent=1, ensure_ascii=False))
    host = [r for r in rows if r["route"] == "host"]
    right = sum(1 for r in host if r["correct"])
    secs = [r["seconds"] for r in rows]
    print(f"questions {len(rows)}; host route {len(host)} ({right} right); agent route "
          f"{sum(r['route'] == 'agent' for r in rows)}; route seconds p50 {percentile(secs, 50)} "
          f"p90 {percentile(secs, 90)}")
    if args.composite:
        whole = composite(rows, off)
        summary = summarize(whole)
        summary.update(right=sum(bool(r["correct"]) for r in whole),
                       off_right=sum(bool(r["off_correct"]) for r in whole))
        args.composite.write_text(json.dumps(
            {"questions": whole, "summary": summary, "partial": False, "composite": True,
             "source": {"questions": str(args.questions), "split": args.split, "limit": args.limit,
                        "qids": args.qids, "videos": str(args.videos), "route_run": str(args.out or ""),
                        "agent_from": str(args.agent_from)}}, indent=1, ensure_ascii=False))
        print(f"composite: {summary['right']} right with the route, {summary['off_right']} without "
              f"({len(whole)} questions) -> {args.composite}")
    for r in rows:
        mark = {True: "right", False: "wrong", None: "-"}[r["correct"]] if r["route"] == "host" else ""
        print(f"{r['qid']:<18} {r['route']:<5} {mark:<5} {str(r['answer'] or '')[:40]:<40} {r['reason'][:70]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
