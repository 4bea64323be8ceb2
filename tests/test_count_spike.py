"""A count seen in one frame only is checked on the frames next to it before the largest count is read
(avi/agent/rules/measured.py count_spike; avi/agent/rules/decide.py confirm_count_spike, read by count_at_moment):
believed when the neighbours show it, still a spike when they do not. Real detector (the shapes backend of the cpu
profile) on synthetic videos whose shapes are drawn at known times."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rule_helpers import rule_run, state, words
from synth import Shape, Spec, make_video

from avi.agent.rules.measured import count_spike
from avi.agent.rules.texts import measured_count
from avi.config import Settings
from avi.tools import ALL_TOOLS
from avi.tools.base import ToolContext
from avi.trace import HOST_STEP, Trace
from avi.video.decode import VideoReader, probe

QUESTION = "The yellow triangles appear one after another. How many yellow triangles are on screen at most at the " \
           "same time?"


def _counts(label, per_frame):
    return "object_detect", {"summary": {label: {"per_frame": per_frame}}}


def test_a_spike_is_the_largest_count_seen_in_one_frame_above_every_believed_count():
    steps = [_counts("yellow triangle", [[1.0, 1], [2.0, 1], [3.0, 2], [4.0, 2], [8.5, 3]])]
    assert count_spike(steps, words(QUESTION)) == ("yellow triangle", 3, 8.5)
    steps.append(_counts("yellow triangle", [[9.0, 3]]))  # seen twice: believed, no spike
    assert count_spike(steps, words(QUESTION)) is None
    assert count_spike([_counts("yellow triangle", [[1.0, 1], [2.0, 1]])], words(QUESTION)) is None


def _host(video, backends):
    ctx = ToolContext(settings=Settings(frame_budget=0), index=SimpleNamespace(captions=[], path=None),
                      video=VideoReader(probe(video)), backends=backends)
    return SimpleNamespace(ctx=ctx, tools=dict(ALL_TOOLS), settings=Settings())


@pytest.mark.parametrize("third_for_s, expected", [(2.0, "3"), (0.15, "2")])
def test_the_frames_next_to_a_spike_decide_whether_it_is_believed(tmp_path, session_backends, third_for_s, expected):
    """Three yellow triangles appear at 2, 4 and 8 s. The model's object_detect call saw the third one in a
    single frame (8.5 s). When it stays on screen for 2 s its neighbours show three too and the largest count is
    three (count_at_moment replaces the model's 1); when it flashes for 0.15 s around 8.5 s the neighbours show
    two, three stays a spike and the largest believed count is two."""
    start = 8.0 if third_for_s > 1 else 8.45
    spec = Spec(duration_s=11.0, scenes=[(0.0, "black")], shapes=[
        Shape("triangle", 2.0, 10.0, color="yellow", size=90, x0=60, y=120),
        Shape("triangle", 4.0, 10.0, color="yellow", size=90, x0=260, y=120),
        Shape("triangle", start, start + third_for_s, color="yellow", size=90, x0=460, y=120)])
    host = _host(make_video(tmp_path / "tri.mp4", spec), session_backends)
    obs = host.tools["object_detect"].run(host.ctx, {"time_ranges": [[1.0, 7.0], [8.5, 8.5]],
                                                    "objects": ["yellow triangle"]})
    per_frame = dict(map(tuple, obs.data["summary"]["yellow triangle"]["per_frame"]))
    assert per_frame[8.5] == 3 and max(per_frame[t] for t in per_frame if t < 8) == 2, per_frame
    st = state(QUESTION, [("object_detect", obs.data)], iteration=5)
    trace = Trace(question=QUESTION)
    got = measured_count(rule_run(st, host.ctx, trace=trace, tools=host.tools), "1")
    host_call = next(s for s in trace.steps if s.kind == "tool_call")
    assert HOST_STEP in host_call.notes and host_call.arguments["time_ranges"] == [[7.5, 9.5]]
    assert got == expected, trace.steps[-1].notes
