"""Reading a VLM reply: thinking stripped, the first JSON object, the clip-caption schema and its validation."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from avi.video.timecode import parse_time

_THINK = re.compile(r"<think>.*?</think>", re.S)


def strip_think(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (and anything before a dangling ``</think>``)."""
    text = _THINK.sub("", text or "")
    if "</think>" in text:
        text = text.split("</think>")[-1]
    return text.strip()


def first_json_object(text: str) -> dict:
    """The first JSON object in ``text`` (code fences and prose around it are tolerated).

    Raises:
        ValueError: no JSON object can be decoded from ``text``.
    """
    text = strip_think(text)
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise ValueError("the reply contains no JSON object")


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


def _inline_refs(schema: dict) -> dict:
    """Pydantic's JSON schema with ``$ref`` inlined, titles dropped, objects closed."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:  # node is a schema
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(defs[node["$ref"].split("/")[-1]])
        out = {}
        for k, v in node.items():
            if k in ("$defs", "title", "default", "description"):
                continue
            out[k] = {name: walk(sub) for name, sub in v.items()} if k == "properties" else walk(v)
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
        return out

    return walk(schema)


def caption_json_schema() -> dict:
    """JSON schema of :class:`ClipCaptionReply` for structured output (every field required)."""
    return _inline_refs(ClipCaptionReply.model_json_schema(mode="serialization"))


def validation_message(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:6]:
        loc = ".".join(str(x) for x in e.get("loc", ())) or "reply"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)
