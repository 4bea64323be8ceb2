"""Answers read from measurements (issue 14): counts at a moment, the usual and the largest count, the span of a
count, count comparisons, the cut list's answer. Each function takes what the question
asks (fields of :class:`avi.agent.question.ParsedQuestion`, e.g. its word set) and what was measured, and returns
the measured answer or None. Times are seconds.
"""

from __future__ import annotations

Steps = list[tuple[str, dict]]  # (tool, observation data); object_detect's summary[label]["per_frame"]: [[t_s, n]]


def _plural_free(found) -> set[str]:
    found = set(found)
    return found | {w[:-1] for w in found if w.endswith("s")}


def label_named(label: str, words: frozenset[str]) -> bool:
    """Whether the question's ``words`` name an object_detect label (a word of it, singular or plural: "cars"
    names "car", "squares" names "red square")."""
    return bool(_plural_free(label.lower().split()) & _plural_free(words))


def the_label(labels, words: frozenset[str]) -> str | None:
    """The one label a question is about: the only one measured, or the only one its ``words`` name."""
    labels = list(dict.fromkeys(labels))
    if len(labels) <= 1:
        return labels[0] if labels else None
    named = [lab for lab in labels if label_named(lab, words)]
    return named[0] if len(named) == 1 else None


def measured_counts(steps: Steps, words: frozenset[str]) -> tuple[str, dict[float, int]] | None:
    """``(label, {t_s: count})`` of the one object_detect label the question is about, or None."""
    per_label: dict[str, dict[float, int]] = {}
    for tool, data in steps:
        if tool != "object_detect":
            continue
        for label, summary in (data.get("summary") or {}).items():
            for t, n in summary.get("per_frame") or []:
                per_label.setdefault(label, {})[float(t)] = int(n)
    label = the_label(per_label, words)
    return (label, per_label[label]) if label is not None else None


def count_at(steps: Steps, t_s: float, words: frozenset[str], window_s: float = 1.0,
             reach_s: float = 2.5) -> tuple[str, int, list[float]] | None:
    """``(label, count, [first_s, last_s] of the frames used)``: the median count object_detect measured within
    ``window_s`` of the moment ``t_s`` a question names, else at the nearest frame within ``reach_s``; None when
    no frame is near or the label is ambiguous (small orchestrators answer with the largest count they saw)."""
    found = measured_counts(steps, words)
    if found is None:
        return None
    label, frames = found
    near = sorted(t for t in frames if abs(t - t_s) <= window_s)
    if not near:
        nearest = min(frames, key=lambda t: abs(t - t_s))
        if abs(nearest - t_s) > reach_s:
            return None
        near = [nearest]
    counts = sorted(frames[t] for t in near)
    return label, counts[(len(counts) - 1) // 2], [near[0], near[-1]]


def usual_count(steps: Steps, words: frozenset[str]) -> tuple[str, int, set[int]] | None:
    """``(label, the most frequent count (ties: the smaller), {believed counts})``; a count seen in one frame
    only, among four or more, is not believed (one-frame spikes are mostly false positives). None: nothing
    (unambiguous) was counted."""
    found = measured_counts(steps, words)
    if found is None or not found[1]:
        return None
    label, frames = found
    counts = list(frames.values())
    mode = min(set(counts), key=lambda n: (-counts.count(n), n))
    believed = {n for n in counts if counts.count(n) >= 2} if len(counts) >= 4 else set(counts)
    return label, mode, believed | {mode}


def count_spike(steps: Steps, words: frozenset[str]) -> tuple[str, int, float] | None:
    """``(label, count, t_s)`` of the largest count seen in one frame only when it is larger than every believed
    count (:func:`usual_count`), else None: the host measures its neighbours before believing or dropping it."""
    usual = usual_count(steps, words)
    found = measured_counts(steps, words)
    if usual is None or found is None:
        return None
    label, frames = found
    counts = list(frames.values())
    top = max(counts)
    if top <= max(usual[2]) or counts.count(top) != 1:
        return None
    return label, top, next(t for t, n in frames.items() if n == top)


def most_count(steps: Steps, words: frozenset[str]) -> tuple[str, int] | None:
    """``(label, the largest believed count)`` (:func:`usual_count`), or None when nothing was counted."""
    usual = usual_count(steps, words)
    return (usual[0], max(usual[2])) if usual is not None else None


def index_counts(captions) -> Steps:
    """The per-frame counts the index's captioner measured over the whole video (each clip's
    ``people_per_frame``, ``objects_per_frame``, its flat shapes by kind and, under ``shape``, all flat shapes of
    its OCR frames) as one ``("object_detect", data)`` step shaped like the tool's observation data."""
    summary: dict[str, dict] = {}
    for cap in captions:
        data = getattr(cap, "data", None) or {}
        per_label = {"person": data.get("people_per_frame") or []} | dict(data.get("objects_per_frame") or {})
        shapes: dict[str, dict[float, int]] = {}
        for shape in data.get("shapes") or []:
            by_time = shapes.setdefault(str(shape.get("kind", "")), {})
            t = float(shape.get("t_s", cap.start_s))
            by_time[t] = by_time.get(t, 0) + 1
        per_label |= {kind: sorted(rows.items()) for kind, rows in shapes.items() if kind}
        if data.get("shapes_per_frame"):  # every flat shape, of any kind: "how many shapes are on screen"
            per_label["shape"] = list(data["shapes_per_frame"])
        for label, rows in per_label.items():
            summary.setdefault(label, {"per_frame": []})["per_frame"].extend(rows)
    return [("object_detect", {"summary": summary})] if summary else []


def cut_answer(kind: str, cuts_s: list[float], options: dict[str, str], option_numbers: dict[str, int | None],
               option_yes_no: dict[str, str | None]) -> tuple[str, str | None] | None:
    """``(answer text, letter or None)`` the hard cuts ``cuts_s`` of the range asked about give to a cut question
    (``kind``: ``count``, ``any``, ``none``; :func:`avi.agent.question.cut_question`), with ``options`` the option
    stating that number or yes/no (``option_numbers``, ``option_yes_no``); None when not exactly one fits."""
    n = len(cuts_s)
    if kind == "count":
        hits = [k for k in options if option_numbers.get(k) == n]
    else:
        yes = (n > 0) if kind == "any" else (n == 0)
        if not options:
            return ("Yes" if yes else "No"), None
        hits = [k for k in options if option_yes_no.get(k) == ("yes" if yes else "no")]
    if not options:
        return str(n), None
    return (f"{hits[0]}. {options[hits[0]]}", hits[0]) if len(hits) == 1 else None
