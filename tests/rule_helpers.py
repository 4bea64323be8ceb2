"""Helpers for tests of the answer rules (avi/agent/rules): a run's state and a RuleRun without an agent."""

from __future__ import annotations

from types import SimpleNamespace

from avi.agent.question import parse_question
from avi.agent.rules import RuleRun
from avi.agent.state import State
from avi.config import Settings
from avi.tools.base import QuestionScope
from avi.trace import Trace


def words(question: str) -> frozenset[str]:
    """The question's word set, as the measurement helpers take it."""
    return parse_question(question).words


def state(question: str, steps=(), *, kind: str = "auto", duration_s: float | None = None, **fields) -> State:
    """A run's state for ``question`` whose perceive calls returned ``steps`` (``(tool, data)``)."""
    st = State(q=parse_question(question, duration_s, kind))
    st.perceive_calls = [(tool, {}, data) for tool, data in steps]
    st.iteration, st.phase = 3, "review"
    for key, value in fields.items():
        setattr(st, key, value)
    return st


def rule_run(st: State, ctx=None, *, trace: Trace | None = None, tools: dict | None = None, settings=None,
             chat=None) -> RuleRun:
    """A RuleRun over ``st``; the default context has no index, video or detector worth reading."""
    ctx = ctx or SimpleNamespace(backends=SimpleNamespace(detector=SimpleNamespace(supports=lambda label: True)),
                                 scope=QuestionScope(), duration_s=60.0)
    return RuleRun(ctx=ctx, settings=settings or Settings(), st=st, trace=trace or Trace(question=st.question),
                   tools=tools or {}, chat=chat)
