"""``--preset paper`` is the paper's agent (issue 54, item 1): every host step that is not in AVI's Algorithm 1 is
behind a named switch (:data:`avi.config_agent.HOST_STEPS`), the preset turns them all off, and a run under it starts
with the model's own Retrieve decision, no host step anywhere in its trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_agent_loop import TO_PERCEIVE, TO_REVIEW, ScriptedLLM, call

from avi.agent.loop import Agent
from avi.config_agent import HOST_STEPS, paper_agent_overrides
from avi.prompts import PromptLibrary
from avi.tools import ToolContext
from avi.trace import HOST_STEP
from avi.video.decode import VideoReader, probe

REPO = Path(__file__).resolve().parent.parent


def test_every_host_step_is_a_setting_and_the_preset_turns_it_off():
    from avi.config import Settings

    s = Settings(**paper_agent_overrides())
    assert all(getattr(s, k) == off for k, (off, _) in HOST_STEPS.items())
    assert s.answer_rule_names() == ()
    assert {"memory_route", "host_retrieve", "perceive_first", "time_places", "places_gate", "speech_gate",
            "extract_pass", "text_extract_frames_no_text", "ocr_question_script"} <= set(HOST_STEPS)


@pytest.mark.parametrize("question", ["What does the sign at 5 s say?", "What does the sign say?"])
def test_a_run_under_the_preset_starts_with_the_models_retrieve_step(settings, sign_index, sign_video,
                                                                     session_backends, question):
    for k, v in paper_agent_overrides().items():
        setattr(settings, k, v)
    llm = ScriptedLLM([call("clip_retrieve", query="sign"), TO_PERCEIVE, call("text_extract", time_ranges=[[4, 6]]),
                       TO_REVIEW, "THOUGHT: read.\n**Answer:** EXIT 42"])
    ctx = ToolContext(settings=settings, index=sign_index, video=VideoReader(probe(sign_video)),
                      backends=session_backends)
    result = Agent(llm, ctx, PromptLibrary(REPO / "prompts"), settings).run(question)
    steps = result.trace.steps
    assert steps[0].phase == "retrieve" and steps[0].tool == "clip_retrieve" and steps[0].llm_seconds > 0
    assert not any(HOST_STEP in (s.notes or []) for s in steps), [s.notes for s in steps]
    assert llm.calls[0].json_schema is None and result.trace.memory == {}  # no parse, no memory route
    assert result.answer == "EXIT 42" and result.rules == []
    first = llm.calls[0].messages[1]["content"]
    assert "time words point to" not in first and "Look there first" not in first


def test_config_show_lists_the_host_steps_and_the_preset(capsys):
    from avi.cli import main

    with pytest.raises(SystemExit) as done:
        main(["config", "show", "--json", "--preset", "paper"])
    assert done.value.code == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["host_steps_on"] == [] and shown["answer_rules_in_effect"] == []
    with pytest.raises(SystemExit):
        main(["config", "show"])
    text = capsys.readouterr().out
    assert all(f"] {k} = " in text for k in HOST_STEPS)
