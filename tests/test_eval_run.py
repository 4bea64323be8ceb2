"""avi eval end to end (issue 6): the four annotation formats on fixture videos, resume after a kill,
``avi eval report``; and one run with the real cpu-profile orchestrator (slow).

The fixture annotation files (tests/fixtures/eval/) name videos vid1, vid2, vid3; the test makes
them as identical synthetic videos with the word EXIT on screen (identical content: one index
build serves them all). The fast tests' orchestrator is the scripted test double of
tests/batch_model.py: every multiple-choice answer is the option whose text the real OCR read
(EXIT), else A; every time span is [2 s, 8 s]. So the expected scores follow from the
annotation files alone, without the scorer: choice accuracy = share of questions whose
truth is that letter; span IoU = overlap of [2, 8] with the truth clipped to the video.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_model import INTERVAL, sign_reader
from fake_openai_server import FakeOpenAIServer
from synth import Spec, Text, make_video

from avi.eval.loaders import load_benchmark

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "eval"
AVI = [sys.executable, "-m", "avi.cli"]
DURATION = 8.0

BENCHES = {
    "lvbench": (FIX / "lvbench" / "video_info.meta.jsonl", []),
    "videomme": (FIX / "videomme" / "videomme.json", ["--duration", "all"]),
    "longvideobench": (FIX / "longvideobench" / "lvb_val.json", ["--duration-groups", "all", "--no-subtitles"]),
    "charades": (FIX / "charades" / "charades_sta_test.txt", []),
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Videos vid1..vid3 (one synthetic video, three names) and a shared home / index root."""
    root = tmp_path_factory.mktemp("eval")
    videos = root / "videos"
    videos.mkdir()
    src = make_video(root / "src.mp4", Spec(duration_s=DURATION, texts=[Text("EXIT", 0, DURATION)]))
    for vid in ("vid1", "vid2", "vid3"):
        (videos / f"{vid}.mp4").write_bytes(src.read_bytes())
    return root


def env_for(root: Path) -> dict:
    env = dict(os.environ)
    env.update(AVI_HOME=str(root / "home"), AVI_INDEX_ROOT=str(root / "indexes"), AVI_GRAPH_LLM="0",
               AVI_SUMMARY_LLM="0", AVI_TRANSCRIPT="off", PYTHONPATH=str(REPO),
               # the harness is under test, not the agent: the scripted answers are delivered as written
               AVI_CHOICE_SCORING="off", AVI_GROUNDED_ANSWERS="0")
    return env


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def expected_choice_accuracy(questions) -> float:
    """Percent of questions (with truth) whose truth is the scripted answer: the EXIT option, else A."""
    def scripted(q):
        for i, o in enumerate(q.options or []):
            if "EXIT" in o.upper():
                return "ABCDEFGH"[i]
        return "A"

    graded = [q for q in questions if q.gt is not None]
    return 100.0 * sum(scripted(q) == q.gt for q in graded) / len(graded)


def expected_miou(questions) -> float:
    def iou(gt):
        a, b = (min(max(x, 0.0), DURATION) for x in gt)
        s, e = INTERVAL["start_s"], INTERVAL["end_s"]
        inter = max(0.0, min(b, e) - max(a, s))
        union = max(b, e) - min(a, s)
        return inter / union if union > 0 else 0.0

    return 100.0 * sum(iou(q.gt) for q in questions) / len(questions)


