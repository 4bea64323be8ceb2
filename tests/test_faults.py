"""Fault injection (issue 18): a table of bad inputs and faults, each run as a user meets it.

Every case runs the real command (``python -m avi.cli ...``) as a subprocess with its AVI_* roots in a
temporary directory and asserts the exit status, exactly one stderr line naming the problem (or, for a
fault the run must survive, none at all), no traceback, and that nothing already written (the index built
before, results files, their earlier lines) is lost. Faults covered here: bad config values (item 6), bad
questions (item 5), tampered weights met at any point of a run (item 1), LLM servers that refuse, hang,
answer slowly, answer with malformed JSON or with wrong tool calls (item 3), and ``avi batch`` with edited
questions, changed settings and a kill -9 (item 2). tests/test_faults_io.py adds the file and timestamp
faults with the same marker.

The orchestrator is a scripted test double (tests/batch_model.py behind tests/fake_openai_server.py, or the
raw sockets below for servers that misbehave below HTTP); the video, its index, OCR and the embedder are real.
One index is built per module and shared by the cases (each case checks it is left intact).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from batch_model import sign_reader
from fake_openai_server import FakeOpenAIServer
from synth import Spec, Text, make_video

pytestmark = pytest.mark.faults

REPO = Path(__file__).resolve().parent.parent
AVI = [sys.executable, "-m", "avi.cli"]
QUESTION = "What does the sign say?"


# ---------------------------------------------------------------- servers that misbehave below HTTP


class RawServer:
    """A TCP server on 127.0.0.1 whose connections are handled by ``handle(conn)`` in a thread each.

    ``RawServer.hang`` accepts and never answers; ``RawServer.models_then(body)`` lists one model at
    ``GET /v1/models`` and answers every other request with the raw HTTP ``body`` (bytes) or, for
    ``body=None``, never.
    """

    def __init__(self, handle: Callable[[socket.socket], None]):
        self.handle = handle
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        for c in self._conns + [self.sock]:
            with contextlib.suppress(OSError):
                c.close()

    @staticmethod
    def _request(conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return head

    @classmethod
    def hang(cls) -> "RawServer":
        def handle(conn):
            with contextlib.suppress(OSError):
                cls._request(conn)
                time.sleep(3600)
        return cls(handle)

    @classmethod
    def models_then(cls, body: bytes | None, content_type: str = "application/json") -> "RawServer":
        models = json.dumps({"object": "list", "data": [{"id": "raw", "object": "model"}]}).encode()

        def reply(conn, payload: bytes):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type.encode() + b"\r\nContent-Length: "
                         + str(len(payload)).encode() + b"\r\nConnection: close\r\n\r\n" + payload)

        def handle(conn):
            with contextlib.suppress(OSError):
                head = cls._request(conn)
                if head.startswith(b"GET") and b"/models" in head.split(b"\r\n")[0]:
                    reply(conn, models)
                elif body is None:
                    time.sleep(3600)
                else:
                    reply(conn, body)
                conn.close()
        return cls(handle)


# ---------------------------------------------------------------- the shared world


@dataclass
class World:
    """What every case gets: a video with a built index, a fresh tmp dir, and a place to register cleanups."""

    tmp: Path
    video: Path
    index_root: Path
    stack: contextlib.ExitStack

    def env(self, **extra: str) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
        env.update(AVI_HOME=str(self.tmp / "home"), AVI_INDEX_ROOT=str(self.index_root),
                   AVI_TRACE_DIR=str(self.tmp / "traces"), AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false",
                   PYTHONPATH=str(REPO),
                   # no case may start the real 1.5B model: one that gets past its fault meets a closed port
                   AVI_LLM_BASE_URL="http://127.0.0.1:9/v1")
        env.update(extra)
        return env

    def llm(self, reply_fn=sign_reader, **kw) -> FakeOpenAIServer:
        return self.stack.enter_context(FakeOpenAIServer(reply_fn=reply_fn, models=["scripted"], **kw))

    def raw(self, server: RawServer) -> RawServer:
        self.stack.callback(server.stop)
        return server

    def config(self, text: str) -> Path:
        path = self.tmp / "avi.toml"
        path.write_text(text)
        return path

    def tampered_models(self, rel: str) -> Path:
        """A models directory like the repository's with the file ``rel`` (relative to models/) changed in one
        byte, same size: its sha256 no longer matches weights.lock. The big weights are linked, not copied;
        the verification record is copied so only the changed file (new mtime) is hashed again."""
        src, dst = REPO / "models", self.tmp / "models"
        dst.mkdir()
        for entry in src.iterdir():
            if entry.is_dir() and any(rel.startswith(entry.name + "/") for _ in [0]):
                shutil.copytree(entry, dst / entry.name, symlinks=True)
            elif entry.is_dir():
                (dst / entry.name).symlink_to(entry)
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


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A short video with drawn text and its index, built once by ``avi index`` (captions only)."""
    root = tmp_path_factory.mktemp("faults")
    video = make_video(root / "sign.mp4", Spec(duration_s=8, texts=[Text("EXIT 42", 0, 8)]))
    index_root = root / "indexes"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_HOME=str(root / "home"), AVI_INDEX_ROOT=str(index_root), AVI_GRAPH_LLM="false",
               AVI_SUMMARY_LLM="false", PYTHONPATH=str(REPO))
    r = subprocess.run(AVI + ["index", str(video), "--quiet"], env=env, capture_output=True, text=True,
                       timeout=600, cwd=root)
    assert r.returncode == 0, r.stderr
    return video, index_root


