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

    .venv/bin/python scripts/bench_route.py --split tune --out route_tune.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_latency import DEFAULT_VIDEOS, percentile, select_questions  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=Path, default=REPO / "bench" / "questions")
    p.add_argument("--split", default="tune", help="the questions' split (default tune; 'all' for every one)")
    p.add_argument("--qids", help="only these questions (comma-separated ids)")
    p.add_argument("--limit", type=int, help="the first N questions of the selection")
    p.add_argument("--videos", type=Path, default=DEFAULT_VIDEOS)
    p.add_argument("--out", type=Path, help="write the JSON object here (after every question)")
    args = p.parse_args(argv)

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
        settings = Settings.load(memory_route=True, parse_leave_one_out=True)
    except AviError as exc:
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
            row.update(answer=a.text, correct=g["correct"] if g["scored"] else None, iou=g["iou"])
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
    for r in rows:
        mark = {True: "right", False: "wrong", None: "-"}[r["correct"]] if r["route"] == "host" else ""
        print(f"{r['qid']:<18} {r['route']:<5} {mark:<5} {str(r['answer'] or '')[:40]:<40} {r['reason'][:70]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
