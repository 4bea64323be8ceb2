"""Ablation of the host's answer rules (issue 35): what each rule is worth on a benchmark split, strict scores.

Input: an ``avi eval jsonl`` results file run with every rule on (each record's ``rules`` lists the rules that
changed its answer; its trace's ``rules`` also lists a decide, choose or type rule that answered with the answer
unchanged, which still stops the rules after it). For each rule that acted on at least one question (:func:`acted`),
those questions are run again with that rule alone removed (``--answer-rules=-NAME``); elsewhere removing it
changes nothing, as the rule did not act.
The table gives, per rule: the questions it changed, how many of them are right with it and without it, and the
net (right with - right without). A rule never listed changed no answer on the split: its net is 0.

Usage (the machine to itself; resumable, each rerun is an ordinary ``avi eval jsonl`` results file)::

    .venv/bin/python bench/ablate_rules.py --results bench/results/report_X.jsonl \\
        --annotations bench/questions --out ~/ablation [--videos DIR] [--json]

Caveat: an answer is reproducible only as far as the orchestrator is (greedy decoding; the KV cache may still
move a token), so ``--check N`` reruns N changed questions with every rule on to show the noise.

``--from-traces`` reruns only the rules that answer in place of the model (stages decide, choose, type: without
them the model's own answer must be asked for); for a ``refine`` rule a question's answer without it is the answer
the trace records just before it (``rules[].before``), scored by the same strict rules. That is exact when no
later rule would have acted on that earlier answer, and is the quick estimate; each row says which method gave it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from avi.agent.rules import RULES  # noqa: E402
from avi.config_agent import ANSWER_RULES  # noqa: E402


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file, blank lines skipped."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def annotation_lines(folder: Path) -> dict[str, dict]:
    """``qid -> question line`` of every ``*.jsonl`` under ``folder``."""
    lines = {}
    for f in sorted(folder.glob("*.jsonl")):
        for rec in read_jsonl(f):
            lines[rec["qid"]] = rec
    return lines


def right(rec: dict | None) -> bool:
    """Strict score of one results record (as ``avi eval`` scored it); a missing record is wrong."""
    return bool(rec and (rec.get("score") or {}).get("correct"))


def before_record(rec: dict, rule: str) -> dict | None:
    """``rec`` with its answer fields as the trace recorded them just before ``rule`` changed them (None: the
    trace is gone or does not list the rule)."""
    try:
        trace = json.loads(Path(rec["trace"]).read_text())
    except (OSError, KeyError, TypeError, ValueError):
        return None
    hit = next((r for r in trace.get("rules") or [] if r.get("rule") == rule and r.get("changed")), None)
    if hit is None:
        return None
    out = {**rec, "answer": None, "choice": None, "choices": None, "interval": None, "order": None,
           "cannot_tell": False if rule == "cannot_tell" else rec.get("cannot_tell")}
    out.update(hit.get("before") or {})
    return out


def acted(rec: dict) -> list[str]:
    """The rules that acted on a question: those that changed its answer (``rec["rules"]``) and those of the
    decide, choose and type stages that answered it unchanged (the trace's ``rules``): such an answer still stops
    the rules after it, so removing the rule can change the answer (issue 35: colour_choice answered the model's
    own letter on one report question, and without it option_scores replaced that letter)."""
    names = list(rec.get("rules") or [])
    try:
        trace = json.loads(Path(rec["trace"]).read_text())
    except (OSError, KeyError, TypeError, ValueError):
        return names
    stages = {r.name: r.stage for r in RULES}
    for entry in trace.get("rules") or []:
        name = entry.get("rule")
        if name not in names and stages.get(name) in ("decide", "choose", "type"):
            names.append(name)
    return names


def run_without(rule: str | None, qids: list[str], lines: dict[str, dict], out: Path, videos: str | None) -> Path:
    """Run ``qids`` with ``rule`` removed (None: with every rule) into ``out``; returns the results file."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "questions").mkdir(exist_ok=True)
    (out / "questions" / "q.jsonl").write_text("".join(json.dumps(lines[q]) + "\n" for q in qids))
    results = out / "results.jsonl"
    cmd = [sys.executable, "-m", "avi.cli", "eval", "jsonl", "--annotations", str(out / "questions"),
           "--out", str(results), "--answer-rules=" + (f"-{rule}" if rule else "all")]
    if videos:
        cmd += ["--videos", videos]
    subprocess.run(cmd, check=True, cwd=ROOT)
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the ablation and print (or ``--json``) one row per rule."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, required=True, help="avi eval jsonl results, every rule on")
    p.add_argument("--annotations", type=Path, default=ROOT / "bench" / "questions")
    p.add_argument("--videos", help="the videos folder (avi eval's default when omitted)")
    p.add_argument("--out", type=Path, required=True, help="folder for the reruns (one per rule; resumable)")
    p.add_argument("--check", type=int, default=0, help="also rerun N changed questions with every rule on")
    p.add_argument("--from-traces", action="store_true",
                   help="refine rules: score the answer each trace records before the rule instead of a rerun "
                        "(module docstring)")
    p.add_argument("--json", action="store_true", help="one JSON object per rule")
    args = p.parse_args(argv)

    full = {r["qid"]: r for r in read_jsonl(args.results)}
    lines = annotation_lines(args.annotations)
    changed: dict[str, list[str]] = {name: [] for name in ANSWER_RULES}
    for qid, rec in full.items():
        for name in acted(rec):
            changed.setdefault(name, []).append(qid)
    rows = []
    for name, qids in changed.items():
        row = {"rule": name, "changed": len(qids), "right_with": sum(right(full[q]) for q in qids),
               "right_without": 0, "qids": qids}
        stage = next(r.stage for r in RULES if r.name == name)
        if qids and args.from_traces and stage == "refine":
            from avi.eval.jsonl import grade_jsonl, load_jsonl

            questions = {q.qid: q for q in load_jsonl(args.annotations, Path("."))}
            row["method"] = "trace"
            for q in qids:
                before = before_record(full[q], name)
                row["right_without"] += bool(before and grade_jsonl(questions[q], before).get("correct"))
        elif qids:
            row["method"] = "rerun"
            without = {r["qid"]: r for r in read_jsonl(run_without(name, qids, lines, args.out / name, args.videos))}
            row["right_without"] = sum(right(without.get(q)) for q in qids)
        row["net"] = row["right_with"] - row["right_without"]
        rows.append(row)
    if args.check:
        sample = sorted({q for qids in changed.values() for q in qids})[:args.check]
        again = {r["qid"]: r for r in read_jsonl(run_without(None, sample, lines, args.out / "_all_again",
                                                              args.videos))}
        same = sum(right(again.get(q)) == right(full[q]) for q in sample)
        print(f"noise check: {same} of {len(sample)} questions scored the same when rerun with every rule on",
              file=sys.stderr)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"{'rule':20s} {'changed':>7s} {'right with':>10s} {'without':>8s} {'net':>4s}  method")
    for row in rows:
        print(f"{row['rule']:20s} {row['changed']:7d} {row['right_with']:10d} {row['right_without']:8d} "
              f"{row['net']:+4d}  {row.get('method', '-')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