@pytest.fixture
def world(built, tmp_path):
    video, index_root = built
    with contextlib.ExitStack() as stack:
        yield World(tmp_path, video, index_root, stack)


def snapshot(paths: list[Path]) -> dict[str, bytes | None]:
    """The bytes of every file under ``paths`` (Chroma's own files only by name: Chroma rewrites them on open)."""
    out: dict[str, bytes | None] = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []
        for f in files:
            out[str(f)] = None if "chroma" in f.parts else f.read_bytes()
    return out


def assert_kept(before: dict[str, bytes | None]) -> None:
    """Every file of ``before`` still exists and still starts with its earlier bytes (results files grow by
    appending; nothing written before may be lost or rewritten)."""
    lost = sorted(k for k in before if not Path(k).is_file())
    changed = sorted(k for k, v in before.items() if v is not None and k not in lost
                     and Path(k).read_bytes()[:len(v)] != v)
    assert not lost and not changed, f"lost {lost}, changed {changed}"


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


# ---------------------------------------------------------------- the table


@dataclass
class Run:
    """What a case runs: ``argv`` after ``avi``, extra environment, files that must survive it, a final check."""

    argv: list
    env: dict = field(default_factory=dict)
    keep: list[Path] = field(default_factory=list)
    check: Callable[[subprocess.CompletedProcess, "World"], None] | None = None
    before: Callable[["World"], None] | None = None


@dataclass
class Case:
    """One fault: ``setup(world) -> Run``; the exit status and a phrase of the one stderr line
    (``code == 0``: a fault the run must survive, stderr empty); the longest the run may take (seconds)."""

    id: str
    setup: Callable[[World], Run]
    code: int
    needle: str | tuple = ""
    max_seconds: float = 240.0


def ask(w: World, question: str = QUESTION, *extra: str) -> list:
    return ["ask", "--video", str(w.video), "--question", question, "--quiet", *extra]


def _config_case(key: str, text: str, valid: str) -> Case:
    def setup(w):
        cfg = w.config(text)
        return Run(["ask", "--video", str(w.video), "--question", QUESTION, "--quiet", "--config", str(cfg)])
    return Case(f"config-{key}-{text.split('=')[1].strip()}", setup, 2, ("config file {tmp}/avi.toml",
                                                                         f"'{key}'", f"valid: {valid}"))


def _env_case(var: str, value: str, key: str, valid: str) -> Case:
    def setup(w):
        return Run(ask(w), env={var: value})
    return Case(f"env-{var}-{value}", setup, 2, (f"${var}", f"'{key}'", f"valid: {valid}"))


