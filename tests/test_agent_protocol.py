"""Agent protocol pieces of issue 5 outside the loop: the ``--json`` telemetry, answer types and their parsing."""

from __future__ import annotations

import argparse
import json

import pytest

from avi.agent.loop import AgentResult
from avi.cli import ask as cli
from avi.trace import Trace


class _NoBackends:
    def __init__(self, settings):
        pass

    def close(self):
        pass


def _ask_json(monkeypatch, tmp_path, capsys, result: AgentResult, *extra: str) -> dict:
    """Run ``cmd_ask --json`` with the pipeline replaced by a canned result; return the printed object."""
    import avi.backends
    import avi.pipeline

    seen = {}

    def fake_ask(video, question, settings, backends, **kw):
        seen["settings"] = settings
        return result

    monkeypatch.setattr(avi.backends, "Backends", _NoBackends)
    monkeypatch.setattr(avi.pipeline, "ask", fake_ask)
    p = argparse.ArgumentParser()
    cli.add_ask_args(p)
    args = p.parse_args(["--video", str(tmp_path / "v.mp4"), "--question", "Q?", "--json",
                         "--trace", str(tmp_path / "t.json"), *extra])
    assert cli.cmd_ask(args) == 0
    out = json.loads(capsys.readouterr().out)
    out["_settings"] = seen["settings"]
    return out


def test_json_output_has_telemetry(monkeypatch, tmp_path, capsys):
    trace = Trace(question="Q?")
    trace.add(iteration=1, phase="retrieve", kind="tool_call", tool="clip_retrieve", tool_seconds=0.5,
              llm_seconds=1.0, prompt_tokens=100, completion_tokens=20, call_source="content")
    trace.add(iteration=2, phase="perceive", kind="tool_call", tool="text_extract", tool_seconds=2.0,
              llm_seconds=1.5, prompt_tokens=150, completion_tokens=25, frames_s=[5.0, 5.5], call_source="native")
    out = _ask_json(monkeypatch, tmp_path, capsys, AgentResult("EXIT 42", None, None, [], trace))
    tel = out["telemetry"]
    assert tel["steps_per_phase"] == {"retrieve": 1, "perceive": 1}
    assert tel["tool_calls_per_tool"] == {"clip_retrieve": 1, "text_extract": 1}
    assert tel["seconds_per_tool"] == {"clip_retrieve": 0.5, "text_extract": 2.0}
    assert tel["seconds_per_phase"] == {"retrieve": 1.5, "perceive": 3.5}
    assert tel["prompt_tokens"] == 250 and tel["completion_tokens"] == 45
    assert tel["frames_looked_at"] == 2 and tel["fallback_replies"] == 1 and tel["native_tool_calls"] == 1
    assert json.loads((tmp_path / "t.json").read_text())["totals"] == tel


def test_answer_type_flag_and_json_fields(monkeypatch, tmp_path, capsys):
    trace = Trace(question="Q?")
    result = AgentResult("C, A", None, None, [], trace, choices=["A", "C"], order=None, answer_type="multi")
    out = _ask_json(monkeypatch, tmp_path, capsys, result, "--answer-type", "multi")
    assert out["_settings"].answer_type == "multi"
    assert out["choices"] == ["A", "C"] and out["order"] is None and out["answer_type"] == "multi"
    assert out["note"] is None

    result = AgentResult(None, None, None, [], trace, order=None, answer_type="order",
                         note="unparseable order answer 'x': reported as no answer")
    out = _ask_json(monkeypatch, tmp_path, capsys, result)
    assert out["_settings"].answer_type == "auto" and out["answer"] is None and "unparseable" in out["note"]


# ----------------------------------------------------------------- thinking and reasoning (issue 5, robustness)


@pytest.mark.parametrize("thinking", [True, False])
def test_enable_thinking_is_always_sent_to_an_endpoint(thinking):
    from fake_openai_server import FakeOpenAIServer

    from avi.backends.llm import ChatClient

    with FakeOpenAIServer(replies=["one", "two"]) as srv:
        client = ChatClient.connect(srv.base_url, enable_thinking=thinking)
        client.chat([{"role": "user", "content": "hi"}])
        client.chat([{"role": "user", "content": "hi"}], require_tool=None)
        bodies = srv.chat_requests
    assert [b["chat_template_kwargs"] for b in bodies] == [{"enable_thinking": thinking}] * 2


def test_required_tool_subset_is_enforced_by_the_tool_list():
    """vLLM's tool_choice="required" guarantees *some* listed tool: a gate's subset (e.g. search first) must be
    the whole list of that request; one name is a named tool_choice; all tools stay as they are."""
    from fake_openai_server import FakeOpenAIServer

    from avi.backends.llm import ChatClient
    from avi.tools import ALL_TOOLS

    tools = [t.openai_schema() for t in ALL_TOOLS.values()]
    names = [t["function"]["name"] for t in tools]
    with FakeOpenAIServer(replies=["a", "b", "c"]) as srv:
        client = ChatClient.connect(srv.base_url, constrain="tool_choice")
        msg = [{"role": "user", "content": "hi"}]
        client.chat(msg, tools, require_tool=["clip_retrieve", "global_explore"])
        client.chat(msg, tools, require_tool=["text_extract"])
        client.chat(msg, tools, require_tool=names)
        subset, one, every = srv.chat_requests
    assert [t["function"]["name"] for t in subset["tools"]] == ["clip_retrieve", "global_explore"]
    assert subset["tool_choice"] == "required"
    assert one["tool_choice"] == {"type": "function", "function": {"name": "text_extract"}}
    assert len(one["tools"]) == len(ALL_TOOLS)
    assert every["tool_choice"] == "required" and len(every["tools"]) == len(ALL_TOOLS)


def test_backends_pass_the_thinking_setting_to_an_endpoint(monkeypatch):
    from avi.backends import Backends
    from avi.backends.llm import ChatClient
    from avi.config import Settings

    seen = {}
    monkeypatch.setattr(ChatClient, "connect", classmethod(lambda cls, url, **kw: seen.update(kw) or "client"))
    for value in (True, False):
        llm = Backends(Settings(llm_base_url="http://127.0.0.1:9/v1", llm_enable_thinking=value)).llm
        assert llm == "client" and seen["enable_thinking"] is value


def _completion(message: dict):
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", **message}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_reasoning_read_from_either_field_and_never_parsed_for_calls(monkeypatch, field):
    from avi.agent.parse import parse_reply
    from avi.backends.llm import ChatClient

    client = ChatClient("http://127.0.0.1:9/v1", "m", chat_template_kwargs={"enable_thinking": True})
    fake_call = '{"name": "clip_retrieve", "arguments": {"query": "dog"}}'
    resp = _completion({"content": "[STAGE_SWITCH: perceive]", field: f"maybe call {fake_call}"})
    monkeypatch.setattr(client._client.chat.completions, "create", lambda **kw: resp)
    res = client.chat([{"role": "user", "content": "q"}])
    assert res.reasoning == f"maybe call {fake_call}" and res.content == "[STAGE_SWITCH: perceive]"
    reply = parse_reply(res.content, res.reasoning, res.tool_calls)
    assert reply.call is None and reply.switch == "perceive"  # the call in the reasoning is only a thought
    assert fake_call in reply.thought
