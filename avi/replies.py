"""Reading any model's reply, and the schemas that constrain one: ``<think>`` blocks split off, JSON objects
found in prose, a pydantic JSON schema with its ``$ref``s inlined. Used by the agent, the VLM backends, the index's
LLM stages and the tools (one implementation each)."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_THINK = re.compile(r"<think>(.*?)</think>", re.S | re.I)


def split_thought(text: str | None) -> tuple[str, str]:
    """Split ``<think>…</think>`` blocks off a reply.

    Returns:
        (thought, rest): the reasoning text and the reply without it. An unclosed ``<think>`` makes the whole
        remainder a thought; a closing ``</think>`` with no opening one (the template opened the block in the
        prompt) makes everything before it a thought.
    """
    text = text or ""
    thoughts = [m.strip() for m in _THINK.findall(text)]
    rest = _THINK.sub("", text)
    low = rest.lower()
    if "<think>" in low:
        i = low.index("<think>")
        thoughts.append(rest[i + 7:].strip())
        rest = rest[:i]
    if "</think>" in rest.lower():
        i = rest.lower().rindex("</think>")
        thoughts.insert(0, rest[:i].replace("</think>", "").strip())
        rest = rest[i + 8:]
    return "\n".join(t for t in thoughts if t), rest.strip()


def strip_think(text: str | None) -> str:
    """``text`` without its thinking (:func:`split_thought`), stripped."""
    return split_thought(text)[1]


_SECONDS_SUFFIX = re.compile(r"(\d)\s*s(?=\s*[,\]}])")


def iter_json_objects(text: str):
    """Yield ``(start, end, obj)`` for each top-level ``{…}`` that parses as an object.

    Braces inside JSON strings are respected. A doubled-brace object
    (``{{"name": …}}``, copied from a broken chat template) is unwrapped. Python
    literal dicts (single quotes, True/False) are accepted too, and so are times
    written with their unit outside quotes (``[[0.0s, 5.0s]]``, seen in 1.5B replies).
    """
    i = 0
    n = len(text)
    while i < n:
        if text[i] != "{":
            i += 1
            continue
        depth = 0
        in_str: str | None = None
        esc = False
        j = i
        end = None
        while j < n:
            ch = text[j]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == in_str:
                    in_str = None
            elif ch in "\"'":
                in_str = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = j + 1
                    break
            j += 1
        if end is None:
            return
        chunk = text[i:end]
        obj = loads_lenient(chunk)
        if obj is None and chunk.startswith("{{") and chunk.endswith("}}"):
            obj = loads_lenient(chunk[1:-1])
        if obj is None and _SECONDS_SUFFIX.search(chunk):  # [[0.0s, 5.0s]]: times written with their unit
            obj = loads_lenient(_SECONDS_SUFFIX.sub(r"\1", chunk))
        if isinstance(obj, dict):
            yield i, end, obj
            i = end
        else:
            i += 1


def loads_lenient(chunk: str) -> Any:
    """``chunk`` decoded as JSON, else as a Python literal (single quotes, True/False); None when neither."""
    try:
        return json.loads(chunk)
    except (json.JSONDecodeError, ValueError):
        pass
    try:
        return ast.literal_eval(chunk)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def first_json_object(text: str) -> dict:
    """The first JSON object in ``text`` after its thinking is removed (:func:`iter_json_objects`: code fences,
    prose around it, doubled braces and Python-literal dicts are tolerated).

    Raises:
        ValueError: ``text`` holds no object.
    """
    for _, _, obj in iter_json_objects(strip_think(text)):
        return obj
    raise ValueError("the reply contains no JSON object")


def inline_refs(schema: dict, *, drop: tuple[str, ...] = ("title",), close: bool = False,
                require_all: bool = False) -> dict:
    """A pydantic JSON schema made self-contained: every ``$ref`` replaced by its definition (the referring node's
    own keys, such as its description, kept over the definition's), ``$defs`` and the ``drop`` keys removed
    (property names are never dropped), and, for every object with properties, ``additionalProperties: false``
    (``close``) and every property required (``require_all``): the form llama.cpp grammars and OpenAI-style
    ``strict`` structured output accept."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = defs[node["$ref"].rsplit("/", 1)[-1]]
            return walk({**ref, **{k: v for k, v in node.items() if k != "$ref"}})
        out = {}
        for k, v in node.items():
            if k == "$defs" or k in drop:
                continue
            out[k] = {name: walk(sub) for name, sub in v.items()} if k == "properties" else walk(v)
        if out.get("type") == "object" and "properties" in out:
            if require_all:
                out["required"] = list(out["properties"])
            if close:
                out["additionalProperties"] = False
        return out

    return walk(schema)