CONFIG_CASES = [
    _config_case("fps", "fps = 0\n", "> 0 and <= 60"),
    _config_case("fps", "fps = -2.5\n", "> 0 and <= 60"),
    _config_case("clip_seconds", "clip_seconds = 0\n", ">= 0.5 and <= 600"),
    _config_case("max_iterations", "max_iterations = 0\n", ">= 1 and <= 1000"),
    _config_case("llm_connect_timeout_s", "llm_connect_timeout_s = -1\n", "> 0 and <= 600"),
    _config_case("max_side", "max_side = 4\n", ">= 32 and <= 8192"),
    _config_case("question_max_chars", "question_max_chars = 0\n", ">= 1"),
    _env_case("AVI_FPS", "nan", "fps", "> 0 and <= 60"),
    _env_case("AVI_LLM_TIMEOUT_S", "0", "llm_timeout_s", "> 0 and <= 86400"),
    _env_case("AVI_PERCEIVE_MAX_FRAMES", "0", "perceive_max_frames", ">= 1 and <= 1024"),
]


# -- questions (item 5)

def _q_bad_utf8(w):
    return Run(["ask", "--video", str(w.video), "--question", b"What does the sign say \xff\xfe?", "--quiet"])


def _q_only_controls(w):
    return Run(ask(w, "\x1b\x07\x7f\u202e\u2066 \t"))


def _q_too_long(w):
    return Run(ask(w, "What does the sign say? " * 20), env={"AVI_QUESTION_MAX_CHARS": "100"})


def _q_controls_stripped(w):
    srv = w.llm()
    trace = w.tmp / "trace.json"

    def check(r, w):
        q = json.loads(trace.read_text())["question"]
        assert q == "What does the sign say?", repr(q)
        assert "\x1b" not in json.dumps(srv.chat_requests) and "\\u001b" not in json.dumps(srv.chat_requests)
    return Run(ask(w, "What does the \x1b[31msign\x1b[0m say?\x07\r", "--llm-url", srv.base_url, "--trace",
                   str(trace)), check=check)


def _q_file_bad_utf8(w):
    folder = w.tmp / "videos"
    folder.mkdir()
    (folder / "sign.mp4").symlink_to(w.video)
    qfile = w.tmp / "questions.txt"
    qfile.write_bytes(b"What does the sign say?\nWhat colour \xe9s the sign?\n")
    return Run(["batch", str(folder), "--questions", str(qfile), "--out", str(w.tmp / "r.jsonl"), "--quiet"],
               check=lambda r, w: not (w.tmp / "r.jsonl").exists() or pytest.fail("results written"))


def _q_manifest_controls_only(w):
    m = w.tmp / "job.jsonl"
    m.write_text(json.dumps({"video": str(w.video), "question": "\u202e\x1b\x00"}) + "\n")
    return Run(["batch", str(m), "--out", str(w.tmp / "r.jsonl"), "--quiet"])


QUESTION_CASES = [
    Case("question-invalid-utf8-argv", _q_bad_utf8, 2, ("not valid UTF-8", "byte 0xff at character 24")),
    Case("question-only-control-characters", _q_only_controls, 2, "the question is empty"),
    Case("question-over-length-limit", _q_too_long, 2, ("479 characters long", "limit is 100",
                                                        "question_max_chars")),
    Case("question-control-characters-stripped", _q_controls_stripped, 0),
    Case("questions-file-invalid-utf8", _q_file_bad_utf8, 2, ("questions.txt line 2 is not valid UTF-8",
                                                              "0xe9")),
    Case("manifest-question-only-controls", _q_manifest_controls_only, 2, ("job.jsonl line 1", "is empty")),
]


# -- weights (item 1): a tampered file met inside a tool, in the agent, during an index build

def _weights_in_tool(rel: str):
    def setup(w):
        models = w.tampered_models(rel)
        srv = w.llm()
        return Run(ask(w, QUESTION, "--llm-url", srv.base_url, "--models-dir", str(models)),
                   check=lambda r, w: r.stdout == "" or pytest.fail(f"an answer was printed: {r.stdout!r}"))
    return setup


def _weights_tool_cli(w):
    models = w.tampered_models("ocr/PP-OCRv6_rec_small.onnx")
    return Run(["tool", "text_extract", "--video", str(w.video), "--args", '{"time_ranges": [[2, 4]]}', "--quiet",
                "--models-dir", str(models)])


