"""A person on some ground, measured by the colour beside the feet (avi/agent/surfaces.py,
MeasuredAnswers._measured_ground), on real footage whose frames were looked at (bench/REAL.md, vtest.avi: the
lower-left of the picture is a mown lawn; people keep to the paving until a woman in a long black coat steps onto
the lawn at about 50.5 s and back onto the paving at about 74.5 s; nobody is on the lawn in the first 40 s)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from avi.agent.measured_answers import MeasuredAnswers
from avi.agent.surfaces import ground_colours, ground_question, ground_runs, on_ground
from avi.agent.trace import Trace
from avi.config import Settings
from avi.tools.base import ToolContext
from avi.video.decode import VideoReader, probe
from conftest import sample_video


def test_questions_about_a_person_on_some_ground():
    q = "During which time span is the woman in a long black coat walking on the big lawn in the foreground?"
    assert ground_question(q) == ("lawn", {"green"}, "foreground")
    assert ground_question("Is anyone walking onto the grass?") == ("grass", {"green"}, None)
    assert ground_question("When does the man stand on the paving?") == ("paving", {"gray"}, None)
    assert ground_question("What stands on the lawn next to the lamp post?") is None  # no person asked about
    assert ground_question("What covers most of the lower half of the picture?") is None


def test_the_ground_is_the_colour_beside_the_feet_not_the_legs():
    img = np.full((200, 300, 3), (40, 160, 40), np.uint8)  # a lawn
    img[:100] = (128, 128, 128)  # paving in the upper half
    img[40:190, 140:160] = (10, 10, 10)  # a person in black standing on the lawn (feet at y 190)
    assert ground_colours(img, (140, 40, 160, 190))[0][0] == "green"
    assert on_ground(img, [(140, 40, 160, 190)], {"green"}, "foreground")
    assert not on_ground(img, [(140, 40, 160, 190)], {"green"}, "background")  # feet in the lower half
    assert not on_ground(img, [(140, 10, 160, 90)], {"green"}, None)  # feet on the paving


def test_runs_need_two_frames_and_bridge_one_missing_frame():
    times = [float(t) for t in range(10)]
    on = [True, False, False, True, True, False, True, True, False, False]
    assert ground_runs(times, on) == [[2.5, 7.5]]  # 0 alone is dropped; 3-4 and 6-7 bridged over 5
    assert ground_runs(times, [False] * 10) == []


def _ask(question, kind, backends):
    ctx = ToolContext(settings=Settings(frame_budget=0), index=SimpleNamespace(captions=[], path=None),
                      video=VideoReader(probe(sample_video("vtest.avi"))), backends=backends)
    from avi.video.timecode import question_ranges

    ctx.focus_ranges = [list(span) for _, span in question_ranges(question, ctx.duration_s)]
    st = SimpleNamespace(kind=kind, question=question, evidence=[], iteration=0, phase="retrieve")
    trace = Trace(question=question)
    return MeasuredAnswers._measured_ground(SimpleNamespace(ctx=ctx, settings=Settings()), st, trace), trace


def test_the_woman_on_the_lawn_is_measured_on_real_footage(session_backends):
    got, trace = _ask("During which time span is the woman with curly blonde hair and a long black coat walking "
                      "on the big lawn in the foreground?", "interval", session_backends)
    a, b = (float(v) for v in got[0].strip("[]").replace("s", "").split(","))
    truth = (50.5, 74.5)
    iou = (min(b, truth[1]) - max(a, truth[0])) / (max(b, truth[1]) - min(a, truth[0]))
    assert iou >= 0.7, (got, trace.steps[-1].notes)
    got, _ = _ask("In the first 40 seconds, does anyone walk onto the big lawn in the foreground?", "yesno",
                  session_backends)
    assert got == ("no", None)
    got, _ = _ask("At 1:00, is anyone walking on the lawn in the foreground?", "yesno", session_backends)
    assert got == ("yes", None)
    # everyone walks on the paving: the ground singles nobody out, and the model answers
    got, _ = _ask("During which time span does the man dressed all in black stand on the paving?", "interval",
                  session_backends)
    assert got is None
