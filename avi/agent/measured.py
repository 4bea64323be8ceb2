"""Answers read from measurements (issue 14): counts at the moment a question names, the largest count, the
span of a count, count comparisons, the cut list for questions about cuts, and interval answers moved onto shot
edges (what the frames look like, colours, shot scale, shapes, black screens and sideways motion, is in
:mod:`avi.agent.measured_looks`).

Each function reads the question (what it asks) and the perceive tools' observation data or the video's
shot list (what was measured), and returns the measured answer or None; the agent
(:mod:`avi.agent.answers`) records in the trace when a measured answer replaces the model's.
All times are seconds.
"""

from __future__ import annotations

import re

from avi.agent.grounding import is_yes_no
from avi.video.spans import span_overlap

# ----------------------------------------------------------------------------- counts at a named moment


def asks_count(question: str) -> bool:
    """Whether the question asks for a number of things ("how many ...", "the largest number of ...")."""
    return bool(re.search(r"\bhow\s+many\b|\b(?:number|count)\s+of\b", question or "", re.I))


def count_at(steps: list[tuple[str, dict]], t_s: float, question: str, window_s: float = 1.0,
             reach_s: float = 2.5) -> tuple[str, int, list[float]] | None:
    """The count ``object_detect`` measured at the moment ``t_s`` the question names.

    Small orchestrators answer "how many at 0:44" with the largest count of the frames they looked at (a person
    who walks in two seconds later counts). This reads the per-frame counts instead: the median count of the
    frames within ``window_s`` seconds of ``t_s``, or, when none is that close, of the nearest frame within
    ``reach_s`` seconds.

    Args:
        steps: ``(tool, observation data)`` of the successful perceive calls (``object_detect`` data carries
            ``summary[label]["per_frame"] = [[t_s, n], ...]``).
        t_s: the moment, seconds.
        question: used to pick the label when several were counted (the one named in the question).

    Returns:
        ``(label, count, [first_s, last_s] of the frames used)``, or None when no measured frame is near ``t_s``
        or the label is ambiguous.
    """
    found = _measured_counts(steps, question)
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


def label_named(label: str, question: str) -> bool:
    """Whether the question names an object_detect label (a word of it, singular or plural: "cars" names "car",
    "squares" names "red square")."""
    words = set(re.findall(r"[a-z]+", (question or "").lower()))
    words |= {w[:-1] for w in words if w.endswith("s")}
    label_words = set(label.lower().split())
    label_words |= {w[:-1] for w in label_words if w.endswith("s")}
    return bool(label_words & words)


def the_label(labels, question: str) -> str | None:
    """The one object_detect label a question is about: the only one measured, or the only one it names."""
    labels = list(dict.fromkeys(labels))
    if len(labels) <= 1:
        return labels[0] if labels else None
    named = [lab for lab in labels if label_named(lab, question)]
    return named[0] if len(named) == 1 else None


def _measured_counts(steps: list[tuple[str, dict]], question: str) -> tuple[str, dict[float, int]] | None:
    """``(label, {t_s: count})`` of the one object_detect label the question is about, or None."""
    per_label: dict[str, dict[float, int]] = {}
    for tool, data in steps:
        if tool != "object_detect":
            continue
        for label, summary in (data.get("summary") or {}).items():
            for t, n in summary.get("per_frame") or []:
                per_label.setdefault(label, {})[float(t)] = int(n)
    label = the_label(per_label, question)
    return (label, per_label[label]) if label is not None else None


def usual_count(steps: list[tuple[str, dict]], question: str) -> tuple[str, int, set[int]] | None:
    """The count object_detect measured most often (ties: the smaller), with the counts it believes.

    For "how many ..." questions that name no moment: an answer that is none of the believed counts is not
    grounded in the measurement (the 1.5B orchestrator wrote 3 where every frame but one counted 1 person). A
    count seen in a single frame while at least four frames were measured is not believed: one-frame spikes are
    the detector's false positives far more often than a person on screen for half a second (carphone_distorted:
    1 person in 7 frames, 2 in one, answered 2).

    Returns:
        ``(label, the most frequent count, {believed counts})``, or None when nothing was counted or the label
        is ambiguous (see :func:`count_at`).
    """
    found = _measured_counts(steps, question)
    if found is None or not found[1]:
        return None
    label, frames = found
    counts = list(frames.values())
    mode = min(set(counts), key=lambda n: (-counts.count(n), n))
    believed = {n for n in counts if counts.count(n) >= 2} if len(counts) >= 4 else set(counts)
    return label, mode, believed | {mode}


