"""The Retrieve -> Perceive -> Review state machine, driven by a scripted fake LLM.

The orchestrator is replaced by :class:`ScriptedLLM`; everything else is real:
the synthetic sign video, its index (built once per session), the cpu
backends (RapidOCR, HOG detector, MiniLM embedder) and the prompt files.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from avi.agent.loop import Agent
from avi.backends.llm import ChatResult, ContextOverflowError
from avi.errors import LLMUnavailableError
from avi.prompts import PromptLibrary
from avi.tools import ToolContext
from avi.trace import HOST_STEP, Trace
from avi.video.decode import VideoReader, probe

REPO = Path(__file__).resolve().parent.parent
PERCEIVE_TOOLS = ["text_extract", "object_detect", "boundary_detect", "frame_analysis", "memory_query"]
PERCEIVE_GATE = ["text_extract", "object_detect", "boundary_detect", "memory_query"]  # frame_analysis only after one of them
SEARCH_TOOLS = ["clip_retrieve", "global_explore"]  # no transcript, no LLM entity graph in the fake index
RETRY_MARK = "Your last reply could not be used"


@dataclass
class RecordedCall:
    messages: list[dict]
    tools: list[dict] | None
    require_tool: list[str] | None
    max_tokens: int
    temperature: float
    seed: int | None
    json_schema: dict | None = None


class ScriptedLLM:
    """Test double standing in for the OpenAI-compatible ChatClient (avi.backends.llm.ChatClient).

    ``chat`` has the real client's signature and returns the scripted replies in
    order: a ``ChatResult`` as is, a ``str`` as a ChatResult with that content
    (and fixed token counts), an exception instance is raised. Every call's
    messages (deep-copied), tools and ``require_tool`` are recorded in ``calls``.
    """

    def __init__(self, replies):
        self.replies = list(replies)
        self.calls: list[RecordedCall] = []
        self.base_url = "scripted://"
        self.model = "scripted"

    def chat(self, messages, tools=None, *, max_tokens, temperature, seed, stop=None, require_tool=None,
             json_schema=None):
        self.calls.append(RecordedCall(copy.deepcopy(messages), tools,
                                       list(require_tool) if require_tool is not None else None,
                                       max_tokens, temperature, seed, json_schema))
        if not self.replies:
            raise AssertionError(f"ScriptedLLM: script exhausted at call {len(self.calls)}")
        r = self.replies.pop(0)
        if isinstance(r, BaseException):
            raise r
        if isinstance(r, str):
            n = len(self.calls)
            r = ChatResult(content=r, prompt_tokens=100 + n, completion_tokens=10 + n, seconds=0.01 * n)
        return r


def call(name: str, thought: str = "THOUGHT: next step.", **arguments) -> str:
    """A tool call written in the reply text, as the prompt protocol asks."""
    return f"{thought}\n" + json.dumps({"name": name, "arguments": arguments})


TEXT_AT_5 = call("text_extract", time_ranges=[[5, 5]])
TO_REVIEW = "THOUGHT: the sign is read. [STAGE_SWITCH: review]"
TO_PERCEIVE = "THOUGHT: I know where to look. [STAGE_SWITCH: perceive]"
Q = "What does the sign say?"
QT = "What does the sign at 5 s say?"  # names a time: Retrieve may be skipped


class MemoOcr:
    """The real OCR engine, with results remembered per frame content (same frame, same lines).

    Keeps the suite fast on small CPUs: OCR of one 640x360 frame costs about a second.
    """

    def __init__(self, engine):
        self._engine = engine
        self._memo: dict[tuple, list] = {}

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def read(self, frame, regions=None, script=None):
        key = (frame.t_s, frame.image.shape, hashlib.blake2b(frame.image.tobytes(), digest_size=16).digest(),
               tuple(map(tuple, regions or ())), script)
        if key not in self._memo:
            self._memo[key] = self._engine.read(frame, regions=regions, script=script)
        return list(self._memo[key])


class MemoBackends:
    """session_backends with :class:`MemoOcr` in place of its OCR engine."""

    def __init__(self, backends):
        self._backends = backends
        self.ocr = MemoOcr(backends.ocr)

    def __getattr__(self, name):
        return getattr(self._backends, name)


@pytest.fixture(scope="module")
def backends(session_backends):
    return MemoBackends(session_backends)


@pytest.fixture(scope="module")
def reader(sign_video):
    return VideoReader(probe(sign_video))


@pytest.fixture
def make_agent(settings, sign_index, reader, backends):
    """``make_agent(replies, **settings_overrides) -> (agent, llm)``."""

    def make(replies, **overrides):
        # the structured final call, the option scores and the grounded answers (more replies) are tested
        # on their own below
        overrides = {"structured_answer": False, "choice_scoring": "off", "grounded_answers": False,
                     "answer_rules": "default", **overrides}
        for k, v in overrides.items():
            setattr(settings, k, v)
        llm = ScriptedLLM(replies)
        ctx = ToolContext(settings=settings, index=sign_index, video=reader, backends=backends)
        return Agent(llm, ctx, PromptLibrary(REPO / "prompts"), settings), llm

    return make


def kinds(trace: Trace) -> list[str]:
    return [s.kind for s in trace.steps]


def phases(trace: Trace) -> list[str]:
    return [s.phase for s in trace.steps]


def base_messages(messages: list[dict]) -> list[dict]:
    """Messages without the retry extras (trailing assistant + 'could not be used' pairs)."""
    msgs = list(messages)
    while len(msgs) >= 2 and msgs[-1]["role"] == "user" and msgs[-1]["content"].startswith(RETRY_MARK):
        msgs = msgs[:-2]
    return msgs


# ---------------------------------------------------------------- OCR frame cap (issue 38)


@pytest.mark.parametrize("question,frames", [("What colour is the background?", 2), ("What does the sign say?", 5)])
def test_text_extract_reads_fewer_frames_when_the_question_asks_about_no_text(make_agent, question, frames):
    """A question about no text (a colour) gets the ``text_extract_frames_no_text`` cap; one about a sign the
    usual ``perceive_max_frames`` (5 frames of [4 s, 6 s] at 2 fps)."""
    agent, _ = make_agent([call("clip_retrieve", query="sign"), TO_PERCEIVE,
                           call("text_extract", time_ranges=[[4, 6]]), TO_REVIEW,
                           "THOUGHT: read.\n**Answer:** grey"], text_extract_frames_no_text=2)
    extract = [s for s in agent.run(question).trace.steps if s.tool == "text_extract"][0]
    assert len(extract.frames_s) == frames and not extract.error
    assert min(extract.frames_s) >= 4.0 and max(extract.frames_s) <= 6.0


# ---------------------------------------------------------------- OCR script (issue 36, item 6)


@pytest.mark.parametrize("question,on,script", [
    ("What does the sign say?", True, "latin"),
    ("What do the Chinese characters on the sign say?", True, None),  # names another script
    ("What does the sign say?", False, None),  # ocr_question_script off
])
def test_text_extract_reads_in_the_questions_script(make_agent, question, on, script):
    """A question in Latin script has text_extract decode in Latin script only (the observation says so); one
    naming another script, or the setting off, reads every script."""
    agent, _ = make_agent([call("clip_retrieve", query="sign"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                           "THOUGHT: read.\n**Answer:** EXIT 42"], ocr_question_script=on)
    extract = [s for s in agent.run(question).trace.steps if s.tool == "text_extract"][0]
    assert agent.ctx.scope.text_script == script
    assert ("latin script" in extract.observation) is (script is not None)
    assert "EXIT 42" in extract.observation  # the real engine reads the sign either way


# ---------------------------------------------------------------- happy path


def test_happy_path_retrieve_perceive_review(make_agent, tmp_path):
    agent, llm = make_agent([
        call("clip_retrieve", query="EXIT 42 sign"),
        TO_PERCEIVE,
        TEXT_AT_5,
        TO_REVIEW,
        "THOUGHT: text_extract read the sign at 5.0s.\n**Answer:** EXIT 42",
    ])
    result = agent.run("What does the sign say?")
    trace = result.trace

    assert result.answer == "EXIT 42"
    assert result.choice is None and result.interval is None
    assert any(s <= 5.0 <= e for s, e in result.evidence), result.evidence
    assert kinds(trace) == ["tool_call", "stage_switch", "tool_call", "stage_switch", "answer"]
    assert phases(trace) == ["retrieve", "retrieve", "perceive", "perceive", "review"]
    assert [s.switch_to for s in trace.steps if s.kind == "stage_switch"] == ["perceive", "review"]
    assert [s.iteration for s in trace.steps] == [1, 2, 3, 4, 5]
    assert trace.iterations == 5 and trace.forced is False
    assert trace.answer == "EXIT 42" and trace.evidence == result.evidence

    retrieve, _, extract, _, answer = trace.steps
    assert retrieve.tool == "clip_retrieve" and not retrieve.error
    assert "clips most similar" in retrieve.observation
    assert retrieve.observation_data["clips"], "clip_retrieve returned no clips"
    assert extract.tool == "text_extract" and not extract.error
    assert extract.arguments == {"time_ranges": [[5, 5]]}
    assert "EXIT 42" in extract.observation  # real OCR on the real frame
    assert extract.frames_s == [5.0]
    assert extract.tool_seconds > 0
    assert answer.answer == "EXIT 42"

    # the perceive gate asked for a perceive tool only on the first perceive decision
    # the gates asked for a search first, then for a perceive tool on the first perceive decision
    assert [c.require_tool for c in llm.calls] == [SEARCH_TOOLS, None, PERCEIVE_GATE, None, None]
    assert len(llm.calls) == 5 and not llm.replies

    # tokens and seconds
    assert [s.prompt_tokens for s in trace.steps] == [101, 102, 103, 104, 105]
    assert [s.completion_tokens for s in trace.steps] == [11, 12, 13, 14, 15]
    assert all(s.llm_seconds > 0 for s in trace.steps)
    assert trace.seconds["agent"] > 0
    totals = trace.totals()
    assert totals["prompt_tokens"] == 515 and totals["completion_tokens"] == 65
    assert totals["tool_calls"] == 2 and totals["frames_looked_at"] == 1

    path = trace.write(tmp_path / "out" / "trace.json")
    data = json.loads(path.read_text())
    assert data["totals"] == json.loads(json.dumps(totals))
    assert data["answer"] == "EXIT 42" and data["question"] == "What does the sign say?"
    assert [s["kind"] for s in data["steps"]] == kinds(trace)
    assert not list(path.parent.glob(".*tmp*")), "temporary trace file left behind"


def test_settings_reach_the_llm(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"],
                            llm_max_tokens=77, llm_temperature=0.3, llm_seed=5)
    agent.run("What does the sign say?")
    assert {(c.max_tokens, c.temperature, c.seed) for c in llm.calls} == {(77, 0.3, 5)}


# ---------------------------------------------------------------- the perceive gate


def test_perceive_gate_requires_a_perceive_tool(make_agent):
    agent, llm = make_agent([
        TO_PERCEIVE,
        TO_REVIEW,  # too early: nothing was looked at in this perceive round
        TEXT_AT_5,
        TO_REVIEW,
        "**Answer:** EXIT 42",
    ], llm_temperature=0.0, retry_temperature=0.7)
    result = agent.run(QT)
    trace = result.trace

    assert kinds(trace) == ["stage_switch", "retry", "tool_call", "stage_switch", "answer"]
    assert phases(trace) == ["retrieve", "perceive", "perceive", "perceive", "review"]
    retry = trace.steps[1]
    assert retry.iteration == trace.steps[2].iteration == 2  # the retry belongs to the same decision
    assert "must call a perceive tool" in retry.notes[0]
    assert llm.calls[1].require_tool == PERCEIVE_GATE
    assert llm.calls[2].require_tool == PERCEIVE_GATE
    assert llm.calls[2].messages[-2] == {"role": "assistant", "content": TO_REVIEW}
    assert llm.calls[2].messages[-1]["role"] == "user"
    assert RETRY_MARK in llm.calls[2].messages[-1]["content"]
    assert "must call a perceive tool" in llm.calls[2].messages[-1]["content"]
    assert [c.temperature for c in llm.calls] == [0.0, 0.0, 0.7, 0.0, 0.0]  # only the re-ask samples
    assert result.answer == "EXIT 42"


FA_AT_5 = call("frame_analysis", time_ranges=[[5, 5]], question="What colour is the sign?")


def test_frame_analysis_waits_for_a_confirming_tool(make_agent):
    """AVI Fig. 11: frame_analysis only after object_detect / text_extract / boundary_detect worked."""
    agent, llm = make_agent([TO_PERCEIVE, FA_AT_5, TEXT_AT_5, FA_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    trace = result.trace
    assert kinds(trace) == ["stage_switch", "retry", "tool_call", "tool_call", "stage_switch", "answer"]
    note = trace.steps[1].notes[0]
    assert "frame_analysis is the last resort: first use text_extract, object_detect, boundary_detect" in note
    assert llm.calls[1].require_tool == PERCEIVE_GATE
    assert llm.calls[2].require_tool == PERCEIVE_GATE  # the retry may not pick frame_analysis either
    assert "using one of: text_extract, object_detect, boundary_detect," in llm.calls[2].messages[-1]["content"]
    assert llm.calls[3].require_tool is None  # text_extract worked: frame_analysis is allowed now
    assert [s.tool for s in trace.steps if s.kind == "tool_call"] == ["text_extract", "frame_analysis"]
    assert result.answer == "EXIT 42"


def test_frame_analysis_refused_as_implied_switch_and_after_returning(make_agent):
    agent, llm = make_agent([FA_AT_5, TEXT_AT_5, TO_REVIEW, "[STAGE_SWITCH: perceive]",
                             call("frame_analysis", time_ranges=[[6, 6]], question="colour?"),
                             call("text_extract", time_ranges=[[6, 6]]), TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    assert kinds(result.trace) == ["retry", "tool_call", "stage_switch", "stage_switch", "retry", "tool_call",
                                   "stage_switch", "answer"]
    assert all("last resort" in s.notes[0] for s in result.trace.steps if s.kind == "retry")
    assert llm.calls[4].require_tool == PERCEIVE_GATE  # a new perceive round starts over


def test_frame_analysis_first_when_the_rule_is_off(make_agent):
    agent, llm = make_agent([TO_PERCEIVE, FA_AT_5, TO_REVIEW, "**Answer:** EXIT 42"], frame_analysis_last=False)
    result = agent.run(QT)
    assert kinds(result.trace) == ["stage_switch", "tool_call", "stage_switch", "answer"]
    assert llm.calls[1].require_tool == PERCEIVE_TOOLS
    assert result.trace.steps[1].tool == "frame_analysis"


def test_retrieve_gate_requires_a_search_unless_a_time_is_named(make_agent):
    agent, llm = make_agent([TO_PERCEIVE, call("clip_retrieve", query="sign"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"])
    result = agent.run(Q)
    assert kinds(result.trace)[:3] == ["retry", "tool_call", "stage_switch"]
    assert "search first (clip_retrieve or global_explore)" in result.trace.steps[0].notes[0]
    assert llm.calls[0].require_tool == SEARCH_TOOLS
    assert llm.calls[1].require_tool == SEARCH_TOOLS
    assert llm.calls[2].require_tool is None
    assert result.answer == "EXIT 42"

    agent, llm = make_agent([TO_PERCEIVE, TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    assert kinds(result.trace) == ["stage_switch", "tool_call", "stage_switch", "answer"]
    assert llm.calls[0].require_tool is None
    assert "5 s" in llm.calls[0].messages[1]["content"]


def test_repeated_identical_call_is_a_retry(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="sign"), call("clip_retrieve", query="sign"),
                             call("clip_retrieve", query="exit sign"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"])
    result = agent.run(Q)
    assert kinds(result.trace)[:3] == ["tool_call", "retry", "tool_call"]
    assert "already called clip_retrieve" in result.trace.steps[1].notes[0]
    assert result.trace.steps[2].arguments == {"query": "exit sign"}
    assert result.answer == "EXIT 42"


def test_a_repeated_perceive_call_moves_on_to_review_and_twice_forces_the_answer(make_agent):
    """syn-shapes-08: the 1.5B model bounced back from Review and sent its text_extract call again, and again on
    every retry (20 retries, 5 minutes). A Perceive call that repeats one whose result is above is not re-asked:
    Review decides on that evidence; a second repeat ends the loop with the answer forced from the evidence."""
    # the first repeat is re-asked (a sampled retry may pick another tool) ...
    agent, llm = make_agent([call("clip_retrieve", query="sign"), TO_PERCEIVE, TEXT_AT_5, TEXT_AT_5,
                             call("object_detect", time_ranges=[[4, 9]], objects=["person"]), TO_REVIEW,
                             "**Answer:** EXIT 42"], max_retries=2)
    result = agent.run(Q)
    assert kinds(result.trace) == ["tool_call", "stage_switch", "tool_call", "retry", "tool_call", "stage_switch",
                                   "answer"]
    # ... up to max_retries times; then Review decides on the evidence above
    agent, llm = make_agent([call("clip_retrieve", query="sign"), TO_PERCEIVE, TEXT_AT_5, TEXT_AT_5, TEXT_AT_5,
                             TEXT_AT_5, "**Answer:** EXIT 42"], max_retries=2)
    result = agent.run(Q)
    assert kinds(result.trace) == ["tool_call", "stage_switch", "tool_call", "retry", "retry", "retry",
                                   "stage_switch", "answer"]
    assert "a repeated call is not asked again" in result.trace.steps[5].notes
    assert result.trace.steps[6].switch_to == "review" and result.answer == "EXIT 42"
    assert len(llm.calls) == 7

    # a second repeat, after Review sent it back to Perceive, is not re-asked: the answer is forced
    agent, llm = make_agent([call("clip_retrieve", query="sign"), TO_PERCEIVE, TEXT_AT_5, TEXT_AT_5, TEXT_AT_5,
                             TEXT_AT_5, "[STAGE_SWITCH: perceive]", TEXT_AT_5, "**Answer:** EXIT 42"], max_retries=2)
    result = agent.run(Q)
    assert kinds(result.trace)[-3:] == ["stage_switch", "retry", "forced_answer"]
    assert result.trace.forced


def test_trap_same_query_warns_on_the_fourth_call_and_refuses_the_fifth(make_agent):
    """DVD Fig. 3: the same tool more than 3 times in a row with near-identical arguments."""
    queries = ["exit sign", "Exit sign", "exit sign.", "EXIT  sign", "exit sign!"]
    agent, llm = make_agent([call("clip_retrieve", query=q) for q in queries]
                            + [call("clip_retrieve", query="room sign"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                               "**Answer:** EXIT 42"])
    result = agent.run(Q)
    trace = result.trace
    assert kinds(trace)[:6] == ["tool_call"] * 4 + ["retry", "tool_call"]
    for step in trace.steps[:3]:
        assert not any("trap" in n for n in step.notes) and "Repeating it" not in step.observation
    fourth = trace.steps[3]
    assert any(n.startswith("trap: clip_retrieve called 4 times in a row") for n in fourth.notes)
    assert "switch to another tool, widen or move the time range" in fourth.observation
    assert "switch to another tool, widen" in llm.calls[4].messages[-1]["content"]  # the model saw it
    assert "4 times in a row on nearly the same input" in trace.steps[4].notes[0]
    assert trace.steps[5].arguments == {"query": "room sign"}  # a different query breaks the run
    assert not any("trap" in n for n in trace.steps[5].notes)
    assert result.answer == "EXIT 42"


def test_trap_overlapping_time_ranges(make_agent):
    ranges = [[[5, 5]], [[5, 5.1]], [[5.05, 5.05]], [[5, 5.05]], [[5.02, 5.02]]]
    agent, llm = make_agent([call("text_extract", time_ranges=r) for r in ranges]
                            + [call("text_extract", time_ranges=[[9, 10]]), TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    assert kinds(result.trace) == ["tool_call"] * 4 + ["retry", "tool_call", "stage_switch", "answer"]
    assert any("trap" in n for n in result.trace.steps[3].notes)
    assert "nearly the same input" in result.trace.steps[4].notes[0]
    assert result.answer == "EXIT 42"


def test_near_identical_rules():
    from avi.agent.traps import near_identical

    assert near_identical(("clip_retrieve", {"query": "A red car"}), ("clip_retrieve", {"query": "a red car!"}))
    assert not near_identical(("clip_retrieve", {"query": "red car"}), ("global_explore", {"query": "red car"}))
    assert not near_identical(("clip_retrieve", {"query": "red car"}), ("clip_retrieve", {"query": "blue car"}))
    assert near_identical(("text_extract", {"time_ranges": [[0, 10]]}), ("text_extract", {"time_ranges": [[0, 9]]}))
    assert not near_identical(("text_extract", {"time_ranges": [[0, 10]]}),
                              ("text_extract", {"time_ranges": [[0, 7]]}))
    # a sweep over the video with the same objects is progress, not a trap
    assert not near_identical(("object_detect", {"time_ranges": [[0, 5]], "objects": ["person"]}),
                              ("object_detect", {"time_ranges": [[5, 10]], "objects": ["person"]}))


def test_implied_switch_perceive_tool_in_retrieve(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    trace = result.trace

    assert llm.calls[0].require_tool is None
    assert kinds(trace) == ["tool_call", "stage_switch", "answer"]
    first = trace.steps[0]
    assert first.tool == "text_extract" and first.phase == "perceive"
    assert "entered perceive" in first.notes
    assert "EXIT 42" in first.observation
    # the perceive round already looked at frames: leaving it is allowed without a retry
    assert llm.calls[1].require_tool is None
    assert trace.steps[1].switch_to == "review"
    history = llm.calls[1].messages
    assert any(m["role"] == "user" and "CURRENT STAGE: PERCEIVE" in (m["content"] or "") for m in history)
    assert result.answer == "EXIT 42"


def test_retrieve_tool_in_perceive_is_refused(make_agent):
    agent, llm = make_agent([
        TO_PERCEIVE,
        TEXT_AT_5,
        call("clip_retrieve", query="room sign"),  # not a perceive tool
        call("text_extract", time_ranges=[[13, 13]]),
        TO_REVIEW,
        "**Answer:** ROOM 7B",
    ])
    result = agent.run("What do the signs at 5 s and 13 s say?")
    trace = result.trace

    assert kinds(trace) == ["stage_switch", "tool_call", "retry", "tool_call", "stage_switch", "answer"]
    assert [s.tool for s in trace.steps if s.kind == "tool_call"] == ["text_extract", "text_extract"]
    retry = trace.steps[2]
    assert retry.phase == "perceive"
    assert retry.notes == ["clip_retrieve cannot be used in the PERCEIVE stage. "
                           "Tools in this stage: text_extract, object_detect, boundary_detect, frame_analysis, memory_query"]
    assert llm.calls[2].require_tool is None  # already looked: unconstrained decision
    assert llm.calls[3].require_tool == PERCEIVE_TOOLS  # the retry is constrained
    retry_msg = llm.calls[3].messages[-1]["content"]
    assert "clip_retrieve cannot be used" in retry_msg
    assert "text_extract, object_detect, boundary_detect, frame_analysis, memory_query" in retry_msg
    assert "ROOM 7B" in trace.steps[3].observation
    assert result.answer == "ROOM 7B"


def test_unknown_tool_is_a_retry(make_agent):
    agent, llm = make_agent([call("read_minds", query="x"), call("clip_retrieve", query="exit"), TO_PERCEIVE,
                             TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run("What does the sign say?")
    assert kinds(result.trace)[:2] == ["retry", "tool_call"]
    assert "no tool named 'read_minds'" in result.trace.steps[0].notes[0]
    assert llm.calls[1].require_tool == SEARCH_TOOLS + ["clip_merge"]  # a retry may use any retrieve tool
    assert result.answer == "EXIT 42"


# ---------------------------------------------------------------- malformed replies


MALFORMED = 'THOUGHT: search.\n{"name": "clip_retrieve", "arguments": {"query": "exit sign"'


def test_malformed_call_retries_then_spends_the_iteration(make_agent):
    agent, llm = make_agent([
        MALFORMED, MALFORMED, MALFORMED,  # retrieve: 1 + max_retries attempts, then on to perceive
        MALFORMED, MALFORMED, MALFORMED,  # perceive: iteration spent, phase unchanged
        TEXT_AT_5,
        TO_REVIEW,
        "**Answer:** EXIT 42",
    ], max_retries=2)
    result = agent.run("What does the sign say?")
    trace = result.trace

    assert kinds(trace) == ["retry"] * 3 + ["stage_switch"] + ["retry"] * 3 + ["tool_call", "stage_switch",
                                                                                 "answer"]
    assert [s.iteration for s in trace.steps] == [1, 1, 1, 1, 2, 2, 2, 3, 4, 5]
    assert phases(trace)[4:8] == ["perceive"] * 4
    assert trace.steps[3].switch_to == "perceive"
    assert "no usable reply after retries" in trace.steps[3].notes
    for s in trace.steps:
        if s.kind == "retry":
            assert "not valid JSON" in s.notes[0]

    # the problem is sent back, with the bad reply, and the retry is constrained to the phase's tools
    assert llm.calls[0].require_tool == SEARCH_TOOLS  # the retrieve gate
    assert llm.calls[1].require_tool == SEARCH_TOOLS + ["clip_merge"]
    assert llm.calls[3].require_tool == PERCEIVE_GATE  # the perceive gate
    assert llm.calls[1].messages[-2] == {"role": "assistant", "content": MALFORMED}
    assert "not valid JSON" in llm.calls[1].messages[-1]["content"]
    assert sum(RETRY_MARK in (m["content"] or "") for m in llm.calls[2].messages) == 2
    # retry extras do not stay in the conversation: first attempts carry none
    for i in (0, 3, 6, 7, 8):
        assert not any(RETRY_MARK in (m.get("content") or "") for m in llm.calls[i].messages), i
    assert result.answer == "EXIT 42"


@pytest.mark.parametrize("content, problem", [
    ('{"name": "text_extract", "arguments": "[[5, 5]"}', "not a JSON object"),
    ('{"name": "text_extract", "arguments": [[5, 5]]}', "must be a JSON object"),
    ("<tool_call>text_extract(5)</tool_call>", "not valid JSON"),
])
def test_malformed_call_problem_is_named(make_agent, content, problem):
    agent, llm = make_agent([TO_PERCEIVE, content, TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    assert kinds(result.trace)[:3] == ["stage_switch", "retry", "tool_call"]
    assert problem in result.trace.steps[1].notes[0]
    assert problem in llm.calls[2].messages[-1]["content"]
    assert result.answer == "EXIT 42"


def test_bad_arguments_are_an_error_observation_not_a_retry(make_agent):
    agent, llm = make_agent([call("text_extract", time_ranges=[[50, 60]]), TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"])
    result = agent.run("What does the sign say?")
    trace = result.trace
    assert kinds(trace)[:2] == ["tool_call", "tool_call"]
    assert trace.steps[0].error and "no time range overlaps the video" in trace.steps[0].observation
    # a failed perceive call does not open the gate
    assert llm.calls[1].require_tool == PERCEIVE_GATE
    assert "no time range overlaps the video" in llm.calls[1].messages[-1]["content"]
    assert result.answer == "EXIT 42"


# ---------------------------------------------------------------- review


def test_review_nudge_and_back_to_perceive(make_agent):
    agent, llm = make_agent([
        TEXT_AT_5,
        TO_REVIEW,
        "THOUGHT: the evidence looks fine.",  # neither answer nor switch
        "THOUGHT: I also need the second sign. [STAGE_SWITCH: perceive]",
        call("text_extract", time_ranges=[[13, 13]]),
        TO_REVIEW,
        "**Answer:** EXIT 42 and ROOM 7B",
    ])
    result = agent.run("Which signs appear?")
    trace = result.trace

    assert kinds(trace) == ["tool_call", "stage_switch", "nudge", "stage_switch", "tool_call", "stage_switch",
                            "answer"]
    assert phases(trace) == ["perceive", "perceive", "review", "review", "perceive", "perceive", "review"]
    assert trace.steps[3].switch_to == "perceive"
    nudge = agent.prompts.text("review_nudge")
    assert llm.calls[3].messages[-1] == {"role": "user", "content": nudge}
    # back in perceive: a fresh round that must look at frames again
    assert llm.calls[4].require_tool == PERCEIVE_GATE
    assert sum(str(m.get("content")).startswith("CURRENT STAGE: PERCEIVE") for m in llm.calls[4].messages) == 2
    # each Review message restates the question and the evidence found so far
    reviews = [m["content"] for m in llm.calls[-1].messages if str(m.get("content")).startswith("CURRENT STAGE: REVIEW")]
    assert len(reviews) == 2 and all("Which signs appear?" in r for r in reviews)
    assert '"EXIT 42"' in reviews[0] and '"ROOM 7B"' not in reviews[0]
    assert '"EXIT 42"' in reviews[1] and '"ROOM 7B"' in reviews[1]
    assert result.answer == "EXIT 42 and ROOM 7B"
    assert [[5.0, 5.0], [13.0, 13.0]] == result.evidence


def test_answer_with_switch_to_perceive_goes_back(make_agent):
    agent, llm = make_agent([
        TEXT_AT_5, TO_REVIEW,
        "**Answer:** EXIT 42\n\n[STAGE_SWITCH: perceive]",
        call("text_extract", time_ranges=[[6, 6]]), TO_REVIEW,
        "**Answer:** EXIT 42",
    ])
    result = agent.run("What does the sign say?")
    assert kinds(result.trace) == ["tool_call", "stage_switch", "stage_switch", "tool_call", "stage_switch",
                                   "answer"]
    assert result.trace.steps[2].switch_to == "perceive"
    assert result.answer == "EXIT 42"


def test_early_answer_is_only_a_candidate(make_agent):
    agent, llm = make_agent([
        "THOUGHT: probably the exit sign.\n**Answer:** EXIT 42",  # in retrieve: not accepted
        TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42",
    ])
    result = agent.run(QT)
    first = result.trace.steps[0]
    assert first.kind == "stage_switch" and first.switch_to == "perceive"
    assert any("candidate" in n for n in first.notes)
    assert result.trace.steps[-1].kind == "answer" and result.trace.steps[-1].phase == "review"


@pytest.mark.parametrize("echo", [
    "**Answer:** the letter of the option the evidence supports",
    "**Answer:** [start, end]",
    "**Answer:** a short, direct answer",
])
def test_answer_that_parrots_the_instructions_is_a_retry(make_agent, echo):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, echo, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    retries = [s for s in result.trace.steps if s.kind == "retry"]
    assert len(retries) == 1 and retries[0].phase == "review" and "repeats the format" in retries[0].notes[0]
    assert result.answer == "EXIT 42"


def test_an_answer_followed_by_a_copy_of_the_format_line_keeps_the_answer(make_agent):
    # seen on the synthetic lecture: the 1.5B model wrote the answer, then the rest of the yes/no format line, and
    # every retry again, until the forced answer delivered the copy
    echo = "**Answer:** no, on a line starting with **Answer:**, then in a few words the evidence that decides it."
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, echo])
    result = agent.run("Is the EXIT 42 sign on screen at 0:05?")
    assert result.answer == "no"
    assert not [s for s in result.trace.steps if s.kind == "retry"]


def test_answer_format_follows_the_question(make_agent):
    for question, expected, answer in [("When is the EXIT sign on screen?", "[start, end]", "[4, 9]"),
                                       ("What colour is it? A. red B. blue", "letter of the option", "B"),
                                       ("Select all that apply: A. red B. blue", "letters of every option", "A, B"),
                                       ("In which order do they appear? A. red B. blue", "in the order", "B, A"),
                                       (QT, "short, direct answer", "1")]:
        agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, f"**Answer:** {answer}"])
        agent.run(question)
        assert expected in llm.calls[0].messages[1]["content"]


# ---------------------------------------------------------------- iteration limit and forced answer


def test_iteration_limit_forced_answer_lenient(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query=f"sign {i}") for i in range(3)]
                            + ["THOUGHT: out of steps.\nAnswer: EXIT 42"], max_iterations=3)
    result = agent.run("What does the sign say?")
    trace = result.trace

    assert trace.forced is True and trace.iterations == 3
    assert kinds(trace) == ["tool_call"] * 3 + ["forced_answer"]
    forced = trace.steps[-1]
    assert forced.iteration == 0 and forced.phase == "review" and forced.answer == "EXIT 42"
    assert result.answer == "EXIT 42"
    assert len(llm.calls) == 4
    assert llm.calls[3].require_tool is None
    assert "step limit is reached" in llm.calls[3].messages[-1]["content"]
    assert "What does the sign say?" in llm.calls[3].messages[-1]["content"]
    assert result.evidence == []  # no perceive tool ever looked


def test_forced_answer_falls_back_to_candidate(make_agent):
    agent, llm = make_agent([
        call("clip_retrieve", query="sign"),
        "**Answer:** EXIT 42",  # candidate given in retrieve: on to perceive
        TEXT_AT_5,
        "I am not sure what to say.",  # forced reply without an answer marker
    ], max_iterations=3)
    result = agent.run("What does the sign say?")
    assert result.trace.forced
    assert result.answer == "EXIT 42"
    assert any("candidate" in n for n in result.trace.steps[-1].notes)
    assert any(s <= 5.0 <= e for s, e in result.evidence)


def test_forced_answer_first_line_without_marker_or_candidate(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="exit"), call("clip_retrieve", query="sign"),
                             "EXIT 42\nbecause the sign says so"], max_iterations=2)
    result = agent.run("What does the sign say?")
    assert result.trace.forced and result.trace.iterations == 2
    assert result.answer == "EXIT 42"
    assert any("first line" in n for n in result.trace.steps[-1].notes)


def test_forced_answer_empty_reply_gives_no_answer(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="sign"), ""], max_iterations=1)
    result = agent.run("What does the sign say?")
    assert result.trace.forced and result.answer is None and result.choice is None


# ---------------------------------------------------------------- answer forms


MC_QUESTION = "What colour is the square? A. red B. blue C. green"


def test_multiple_choice_options_reach_the_model(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** B"])
    result = agent.run(MC_QUESTION)
    assert "Options: A. red; B. blue; C. green" in llm.calls[0].messages[1]["content"]
    assert result.choice == "B" and result.answer == "B"
    assert result.trace.choice == "B"


@pytest.mark.parametrize("answer", ["(B)", "Option B", "B. blue", "blue"])
def test_multiple_choice_answer_forms(make_agent, answer):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, f"**Answer:** {answer}"])
    result = agent.run(MC_QUESTION)
    assert result.choice == "B"


def test_interval_answer(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** [4.0s, 9.0s]"])
    result = agent.run("When is the exit sign on screen?")
    assert result.interval == [4.0, 9.0]
    assert result.choice is None
    assert result.trace.interval == [4.0, 9.0]


MULTI_QUESTION = "Which texts are shown on signs? Select all that apply. A. EXIT 42 B. ROOM 7B C. EXIT 24"


def test_multi_select_answer(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** B and A"])
    result = agent.run(MULTI_QUESTION)
    assert result.answer_type == "multi" and result.choices == ["A", "B"] and result.answer == "B and A"
    assert result.choice is None  # one letter would be a guess at a multi-select answer
    assert result.trace.choices == ["A", "B"] and result.trace.answer_type == "multi"
    assert "letters of every option" in llm.calls[0].messages[1]["content"]


def test_order_answer_with_and_without_options(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** C -> A -> B"])
    result = agent.run("In which order do the signs appear? A. EXIT 42 B. ROOM 7B C. EXIT 24")
    assert result.answer_type == "order" and result.order == ["C", "A", "B"] and result.choice is None
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42, ROOM 7B"])
    result = agent.run("In what order do the signs appear?")
    assert result.order == ["EXIT 42", "ROOM 7B"] and result.trace.order == ["EXIT 42", "ROOM 7B"]


def test_unparseable_typed_answer_is_re_asked_then_reported_not_guessed(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** the exit one", "**Answer:** A, C"])
    result = agent.run(MULTI_QUESTION)
    retry = [s for s in result.trace.steps if s.kind == "retry"]
    assert len(retry) == 1 and "does not follow the answer format" in retry[0].notes[0]
    assert "letters of every option" in llm.calls[3].messages[-1]["content"]
    assert result.choices == ["A", "C"]

    # the forced answer cannot be read as an option letter: no answer, with a note
    agent, llm = make_agent([call("clip_retrieve", query="sign"), "**Answer:** probably the red one"],
                            max_iterations=1)
    result = agent.run(MC_QUESTION)
    assert result.answer is None and result.choice is None
    assert result.note and "unparseable choice answer" in result.note
    assert result.trace.raw_answer == "probably the red one" and result.trace.answer_note == result.note


def test_answer_type_setting_overrides_inference(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** A, C"], answer_type="multi")
    result = agent.run("Which of these are shown: A. EXIT 42 B. a cat C. ROOM 7B")
    assert result.answer_type == "multi" and result.choices == ["A", "C"]
    assert "letters of every option" in llm.calls[0].messages[1]["content"]


# ---------------------------------------------------------------- native tool calls


def test_native_tool_calls(make_agent):
    native = ChatResult(content="", tool_calls=[("text_extract", '{"time_ranges": [[5,5]]}')],
                        prompt_tokens=7, completion_tokens=3, seconds=0.02)
    two = ChatResult(content="", tool_calls=[("text_extract", '{"time_ranges": [[9,9]]}'),
                                             ("object_detect", '{"time_ranges": [[9,9]], "objects": ["person"]}')])
    agent, llm = make_agent([TO_PERCEIVE, native, two, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(QT)
    trace = result.trace

    assert kinds(trace) == ["stage_switch", "tool_call", "tool_call", "stage_switch", "answer"]
    assert trace.steps[1].arguments == {"time_ranges": [[5, 5]]}
    assert "EXIT 42" in trace.steps[1].observation
    assert trace.steps[1].prompt_tokens == 7
    assert any("1 further tool call(s)" in n for n in trace.steps[2].notes)

    msgs = llm.calls[2].messages
    assistant = [m for m in msgs if m["role"] == "assistant" and m.get("tool_calls")]
    assert len(assistant) == 1
    tc = assistant[0]["tool_calls"][0]
    assert tc["type"] == "function" and tc["function"]["name"] == "text_extract"
    assert json.loads(tc["function"]["arguments"]) == {"time_ranges": [[5, 5]]}
    i = msgs.index(assistant[0])
    tool_msg = msgs[i + 1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == tc["id"]
    assert "EXIT 42" in tool_msg["content"]
    # the second native reply gets its own id
    final_msgs = llm.calls[-1].messages
    ids = [m["tool_calls"][0]["id"] for m in final_msgs if m.get("tool_calls")]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert [m["tool_call_id"] for m in final_msgs if m["role"] == "tool"] == ids


def test_telemetry_per_question(make_agent):
    native = ChatResult(content="", tool_calls=[("text_extract", '{"time_ranges": [[5,5]]}')],
                        prompt_tokens=7, completion_tokens=3, seconds=0.02)
    agent, llm = make_agent([call("clip_retrieve", query="sign"), TO_PERCEIVE, MALFORMED, native,
                             call("object_detect", time_ranges=[[5, 5]], objects=["person"]), TO_REVIEW,
                             "**Answer:** EXIT 42"])
    result = agent.run(Q)
    t = result.trace.totals()
    assert kinds(result.trace) == ["tool_call", "stage_switch", "retry", "tool_call", "tool_call", "stage_switch",
                                   "answer"]
    assert t["llm_replies"] == 7
    assert t["steps_per_phase"] == {"retrieve": 2, "perceive": 4, "review": 1}
    assert t["tool_calls_per_tool"] == {"clip_retrieve": 1, "text_extract": 1, "object_detect": 1}
    assert set(t["seconds_per_tool"]) == set(t["tool_calls_per_tool"])
    assert all(v >= 0 for v in t["seconds_per_tool"].values()) and t["seconds_per_tool"]["text_extract"] > 0
    assert set(t["seconds_per_phase"]) == {"retrieve", "perceive", "review"}
    assert t["native_tool_calls"] == 1 and t["content_tool_calls"] == 2 and t["retries"] == 1
    assert t["fallback_replies"] == 3 and t["traps"] == 0
    assert t["frames_looked_at"] == 1 and t["frames_spent"] == 2
    assert t["prompt_tokens"] == sum(s.prompt_tokens for s in result.trace.steps)
    assert [s.call_source for s in result.trace.steps] == ["content", None, "content", "native", "content", None,
                                                           None]
    assert json.loads(json.dumps(result.trace.to_dict()))["totals"]["tool_calls_per_tool"]["text_extract"] == 1


# ---------------------------------------------------------------- KV-cache friendly conversation


def test_system_prompt_fixed_and_conversation_only_grows(make_agent):
    agent, llm = make_agent([
        call("clip_retrieve", query="sign"),
        TO_PERCEIVE,
        TO_REVIEW,  # retry (gate)
        ChatResult(content="", tool_calls=[("text_extract", '{"time_ranges": [[5,5]]}')]),
        TO_REVIEW,
        "THOUGHT: hmm.",  # nudge
        "[STAGE_SWITCH: perceive]",
        MALFORMED,  # retry (malformed)
        call("text_extract", time_ranges=[[13, 13]]),
        TO_REVIEW,
        "**Answer:** EXIT 42",  # the forced answer after 8 iterations
    ], max_iterations=8)
    result = agent.run("What does the sign say?")
    assert result.trace.forced and result.answer == "EXIT 42"

    first_system = llm.calls[0].messages[0]
    # the system prompt does not depend on the video (its KV cache is reused across videos and runs);
    # the video's length travels with the question
    assert first_system["role"] == "system" and "20.0" not in first_system["content"]
    assert "The video is 20.0 seconds long." in llm.calls[0].messages[1]["content"]
    tools0 = llm.calls[0].tools
    # every tool is always offered (a constant prefix); the speech tools too, though this video has no audio
    assert tools0 and {t["function"]["name"] for t in tools0} == {*SEARCH_TOOLS, "graph_retrieve", "clip_merge",
                                                                  "transcript_search", *PERCEIVE_TOOLS,
                                                                  "transcript_read"}
    for c in llm.calls:
        assert c.messages[0] == first_system
        assert sum(m["role"] == "system" for m in c.messages) == 1
        assert c.tools == tools0
    for prev, nxt in zip(llm.calls, llm.calls[1:]):
        base = base_messages(prev.messages)
        assert nxt.messages[:len(base)] == base
        assert len(nxt.messages) > len(base)


# ---------------------------------------------------------------- failures


def test_tool_raising_inside_is_an_error_observation(make_agent, backends, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("ocr exploded")

    monkeypatch.setattr(backends.ocr, "read", boom)
    agent, llm = make_agent([
        TEXT_AT_5,
        call("object_detect", time_ranges=[[5, 5]], objects=["person"]),
        TO_REVIEW,
        "**Answer:** no person",
    ])
    result = agent.run("Is there a person at 5 s?")
    trace = result.trace

    assert kinds(trace) == ["tool_call", "tool_call", "stage_switch", "answer"]
    bad = trace.steps[0]
    assert bad.error is True
    assert bad.observation.startswith("Error in text_extract: RuntimeError: ocr exploded")
    assert "traceback" in bad.observation_data
    assert "ocr exploded" in llm.calls[1].messages[-1]["content"]
    assert llm.calls[1].require_tool == PERCEIVE_GATE  # the failed call did not count as looking
    assert trace.steps[1].tool == "object_detect" and not trace.steps[1].error
    assert "person: none found" in trace.steps[1].observation
    assert result.answer == "no person"
    assert result.evidence == [[5.0, 5.0]]  # frames looked at, as nothing was found


def test_unreachable_llm_propagates(make_agent):
    agent, llm = make_agent([LLMUnavailableError("lost the LLM server")])
    with pytest.raises(LLMUnavailableError):
        agent.run("What does the sign say?")


def test_context_overflow_compacts_and_retries(make_agent):
    agent, llm = make_agent([
        call("clip_retrieve", query="exit sign"),
        call("clip_retrieve", query="room sign"),
        TEXT_AT_5,
        ContextOverflowError("too long"),
        TO_REVIEW,
        "**Answer:** EXIT 42",
    ])
    result = agent.run("What does the sign say?")
    assert result.answer == "EXIT 42"
    assert kinds(result.trace) == ["tool_call", "tool_call", "tool_call", "stage_switch", "answer"]
    before, after = llm.calls[3].messages, llm.calls[4].messages
    assert len(before) == len(after)
    retrieve_result = next(m for m in after if (m.get("content") or "").startswith("Result of clip_retrieve"))
    assert retrieve_result["content"].endswith("…(older result shortened)")
    assert len(retrieve_result["content"]) < 320
    assert after[-4:] == before[-4:]  # the latest exchange is kept whole


def test_context_overflow_keeps_the_question(make_agent):
    question = ("Which of these texts is shown on the sign in the first scene of the video? "
                "A. ROOM 7B, the label of the meeting room on the second floor "
                "B. EXIT 42, the emergency exit sign next to the stairs "
                "C. EXIT 24, a sign for the motorway exit "
                "D. nothing is written anywhere in the video")
    agent, llm = make_agent([
        call("clip_retrieve", query="sign"),
        TEXT_AT_5,
        ContextOverflowError("too long"),
        TO_REVIEW,
        "**Answer:** B",
    ])
    result = agent.run(question)
    assert question in llm.calls[3].messages[1]["content"]
    assert result.choice == "B"


# ---------------------------------------------------------------- speech


def test_speech_tools_offered_only_with_speech(settings, narrated_index, narrated_video, make_agent, backends):
    """With a transcript, the gates include the speech tools and the stage messages mention them."""
    settings.host_retrieve = False  # the model's own Retrieve stage, where transcript_search is offered
    llm = ScriptedLLM([call("transcript_search", query="code word"), TO_PERCEIVE,
                       call("transcript_read", time_ranges=[[3, 7]]), TO_REVIEW, "**Answer:** pineapple"])
    ctx = ToolContext(settings=settings, index=narrated_index, video=VideoReader(probe(narrated_video[0])),
                      backends=backends)
    result = Agent(llm, ctx, PromptLibrary(REPO / "prompts"), settings).run("What code word is spoken?")
    assert result.answer == "pineapple" and any(s <= 6.5 and e >= 3.5 for s, e in result.evidence)
    assert llm.calls[0].require_tool == SEARCH_TOOLS + ["transcript_search"]
    # a question about what was spoken: the first perceive call must read the transcript (issue 14)
    assert llm.calls[2].require_tool == ["transcript_read"]
    first = llm.calls[0].messages[1]["content"]
    assert "It has speech: 2 transcript lines (asr:whisper-base-ct2)" in first and "transcript_search" in first
    perceive_msg = [m["content"] for m in llm.calls[2].messages if str(m["content"]).startswith("CURRENT STAGE: PER")]
    assert "transcript_read" in perceive_msg[0]

    # without speech: no speech tools in the gates, none in the stage messages
    agent, llm2 = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    agent.run(QT)
    msgs = " ".join(str(m["content"]) for m in llm2.calls[-1].messages[1:])
    assert "It has no speech transcript." in msgs and "transcript_read" not in msgs and "transcript_search" not in msgs


# ----------------------------------------------------------------- think, then extract


PROSE_SEARCH = "THOUGHT: I need to find the sign first, so I would use clip_retrieve to look for an exit sign."


def test_extraction_pass_turns_a_described_call_into_a_call(make_agent):
    agent, llm = make_agent([PROSE_SEARCH, call("clip_retrieve", thought="", query="exit sign"), TO_PERCEIVE,
                             TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(Q)
    assert result.answer == "EXIT 42"
    assert kinds(result.trace)[:2] == ["extract", "tool_call"]
    ex = llm.calls[1]
    assert ex.messages[0]["content"] == (REPO / "prompts" / "extract_call.md").read_text().strip()
    assert "use clip_retrieve to look for an exit sign" in ex.messages[1]["content"] and Q in ex.messages[1]["content"]
    assert ex.require_tool == SEARCH_TOOLS and ex.temperature == 0.0
    step = result.trace.steps[1]
    assert step.tool == "clip_retrieve" and step.arguments == {"query": "exit sign"}
    assert step.call_source == "extracted" and "I need to find the sign" in step.thought
    assert "gave clip_retrieve" in result.trace.steps[0].notes[0]
    tot = result.trace.totals()
    assert tot["extraction_passes"] == 1 and tot["extracted_tool_calls"] == 1 and tot["retries"] == 0


def test_failed_extraction_falls_back_to_a_retry(make_agent):
    agent, llm = make_agent([PROSE_SEARCH, "I cannot tell.", call("clip_retrieve", query="exit"), TO_PERCEIVE,
                             TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    result = agent.run(Q)
    assert result.answer == "EXIT 42"
    assert kinds(result.trace)[:3] == ["extract", "retry", "tool_call"]
    assert "extraction pass failed" in result.trace.steps[0].notes[0]
    assert llm.calls[2].messages[0]["content"] == agent.chat.system()  # the retry is the normal conversation


def test_no_extraction_without_a_tool_name_or_when_off(make_agent):
    agent, llm = make_agent(["THOUGHT: hmm, let me think.", call("clip_retrieve", query="exit"), TO_PERCEIVE,
                             TEXT_AT_5, TO_REVIEW, "**Answer:** EXIT 42"])
    assert kinds(agent.run(Q).trace)[:2] == ["retry", "tool_call"]
    agent, llm = make_agent([PROSE_SEARCH, call("clip_retrieve", query="exit"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"], extract_pass=False)
    assert kinds(agent.run(Q).trace)[:2] == ["retry", "tool_call"]


def test_thinking_endpoint_gets_the_larger_budget(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="exit"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"], llm_base_url="http://127.0.0.1:9/v1", llm_enable_thinking=True,
                            llm_thinking_max_tokens=3000, llm_max_tokens=100)
    agent.run(Q)
    assert {c.max_tokens for c in llm.calls} == {3000}
    agent, llm = make_agent([call("clip_retrieve", query="exit"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"], llm_base_url=None)
    agent.run(Q)
    assert {c.max_tokens for c in llm.calls} == {100}  # the embedded model never thinks


def test_a_call_named_after_a_stage_is_read_as_the_directive(make_agent):
    """Seen in 1.5B traces: {"name": "review"} instead of [STAGE_SWITCH: review]; no retry is spent on it."""
    agent, llm = make_agent([call("clip_retrieve", query="exit"), call("perceive"), TEXT_AT_5,
                             call("stage_switch", stage="review"), "**Answer:** EXIT 42"])
    result = agent.run(Q)
    assert result.answer == "EXIT 42"
    assert kinds(result.trace) == ["tool_call", "stage_switch", "tool_call", "stage_switch", "answer"]
    assert "a call named 'perceive' was read as [STAGE_SWITCH: perceive]" in result.trace.steps[1].notes
    assert result.trace.steps[3].switch_to == "review"
    assert result.trace.totals()["retries"] == 0


def test_a_stage_call_before_perceiving_is_still_refused(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="exit"), TO_PERCEIVE, call("review"), TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"])
    result = agent.run(Q)
    assert kinds(result.trace)[2:4] == ["retry", "tool_call"] and result.answer == "EXIT 42"


# ----------------------------------------------------------------- structured final answer


MC = "What colour is the background at the start? A. red B. blue C. green"


def test_structured_final_call_delivers_a_choice(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="background"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** B. blue", '{"choice": "B"}'], structured_answer=True)
    result = agent.run(MC)
    assert result.choice == "B" and result.answer == "B. blue"
    last = llm.calls[-1]
    assert last.json_schema["properties"] == {"choice": {"type": "string", "enum": ["A", "B", "C"]}}
    assert "Your answer: B. blue" in last.messages[-1]["content"]
    assert last.messages[0]["content"] == agent.chat.system()  # same prefix: the KV cache is reused
    step = result.trace.steps[-1]
    assert step.kind == "final_answer" and "structured final answer {'choice': 'B'}" in step.notes[0]


def test_structured_final_call_wins_over_the_prose(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="background"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** B", '{"choice": "C"}'], structured_answer=True)
    assert agent.run(MC).choice == "C"


@pytest.mark.parametrize("reply", ['{"choice": "Z"}', "not json", '{"other": 1}'])
def test_unusable_structured_reply_falls_back_to_the_regex_read(make_agent, reply):
    agent, llm = make_agent([call("clip_retrieve", query="background"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** B", reply], structured_answer=True)
    result = agent.run(MC)
    assert result.choice == "B"
    assert "unusable" in result.trace.steps[-1].notes[0]


def test_structured_interval_is_clipped_and_text_answers_make_no_extra_call(make_agent):
    agent, llm = make_agent([call("clip_retrieve", query="exit sign"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** [4.0, 9.0]", '{"start_s": 9.0, "end_s": 400}'], structured_answer=True)
    result = agent.run("When is the EXIT sign on screen? Answer with a time span.")
    assert result.interval == [9.0, 20.0]
    agent, llm = make_agent([call("clip_retrieve", query="exit"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"], structured_answer=True)
    result = agent.run(Q)
    assert result.answer == "EXIT 42" and all(c.json_schema is None for c in llm.calls)


# ---------------------------------------------------------------- issue 14: grounded steps and answers


class LogprobLLM(ScriptedLLM):
    """ScriptedLLM with the ChatClient's ``first_token_logprobs``: every option-scoring request prefers the
    letter A (position bias), the option whose text is ``favourite`` whatever the evidence (a content prior),
    and, when the request holds more than the system prompt and the scoring prompt (evidence), the option whose
    text is ``truth``."""

    def __init__(self, replies, truth: str | None, favourite: str | None = None):
        super().__init__(replies)
        self.truth, self.favourite, self.scored, self.without_evidence = truth, favourite, [], 0

    def first_token_logprobs(self, messages, tools=None, *, top=20, seed=0):
        prompt = messages[-1]["content"]
        self.scored.append(prompt)
        evidence = len(messages) > 2
        self.without_evidence += not evidence
        if self.truth is None:
            return {}, ChatResult(content="")
        out = {}
        for line in prompt.splitlines():
            if len(line) > 3 and line[1:3] == ". ":
                out[line[0]] = (2.0 if line[0] == "A" else 0.0) + (1.0 if evidence and line[3:] == self.truth else 0.0) \
                    + (1.5 if line[3:] == self.favourite else 0.0)
        return out, ChatResult(content="A", prompt_tokens=40, seconds=0.01)


CHOICE_Q = "What does the sign at 5 s say? (A) ROOM 7B (B) EXIT 42 (C) EXIT 24"


def _agent_with(make_agent, llm, **overrides):
    agent, _ = make_agent([], **overrides)
    agent.chat.llm = llm
    return agent


def test_choice_from_option_scores_over_cyclic_permutations(make_agent):
    llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** A"], truth="EXIT 42")
    result = _agent_with(make_agent, llm, choice_scoring="permutation", choice_calibration=False).run(CHOICE_Q)
    assert result.choice == "B" and result.choice_method == "option-scores"
    assert result.answer == "B. EXIT 42"  # the letter written (A) lost to the option scores
    assert len(llm.scored) == 3 and "(A) ROOM 7B" not in llm.scored[0]
    assert llm.without_evidence == 0  # no calibration by default
    step = result.trace.steps[-1]
    assert step.kind == "final_answer" and "cyclic permutations" in step.notes[0]
    assert set(step.observation_data["option_scores"]) == {"A", "B", "C"}
    assert result.trace.choice_method == "option-scores"


def test_option_scores_are_calibrated_by_the_scores_without_evidence(make_agent):
    # the model favours ROOM 7B whatever the frames show (more than the evidence for EXIT 42 weighs): the raw
    # scores pick A, the scores divided by those without evidence pick B (Zhao et al. 2021)
    def run(**kw):
        llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** A"], truth="EXIT 42", favourite="ROOM 7B")
        return _agent_with(make_agent, llm, choice_scoring="permutation", **kw).run(CHOICE_Q), llm

    raw, llm = run(choice_calibration=False)
    assert raw.choice == "A" and llm.without_evidence == 0
    calibrated, llm = run(choice_calibration=True)
    assert calibrated.choice == "B" and llm.without_evidence == 3
    data = calibrated.trace.steps[-1].observation_data
    assert max(data["evidence_scores"], key=data["evidence_scores"].get) == "A"
    assert max(data["prior_scores"], key=data["prior_scores"].get) == "A"
    assert "without evidence" in calibrated.trace.steps[-1].notes[0]


def test_calibrated_scores():
    from avi.agent.rules.choice import calibrated_scores
    got = calibrated_scores({"A": 0.5, "B": 0.3, "C": 0.2}, {"A": 0.6, "B": 0.2, "C": 0.2})
    assert max(got, key=got.get) == "B" and abs(sum(got.values()) - 1.0) < 1e-9
    assert calibrated_scores({"A": 0.5, "B": 0.5}, {"A": 0.5}) == {"A": 0.5, "B": 0.5}  # no prior for B: unchanged


def test_choice_from_the_option_text_when_the_server_gives_no_logprobs(make_agent):
    llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** A", '{"option": "EXIT 42"}'], truth=None)
    result = _agent_with(make_agent, llm, choice_scoring="permutation").run(CHOICE_Q)
    assert result.choice == "B" and result.choice_method == "option-text" and result.note is None
    schema = llm.calls[-1].json_schema
    assert schema["properties"]["option"]["enum"] == ["ROOM 7B", "EXIT 42", "EXIT 24"]


def test_free_text_answer_of_its_own_is_kept(make_agent):
    # the answer may rest on speech in the captions the search returned: it is not replaced by on-screen text
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** it was moved to Thursday"], grounded_answers=True)
    result = agent.run(QT)
    assert result.answer == "it was moved to Thursday" and len(llm.calls) == 3


def test_free_text_answer_that_holds_the_evidence_is_kept(make_agent):
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** It says EXIT 42."], grounded_answers=True)
    result = agent.run(QT)
    assert result.answer == "It says EXIT 42." and len(llm.calls) == 3  # no extra request


def test_interval_answer_spans_the_whole_event(make_agent):
    # EXIT 42 is on screen 4.0-9.0 s; the model looked at one second of it and answered with that second
    agent, llm = make_agent([call("text_extract", time_ranges=[[5, 6]]), TO_REVIEW, "**Answer:** [5, 6]"],
                            grounded_answers=True)
    result = agent.run("When is the EXIT sign on screen, around 0:05?")
    s, e = result.interval
    assert 3.5 <= s <= 4.0 and 8.5 <= e <= 9.25
    assert result.answer == f"[{s:.1f}s, {e:.1f}s]"
    followed = [st for st in result.trace.steps if st.kind == "tool_call" and st.phase == "review"]
    assert followed and all(any("following the event" in n for n in st.notes) for st in followed)


def test_question_the_profile_cannot_measure_says_so(make_agent):
    # object_detect says the detector has no class for a thing the question names: the answer says so, and the
    # model's letter stays as a guess (the tool's own vocabulary decides, no list of nouns)
    helmet = call("object_detect", time_ranges=[[5, 5]], objects=["helmet"])
    agent, llm = make_agent([TEXT_AT_5, helmet, TO_REVIEW, "**Answer:** B"], grounded_answers=True)
    result = agent.run("What is the man at 5 s wearing on his head? A. a cap B. a helmet")
    assert result.cannot_tell and result.choice == "B"
    assert result.answer.startswith("Cannot tell on this profile") and "(a guess)" in result.answer
    assert "has no class for helmet" in result.answer and result.trace.cannot_tell
    # the same question when the model never asked the detector about it: the model's answer stands
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** B"], grounded_answers=True)
    result = agent.run("What is the man at 5 s wearing on his head? A. a cap B. a helmet")
    assert not result.cannot_tell and result.choice == "B"
    # a label the question does not name (the model's own word) makes no question unseen
    agent, llm = make_agent([TEXT_AT_5, helmet, TO_REVIEW, "**Answer:** A"], grounded_answers=True)
    result = agent.run("What colour is the sign at 5 s? A. red B. blue")
    assert not result.cannot_tell


def test_perceive_range_nothing_supports_is_questioned_once(make_agent):
    far = call("text_extract", time_ranges=[[15, 16]])
    agent, llm = make_agent([TO_PERCEIVE, far, far, TO_REVIEW, "**Answer:** ROOM 7B"])
    result = agent.run("What does the sign in the first five seconds say?")
    assert kinds(result.trace) == ["stage_switch", "retry", "tool_call", "stage_switch", "answer"]
    note = result.trace.steps[1].notes[0]
    assert "[15.0s–16.0s]" in note and "[0.0s–5.0s]" in note and "named in the question" in note
    assert "time words point to" in llm.calls[0].messages[1]["content"]
    assert "Where to look first" in llm.calls[1].messages[-1]["content"]


def test_time_words_start_in_perceive(make_agent):
    # the question names where to look: no Retrieve step that would only hand over (issue 17, item 5)
    agent, llm = make_agent([call("text_extract", time_ranges=[[0, 5]]), TO_REVIEW, "**Answer:** ROOM 7B"],
                            grounded_answers=True)
    result = agent.run("What does the sign in the first five seconds say?")
    assert kinds(result.trace) == ["stage_switch", "tool_call", "stage_switch", "answer"]
    assert "Perceive first" in result.trace.steps[0].notes[1] and result.trace.steps[1].phase == "perceive"
    first = llm.calls[0].messages[1]["content"]
    assert "time words point to" in first and "Where to look first" in first
    assert result.trace.totals()["llm_replies"] == 3  # the host's step is not a model reply
    # a "when" question still searches first: the model (host_retrieve off) or the host
    agent, llm = make_agent([TO_PERCEIVE, call("text_extract", time_ranges=[[0, 5]]), TO_REVIEW,
                             "**Answer:** [4, 9]"], grounded_answers=True, host_retrieve=False)
    result = agent.run("When is the EXIT sign on screen in the first ten seconds?")
    assert result.trace.steps[0].phase == "retrieve" and result.trace.steps[0].iteration == 1
    agent, llm = make_agent([call("text_extract", time_ranges=[[0, 5]]), TO_REVIEW, "**Answer:** [4, 9]"],
                            grounded_answers=True, host_retrieve=True)
    result = agent.run("When is the EXIT sign on screen in the first ten seconds?")
    assert result.trace.steps[0].tool == "clip_retrieve" and HOST_STEP in result.trace.steps[0].notes


# ------------------------------------------------------- hard cuts measured on every frame (sign video: a cut at 10 s)


def test_a_cut_count_choice_is_measured_not_scored(make_agent):
    llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** C"], truth="two")
    agent = _agent_with(make_agent, llm, choice_scoring="permutation", grounded_answers=True)
    result = agent.run("How many cuts are there in the video? (A) none (B) one (C) two")
    assert result.choice == "B" and result.choice_method == "measured"
    assert llm.scored == []  # no option scoring when the measurement answers
    step = next(s for s in result.trace.steps if s.kind == "final_answer" and "hard cuts" in s.notes[0])
    assert step.observation_data["cuts_s"] == pytest.approx([10.0], abs=0.1)
    # the cut list answers before any model step (issue 17: steps that add nothing are cut)
    assert llm.calls == [] and result.trace.iterations == 0 and not result.trace.forced
    assert any("before any model step" in n for s in result.trace.steps for n in s.notes)
    assert result.evidence == [pytest.approx([9.5, 10.5], abs=0.1)]


def test_yes_no_about_one_continuous_shot_is_measured(make_agent):
    agent, _ = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** Yes"], grounded_answers=True)
    assert agent.run("Is the whole video one continuous shot?").answer == "No"


def test_a_cut_count_in_the_named_range(make_agent):
    agent, _ = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** 1"], grounded_answers=True)
    assert agent.run("How many cuts are there in the first five seconds?").answer == "0"


def test_questions_about_other_things_keep_the_models_answer(make_agent):
    agent, _ = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** 3"], grounded_answers=True)
    assert agent.run("How many times does the camera cut to the exit sign?").answer == "3"


def test_text_the_question_is_not_about_does_not_widen_an_interval(make_agent):
    # the sign video: EXIT 42 is on screen 4-9 s, the red square moves 1-3 s; a text run next to the answer
    # is no evidence of the square's movement
    agent, _ = make_agent([call("text_extract", time_ranges=[[3, 6]]), TO_REVIEW, "**Answer:** [1.0s, 3.0s]"],
                          grounded_answers=True)
    assert agent.run("When does the red square move across the screen?").interval == [1.0, 3.0]
    agent, _ = make_agent([call("text_extract", time_ranges=[[3, 6]]), TO_REVIEW, "**Answer:** [3.0s, 6.0s]"],
                          grounded_answers=True)
    widened = agent.run("When is the EXIT sign on screen?").interval
    assert widened[0] <= 4.0 and widened[1] >= 8.5  # a text the question names: its whole time on screen


def test_a_shot_interval_is_not_widened_by_objects_seen_in_other_shots(make_agent):
    # the sign video: a cut at 10 s; EXIT 42 (4-9 s) lies in the first shot. The model answers with the second
    # shot; text evidence in the first shot must not stretch a shot answer across the cut.
    agent, _ = make_agent([call("text_extract", time_ranges=[[8, 12]]), TO_REVIEW, "**Answer:** [10.0s, 20.0s]"],
                          grounded_answers=True)
    result = agent.run("During which time span is the shot with the dark green background and the EXIT sign shown?")
    assert result.interval == pytest.approx([10.0, 20.0], abs=0.1)


def test_host_retrieve_searches_for_the_question_and_opens_in_perceive(make_agent):
    """Setting host_retrieve (issue 17, item 5): the host's clip_retrieve with the question's words replaces the
    model's Retrieve call and stage switch; the first model reply is already a perceive call, and the search
    result is in the first message. Questions about the whole video keep the model's Retrieve stage."""
    agent, llm = make_agent([call("text_extract", time_ranges=[[4, 9]]), TO_REVIEW, "**Answer:** EXIT 42"],
                            host_retrieve=True, grounded_answers=True)
    result = agent.run(Q)
    assert result.answer is not None and "EXIT" in result.answer
    first = llm.calls[0].messages[1]["content"]
    assert "already done for you (clip_retrieve)" in first and "CURRENT STAGE: PERCEIVE" in first
    # the tool guide, the same for every question of the profile, leads the message (the server's KV cache keeps
    # it from the last question) and is not repeated in the stage part below it
    assert first.startswith("Perceive tools, by what each one measures:") and first.count("text_extract;") == 1
    assert first.index("text_extract;") < first.index("Question:") < first.index("CURRENT STAGE: PERCEIVE")
    host = [s for s in result.trace.steps if s.kind == "tool_call" and s.tool == "clip_retrieve"]
    assert host and HOST_STEP in host[0].notes and host[0].arguments["query"] == "the sign say"
    assert result.trace.totals()["llm_replies"] == len(llm.calls)  # no model step for the search
    assert sum(s.kind == "stage_switch" and HOST_STEP in s.notes for s in result.trace.steps) == 1
    agent, llm = make_agent([TO_PERCEIVE, call("text_extract", time_ranges=[[4, 9]]), TO_REVIEW,
                             "**Answer:** EXIT 42"], host_retrieve=True, grounded_answers=True)
    agent.run("What is the whole video about?")
    assert "CURRENT STAGE: RETRIEVE" in llm.calls[0].messages[1]["content"]


