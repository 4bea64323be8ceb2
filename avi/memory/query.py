"""The typed query over a perception memory: one pydantic definition, from which the JSON schema that constrains
the orchestrator's decoding is generated (llama.cpp's grammar from ``response_format``; vLLM's structured outputs).

A query says *what* is measured (``target``, with a detector ``label``, a shape, a text or speech ``pattern``,
person attributes, a ``colour`` condition, a frame ``region``), *what is wanted of it* (``op``) and, for yes/no
questions about a number, a ``compare``. The time scope is not decoded: the host grounds the question's time words
(:func:`avi.video.timecode.question_ranges`, clock times) into ``time`` after the parse, as MoReVQA separates
parsing from grounding in time (Min et al., CVPR 2024, §3): a 1.5B model that copies numbers from its examples
never writes a time.

Operations (:mod:`avi.memory.evaluate` has one function each):

=============  ============================================================================  =================
op             what it returns                                                               answer type
=============  ============================================================================  =================
exists         whether the target is seen / read / heard in the scope (with ``compare``:     yes/no
               whether its count there satisfies it)
count          how many at the scope's moment (one frame); over a range: distinct ones       number
               (tracks, people, lines, cuts, utterances)
max_count      the most seen at one time                                                     number
span           when the target is seen (its longest run, snapped to shot edges)              interval
first / last   the first / last run in which it is seen                                      interval
read           the text read on screen, or the speech heard, in the scope (with pattern;     text
               with a ``form``, only what has that form: the date, year, clock time or number)
colour         the main colour of the target's boxes (``frame``: of the picture)             text
direction      which way the target moves across the picture (left, right, up, down)         text
order          the order in which the options' things first appear                           order / choice
unsupported    what the question asks is measured by no tool of this profile                 cannot tell
=============  ============================================================================  =================
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from avi.video.analysis import MEASURED_COLOURS

OPS = ("exists", "count", "max_count", "span", "first", "last", "read", "colour", "direction", "order",
       "unsupported")
TARGETS = ("object", "person", "face", "text", "speech", "cut", "shape", "frame")
REGIONS = ("any", "left", "right", "top", "bottom", "centre", "top_left", "top_right", "bottom_left", "bottom_right")
SHAPES = ("circle", "square", "rectangle", "triangle")
POSTURES = ("standing", "sitting", "lying")
EXPRESSIONS = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")
RELATIONS = ("more_than", "at_least", "exactly", "fewer_than", "at_most")
#: the form of a read's answer the question asks for ("what date", "which year", "what number"):
#: grounded by the host from the question's words (:func:`avi.agent.question.answer_form`), never decoded
ANSWER_FORMS = ("date", "year", "time", "number")
#: fields with a default that the decoding still has to write (the parse schema requires them)
ALWAYS_WRITTEN = ("region",)
#: the label of a thing the detector has no class for (the query is then not answered from boxes)
OTHER = "other"


class Compare(BaseModel):
    """A comparison that turns a count into yes/no ("more than two" -> ``more_than`` 2)."""

    model_config = ConfigDict(extra="forbid")
    relation: Literal[RELATIONS]  # type: ignore[valid-type]
    value: int = Field(ge=0, le=1000)

    def holds(self, n: int) -> bool:
        """Whether a count ``n`` satisfies the comparison."""
        return {"more_than": n > self.value, "at_least": n >= self.value, "exactly": n == self.value,
                "fewer_than": n < self.value, "at_most": n <= self.value}[self.relation]


class TimeScope(BaseModel):
    """Where in the video the question looks, in seconds: ``start_s == end_s`` is a moment; None = the video's
    start / end. Filled by the host's grounding, not decoded."""

    model_config = ConfigDict(extra="forbid")
    start_s: float | None = None
    end_s: float | None = None
    phrase: str = ""  # the question's words that named it ("at 0:44", "in the first 40 seconds")

    @property
    def is_moment(self) -> bool:
        return self.start_s is not None and self.end_s is not None and abs(self.end_s - self.start_s) < 1e-6

    def bounds(self, duration_s: float) -> tuple[float, float]:
        """``(start_s, end_s)`` inside ``[0, duration_s]``."""
        a = 0.0 if self.start_s is None else max(0.0, min(duration_s, self.start_s))
        b = duration_s if self.end_s is None else max(0.0, min(duration_s, self.end_s))
        return (a, b) if a <= b else (b, a)


