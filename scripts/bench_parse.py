#!/usr/bin/env python3
"""Parse accuracy of the memory route's query parser (issue 53, item 6) on the labelled question -> query pairs
(``prompts/memory_examples.jsonl``: ``tune`` questions and invented ones, never ``report``), leave-one-out: each
question is parsed with the bank's other pairs as its retrievable examples, so no question sees its own label.

The parse is the model's decoding checked against the question's words (:func:`avi.agent.memory_check.check_query`,
what the memory route uses); the model's decoding alone is reported beside it. A query the check refuses goes to
the agent: it counts as right only where the label is ``unsupported`` (the agent answers those too). A field is
right when the value equals the label (unset = the field's default; ``noun`` and ``pattern``
are compared as word sets after lower-casing, ``pattern`` right when every labelled word is in the parse and at
most two more, or the parse holds some of them and no other: a broader match; ``label`` right also for another
class the same word names, as "van" names car and truck); a parse is right when ``target``, ``label``, ``op``, ``pattern``, ``colour``, the person
attributes, ``region`` and ``compare`` are all right (``noun`` is reported, not required: it is the question's
own words and feeds no evaluator).

    .venv/bin/python scripts/bench_parse.py [--limit N] [--json] [--out FILE] [--pairs HELDOUT.jsonl]

``--pairs``: labelled pairs kept out of the bank (``bench/memory/heldout.jsonl``), each parsed with the whole bank
as its examples: the parse and its checks on questions no check was written from.

Prints per-field accuracy, the whole-parse accuracy, seconds per parse (p50/p90) and each wrong parse.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIELDS = ("target", "label", "op", "pattern", "colour", "posture", "arms_raised", "expression", "holding", "region",
          "compare")


def _words(v) -> set[str]:
    import re

    return set(re.findall(r"[a-z0-9]+", str(v or "").lower()))


def field_right(name: str, want, got) -> bool:
    if name == "pattern":  # the labelled words and at most two more, or a part of them (a broader match)
        w, g = _words(want), _words(got)
        return (not w and not g) or (bool(w) and w <= g and len(g - w) <= 2) or (bool(g) and g < w)
    if name == "noun":
        return bool(_words(want) & _words(got)) or (not want and not got)
    if name == "label":  # the same class, or two classes the same word names ("van": car or truck)
        from avi.backends.coco_detector import SYNONYMS

        same = any({want, got} <= set(v) for v in SYNONYMS.values())
        return (want or None) == (got or None) or ({want, got} <= {None, "other"}) or same
    return want == got


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO))
    from avi.agent.memory_check import check_query
    from avi.agent.question import parse_question
    from avi.backends import Backends
    from avi.config import Settings
    from avi.memory.parse import QueryParser, load_bank
    from avi.memory.query import MemoryQuery
    from avi.prompts import PromptLibrary

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="only the first N pairs")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--out", type=Path, help="also write the JSON object here")
    ap.add_argument("--pairs", type=Path, metavar="JSONL",
                    help="measure on these labelled pairs instead (held out: none may be in the bank; each is parsed "
                         "with the whole bank as its examples)")
    args = ap.parse_args(argv)
    settings = Settings()
    prompts = PromptLibrary(settings.prompts_dir)
    bank = load_bank(Path(settings.prompts_dir) / "memory_examples.jsonl")
    if args.pairs is not None:
        try:
            held = load_bank(args.pairs)  # the bank's format: one {"question", "query"} per line
        except (OSError, ValueError) as exc:
            print(f"bench_parse: {args.pairs}: cannot be read as JSONL pairs ({exc})", file=sys.stderr)
            return 2
        known = {b["question"].strip().lower() for b in bank}
        inside = [h["question"] for h in held if h["question"].strip().lower() in known]
        if inside:
            print(f"bench_parse: {len(inside)} held-out question(s) are in the bank: {inside[0]!r}", file=sys.stderr)
            return 2
        bank_pairs = held
    else:
        bank_pairs = bank
    pairs = bank_pairs[: args.limit] if args.limit else bank_pairs
    backends = Backends(settings)
    try:
        parser = QueryParser(prompts, backends.embedder, list(getattr(backends.detector, "class_list", None) or []))
        llm = backends.llm
        rows, seconds = [], []
        for i, pair in enumerate(pairs, 1):
            q = parse_question(pair.get("text") or pair["question"], 600.0)
            t0 = time.perf_counter()
            got = parser.parse(llm, q, 600.0, exclude=pair["question"])
            seconds.append(time.perf_counter() - t0)
            want = MemoryQuery.model_validate({"label": None, "pattern": None, "colour": None, **pair["query"],
                                               "time": {}}).model_dump(mode="json", exclude={"time"})
            decoded = {} if got.query is None else got.query.model_dump(mode="json", exclude={"time"})
            checked, notes = (None, [got.error]) if got.query is None else check_query(got.query, q, parser.vocabulary)
            have = {} if checked is None else checked.model_dump(mode="json", exclude={"time"})
            if checked is None and want["op"] == "unsupported":
                have = dict(want)  # a query that cannot stand goes to the agent, as an unsupported one does
            fields = {f: field_right(f, want.get(f), have.get(f)) if have else False for f in (*FIELDS, "noun")}
            model = {f: field_right(f, want.get(f), decoded.get(f)) if decoded else False for f in FIELDS}
            rows.append({"question": pair["question"], "source": pair.get("source"), "want": want,
                         "decoded": decoded or None, "got": have or None, "checks": notes, "error": got.error,
                         "fields": fields, "right": all(fields[f] for f in FIELDS),
                         "model_right": all(model.values()), "seconds": round(seconds[-1], 2)})
            if not args.json:
                print(f"[{i}/{len(pairs)}] {'ok ' if rows[-1]['right'] else 'BAD'} {seconds[-1]:5.1f}s "
                      f"{pair['question'][:80]}", file=sys.stderr, flush=True)
    finally:
        backends.close()
    n = len(rows)
    per_field = {f: round(100 * sum(r["fields"][f] for r in rows) / n, 1) for f in (*FIELDS, "noun")}
    summary = {"pairs": n, "right": sum(r["right"] for r in rows),
               "accuracy": round(100 * sum(r["right"] for r in rows) / n, 1), "per_field": per_field,
               "model_alone": round(100 * sum(r["model_right"] for r in rows) / n, 1),
               "seconds_p50": round(statistics.median(seconds), 2),
               "seconds_p90": round(sorted(seconds)[int(0.9 * (n - 1))], 2),
               "tune": round(100 * sum(r["right"] for r in rows if r["source"] != "invented")
                             / max(1, sum(r["source"] != "invented" for r in rows)), 1),
               "invented": round(100 * sum(r["right"] for r in rows if r["source"] == "invented")
                                 / max(1, sum(r["source"] == "invented" for r in rows)), 1)}
    report = {"summary": summary, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(f"parse accuracy (leave-one-out, checked against the question): {summary['accuracy']} % "
          f"({summary['right']} of {n}; the model's decoding alone {summary['model_alone']} %); tune questions "
          f"{summary['tune']} %, invented {summary['invented']} %; seconds p50 {summary['seconds_p50']}, "
          f"p90 {summary['seconds_p90']}")
    print("per field: " + ", ".join(f"{k} {v}" for k, v in per_field.items()))
    for r in rows:
        if not r["right"]:
            bad = [f for f in FIELDS if not r["fields"][f]]
            print(f"- {r['question'][:90]}\n    wrong: {', '.join(bad)}; want {json.dumps({f: r['want'].get(f) for f in bad})}"
                  f" got {json.dumps({f: (r['got'] or {}).get(f) for f in bad})}{' (' + r['error'] + ')' if r['error'] else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
