"""The memory route inside the agent (issue 53, item 4): the parse comes first (decoded under the query's JSON
schema, with retrieved examples); a covered query is answered by the host with no agent step; otherwise the agent
runs with the query's result in its first message; the trace, ``--json`` and ``avi view`` carry the route."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_agent_loop import TO_REVIEW, ScriptedLLM, call

from avi.agent.loop import Agent
from avi.prompts import PromptLibrary
from avi.tools import ALL_TOOLS, ToolContext
from avi.video.decode import VideoReader, probe

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def make_agent(settings, sign_index, sign_video, session_backends):
    def make(replies, **overrides):
        overrides = {"memory_route": True, "structured_answer": False, "choice_scoring": "off", **overrides}
        for k, v in overrides.items():
            setattr(settings, k, v)
        llm = ScriptedLLM(replies)
        ctx = ToolContext(settings=settings, index=sign_index, video=VideoReader(probe(sign_video)),
                          backends=session_backends)
        return Agent(llm, ctx, PromptLibrary(REPO / "prompts"), settings), llm

    return make


def parse_reply(**fields) -> str:
    return json.dumps({"label": None, "pattern": None, "colour": None, "region": "any", **fields})


def test_a_covered_query_is_answered_by_the_host(make_agent):
    agent, llm = make_agent([parse_reply(target="text", noun="EXIT", op="exists", pattern="EXIT")])
    result = agent.run("Is the word EXIT shown on screen?")
    assert result.answer == "Yes." and result.rules == ["memory"]
    assert len(llm.calls) == 1  # the parse only: no agent step
    first = llm.calls[0]
    assert first.json_schema is not None and first.json_schema["required"][:4] == ["target", "noun", "label", "op"]
    assert first.messages[0]["role"] == "system" and "query" in first.messages[0]["content"]
    assert first.messages[-1] == {"role": "user", "content": "Is the word EXIT shown on screen?"}
    assert sum(m["role"] == "assistant" for m in first.messages) == 6  # retrieved examples
    t = result.trace
    assert t.memory["route"] == "host" and t.memory["result"]["value"] is True and t.memory["result"]["rows"]
    assert [s.kind for s in t.steps] == ["memory_query"] and t.iterations == 0
    assert any(4.0 <= e[0] <= 9.0 for e in result.evidence)


def test_a_count_of_cuts_and_a_no_from_a_covered_modality(make_agent):
    agent, _ = make_agent([parse_reply(target="cut", noun="cuts", op="count")])
    assert agent.run("How many cuts are there in the video?").answer == "1"
    agent, _ = make_agent([parse_reply(target="object", noun="dog", label="dog", op="exists")])
    assert agent.run("Is there a dog in the video?").answer == "No."


@pytest.mark.parametrize("observation", [True, False])
def test_an_uncovered_query_goes_to_the_agent_with_its_result_when_asked(make_agent, observation):
    replies = [parse_reply(target="person", noun="anyone sitting", label="person", op="exists", posture="sitting"),
               call("text_extract", time_ranges=[[5, 5]]), TO_REVIEW, "THOUGHT: done.\n**Answer:** No"]
    agent, llm = make_agent(replies, grounded_answers=False, answer_rules="none", memory_observation=observation)
    result = agent.run("At 0:05, is anyone sitting?")
    t = result.trace
    assert t.memory["route"] == "agent" and "does not cover" in t.memory["reason"]
    first_agent_message = llm.calls[1].messages[1]["content"]
    # memory_observation off (the default): the agent runs as without the route
    assert ("Perception memory query:" in first_agent_message) is observation
    assert result.answer is not None and t.iterations >= 1


def test_an_unsupported_query_is_no_observation(make_agent):
    """A query parsed as unsupported goes to the agent without its result, even with memory_observation on: the
    parse's "no tool measures this" is too often wrong to hand the model as a measurement."""
    replies = [parse_reply(target="object", noun="hat", label="other", op="unsupported"),
               call("text_extract", time_ranges=[[5, 5]]), TO_REVIEW, "THOUGHT: done.\n**Answer:** No"]
    agent, llm = make_agent(replies, grounded_answers=False, answer_rules="none", memory_observation=True)
    result = agent.run("Is the man wearing a hat?")
    assert result.trace.memory["route"] == "agent" and "no tool of this profile" in result.trace.memory["reason"]
    assert "Perception memory query:" not in llm.calls[1].messages[1]["content"]


def test_an_invalid_parse_goes_to_the_agent(make_agent):
    agent, llm = make_agent(["not json at all", call("text_extract", time_ranges=[[5, 5]]), TO_REVIEW,
                             "THOUGHT: done.\n**Answer:** EXIT 42"], grounded_answers=False, answer_rules="none")
    result = agent.run("What does the sign at 5 s say?")
    assert result.trace.memory["route"] == "agent" and "not a valid query" in result.trace.memory["reason"]
    assert result.answer == "EXIT 42"


