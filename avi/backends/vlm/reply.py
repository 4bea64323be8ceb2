"""A VLM's clip caption: its schema and its validation (the reply's thinking and JSON object are found by
:mod:`avi.replies`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from avi.replies import inline_refs
from avi.video.timecode import parse_time


def _listify(v: Any) -> Any:
    if v is None:
        return []
    if isinstance(v, str):
        return [v] if v.strip() else []
    return v


def _seconds(v: Any) -> Any:
    if v is None or isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        return parse_time(v)  # ValueError -> validation error
    return v


class SubjectEntry(BaseModel):
    """One subject of the registry (AVI Fig. 7). ``first_seen`` is in seconds from the video start."""

    model_config = ConfigDict(extra="ignore", json_schema_serialization_defaults_required=True)

    name: str
    appearance: list[str] = Field(default_factory=list)
    identity: list[str] = Field(default_factory=list)
    first_seen: float | None = None

    @field_validator("appearance", "identity", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _listify(v)

    @field_validator("first_seen", mode="before")
    @classmethod
    def _time(cls, v: Any) -> Any:
        return _seconds(v)


class ClipCaptionReply(BaseModel):
    """The caption JSON a VLM must return for one clip; times in seconds."""

    model_config = ConfigDict(extra="ignore", json_schema_serialization_defaults_required=True)

    clip_start_time: float
    clip_end_time: float
    subject_registry: dict[str, SubjectEntry] = Field(default_factory=dict)
    clip_description: str

    @field_validator("clip_start_time", "clip_end_time", mode="before")
    @classmethod
    def _times(cls, v: Any) -> Any:
        return _seconds(v)

    @field_validator("subject_registry", mode="before")
    @classmethod
    def _registry(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, list):  # [{"id": ..., "name": ...}, ...] -> {id: {...}}
            return {str(s.get("id") or f"subject_{i + 1}") if isinstance(s, dict) else f"subject_{i + 1}": s
                    for i, s in enumerate(v)}
        return v

    @field_validator("clip_description")
    @classmethod
    def _description(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("clip_description is empty")
        return v


def caption_json_schema() -> dict:
    """JSON schema of :class:`ClipCaptionReply` for structured output (every field required)."""
    return inline_refs(ClipCaptionReply.model_json_schema(mode="serialization"),
                       drop=("title", "default", "description"), close=True)


def validation_message(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:6]:
        loc = ".".join(str(x) for x in e.get("loc", ())) or "reply"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)
