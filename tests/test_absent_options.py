"""Options ruled out by the frames (avi/agent/rules/choice.py absent_options): an option naming a thing the detector finds,
found in none of the frames of the range the question names, is not the answer. Real footage whose frames were
looked at (bench/REAL.md, bikes.mp4: the first 1.2 s are a top-down view of asphalt with a red car in a corner,
no person; after the cut at 1.2 s a man in a dark suit walks between cars)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import sample_video
from rule_helpers import rule_run, state

from avi.agent.rules.choice import absent_options
from avi.config import Settings
from avi.tools import ALL_TOOLS
from avi.tools.base import QuestionScope, ToolContext
from avi.trace import Trace
from avi.video.decode import VideoReader, probe
from avi.video.timecode import question_ranges


def _absent(question, backends):
    ctx = ToolContext(settings=Settings(frame_budget=0), index=SimpleNamespace(captions=[], path=None),
                      video=VideoReader(probe(sample_video("bikes.mp4"))), backends=backends)
    ctx = ctx.for_question(QuestionScope(tuple(tuple(span) for _, span in question_ranges(question, ctx.duration_s))))
    trace = Trace(question=question)
    return absent_options(rule_run(state(question, iteration=2), ctx, trace=trace, tools=ALL_TOOLS)), trace


@pytest.mark.parametrize("question, absent", [
    # no person in the first second: the cyclist and the man are ruled out; no word is legible there: nor is
    # the sign; the view cannot be checked
    ("What is shown in the first second, before the first cut? (A) a cyclist in a helmet (B) a taxi sign "
     "(C) a man in a dark suit (D) a view looking straight down onto a street", {"A", "B", "C"}),
    # the taxi sign is read at 1.5-3 s (its word is legible): only the absent person options go
    ("Between 1.5 and 3 seconds, what is shown? (A) a taxi sign (B) a dog (C) a bus (D) a view of the sky",
     {"B", "C"}),
    # every option is a person, and a person is seen: nothing is ruled out
    ("In the first three seconds, who is shown? (A) a cyclist (B) a man in a dark suit (C) a woman (D) a police "
     "officer", set()),
    # no time words: the whole video is not sampled for absence
    ("What is shown? (A) a cyclist in a helmet (B) a taxi sign (C) a man in a dark suit (D) a view", set()),
])
def test_options_the_frames_rule_out(session_backends, question, absent):
    got, trace = _absent(question, session_backends)
    assert got == absent, [s.notes for s in trace.steps]
    if absent:
        assert "ruled out" in trace.steps[-1].notes[-1]
