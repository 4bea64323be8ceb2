"""bench/ablate_rules.py (issue 35): a refine rule's answer without it is read from the trace and scored strictly."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("ablate_rules", ROOT / "bench" / "ablate_rules.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_refine_rule_is_scored_from_the_answer_before_it(tmp_path, capsys):
    ab = _module()
    ann = tmp_path / "questions"
    ann.mkdir()
    (ann / "q.jsonl").write_text(json.dumps({"qid": "q1", "video": "v.mp4", "question": "When is the sign shown?",
                                             "type": "interval", "answer": [10.0, 20.0]}) + "\n"
                                 + json.dumps({"qid": "q2", "video": "v.mp4", "question": "What colour is the car?",
                                               "type": "text", "answer": ["red"]}) + "\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "q1.json").write_text(json.dumps({"rules": [
        {"rule": "event_interval", "before": {"answer": "[2.0s, 5.0s]", "interval": [2.0, 5.0]},
         "after": {"answer": "[10.0s, 20.0s]", "interval": [10.0, 20.0]}, "changed": True}]}))
    (traces / "q2.json").write_text(json.dumps({"rules": [
        {"rule": "cannot_tell", "before": {"answer": "red"},
         "after": {"answer": "Cannot tell on this profile; a guess: red"}, "changed": True}]}))
    results = tmp_path / "results.jsonl"
    rows = [{"qid": "q1", "status": "ok", "answer": "[10.0s, 20.0s]", "interval": [10.0, 20.0], "rules": ["event_interval"],
             "trace": str(traces / "q1.json"), "score": {"correct": True}},
            {"qid": "q2", "status": "ok", "answer": "Cannot tell on this profile; a guess: red", "cannot_tell": True,
             "rules": ["cannot_tell"], "trace": str(traces / "q2.json"), "score": {"correct": False}}]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ab.main(["--results", str(results), "--annotations", str(ann), "--out", str(tmp_path / "out"),
                    "--from-traces", "--json"]) == 0
    got = {r["rule"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    row = got["event_interval"]
    assert (row["right_with"], row["right_without"], row["net"]) == (1, 0, 1)
    assert (got["cannot_tell"]["right_with"], got["cannot_tell"]["right_without"], got["cannot_tell"]["net"]) == (0, 1, -1)
    assert got["cuts"]["changed"] == 0 and got["cuts"]["net"] == 0
    assert not (tmp_path / "out").exists()  # nothing was rerun


def test_a_decide_rule_that_answered_unchanged_has_acted(tmp_path):
    """A measured answer equal to the model's still stops option_scores and the rules after it: the ablation must
    rerun that question without it (issue 35: a colour rule on one report question); a refine rule's unchanged
    entry is no act (a refine rule only records when it changes the answer)."""
    ab = _module()
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"rules": [
        {"rule": "cuts", "before": {"answer": "D. red", "choice": "D"},
         "after": {"answer": "D. red", "choice": "D"}, "changed": False},
        {"rule": "cannot_tell", "before": {"answer": "x"}, "after": {"answer": "x"}, "changed": False}]}))
    assert ab.acted({"rules": [], "trace": str(trace)}) == ["cuts"]
    assert ab.acted({"rules": ["event_interval"], "trace": str(tmp_path / "gone.json")}) == ["event_interval"]
