"""The parse: the orchestrator translates a question into a :class:`~avi.memory.query.MemoryQuery`, under the
query's JSON schema (llama.cpp's grammar from ``response_format``, vLLM's structured outputs: :meth:`ChatClient.chat`
with ``json_schema``), with a few examples retrieved by embedding similarity from a bank of question -> query pairs
(CodeVQA, Subramanian et al., ACL 2023, §3.2: in-context examples chosen by question similarity).

The bank (``prompts/memory_examples.jsonl``) is written from ``tune`` questions and invented ones, never from
``report``. Its questions are embedded once per bank, embedder and process. The schema constrains the parse (a
classification) and nothing else: the model writes no reasoning here (Tam et al. 2024, "Let Me Speak Freely?":
format constraints hurt reasoning, not classification). The time scope is grounded by the host afterwards
(:func:`ground_time`), never decoded.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from avi.memory.query import MemoryQuery, TimeScope, parse_model, parse_schema, to_query

EXAMPLES_FILE = "memory_examples.jsonl"
EXAMPLES_SHOWN = 6
MAX_TOKENS = 160

_BANK_CACHE: dict[str, tuple[list[dict], np.ndarray]] = {}


@dataclass
class Parse:
    """The outcome of one parse.

    Attributes:
        query: the query (its time grounded), or None when the reply did not validate (or, after
            :func:`avi.agent.memory_check.check_query`, when it cannot stand).
        decoded: the query as the model decoded it, before any check (None when the reply did not validate).
        checks: what checking it against the question changed, one line each.
        reply: the model's reply text.
        error: why there is no query (one line), else None.
        examples: the bank questions shown as examples, most similar last.
        seconds: model time.
        prompt_tokens, completion_tokens: the call's token counts.
    """

    query: MemoryQuery | None
    reply: str = ""
    error: str | None = None
    decoded: MemoryQuery | None = None
    checks: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict:
        return {"query": None if self.query is None else self.query.model_dump(mode="json"),
                "decoded": None if self.decoded is None else self.decoded.model_dump(mode="json"),
                "checks": self.checks, "reply": self.reply,
                "error": self.error, "examples": self.examples, "seconds": round(self.seconds, 3),
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


def load_bank(path: Path) -> list[dict]:
    """The example bank: one ``{"question": str, "query": {...fields...}}`` per line.

    Raises:
        ValueError: a line is not such an object (the line number is named).
    """
    out = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec.get("question"), str) or not isinstance(rec.get("query"), dict):
                raise ValueError("needs 'question' (text) and 'query' (object)")
        except (ValueError, AttributeError) as exc:
            raise ValueError(f"{path}:{i}: {exc}") from None
        out.append(rec)
    return out


def _bank(path: Path, embedder) -> tuple[list[dict], np.ndarray]:
    key = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] + "|" + str(getattr(embedder, "name", ""))
    if key not in _BANK_CACHE:
        bank = load_bank(path)
        vecs = np.asarray(embedder.embed([b["question"] for b in bank]), dtype=np.float32) if bank else \
            np.zeros((0, 1), np.float32)
        _BANK_CACHE[key] = (bank, vecs)
    return _BANK_CACHE[key]


def nearest_examples(question: str, bank: list[dict], vecs: np.ndarray, embedder, k: int = EXAMPLES_SHOWN,
                     exclude: str | None = None) -> list[dict]:
    """The ``k`` bank entries most similar to ``question`` (cosine of normalised embeddings), most similar last;
    ``exclude``: a question text left out (leave-one-out measurement)."""
    if not bank:
        return []
    q = np.asarray(embedder.embed([question]), dtype=np.float32)[0]
    sims = vecs @ q / (np.linalg.norm(vecs, axis=1) * (np.linalg.norm(q) or 1.0) + 1e-9)
    order = [i for i in np.argsort(-sims) if bank[i]["question"].strip() != (exclude or "").strip()][:k]
    return [bank[i] for i in reversed(order)]


def example_json(query: dict) -> str:
    """An example's query as the model should write it: the decoded fields only, unset ones left out, in the
    schema's order."""
    from avi.memory.query import ALWAYS_WRITTEN

    q = MemoryQuery.model_validate({"label": None, "pattern": None, "colour": None, **query, "time": {}})
    fields = q.model_dump(mode="json", exclude={"time"}, exclude_defaults=True)
    for name in ("pattern", "colour", *ALWAYS_WRITTEN):
        fields.setdefault(name, getattr(q, name))
    order = list(type(q).model_fields)
    return json.dumps(dict(sorted(fields.items(), key=lambda kv: order.index(kv[0]))), ensure_ascii=False)


