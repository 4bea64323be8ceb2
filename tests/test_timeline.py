"""The frame budget α and the coarse-to-fine Perceive tools (issue 20): avi/budget.py, avi/tools/timeline.py.

The overview/skim tests run the real cpu detector and OCR on the generated sign video (tests/synth.py:
"EXIT 42" on screen 4-9 s, "ROOM 7B" 12-17 s, a navy scene cut to dark green at 10 s, a red square 1-3 s).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from avi.budget import frame_alpha, overview_frames, question_budget, skim_frames
from avi.config import Settings
from avi.tools import ALL_TOOLS, PHASE_TOOLS, TIMELINE_TOOLS, ToolContext, tools_for
from avi.tools.timeline import spans, uniform_times
from avi.trace import Trace
from avi.video.decode import VideoReader, probe


def test_alpha_and_budget_follow_the_video_length():
    # VideoSeek: alpha 2 for videos up to an hour, 4 for longer ones; a set alpha wins
    assert frame_alpha(600.0) == 2.0 and frame_alpha(3 * 3600.0) == 4.0 and frame_alpha(600.0, 1.0) == 1.0
    auto = SimpleNamespace(frame_budget="auto", frame_alpha=0.0)
    assert question_budget(600.0, auto) == 256 and question_budget(3 * 3600.0, auto) == 512
    assert question_budget(600.0, SimpleNamespace(frame_budget="auto", frame_alpha=1.0)) == 128
    assert question_budget(600.0, SimpleNamespace(frame_budget=40, frame_alpha=4.0)) == 40  # a number wins
    assert question_budget(600.0, SimpleNamespace(frame_budget=0)) is None  # 0 = no budget
    assert question_budget(600.0, SimpleNamespace()) is None
    assert (overview_frames(2.0), skim_frames(2.0), overview_frames(4.0), skim_frames(4.0)) == (32, 8, 64, 16)
    assert Settings().frame_budget == "auto" and Settings(frame_budget="12").frame_budget == 12


def test_uniform_times_spread_over_ranges():
    assert uniform_times([[0.0, 8.0]], 4) == [1.0, 3.0, 5.0, 7.0]
    assert uniform_times([[0.0, 2.0], [10.0, 12.0]], 2) == [1.0, 11.0]  # one per equal share of the length
    assert uniform_times([[5.0, 5.0]], 3) == [5.0] and uniform_times([], 3) == []


def test_spans_bridge_one_missed_frame():
    times = [float(t) for t in range(8)]
    assert spans(times, [True, False, True, False, False, True, True, False]) == [(0, 2), (5, 6)]
    assert spans(times, [False] * 8) == []


def test_timeline_tools_only_under_the_timeline_strategy():
    assert [t.name for t in tools_for("perceive")] == [t.name for t in PHASE_TOOLS["perceive"]]
    names = [t.name for t in tools_for("perceive", "timeline")]
    assert names[:2] == ["overview", "skim"] and set(names[2:]) == {t.name for t in PHASE_TOOLS["perceive"]}
    assert {t.name for t in TIMELINE_TOOLS} <= set(ALL_TOOLS)
    assert tools_for("retrieve", "timeline") == PHASE_TOOLS["retrieve"]


def test_agent_offers_overview_and_skim_only_when_asked(sign_video, sign_index, session_backends):
    from avi.agent.loop import Agent
    from avi.prompts import PromptLibrary

    for strategy, expected in (("agent", False), ("timeline", True)):
        s = Settings(perceive_strategy=strategy)
        ctx = ToolContext(settings=s, index=sign_index, video=VideoReader(probe(sign_video)), backends=session_backends)
        agent = Agent(None, ctx, PromptLibrary(s.prompts_dir), s)
        names = {sch["function"]["name"] for sch in agent.chat.schemas}
        assert ("overview" in names and "skim" in names) is expected
        assert ("overview" in agent.chat.system()) is expected
        assert ("skim on that stretch" in agent.perceive_guide()) is expected
        assert ("overview" in agent.gates.usable("perceive")) is expected


@pytest.fixture(scope="module")
def sign_ctx(sign_video, session_backends):
    s = Settings()
    return ToolContext(settings=s, index=None, video=VideoReader(probe(sign_video), s.max_side),
                       backends=session_backends)


def test_overview_timeline_of_the_sign_video(sign_ctx):
    sign_ctx.frames_spent = 0
    obs = ALL_TOOLS["overview"].run(sign_ctx, {"query": "When is the exit sign shown?"})
    assert not obs.error, obs.text
    assert len(obs.frames_s) == 32 and sign_ctx.frames_spent == 32  # 16 alpha, alpha 2 for a 20 s video
    lines = {line.split(":")[0]: line for line in obs.text.splitlines()[1:]}
    exit_line = lines['text "exit 42"']
    assert exit_line.endswith("<- query")
    # the sign is on screen 4-9 s: the measured span lies inside it and covers most of it
    [[a, b]] = obs.evidence
    assert 4.0 <= a <= 4.7 and 8.3 <= b <= 9.0
    assert "<- query" not in lines['text "room 7b"']
    assert "red square" in obs.text  # the square of 1-3 s, seen by the shape finder
    assert obs.data["alpha"] == 2.0 and len(obs.data["rows"]) == 32


def test_skim_finds_the_cut_and_says_when_the_budget_cuts_it(sign_ctx):
    sign_ctx.frames_spent = 0
    obs = ALL_TOOLS["skim"].run(sign_ctx, {"time_ranges": [[8, 14]], "query": "green background"})
    green = [line for line in obs.text.splitlines() if line.startswith("mostly green")]
    assert green and green[0].endswith("<- query")
    [[a, b]] = obs.evidence
    assert 10.0 <= a <= 11.0  # the scene turns green at the 10 s cut
    # still green at the skim's last frame: followed past 14 s, 4 frames one step apart, green in all of them
    assert not obs.error and len(obs.frames_s) == 8 + 4 and sign_ctx.frames_spent == 12
    assert 16.0 <= b <= 17.0 and "or later, past the range" in green[0]
    sign_ctx.frames_spent = sign_ctx.frame_budget - 3  # three frames left of the question's budget
    obs = ALL_TOOLS["skim"].run(sign_ctx, {"time_ranges": [[0, 20]]})
    assert len(obs.frames_s) == 3 and "had 3 left" in obs.text and "looked at 3 of its 8 frames" in obs.text
    obs = ALL_TOOLS["skim"].run(sign_ctx, {"time_ranges": [[0, 20]]})
    assert obs.error and "frame budget" in obs.text


def test_skim_follows_a_query_thing_past_the_start_of_its_range(sign_ctx):
    # "EXIT 42" is on screen 4-9 s; a skim of 5.5-12 s sees it at its first frame, so it looks back one step at a
    # time until a frame without it: the span starts near 4 s, not at 5.9 s where the skim began
    sign_ctx.frames_spent = 0
    obs = ALL_TOOLS["skim"].run(sign_ctx, {"time_ranges": [[5.5, 12]], "query": "exit sign"})
    assert not obs.error, obs.text
    exit_line = next(line for line in obs.text.splitlines() if line.startswith('text "exit 42"'))
    assert "before the range" in exit_line and "or earlier" not in exit_line and "past the range" not in exit_line
    [[a, b]] = obs.evidence
    assert 4.0 <= a <= 4.7 and 8.0 <= b <= 9.0
    followed = obs.data["follow_s"]
    assert followed and all(t < 5.5 for t in followed) and len(obs.frames_s) == 8 + len(followed)
    # with the budget all but spent there is nothing to follow with
    sign_ctx.frames_spent = sign_ctx.frame_budget - 8
    obs = ALL_TOOLS["skim"].run(sign_ctx, {"time_ranges": [[5.5, 12]], "query": "exit sign"})
    assert obs.data["follow_s"] == [] and obs.evidence[0][0] > 5.5


def test_focus_tools_say_when_the_budget_cuts_their_sample(sign_ctx):
    sign_ctx.frames_spent = sign_ctx.frame_budget - 5
    obs = ALL_TOOLS["text_extract"].run(sign_ctx, {"time_ranges": [[0, 20]]})
    assert len(obs.frames_s) == 5
    assert "had 5 left: looked at 5 of the 16 frames this call would take" in obs.text


def test_trace_counts_frames_per_tool():
    trace = Trace(question="q", video="v", video_sha256="0" * 64)
    trace.add(kind="tool_call", tool="overview", frames_s=[1.0, 2.0, 3.0], iteration=1, phase="perceive")
    trace.add(kind="tool_call", tool="text_extract", frames_s=[1.0], iteration=2, phase="perceive")
    trace.add(kind="final_answer", frames_s=[4.0, 5.0], iteration=3, phase="review")
    totals = trace.totals()
    assert totals["frames_per_tool"] == {"overview": 3, "text_extract": 1, "final_answer": 2}
    assert totals["frames_spent"] == 6


# ----------------------------------------------------------------- EEA-style tree search (avi/agent/tree_search.py)


def test_tree_search_scores():
    from avi.tools.tree_search import coverage_times, log_mean_exp, normalised_entropy

    assert log_mean_exp([0.5]) == pytest.approx(0.5) and log_mean_exp([]) == 0.0
    assert log_mean_exp([0.2, 0.5]) <= 0.5  # a soft maximum: at most the maximum, above the mean
    assert log_mean_exp([0.2, 0.5]) > (0.2 + 0.5) / 2
    assert normalised_entropy([0.3, 0.3, 0.3]) == pytest.approx(1.0)  # equal rewards: fully uncertain
    assert normalised_entropy([1.0, 0.0, 0.0]) < 0.01  # one clear winner
    assert normalised_entropy([0.7]) == 1.0
    # anchors kept, then the longest gaps cut in the middle (1-D k-center coverage)
    assert coverage_times(0.0, 20.0, [], 3) == [5.0, 10.0, 15.0]
    assert coverage_times(0.0, 20.0, [2.0], 2) == [2.0, 11.0]
    assert coverage_times(0.0, 20.0, [25.0], 1) == [10.0]  # an anchor outside the segment is not used


@pytest.mark.parametrize("question, truth", [("When is the ROOM 7B sign shown?", (12.0, 17.0)),
                                             ("When does the red square appear?", (1.0, 3.0))])
def test_tree_search_finds_the_segment_on_the_sign_video(sign_video, sign_index, session_backends, question, truth):
    from avi.tools.tree_search import tree_search

    s = Settings()
    ctx = ToolContext(settings=s, index=sign_index, video=VideoReader(probe(sign_video), s.max_side),
                      backends=session_backends)
    obs = tree_search.run(ctx, {"question": question, "time_ranges": [[0, 20]]})
    assert not obs.error, obs.text
    assert 0 < len(obs.frames_s) <= 32 and ctx.frames_spent == len(obs.frames_s)
    best_s, best_e, best_h = obs.data["best"][0]
    assert best_s < truth[1] and best_e > truth[0], obs.text  # the best segment overlaps the truth
    assert obs.evidence[0] == [best_s, best_e] and "best segments:" in obs.text
    tree = obs.data["tree"]
    assert tree[0]["expanded"] and all(n["parent"] == 0 for n in tree[1:] if n["depth"] == 1)
    assert max(n["r"] for n in tree) > 0  # the measured reward saw the sign's text or the square