@pytest.mark.parametrize("bench", list(BENCHES))
def test_eval_end_to_end_each_format(work, bench, tmp_path):
    annotations, extra = BENCHES[bench]
    out = tmp_path / f"{bench}.jsonl"
    with FakeOpenAIServer(reply_fn=sign_reader, models=["scripted"]) as srv:
        r = subprocess.run(AVI + ["eval", bench, "--annotations", str(annotations), "--videos",
                                  str(work / "videos"), "--out", str(out), "--llm-url", srv.base_url, "--quiet",
                                  "--json"] + extra,
                           env=env_for(work), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    opts = {"videomme": {"duration": "all"}, "longvideobench": {"duration_groups": "all",
                                                                "with_subtitles": False}}.get(bench, {})
    questions = load_benchmark(bench, annotations, work / "videos", **opts)
    recs = lines(out)
    assert sorted(x["qid"] for x in recs) == sorted(q.qid for q in questions)  # one line per question
    assert all(x["status"] == "ok" and "score" in x and Path(x["trace"]).is_file() for x in recs)
    strict = report["overall"]["strict"]
    if bench == "charades":
        assert strict["mIoU"]["value"] == pytest.approx(expected_miou(questions), abs=0.05)
        assert all(x["interval"] == [2.0, 8.0] for x in recs)
    else:
        metric = next(iter(strict))
        assert strict[metric]["value"] == pytest.approx(expected_choice_accuracy(questions), abs=0.05)
        assert {x["choice"] for x in recs} <= set("ABCDE")
    assert report["counts"]["answered"] == len(questions) and report["counts"]["missing"] == 0

    # avi eval report reads the same numbers back from the results file alone
    rr = subprocess.run(AVI + ["eval", "report", str(out), "--json"], env=env_for(work), capture_output=True,
                        text=True, timeout=120)
    assert rr.returncode == 0, rr.stderr
    assert json.loads(rr.stdout)["overall"] == report["overall"]
    text = subprocess.run(AVI + ["eval", "report", str(out)], env=env_for(work), capture_output=True, text=True,
                          timeout=120).stdout
    assert "official" in text and "strict" in text


def test_eval_resumes_after_a_kill(work, tmp_path):
    """Kill -9 an LVBench run after its first line; the rerun completes it with no line twice."""
    killed = False

    def slow(body):  # slow replies until the kill, so that it lands mid-run; the rerun needs no delay
        reply = sign_reader(body)
        return {"content": reply, "delay_s": 0.5} if isinstance(reply, str) and not killed else reply

    annotations = BENCHES["lvbench"][0]
    out = tmp_path / "lvbench.jsonl"
    args = ["eval", "lvbench", "--annotations", str(annotations), "--videos", str(work / "videos"), "--out",
            str(out), "--quiet", "--json"]
    with FakeOpenAIServer(reply_fn=slow, models=["scripted"]) as srv:
        args += ["--llm-url", srv.base_url]
        proc = subprocess.Popen(AVI + args, env=env_for(work), cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + 300
        while time.time() < deadline and not (out.exists() and lines(out)):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = True
        before = lines(out)
        n = len(load_benchmark("lvbench", annotations, work / "videos"))
        assert 1 <= len(before) < n
        partial = subprocess.run(AVI + ["eval", "report", str(out), "--json"], env=env_for(work),
                                 capture_output=True, text=True, timeout=120)
        assert json.loads(partial.stdout)["counts"]["missing"] == n - len(before)  # missing count as wrong
        r = subprocess.run(AVI + args, env=env_for(work), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    after = lines(out)
    assert after[:len(before)] == before
    assert sorted(x["qid"] for x in after) == sorted({x["qid"] for x in after}) and len(after) == n


def test_eval_errors_are_one_line(work, tmp_path):
    def run(*args):
        return subprocess.run(AVI + ["eval", *args], env=env_for(work), capture_output=True, text=True, timeout=120)

    r = run("lvbench", "--annotations", str(tmp_path / "none.jsonl"), "--videos", str(work / "videos"),
            "--out", str(tmp_path / "o.jsonl"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "vid1", "qa": []}\nnot json\n')
    r = run("lvbench", "--annotations", str(bad), "--videos", str(work / "videos"), "--out", str(tmp_path / "o.jsonl"))
    assert r.returncode == 2 and "line 2" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run("report", str(tmp_path / "nothing.jsonl"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run("lvbench", "--annotations", str(BENCHES["lvbench"][0]), "--videos", str(tmp_path / "nope"),
            "--out", str(tmp_path / "o.jsonl"))
    assert r.returncode == 2 and "not a folder" in r.stderr


@pytest.mark.slow
def test_eval_with_the_real_cpu_orchestrator(work, tmp_path):
    """LVBench format, one question, the cpu profile as a user runs it (embedded Qwen2.5-Coder-1.5B), with the
    default choice scoring: option scores from the llama.cpp server's log-probabilities."""
    out = tmp_path / "lvbench.jsonl"
    env = env_for(work)
    for key in ("AVI_CHOICE_SCORING", "AVI_GROUNDED_ANSWERS"):
        env.pop(key)
    r = subprocess.run(AVI + ["eval", "lvbench", "--annotations", str(BENCHES["lvbench"][0]), "--videos",
                              str(work / "videos"), "--out", str(out), "--limit", "1", "--quiet"],
                       env=env, capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    recs = lines(out)
    assert [x["qid"] for x in recs] == ["101"] and all(x["status"] == "ok" for x in recs), recs
    assert all(x["choice"] in {"A", "B", "C", "D"} for x in recs), [x.get("answer") for x in recs]
    assert all(x["choice_method"] == "option-scores" for x in recs), [x.get("choice_method") for x in recs]
    assert recs[0]["score"]["correct"] == (recs[0]["choice"] == "A")
    assert "LVBench" in r.stdout and "strict" in r.stdout
