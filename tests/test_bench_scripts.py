"""The benchmark scripts' checks (scripts/bench_cpu.py, scripts/bench_batch.py, bench_latency.py, bench_prefill.py):
truths not from avi, strict rules, what they print."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import sample_video

from avi.errors import AviError

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


# ----------------------------------------------------------------- scripts/bench_latency.py (issue 38)


@pytest.fixture(scope="module")
def bench_latency():
    return _script("bench_latency")


def _latency_questions(tmp_path: Path) -> Path:
    rows = [{"qid": f"q{i}", "video": "a.mp4" if i % 2 else "b.mp4", "question": f"Question {i}?", "type": "text",
             "answer": ["x"], "split": "report" if i < 3 else "tune"} for i in range(5)]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bench_latency_arguments_and_selection(bench_latency, tmp_path):
    args = bench_latency.parse_args([])
    assert args.split == "report" and args.limit is None and args.extra == [] and not args.json
    assert args.videos == Path.home() / ".cache" / "avi" / "devbench" / "videos"
    assert args.questions == REPO / "bench" / "questions"
    qfile = _latency_questions(tmp_path)
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path), "--limit", "2", "--json",
                                     "--", "--answer-rules", "none"])
    assert args.extra == ["--answer-rules", "none"] and args.json
    picked = bench_latency.select_questions(args)
    assert [q.qid for q in picked] == ["q0", "q1"] and picked[0].video == tmp_path / "b.mp4"
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path), "--split", "all"])
    assert len(bench_latency.select_questions(args)) == 5
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path), "--split", "all",
                                     "--qids", "q4, q1", "--traces", str(tmp_path / "kept")])
    assert [q.qid for q in bench_latency.select_questions(args)] == ["q1", "q4"]  # the split's order
    assert args.traces == tmp_path / "kept"
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path), "--qids", "q4"])
    with pytest.raises(AviError, match="q4"):  # q4 is a tune question, not in the report split
        bench_latency.select_questions(args)
    with pytest.raises(SystemExit):
        bench_latency.parse_args(["--limit", "0"])
    argv = bench_latency.command_for(picked[1], tmp_path / "t.json", ["--answer-rules", "none"])
    assert argv[:2] == [sys.executable, "-c"] and "run_main" in argv[2]
    assert argv[3:] == ["--video", str(tmp_path / "a.mp4"), "--question", "Question 1?", "--json", "--quiet",
                        "--trace", str(tmp_path / "t.json"), "--answer-rules", "none"]


def test_bench_latency_rows_percentiles_and_table(bench_latency, tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"steps": [
        {"kind": "tool_call", "llm_seconds": 2.0, "prompt_tokens": 900, "completion_tokens": 30},
        {"kind": "tool_call", "llm_seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0},  # host step
        {"kind": "final_answer", "llm_seconds": 1.0, "prompt_tokens": 300, "completion_tokens": 4,
         "observation_data": {"permutations": [{}, {}, {}, {}], "prior_permutations": []}}]}))
    out = {"answer": "EXIT 42", "seconds": {"index": 1.5, "agent": 20.0, "total": 21.5},
           "telemetry": {"prompt_tokens": 1200, "completion_tokens": 34, "llm_replies": 2}, "trace": str(trace)}
    row = bench_latency.row_for("q0", 0, 23.04, "avi: progress\n" + json.dumps(out) + "\n")
    assert row["status"] == "ok" and row["answer_s"] == 21.5 and row["exit_s"] == 23.04 and row["index_s"] == 1.5
    assert row["llm_calls"] == 5 and row["prompt_tokens"] == 1200 and row["completion_tokens"] == 34
    failed = bench_latency.row_for("q1", 3, 4.0, "", "avi: error: the LLM server is unreachable\n")
    assert failed["status"] == "exit 3" and failed["answer_s"] is None and "unreachable" in failed["error"]
    rows = [row, dict(row, qid="q2", answer_s=31.5, exit_s=33.0, llm_calls=7), failed]
    summary = bench_latency.summarize(rows)
    assert summary["questions"] == 3 and summary["failed"] == 1
    assert summary["answer_s"] == {"p50": 26.5, "p90": 30.5, "n": 2}
    assert summary["exit_s"]["n"] == 3 and summary["exit_s"]["p50"] == 23.04
    assert bench_latency.percentile([], 50) is None and bench_latency.percentile([7], 90) == 7.0
    table = bench_latency.format_table(rows, summary)
    lines = table.splitlines()
    assert lines[0].split() == ["question", "index", "s", "answer", "s", "exit", "s", "LLM", "calls", "prompt",
                                "tok", "gen", "tok", "right", "status"]
    assert any(x.startswith("q1") and x.rstrip().endswith("exit 3") for x in lines)
    p50 = next(x for x in lines if x.startswith("p50")).split()
    assert p50 == ["p50", "26.5", "23.0", "6", "1200", "34"]
    assert lines[-1] == "3 questions, 1 failed"


def test_bench_latency_grades_answers_strictly(bench_latency, tmp_path):
    """Each row is graded by the benchmark's strict rules; a failed process is wrong; accuracy in the summary."""
    qfile = _latency_questions(tmp_path)
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path), "--split", "all"])
    qs = bench_latency.select_questions(args)[:3]
    said = [bench_latency.row_for(q.qid, 0, 1.0, json.dumps({"answer": a, "seconds": {"total": 1.0}}))
            for q, a in zip(qs[:2], ["x", "something else"])]
    rows = [bench_latency.grade(r, q) for r, q in zip(said, qs)]
    rows.append(bench_latency.grade(bench_latency.row_for(qs[2].qid, 3, 1.0, "", "boom"), qs[2]))
    assert [r["correct"] for r in rows] == [True, False, False]
    summary = bench_latency.summarize(rows)
    assert summary["strict"] == {"right": 1, "scored": 3, "accuracy": 33.3} and summary["interval_miou"] is None
    assert "strict accuracy 33.3 % (1/3)" in bench_latency.format_table(rows, summary).splitlines()[-1]


