"""People seen in more than one video, linked by face (issue 36, item 2: the subject registry across videos).

Each video's index links its person tracks into person subjects (``P1``, ``P2``, ...;
:mod:`avi.index.person_subjects`) and keeps up to :data:`~avi.index.person_subjects.KEPT_FACES` face descriptors
of each subject that showed a face (``person_faces.npz``). Across videos only faces can link people: clothing
histograms change with the camera and the light, and two videos have no time in common to rule a pair out.

Two subjects of different videos are the same person when the mean cosine over all pairs of their descriptors is
at least :data:`~avi.index.person_subjects.FACE_SAME` (the within-video bound). People are the connected
components of those links (networkx) that span two videos or more. Two subjects of one video are not linked
directly (the within-video linker kept them apart), but a component may hold both through subjects of other
videos; it is reported as one person then.

Measured on the 59 faces labelled in bench/people (``scripts/bench_faces.py``, bench/people/README.md
"Measured"): two clean frames of one person score 0.76 on average, faces of different videos at most 0.60, so 0.7
links no two labelled people; a heavily degraded copy (carphone_distorted.mp4 against carphone_pristine.mp4)
scores 0.30, under the different people's mean (0.31), and its person subject 0.27 against the clean one's in the
indexes: such a copy is not linked. Faces that blur and blocking have destroyed are no evidence either way.
"""

from __future__ import annotations

from typing import Mapping

import networkx as nx
import numpy as np

from avi.index.person_subjects import FACE_SAME
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range


def subject_spans(tracks: list[dict]) -> dict[str, list[list[float]]]:
    """Person subject id -> its tracks' spans ``[[first_s, last_s], ...]`` (seconds, merged, in time order), from
    an index's tracks (:attr:`avi.index.store.VideoIndex.tracks`)."""
    spans: dict[str, list[list[float]]] = {}
    for t in tracks:
        if t.get("label") == "person" and t.get("subject"):
            spans.setdefault(t["subject"], []).append([float(t["first_s"]), float(t["last_s"])])
    return {sid: merge_spans(v, gap_s=0.0) for sid, v in spans.items()}


def shared_people(indexes: Mapping[str, object], face_same: float = FACE_SAME) -> list[dict]:
    """The people seen in more than one of the videos (module docstring).

    Args:
        indexes: video name -> its index (:class:`avi.index.store.VideoIndex`: ``person_faces`` and ``tracks``;
            one without ``person_faces`` has no face to link), in the question's order.
        face_same: least mean face cosine that links two subjects of different videos.

    Returns:
        ``[{"people": [{"video": name, "subject": "P1", "spans": [[start_s, end_s], ...]}, ...],
        "face_cosine": float}]``: one entry per person, its subjects in the order of ``indexes`` (then by id),
        ``face_cosine`` the lowest mean cosine of the links that join it; people in order of their first video
        and subject. [] when no two videos share a face.
    """
    names = list(indexes)
    faces = {(n, sid): rows for n in names for sid, rows in (getattr(indexes[n], "person_faces", None) or {}).items()}
    g = nx.Graph()
    keys = list(faces)
    for a, ka in enumerate(keys):
        for kb in keys[a + 1:]:
            if ka[0] == kb[0]:
                continue
            cosine = float(np.mean(faces[ka] @ faces[kb].T))
            if cosine >= face_same:
                g.add_edge(ka, kb, cosine=cosine)
    order = {n: i for i, n in enumerate(names)}
    spans = {n: subject_spans(indexes[n].tracks) for n in {k[0] for k in g.nodes}}  # once per linked video
    people = []
    for component in nx.connected_components(g):
        members = sorted(component, key=lambda k: (order[k[0]], _subject_number(k[1])))
        people.append({"people": [{"video": n, "subject": sid, "spans": spans[n].get(sid, [])} for n, sid in members],
                       "face_cosine": round(min(d["cosine"] for *_, d in g.subgraph(component).edges(data=True)), 3)})
    return sorted(people, key=lambda p: (order[p["people"][0]["video"]], _subject_number(p["people"][0]["subject"])))


def _subject_number(sid: str) -> int:
    digits = sid.lstrip("P")
    return int(digits) if digits.isdigit() else 0


def shared_people_lines(people: list[dict], limit: int = 6, spans: int = 4) -> list[str]:
    """One line per person of :func:`shared_people` (at most ``limit``, each with at most ``spans`` time spans a
    video), for the question message: the videos and times where the same face was seen."""
    lines = []
    for p in people[:limit]:
        seen = "; ".join(f"{m['video']} " + (", ".join(fmt_range(a, b) for a, b in m["spans"][:spans]) or "(no span)")
                         for m in p["people"])
        lines.append(f"- the same person (the face matches) in {seen}")
    return lines
