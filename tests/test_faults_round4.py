"""Fault injection, issue 55: the faults of round 4's probes that are not a damaged index (those are in
tests/test_faults_index.py): a tampered face-descriptor weight, a ``--trace`` name the file system refuses, a
crafted trace given to ``avi view``, an abbreviated ``--host`` in a server's ``extra_args``, subtitle files with bad
cues, and the smaller ones (warnings without the ``avi:`` prefix, SIGTERM without a line).

Each case runs the real command (``python -m avi.cli``, or ``avi-run``'s entry) as a subprocess with its AVI_*
roots in a temporary directory and asserts the exit status, the one stderr line naming the problem, no traceback,
and that nothing the user wrote changed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer
from synth import Spec, Text, make_video

pytestmark = pytest.mark.faults

REPO = Path(__file__).resolve().parent.parent
AVI = [sys.executable, "-m", "avi.cli"]
AVI_RUN = [sys.executable, "-c", "from avi.cli import run_main; run_main()"]
QUESTION = "What does the sign say?"


def env_for(tmp: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_HOME=str(tmp / "home"), AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false", PYTHONPATH=str(REPO),
               AVI_LLM_BASE_URL="http://127.0.0.1:9/v1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(argv: list, env: dict, timeout: float = 300, cmd: list = AVI) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd + argv, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                       r.stderr.decode(errors="replace"))


def one_line(r: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in r.stdout + r.stderr and "internal error" not in r.stderr, r.stderr[-3000:]
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("avi: "), f"stderr is not one line: {r.stderr[-2000:]!r}"
    return lines[0]


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    return make_video(tmp_path_factory.mktemp("round4") / "sign.mp4", Spec(duration_s=8, texts=[Text("EXIT 42", 0, 8)]))


@pytest.fixture
def llm():
    from batch_model import sign_reader

    with FakeOpenAIServer(reply_fn=sign_reader, models=["scripted"]) as srv:
        yield srv.base_url


# ---------------------------------------------------------------- item 6: a tampered face-descriptor weight


def _tampered_models(tmp: Path, rel: str) -> Path:
    """The repository's models directory with ``rel`` changed in one byte (same size); the rest linked."""
    src, dst = REPO / "models", tmp / "models"
    dst.mkdir()
    for entry in src.iterdir():
        if entry.is_dir() and rel.startswith(entry.name + "/"):
            shutil.copytree(entry, dst / entry.name, symlinks=True)
        elif entry.is_dir():
            (dst / entry.name).symlink_to(entry.resolve())
        else:
            shutil.copy2(entry, dst / entry.name)
    target = dst / rel
    if target.is_symlink():
        real = target.resolve()
        target.unlink()
        shutil.copy2(real, target)
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    return dst


@pytest.mark.parametrize("command", ["index", "ask"])
def test_a_tampered_face_descriptor_ends_with_exit_4(video, llm, tmp_path, command):
    """A face-descriptor weight that fails its sha256 switched face linking off silently (exit 0); README: a
    weight that fails its check ends the run with exit 4 wherever it is met."""
    models = _tampered_models(tmp_path, "people/faceres-descriptor.onnx")
    argv = (["index", str(video), "--quiet"] if command == "index" else
            ["ask", "--video", str(video), "--question", QUESTION, "--quiet", "--llm-url", llm])
    r = run(argv + ["--models-dir", str(models)], env_for(tmp_path))
    line = one_line(r)
    assert r.returncode == 4, line
    assert "faceres-descriptor" in line and "failed verification" in line and "sha256" in line, line
    assert not list((tmp_path / "home").rglob("manifest.json")), "an index was built with the tampered weight"


# ---------------------------------------------------------------- item 7: a --trace name over 255 bytes


@pytest.mark.parametrize("cmd", [AVI_RUN, AVI + ["ask"]], ids=["avi-run", "avi-ask"])
def test_a_trace_name_too_long_is_refused_before_the_question(video, tmp_path, cmd):
    """The name was checked only after the whole question ran, and the trace was lost. Now: exit 2 at once, one
    line naming the flag and the limit, nothing indexed."""
    trace = tmp_path / ("t" * 300 + ".json")
    t0 = time.monotonic()
    r = run(["--video", str(video), "--question", QUESTION, "--quiet", "--trace", str(trace)], env_for(tmp_path),
            cmd=cmd)
    line = one_line(r)
    assert r.returncode == 2 and "--trace" in line and "305 bytes long" in line and "allows 255" in line, line
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "home").exists(), "work was done before the refusal"


