"""The agent over several videos (issue 21; AgentCVR, arXiv 2605.29643, §3.2: one orchestrator calls tools that
name their video, and the evidence of all videos is weighed in its context).

:class:`MultiAgent` is the single-video :class:`avi.agent.loop.Agent` (same loop, system prompt and stage
prompts) with

* the tools of :mod:`avi.videos.tools` (a ``video`` argument; search tools search every video);
* the question message of ``prompts/videos/question.md`` (the videos, their lengths, how ``video`` works, and
  the people whose faces match across the videos, :mod:`avi.videos.people`, when there are any);
* answer types over videos (:mod:`avi.videos.kinds`): a video's name, the set of videos that show something, an
  order of videos; read from the answer text and, as for the other typed answers, through one constrained final
  call whose names are an enum;
* evidence and looked-at ranges as ``[start_s, end_s, video]`` (merged per video);
* no single-video grounding (measured colours, counts at a moment, shot edges): those read one video's frames;
* the multi-video answer rule in the one registry (:mod:`avi.agent.rules.videos`: the videos' lengths from
  their durations, before any model step).
"""

from __future__ import annotations

import dataclasses
import json

from avi.agent.answer_types import TypedAnswers
from avi.agent.loop import Agent, AgentResult
from avi.agent.question import ParsedQuestion
from avi.agent.state import State
from avi.backends.llm import ContextOverflowError
from avi.replies import split_thought
from avi.tools import Tool
from avi.trace import Trace
from avi.video.spans import merge_spans
from avi.videos.context import MultiContext
from avi.videos.kinds import VIDEO_KINDS, answer_schema, read_structured, read_video_answer, video_kind
from avi.videos.people import shared_people, shared_people_lines
from avi.videos.tools import video_tools


class VideoAnswers(TypedAnswers):
    """Answers read for their type where the type may be a video's name, a set of videos or an order of videos
    (:data:`avi.videos.kinds.VIDEO_KINDS`; other types as for one video). ``value`` is the last read (a name or
    a list of names)."""

    def __init__(self, chat, ctx, names: list[str]):
        super().__init__(chat, ctx)
        self.names = names
        self.value = None

    def typed(self, st: State, answer: str | None):
        if st.kind not in VIDEO_KINDS:
            return super().typed(st, answer)
        value = read_video_answer(st.kind, answer, self.names)
        note = None if answer is None or value is not None else \
            f"unparseable {st.kind} answer {answer[:200]!r}: reported as no answer"
        self.value = value
        return None, None, None, value if st.kind == "video_order" else None, note

    def structured(self, st: State, trace: Trace) -> dict | None:
        if st.kind not in VIDEO_KINDS:
            return super().structured(st, trace)
        if not getattr(self.chat.settings, "structured_answer", True):
            return None
        prompt = self.chat.prompts.render("final_answer", question=st.question, options=st.options_text,
                                          answer=st.answer)
        try:
            res = self.chat.ask_json(st.history, prompt, answer_schema(st.kind, self.names))
        except ContextOverflowError:
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=["structured final answer skipped: context full; the answer text is read"])
            return None
        try:
            value = read_structured(st.kind, json.loads(split_thought(res.content)[1].strip() or "null"), self.names)
        except ValueError:
            value = None
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase, content=res.content,
                  llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                  completion_tokens=res.completion_tokens,
                  notes=[f"structured final answer {value}" if value else
                         f"structured final answer unusable for {st.kind}; the answer text is read"])
        if value is None:
            return None
        self.value = value
        return {"order": value if st.kind == "video_order" else None,
                "answer": value if isinstance(value, str) else ", ".join(value)}