def test_perceive_guide_comes_again_when_perceive_is_entered_later(make_agent):
    """Entering Perceive from Retrieve, the stage message carries the tool guide itself."""
    agent, llm = make_agent([call("clip_retrieve", query="sign"), TO_PERCEIVE, TEXT_AT_5, TO_REVIEW,
                             "**Answer:** EXIT 42"])
    agent.run(Q)
    stage = [m["content"] for m in llm.calls[-1].messages if m["role"] == "user"
             and str(m["content"]).startswith("CURRENT STAGE: PERCEIVE")]
    assert len(stage) == 1 and "text_extract;" in stage[0] and "boundary_detect;" in stage[0]
    assert "Perceive tools" not in llm.calls[0].messages[1]["content"]


def test_tree_strategy_puts_the_tree_search_segments_first(make_agent):
    """Setting perceive_strategy = tree (issue 20): the host's budgeted tree search (EEA) runs before the first
    model step, is one host step of the trace with its frames, and its best segments are the Perceive places."""
    agent, llm = make_agent([call("text_extract", time_ranges=[[4, 9]]), TO_REVIEW, "**Answer:** EXIT 42"],
                            host_retrieve=True, grounded_answers=True, perceive_strategy="tree")
    result = agent.run("What number is written under the word EXIT?")
    assert result.answer is not None and "EXIT" in result.answer
    tree = [s for s in result.trace.steps if s.tool == "tree_search"]
    assert len(tree) == 1 and HOST_STEP in tree[0].notes and tree[0].frames_s
    data = tree[0].observation_data
    assert data["tree"][0]["expanded"] and data["best"] and data["measured"]  # OCR read "exit" in its frames
    first = llm.calls[0].messages[1]["content"]
    assert "tree search segment, score" in first and "CURRENT STAGE: PERCEIVE" in first
    assert "tree_search" not in {t["function"]["name"] for t in llm.calls[0].tools}  # never offered to the model
    assert result.trace.totals()["frames_per_tool"]["tree_search"] == len(tree[0].frames_s)