class QueryFields(BaseModel):
    """The fields the orchestrator decodes (their order is the order it writes them in: what the question is about
    first, then what is wanted of it). ``target``, ``noun``, ``label``, ``op``, ``pattern``, ``colour`` (null when
    none) and ``region`` (``any`` when none) are always written: a small model left out the ones it could skip even
    where the question gives them (bench/memory); the person attributes and ``compare`` only when given. The label's
    allowed values depend on the detector: :func:`parse_schema`."""

    model_config = ConfigDict(extra="forbid")
    target: Literal[TARGETS]  # type: ignore[valid-type]
    noun: str = Field(max_length=40)
    label: str | None = Field(max_length=40)
    op: Literal[OPS]  # type: ignore[valid-type]
    pattern: str | None = Field(max_length=80)
    colour: Literal[MEASURED_COLOURS] | None  # type: ignore[valid-type]
    region: Literal[REGIONS] = "any"  # type: ignore[valid-type]
    posture: Literal[POSTURES] | None = None  # type: ignore[valid-type]
    arms_raised: bool | None = None
    expression: Literal[EXPRESSIONS] | None = None  # type: ignore[valid-type]
    holding: str | None = Field(None, max_length=40)
    compare: Compare | None = None


class MemoryQuery(QueryFields):
    """A complete query: the decoded fields plus what the host grounds from the question's words: the ``time``
    scope and, for a read, the ``form`` its answer takes (a date, a year, a clock time, a number; None: any text).
    """

    time: TimeScope = Field(default_factory=TimeScope)
    form: Literal[ANSWER_FORMS] | None = None  # type: ignore[valid-type]

    def short(self) -> str:
        """One line for traces and observations, only the fields that are set."""
        d = self.model_dump(exclude_defaults=True, exclude={"time"})
        parts = [f"{k}={v}" for k, v in d.items() if v not in (None, "", "any")]
        if self.time.start_s is not None or self.time.end_s is not None:
            parts.append(f"time=[{self.time.start_s if self.time.start_s is not None else 'start'}, "
                         f"{self.time.end_s if self.time.end_s is not None else 'end'}]")
        return " ".join(parts)


def label_type(vocabulary: list[str] | None):
    """The ``label`` field's type: an enum of the detector's classes, the shape kinds and ``other`` for a closed
    vocabulary; a bounded free string for an open one (Grounding-DINO takes any noun)."""
    if not vocabulary:
        return (str | None, Field(max_length=40))
    names = tuple(dict.fromkeys([*vocabulary, *SHAPES, OTHER]))
    return (Enum("Label", {n.replace(" ", "_"): n for n in names}) | None, ...)  # type: ignore[misc]


def parse_model(vocabulary: list[str] | None) -> type[BaseModel]:
    """The pydantic model the orchestrator's reply is validated against (``QueryFields`` with the label typed by
    :func:`label_type`)."""
    return create_model("Query", __base__=QueryFields, label=label_type(vocabulary))


def parse_schema(vocabulary: list[str] | None) -> dict:
    """The JSON schema (references inlined, no titles) that constrains the decoding of a parse."""
    from avi.replies import inline_refs

    schema = inline_refs(parse_model(vocabulary).model_json_schema())
    schema["additionalProperties"] = False
    schema["required"] = [*schema["required"], *ALWAYS_WRITTEN]
    return schema


def to_query(fields: BaseModel | dict, time: TimeScope | None = None) -> MemoryQuery:
    """A :class:`MemoryQuery` from decoded fields (a validated model or a dict) and the grounded time scope.

    Raises:
        pydantic.ValidationError: the fields do not make a query.
    """
    d = fields.model_dump(mode="json") if isinstance(fields, BaseModel) else dict(fields)
    d.pop("time", None)
    return MemoryQuery(**d, time=time or TimeScope())
