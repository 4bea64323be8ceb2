"""`avi doctor` per profile: the cpu profile on this machine, the gpu profile against the fake OpenAI server
(tests/fake_openai_server.py, extended here to answer with tool calls): healthy, wrong model, no tool call."""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import signal
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_openai_server import FakeOpenAIServer

import avi.doctor as doctor
from avi.cli import main
from avi.config import Settings

REPO = Path(__file__).resolve().parent.parent
AVI = str(REPO / ".venv" / "bin" / "avi")
MODELS = ("qwen3-32b", "qwen3-vl-8b", "qwen3-embedding-4b")


class ToolCallingFake(FakeOpenAIServer):
    """The fake server, answering chat requests that carry tools with a native tool call (``mode``: ``valid``
    calls the first tool with ``{"status": "ready"}``, ``bad-args`` with other arguments, ``none`` with text)."""

    def __init__(self, mode: str = "valid", **kw):
        super().__init__(reply_fn=lambda body: "I am ready.", **kw)
        self.mode = mode

    def _chat(self, body: dict) -> tuple[int, dict]:
        status, payload = super()._chat(body)
        if status == 200 and body.get("tools") and self.mode != "none":
            args = {"status": "ready"} if self.mode == "valid" else {"status": "busy", "extra": 1}
            msg = payload["choices"][0]["message"]
            msg["content"] = None
            msg["tool_calls"] = [{"id": "call_0", "type": "function", "function": {
                "name": body["tools"][0]["function"]["name"], "arguments": json.dumps(args)}}]
            payload["choices"][0]["finish_reason"] = "tool_calls"
        return status, payload


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No AVI_* variable from the outer environment, no ./avi.toml; the SIGTERM handler the CLI installs is
    put back afterwards."""
    for key in list(os.environ):
        if key.startswith("AVI_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    handler = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, handler)


@pytest.fixture
def gpu_env(monkeypatch, tmp_path):
    """Environment for an in-process `avi doctor` on the gpu profile: an empty weights lock, every package
    'installed'; returns ``point_at(server)`` that configures the three endpoints on one fake server."""
    lock = tmp_path / "weights.lock"
    lock.write_text("")
    monkeypatch.setenv("AVI_WEIGHTS_LOCK", str(lock))
    monkeypatch.setenv("AVI_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(doctor, "_package_version", lambda name: "1.0")

    def point_at(srv: FakeOpenAIServer) -> None:
        for prefix in ("LLM", "VLM", "EMBEDDER"):
            monkeypatch.setenv(f"AVI_{prefix}_BASE_URL", srv.base_url)
        for prefix, model in zip(("LLM", "VLM", "EMBEDDER"), MODELS):
            monkeypatch.setenv(f"AVI_{prefix}_MODEL", model)

    return point_at


def _doctor(capsys, *args) -> tuple[int, dict[str, tuple[str, str]], str]:
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--profile", "gpu", *args])
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines()[:-1]:
        status, rest = line[:4].strip(), line[6:]
        name, _, detail = rest.partition("  ")
        rows[name.strip()] = (status, detail.strip())
    return info.value.code, rows, out


def test_gpu_doctor_healthy(gpu_env, capsys):
    with ToolCallingFake(models=MODELS) as srv:
        gpu_env(srv)
        code, rows, out = _doctor(capsys)
        chats = srv.chat_requests
    assert code == 0, out
    assert out.splitlines()[-1].startswith("profile: gpu  config: none") and "checks passed" in out
    for role, model in zip(("orchestrator", "vlm", "embedder"), MODELS):
        assert rows[f"endpoint {role}"] == ("ok", f"{srv.base_url} serves {model}")
    assert rows["tool calling"][0] == "ok" and 'report_status({"status": "ready"})' in rows["tool calling"][1]
    assert rows["package transformers"] == ("ok", "1.0")
    assert rows["package vllm"][0] == "skip"  # the endpoints are not this node's [serve] servers
    assert rows["offline environment"][0] == "ok"
    assert rows["GPUs"][0] in ("ok", "warn")
    # ONE forced tool call, strict schema, thinking off
    assert len(chats) == 1
    body = chats[0]
    assert body["model"] == "qwen3-32b" and body["tool_choice"] == "required"
    assert body["tools"][0]["function"]["strict"] is True
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_gpu_doctor_checks_the_vlm_media_dir(gpu_env, capsys, monkeypatch, tmp_path):
    with ToolCallingFake(models=MODELS) as srv:
        gpu_env(srv)
        code, rows, out = _doctor(capsys)
        assert code == 0 and "vlm media dir" not in rows, out  # base64 frames: nothing to check
        monkeypatch.setenv("AVI_VLM_MEDIA_DIR", str(tmp_path / "media"))
        code, rows, out = _doctor(capsys)
        assert code == 0 and rows["vlm media dir"][0] == "ok", out
        assert (tmp_path / "media").is_dir() and not any((tmp_path / "media").iterdir())
        (tmp_path / "file").write_text("not a folder")
        monkeypatch.setenv("AVI_VLM_MEDIA_DIR", str(tmp_path / "file" / "media"))
        code, rows, out = _doctor(capsys)
    assert code == 1 and rows["vlm media dir"][0] == "FAIL", out


def test_gpu_doctor_wrong_model(gpu_env, capsys):
    with ToolCallingFake(models=("some-other-model",)) as srv:
        gpu_env(srv)
        code, rows, out = _doctor(capsys)
        assert srv.chat_requests == []
    assert code == 1
    assert rows["endpoint orchestrator"] == (
        "FAIL", f"the LLM server at {srv.base_url} has no model 'qwen3-32b' (it serves: some-other-model)")
    assert rows["endpoint vlm"][0] == "FAIL" and rows["endpoint embedder"][0] == "FAIL"
    assert rows["tool calling"] == ("skip", "the orchestrator endpoint is not healthy")
    assert out.splitlines()[-1].endswith("checks failed")


@pytest.mark.parametrize("mode, expected", [
    ("none", "no tool call came back (constrain tool_choice; finish_reason stop; content 'I am ready.')"),
    ("bad-args", "invalid call report_status("),
])
def test_gpu_doctor_tool_call_failures(gpu_env, capsys, mode, expected):
    with ToolCallingFake(mode=mode, models=MODELS) as srv:
        gpu_env(srv)
        code, rows, out = _doctor(capsys)
    assert code == 1
    assert rows["tool calling"][0] == "FAIL" and rows["tool calling"][1].startswith(expected), rows["tool calling"]
    assert rows["endpoint orchestrator"][0] == "ok"


def test_gpu_doctor_unreachable_and_derived_endpoints(gpu_env, capsys, monkeypatch):
    # nothing configured: the endpoints come from the [serve] layout; vllm is then required (here: missing)
    def version(name):
        if name == "vllm":
            raise md.PackageNotFoundError(name)
        return "1.0"

    monkeypatch.setattr(doctor, "_package_version", version)
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)  # no vllm, no nvidia-smi on PATH
    monkeypatch.setattr(doctor, "gpu_check", lambda s: doctor.Check("GPUs", "FAIL", "none; the layout uses 0–7"))
    monkeypatch.setenv("AVI_SERVE", json.dumps({"tools_gpus": [], "servers": [
        {"role": "orchestrator", "model": "m", "served_model_name": "qwen3-32b", "port": 9}]}))
    code, rows, _ = _doctor(capsys)
    assert code == 1
    assert rows["package vllm"][0] == "FAIL" and "no vllm on PATH" in rows["package vllm"][1]
    assert rows["endpoint orchestrator"] == ("FAIL", "cannot reach the LLM server at http://127.0.0.1:9/v1 "
                                                     "(connection failed)")
    assert rows["endpoint vlm"][0] == "warn" and rows["endpoint embedder"][0] == "warn"


def test_package_checks_per_profile():
    have = {"transformers", "torch", "openai"}

    def version(name):
        if name not in have:
            raise md.PackageNotFoundError(name)
        return "9"

    cpu = {r.name: r.status for r in doctor.package_checks(Settings(profile="cpu"), version)}
    assert "package llama_cpp_python" in cpu and "package transformers" not in cpu and "package vllm" not in cpu
    gpu = {r.name: r.status for r in doctor.package_checks(Settings(profile="gpu", open_clip_model=None), version)}
    assert gpu["package transformers"] == "ok" and gpu["package chromadb"] == "FAIL"
    assert gpu["package open_clip_torch"] == "warn" and "package llama_cpp_python" not in gpu
    assert gpu["package vllm"] in ("FAIL", "ok")  # default gpu endpoints are this node's: vllm is required
    gpu = {r.name: r.status for r in doctor.package_checks(Settings(profile="gpu", open_clip_model="ViT-L-14"),
                                                           version)}
    assert gpu["package open_clip_torch"] == "FAIL"


def test_weight_rows_tolerate_entries_with_and_without_profile(tmp_path):
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "config.json").write_text("{}")

    def entry(name, path, sha256="ab" * 32, **extra):
        e = SimpleNamespace(name=name, path=path, sha256=sha256, source={}, check_file=None, **extra)
        e.local_path = lambda d: Path(d) / path
        e.checked_file = e.local_path
        return e

    def verify(e, d):
        return Path(d) / e.path

    rows = {e.name: doctor.weight_check(e, "gpu", tmp_path, verify) for e in (
        entry("old", "here"),                                        # no profile field: verified
        entry("cpu-only", "x", profile="cpu"),                       # the other profile: skipped
        entry("qwen3-32b", "here", profile="gpu", pinned=False),     # unpinned, present
        entry("qwen3-vl", "absent", sha256="", profile=["gpu"]),     # unpinned (no sha256), absent
    )}
    assert rows["old"].status == "ok"
    assert (rows["cpu-only"].status, rows["cpu-only"].detail) == ("skip", "cpu profile only")
    assert rows["qwen3-32b"].status == "ok" and rows["qwen3-32b"].detail.startswith("unpinned")
    assert rows["qwen3-vl"].status == "warn" and rows["qwen3-vl"].detail.startswith("unpinned; not found")


def test_weight_rows_of_the_real_lock(tmp_path):
    from avi.weights import load_lock

    entries = load_lock(REPO / "weights.lock")
    gpu = {e.name: doctor.weight_check(e, "gpu", tmp_path, lambda e, d: d) for e in entries.values()}
    cpu = {e.name: doctor.weight_check(e, "cpu", tmp_path, lambda e, d: d) for e in entries.values()}
    for name, e in entries.items():
        kind = getattr(e, "profile", None)
        if kind == "gpu":
            assert cpu[name].status == "skip"
            if not getattr(e, "is_pinned", True) and not getattr(e, "optional", False):
                assert (gpu[name].status, gpu[name].detail.split(";")[0]) == ("warn", "unpinned")
        elif kind in ("cpu", "test"):
            assert gpu[name].status == "skip" and cpu[name].status != "skip"


def test_offline_check_fails_when_switched_off(monkeypatch):
    assert doctor.offline_check().status == "ok"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    row = doctor.offline_check()
    assert row.status == "FAIL" and row.detail.startswith("HF_HUB_OFFLINE=0")


def test_tool_call_check_reads_json_schema_replies():
    from avi.backends.llm import ChatResult

    class Client:
        constrain = "json_schema"

        def __init__(self, content):
            self.content = content

        def chat(self, messages, tools=None, **kw):
            assert kw["require_tool"] == ["report_status"]
            return ChatResult(content=self.content, finish_reason="stop", seconds=0.1)

    assert doctor.tool_call_check(Client('{"name": "report_status", "arguments": {"status": "ready"}}')).status == "ok"
    assert doctor.tool_call_check(Client("ready")).status == "FAIL"


def test_cpu_doctor_runs_here(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env["AVI_HOME"] = str(tmp_path / "home")
    r = subprocess.run([AVI, "doctor"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    assert "Traceback" not in r.stderr
    rows = {line[6:].split("  ")[0].strip(): line[:4].strip() for line in r.stdout.splitlines()[:-1]}
    assert rows["GPUs"] == "ok" and rows["offline environment"] == "ok"
    assert "endpoint orchestrator" not in rows and "tool calling" not in rows
    assert r.stdout.splitlines()[-1].startswith("profile: cpu")
    assert r.returncode == (1 if "FAIL" in rows.values() else 0), r.stdout