def test_tree_strategy_keeps_the_search_hits_when_it_measured_nothing(make_agent):
    """A question none of whose words the cheap perception can see: the tree was ranked by caption similarity
    alone, so the clip search's hits stay the Perceive places (the tree step is still in the trace)."""
    agent, llm = make_agent([call("text_extract", time_ranges=[[4, 9]]), TO_REVIEW, "**Answer:** EXIT 42"],
                            host_retrieve=True, grounded_answers=True, perceive_strategy="tree")
    result = agent.run("Why does the narrator sound worried?")
    tree = [s for s in result.trace.steps if s.tool == "tree_search"]
    assert len(tree) == 1 and not tree[0].observation_data["measured"]
    first = llm.calls[0].messages[1]["content"]
    assert "tree search segment" not in first and "CURRENT STAGE: PERCEIVE" in first


def test_timeline_strategy_offers_overview_to_the_model(make_agent):
    """Setting perceive_strategy = timeline (issue 20): overview and skim are Perceive tools the model can call;
    their frames count against the question's budget like any perceive call."""
    agent, llm = make_agent([call("overview", query="sign"), call("text_extract", time_ranges=[[4, 9]]), TO_REVIEW,
                             "**Answer:** EXIT 42"], host_retrieve=True, grounded_answers=True,
                            perceive_strategy="timeline")
    result = agent.run(Q)
    assert result.answer is not None and "EXIT" in result.answer
    assert {"overview", "skim"} <= {t["function"]["name"] for t in llm.calls[0].tools}
    over = [s for s in result.trace.steps if s.tool == "overview"]
    assert len(over) == 1 and not over[0].error and len(over[0].frames_s) == 32
    assert 'text "exit 42"' in over[0].observation
    assert result.trace.totals()["frames_per_tool"]["overview"] == 32


