"""The benchmark scripts' checks (scripts/bench_cpu.py, scripts/bench_batch.py): truths not from avi, strict rules."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _script(name: str):
    sys.path.insert(0, str(REPO / "scripts"))
    spec = importlib.util.spec_from_file_location(f"bench_script_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench_cpu():
    return _script("bench_cpu")


def test_bench_cpu_truths_come_from_the_specs_and_from_people(bench_cpu):
    cases = bench_cpu.cases()
    real = {json.loads(x)["qid"]: json.loads(x) for x in (REPO / "bench/questions/real.jsonl").read_text().splitlines()
            if x.strip()}
    vtest = [c for c in cases if c.video == "vtest"]
    assert vtest and all(c.source.split(":")[0] in real for c in vtest)
    for c in vtest:  # the person's truth, word for word
        assert real[c.source.split(":")[0]]["answer"] == c.truth and real[c.source.split(":")[0]]["question"] == c.question
    assert all(c.source.startswith("spec:") for c in cases if c.video != "vtest")
    by_q = {c.question: c for c in cases}
    assert by_q["When is the EXIT sign on screen? Answer with a time span."].truth == [4.0, 9.0]
    assert by_q["At what second does the scene change?"].truth == 10.0


def test_bench_cpu_rules_can_fail(bench_cpu):
    by_kind = {c.kind: c for c in bench_cpu.cases()}
    count, span, cut = by_kind["number"], by_kind["interval"], by_kind["time"]
    assert bench_cpu.judge(count, f"About {count.truth} people.", None, None)[0]
    assert not bench_cpu.judge(count, f"{count.truth + 1} or {count.truth}", None, None)[0]  # the first number counts
    # interval by IoU >= 0.5 with the truth [4, 9]: a range merely covering it is wrong
    assert not bench_cpu.judge(span, None, None, [0.0, 20.0])[0]
    assert bench_cpu.judge(span, None, None, [4.5, 9.0]) == (True, 0.9)
    assert not bench_cpu.judge(span, None, None, None)[0]
    assert not bench_cpu.judge(cut, "Between 0 and 10 s, at 9.4", None, None)[0]  # the first number, 0, is read
    assert bench_cpu.judge(cut, "At 10.4 s.", None, None)[0]
    assert not bench_cpu.judge(cut, "At 10.6 s.", None, None)[0]


def test_bench_batch_matches_anchored_truths():
    bench_batch = _script("bench_batch")
    right = bench_batch.is_right
    assert right("DOCK 3", "3") and right("The sign says dock 3.", "3") and right("(2)", "2")
    assert right("It reads EXIT.", "EXIT")
    for answer, truth in [("It says 13", "3"), ("3.5", "3"), ("DOCK 35", "3"), ("Level 12", "2"), ("2.0", "2"),
                          ("EXITS", "EXIT"), ("0.3", "3"), ("7B", "7"), (None, "3")]:
        assert not right(answer, truth), (answer, truth)


def test_machine_facts_are_read_from_the_machine():
    machine = _script("machine")
    facts = machine.machine_facts()
    assert facts["cpus"] >= 1 and 1 <= facts["usable_cpus"] <= facts["cpus"]
    assert facts["memory_gib"] > 0 and facts["python"] == ".".join(map(str, sys.version_info[:3]))
    assert f"{facts['usable_cpus']} CPUs usable of {facts['cpus']}" in machine.machine_line()


def test_bench_index_profile_times_calls_and_tokens():
    bench_index = _script("bench_index")

    class Thing:
        def read(self, x):
            return x

        def chat(self, x):
            from avi.backends.llm import ChatResult
            return ChatResult(content="", prompt_tokens=7, completion_tokens=3, seconds=0.0)

    prof, thing = bench_index.Profile(), Thing()
    prof.wrap(thing, "read", "ocr")
    prof.wrap(thing, "chat", "llm")
    prof.wrap(thing, "missing", "nothing")  # a backend without the method is left alone
    assert thing.read(5) == 5 and thing.read(6) == 6 and thing.chat(1).prompt_tokens == 7
    assert prof.calls == {"ocr": 2, "llm": 1} and prof.tokens == {"prompt": 7, "completion": 3}
    assert any(line.startswith("  ocr: ") and "in 2 calls" in line for line in prof.lines())
