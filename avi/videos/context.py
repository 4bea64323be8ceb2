"""The tools' host context over several videos: one :class:`avi.tools.ToolContext` per video, one frame budget."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx

from avi.tools.base import ToolContext


class IndexSet:
    """What the agent asks of "the index" when there are several: the speech of all videos and whether any
    graph holds extracted entities. The tools never see it; they get one video's
    :class:`avi.index.store.VideoIndex` through :meth:`MultiContext.sub`.

    Args:
        indexes: video name -> its open index, in the listed order.
    """

    def __init__(self, indexes: dict[str, Any]):
        self.indexes = dict(indexes)
        self.path = None
        first = next(iter(self.indexes.values()))
        self.manifest = getattr(first, "manifest", {})

    @property
    def transcript(self) -> list:
        """The transcript segments of every video, in video order (each segment's times are its own video's)."""
        return [seg for idx in self.indexes.values() for seg in (getattr(idx, "transcript", None) or [])]

    @property
    def graph(self) -> nx.DiGraph:
        """The nodes of every video's entity graph (named ``video:node``; no edges): enough to tell whether
        any graph holds LLM-extracted entities. A graph that cannot be read adds nothing."""
        g = nx.DiGraph()
        for name, idx in self.indexes.items():
            try:
                nodes = list(idx.graph.nodes(data=True))
            except Exception:  # noqa: BLE001 - an unreadable graph is reported by that index's fallbacks
                continue
            g.add_nodes_from((f"{name}:{n}", d) for n, d in nodes)
        return g


@dataclass
class MultiContext(ToolContext):
    """Host context for a question over several videos (never visible to the model).

    ``index`` is an :class:`IndexSet`; ``video`` is the first video's reader (only its ``info`` is read by the
    agent); ``duration_s`` is the longest video's, so that the question's time words stay inside every video's
    range of possible times. ``frames_spent`` counts the frames of all videos against one budget.

    Attributes:
        contexts: video name -> that video's :class:`ToolContext` (its index, reader and cached shot list).
    """

    contexts: dict[str, ToolContext] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        """The video names, in the listed order."""
        return list(self.contexts)

    @property
    def duration_s(self) -> float:
        return max(c.duration_s for c in self.contexts.values())

    def _duration_or_zero(self) -> float:
        """One budget for all the videos: sized for their summed length."""
        return sum(c.duration_s for c in self.contexts.values()) if self.budget_duration_s is None \
            else float(self.budget_duration_s)

    def durations(self) -> dict[str, float]:
        """Video name -> duration in seconds."""
        return {n: c.duration_s for n, c in self.contexts.items()}

    def sub(self, name: str) -> ToolContext:
        """The context a tool runs in for video ``name``, with this question's frame count and
        :class:`avi.tools.base.QuestionScope` (focus ranges, text_extract frame cap and script).

        Raises:
            KeyError: ``name`` is not one of :attr:`names`.
        """
        return replace(self.contexts[name], frames_spent=self.frames_spent,
                       budget_duration_s=self._duration_or_zero(), scope=self.scope)


def multi_context(settings: Any, backends: Any, videos: dict[str, tuple[Any, Any]]) -> MultiContext:
    """A :class:`MultiContext` over ``videos`` (name -> (index, :class:`avi.video.decode.VideoReader`)).

    Raises:
        ValueError: fewer than two videos.
    """
    if len(videos) < 2:
        raise ValueError("a question over several videos needs at least two")
    contexts = {n: ToolContext(settings=settings, index=idx, video=reader, backends=backends)
                for n, (idx, reader) in videos.items()}
    first = next(iter(contexts.values()))
    return MultiContext(settings=settings, index=IndexSet({n: c.index for n, c in contexts.items()}),
                        video=first.video, backends=backends, contexts=contexts)
