"""Answer types over several videos (issue 21; AgentCVR §5: "which video", order across videos): one video's
name (``video``), the set of videos that show something (``videos``) and the videos in an order
(``video_order``). Other questions keep the single-video types of :func:`avi.agent.parse.answer_type`."""

from __future__ import annotations

import re

VIDEO_KINDS = ("video", "videos", "video_order")

_ORDER = re.compile(r"\b(?:order|rank|sort|arrange)\b[^.?!]{0,60}\bvideos\b|\bvideos\b[^.?!]{0,80}\b(?:in (?:the )?order"
                    r"|from (?:first|most|least|earliest|fewest|longest|shortest)|(?:first|earliest) to (?:last|latest))"
                    r"|\bin (?:what|which) order\b[^.?!]{0,80}\bvideos?\b", re.I)
_SET = re.compile(r"\b(?:which|what) (?:of the |of these )?videos\b|\bin which videos\b|\bwhich ones\b", re.I)
_ONE = re.compile(r"\b(?:which|what) (?:one )?(?:of the |of these )?video\b|\bin which video\b"
                  r"|\bwhich (?:one|clip|recording|file)\b", re.I)


def video_kind(question: str) -> str | None:
    """``"video_order"``, ``"videos"``, ``"video"`` or None (a question of another type)."""
    q = question or ""
    if _ORDER.search(q):
        return "video_order"
    if _SET.search(q):
        return "videos"
    if _ONE.search(q):
        return "video"
    return None


def _pattern(name: str) -> re.Pattern:
    """``name`` as a word of its own, optionally with a file ending (``vtest.avi``)."""
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?:\.[A-Za-z0-9]{2,4})?(?![\w-])", re.I)


def mentioned(text: str | None, names: list[str]) -> list[str]:
    """The video names ``text`` mentions, in the order of their first mention, each once; ``video 2`` counts as
    the second name when no name is written out."""
    if not text:
        return []
    found = []
    for n in names:
        m = _pattern(n).search(text)
        if m:
            found.append((m.start(), n))
    if not found:
        found = [(m.start(), names[int(m.group(1)) - 1]) for m in re.finditer(r"\bvideo\s*#?\s*(\d{1,3})\b", text, re.I)
                 if 1 <= int(m.group(1)) <= len(names)]
    out: list[str] = []
    for _, n in sorted(found):
        if n not in out:
            out.append(n)
    return out


def read_video_answer(kind: str, answer: str | None, names: list[str]) -> str | list[str] | None:
    """The answer of a ``kind`` question read from the model's text: one name (``video``), the names in the
    listed order (``videos``) or the names in the order written (``video_order``, at least two); None when the
    text does not name videos that way (reported as no answer, never guessed)."""
    found = mentioned(answer, names)
    if kind == "video":
        return found[0] if len(found) == 1 else None
    if kind == "videos":
        return [n for n in names if n in found] or None
    if kind == "video_order":
        return found if len(found) >= 2 else None
    raise ValueError(f"not a video answer type: {kind}")


def answer_schema(kind: str, names: list[str]) -> dict:
    """JSON schema of the structured final answer of a ``kind`` question (names as an enum)."""
    item = {"type": "string", "enum": list(names)}
    props = {"video": {"video": item},
             "videos": {"videos": {"type": "array", "items": item, "minItems": 1, "maxItems": len(names)}},
             "video_order": {"order": {"type": "array", "items": item, "minItems": 2, "maxItems": len(names)}}}[kind]
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def read_structured(kind: str, data: object, names: list[str]) -> str | list[str] | None:
    """The value of a structured final answer (:func:`answer_schema`), or None when it does not fit."""
    if not isinstance(data, dict):
        return None
    if kind == "video":
        v = data.get("video")
        return v if v in names else None
    value = data.get("videos" if kind == "videos" else "order")
    if not isinstance(value, list) or not value or any(v not in names for v in value):
        return None
    if kind == "videos":
        return [n for n in names if n in value]
    seen: list[str] = []
    for v in value:
        if v not in seen:
            seen.append(v)
    return seen if len(seen) >= 2 else None