def test_bench_latency_scores_a_saved_run_by_type(bench_latency, tmp_path, capsys):
    """--score FILE re-selects the saved run's split and prints avi eval's strict report from each row's record; a
    failed row counts as missing; an unreadable file is a one-line error, exit 2."""
    qfile = _latency_questions(tmp_path)
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path)])
    qs = bench_latency.select_questions(args)
    rows = [bench_latency.row_for(q.qid, 0, 1.0, json.dumps({"answer": a, "seconds": {"total": 1.0}}))
            for q, a in zip(qs[:2], ["x", "y"])] + [bench_latency.row_for(qs[2].qid, 3, 1.0, "", "boom")]
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"questions": rows, "source": {"split": "report", "limit": None}}))
    argv = ["--questions", str(qfile), "--videos", str(tmp_path), "--score", str(saved)]
    assert bench_latency.main(argv) == 0
    out = capsys.readouterr().out
    assert "split report: 3 questions" in out and "answered 2, failed 0, missing 1" in out
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert overall.split()[1] == "33.3"
    (tmp_path / "bad.json").write_text("{")
    assert bench_latency.main(["--score", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_bench_latency_times_a_process(bench_latency, tmp_path, monkeypatch):
    """run_one on a stand-in for avi-run that prints the JSON avi-run would (no model, no video)."""
    out = {"answer": "B", "seconds": {"index": 0.1, "total": 0.2}, "telemetry": {"prompt_tokens": 10,
                                                                              "completion_tokens": 2,
                                                                              "llm_replies": 1}, "trace": None}
    monkeypatch.setattr(bench_latency, "RUN_MAIN", f"import json, sys; print(json.dumps({out!r}))")
    qfile = _latency_questions(tmp_path)
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path), "--limit", "1"])
    row = bench_latency.run_one(bench_latency.select_questions(args)[0], tmp_path, [], 60)
    assert row["status"] == "ok" and row["answer_s"] == 0.2 and row["llm_calls"] == 1 and row["exit_s"] > 0


