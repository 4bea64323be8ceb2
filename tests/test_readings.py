"""The reading of an on-screen word the frames agree on (avi/agent/readings.py), from the reads of two real
sample videos' frames: bikes.mp4's taxi roof sign (read "AXI" at 2.5 s, cut by the frame's left edge, and "TAXI"
at 3.0 s) and box.mp4's lid ("CAMPRODON" in most frames, "CAMPBODON" in a blurred run)."""

from __future__ import annotations

from types import SimpleNamespace

from rule_helpers import rule_run, state

from avi.agent.readings import agreed_reading
from avi.agent.rules.texts import agreed_answer_reading
from avi.trace import Trace

BIKES = [("日", 0.923), ("AXI", 0.994), ("TAXI", 1.0), ("A-A", 0.86)]
BOX = [("CAMPBODON", 0.742)] * 3 + [("CAMPRODON", 0.956), ("CAMPRODON", 0.999), ("CAMPRODON", 0.915),
                                    ("COMPRODON", 0.986), ("AMPRODON", 0.99), ("MPRODON", 0.999)]


def test_a_cut_or_misread_word_becomes_the_reading_the_frames_agree_on():
    assert agreed_reading('"AXI"', BIKES)[0] == "TAXI"
    assert agreed_reading("CAMPBODON", BOX)[0] == "CAMPRODON"


def test_an_answer_that_is_the_agreed_reading_or_no_reading_is_kept():
    assert agreed_reading("TAXI", BIKES) is None
    assert agreed_reading("CAMPRODON", BOX) is None
    assert agreed_reading("a taxi sign", BIKES) is None  # not a read: the model's own words
    assert agreed_reading("Thursday", [("Thursday", 0.9)]) is None
    # a number with one more digit is another number, not the same one cut short
    assert agreed_reading("EXIT 4", [("EXIT 4", 0.9)] * 3 + [("EXIT 42", 0.9)]) is None


def test_the_agent_weighs_the_reads_of_the_range_the_question_names():
    caption = SimpleNamespace(data={"ocr": [{"text": "TAA", "score": 0.79, "t_s": 5.5},
                                            {"text": "AXI", "score": 0.6, "t_s": 20.0}]})
    host = SimpleNamespace(ctx=SimpleNamespace(focus_ranges=[[2.0, 3.0]], duration_s=30.0,
                                               index=SimpleNamespace(captions=[caption])))
    lines = [{"text": t, "score": s, "t_s": ts} for (t, s), ts in zip(BIKES, [0.5, 2.5, 3.0, 5.5])]
    st = state("What word is on the sign around 0:02-0:03?", [("text_extract", {"lines": lines})])
    trace = Trace(question=st.question)
    assert agreed_answer_reading(rule_run(st, host.ctx, trace=trace), '"AXI"') == "TAXI"
    assert "read as 'TAXI' more often" in trace.steps[-1].notes[0]
    host.ctx.focus_ranges = [[19.0, 21.0]]  # there only "AXI" was read: nothing to settle it against
    assert agreed_answer_reading(rule_run(st, host.ctx), "AXI") == "AXI"
