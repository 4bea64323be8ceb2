"""The question's scope (avi/tools/base.py QuestionScope, issue 54): the agent sets it once per question as a whole,
frozen; a question over several videos hands the same scope to each video's context. No weights are loaded."""

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
    assert ctx.scope == scope
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.scope.text_script = None  # type: ignore[misc]


def test_each_videos_context_gets_the_questions_scope():
    settings = Settings()
    ctx = multi_context(settings, SimpleNamespace(), {"a": (_index(), _video(10.0)), "b": (_index(), _video(20.0))})
    ctx.scope, ctx.frames_spent = QuestionScope(((1.0, 2.0),), 3, "latin"), 5
    sub = ctx.sub("b")
    assert sub.scope is ctx.scope and sub.frames_spent == 5 and sub.budget_duration_s == 30.0
