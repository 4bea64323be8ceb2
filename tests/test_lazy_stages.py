"""Issue 38: the LLM stages of an index (entity graph, summary) are built when a question's tool first needs them,
never after an answer. ``avi-run`` exits when it has answered; graph_retrieve and global_explore build their
pending stage under the index's build lock (the manifest's ``pending`` shrinks) and say so; a lock held by
another process or a read-only index gives an answer without the stage and a note.

Indexes are built with a stub captioner, the session's real embedder and a scripted stand-in for the LLM
(as tests/test_index_build.py does); nothing here runs a real model.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time

import pytest
from test_index_build import FakeIndexLLM, StubBackends, StubCaptioner

from avi.config import Settings
from avi.index.build import ensure_index
from avi.index.store import VideoIndex
from avi.tools import ALL_TOOLS, ToolContext
from avi.video.decode import VideoReader, probe

SUBJECT = {"subjects": [{"subject_id": "Person_1", "subject_name": "man in red shirt",
                         "appearance_timeline": [[0, 5]], "attributes": ["red shirt"]}], "interactions": []}


class SubjectLLM(FakeIndexLLM):
    """Graph extraction gets one subject (so the graph has an LLM entity), the summary calls one sentence;
    ``delay_s`` per call (a build that takes a while)."""

    def __init__(self, delay_s: float = 0.0):
        super().__init__()
        self.delay_s = delay_s

    def chat(self, messages, tools=None, **kw):
        from avi.backends.llm import ChatResult

        self.calls += 1
        time.sleep(self.delay_s)
        content = json.dumps(SUBJECT) if kw.get("json_schema") else "A man in a red shirt walks past signs."
        return ChatResult(content=content, prompt_tokens=10, completion_tokens=5, seconds=0.01)


class ManCaptioner(StubCaptioner):
    """Stub captions that name the subject the stand-in LLM extracts (the graph keeps only grounded names)."""

    def caption(self, clip, frames, previous=None):
        cap = super().caption(clip, frames, previous)
        cap.text = f"A man in a red shirt walks past a sign (clip {clip.index})."
        return cap


@pytest.fixture
def backends(session_backends):
    b = StubBackends(session_backends)
    b.captioner = ManCaptioner()
    b.llm = SubjectLLM()
    return b


def lazy_settings(root) -> Settings:
    return Settings(index_root=root / "indexes", home=root / "home", graph_llm=True, summary_llm=True,
                    llm_progress_s=0)


@pytest.fixture(scope="module")
def pending_index(tmp_path_factory, sign_video, session_backends):
    """An index of the sign video with both LLM stages pending, built once (each test gets a copy)."""
    b = StubBackends(session_backends)
    b.captioner = ManCaptioner()
    b.llm = SubjectLLM()
    index = ensure_index(sign_video, lazy_settings(tmp_path_factory.mktemp("lazy")), b, progress=False,
                         stages="search")
    assert index.pending == ["graph", "summary"] and b.llm.calls == 0
    return index.path


@pytest.fixture
def lazy(tmp_path, sign_video, backends, pending_index):
    """(settings, pending index, tool context) for the sign video: both LLM stages pending (a private copy)."""
    settings = lazy_settings(tmp_path)
    settings.indexes_dir().mkdir(parents=True)
    shutil.copytree(pending_index, settings.indexes_dir() / pending_index.name)
    index = VideoIndex(settings.indexes_dir() / pending_index.name)
    assert index.pending == ["graph", "summary"]
    ctx = ToolContext(settings=settings, index=index, video=VideoReader(probe(sign_video), settings.max_side),
                      backends=backends)
    return settings, index, ctx


def manifest_pending(index) -> list[str]:
    return json.loads((index.path / "manifest.json").read_text())["pending"]


# ------------------------------------------------------------------ avi-run answers and exits

class NoBackends:
    """Backends that load nothing: the ask path's answer is faked in these tests."""

    def __init__(self, settings):
        pass

    def close(self):
        pass


def test_ask_does_not_build_the_pending_stages_after_answering(monkeypatch, tmp_path, capsys):
    """cmd_ask (avi-run) asks with ``stages="search"``, prints the answer and returns: no finish_index, no
    'building … for later questions' line, the index's ``pending`` as it was."""
    import avi.backends
    import avi.index.build
    import avi.pipeline
    from avi.agent.loop import AgentResult
    from avi.cli import ask as cli
    from avi.trace import Trace

    index_dir = tmp_path / "indexes" / "0123456789abcdef-0123456789ab"
    index_dir.mkdir(parents=True)
    manifest = {"complete": True, "schema": 2, "pending": ["graph", "summary"]}
    (index_dir / "manifest.json").write_text(json.dumps(manifest))
    seen, finished = {}, []

    def fake_ask(video, question, settings, backends, **kw):
        seen.update(kw)
        return AgentResult("EXIT 42", None, None, [], Trace(question=question, index_dir=str(index_dir)))

    monkeypatch.setattr(avi.backends, "Backends", NoBackends)
    monkeypatch.setattr(avi.pipeline, "ask", fake_ask)
    monkeypatch.setattr(avi.index.build, "finish_index", lambda *a, **k: finished.append(a))
    p = argparse.ArgumentParser()
    cli.add_ask_args(p)
    args = p.parse_args(["--video", str(tmp_path / "v.mp4"), "--question", "Q?", "--json",
                         "--trace", str(tmp_path / "t.json")])
    assert cli.cmd_ask(args) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["answer"] == "EXIT 42"
    assert seen["stages"] == "search" and finished == []
    assert "later questions" not in out.err and "now building" not in out.err
    assert json.loads((index_dir / "manifest.json").read_text())["pending"] == ["graph", "summary"]
    assert not hasattr(cli, "_finish_index")