def _weights_index_build(w):
    models = w.tampered_models("detector/nanodet-m-coco.onnx")
    other = w.tmp / "other.mp4"
    make_video(other, Spec(duration_s=6, texts=[Text("ROOM 7B", 0, 6)]))
    srv = w.llm()
    return Run(["ask", "--video", str(other), "--question", QUESTION, "--quiet", "--llm-url", srv.base_url,
                "--models-dir", str(models)])


WEIGHT_CASES = [
    Case("weights-ocr-tampered-in-text_extract", _weights_in_tool("ocr/PP-OCRv6_rec_small.onnx"), 4,
         ("ppocrv6-rec-small", "failed verification", "sha256")),
    Case("weights-embedder-tampered-in-clip_retrieve", _weights_in_tool("embedder/all-minilm-l6-v2/model.safetensors"),
         4, ("all-minilm-l6-v2", "failed verification")),
    Case("weights-detector-tampered-in-agent", _weights_in_tool("detector/nanodet-m-coco.onnx"), 4,
         ("nanodet-m-coco", "failed verification")),
    Case("weights-ocr-tampered-avi-tool", _weights_tool_cli, 4, ("ppocrv6-rec-small", "failed verification")),
    Case("weights-detector-tampered-index-build", _weights_index_build, 4, ("nanodet-m-coco", "failed verification")),
]


# -- LLM servers (item 3)

def _llm_hangs_entirely(w):
    srv = w.raw(RawServer.hang())
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url), env={"AVI_LLM_CONNECT_TIMEOUT_S": "2"})


def _llm_chat_hangs(w):
    srv = w.raw(RawServer.models_then(None))
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url), env={"AVI_LLM_TIMEOUT_S": "3"})


def _slow(delay_s: float):
    """sign_reader, each plain reply ``delay_s`` seconds late."""
    def reply(body):
        out = sign_reader(body)
        return {"content": out, "delay_s": delay_s} if isinstance(out, str) else out
    return reply


def _llm_slow_reply(w):
    srv = w.llm(reply_fn=_slow(4.0))
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url), env={"AVI_LLM_TIMEOUT_S": "2"})


def _llm_refuses(w):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    return Run(ask(w, QUESTION, "--llm-url", f"http://127.0.0.1:{port}/v1"))


def _llm_malformed_json(w):
    srv = w.raw(RawServer.models_then(b'{"id": "x", "choices": [{"message": {"content": "unterminated'))
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url))


def _llm_not_a_completion(w):
    srv = w.raw(RawServer.models_then(json.dumps({"hello": "world"}).encode()))
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url))


def _llm_html(w):
    srv = w.raw(RawServer.models_then(b"<html><body>proxy error</body></html>", content_type="text/html"))
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url))


def _llm_http_500(w):
    srv = w.llm(reply_fn=lambda body: {"status": 500, "content": "boom"})
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url))


def _llm_wrong_tool_calls(w):
    def wrong(body):
        if body.get("response_format"):
            return json.dumps({"name": "launch_rocket", "arguments": {"to": "moon"}})
        return 'THOUGHT: fly.\n{"name": "launch_rocket", "arguments": {"to": "moon"}}'
    srv = w.llm(reply_fn=wrong)
    trace = w.tmp / "trace.json"

    def check(r, w):
        t = json.loads(trace.read_text())
        assert t["forced"] is True and any(s.get("kind") == "retry" for s in t["steps"]), t.get("forced")
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url, "--trace", str(trace), "--max-iterations", "2"),
               check=check)


def _llm_tool_call_bad_arguments(w):
    def bad(body):
        n = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if n < 3:
            return 'THOUGHT: look.\n{"name": "text_extract", "arguments": {"time_ranges": "yesterday"}}'
        return "THOUGHT: done.\n**Answer:** nothing"
    srv = w.llm(reply_fn=bad)
    return Run(ask(w, QUESTION, "--llm-url", srv.base_url, "--max-iterations", "2"))