# ---------------------------------------------------------------- item 8: a crafted trace in avi view


CRAFTED = {
    "question": "What does the sign say?",
    "video": "/nonexistent/video.mp4",
    "steps": [{"index": 1, "kind": "tool_call", "tool": "text_extract", "phase": "perceive",
               "prompt_tokens": "many", "completion_tokens": None, "llm_seconds": "slow", "tool_seconds": [1],
               "frames_s": [1.0, "two", None, float("inf")]}],
    "totals": {"frames_looked_at": '<a href="http://evil.example/">x</a><meta http-equiv="refresh" '
                                   'content="0;url=http://evil.example/">',
               "prompt_tokens": "lots", "completion_tokens": {"a": 1}, "frames_spent": "<b>bold</b>"},
    "llm": "not an object", "seconds": [1, 2], "settings": "none",
}


@pytest.mark.parametrize("multi", [False, True], ids=["one-video", "two-videos"])
def test_a_crafted_trace_is_rendered_inert(tmp_path, multi):
    """totals.frames_looked_at went into the page unescaped (a link, a refresh to another site); a non-numeric
    totals.prompt_tokens was an internal error. Now every value is a number or escaped text, exit 0."""
    trace = dict(CRAFTED)
    if multi:
        trace["videos"] = [{"name": "a", "path": "/nonexistent/a.mp4", "duration_s": "long"},
                           {"name": "<i>b</i>", "path": 7, "duration_s": float("nan")}]
        trace["answer_videos"], trace["order"] = [1, None], "a"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    before = path.read_bytes()
    r = run(["view", str(path), "--out", str(tmp_path / "t.html")], env_for(tmp_path))
    assert "Traceback" not in r.stderr and r.returncode == 0 and r.stderr == "", r.stderr
    page = (tmp_path / "t.html").read_text()
    assert 'href="http://evil' not in page and 'http-equiv="refresh"' not in page and "<b>bold" not in page
    assert "<i>b</i>" not in page
    assert path.read_bytes() == before


# ---------------------------------------------------------------- item 9: an abbreviated --host in extra_args


@pytest.mark.parametrize("extra", ['["--hos", "0.0.0.0"]', '["--ho=0.0.0.0"]', '["--max-num-seqs", "8", "--h", '
                                   '"0.0.0.0"]'])
def test_an_abbreviated_host_is_refused_without_allow_remote(tmp_path, extra):
    """vLLM's argparse reads --hos as --host: such extra_args passed the loopback check while the table said
    127.0.0.1. Now: exit 2, one line naming the address and allow_remote."""
    cfg = tmp_path / "avi.toml"
    cfg.write_text('[serve]\ntools_gpus = []\n[[serve.servers]]\nrole = "orchestrator"\nmodel = "/abs/q"\n'
                   f'served_model_name = "q"\nport = 8000\nextra_args = {extra}\n')
    r = run(["serve", "--dry-run", "--config", str(cfg)], env_for(tmp_path))
    line = one_line(r)
    assert r.returncode == 2 and "would listen on 0.0.0.0:8000" in line and "allow_remote = true" in line, line


# ---------------------------------------------------------------- item 10: subtitles


SUBTITLES = {
    "nan.json": ('[{"timestamp": [1.0, 2.0], "text": "fine"}, {"timestamp": [NaN, 3.0], "text": "bad"}]',
                 "entry 1 has a time that is not a finite number"),
    "infinity.json": ('[{"timestamp": [1.0, Infinity], "text": "bad"}]', "entry 0 has a time that is not a finite"),
    "backwards.srt": ("1\n00:00:01,000 --> 00:00:02,000\nfine\n\n2\n00:00:05,000 --> 00:00:03,000\nbackwards\n",
                      "cue 2 ends before it starts (5.000 s --> 3.000 s)"),
    "hours-late.srt": ("1\n03:00:00,000 --> 03:00:02,000\nlate\n",
                       "cue 1 starts at 10800.000 s, more than 30 s after the video's end (8.000 s)"),
    "late.vtt": ("WEBVTT\n\n00:01.000 --> 00:02.000\nfine\n\n01:00:00.000 --> 01:00:02.000\nlate\n",
                 "cue 2 starts at 3600.000 s"),
}


