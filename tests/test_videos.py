"""Questions over several videos (issue 21): names and arguments, the ``video`` argument of every tool, the
agent over two real indexes driven by a scripted orchestrator, answer types over videos, evidence and traces.

Everything but the orchestrator is real: two synthetic videos with known signs, their indexes, the cpu
backends, the prompt files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_agent_loop import REPO, ScriptedLLM, call

from avi.index.build import ensure_index
from avi.prompts import PromptLibrary
from avi.video.decode import VideoReader, probe
from avi.videos.context import multi_context
from avi.videos.kinds import mentioned, read_structured, read_video_answer, video_kind
from avi.videos.naming import expand_videos, resolve_name, video_names
from avi.videos.tools import video_tools

TO_REVIEW = "THOUGHT: both are read. [STAGE_SWITCH: review]"


@pytest.fixture(scope="module")
def lobby_video(tmp_path_factory) -> Path:
    """A second video: 15 s, one scene, the sign "GATE 9" at 2-8 s."""
    from synth import Spec, Text, make_video

    return make_video(tmp_path_factory.mktemp("videos2") / "lobby.mp4",
                      Spec(duration_s=15.0, scenes=[(0.0, "maroon")], texts=[Text("GATE 9", 2.0, 8.0)]))


@pytest.fixture(scope="module")
def lobby_index(tmp_path_factory, lobby_video, session_backends):
    from avi.config import Settings

    s = Settings(index_root=tmp_path_factory.mktemp("indexes2"), graph_llm=False, summary_llm=False)
    return ensure_index(lobby_video, s, session_backends, progress=False)


@pytest.fixture
def two(settings, sign_video, sign_index, lobby_video, lobby_index, session_backends):
    """``(ctx, names)`` over the sign video (20 s, EXIT 42 at 4-9 s) and the lobby video (15 s, GATE 9)."""
    names = video_names([sign_video, lobby_video])
    ctx = multi_context(settings, session_backends, {
        names[0]: (sign_index, VideoReader(probe(sign_video))),
        names[1]: (lobby_index, VideoReader(probe(lobby_video)))})
    return ctx, names


# ------------------------------------------------------------------ names and arguments


def test_expand_videos_folder_glob_and_files(tmp_path):
    for n in ("b.mp4", "a.avi", "notes.txt"):
        (tmp_path / n).write_bytes(b"x")
    assert expand_videos([tmp_path]) == [tmp_path / "a.avi", tmp_path / "b.mp4"]
    assert expand_videos([str(tmp_path / "*.mp4"), tmp_path / "b.mp4", tmp_path / "a.avi"]) == \
        [tmp_path / "b.mp4", tmp_path / "a.avi"]  # each once, in the order first named
    with pytest.raises(Exception, match="no file matches"):
        expand_videos([str(tmp_path / "*.mkv")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match="is not a file, and as a folder it holds no video files"):
        expand_videos([tmp_path / "empty"])


def test_names_unique_and_resolved():
    names = video_names([Path("/x/cam 1.mp4"), Path("/y/cam 1.avi"), Path("/z/tree.avi")])
    assert names == ["cam_1", "cam_1-2", "tree"]
    assert resolve_name("TREE.avi", names) == "tree"
    assert resolve_name("video 2", names) == "cam_1-2"
    assert resolve_name("/some/where/cam_1.mp4", names) == "cam_1"
    assert resolve_name("garden", names) is None


def test_schema_has_typed_video_enum_required_only_for_ranges():
    tools = video_tools(["vtest", "tree"])
    clip = tools["clip_retrieve"].openai_schema()["function"]
    assert clip["parameters"]["properties"]["video"]["anyOf"][0]["enum"] == ["vtest", "tree"]
    assert "video" not in clip["parameters"].get("required", [])
    text = tools["text_extract"].openai_schema()["function"]["parameters"]
    assert text["properties"]["video"]["enum"] == ["vtest", "tree"] and "video" in text["required"]
    assert text["additionalProperties"] is False
    from avi.tools import ALL_TOOLS

    assert "video" not in ALL_TOOLS["text_extract"].parameters_schema()["properties"]  # one video: unchanged


# ------------------------------------------------------------------ tools over two videos


def test_perceive_tool_reads_the_named_video_only(two):
    ctx, names = two
    obs = video_tools(names)["text_extract"].run(ctx, {"video": names[1], "time_ranges": [[4, 6]]})
    assert not obs.error and "GATE" in obs.text and "EXIT" not in obs.text
    assert obs.data["video"] == names[1] and obs.evidence and all(e[2] == names[1] for e in obs.evidence)
    assert ctx.frames_spent == len(obs.frames_s) > 0  # one budget over all videos


def test_wrong_or_missing_video_lists_the_valid_names(two):
    ctx, names = two
    tool = video_tools(names)["text_extract"]
    for args in ({"video": "garden", "time_ranges": [[4, 6]]}, {"time_ranges": [[4, 6]]}):
        obs = tool.run(ctx, args)
        assert obs.error and all(n in obs.text for n in names), obs.text
    assert ctx.frames_spent == 0


def test_times_are_per_video(two):
    ctx, names = two
    obs = video_tools(names)["text_extract"].run(ctx, {"video": names[1], "time_ranges": [[16, 19]]})
    assert obs.error and "15.0" in obs.text  # 16-19 s exists in the 20 s video, not in the 15 s one


def test_clip_retrieve_over_all_videos_ranks_together(two):
    ctx, names = two
    obs = video_tools(names)["clip_retrieve"].run(ctx, {"query": "GATE 9", "top_k": 3})
    assert not obs.error, obs.text
    rows = obs.data["clips"]
    assert len(rows) == 3 and rows[0]["video"] == names[1]  # the lobby's sign is the best hit of both
    assert [r["similarity"] for r in rows] == sorted((r["similarity"] for r in rows), reverse=True)
    assert set(obs.data["per_video"]) == set(names)
    assert all(len(e) == 3 and e[2] in names for e in obs.evidence)
    assert all(line.split()[0] in names for line in obs.text.splitlines()[1:4])


def test_global_explore_gives_one_section_per_video(two):
    ctx, names = two
    obs = video_tools(names)["global_explore"].run(ctx, {"query": "signs"})
    assert not obs.error and all(f"Video {n}:" in obs.text for n in names)


# ------------------------------------------------------------------ answer types over videos


@pytest.mark.parametrize("question, kind", [
    ("Which video shows a red car?", "video"),
    ("In which video does someone wave?", "video"),
    ("Which of the videos show people walking?", "videos"),
    ("Order the videos by how many people they show, most first.", "video_order"),
    ("How many people are in the picture in all videos together?", None),
])
def test_video_kind(question, kind):
    assert video_kind(question) == kind


def test_reading_video_answers():
    names = ["vtest", "tree", "carphone_pristine", "carphone_distorted"]
    assert mentioned("tree.avi, then vtest", names) == ["tree", "vtest"]
    assert read_video_answer("video", "The sign is in carphone_distorted.", names) == "carphone_distorted"
    assert read_video_answer("video", "vtest or tree", names) is None  # two names for one video: no guess
    assert read_video_answer("videos", "tree and vtest", names) == ["vtest", "tree"]
    assert read_video_answer("video_order", "tree, vtest", names) == ["tree", "vtest"]
    assert read_video_answer("video_order", "tree", names) is None
    assert read_video_answer("video", "video 2", names) == "tree"
    assert read_structured("video_order", {"order": ["tree", "vtest", "tree"]}, names) == ["tree", "vtest"]
    assert read_structured("video", {"video": "garden"}, names) is None


# ------------------------------------------------------------------ the agent over two videos


def _agent(two, settings, replies, structured=False):
    from avi.videos.agent import MultiAgent

    settings.structured_answer, settings.choice_scoring = structured, "off"
    ctx, names = two
    llm = ScriptedLLM(replies)
    return MultiAgent(llm, ctx, PromptLibrary(REPO / "prompts"), settings), llm, names


def test_agent_answers_which_video_with_labelled_evidence(two, settings):
    from avi.videos.pipeline import MultiTrace

    ctx, names = two
    agent, llm, names = _agent(two, settings, [
        call("clip_retrieve", query="GATE"),
        call("text_extract", video=names[1], time_ranges=[[3, 7]]),
        call("text_extract", video=names[0], time_ranges=[[5, 7]]),
        TO_REVIEW, f"THOUGHT: GATE 9 is in {names[1]}.\n**Answer:** {names[1]}"])
    q = "Which video shows a sign that says GATE 9?"
    result = agent.run(q, MultiTrace(question=q))
    assert result.answer == names[1] and result.answer_type == "video" and result.trace.answer_videos == [names[1]]
    assert result.evidence and all(len(e) == 3 and e[2] in names for e in result.evidence)
    assert {e[2] for e in result.evidence} == set(names)  # both signs were read, each in its own video
    first = llm.calls[0].messages[1]["content"]
    assert all(f"- {n}:" in first for n in names) and "Answer format: the name of the one video" in first
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in llm.calls[0].tools}
    assert schemas["text_extract"]["properties"]["video"]["enum"] == names
    steps = [s for s in result.trace.steps if s.kind == "tool_call"]
    assert [s.arguments.get("video") for s in steps] == [None, names[1], names[0]]
    assert all(r["video"] in names for r in steps[0].observation_data["clips"])


def test_agent_order_answer_and_unreadable_answer(two, settings):
    ctx, names = two
    agent, _, names = _agent(two, settings, [
        call("clip_retrieve", query="sign"), call("text_extract", video=names[0], time_ranges=[[5, 6]]),
        TO_REVIEW, f"**Answer:** {names[1]}, {names[0]}"])
    result = agent.run("Order the videos by how many signs they show, most first.")
    assert result.answer_type == "video_order" and result.order == [names[1], names[0]]
    agent, llm, names = _agent(two, settings, [
        call("clip_retrieve", query="sign"), call("text_extract", video=names[0], time_ranges=[[5, 6]]),
        TO_REVIEW, "**Answer:** the garden one", f"**Answer:** {names[0]}"])
    result = agent.run("Which video shows more signs?")
    retry = llm.calls[-1].messages[-1]["content"]  # an answer naming no video is sent back with the format
    assert "does not follow the answer format" in retry and "the name of the one video" in retry
    assert result.answer == names[0] and result.note is None


def test_questions_about_the_videos_lengths_are_answered_from_their_durations(two, settings):
    """cross-order-length (bench/questions_multi): the 1.5B model ordered three lengths wrongly; the host knows
    them (sign video 20 s, lobby video 15 s) and answers before any model step."""
    from avi.agent.rules.videos import by_length

    ctx, names = two
    agent, llm, names = _agent(two, settings, [], structured=True)
    result = agent.run("Order the videos by their length, shortest first.")
    assert result.order == [names[1], names[0]] and result.answer == f"{names[1]}, {names[0]}" and not llm.calls
    assert "durations" in result.trace.steps[0].notes[1]
    agent, llm, names = _agent(two, settings, [])
    assert agent.run("Which video is the longest?").answer == names[0] and not llm.calls
    settings.answer_rules = "-video_length"  # the rule switched off: the model is asked
    agent, llm, names = _agent(two, settings, [call("clip_retrieve", query="video"), call(
        "text_extract", video=names[0], time_ranges=[[5, 6]]), TO_REVIEW, f"**Answer:** {names[1]}"])
    result = agent.run("Which video is the longest?")  # the model's (wrong) answer stands
    assert result.answer == names[1] and all(r["rule"] != "video_length" for r in result.trace.rules)
    lengths = {"a": 10.0, "b": 30.0, "c": 20.0}
    assert by_length("video_order", "Sort the videos from longest to shortest.", lengths) == ["b", "c", "a"]
    assert by_length("video_order", "Order the videos by length.", lengths) is None  # no direction given
    assert by_length("video", "Which video shows the longest queue?", lengths) is None  # not the video's length
    assert by_length("video", "Which video is shorter?", {"a": 10.0, "b": 30.0}) == "a"
    assert by_length("video", "Which video is the longest?", {"a": 10.0, "b": 10.01}) is None  # as long


def test_people_whose_faces_match_are_told_in_the_question_message(two, settings, monkeypatch):
    """avi.videos.people: the two indexes (synthetic, no people) give no line; with person subjects whose kept
    faces agree (the indexes' person_faces and tracks replaced: stand-ins for two real videos of one person) the
    first message names both videos and the subject's times."""
    ctx, names = two
    script = [call("clip_retrieve", query="man in a red coat"), call("text_extract", video=names[1], time_ranges=[[3, 7]]),
              call("text_extract", video=names[0], time_ranges=[[5, 7]]), TO_REVIEW, f"**Answer:** {names[0]}"]
    agent, llm, names = _agent(two, settings, script)
    agent.run("Which video shows the man in the red coat?")
    assert "People seen in more than one" not in llm.calls[0].messages[1]["content"]
    face = np.eye(1024, dtype=np.float32)[:1]
    for c, span in zip(ctx.contexts.values(), ([2.0, 6.5], [1.0, 3.0])):
        monkeypatch.setattr(c.index, "_person_faces", {"P1": face})
        monkeypatch.setattr(c.index, "_tracks", [{"id": "T1", "label": "person", "first_s": span[0],
                                                  "last_s": span[1], "subject": "P1"}])
    agent, llm, names = _agent(two, settings, script)
    agent.run("Which video shows the man in the red coat?")
    first = llm.calls[0].messages[1]["content"]
    assert (f"People seen in more than one of the videos:\n- the same person (the face matches) in "
            f"{names[0]} [2.0s–6.5s]; {names[1]} [1.0s–3.0s]") in first


def test_structured_answer_over_videos_is_an_enum(two, settings):
    ctx, names = two
    agent, llm, names = _agent(two, settings, [
        call("clip_retrieve", query="sign"), call("text_extract", video=names[0], time_ranges=[[5, 6]]),
        TO_REVIEW, f"**Answer:** {names[0]}.avi", json.dumps({"video": names[0]})], structured=True)
    result = agent.run("Which video shows EXIT 42?")
    assert result.answer == names[0] and result.trace.steps[-1].kind == "final_answer"
    assert llm.calls[-1].json_schema["properties"]["video"]["enum"] == names


def test_single_video_agent_unchanged(settings, sign_index, sign_video, session_backends):
    """One video: the tool schemas have no video argument and the question message is prompts/question.md."""
    from avi.agent.loop import Agent
    from avi.tools import ToolContext

    settings.structured_answer, settings.choice_scoring, settings.grounded_answers = False, "off", False
    llm = ScriptedLLM([call("clip_retrieve", query="sign"), call("text_extract", time_ranges=[[5, 6]]),
                       "[STAGE_SWITCH: review]", "**Answer:** EXIT 42"])
    ctx = ToolContext(settings=settings, index=sign_index, video=VideoReader(probe(sign_video)),
                      backends=session_backends)
    result = Agent(llm, ctx, PromptLibrary(REPO / "prompts"), settings).run("What does the sign say?")
    assert result.evidence and all(len(e) == 2 for e in result.evidence)
    assert all("video" not in t["function"]["parameters"]["properties"] for t in llm.calls[0].tools)
    assert "The video is 20.0 seconds long." in llm.calls[0].messages[1]["content"]


def test_videos_prompts_show_no_example_and_leave_the_single_video_fingerprint(tmp_path):
    """Small models copy examples: no prompt over several videos shows a video name, a file or an answer; and
    editing them leaves the fingerprint of the single-video prompts (answer keys of one-video jobs) as it was."""
    import re
    import shutil

    for path in (REPO / "prompts" / "videos").glob("*.md"):
        text = path.read_text()
        assert not re.search(r"\*\*Answer:\*\*\s*[\w\[(]", text), path.name
        assert not re.search(r"\.(?:mp4|avi|mkv|mov)\b|\bvideo ?\d", text, re.I), path.name
    copy = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", copy)
    before = PromptLibrary(copy).fingerprint()
    (copy / "videos" / "question.md").write_text("changed $question")
    assert PromptLibrary(copy).fingerprint() == before
    assert PromptLibrary(copy).render("videos/question", question="q") == "changed q"