LLM_CASES = [
    Case("llm-accepts-never-answers", _llm_hangs_entirely, 3, ("timed out after 2 s waiting for the LLM server",
                                                               "127.0.0.1"), max_seconds=60),
    Case("llm-chat-never-answers", _llm_chat_hangs, 3, ("timed out after 3 s waiting for the LLM server at",
                                                        "llm_timeout_s"), max_seconds=60),
    Case("llm-slower-than-timeout", _llm_slow_reply, 3, "timed out after 2 s waiting for the LLM server",
         max_seconds=60),
    Case("llm-refuses-connection", _llm_refuses, 3, ("cannot reach the LLM server", "connection failed"),
         max_seconds=60),
    Case("llm-malformed-json", _llm_malformed_json, 1, "not a chat completion"),
    Case("llm-json-not-a-completion", _llm_not_a_completion, 1, "not a chat completion"),
    Case("llm-html-instead-of-json", _llm_html, 1, "not a chat completion"),
    Case("llm-http-500", _llm_http_500, 1, "answered HTTP 500"),
    Case("llm-wrong-tool-calls", _llm_wrong_tool_calls, 0),
    Case("llm-tool-call-bad-arguments", _llm_tool_call_bad_arguments, 0),
]


# -- avi batch (item 2): resume keys, kill -9

def _batch_folder(w: World, questions: str) -> tuple[Path, Path, Path]:
    folder = w.tmp / "videos"
    folder.mkdir(exist_ok=True)
    if not (folder / "sign.mp4").exists():
        (folder / "sign.mp4").symlink_to(w.video)
    qfile = w.tmp / "questions.txt"
    qfile.write_text(questions)
    return folder, qfile, w.tmp / "results.jsonl"


def _batch_argv(folder: Path, qfile: Path, out: Path, srv) -> list[str]:
    """``avi batch`` over ``folder`` with the questions file, results to ``out``, the LLM ``srv``, a JSON summary."""
    return ["batch", str(folder), "--questions", str(qfile), "--out", str(out), "--quiet", "--llm-url",
            srv.base_url, "--json"]


def _run_ok(argv: list[str], w: World) -> None:
    """Run ``avi argv`` once before the case (a first batch run) and require it to succeed."""
    r = subprocess.run(AVI + argv, env=w.env(), capture_output=True, text=True, timeout=300, cwd=w.tmp)
    assert r.returncode == 0, r.stderr


def _batch_edited_question(w):
    folder, qfile, out = _batch_folder(w, "What does the sign say?\nHow many signs are there?\n")
    srv = w.llm()
    argv = _batch_argv(folder, qfile, out, srv)

    def before(w):
        _run_ok(argv, w)
        qfile.write_text("What does the sign say?\nWhat does the sign say, in capitals?\n")

    def check(r, w):
        recs = lines(out)
        assert len(recs) == 3, recs  # the first run's two lines kept, the edited question asked again
        assert recs[2]["qid"] == "sign.mp4#2" and recs[2]["question"] == "What does the sign say, in capitals?"
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        assert summary["skipped"] == 1 and summary["answered"] == 1, summary
    return Run(argv, keep=[out], before=before, check=check)


def _batch_changed_settings(w):
    folder, qfile, out = _batch_folder(w, "What does the sign say?\n")
    srv = w.llm()
    argv = _batch_argv(folder, qfile, out, srv)

    def check(r, w):
        assert len(lines(out)) == 2 and json.loads(r.stdout.strip().splitlines()[-1])["answered"] == 1
    return Run(argv, env={"AVI_MAX_ITERATIONS": "7"}, keep=[out], before=lambda w: _run_ok(argv, w), check=check)


def _batch_same_job_resumes(w):
    folder, qfile, out = _batch_folder(w, "What does the sign say?\n")
    srv = w.llm()
    argv = _batch_argv(folder, qfile, out, srv)

    asked = []

    def before(w):
        _run_ok(argv, w)
        asked.append(len(srv.chat_requests))

    def check(r, w):  # nothing changed: nothing asked again
        assert len(lines(out)) == 1 and json.loads(r.stdout.strip().splitlines()[-1])["skipped"] == 1
        assert len(srv.chat_requests) == asked[0]
    return Run(argv, keep=[out], before=before, check=check)


