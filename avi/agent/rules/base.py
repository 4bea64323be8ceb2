"""What the answer rules share (issues 35, 54): the answer a rule sees and returns (:class:`Delivered`), what it
reads and calls (:class:`RuleRun`), the one signature of a rule body (:data:`RuleBody`), the rule (:class:`Rule`),
the ranges and reads several rules look at (seconds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from avi.agent.question import normalise
from avi.agent.rules.measured import count_at, index_counts
from avi.trace import host_tool_call
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range

if TYPE_CHECKING:
    from avi.agent.answer_types import TypedAnswers
    from avi.agent.chat import Chat
    from avi.agent.state import State
    from avi.config import Settings
    from avi.tools import Tool, ToolContext
    from avi.trace import Trace


@dataclass(frozen=True)
class Delivered:
    """The answer as it stands: ``text`` (None: none), ``choice``, ``choices``, ``interval`` ``[start_s, end_s]``,
    ``order``, a ``note`` (why the text could not be read for its type), the ``method`` that took the letter, and
    ``cannot_tell`` (a rule found that no tool of the profile measures what is asked; the letter is then a guess)."""

    text: str | None
    choice: str | None = None
    choices: list | None = None
    interval: list | None = None
    order: list | None = None
    note: str | None = None
    method: str | None = None
    cannot_tell: bool = False

    def decided(self, text: str, letter: str | None = None) -> Delivered:
        """This answer replaced by a measured one: ``text`` and, for options, its ``letter`` (method
        ``measured``); a note that the model's text could not be read no longer applies."""
        return replace(self, text=text, note=None, **({"choice": letter, "method": "measured"} if letter else {}))

    def with_text(self, text: str | None) -> Delivered | None:
        """This answer with ``text`` instead, or None when that is its text already (nothing changed)."""
        return None if text == self.text else replace(self, text=text)

    def with_interval(self, interval: list[float]) -> Delivered | None:
        """This answer moved to ``interval`` ``[start_s, end_s]`` (its text says the same), or None when that is
        its interval already."""
        if interval == self.interval:
            return None
        return replace(self, interval=interval, text=f"[{interval[0]:.1f}s, {interval[1]:.1f}s]")

    def shown(self) -> dict:
        """The fields that make the answer (text, letters, interval, order) that are set, for the trace."""
        return {k: v for k, v in (("answer", self.text), ("choice", self.choice), ("choices", self.choices),
                                  ("interval", self.interval), ("order", self.order)) if v is not None}


@dataclass
class RuleRun:
    """What a rule reads and calls in one run: the tool context ``ctx`` (index, video, backends, the question's
    ``scope``), ``settings``, the run's state ``st`` (its parsed question is ``st.q``), the ``trace``, the agent's
    ``tools``, its :class:`avi.agent.chat.Chat` and its :class:`avi.agent.answer_types.TypedAnswers`."""

    ctx: ToolContext
    settings: Settings
    st: State
    trace: Trace
    tools: dict[str, Tool] = field(default_factory=dict)
    chat: Chat | None = None
    answers: TypedAnswers | None = None

    @property
    def q(self):
        """The parsed question (:class:`avi.agent.question.ParsedQuestion`)."""
        return self.st.q

    def note(self, text: str, **fields) -> None:
        """Add a ``final_answer`` step with one note (what a rule measured or decided)."""
        self.trace.add(kind="final_answer", iteration=self.st.iteration, phase=self.st.phase, notes=[text], **fields)

    def measure(self, tool, arguments: dict, note: str, phase: str | None = None):
        """Run ``tool`` as a host step (:func:`avi.trace.host_tool_call`); returns its observation."""
        return host_tool_call(self.trace, tool, self.ctx, arguments, iteration=self.st.iteration,
                              phase=phase or self.st.phase, note=note)


RuleBody = Callable[[RuleRun, Delivered], "Delivered | None"]
"""The one signature of a rule body: ``body(run, answer so far) -> the new answer, or None when the rule does not
answer`` (it then changes nothing). A rule's ``early`` body is called before the first model step with
``Delivered(None)``."""


def _always(q) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    """A host rule that may change the delivered answer: its ``name`` in the ``answer_rules`` setting, its
    ``stage`` (``decide``, ``choose``, ``type`` or ``refine``: :func:`avi.agent.rules.deliver`), one line
    ``about`` it, its body ``apply`` (:data:`RuleBody`), the answer ``kinds`` it is for (None: every type), the
    condition ``when(parsed question)``, and an ``early`` body (:data:`RuleBody`) tried before the first model
    step."""

    name: str
    stage: str
    about: str
    apply: RuleBody
    kinds: frozenset | None = None
    when: Callable = _always
    early: RuleBody | None = None

    def applies(self, q) -> bool:
        """Whether the rule is for this question (its kind and condition)."""
        return (self.kinds is None or q.kind in self.kinds) and bool(self.when(q))

    def __call__(self, run: RuleRun, answer: Delivered) -> Delivered | None:
        return self.apply(run, answer) if self.applies(run.q) else None


# ----------------------------------------------------------------------------- what several rules read


def where(ranges: list[list[float]]) -> str:
    """Ranges as text for a trace note."""
    return ", ".join(fmt_range(a, b) for a, b in ranges)


def named_ranges(ctx) -> list[list[float]]:
    """The ranges the question's time words name (``ctx.scope.focus_ranges``), merged, else the whole video."""
    return merge_spans([list(r) for r in ctx.scope.focus_ranges]) or [[0.0, ctx.duration_s]]


def shot_list(ctx):
    """The video's shot list (:class:`avi.video.shots.ShotList`), or None when none can be made."""
    return ctx.shot_list() if hasattr(ctx, "shot_list") else None


def whole_video_counts(ctx) -> list[tuple[str, dict]]:
    """The index's per-frame counts over the whole video (:func:`avi.agent.rules.measured.index_counts`)."""
    return index_counts(getattr(getattr(ctx, "index", None), "captions", None) or [])


def moment_count(run: RuleRun, t_s: float, words: frozenset[str]) -> tuple[tuple | None, str]:
    """The count at ``t_s`` (:func:`avi.agent.rules.measured.count_at`) the agent measured, else the index's, with
    where it came from ("" or " in the index")."""
    found = count_at(run.st.perceive_data(), t_s, words)
    return (found, "") if found is not None else (count_at(whole_video_counts(run.ctx), t_s, words), " in the index")


def texts_about_question(st) -> list[dict]:
    """The text runs text_extract found (``{text, first_s, last_s}``) sharing a word of four letters or more with
    the question's stem."""
    key = {w for w in st.q.stem_terms if len(w) >= 4}
    return [t for n, _, d in st.perceive_calls if n == "text_extract" for t in d.get("texts", [])
            if key & set(normalise(t.get("text", "")).split())]