@pytest.mark.parametrize("name", list(SUBTITLES))
def test_a_subtitle_file_with_a_bad_cue(video, tmp_path, name):
    """NaN, Infinity, a cue ending before it starts, cues hours past the video's end were accepted silently (bare
    NaN in --json, "[nans–nans]" shown to the model). Now: exit 2, one line naming the file and the first bad
    cue; nothing indexed."""
    text, needle = SUBTITLES[name]
    subs = tmp_path / name
    subs.write_text(text)
    r = run(["index", str(video), "--subtitles", str(subs), "--quiet"], env_for(tmp_path))
    line = one_line(r)
    assert r.returncode == 2 and str(subs) in line and needle in line, line
    assert subs.read_text() == text
    assert not list((tmp_path / "home").rglob("manifest.json"))


def test_subtitles_without_a_usable_cue(video, tmp_path):
    """--transcript subtitles with a file whose cues hold no text indexed with no transcript and no warning. Now:
    exit 2 naming the file; under --transcript auto one ``avi: warning:`` line (also under --quiet) and exit 0."""
    subs = tmp_path / "empty.srt"
    subs.write_text("1\n00:00:01,000 --> 00:00:02,000\n<i> </i>\n\n2\n00:00:03,000 --> 00:00:04,000\n{\\an8}\n")
    r = run(["index", str(video), "--subtitles", str(subs), "--transcript", "subtitles", "--quiet"],
            env_for(tmp_path))
    line = one_line(r)
    assert r.returncode == 2 and "hold no cue with text" in line and str(subs) in line, line
    r = run(["index", str(video), "--subtitles", str(subs), "--quiet"], env_for(tmp_path))
    line = one_line(r)
    assert r.returncode == 0 and line.startswith("avi: warning: subtitles") and "no cue with text" in line, line


def test_a_long_cue_is_stored_once(tmp_path):
    """One 6 MB cue made a 47 MB index: its text was copied into every clip's caption. Now each caption refers to
    the transcript segment and holds at most 400 characters of it."""
    long_video = make_video(tmp_path / "talk.mp4", Spec(duration_s=30, texts=[Text("EXIT 42", 0, 30)]))
    cue = " ".join(f"word{i}" for i in range(150_000))  # about 1.3 MB
    subs = tmp_path / "talk.srt"
    subs.write_text(f"1\n00:00:00,000 --> 00:00:30,000\n{cue}\n")
    r = run(["index", str(long_video), "--quiet", "--json"], env_for(tmp_path))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    index = Path(json.loads(r.stdout)["index_dir"])
    captions = [json.loads(x) for x in (index / "captions.jsonl").read_text().splitlines()]
    assert len(captions) == 6 and all(len(c["text"]) < 1200 for c in captions)
    assert all(c["data"]["speech"] == [{"segment": 0, "start_s": 0.0, "end_s": 30.0, "source": "subtitles:talk.srt"}]
               for c in captions)
    assert (index / "captions.jsonl").stat().st_size < 100_000
    assert (index / "transcript.jsonl").stat().st_size < len(cue) * 1.1
    total = sum(p.stat().st_size for p in index.rglob("*") if p.is_file())
    assert total < 4 * len(cue), f"{total / 2**20:.1f} MiB for a {len(cue) / 2**20:.1f} MiB cue"


# ---------------------------------------------------------------- smaller: SIGTERM


def test_sigterm_says_so(tmp_path):
    """SIGTERM ended avi with 143 and no line. Now one line says so; the next run resumes and finishes."""
    video = make_video(tmp_path / "long.mp4", Spec(duration_s=40, texts=[Text("EXIT 42", 0, 40)]))
    env = env_for(tmp_path)
    proc = subprocess.Popen(AVI + ["index", str(video), "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list((tmp_path / "home").rglob(".*.partial/captions.partial.jsonl")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no captioning started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if r.returncode == 0:
        pytest.skip("the build finished before SIGTERM arrived")
    line = one_line(r)
    assert r.returncode == 143 and line.startswith("avi: terminated (SIGTERM)"), line
    again = run(["index", str(video), "--quiet"], env)
    assert again.returncode == 0 and again.stderr == "", again.stderr