def test_bench_prefill_reports_both_speeds_of_a_real_gguf(capsys):
    """scripts/bench_prefill.py on the test setup's SmolLM2 GGUF: the prompt it was asked for, positive speeds and
    the build's system info; a missing GGUF is a one-line error, exit 2."""
    from avi.config import Settings
    from avi.weights import resolve

    s = Settings()
    gguf = resolve("smollm2-135m-instruct", s.models_dir, s.weights_lock)
    bench = _script("bench_prefill")
    assert bench.main(["--gguf", str(gguf), "--tokens", "64", "--decode", "4", "--repeats", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prompt_tokens"] == 64 and out["decode_tokens"] == 4
    assert out["prefill_tok_s"] > 0 and out["decode_tok_s"] > 0 and "AVX" in out["system_info"]
    assert bench.main(["--gguf", "/nonexistent.gguf"]) == 2
    assert "no GGUF" in capsys.readouterr().err


def test_bench_people_matching_scores_ignore_regions_and_thresholds():
    b = _script("bench_people")
    truths = [(0, 0, 10, 10), (20, 0, 30, 10)]
    dets = [((0, 0, 10, 10), 0.9), ((0, 0, 10, 10), 0.8), ((50, 50, 60, 60), 0.7), ((100, 0, 110, 10), 0.6),
            ((21, 1, 29, 9), 0.1)]
    iou = lambda d, t: b.iou_match(d, t, 0.5)  # noqa: E731
    # the duplicate is a false positive, the box at (100, 0) lies in an ignore region, the low one is dropped
    assert b.score_frame(dets, truths, [(95, 0, 120, 20)], iou, 0.5) == (1, 2, 2)
    assert b.score_frame(dets, truths, [(95, 0, 120, 20)], iou, 0.05) == (2, 2, 2)
    assert b.centre_inside((4, 4, 6, 6), (0, 0, 10, 10)) and not b.centre_inside((9, 9, 30, 30), (0, 0, 10, 10))
    assert b.precision_recall([(1, 2, 2), (3, 0, 4)]) == {"precision": 0.667, "recall": 0.667, "tp": 4, "fp": 2,
                                                           "truth": 6}
    assert b.precision_recall([(0, 0, 0)])["precision"] is None


def test_bench_people_scores_the_real_models_on_labelled_frames(tmp_path, capsys):
    """scripts/bench_people.py on the labelled frames of two sample videos (carphone: faces and a seated man;
    vtest: walkers): every labelled box is counted as truth, BlazeFace finds most carphone faces at avi's
    threshold, and the figures land in the JSON file."""
    videos = tmp_path / "videos"
    videos.mkdir()
    for name in ("carphone_pristine.mp4", "vtest.avi"):
        (videos / name).symlink_to(sample_video(name))
    rows = [line for line in (REPO / "bench" / "people" / "frames.jsonl").read_text().splitlines()
            if json.loads(line)["video"] in ("carphone_pristine.mp4", "vtest.avi")]
    frames = tmp_path / "frames.jsonl"
    frames.write_text("\n".join(rows) + "\n")
    out = tmp_path / "people.json"
    assert _script("bench_people").main(["--frames", str(frames), "--videos", str(videos), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    truth = [json.loads(r) for r in rows]
    assert report["frames"] == len(truth) == 15
    faces = report["models"]["faces"]["at_default"]
    assert faces["truth"] == sum(len(r["faces"]) for r in truth)
    assert faces["recall"] >= 0.8
    assert report["models"]["people"]["at_default"]["truth"] == sum(len(r["postures"]) for r in truth)
    assert "expressions on labelled face boxes" in capsys.readouterr().out
    assert report["pose_input"] == 256  # avi's MoveNet input unless --pose-input says otherwise
    assert _script("bench_people").main(["--frames", str(frames), "--videos", str(videos), "--json", str(out),
                                         "--pose-input", "384"]) == 0
    assert json.loads(out.read_text())["pose_input"] == 384
    with pytest.raises(SystemExit):
        _script("bench_people").parse_args(["--pose-input", "300"])
    assert _script("bench_people").main(["--frames", str(tmp_path / "none.jsonl")]) == 2


# ----------------------------------------------------------------- scripts/bench_ocr_reuse.py (issue 38)


def test_bench_ocr_reuse_refuses_a_range_it_cannot_read(tmp_path, capsys):
    script = _script("bench_ocr_reuse")
    assert script.main(["vtest.avi"]) == 2  # no START:END
    assert script.main([f"{tmp_path / 'missing.mp4'}:0:10", "--videos", str(tmp_path)]) == 2
    (tmp_path / "a.mp4").write_bytes(b"")
    assert script.main(["a.mp4:10:5", "--videos", str(tmp_path)]) == 2  # an empty range
    err = capsys.readouterr().err
    assert "is not VIDEO:START:END" in err and "no such video or an empty range" in err


def test_bench_faces_pairs_and_auc():
    """scripts/bench_faces.py: which pairs count as one person (not the same frame twice, a degraded or distorted
    copy only against a clean face of another frame) and as different people (clean faces of two videos)."""
    import numpy as np

    bench = _script("bench_faces")
    faces = [{"video": "a.mp4", "t": 0.0, "person": "a.mp4", "kind": "clean"},
             {"video": "a.mp4", "t": 1.0, "person": "a.mp4", "kind": "clean"},
             {"video": "a.mp4", "t": 1.0, "person": "a.mp4", "kind": "degraded"},
             {"video": "b.mp4", "t": 0.0, "person": None, "kind": "clean"}]
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]])
    got = bench.pair_scores(faces, vectors)
    assert got["same_clean"].tolist() == pytest.approx([0.8])
    assert got["same_degraded"].tolist() == pytest.approx([0.6])  # frame 0 against frame 1's copy, not frame 1's own
    assert sorted(got["different"].tolist()) == pytest.approx([0.0, 0.6])
    assert bench.auc(np.array([0.9, 0.5]), np.array([0.4, 0.5])) == pytest.approx(0.875)
    assert np.isnan(bench.auc(np.array([]), np.array([0.1])))


def test_bench_latency_writes_its_out_file_whole_and_marks_a_partial_run(bench_latency, tmp_path, monkeypatch):
    """--out is written through a temporary file after every question (a run cut short keeps what it measured),
    with the AVI_* settings of the run and the leave-one-out parse every avi-run gets."""
    for name in [n for n in os.environ if n.startswith("AVI_")]:  # CI sets its own AVI_* (AVI_REQUIRE_*)
        monkeypatch.delenv(name)
    monkeypatch.setenv("AVI_MEMORY_ROUTE", "1")
    args = bench_latency.parse_args(["--questions", str(_latency_questions(tmp_path)), "--videos", str(tmp_path)])
    out = tmp_path / "run.json"
    rows = [bench_latency.row_for("q0", 3, 4.0, "", "avi: error: x\n")]
    bench_latency.write_out(out, rows, args, partial=True)
    got = json.loads(out.read_text())
    assert got["partial"] is True and [r["qid"] for r in got["questions"]] == ["q0"]
    assert got["source"]["env"] == {"AVI_MEMORY_ROUTE": "1", "AVI_PARSE_LEAVE_ONE_OUT": "1"}
    assert not (tmp_path / "run.json.tmp").exists()
    assert bench_latency.write_out(None, rows, args, partial=False)["partial"] is False


def test_bench_route_composite_joins_host_answers_with_the_route_off_run(bench_latency, tmp_path, capsys):
    """--agent-from/--composite: a host row takes the host's answer and the route's seconds plus the process's time
    outside answering; an agent row keeps the route-off answer with the route's seconds added; the file scores
    per route with bench_latency --score; a partial or route-on run is refused."""
    bench_route = _script("bench_route")
    qfile = _latency_questions(tmp_path)
    args = bench_latency.parse_args(["--questions", str(qfile), "--videos", str(tmp_path)])
    qs = bench_latency.select_questions(args)
    off_rows = [bench_latency.grade(bench_latency.row_for(q.qid, 0, 10.0, json.dumps(
        {"answer": a, "seconds": {"total": 8.0}})), q) for q, a in zip(qs, ["x", "y", "x"])]
    off = tmp_path / "off.json"
    off.write_text(json.dumps({"questions": off_rows, "partial": False,
                               "source": {"split": "report", "env": {"AVI_PARSE_LEAVE_ONE_OUT": "1"}}}))
    loaded = bench_route.load_run(off)
    assert set(loaded) == {"q0", "q1", "q2"}
    route_rows = [{"qid": "q0", "route": "agent", "seconds": 2.0, "answer": None, "correct": None},
                  {"qid": "q1", "route": "host", "seconds": 3.0, "answer": "x", "correct": True},
                  {"qid": "q2", "route": "host", "seconds": 3.0, "answer": "z", "correct": False}]
    whole = bench_route.composite(route_rows, loaded)
    assert [r["correct"] for r in whole] == [True, True, False]
    assert [r["off_correct"] for r in whole] == [True, False, True]
    assert whole[0]["exit_s"] == 12.0 and whole[1]["exit_s"] == 5.0  # 10 + 2; 3 + (10 - 8)
    assert [r["record"]["route"] for r in whole] == ["agent", "host", "host"]
    assert whole[1]["record"]["answer"] == "x"
    saved = tmp_path / "on.json"
    saved.write_text(json.dumps({"questions": whole, "summary": bench_latency.summarize(whole), "partial": False,
                                 "composite": True, "source": {"split": "report", "limit": None}}))
    argv = ["--questions", str(qfile), "--videos", str(tmp_path), "--score", str(saved)]
    assert bench_latency.main(argv) == 0
    out = capsys.readouterr().out
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert overall.split()[1] == "66.7"
    assert any(line.startswith("host") for line in out.splitlines())
    with pytest.raises(ValueError, match="no row for q3"):
        bench_route.composite(route_rows + [{"qid": "q3", "route": "host", "seconds": 1.0}], loaded)
    for bad in ({"questions": off_rows, "partial": True}, {"questions": off_rows, "composite": True},
                {"questions": off_rows, "source": {"env": {"AVI_MEMORY_ROUTE": "1"}}}, {"rows": []}):
        off.write_text(json.dumps(bad))
        with pytest.raises(ValueError):
            bench_route.load_run(off)
