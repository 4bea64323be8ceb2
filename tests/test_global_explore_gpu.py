"""global_explore on the gpu profile (issue 19, item 3; AVI §3.3.1): a query-focused overview generated at
question time from the segment summaries, one LLM call, cached per query. The LLM is a fake (FakeOverviewLLM)
that records its requests and replies with a fixed overview; the index is the real topic index of
tests/test_retrieve_tools.py (Chroma, MiniLM)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from test_retrieve_tools import _topic_index

from avi.backends.llm import ContextOverflowError
from avi.config import Settings
from avi.errors import LLMUnavailableError
from avi.tools.retrieve import global_explore


class FakeOverviewLLM:
    """A fake orchestrator: records the messages of each chat call and returns ``reply`` (or raises ``error``)."""

    def __init__(self, reply: str = "", error: Exception | None = None, model: str = "fake-overview-llm"):
        self.reply, self.error, self.model, self.calls = reply, error, model, []

    def chat(self, messages, tools=None, **kw):
        self.calls.append((messages, kw))
        if self.error is not None:
            raise self.error
        return SimpleNamespace(content=self.reply, prompt_tokens=0, completion_tokens=0, finish_reason="stop")


@pytest.fixture(scope="module")
def embedder(session_backends):
    return session_backends.embedder


def _gpu(ctx, llm, profile="gpu"):
    return dataclasses.replace(ctx, settings=Settings(profile=profile),
                               backends=SimpleNamespace(embedder=ctx.backends.embedder, llm=llm))


def test_gpu_profile_generates_the_overview_once_per_query(tmp_path, embedder):
    ctx = _topic_index(tmp_path, embedder, with_summary=True)
    llm = FakeOverviewLLM("The dog plays fetch with its owner in the park and later catches a frisbee.\n"
                          "Relevant parts: [120.0s–180.0s], [0.0s–60.0s]")
    gctx = _gpu(ctx, llm)
    obs = global_explore.run(gctx, {"query": "when does the dog fetch the ball?"})
    assert not obs.error, obs.text
    print(obs.text)
    (messages, kw), = llm.calls
    prompt = messages[-1]["content"]
    # every segment summary with its time range, in time order, and the query go into the one call
    assert prompt.index("[0.0s–60.0s] A chef") < prompt.index("[60.0s–120.0s]") < prompt.index("[180.0s–240.0s]")
    assert "when does the dog fetch the ball?" in prompt and "A day in the city" in prompt
    assert kw["temperature"] == 0.0 and kw["max_tokens"] > 0
    assert kw["thinking"] is False  # issue 37: a Qwen3 that thinks first could spend the budget in <think>
    assert obs.data["generated"].startswith("The dog plays fetch") and not obs.data["cached"]
    assert "generated for this query" in obs.text and "catches a frisbee" in obs.text
    # the candidates are the parts the overview names, in its order
    assert obs.evidence == [[120.0, 180.0], [0.0, 60.0]]
    again = global_explore.run(gctx, {"query": "when does the dog fetch the ball?"})
    assert len(llm.calls) == 1 and again.data["cached"] and again.text == obs.text
    other = global_explore.run(gctx, {"query": "what was on the chart in the meeting?"})
    assert len(llm.calls) == 2 and not other.data["cached"]


def test_cpu_profile_ranks_without_the_llm(tmp_path, embedder):
    ctx = _topic_index(tmp_path, embedder, with_summary=True)
    llm = FakeOverviewLLM("unused")
    obs = global_explore.run(_gpu(ctx, llm, profile="cpu"), {"query": "when does the dog fetch the ball?"})
    assert not llm.calls and obs.data["generated"] is None
    assert obs.evidence[0] == [120.0, 180.0] and "ranked by similarity" in obs.text


def test_failed_overview_falls_back_to_ranking_and_a_lost_server_is_raised(tmp_path, embedder):
    ctx = _topic_index(tmp_path, embedder, with_summary=True)
    over = global_explore.run(_gpu(ctx, FakeOverviewLLM(error=ContextOverflowError("prompt too long"))),
                              {"query": "the office meeting"})
    assert not over.error and over.data["generated"] is None and "generated overview failed" in over.text
    assert over.evidence[0] == [180.0, 240.0]
    gone = global_explore.run(_gpu(ctx, FakeOverviewLLM(error=LLMUnavailableError("server gone"))),
                              {"query": "the office meeting"})
    assert gone.error and "server gone" in gone.text


def test_a_think_block_before_the_overview_is_dropped(tmp_path, embedder):
    """A server without a reasoning parser returns the think block in the content: the overview is what follows."""
    ctx = _topic_index(tmp_path, embedder, with_summary=True)
    llm = FakeOverviewLLM("<think>The query asks about a dog.</think>\nThe dog fetches.\nRelevant parts: [120.0s–180.0s]")
    obs = global_explore.run(_gpu(ctx, llm), {"query": "where is the dog?"})
    assert obs.data["generated"].startswith("The dog fetches") and "<think>" not in obs.text
    assert obs.evidence == [[120.0, 180.0]]