def test_index_llm_stages_before_still_builds_first(monkeypatch, tmp_path, capsys):
    import avi.backends
    import avi.pipeline
    from avi.agent.loop import AgentResult
    from avi.cli import ask as cli
    from avi.trace import Trace

    seen = {}

    def fake_ask(video, question, settings, backends, **kw):
        seen.update(kw)
        return AgentResult("x", None, None, [], Trace(question=question))

    monkeypatch.setattr(avi.backends, "Backends", NoBackends)
    monkeypatch.setattr(avi.pipeline, "ask", fake_ask)
    monkeypatch.setenv("AVI_INDEX_LLM_STAGES", "before")
    p = argparse.ArgumentParser()
    cli.add_ask_args(p)
    args = p.parse_args(["--video", str(tmp_path / "v.mp4"), "--question", "Q?", "--trace", str(tmp_path / "t.json")])
    assert cli.cmd_ask(args) == 0 and seen["stages"] == "all"
    capsys.readouterr()


# ------------------------------------------------------------------ a tool builds its stage on first use


def test_graph_retrieve_builds_a_pending_graph(lazy, backends):
    settings, index, ctx = lazy
    from avi.agent.gates import entity_graph_in

    assert entity_graph_in(index)  # offered: the first call builds it
    obs = ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "man in red shirt"})
    assert not obs.error, obs.text
    assert "man in red shirt" in obs.text
    stage = obs.data["index_stage"]
    assert stage["stage"] == "graph" and stage["built"] and stage["reason"] == "built"
    assert any(n.startswith("built the entity graph now (") for n in obs.notes)
    assert manifest_pending(index) == ["summary"] == index.pending  # pending shrinks; the summary still waits
    assert (index.path / "graph.json").exists() and not (index.path / "summary.json").exists()
    m = json.loads((index.path / "manifest.json").read_text())
    assert "graph" in m["build_seconds"] and m["counts"]["entities"] > 0
    calls = backends.llm.calls
    again = ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "man in red shirt"})
    assert "index_stage" not in again.data and backends.llm.calls == calls  # built once
    from avi.index.stage_files import check_index_files

    assert check_index_files(index.path, pending=index.pending) == {}  # an LLM-built graph passes its own check


def test_global_explore_builds_a_pending_summary(lazy):
    settings, index, ctx = lazy
    obs = ALL_TOOLS["global_explore"].run(ctx, {"query": "a man walking"})
    assert not obs.error, obs.text
    assert obs.data["has_summary"] and obs.data["index_stage"]["reason"] == "built"
    assert "summary" in obs.data["index_stage"]["note"]
    assert manifest_pending(index) == ["graph"] == index.pending
    assert (index.path / "summary.json").exists() and not (index.path / "graph.json").exists()
    from avi.index.stage_files import check_index_files

    assert check_index_files(index.path, pending=index.pending) == {}  # an LLM-built summary passes its own check


def test_trace_notes_say_the_stage_was_built(lazy):
    """The agent copies a tool's notes into its trace step: the wait shows where it happened."""
    from avi.trace import Trace

    settings, index, ctx = lazy
    obs = ALL_TOOLS["global_explore"].run(ctx, {"query": "signs"})
    trace = Trace(question="q")
    step = trace.add(iteration=1, phase="retrieve", kind="tool_call", tool="global_explore",
                     observation=obs.text, observation_data=obs.data, notes=list(obs.notes))
    assert any("built the summary now" in n for n in step.notes)


def test_a_held_build_lock_answers_without_the_stage(lazy, backends):
    """Another process holds the index's build lock: graph_retrieve says so (no hang, no crash), global_explore
    ranks the captions and says why; nothing is built and ``pending`` stays."""
    settings, index, ctx = lazy
    lock = index.path.parent / f".{index.path.name}.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
         "os.ftruncate(fd, 0); os.pwrite(fd, str(os.getpid()).encode(), 0)\nprint('locked', flush=True)\n"
         "sys.stdin.read()\n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        obs = ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "man in red shirt"})
        assert obs.error and f"another avi process (pid {holder.pid}) is building it" in obs.text
        assert obs.data["index_stage"]["reason"] == "busy" and not obs.data["index_stage"]["built"]
        ex = ALL_TOOLS["global_explore"].run(ctx, {"query": "a man walking"})
        assert not ex.error and not ex.data["has_summary"]
        assert "summary is not built yet" in ex.text and f"pid {holder.pid}" in ex.text
        assert time.perf_counter() - t0 < 30  # no waiting for the other builder
        assert backends.llm.calls == 0
        assert manifest_pending(index) == ["graph", "summary"] == index.pending
    finally:
        holder.communicate("", timeout=10)
    # the lock released: the next call builds it
    assert ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "man in red shirt"}).data["index_stage"]["built"]


