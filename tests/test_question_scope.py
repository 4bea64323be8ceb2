"""The question's scope (avi/tools/base.py QuestionScope, issue 54): the agent gives it once per question as a whole,
frozen, in the question's own context (ToolContext.for_question), never written into the context it was given; a
question over several videos hands the same scope to a copy of each video's context. No weights are loaded."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from avi.agent.loop import Agent
from avi.agent.state import State
from avi.config import Settings
from avi.prompts import PromptLibrary
from avi.tools import QuestionScope, ToolContext
from avi.trace import Trace
from avi.videos.context import multi_context


def _video(duration_s: float):
    return SimpleNamespace(info=SimpleNamespace(duration_s=duration_s))


def _index():
    return SimpleNamespace(transcript=[], manifest={}, captions=[], path=None)


@pytest.mark.parametrize("question, scope", [
    ("What is written on the sign between 0:10 and 0:20?", QuestionScope(((10.0, 20.0),), None, "latin")),
    ("How many people are there at 1:00?", QuestionScope(((57.5, 62.5),), 4, "latin")),
])
def test_the_agent_sets_the_questions_scope_as_a_whole(question, scope):
    settings = Settings(host_retrieve=False, text_extract_frames_no_text=4)
    backends = SimpleNamespace(detector=SimpleNamespace(vocabulary="people and faces"))
    ctx = ToolContext(settings=settings, index=_index(), video=_video(120.0), backends=backends)
    agent = Agent(None, ctx, PromptLibrary(settings.prompts_dir), settings)
    st = State(q=agent.parse(question))
    st.answer_format = agent.answer_format(st.q)
    agent._open(st, Trace(question=question))
    assert agent.ctx.scope == scope
    assert ctx.scope == QuestionScope()  # the context the agent was given is not written into
    assert agent.ctx.index is ctx.index and agent.ctx._cache is ctx._cache  # the same video, the same caches
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.ctx.scope.text_script = None  # type: ignore[misc]


def test_each_videos_context_gets_the_questions_scope():
    settings = Settings()
    ctx = multi_context(settings, SimpleNamespace(), {"a": (_index(), _video(10.0)), "b": (_index(), _video(20.0))})
    ctx = ctx.for_question(QuestionScope(((1.0, 2.0),), 3, "latin"))
    ctx.spend_frames(5)
    sub = ctx.sub("b")
    assert sub.scope is ctx.scope and sub.frames_spent == 5 and sub.budget_duration_s == 30.0
    own = ctx.contexts["b"]
    assert own.scope == QuestionScope() and own.frames_spent == 0  # the video's own context is not written into
    assert sub._cache is own._cache  # its shot list is cached once per video
    sub.spend_frames(2)
    ctx.settle(sub)
    assert ctx.frames_spent == 7
