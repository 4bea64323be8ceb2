"""The LLM extraction's reply schema (AVI §3.2.3, Fig. 8) and the parsing and validation of one reply."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from avi.index.graph.constants import TIME_TOLERANCE_S
from avi.replies import inline_refs
from avi.video.timecode import parse_time

if TYPE_CHECKING:
    pass


def _seconds(value: object) -> float:
    try:
        return parse_time(value)
    except ValueError:
        raise ValueError(f"not a time in seconds: {value!r}") from None


Seconds = Annotated[float, BeforeValidator(_seconds)]
"""A time in seconds; ``12``, ``12.5``, ``"12.5s"`` and ``"0:12"`` are accepted when validating."""

Interval = Annotated[list[Seconds], Field(min_length=2, max_length=2)]
"""``[start_s, end_s]``."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class ExtractedAction(_Lenient):
    """One action of one subject (AVI Fig. 8 ``actions_events``)."""

    action: str = Field(min_length=1)
    timestamp: Interval


class ExtractedSubject(_Lenient):
    """One person as the LLM reports it for one chunk of captions (AVI Fig. 8)."""

    subject_id: str | None = None
    subject_name: str = Field(min_length=1)
    appearance_timeline: list[Interval] = []
    attributes: list[str] = []
    actions_events: list[ExtractedAction] = []

    @field_validator("subject_id", mode="before")
    @classmethod
    def _id_as_text(cls, v: object) -> object:
        if isinstance(v, str):
            return v.strip() or None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return str(v)
        return v


class ExtractedInteraction(_Lenient):
    """One interaction between subjects (AVI Fig. 8 ``interactions``)."""

    subjects_involved: list[str]
    interaction_description: str = ""
    timestamp: Interval


class GraphExtraction(_Lenient):
    """The JSON object the LLM replies with for one chunk of captions."""

    subjects: list[ExtractedSubject] = []
    interactions: list[ExtractedInteraction] = []


def extraction_schema() -> dict:
    """JSON schema of the extraction reply, self-contained (no ``$ref``) and strict.

    Every property is required and no other is allowed, which both llama.cpp
    grammars and OpenAI-style ``strict`` structured output accept. Times are
    numbers of seconds.
    """
    raw = GraphExtraction.model_json_schema()
    return inline_refs(raw, drop=("title", "default"), close=True, require_all=True)


def _json_text(content: str) -> str:
    text = (content or "").strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1).strip()
    if not text.startswith("{") and "{" in text:
        text = text[text.index("{"):]
    if not text.endswith("}") and "}" in text:
        text = text[:text.rindex("}") + 1]
    return text


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "reply"


def _check_times(ext: GraphExtraction, t0: float, t1: float) -> list[str]:
    """Errors for reversed intervals or times outside [t0, t1] (beyond the tolerance); clamps the rest."""
    errors: list[str] = []

    def check(iv: list[float], where: str) -> None:
        s, e = iv
        if e < s:
            errors.append(f"{where}: start {s:g} is after end {e:g}")
        elif s < t0 - TIME_TOLERANCE_S or e > t1 + TIME_TOLERANCE_S:
            errors.append(f"{where}: [{s:g}, {e:g}] is outside the captions' time range {t0:g} to {t1:g} seconds")
        else:
            iv[0], iv[1] = min(max(s, t0), t1), min(max(e, t0), t1)

    for i, subj in enumerate(ext.subjects):
        for j, iv in enumerate(subj.appearance_timeline):
            check(iv, f"subjects[{i}].appearance_timeline[{j}]")
        for j, act in enumerate(subj.actions_events):
            check(act.timestamp, f"subjects[{i}].actions_events[{j}].timestamp")
    for i, inter in enumerate(ext.interactions):
        check(inter.timestamp, f"interactions[{i}].timestamp")
    return errors


def parse_extraction(content: str, t0: float, t1: float) -> tuple[GraphExtraction | None, str | None]:
    """Validate one extraction reply for captions spanning ``[t0, t1]`` seconds.

    The reply must be a JSON object (a code fence or text around it is tolerated)
    matching :class:`GraphExtraction`, with every interval ``[start, end]`` in
    order and inside ``[t0, t1]`` give or take :data:`TIME_TOLERANCE_S` (within
    the tolerance, times are clamped to the range).

    Returns:
        ``(extraction, None)`` when valid, else ``(None, error message)``.
    """
    text = _json_text(content)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the reply is not valid JSON ({exc.msg} at character {exc.pos})"
    try:
        ext = GraphExtraction.model_validate(obj)
    except ValidationError as exc:
        errs = exc.errors()
        parts = [f"{_loc(e['loc'])}: {e['msg']}" for e in errs[:5]]
        more = f" (and {len(errs) - 5} more)" if len(errs) > 5 else ""
        return None, "the JSON does not match the schema: " + "; ".join(parts) + more
    errors = _check_times(ext, t0, t1)
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        return None, "wrong times: " + "; ".join(errors[:5]) + more
    return ext, None