class MultiAgent(Agent):
    """Runs one question against several videos' indexes (module docstring).

    Args:
        llm, prompts: as :class:`avi.agent.loop.Agent`.
        ctx: a :class:`avi.videos.context.MultiContext` (two videos or more).
        settings: as for one video; ``grounded_answers`` is taken as off (single-video measurements).
    """

    def __init__(self, llm, ctx: MultiContext, prompts, settings):
        self.names = list(ctx.names)
        self._shared: list[dict] | None = None
        super().__init__(llm, ctx, prompts, settings.model_copy(update={"grounded_answers": False}))

    def tool_set(self) -> dict[str, Tool]:
        return video_tools(self.names)

    def memory(self, st, trace):
        """No perception-memory route over several videos yet: each memory belongs to one index."""
        return None

    def typed_answers(self) -> VideoAnswers:
        return VideoAnswers(self.chat, self.ctx, self.names)

    def question_message(self, question: str, options: str, time_hint: str, speech: str, answer_format: str) -> str:
        videos = "\n".join(f"- {n}: {d:.1f} seconds long" for n, d in self.ctx.durations().items())
        shared = shared_people_lines(self.shared_people())
        if shared:  # people whose faces match across the videos (avi.videos.people); nothing said otherwise
            videos += "\nPeople seen in more than one of the videos:\n" + "\n".join(shared)
        return self.prompts.render("videos/question", question=question, options=options, time_hint=time_hint,
                                   count=len(self.names), videos=videos, speech=speech, answer_format=answer_format)

    def run(self, question: str, trace: Trace | None = None) -> AgentResult:
        """Answer ``question`` over the videos (see :meth:`avi.agent.loop.Agent.run`).

        The result's ``answer_type`` is one of :data:`avi.videos.kinds.VIDEO_KINDS` when the question asks for
        videos: ``answer`` is then the name (``video``) or the names joined by ", " (``videos``, ``video_order``),
        ``order`` the names in order for ``video_order``; the names are also in ``trace.answer_videos``.

        Raises:
            LLMUnavailableError: the orchestrator server is unreachable.
        """
        self.answers.value = None
        result = super().run(question, trace)
        value = self.answers.value if result.answer_type in VIDEO_KINDS and result.note is None else None
        if value is not None:
            result.answer = value if isinstance(value, str) else ", ".join(value)
            result.trace.answer = result.answer
        if hasattr(result.trace, "answer_videos"):
            result.trace.answer_videos = [value] if isinstance(value, str) else value
        return result

    # ------------------------------------------------------------------ answer types over videos

    def shared_people(self) -> list[dict]:
        """The people whose faces match across the videos (:func:`avi.videos.people.shared_people`), computed once
        per agent."""
        if self._shared is None:
            self._shared = shared_people({n: c.index for n, c in self.ctx.contexts.items()})
        return self._shared

    def parse(self, question: str) -> ParsedQuestion:
        q = super().parse(question)
        kind = video_kind(question) if getattr(self.settings, "answer_type", "auto") == "auto" else None
        return dataclasses.replace(q, kind=kind) if kind is not None else q

    def answer_format(self, q: ParsedQuestion) -> str:
        return self.prompts.text(f"videos/format_{q.kind}") if q.kind in VIDEO_KINDS else super().answer_format(q)

    # ------------------------------------------------------------------ evidence per video

    def merged_evidence(self, st: State) -> list:
        spans = [e for e in st.evidence if len(e) >= 3] or st.looked
        out = []
        for name in self.names:
            for s, e in merge_spans([[float(x[0]), float(x[1])] for x in spans if len(x) >= 3 and x[2] == name]):
                out.append([s, e, name])
        return out

    def looked_span(self, obs) -> list:
        span = [min(obs.frames_s), max(obs.frames_s)]
        video = obs.data.get("video")
        return span + [video] if video else span

    def add_places(self, st: State, tool: str, obs) -> None:
        per_video = obs.data.get("per_video")
        if per_video:  # a search over all videos: each video's hits, labelled with it in the Perceive instruction
            key = {"clip_retrieve": "clips", "transcript_search": "segments"}.get(tool)
            for name, data in per_video.items():
                rows = [r for r in obs.data.get(key) or [] if r.get("video") == name] if key else None
                own = {**data, key: rows} if key else data
                st.places.add_observation(f"{tool} in video {name}", own,
                                          [e[:2] for e in obs.evidence if len(e) >= 3 and e[2] == name])
        else:
            video = obs.data.get("video")
            st.places.add_observation(f"{tool} in video {video}" if video else tool, obs.data,
                                      [e[:2] for e in obs.evidence])