def test_cannot_tell_is_decided_from_the_parse_not_from_a_tool_word(make_agent):
    """The parsed query says what is measured; object_detect's unsupported words no longer decide."""
    replies = [parse_reply(target="person", noun="people", label="person", op="count", posture="standing"),
               call("object_detect", time_ranges=[[5, 5]], objects=["person", "neck"]), TO_REVIEW,
               "THOUGHT: counted.\n**Answer:** 2"]
    agent, _ = make_agent(replies, grounded_answers=True, host_retrieve=False, answer_rules="cannot_tell",
                          memory_cannot_tell=True)
    result = agent.run("At 0:05, how many people stand near the man with the scarf around his neck?")
    detect = next(s for s in result.trace.steps if s.tool == "object_detect")
    assert result.trace.memory["route"] == "agent" and "neck" in detect.observation
    assert not result.cannot_tell
    replies = [parse_reply(target="object", noun="hat", label="other", op="colour"),
               call("text_extract", time_ranges=[[5, 5]]), TO_REVIEW, "THOUGHT: read.\n**Answer:** red"]
    agent, _ = make_agent(replies, grounded_answers=True, host_retrieve=False, answer_rules="cannot_tell",
                          memory_cannot_tell=True)
    result = agent.run("What colour is the hat?")
    assert result.cannot_tell and result.answer.startswith("Cannot tell on this profile: no tool here measures hat")
    # memory_cannot_tell off (the default): the agent route decides it as without the route (text_extract read
    # something; no detector label was refused), so the answer stands
    replies = [parse_reply(target="object", noun="hat", label="other", op="colour"),
               call("text_extract", time_ranges=[[5, 5]]), TO_REVIEW, "THOUGHT: read.\n**Answer:** red"]
    agent, _ = make_agent(replies, grounded_answers=True, host_retrieve=False, answer_rules="cannot_tell",
                          memory_cannot_tell=False)
    result = agent.run("What colour is the hat?")
    assert not result.cannot_tell and result.answer == "red"


def test_memory_query_tool_runs_on_the_index(sign_index, sign_video, session_backends, settings):
    ctx = ToolContext(settings=settings, index=sign_index, video=VideoReader(probe(sign_video)),
                      backends=session_backends)
    obs = ALL_TOOLS["memory_query"].run(ctx, {"target": "text", "op": "span", "pattern": "ROOM"})
    assert not obs.error and "Measured: [" in obs.text and obs.evidence
    assert 10.5 <= obs.data["memory"]["value"][0] <= 12.0 and obs.data["memory"]["value"][1] >= 16.0
    bad = ALL_TOOLS["memory_query"].run(ctx, {"target": "sky", "op": "count"})
    assert bad.error and "invalid arguments" in bad.text


def test_the_viewer_shows_the_route(make_agent, tmp_path):
    from avi.viewer import render_trace_html

    agent, _ = make_agent([parse_reply(target="text", noun="EXIT", op="exists", pattern="EXIT")])
    trace = agent.run("Is the word EXIT shown on screen?").trace
    page = render_trace_html(trace.to_dict(), tmp_path / "t.html").read_text()
    assert "Perception memory" in page and "host (the memory covers the query)" in page


def test_the_route_is_off_under_the_setting(make_agent):
    agent, llm = make_agent([call("text_extract", time_ranges=[[5, 5]]), TO_REVIEW,
                             "THOUGHT: done.\n**Answer:** EXIT 42"], memory_route=False, grounded_answers=False,
                            answer_rules="none")
    result = agent.run("What does the sign at 5 s say?")
    assert result.trace.memory == {} and llm.calls[0].json_schema is None



def test_a_read_of_text_is_read_again_by_text_extract(make_agent):
    """The memory finds where the text is; text_extract reads it (in the question's script, with its box)."""
    agent, _ = make_agent([parse_reply(target="text", noun="sign", op="read", pattern="EXIT")])
    result = agent.run("What does the EXIT sign say?")
    step = result.trace.steps[0]
    assert result.trace.memory["route"] == "host" and result.answer.startswith("EXIT 42")
    assert any(n.startswith("text re-read with text_extract") for n in step.notes)
    assert any(r.get("read") == "text_extract" for r in result.trace.memory["result"]["rows"])


@pytest.mark.parametrize("leave_out", [False, True])
def test_a_bank_question_is_parsed_without_its_own_pair_when_measuring(make_agent, leave_out):
    bank_question = "How many people are visible in the very first frame (0:00)?"
    agent, _ = make_agent([parse_reply(target="person", noun="people", label="person", op="count")],
                          parse_leave_one_out=leave_out)
    result = agent.run(bank_question)
    shown = result.trace.memory["parse"]["examples"]
    assert len(shown) == 6
    assert (bank_question in shown) is not leave_out
    if not leave_out:
        assert shown[-1] == bank_question  # its own pair, the most similar, last
