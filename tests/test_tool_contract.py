"""The tool contract (avi/tools/base.py, avi/tools/__init__.py): schemas, coercion, errors as observations.

No model is loaded: the tools run against small recording test doubles.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Annotated

import numpy as np
import pytest
from pydantic import BaseModel, Field

from avi.backends.types import Detection, DetectionResult, OcrLine
from avi.tools import ALL_TOOLS, PHASE_TOOLS, PHASES, TIMELINE_TOOLS, tools_for
from avi.tools.base import Observation, QuestionScope, Tool, ToolContext, clip_ranges, sample_times, tool
from avi.tools.perceive import frame_analysis, object_detect, text_extract
from avi.tools.retrieve import clip_retrieve

REAL_TOOLS = list(ALL_TOOLS.values())

# ----------------------------------------------------------------- test doubles


@dataclass
class FakeFrame:
    """Test double of avi.video.decode.Frame."""

    t_s: float
    image: np.ndarray = field(default_factory=lambda: np.zeros((4, 4, 3), np.uint8))


class FakeVideo:
    """Test double of VideoReader: records every frames_at request."""

    def __init__(self, duration_s: float):
        self.info = SimpleNamespace(duration_s=duration_s)
        self.requests: list[list[float]] = []

    def frames_at(self, times):
        self.requests.append(list(times))
        return [FakeFrame(t) for t in times]


class FakeOcr:
    """Test double of the OCR backend: fixed lines per frame time, records the frames it read."""

    name = "fake-ocr"

    def __init__(self, lines_at=None):
        self.lines_at = lines_at or {}
        self.read_times: list[float] = []

    def read(self, frame):
        self.read_times.append(frame.t_s)
        return [OcrLine(text, 0.9, (1.0, 2.0, 3.0, 4.0), frame.t_s) for text in self.lines_at.get(frame.t_s, [])]


class FakeDetector:
    """Test double of the detector: one 'person' per frame; records the labels asked for."""

    name = "fake-detector"
    vocabulary = "people and faces"
    class_list = detect_all = detect_batch = None

    def __init__(self):
        self.calls: list[tuple[float, list[str]]] = []

    def supports(self, label):
        return label in ("person", "face")

    def detect(self, frame, labels):
        self.calls.append((frame.t_s, list(labels)))
        dets = [Detection("person", 0.8, (0.0, 0.0, 1.0, 1.0), frame.t_s, (4, 4))] if "person" in labels else []
        return DetectionResult(frame.t_s, dets, [lb for lb in labels if lb not in ("person", "face")])


class FakeAnalyzer:
    """Test double of the frame analyser: records frames and question."""

    name = "fake-analyzer"

    def __init__(self):
        self.calls: list[tuple[list[float], str]] = []

    def analyze(self, frames, question):
        self.calls.append(([f.t_s for f in frames], question))
        return SimpleNamespace(text="a dog is visible", data={"answer": "dog"})


class FakeIndex:
    """Test double of VideoIndex: records searches, finds nothing."""

    manifest: dict = {}

    def __init__(self):
        self.searches: list[tuple[str, int]] = []

    def search(self, query, embedder, top_k):
        self.searches.append((query, top_k))
        return []


def make_ctx(duration_s: float = 60.0, ocr=None) -> ToolContext:
    settings = SimpleNamespace(fps=2.0, perceive_max_frames=16, frame_analysis_max_frames=64)
    backends = SimpleNamespace(ocr=ocr or FakeOcr(), detector=FakeDetector(), frame_analyzer=FakeAnalyzer(),
                               embedder=object())
    return ToolContext(settings=settings, index=FakeIndex(), video=FakeVideo(duration_s), backends=backends)


# ----------------------------------------------------------------- schemas


def _walk_keys(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _walk_keys(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk_keys(v)


@pytest.mark.parametrize("t", REAL_TOOLS, ids=lambda t: t.name)
def test_openai_schema_shape(t):
    schema = t.openai_schema()
    json.dumps(schema)  # serialisable
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["strict"] is True
    assert fn["name"] == t.name == t.fn.__name__
    first_paragraph = inspect.cleandoc(t.fn.__doc__).split("\n\n")[0].replace("\n", " ").strip()
    assert fn["description"] == first_paragraph
    assert "Args:" not in fn["description"]
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert "ctx" not in params["properties"]
    keys = set(_walk_keys(params))
    assert not keys & {"$defs", "$ref", "title"}
    for name, prop in params["properties"].items():
        assert prop.get("description"), name


def test_schema_properties_and_required():
    props = {t.name: t.parameters_schema() for t in REAL_TOOLS}
    assert list(props["clip_retrieve"]["properties"]) == ["query", "top_k"]
    assert props["clip_retrieve"]["required"] == ["query"]
    assert props["clip_retrieve"]["properties"]["top_k"]["default"] == 16
    assert props["text_extract"]["required"] == ["time_ranges"]
    assert props["object_detect"]["required"] == ["time_ranges", "objects"]
    assert props["frame_analysis"]["required"] == ["time_ranges", "question"]
    tr = props["text_extract"]["properties"]["time_ranges"]
    assert tr["type"] == "array" and tr["items"]["type"] == "array"
    assert tr["items"]["minItems"] == tr["items"]["maxItems"] == 2
    assert tr["description"].startswith("where to read")


def test_signature_lines():
    assert clip_retrieve.signature_line() == "clip_retrieve(query: string, top_k: integer = 16)"
    assert text_extract.signature_line() == "text_extract(time_ranges: array of arrays)"
    assert object_detect.signature_line() == "object_detect(time_ranges: array of arrays, objects: array of strings)"
    assert frame_analysis.signature_line() == "frame_analysis(time_ranges: array of arrays, question: string)"


def test_tool_phases():
    assert clip_retrieve.phase == "retrieve"
    assert {t.phase for t in (text_extract, object_detect, frame_analysis)} == {"perceive"}


def test_first_param_must_be_ctx():
    def no_ctx(query: str) -> Observation:
        """Search.

        Args:
            query: what.
        """

    with pytest.raises(TypeError, match="first parameter must be ctx"):
        Tool(no_ctx, "retrieve")

    def nothing() -> Observation:
        """Nothing."""

    with pytest.raises(TypeError):
        Tool(nothing, "retrieve")


def test_undocumented_parameter_raises():
    def half_documented(ctx: ToolContext, query: str, limit: int = 3) -> Observation:
        """Search.

        Args:
            query: what to look for.
        """

    with pytest.raises(TypeError, match="limit"):
        tool("retrieve")(half_documented)


class Box(BaseModel):
    x: float
    y: float


def place(ctx: ToolContext, box: Box, label: Annotated[str, Field(max_length=10)] = "a") -> Observation:
    """Place a box
    somewhere.

    Args:
        box: where the box goes,
            in pixels.
        label (str): its label.

    Returns:
        nothing useful.
    """
    return Observation(f"{box['x']},{box['y']},{label}")  # Tool.run passes model_dump() values


def test_custom_tool_nested_model_refs_inlined_and_multiline_doc():
    t = Tool(place, "perceive")
    assert t.description == "Place a box somewhere."
    params = t.openai_schema()["function"]["parameters"]
    assert not set(_walk_keys(params)) & {"$defs", "$ref", "title"}
    assert params["properties"]["box"]["properties"] == {"x": {"type": "number"}, "y": {"type": "number"}}
    assert params["properties"]["label"]["description"] == "its label."
    assert params["properties"]["label"]["maxLength"] == 10
    assert params["required"] == ["box"]
    obs = t.run(make_ctx(), {"box": {"x": 1, "y": 2}})
    assert not obs.error and obs.text == "1.0,2.0,a"


def test_nested_model_parameter_keeps_its_description():
    params = Tool(place, "perceive").parameters_schema()
    assert params["properties"]["box"].get("description") == "where the box goes, in pixels."


# ----------------------------------------------------------------- phases


def test_phase_tools():
    assert PHASES == ("retrieve", "perceive", "review")
    # the eight AVI tools (§3.3), the two transcript tools and the perception memory's memory_query (issue 53)
    assert [t.name for t in PHASE_TOOLS["retrieve"]] == ["clip_retrieve", "global_explore", "graph_retrieve",
                                                         "clip_merge", "transcript_search"]
    assert {t.name for t in PHASE_TOOLS["perceive"]} == {"text_extract", "object_detect", "boundary_detect",
                                                         "frame_analysis", "transcript_read", "memory_query"}
    assert PHASE_TOOLS["review"] == []
    assert tools_for("perceive") is PHASE_TOOLS["perceive"]
    for phase, tools in PHASE_TOOLS.items():
        assert all(t.phase == phase for t in tools)


def test_all_tools_names_unique():
    names = [t.name for tools in PHASE_TOOLS.values() for t in tools] + [t.name for t in TIMELINE_TOOLS]
    assert len(names) == len(set(names))
    assert set(ALL_TOOLS) == set(names)
    assert all(ALL_TOOLS[n].name == n for n in ALL_TOOLS)


# ----------------------------------------------------------------- argument coercion via Tool.run


@pytest.mark.parametrize("time_ranges, expected_times", [
    ("0:40", [40.0]),
    (["0:40"], [40.0]),
    ([["0:40", "0:41"]], [40.0, 40.5, 41.0]),
    ("0:40-0:41", [40.0, 40.5, 41.0]),
    ([38, 39], [38.0, 38.5, 39.0]),
    ({"start": "0:38", "end": 39}, [38.0, 38.5, 39.0]),
    ([{"start_s": 10, "end_s": 10.5}], [10.0, 10.5]),
    ([[40]], [40.0]),
    ([[40, 40]], [40.0]),
    ([["12.5s", "13s"]], [12.5, 13.0]),
])
def test_time_ranges_normalised(time_ranges, expected_times):
    ctx = make_ctx()
    obs = text_extract.run(ctx, {"time_ranges": time_ranges})
    assert not obs.error, obs.text
    assert ctx.video.requests == [expected_times]
    assert ctx.backends.ocr.read_times == expected_times
    assert obs.frames_s == expected_times


def test_string_list_of_objects_coerced_and_lowercased():
    ctx = make_ctx()
    obs = object_detect.run(ctx, {"time_ranges": [[5, 5]], "objects": "Person, person; car"})
    assert not obs.error, obs.text
    # de-duplicated, lower-cased; the unsupported label never reaches the detector but is reported
    assert ctx.backends.detector.calls == [(5.0, ["person"])]
    assert "person: 1 found at 5.0s" in obs.text
    assert obs.data["unsupported"] == ["car"] and "no class for car (this profile detects people and faces)" in obs.text
    assert "where at 5.0s: left, top, medium (score 0.80, black)" in obs.text  # a 1x1 px box in a 4x4 px frame


def test_only_unsupported_objects_decode_nothing():
    ctx = make_ctx()
    obs = object_detect.run(ctx, {"time_ranges": [[5, 6]], "objects": ["car", "dog"]})
    assert obs.error and "no class for car, dog" in obs.text and "people and faces" in obs.text
    assert ctx.video.requests == [] and ctx.backends.detector.calls == []


class ScriptedDetector(FakeDetector):
    """Test double: a class name per frame time with a score; the COCO class differs from the asked word."""

    def __init__(self, script):
        super().__init__()
        self.script = script  # {t_s: [(score, box)]}

    def supports(self, label):
        return label == "bike"

    def detect(self, frame, labels):
        self.calls.append((frame.t_s, list(labels)))
        dets = [Detection("bike", sc, box, frame.t_s, (640, 480), cls="bicycle")
                for sc, box in self.script.get(frame.t_s, [])]
        return DetectionResult(frame.t_s, dets, [])


def test_object_detect_keeps_agreed_boxes_and_says_where():
    ctx = make_ctx()
    left = (0.0, 300.0, 100.0, 480.0)
    ctx.backends.detector = ScriptedDetector({
        1.0: [(0.35, left)], 1.5: [(0.4, left)],  # two neighbouring frames agree: kept though weak
        5.0: [(0.3, (500.0, 0.0, 640.0, 100.0))],  # alone and weak: ignored
        7.0: [(0.9, (270.0, 190.0, 370.0, 290.0))],  # alone but confident: kept
    })
    obs = object_detect.run(ctx, {"time_ranges": [[0, 8]], "objects": ["bike"]})
    per_frame = dict((t, n) for t, n in obs.data["summary"]["bike"]["per_frame"])
    assert per_frame[1.0] == 1 and per_frame[1.5] == 1 and per_frame[5.0] == 0 and per_frame[7.0] == 1
    assert "bike (class bicycle)" in obs.text
    assert "where at 1.0s: left, bottom, medium (score 0.35)" in obs.text
    assert "present in 3 of 16 frames" in obs.text
    assert obs.evidence == [[1.0, 7.0]]


def test_object_detect_lists_the_index_tracks_of_the_class_in_the_range():
    """Issue 36: the index's tracks say how many different people and from when to when (the frames alone
    count boxes per frame); only the asked-for class, only tracks overlapping the looked-at range."""
    ctx = make_ctx()
    ctx.settings.detect_tracks = True  # off by default (measured no gain on the report split)
    ctx.index.tracks = [
        {"id": "T1", "label": "person", "first_s": 2.0, "last_s": 6.0, "frames": 9, "entry": "left",
         "exit": "right", "boxes": [[2.0, 0, 100, 40, 200], [6.0, 200, 100, 240, 200]]},
        {"id": "T2", "label": "person", "first_s": 40.0, "last_s": 45.0, "frames": 11, "entry": "left",
         "exit": "right", "boxes": [[40.0, 0, 100, 40, 200], [45.0, 200, 100, 240, 200]]},
        {"id": "T3", "label": "car", "first_s": 1.0, "last_s": 8.0, "frames": 15, "entry": "left",
         "exit": "right", "boxes": [[1.0, 0, 100, 40, 200], [8.0, 200, 100, 240, 200]]}]
    obs = object_detect.run(ctx, {"time_ranges": [[0, 8]], "objects": ["person"]})
    assert "person tracks over all sampled frames" in obs.text and "1 in these ranges" in obs.text
    assert "T1 2.0s–6.0s: in from the left, out at the right, moving right" in obs.text
    assert "T2" not in obs.text and "T3" not in obs.text
    assert [r["id"] for r in obs.data["summary"]["person"]["tracks"]] == ["T1"]
    assert obs.evidence == [[0.0, 8.0]]  # the tracks are told, not taken as evidence
    ctx.settings.detect_tracks = False
    assert "tracks" not in object_detect.run(ctx, {"time_ranges": [[0, 8]], "objects": ["person"]}).text


def test_frame_analysis_gets_question_and_frames():
    ctx = make_ctx()
    obs = frame_analysis.run(ctx, {"time_ranges": [[1, 2]], "question": "what animal?"})
    assert not obs.error
    assert ctx.backends.frame_analyzer.calls == [([1.0, 1.5, 2.0], "what animal?")]
    assert obs.evidence == [[1.0, 2.0]]
    assert "a dog is visible" in obs.text


def test_clip_retrieve_top_k_coerced_from_string():
    ctx = make_ctx()
    obs = clip_retrieve.run(ctx, {"query": " red car ", "top_k": "8"})
    assert not obs.error, obs.text
    assert ctx.index.searches == [("red car", 8)]


def test_clip_retrieve_default_top_k():
    ctx = make_ctx()
    clip_retrieve.run(ctx, {"query": "dog"})
    assert ctx.index.searches == [("dog", 16)]


def test_max_frames_per_tool():
    ctx = make_ctx()
    text_extract.run(ctx, {"time_ranges": [[0, 60]]})
    frame_analysis.run(ctx, {"time_ranges": [[0, 60]], "question": "q"})
    te, fa = ctx.video.requests
    assert len(te) == 16 and len(fa) == 64
    assert te[0] == fa[0] == 0.0 and te[-1] == fa[-1] == 60.0


def _assert_invalid(obs: Observation, t: Tool, *fragments: str):
    assert isinstance(obs, Observation)
    assert obs.error is True
    assert obs.text.startswith(f"Error: invalid arguments for {t.name}")
    assert f"Expected {t.signature_line()}." in obs.text
    for frag in fragments:
        assert frag in obs.text


def test_missing_required_argument():
    ctx = make_ctx()
    obs = object_detect.run(ctx, {"time_ranges": [[1, 2]]})
    _assert_invalid(obs, object_detect, "objects", "required")
    assert ctx.video.requests == []  # the tool did not run


def test_none_arguments_are_missing_arguments():
    obs = text_extract.run(make_ctx(), None)
    _assert_invalid(obs, text_extract, "time_ranges")


def test_unknown_extra_key_is_ignored_with_a_note():
    ctx = make_ctx()
    obs = text_extract.run(ctx, {"time_ranges": [[1, 1]], "language": "en"})
    assert not obs.error, obs.text
    assert ctx.video.requests == [[1.0]]
    assert obs.notes[-1] == "ignored argument(s) that text_extract does not take: language"
    assert "text_extract does not take: language" in obs.text  # the model is told


def test_unknown_key_without_the_required_ones_is_an_error():
    obs = text_extract.run(make_ctx(), {"language": "en"})
    _assert_invalid(obs, text_extract, "time_ranges")
    assert obs.data["arguments"]["language"] == "en"


@pytest.mark.parametrize("t, args, fragment", [
    (clip_retrieve, {"query": "x", "top_k": "many"}, "top_k"),
    (clip_retrieve, {"query": "x", "top_k": 0}, "top_k"),
    (clip_retrieve, {"query": ["x"]}, "query"),
    (text_extract, {"time_ranges": "banana"}, "time_ranges"),
    (text_extract, {"time_ranges": [1, 2, 3]}, "time_ranges"),
    (text_extract, {"time_ranges": []}, "time_ranges"),
    (object_detect, {"time_ranges": [[1, 2]], "objects": []}, "objects"),
])
def test_wrong_types_are_error_observations(t, args, fragment):
    obs = t.run(make_ctx(), args)
    _assert_invalid(obs, t, fragment)


def test_schema_keywords_dropped_with_note():
    ctx = make_ctx()
    obs = text_extract.run(ctx, {"time_ranges": [[1, 1]], "additionalProperties": False, "type": "object"})
    assert not obs.error, obs.text
    assert ctx.video.requests == [[1.0]]
    assert obs.notes[-1] == "ignored schema keywords in the arguments: additionalProperties, type"


def test_tool_value_error_becomes_observation():
    obs = clip_retrieve.run(make_ctx(), {"query": "   "})
    assert obs.error is True
    assert obs.text.startswith("Error in clip_retrieve: query is empty")


def test_tool_crash_becomes_observation():
    class CrashingOcr(FakeOcr):
        """Test double that fails like a broken backend."""

        def read(self, frame):
            raise RuntimeError("onnx exploded")

    obs = text_extract.run(make_ctx(ocr=CrashingOcr()), {"time_ranges": [[1, 1]]})
    assert obs.error is True
    assert "RuntimeError: onnx exploded" in obs.text
    assert "traceback" in obs.data
    assert "seconds" in obs.data


def test_range_outside_video_is_error_observation():
    ctx = make_ctx(duration_s=30.0)
    obs = text_extract.run(ctx, {"time_ranges": [[40, 50]]})
    assert obs.error is True
    assert "no time range overlaps the video" in obs.text
    assert ctx.video.requests == []


def test_clipped_range_note_reaches_the_model():
    ctx = make_ctx(duration_s=30.0)
    obs = text_extract.run(ctx, {"time_ranges": [[29, 45]]})
    assert not obs.error
    assert ctx.video.requests == [[29.0, 29.5, 30.0]]
    assert len(obs.notes) == 1 and "clipped" in obs.notes[0]
    assert "\nNote: " in obs.text


def test_text_extract_merges_repeated_text_over_neighbouring_frames():
    ocr = FakeOcr({1.0: ["EXIT"], 1.5: ["exit."], 2.0: ["EXIT", "Gate 4"]})
    obs = text_extract.run(make_ctx(ocr=ocr), {"time_ranges": [[1, 2]]})
    assert [(r["text"], r["first_s"], r["last_s"], r["frames"]) for r in obs.data["texts"]] == [
        ("EXIT", 1.0, 2.0, 3), ("Gate 4", 2.0, 2.0, 1)]
    assert obs.evidence == [[1.0, 2.0], [2.0, 2.0]]


def test_text_extract_honours_the_questions_text_frame_cap():
    ocr = FakeOcr()
    base = make_ctx(ocr=ocr)
    ctx = base.for_question(QuestionScope(text_frames=3))  # the agent's, when the question asks about no text
    obs = text_extract.run(ctx, {"time_ranges": [[0, 30]]})
    assert len(ocr.read_times) == 3 == len(obs.frames_s) and obs.frames_s[0] < 5 and obs.frames_s[-1] > 25
    ocr.read_times = []  # a cap above perceive_max_frames does not raise it
    text_extract.run(base.for_question(QuestionScope(text_frames=64)), {"time_ranges": [[0, 30]]})
    assert len(ocr.read_times) == 16


class ScriptOcr(FakeOcr):
    """FakeOcr that also records the script each frame was read in (issue 36, item 6)."""

    def __init__(self, lines_at=None):
        super().__init__(lines_at)
        self.scripts: list[str | None] = []

    def read(self, frame, script=None):
        self.scripts.append(script)
        return super().read(frame)


def test_perceive_tools_read_text_in_the_questions_script():
    """text_extract and the cpu frame_analysis read text in the script the agent set from the question; without
    one, the engine is called as before (no script argument)."""
    from avi.backends.frame_analyzer import PerceptionFrameAnalyzer

    ocr = ScriptOcr({1.0: ["EXIT"]})
    base = make_ctx(ocr=ocr)
    base.backends.frame_analyzer = PerceptionFrameAnalyzer(ocr, base.backends.detector)
    ctx = base.for_question(QuestionScope(text_script="latin"))
    assert "(fake-ocr, latin script)" in text_extract.run(ctx, {"time_ranges": [[1, 2]]}).text
    obs = frame_analysis.run(ctx, {"time_ranges": [[1, 1]], "question": "what is written?"})
    assert '"EXIT"' in obs.text or "EXIT" in obs.text
    assert ocr.scripts and set(ocr.scripts) == {"latin"}
    ocr.scripts = []
    text_extract.run(base, {"time_ranges": [[1, 2]]})
    frame_analysis.run(base, {"time_ranges": [[1, 1]], "question": "what is written?"})
    assert ocr.scripts and set(ocr.scripts) == {None}


# ----------------------------------------------------------------- clip_ranges


def test_clip_ranges_inside_unchanged():
    assert clip_ranges(make_ctx(60), [[1.0, 2.0], [10.0, 20.0]]) == ([[1.0, 2.0], [10.0, 20.0]], [])


def test_clip_ranges_clips_to_bounds_with_notes():
    ranges, notes = clip_ranges(make_ctx(60), [[-5.0, 10.0], [50.0, 70.0]])
    assert ranges == [[0.0, 10.0], [50.0, 60.0]]
    assert len(notes) == 2
    assert all("clipped" in n and "60.0s long" in n for n in notes)


def test_clip_ranges_swaps_reversed():
    ranges, notes = clip_ranges(make_ctx(60), [[20.0, 10.0]])
    assert ranges == [[10.0, 20.0]]
    assert notes == ["range [20, 10] had start after end; swapped"]


def test_clip_ranges_skips_outside_keeps_rest():
    ranges, notes = clip_ranges(make_ctx(60), [[70.0, 80.0], [5.0, 6.0], [-3.0, -1.0]])
    assert ranges == [[5.0, 6.0]]
    assert len(notes) == 2 and all("outside the video" in n for n in notes)


def test_clip_ranges_nothing_overlaps_raises():
    with pytest.raises(ValueError, match="no time range overlaps"):
        clip_ranges(make_ctx(60), [[61.0, 62.0], [-2.0, -1.0]])


def test_clip_ranges_touching_end_is_kept():
    assert clip_ranges(make_ctx(60), [[60.0, 65.0]])[0] == [[60.0, 60.0]]


# ----------------------------------------------------------------- sample_times


def test_sample_times_zero_length_range():
    assert sample_times([[7.0, 7.0]], 2.0, 16) == [7.0]


def test_sample_times_short_range_gives_midpoint():
    assert sample_times([[10.0, 10.2]], 2.0, 16) == [10.1]


def test_sample_times_fps_spacing():
    assert sample_times([[0.0, 2.0]], 2.0, 16) == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert sample_times([[0.0, 2.0]], 1.0, 16) == [0.0, 1.0, 2.0]


def test_sample_times_sorted_and_deduplicated_across_ranges():
    assert sample_times([[3.0, 4.0], [0.0, 1.0], [0.5, 1.5]], 2.0, 16) == [0.0, 0.5, 1.0, 1.5, 3.0, 3.5, 4.0]


def test_sample_times_thinned_keeps_first_and_last():
    times = sample_times([[0.0, 100.0]], 2.0, 16)
    assert len(times) == 16
    assert times[0] == 0.0 and times[-1] == 100.0
    assert times == sorted(times)
    gaps = np.diff(times)
    assert gaps.max() - gaps.min() <= 0.5 + 1e-9  # uniform thinning, up to one sample step


def test_sample_times_not_thinned_at_cap():
    assert len(sample_times([[0.0, 7.5]], 2.0, 16)) == 16


def test_frame_budget_caps_calls_and_counts_every_frame():
    ctx = make_ctx()
    ctx.settings.frame_budget = 20
    obs = text_extract.run(ctx, {"time_ranges": [[0, 60]]})
    assert len(obs.frames_s) == 16 and ctx.frames_spent == 16 and ctx.frames_left == 4
    assert obs.data["frames"] == 16
    obs = frame_analysis.run(ctx, {"time_ranges": [[0, 60]], "question": "q"})
    assert len(obs.frames_s) == 4 and ctx.frames_left == 0  # capped to what is left, spread over the range
    assert obs.frames_s[0] == 0.0 and obs.frames_s[-1] == 60.0
    obs = object_detect.run(ctx, {"time_ranges": [[0, 5]], "objects": ["person"]})
    assert obs.error and "frame budget of 20 frames" in obs.text and "answer" in obs.text
    assert ctx.frames_spent == 20
    # retrieve calls look at no frames and are never refused
    assert not clip_retrieve.run(ctx, {"query": "dog"}).error


def test_no_frame_budget_means_no_cap():
    ctx = make_ctx()
    ctx.settings.frame_budget = 0
    for _ in range(3):
        assert len(frame_analysis.run(ctx, {"time_ranges": [[0, 60]], "question": "q"}).frames_s) == 64
    assert ctx.frames_left is None and ctx.frames_spent == 192


def test_text_extract_merges_misreads_of_one_text_and_drops_stray_glyphs():
    reads = {0.0: ["MPRODON"], 0.5: ["CAMPRODON", "a"], 1.0: ["CAAERRODON", "mmmm"], 1.5: ["CAMPRODON", "7"],
             9.0: ["CAMPRODON"]}

    class Ocr(FakeOcr):
        def read(self, frame, regions=None):
            return [OcrLine(t, 0.95 if t in ("MPRODON", "7") else 0.8, (1.0, 2.0, 3.0, 4.0), frame.t_s)
                    for t in reads.get(frame.t_s, [])]

    ctx = make_ctx(ocr=Ocr())
    obs = text_extract.run(ctx, {"time_ranges": [[0, 1.5], [9, 9]]})
    texts = [(t["text"], t["first_s"], t["last_s"]) for t in obs.data["texts"]]
    # one text read three ways in neighbouring frames; its medoid names it; shown again at 9 s: a separate run
    assert ("CAMPRODON", 0.0, 1.5) in texts and ("CAMPRODON", 9.0, 9.0) in texts
    # the model reads one line per text, with every span it was read in (issue 17: fewer prompt tokens)
    assert '"CAMPRODON" at 0.0s–1.5s, 9.0s (score 0.80; 5 reads, also read as "MPRODON", "CAAERRODON")' in obs.text
    assert obs.text.count('"CAMPRODON"') == 1
    assert "mmmm" in obs.text and '"7"' in obs.text and '"a"' not in obs.text  # a weak single glyph is dropped


def test_frames_thinned_by_the_cap_are_still_neighbours():
    """syn-lecture-13: 16 frames over 25 s are ~1.5 s apart; text on screen all that time is one run, not one
    entry per frame (the observation listed every line 16 times and the interval answer was one frame wide)."""

    class EveryFrameOcr(FakeOcr):
        def read(self, frame):
            self.read_times.append(frame.t_s)
            return [OcrLine("Fig. 2: a first-order lens weighs about 5 tonnes", 0.9, (1.0, 2.0, 3.0, 4.0), frame.t_s)]

    ctx = make_ctx(ocr=EveryFrameOcr())
    obs = text_extract.run(ctx, {"time_ranges": [[10, 35]]})
    assert len(ctx.video.requests[0]) == 16
    assert len(obs.data["texts"]) == 1 and obs.evidence == [[10.0, 35.0]]
    assert obs.text.count("first-order lens") == 1
    from avi.tools.perceive import neighbour_gap

    assert neighbour_gap([0.0, 0.5, 1.0], 2.0) == pytest.approx(0.75, abs=1e-3)
    assert neighbour_gap([0.0, 4.0, 8.0], 2.0) == pytest.approx(6.0, abs=1e-3)
    assert neighbour_gap([3.0], 2.0) == pytest.approx(0.75, abs=1e-3)


def test_count_runs_keeps_every_frame_count():
    """object_detect's per-frame counts are written as runs of neighbouring frames with one count; a gap (another
    range) or a change of count starts a new run, and the series can be read back frame by frame."""
    from avi.tools.perceive import count_runs

    times = [35.0, 35.5, 36.0, 36.5, 37.0, 60.0, 60.5]
    counts = [2, 2, 2, 3, 2, 2, 2]
    text = count_runs(times, counts, gap_s=0.75)
    assert text == ("2 at 35.0s–36.0s (3 frames), 3 at 36.5s, 2 at 37.0s, 2 at 60.0s–60.5s (2 frames)")
    assert count_runs([1.0], [0], 0.75) == "0 at 1.0s"