def count_spike(steps: list[tuple[str, dict]], question: str) -> tuple[str, int, float] | None:
    """The largest count object_detect saw in a single frame only, when it is larger than every believed count
    (:func:`usual_count`): ``(label, count, t_s)``, else None.

    A one-frame spike is not believed, yet it is also what a sparse sample shows of a short moment (three
    triangles on screen for the last 1.5 s of a range sampled every 2 s); the host confirms it by measuring
    the frames next to it (``MeasuredChoices._confirm_count_spike``) instead of dropping or trusting it.
    """
    usual = usual_count(steps, question)
    found = _measured_counts(steps, question)
    if usual is None or found is None:
        return None
    label, frames = found
    counts = list(frames.values())
    top = max(counts)
    if top <= max(usual[2]) or counts.count(top) != 1:
        return None
    return label, top, next(t for t, n in frames.items() if n == top)


_MOST = re.compile(r"\b(?:largest|greatest|highest|biggest|maximum|max|most)\s+(?:number|count)\b|"
                   r"\bhow\s+many\b.*\b(?:at\s+(?:the\s+)?most|at\s+(?:the\s+)?same\s+time|at\s+once|"
                   r"simultaneously)\b", re.I)


def asks_most(question: str) -> bool:
    """Whether a count question asks for the largest number seen at one time ("the largest number of circles on
    screen at the same time", "how many at most") rather than a usual or a total count."""
    return bool(_MOST.search(question or ""))


def most_count(steps: list[tuple[str, dict]], question: str) -> tuple[str, int] | None:
    """``(label, the largest believed count)`` object_detect measured for the label the question is about
    (believed: :func:`usual_count`; a one-frame spike is not), or None when nothing was counted."""
    usual = usual_count(steps, question)
    return (usual[0], max(usual[2])) if usual is not None else None


_COUNT_SPAN = re.compile(r"\b(?:when|during\s+which\s+time|what\s+time|which\s+part)\b.*?\b(?:are|were|is|was|can)\s+"
                         r"(?:there\s+|you\s+see\s+)?(?:exactly\s+)?(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
                         r"([a-z]+(?:\s+[a-z]+)?)", re.I)


def count_span_question(question: str) -> tuple[int, str] | None:
    """``(n, what)`` for an interval question that asks when a number of things is seen ("When are there five
    circles on screen at the same time?" -> (5, "circles on")), else None."""
    m = _COUNT_SPAN.search(question or "")
    if m is None:
        return None
    word = m.group(1).lower()
    return (int(word) if word.isdigit() else _COUNT_WORDS[word]), m.group(2).lower()


