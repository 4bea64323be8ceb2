"""The shapes and types of an index's JSON stage files, as pydantic models (issue 55).

:mod:`avi.index.stage_files` validates every record of ``manifest.json``, ``captions.jsonl``, ``transcript.jsonl``,
``transcript_info.json``, ``subjects.json``, ``tracks.json``, ``graph.json`` and ``summary.json`` against these
models before an index is opened or a stage file is copied, so a file that parses but holds the wrong shape
(``[1, 2]`` for a manifest, a list for the summary, a caption whose ``start_s`` is text, a NaN time) is found there
and its stage rebuilt, instead of failing deep inside a tool.

The models are strict (JSON numbers for numbers, strings for strings; ``true`` is no number), finite (no NaN or
Infinity) and open: keys avi does not read are allowed, so an index written by a newer avi of the same schema still
passes. Only the keys avi's code reads are typed; times are seconds, never negative.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

Seconds = Annotated[float, Field(ge=0)]
"""A time in seconds from the start of the video."""
Span = Annotated[list[float], Field(min_length=2, max_length=2)]
"""``[start_s, end_s]`` (finite; not bounded: graph and subject spans may come from a model's reading)."""


def validation_cause(exc: ValidationError) -> str:
    """The first problem of a pydantic validation error, as ``where: what`` on one line."""
    err = exc.errors()[0]
    if err.get("type") == "json_invalid":
        return f"not valid JSON ({err.get('msg', '').removeprefix('Invalid JSON: ')})"
    where = ".".join(str(p) for p in err.get("loc", ())) or "the record"
    more = len(exc.errors()) - 1
    return f"{where}: {err.get('msg', 'invalid')}" + (f" (and {more} more problem{'s' * (more > 1)})" if more else "")


class Record(BaseModel):
    """Strict, finite, open (the module docstring)."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="allow")


class Timed(Record):
    """A record with ``start_s <= end_s``."""

    start_s: Seconds
    end_s: Seconds

    @model_validator(mode="after")
    def _ordered(self) -> "Timed":
        if self.end_s < self.start_s:
            raise ValueError(f"end_s {self.end_s:g} is before start_s {self.start_s:g}")
        return self


# ---------------------------------------------------------------- manifest.json


class ManifestVideo(Record):
    path: str
    sha256: str = Field(min_length=16)
    duration_s: Annotated[float, Field(gt=0)]


class ManifestCounts(Record):
    clips: Annotated[int, Field(ge=0)]


class ManifestEmbedder(Record):
    name: str
    dim: Annotated[int, Field(ge=1)]


class Manifest(Record):
    """``manifest.json`` (avi/index/build.py writes it last)."""

    complete: Literal[True]
    schema_: int = Field(alias="schema")
    key: str
    pending: list[Literal["graph", "summary"]] = []
    video: ManifestVideo
    settings: dict[str, Any]
    components: dict[str, Any]
    embedder: ManifestEmbedder
    counts: ManifestCounts
    captioner: str


# ---------------------------------------------------------------- captions.jsonl, transcript.jsonl


class SpeechRef(Timed):
    """What was said during a clip: a transcript segment by its index in ``transcript.jsonl``."""

    segment: Annotated[int, Field(ge=0)] | None = None
    source: str


class OcrLine(Record):
    text: str
    t_s: Seconds | None = None


class CaptionData(Record):
    frames_s: list[Seconds] = []
    ocr: list[OcrLine] = []
    subject_registry: dict[str, Any] = {}
    shot_changes_s: list[Seconds] = []
    speech: list[SpeechRef] = []


class CaptionRecord(Timed):
    """One line of ``captions.jsonl`` (:class:`avi.backends.types.Caption`)."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid")

    clip_index: Annotated[int, Field(ge=0)]
    text: str
    captioner: str
    data: CaptionData


class WordRecord(Record):
    word: str
    start_s: float
    end_s: float
    probability: float


class SegmentRecord(Timed):
    """One line of ``transcript.jsonl`` (:class:`avi.backends.asr.TranscriptSegment`)."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid")

    text: str
    source: str
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    compression_ratio: float | None = None
    words: list[WordRecord] | None = None


class TranscriptInfo(Record):
    """``transcript_info.json``: where the transcript came from."""

    mode: str
    sources: list[str]
    segments: Annotated[int, Field(ge=0)]


# ---------------------------------------------------------------- subjects.json, tracks.json


class Subject(Record):
    id: str = Field(min_length=1)
    name: str
    appearance: list[str] = []
    identity: list[str] = []
    first_seen: float | None = None
    spans: list[Span] = []
    clips: list[Annotated[int, Field(ge=0)]] = []


class Track(Record):
    id: str = Field(min_length=1)
    label: str
    first_s: float
    last_s: float
    frames: Annotated[int, Field(ge=0)]
    boxes: list[Annotated[list[float], Field(min_length=5, max_length=5)]]
    subject: str | None = None


# ---------------------------------------------------------------- graph.json, summary.json


class GraphNode(Record):
    id: str | int
    kind: str = "entity"
    name: Any = ""
    spans: list[Span] = []
    clips: list[Annotated[int, Field(ge=0)]] = []
    members: list[str | int] = []
    attributes: list[Any] = []
    actions: list[Any] = []
    max_count: Any = None
    freq: float | None = None
    centrality: float | None = None


class GraphEdge(Record):
    source: str | int
    target: str | int
    relation: str = "related"
    descriptions: list[str] = []
    spans: list[Span] = []


class Graph(Record):
    """``graph.json``: networkx node-link JSON with ``edges`` (avi/index/graph/storage.py)."""

    directed: bool = True
    multigraph: Literal[False] = False
    graph: dict[str, Any] = {}
    nodes: list[GraphNode]
    edges: list[GraphEdge]

    @model_validator(mode="after")
    def _edges_join_nodes(self) -> "Graph":
        ids = {n.id for n in self.nodes}
        if len(ids) != len(self.nodes):
            raise ValueError("two nodes share an id")
        loose = next((e for e in self.edges if e.source not in ids or e.target not in ids), None)
        if loose is not None:
            raise ValueError(f"an edge {loose.source!r} -> {loose.target!r} names a node the graph does not hold")
        return self


class SummarySegment(Timed):
    summary: str = ""


class FailedSegment(Record):
    start_s: Seconds | None = None
    end_s: Seconds | None = None


class Summary(Record):
    """``summary.json`` (:func:`avi.index.summary.build_summary`)."""

    segments: list[SummarySegment]
    video: str | None = None
    failed: list[FailedSegment] = []
    llm: str | None = None


SUBJECTS = TypeAdapter(list[Subject])
TRACKS = TypeAdapter(list[Track])