def ground_time(q: Any, duration_s: float) -> TimeScope:
    """The time scope the question's words name (MoReVQA's grounding step, done by the host): its time ranges
    (:func:`avi.video.timecode.question_ranges`, in ``q.named_ranges``), their hull when several. A moment when the
    question writes one clock time and no word makes it a stretch ("at 0:44", "around 3:20", "at exactly 0:20",
    "(0:00)"; not "between", "from", "after", "before", "until", "first", "last"), or says "halfway" (the middle).

    Args:
        q: an :class:`avi.agent.question.ParsedQuestion`.
        duration_s: the video's length.
    """
    import re

    ranges = list(getattr(q, "named_ranges", ()) or ())
    if not ranges:
        return TimeScope()
    phrase = "; ".join(p for p, _ in ranges)
    a = min(s for _, (s, _e) in ranges)
    b = max(e for _, (_s, e) in ranges)
    stretch = re.search(r"\b(?:between|from|after|before|until|till|since|first|last|during|within)\b",
                        phrase, re.I)
    clock = [v for _, v in getattr(q, "clock_times", ()) or ()]
    if len(set(clock)) == 1 and not stretch and all(s - 1e-6 <= clock[0] <= e + 1e-6 for _, (s, e) in ranges):
        return TimeScope(start_s=float(clock[0]), end_s=float(clock[0]), phrase=phrase)
    if len(ranges) == 1 and re.search(r"\b(?:halfway|half-way|midway|middle of the video)\b", phrase, re.I):
        t = round(min(duration_s / 2, duration_s), 3)
        return TimeScope(start_s=t, end_s=t, phrase=phrase)
    if len(ranges) == 1 and not stretch and not clock and re.search(r"\d", phrase):
        m = re.match(r"^(?:at|around|about|exactly|near|by)\b", phrase, re.I)
        if m:  # "at 30 seconds", "around 40 s": the middle of the window the words name
            t = round((a + b) / 2, 3)
            return TimeScope(start_s=t, end_s=t, phrase=phrase)
    return TimeScope(start_s=round(a, 3), end_s=round(min(b, duration_s), 3), phrase=phrase)


class QueryParser:
    """Parses questions into queries with an orchestrator (one instance per process and detector).

    Args:
        prompts: the :class:`avi.prompts.PromptLibrary` (``memory_parse.md``; the bank beside it).
        embedder: the question embedder (:class:`avi.backends.embedder.Embedder`) the examples are chosen with.
        vocabulary: the detector's classes (None or empty: open vocabulary).
    """

    def __init__(self, prompts, embedder, vocabulary: list[str] | None):
        self.prompts, self.embedder = prompts, embedder
        self.vocabulary = list(vocabulary or [])
        self.model = parse_model(self.vocabulary)
        self.schema = parse_schema(self.vocabulary)

    def system(self) -> str:
        labels = ("one of the detector's classes" if not self.vocabulary else
                  "the detector knows: " + ", ".join(self.vocabulary))
        return self.prompts.render("memory_parse", labels=labels)

    def messages(self, question: str, exclude: str | None = None) -> tuple[list[dict], list[str]]:
        """The chat messages of one parse and the example questions they show."""
        bank, vecs = _bank(Path(self.prompts.directory) / EXAMPLES_FILE, self.embedder)
        shots = nearest_examples(question, bank, vecs, self.embedder, exclude=exclude)
        msgs = [{"role": "system", "content": self.system()}]
        for ex in shots:
            msgs += [{"role": "user", "content": ex["question"]},
                     {"role": "assistant", "content": example_json(ex["query"])}]
        msgs.append({"role": "user", "content": question})
        return msgs, [ex["question"] for ex in shots]

    def parse(self, llm, q: Any, duration_s: float, *, exclude: str | None = None,
              leave_one_out: bool = False) -> Parse:
        """Parse the question ``q`` (an :class:`avi.agent.question.ParsedQuestion`: its stem is sent, without the
        options) with ``llm`` (a :class:`avi.backends.llm.ChatClient`), then ground its time. ``exclude``: a bank
        question not shown as an example; ``leave_one_out``: the question sent is not shown (its own bank pair).

        Raises:
            LLMUnavailableError: the orchestrator cannot be reached.
        """
        question = getattr(q, "stem", "") or getattr(q, "text", "")
        msgs, shown = self.messages(question, question if leave_one_out else exclude)
        t0 = time.perf_counter()
        res = llm.chat(msgs, max_tokens=MAX_TOKENS, temperature=0.0, seed=0, json_schema=self.schema)
        out = Parse(None, res.content or "", examples=shown, seconds=time.perf_counter() - t0,
                    prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens)
        try:
            fields = self.model.model_validate_json(out.reply.strip() or "{}")
            out.query = out.decoded = to_query(fields, ground_time(q, duration_s))
        except (ValidationError, ValueError) as exc:
            out.error = f"the reply is not a valid query: {' '.join(str(exc).split())[:200]}"
        return out