# ------------------------------------------------------- the answer rules as a registry (issue 35)


def test_rules_that_change_the_answer_are_named_in_the_result_and_the_trace(make_agent):
    llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** A"], truth="EXIT 42")
    result = _agent_with(make_agent, llm, choice_scoring="permutation").run(CHOICE_Q)
    assert result.choice == "B" and result.rules == ["option_scores"]
    entry = result.trace.rules[0]
    assert entry["rule"] == "option_scores" and entry["changed"]
    assert entry["before"] == {"answer": "A", "choice": "A"} and entry["after"] == {"answer": "B. EXIT 42", "choice": "B"}
    assert any(s.rule == "option_scores" and "cyclic permutations" in s.notes[0] for s in result.trace.steps)
    assert result.trace.to_dict()["rules"] == result.trace.rules


def test_answer_rules_none_delivers_the_review_answer(make_agent):
    """The paper's agent (--preset paper): no host rule changes the answer; it is still read for its type."""
    llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** A"], truth="EXIT 42")
    result = _agent_with(make_agent, llm, choice_scoring="permutation", grounded_answers=True,
                         structured_answer=True, answer_rules="none").run(CHOICE_Q)
    assert result.choice == "A" and result.choice_method == "letter" and result.answer == "A"
    assert llm.scored == [] and result.rules == [] and result.trace.rules == []
    # the cut list would answer this one before any model step; without the rule the model answers
    agent, llm = make_agent([TEXT_AT_5, TO_REVIEW, "**Answer:** Yes"], grounded_answers=True, answer_rules="none")
    result = agent.run("Is the whole video one continuous shot?")
    assert result.answer == "Yes" and len(llm.calls) == 3


def test_one_rule_removed_leaves_the_others(make_agent):
    llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** A", '{"choice": "C"}'], truth="EXIT 42")
    result = _agent_with(make_agent, llm, choice_scoring="permutation", structured_answer=True,
                         answer_rules="-option_scores").run(CHOICE_Q)
    assert llm.scored == [] and result.choice == "C" and result.choice_method == "structured"
    assert result.rules == ["structured_answer"]
    # with every rule on, no measured rule answers this question: the option scores decide
    llm = LogprobLLM([TEXT_AT_5, TO_REVIEW, "**Answer:** A"], truth="EXIT 42")
    result = _agent_with(make_agent, llm, choice_scoring="permutation", grounded_answers=True).run(CHOICE_Q)
    assert result.choice == "B" and result.rules == ["option_scores"] and llm.scored
