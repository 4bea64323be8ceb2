"""Video-level subject registry (avi/index/subjects.py) and the hierarchical summary (avi/index/summary.py)."""

from __future__ import annotations

import numpy as np

from avi.backends.llm import ChatResult
from avi.backends.types import Caption
from avi.config import Settings
from avi.index.subjects import merge_subjects
from avi.index.summary import build_summary, chunk_captions
from avi.prompts import PromptLibrary


def cap(i: int, registry: dict | None = None, text: str = "x") -> Caption:
    return Caption(i, i * 5.0, i * 5.0 + 5, text, "test", {"subject_registry": registry or {}})


class KeywordEmbedder:
    """Test double: one dimension per keyword, so similarity is decided by shared keywords."""

    name, dim = "keywords", 4
    WORDS = ("red", "blue", "dog", "hat")

    def embed(self, texts):
        v = np.array([[float(w in t.lower()) for w in self.WORDS] for t in texts], dtype=np.float32) + 1e-3
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_merge_by_name_and_spans():
    caps = [cap(0, {"a": {"name": "Man in red shirt", "appearance": ["red shirt"], "first_seen": 1.5}}),
            cap(1, {"b": {"name": "man in red shirt ", "appearance": ["red shirt", "glasses"], "identity": ["chef"]}}),
            cap(3, {"c": {"name": "Woman", "appearance": "blue coat", "first_seen": "16"}})]
    subjects = merge_subjects(caps)
    assert [s["name"] for s in subjects] == ["Man in red shirt", "Woman"]
    man, woman = subjects
    assert man["spans"] == [[0.0, 10.0]] and man["clips"] == [0, 1] and man["first_seen"] == 1.5
    assert man["appearance"] == ["red shirt", "glasses"] and man["identity"] == ["chef"]
    assert woman["spans"] == [[15.0, 20.0]] and woman["first_seen"] == 16.0 and woman["appearance"] == ["blue coat"]
    assert caps[1].data["subject_registry"]["b"]["global_id"] == man["id"] == "S1"


def test_a_subject_seen_at_nan_is_seen_at_its_clip():
    """A VLM's NaN first_seen would make subjects.json fail the index check (finite times) on every open."""
    import json

    from avi.index.stage_schemas import SUBJECTS

    subjects = merge_subjects([cap(2, {"a": {"name": "Dog", "first_seen": float("nan")}})])
    assert subjects[0]["first_seen"] == 10.0
    SUBJECTS.validate_json(json.dumps(subjects))


def test_merge_by_description_with_an_embedder():
    caps = [cap(0, {"p1": {"name": "person A", "appearance": ["red hat"]}}),
            cap(2, {"p9": {"name": "someone", "appearance": ["wears a red hat"]}}),
            cap(4, {"d": {"name": "animal", "appearance": ["brown dog"]}})]
    subjects = merge_subjects(caps, KeywordEmbedder())
    assert len(subjects) == 2 and subjects[0]["spans"] == [[0.0, 5.0], [10.0, 15.0]]
    assert caps[1].data["subject_registry"]["p9"]["global_id"] == "S1"
    assert merge_subjects([cap(0), cap(1)]) == []


class SummaryLLM:
    """Test double for the ChatClient: returns a summary naming the time span it was asked about."""

    model = "summary-double"

    def __init__(self, empty_first: bool = False):
        self.prompts: list[str] = []
        self.empty_first = empty_first

    def chat(self, messages, tools=None, **kw):
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if self.empty_first and len(self.prompts) == 1:
            return ChatResult(content="  ")
        if "summaries of consecutive parts" in prompt:
            return ChatResult(content="<think>overall</think>The whole video: a sign, then a room.")
        return ChatResult(content=f"Part summary {len(self.prompts)}.")


def test_summary_is_hierarchical():
    caps = [cap(i, text=f"clip {i} " + "word " * 40) for i in range(6)]
    groups = chunk_captions(caps, 600)
    assert [len(g) for g in groups] == [2, 2, 2]  # ~230 characters a line
    llm = SummaryLLM()
    out = build_summary(caps, llm, PromptLibrary(Settings().prompts_dir), chunk_chars=600)
    assert [(s["start_s"], s["end_s"]) for s in out["segments"]] == [(0.0, 10.0), (10.0, 20.0), (20.0, 30.0)]
    assert out["video"] == "The whole video: a sign, then a room." and out["failed"] == []
    assert "[0.0s–5.0s] clip 0" in llm.prompts[0] and "[20.0s–30.0s] Part summary 3." in llm.prompts[-1]
    assert out["llm"] == "summary-double" and len(llm.prompts) == 4


def test_summary_records_failures_and_handles_no_llm():
    caps = [cap(i, text=f"clip {i} " + "words " * 30) for i in range(2)]
    out = build_summary(caps, SummaryLLM(empty_first=True), PromptLibrary(Settings().prompts_dir), chunk_chars=100)
    assert len(out["segments"]) == 1 and out["failed"][0]["start_s"] == 0.0
    assert out["video"] == out["segments"][0]["summary"]
    none = build_summary(caps, None, PromptLibrary(Settings().prompts_dir))
    assert none["segments"] == [] and none["video"] is None


def test_summary_reads_a_run_of_repeated_captions_once():
    class Recorder:
        model = "recorder"

        def __init__(self):
            self.prompts = []

        def chat(self, messages, tools=None, **kw):
            self.prompts.append(messages[0]["content"])
            return ChatResult(content="A slide is shown.", finish_reason="stop", prompt_tokens=1,
                              completion_tokens=1, seconds=0.0)

    from pathlib import Path

    caps = [Caption(i, 5.0 * i, 5.0 * (i + 1), 'On-screen text: "KEEPERS".', "test") for i in range(12)]
    llm = Recorder()
    out = build_summary(caps, llm, PromptLibrary(Path(__file__).resolve().parent.parent / "prompts"))
    assert len(llm.prompts) == 1 and llm.prompts[0].count("KEEPERS") == 1
    assert "[0.0s–60.0s]" in llm.prompts[0] and out["video"] == "A slide is shown."