def test_building_it_now_is_said_only_once_the_lock_is_held(lazy, capsys):
    """Issue 55: "building it now" is printed after the build lock is taken, never while another process holds
    it (the note then says who builds it)."""
    settings, index, ctx = lazy
    settings.llm_progress_s = 60.0  # not --quiet: the line is shown
    lock = index.path.parent / f".{index.path.name}.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\nsys.stdin.read()\n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        obs = ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "man in red shirt"})
        assert obs.data["index_stage"]["reason"] == "busy"
        assert "building it now" not in capsys.readouterr().err
    finally:
        holder.communicate("", timeout=10)
    assert ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "man in red shirt"}).data["index_stage"]["built"]
    assert "needs the entity graph" in capsys.readouterr().err


def test_a_read_only_index_says_the_stage_cannot_be_built_there(lazy, backends, monkeypatch):
    """The index folder cannot be written (a read-only index, queried from a private copy of its Chroma database):
    graph_retrieve is not offered, and a call says the graph is not built and cannot be built there."""
    import avi.index.lazy
    from avi.agent.gates import entity_graph_in

    settings, index, ctx = lazy
    monkeypatch.setattr(avi.index.lazy, "index_writable", lambda path: False)
    assert not entity_graph_in(index)
    obs = ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "man in red shirt"})
    assert obs.error and "not built and cannot be built here (the index is read-only)" in obs.text
    ex = ALL_TOOLS["global_explore"].run(ctx, {"query": "a man walking"})
    assert not ex.error and "cannot be built here" in ex.text
    assert backends.llm.calls == 0 and manifest_pending(index) == ["graph", "summary"]


def test_two_questions_of_one_process_build_a_stage_once(lazy, backends):
    """avi batch --concurrency 2: both questions need the graph; one builds it, the other waits for it."""
    settings, index, ctx = lazy
    backends.llm.delay_s = 0.2
    other = ToolContext(settings=settings, index=index, video=ctx.video, backends=backends)
    results = {}

    def ask(name, c):
        results[name] = ALL_TOOLS["graph_retrieve"].run(c, {"query": "man in red shirt"})

    threads = [threading.Thread(target=ask, args=(n, c)) for n, c in (("a", ctx), ("b", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    reasons = sorted(r.data.get("index_stage", {}).get("reason", "none") for r in results.values())
    assert all(not r.error for r in results.values()), [r.text for r in results.values()]
    assert reasons in (["built", "waited"], ["built", "none"])
    assert manifest_pending(index) == ["summary"]


def test_avi_index_still_builds_every_stage(lazy, sign_video, backends):
    settings, index, _ = lazy
    full = ensure_index(sign_video, settings, backends, progress=False)
    assert full.pending == [] and manifest_pending(full) == []


# ------------------------------------------------------------------ avi batch


def test_batch_indexes_for_search_and_questions_build_lazily(tmp_path, monkeypatch):
    """cmd_batch runs its executor with ``stages="search"`` (avi eval keeps every stage first)."""
    import avi.jobs.runner
    from avi.cli.batch import add_batch_parser
    from avi.cli.common import add_common

    captured = {}

    class Stop(Exception):
        pass

    def fake_run_job(questions, out, executor, **kw):
        captured["executor"] = executor
        raise Stop

    monkeypatch.setattr(avi.jobs.runner, "run_job", fake_run_job)
    video = tmp_path / "v.mp4"
    video.write_bytes(b"")
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"video": str(video), "question": "Q?"}) + "\n")
    monkeypatch.setenv("AVI_HOME", str(tmp_path / "home"))
    parser = argparse.ArgumentParser()
    add_batch_parser(parser.add_subparsers(), add_common)
    args = parser.parse_args(["batch", str(manifest), "--out", str(tmp_path / "r.jsonl"),
                              "--index-root", str(tmp_path / "indexes")])
    with pytest.raises(Stop):
        args.fn(args)
    assert captured["executor"].stages == "search"


def test_index_video_leaves_the_llm_stages_pending(lazy, sign_video, backends):
    from avi.jobs.work import VideoJob, index_video

    settings, index, _ = lazy
    prepared, event = index_video(VideoJob(video=sign_video), settings, backends, stages="search")
    assert event["status"] == "ok" and prepared.index.path == index.path
    assert prepared.index.pending == ["graph", "summary"] and backends.llm.calls == 0
    prepared, event = index_video(VideoJob(video=sign_video), settings, backends)  # avi eval: every stage
    assert prepared.index.pending == [] and backends.llm.calls > 0