def _batch_kill9(w):
    folder, qfile, out = _batch_folder(w, "What does the sign say?\nWhat is written?\nWhich text is shown?\n")
    srv = w.llm(reply_fn=_slow(0.3))
    argv = _batch_argv(folder, qfile, out, srv)
    first: list = []

    def before(w):
        proc = subprocess.Popen(AVI + argv, env=w.env(), cwd=w.tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 240
        while time.time() < deadline and not (out.exists() and lines(out)):
            assert proc.poll() is None
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        first.extend(lines(out))
        assert 1 <= len(first) < 3

    def check(r, w):
        recs = lines(out)
        assert recs[:len(first)] == first and sorted(x["qid"] for x in recs) == ["sign.mp4#1", "sign.mp4#2",
                                                                                  "sign.mp4#3"]
    return Run(argv, keep=[], before=before, check=check)


def _batch_llm_hangs(w):
    folder, qfile, out = _batch_folder(w, "What does the sign say?\n")
    srv = w.raw(RawServer.models_then(None))
    return Run(["batch", str(folder), "--questions", str(qfile), "--out", str(out), "--quiet", "--llm-url",
                srv.base_url, "--retries", "0"], env={"AVI_LLM_TIMEOUT_S": "2"},
               check=lambda r, w: "timed out after 2 s" in lines(out)[0]["error"] or pytest.fail(lines(out)))


BATCH_CASES = [
    Case("batch-edited-question-asked-again", _batch_edited_question, 0),
    Case("batch-changed-settings-asked-again", _batch_changed_settings, 0),
    Case("batch-unchanged-job-skipped", _batch_same_job_resumes, 0),
    Case("batch-kill-9-resumes", _batch_kill9, 0),
    Case("batch-llm-hangs-recorded-as-timeout", _batch_llm_hangs, 1, "1 question(s) failed", max_seconds=90),
]


# -- bad files (the basics, kept honest)

def _bad_video(kind: str):
    def setup(w):
        p = w.tmp / "clip.mp4"
        if kind == "text":
            p.write_text("not a video\n" * 10)
        elif kind == "truncated":
            p.write_bytes(w.video.read_bytes()[:2000])
        return Run(["ask", "--video", str(p), "--question", QUESTION, "--quiet"])
    return setup


FILE_CASES = [
    Case("video-missing", _bad_video("missing"), 2, "not found"),
    Case("video-is-text", _bad_video("text"), 2, "not a readable video"),
    Case("video-truncated", _bad_video("truncated"), 2, "clip.mp4"),
]

CASES = CONFIG_CASES + QUESTION_CASES + WEIGHT_CASES + LLM_CASES + BATCH_CASES + FILE_CASES


def test_the_table_is_big_enough():
    assert len(CASES) >= 25 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(case: Case, world: World):
    run = case.setup(world)
    if run.before is not None:
        run.before(world)
    keep = [world.index_root, *run.keep]
    before = snapshot(keep)
    t0 = time.monotonic()
    r = subprocess.run(AVI + run.argv, env=world.env(**run.env), capture_output=True, timeout=case.max_seconds + 60,
                       cwd=world.tmp, stdin=subprocess.DEVNULL)
    elapsed = time.monotonic() - t0
    r = subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                    r.stderr.decode(errors="replace"))
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr[-3000:]
    if case.code == 0:
        assert r.returncode == 0 and r.stderr == "", r.stderr[-2000:]
    else:
        err = r.stderr.splitlines()
        assert len(err) == 1 and err[0].startswith("avi:"), f"stderr is not one line: {r.stderr[-2000:]!r}"
        assert r.returncode == case.code, err[0]
        for needle in (case.needle,) if isinstance(case.needle, str) else case.needle:
            assert needle.format(tmp=world.tmp) in err[0], err[0]
    assert elapsed < case.max_seconds, f"took {elapsed:.0f} s"
    assert_kept(before)
    if run.check is not None:
        run.check(r, world)


def test_progress_while_waiting_on_a_slow_server(world):
    """Without --quiet, a slow reply is announced while avi waits (setting llm_progress_s), and the run goes on."""
    def slow(body):
        reply = sign_reader(body)
        return {"content": reply, "delay_s": 2.5} if isinstance(reply, str) and "Answer" in reply else reply
    srv = world.llm(reply_fn=slow)
    r = subprocess.run(AVI + ["ask", "--video", str(world.video), "--question", QUESTION, "--llm-url", srv.base_url],
                       env=world.env(AVI_LLM_PROGRESS_S="1"), capture_output=True, text=True, timeout=300,
                       cwd=world.tmp)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "avi: still waiting for the LLM server at" in r.stderr and "gives up after 600 s" in r.stderr
