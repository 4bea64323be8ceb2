"""The JSON trace of one question, the interpretable output AVI promises: every step (phase, thought, tool,
arguments, observation, seconds, frames looked at, tokens), the answer, the answer rules that changed it and the
evidence time ranges. Written by the agent (:mod:`avi.agent`), extended by the pipelines (fallbacks, several
videos), summarised by ``avi batch`` / ``avi eval`` records and ``avi-run --json`` (:meth:`Trace.totals`), drawn
by ``avi view``."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HOST_STEP = "host step, no model reply"
"""A step's note saying the host made it without asking the model (not counted as a model reply)."""


def host_tool_call(trace: "Trace", tool, ctx, arguments: dict, *, iteration: int, phase: str, note: str):
    """Run ``tool`` on the host's behalf (no model reply asked for it) and record the call in ``trace``, marked
    :data:`HOST_STEP` with ``note``. Returns the tool's observation."""
    obs = tool.run(ctx, arguments)
    trace.add(kind="tool_call", tool=tool.name, arguments=arguments, observation=obs.text, observation_data=obs.data,
              error=obs.error, tool_seconds=obs.data.get("seconds", 0.0), frames_s=obs.frames_s,
              iteration=iteration, phase=phase, notes=[HOST_STEP, note] + list(obs.notes))
    return obs


@dataclass
class Step:
    """One step of the agent: its ``index`` in the trace, the ``iteration`` (model decision; 0 for host steps
    before the first one and the forced answer), the ``phase`` when it started and its ``kind`` (``tool_call``,
    ``stage_switch``, ``answer``, ``retry``, ``nudge``, ``extract``, ``forced_answer``, ``final_answer``); the
    model's ``thought`` and raw ``content``; the ``tool``, its ``arguments``, ``observation`` text and
    ``observation_data``, ``error``; the phase entered (``switch_to``), the ``answer`` given; seconds of the model
    (``llm_seconds``) and the tool; ``frames_s`` looked at; the server's token counts; the host's ``notes``; where
    a tool call came from (``call_source``: ``native`` tool_calls, ``content`` JSON in the text, ``extracted``);
    the answer ``rule`` (:mod:`avi.agent.rules`) whose answer the step belongs to."""

    index: int
    iteration: int
    phase: str
    kind: str
    thought: str = ""
    content: str = ""
    tool: str | None = None
    arguments: dict | None = None
    observation: str | None = None
    observation_data: dict | None = None
    error: bool = False
    switch_to: str | None = None
    answer: str | None = None
    llm_seconds: float = 0.0
    tool_seconds: float = 0.0
    frames_s: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)
    call_source: str | None = None
    rule: str | None = None


@dataclass
class Trace:
    """Everything about one answered question (written as JSON); ``rules``: each answer rule that answered, with
    the answer ``before`` and ``after`` it and whether it ``changed`` (:func:`avi.agent.rules.deliver`); ``memory``:
    the perception-memory route (the parse, the typed query, the evaluator's rows and the route taken:
    :meth:`avi.agent.memory_route.Routed.to_dict`), empty when there was none."""

    question: str
    video: str = ""
    video_sha256: str = ""
    index_dir: str = ""
    profile: str = ""
    llm: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    prompts_sha256: str = ""
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    steps: list[Step] = field(default_factory=list)
    answer: str | None = None
    choice: str | None = None
    interval: list[float] | None = None
    choices: list[str] | None = None
    order: list[str] | None = None
    answer_type: str = ""
    raw_answer: str | None = None
    answer_note: str | None = None
    cannot_tell: bool = False
    choice_method: str | None = None
    rules: list[dict] = field(default_factory=list)
    memory: dict = field(default_factory=dict)
    evidence: list[list[float]] = field(default_factory=list)
    iterations: int = 0
    forced: bool = False
    seconds: dict = field(default_factory=dict)

    def add(self, **kwargs) -> Step:
        step = Step(index=len(self.steps), **kwargs)
        self.steps.append(step)
        return step

    def totals(self) -> dict:
        """Per-question telemetry (issue 5): tokens, frames, time, model replies and seconds per phase, calls and
        seconds per tool, and the replies that needed the fallback parser (a call written as JSON in the text, or
        a reply re-asked)."""
        frames = sorted({t for s in self.steps for t in s.frames_s})
        # every step is one model reply, except the host's move on after replies that were all unusable and
        # the host's own steps (HOST_STEP: Perceive first, the cut list's answer)
        replies = [s for s in self.steps if "no usable reply after retries" not in s.notes and HOST_STEP not in s.notes]
        steps_per_phase: dict[str, int] = {}
        seconds_per_phase: dict[str, float] = {}
        calls_per_tool: dict[str, int] = {}
        seconds_per_tool: dict[str, float] = {}
        frames_per_tool: dict[str, int] = {}
        for s in replies:
            steps_per_phase[s.phase] = steps_per_phase.get(s.phase, 0) + 1
        for s in self.steps:
            seconds_per_phase[s.phase] = seconds_per_phase.get(s.phase, 0.0) + s.llm_seconds + s.tool_seconds
            if s.kind == "tool_call" and s.tool:
                calls_per_tool[s.tool] = calls_per_tool.get(s.tool, 0) + 1
                seconds_per_tool[s.tool] = seconds_per_tool.get(s.tool, 0.0) + s.tool_seconds
            if s.frames_s:  # host measurements without a tool are counted under their step kind
                key = s.tool or s.kind
                frames_per_tool[key] = frames_per_tool.get(key, 0) + len(s.frames_s)
        content_calls = sum(1 for s in self.steps if s.kind == "tool_call" and s.call_source == "content")
        retries = sum(1 for s in self.steps if s.kind == "retry")
        return {
            "prompt_tokens": sum(s.prompt_tokens for s in self.steps),
            "completion_tokens": sum(s.completion_tokens for s in self.steps),
            "llm_seconds": round(sum(s.llm_seconds for s in self.steps), 3),
            "tool_seconds": round(sum(s.tool_seconds for s in self.steps), 3),
            "tool_calls": sum(1 for s in self.steps if s.kind == "tool_call"),
            "frames_looked_at": len(frames),
            "frames_spent": sum(len(s.frames_s) for s in self.steps),
            "frames_per_tool": frames_per_tool,
            "llm_replies": len(replies),
            "steps_per_phase": steps_per_phase,
            "seconds_per_phase": {k: round(v, 3) for k, v in seconds_per_phase.items()},
            "tool_calls_per_tool": calls_per_tool,
            "seconds_per_tool": {k: round(v, 3) for k, v in seconds_per_tool.items()},
            "native_tool_calls": sum(1 for s in self.steps if s.kind == "tool_call" and s.call_source == "native"),
            "content_tool_calls": content_calls,
            "retries": retries,
            "fallback_replies": content_calls + retries,
            "extraction_passes": sum(1 for s in self.steps if s.kind == "extract"),
            "structured_answers": sum(1 for s in self.steps if s.kind == "final_answer"
                                      and s.notes and not s.notes[0].startswith("structured final answer unusable")
                                      and "skipped" not in s.notes[0]),
            "extracted_tool_calls": sum(1 for s in self.steps
                                        if s.kind == "tool_call" and s.call_source == "extracted"),
            "traps": sum(1 for s in self.steps if any(n.startswith("trap:") for n in s.notes)),
        }

    def to_dict(self) -> dict:
        d = asdict(self)
        d["totals"] = self.totals()
        return d

    def write(self, path: Path) -> Path:
        """Write the trace as JSON atomically (temporary file, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False))
        os.replace(tmp, path)
        return path