def count_span(steps: list[tuple[str, dict]], question: str, gap_s: float = 1.5) -> list[float] | None:
    """The time span in which object_detect counted exactly the number the question names
    (:func:`count_span_question`) of the label it is about: the longest run of measured frames with that
    count (frames at most ``gap_s`` apart, or 1.5 times the usual spacing of the measured frames), padded by
    half a frame step on each side (0.25 s at 2 fps).

    Returns:
        ``[start_s, end_s]``, or None when the question names no count, nothing was counted or no frame had it.
    """
    asked = count_span_question(question)
    found = _measured_counts(steps, question) if asked is not None else None
    if found is None:
        return None
    n, _ = asked
    every = sorted(found[1])
    steps_s = sorted(b - a for a, b in zip(every, every[1:]))
    gap_s = max(gap_s, 1.5 * steps_s[len(steps_s) // 2]) if steps_s else gap_s  # frames thinned on long ranges
    times = sorted(t for t, c in found[1].items() if c == n)
    if not times:
        return None
    runs: list[list[float]] = []
    for t in times:
        if runs and t - runs[-1][1] <= gap_s and all(c == n for u, c in found[1].items() if runs[-1][1] < u < t):
            runs[-1][1] = t
        else:
            runs.append([t, t])
    best = max(runs, key=lambda r: (r[1] - r[0], -r[0]))
    return [max(0.0, best[0] - 0.25), best[1] + 0.25]


_NUMBER = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
_COMPARISON = re.compile(
    rf"\b(?:is|are)\s+there\s+(?:ever\s+)?(more\s+than|at\s+least|fewer\s+than|less\s+than|only|exactly|just)\s+"
    rf"(?:a\s+single|{_NUMBER})\b", re.I)


def count_comparison(question: str) -> tuple[str, int] | None:
    """``(operator, n)`` for a yes/no question that compares a count with a number, e.g. "is there more than one
    person" -> (">", 1); operators ``>``, ``>=``, ``<``, ``==``. None for any other question."""
    m = _COMPARISON.search(question or "")
    if m is None or not is_yes_no(question):
        return None
    word = (m.group(2) or "one").lower()
    n = int(word) if word.isdigit() else _COUNT_WORDS[word]
    op = {"more than": ">", "at least": ">=", "fewer than": "<", "less than": "<"}.get(" ".join(m.group(1).lower().split()),
                                                                                    "==")
    return op, n


def index_counts(captions) -> list[tuple[str, dict]]:
    """The per-frame counts the index's captioner measured over the whole video (``people_per_frame``,
    ``objects_per_frame`` of each clip caption, the flat shapes of each clip's fullest frame counted by kind
    (``data["shapes"]``) and all flat shapes of its OCR frames under the label ``shape``
    (``data["shapes_per_frame"]``)), as one ``("object_detect", data)`` step in the form of the tool's observation
    data, for questions about the whole video that the frames the agent looked at do not cover."""
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


def compare_count(question: str, steps: list[tuple[str, dict]]) -> tuple[str, str] | None:
    """Yes or no for a count comparison (:func:`count_comparison`) over the whole video, from the largest count
    object_detect measured that is believed (:func:`usual_count`).

    Returns:
        ``("yes" | "no", what was measured, as text)``, or None when the question compares no count or nothing
        the question is about was counted.
    """
    cmp = count_comparison(question)
    usual = usual_count(steps, question) if cmp is not None else None
    if usual is None:
        return None
    op, n = cmp
    label, _, believed = usual
    most = max(believed)
    yes = {">": most > n, ">=": most >= n, "<": most < n, "==": most == n}[op]
    return ("yes" if yes else "no"), f"at most {most} {label} in the frames measured"


# ----------------------------------------------------------------------------- hard cuts, measured


_CUT_NOUN = (r"(?:hard\s+|camera\s+)?(?:cuts?|shot\s+changes?|scene\s+changes?|changes?\s+of\s+(?:camera\s+)?"
             r"(?:shot|view|scene)s?)")
_CUT_COUNT = re.compile(rf"\bhow\s+many\s+{_CUT_NOUN}\b(?!\s+(?:to|back|away)\b)", re.I)
_CUT_ANY = re.compile(r"\bcuts?\s+to\s+(?:a\s+|an\s+)?(?:different|another|other|new)\b|\b(?:any|a)\s+(?:hard\s+)?"
                      r"(?:cuts?|shot\s+changes?|scene\s+changes?)\b|\bchanges?\s+(?:the\s+)?camera\s+(?:view|shot)\b",
                      re.I)
_ONE_SHOT = re.compile(r"\b(?:one|a\s+single|single)\s+(?:continuous\s+|uninterrupted\s+)?(?:shot|take)\b|"
                       r"\b(?:continuous|uninterrupted)\s+(?:shot|take)\b", re.I)
_COUNT_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}
_COUNT_WORDS.update({"none": 0, "no": 0, "no cuts": 0, "no cut": 0, "a single": 1, "single": 1})


def cut_question(question: str) -> str | None:
    """What a question asks about the hard cuts of the video, if that is all it asks.

    Returns:
        ``"count"`` for "how many cuts / shot changes" (not "how many times does it cut to the crowd": a kind of
        shot, which needs more than a cut list); for yes/no
        questions ``"any"`` when "yes" means there is a cut ("does it cut to a different scene?") and ``"none"``
        when "yes" means there is none ("is it one continuous shot?"); else None.
    """
    q = question or ""
    if _CUT_COUNT.search(q):
        return "count"
    if not is_yes_no(q):
        return None
    if _ONE_SHOT.search(q):
        return "none"
    if _CUT_ANY.search(q):
        return "any"
    return None


def option_count(text: str) -> int | None:
    """The number an option states ("3", "three", "none", "one cut"), or None when it states no single number."""
    t = (text or "").strip().lower().rstrip(".")
    nums = re.findall(r"\b\d+\b", t)
    if len(nums) == 1:
        return int(nums[0])
    if nums:
        return None
    words = [w for w in sorted(_COUNT_WORDS, key=len, reverse=True) if re.search(rf"\b{w}\b", t)]
    return _COUNT_WORDS[words[0]] if words else None


def cut_answer(kind: str, cuts_s: list[float], options: dict[str, str]) -> tuple[str, str | None] | None:
    """The answer the measured cuts give to a :func:`cut_question`.

    Args:
        kind: ``count``, ``any`` or ``none``.
        cuts_s: the hard cuts inside the range the question is about (seconds).
        options: ``{letter: text}`` of a multiple-choice question (empty otherwise).

    Returns:
        ``(answer text, choice letter or None)``; None when the options hold no single option with the measured
        count (the model's answer then stands).
    """
    n = len(cuts_s)
    if kind == "count":
        if options:
            hits = [k for k, v in options.items() if option_count(v) == n]
            return (f"{hits[0]}. {options[hits[0]]}", hits[0]) if len(hits) == 1 else None
        return str(n), None
    yes = (n > 0) if kind == "any" else (n == 0)
    if options:
        hits = [k for k, v in options.items() if re.match(rf"\s*{'yes' if yes else 'no'}\b", v, re.I)]
        return (f"{hits[0]}. {options[hits[0]]}", hits[0]) if len(hits) == 1 else None
    return ("Yes" if yes else "No"), None


_SHOT_EVENT = re.compile(r"\b(?:shots?|close-?ups?|camera\s+views?|scenes?)\b", re.I)


def about_shot(question: str) -> bool:
    """Whether an interval question asks when a shot (a close-up, a camera view, a scene) is on screen: its
    answer is then a run of whole shots."""
    return bool(_SHOT_EVENT.search(question or ""))


def snap_to_shots(interval: list[float], shots: list[tuple[float, float]], *, whole_shots: bool,
                  tolerance_s: float = 1.0) -> list[float]:
    """An interval answer moved onto the video's shot edges.

    Args:
        interval: ``[start_s, end_s]`` of the answer.
        shots: ``(start_s, end_s)`` of every shot (:meth:`avi.video.shots.ShotList.shots`).
        whole_shots: the question asks for a shot: the answer becomes the run of shots that it covers for at
            least half of their length (or, when it covers none that much, the shot holding its middle).
            Otherwise each end moves to a shot edge within ``tolerance_s`` (and within a quarter of the
            answer's length), as an event on screen usually starts and ends with its shot.

    Returns:
        ``[start_s, end_s]``.
    """
    a, b = sorted(float(x) for x in interval)
    if not shots:
        return [a, b]
    if whole_shots:
        covered = [(s, e) for s, e in shots if e > s and span_overlap([a, b], [s, e]) >= 0.5 * (e - s)]
        if not covered:
            mid = (a + b) / 2
            covered = [next(((s, e) for s, e in shots if s <= mid < e), shots[-1])]
        return [covered[0][0], covered[-1][1]]
    edges = sorted({float(x) for s, e in shots for x in (s, e)})
    tol = min(tolerance_s, 0.25 * max(b - a, 0.0))

    def nearest(t: float) -> float:
        best = min(edges, key=lambda x: abs(x - t))
        return best if abs(best - t) <= tol else t

    s, e = nearest(a), nearest(b)
    return [s, e] if e > s else [a, b]
