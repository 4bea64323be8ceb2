"""Evidence grounding for small orchestrators (issue 14): where to look, and answers taken from what was found
(answers read from measurements, counts, cuts, shots and colours, are in :mod:`avi.agent.measured`).

A 1.5B orchestrator reads the last message far better than a tool result ten messages up, copies
example values, and searches the whole video when the question names the part to look at. The host
therefore keeps, per question,

* :class:`Places` — the time ranges worth inspecting, best first: the ranges the question's time words
  name (:func:`avi.video.timecode.question_ranges`), then the retrieve tools' hits ranked by similarity.
  Perceive opens with them as the default places to look, and a perceive call on a range that nothing
  supports is questioned once before it runs (:meth:`Places.unsupported`);
* the evidence strings the perceive tools returned (on-screen text runs, transcript lines), from which a
  free-text answer is taken with the evidence's exact spelling (:func:`evidence_strings`);
* the evidence runs from which an interval answer is widened to the whole event (:func:`evidence_span`).

All times are seconds from the start of the video; ranges are ``[start_s, end_s]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from avi.video.spans import merge_spans, span_length, span_overlap
from avi.video.timecode import fmt_range


@dataclass
class Place:
    """One range worth inspecting.

    Attributes:
        span: ``[start_s, end_s]``.
        source: what supports it (``question``, or the retrieve tool's name).
        score: similarity to the query (1.0 for ranges the question names).
        label: the question's words for it, or the tool's query.
    """

    span: list[float]
    source: str
    score: float
    label: str = ""


@dataclass
class Places:
    """The ranges worth inspecting for one question, best first (issue 14, "evidence-grounded steps").

    Args:
        tolerance_s: a perceive range this close to a place counts as supported by it.
    """

    tolerance_s: float = 2.5
    items: list[Place] = field(default_factory=list)

    def add_named(self, named: list[tuple[str, list[float]]]) -> None:
        """Add the ranges the question's time words name (``question_ranges`` output)."""
        for phrase, span in named:
            self.items.append(Place([float(span[0]), float(span[1])], "question", 1.0, phrase))

    def add_observation(self, tool: str, data: dict, evidence: list[list[float]]) -> None:
        """Add what a retrieve tool returned: clips with similarities (``clip_retrieve``), transcript lines
        (``transcript_search``) or, for the other tools, their evidence ranges (scored 0)."""
        rows = data.get("clips") or data.get("segments") or []
        query = str(data.get("query") or "")
        added = False
        for r in rows:
            if isinstance(r, dict) and "start_s" in r and "end_s" in r:
                self.items.append(Place([float(r["start_s"]), float(r["end_s"])], tool,
                                        float(r.get("similarity") or 0.0), query))
                added = True
        if not added:
            for s, e in evidence:
                self.items.append(Place([float(s), float(e)], tool, 0.0, query))

    def best(self, n: int = 5) -> list[Place]:
        """Up to ``n`` places: every range the question names first, then search hits by similarity
        (neighbouring hits of one query joined), no range twice."""
        named = [p for p in self.items if p.source == "question"]
        hits = sorted((p for p in self.items if p.source != "question"), key=lambda p: -p.score)
        out: list[Place] = []
        for p in named + hits:
            if any(span_overlap(p.span, q.span) >= 0.5 * max(1e-9, min(span_length(p.span), span_length(q.span)))
                   for q in out):
                continue
            out.append(p)
            if len(out) >= n:
                break
        return out

    def describe(self, n: int = 5) -> str:
        """The places as one line each for the Perceive instruction ("" when there are none)."""
        lines = []
        for p, joined in self._joined(self.best(n)):
            why = f'named in the question ("{p.label}")' if p.source == "question" else \
                f"tree search segment, score {p.score:.2f}" if p.source == "tree_search" else \
                f"{p.source} hit{'s' if joined > 1 else ''}, similarity {p.score:.2f}" if p.score \
                else f"{p.source} result"
            lines.append(f"  - {fmt_range(*p.span)}: {why}")
        return "\n".join(lines)

    @staticmethod
    def _joined(places: list[Place], gap_s: float = 0.05) -> list[tuple[Place, int]]:
        """Search hits of one tool that touch (within ``gap_s`` seconds) shown as one range, best first, with
        how many were joined: five neighbouring 5 s clips of a held slide are one range to copy into a perceive
        call, not five (issue 17, item 5: the 1.5B model spent about 9 s decoding such lists). Ranges the
        question names are never joined. Returns ``(place, count)`` pairs; the joined place has the union span
        and the best score."""
        joined: dict[int, tuple[Place, int]] = {}  # id of each group's best-ranked member -> (union, count)
        for source in {p.source for p in places if p.source != "question"}:
            mine = [p for p in places if p.source == source]
            for span in merge_spans([p.span for p in mine], gap_s):
                members = [p for p in mine if span[0] <= p.span[0] and p.span[1] <= span[1]]
                joined[id(members[0])] = (Place(span, source, max(m.score for m in members), members[0].label),
                                          len(members))
        return [(p, 1) if p.source == "question" else joined[id(p)] for p in places
                if p.source == "question" or id(p) in joined]

    def unsupported(self, ranges: list[list[float]]) -> list[list[float]]:
        """The ranges of a perceive call that no place supports (none when there are no places yet).

        A range is supported when it overlaps a place widened by ``tolerance_s`` on each side; a
        range that covers a place counts as supported too.
        """
        if not self.items:
            return []
        named = [p for p in self.items if p.source == "question"]
        pool = named or self.items  # when the question names where to look, that is where to look
        out = []
        for r in ranges:
            s, e = sorted((float(r[0]), float(r[-1])))
            if not any(s <= p.span[1] + self.tolerance_s and e >= p.span[0] - self.tolerance_s for p in pool):
                out.append([s, e])
        return out


# ----------------------------------------------------------------------------- evidence strings


_TEXT_HOLDER = re.compile(r"\b(?:sign|number on|shown on)\b", re.I)  # asks_for_text: about_words or these


_AUXILIARY = r"(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should)\b"
_OPENS_YES_NO = re.compile(r"^\s*" + _AUXILIARY, re.I)
_YES_NO = re.compile(r"^\s*(?:(?!(?:what|which|who|whom|whose|where|when|why|how)\b)[^,?]{1,80},\s*)?" + _AUXILIARY,
                     re.I)  # the verb first, or after a leading phrase and a comma
_ALTERNATIVE = re.compile(r"\bor\b(?!\s+not\b)[^,;]*\?\s*$", re.I)


def is_yes_no(question: str, *, after_phrase: bool = True) -> bool:
    """Whether a question without options is a yes/no question: it opens with an auxiliary verb, or does so after
    a leading phrase and a comma ("At 1:00, is anyone ...", "In the second half, does ..."; only with
    ``after_phrase``), and does not end in alternatives ("... to the left or to the right?" asks which, not
    whether)."""
    pattern = _YES_NO if after_phrase else _OPENS_YES_NO
    return bool(pattern.match(question or "")) and not _ALTERNATIVE.search(question or "")


_WORDS_QUESTION = re.compile(
    r"\b(?:say|says|said|saying|spoken|speak|speaks|mention|mentions|mentioned|word|words|phrase|text|written|"
    r"write|writes|read|reads|title|caption|label|name|named|called|code|displayed|letters?)\b", re.I)


_SPEECH_QUESTION = re.compile(
    r"\b(?:say|says|said|saying|spoken|speak|speaks|speaker|mention|mentions|mentioned|narrator|narration|"
    r"voice|talks?|tells?|told|announces?|announced|according to the (?:lecturer|host|commentator|speaker))\b",
    re.I)


def about_speech(question: str) -> bool:
    """Whether a question asks what was said (the transcript is then the evidence to read first)."""
    return bool(_SPEECH_QUESTION.search(question or ""))


def about_words(question: str) -> bool:
    """Whether a question is about words shown or said (text, a title, a name, what somebody says or mentions;
    not merely about a sign's shape or colour): OCR and the transcript measure those on every profile."""
    return bool(_WORDS_QUESTION.search(question or ""))


def asks_for_text(question: str) -> bool:
    """Whether a free-text question asks for words (on-screen text, a name, something said) rather than a
    count, a yes/no or a description: those answers are taken from the evidence strings (issue 14,
    answers that answer)."""
    q = question or ""
    return (about_words(q) or bool(_TEXT_HOLDER.search(q))) and not re.search(r"\bhow (?:many|much|long)\b", q, re.I) \
        and not is_yes_no(q)


def evidence_strings(steps: list[tuple[str, dict]], limit: int = 40) -> list[str]:
    """On-screen texts and spoken lines the perceive tools returned, in the order found, without repeats.

    Args:
        steps: ``(tool name, observation data)`` of the successful perceive calls.
        limit: at most this many strings.

    Returns:
        the strings as the tools spelled them.
    """
    out: list[str] = []
    seen: set[str] = set()
    for name, data in steps:
        if name == "text_extract":
            texts = [t.get("text", "") for t in data.get("texts", [])]
        elif name == "transcript_read":
            texts = [s.get("text", "") for s in data.get("segments", [])]
        else:
            continue
        for t in texts:
            t = " ".join(str(t).split())
            key = normalise(t)
            if key and key not in seen:
                seen.add(key)
                out.append(t)
    return out[:limit]


def normalise(text: str) -> str:
    """Lower case, punctuation removed, single spaces (for comparing answers with evidence)."""
    return " ".join(re.sub(r"[^\w\s]", " ", str(text).lower()).split())


def grounded_in(answer: str, strings: list[str]) -> bool:
    """Whether ``answer`` rests on the evidence ``strings``: it holds one of them as whole words, it is a
    whole-word part of one, or it holds a distinctive word (five letters or more, not a common word) of one.
    Case and punctuation are ignored; "EXIT 4" does not rest on "EXIT 42"."""
    a = f" {normalise(answer)} "
    if not a.strip():
        return False
    for s in strings:
        n = f" {normalise(s)} "
        if not n.strip():
            continue
        if n in a or a in n:  # the whole string in the answer, or the answer a whole-word part of it
            return True
        # a distinctive word of a longer line (the word asked for in a spoken sentence) counts too
        if any(len(w) >= 5 and not w.isdigit() and w not in _COMMON and f" {w} " in a for w in n.split()):
            return True
    return False


_NON_ANSWER = re.compile(
    r"\b(?:not|no|none|nothing|cannot|can't|can ?not|unable|unknown|unclear|neither|isn't|doesn't|don't|wasn't)\b",
    re.I)


def answers_nothing(answer: str, question: str) -> bool:
    """Whether a free-text answer gives nothing of its own: it denies or doubts ("not found", "cannot be read",
    "unknown"), or it only restates the question (four in five of its words of four letters or more are in
    the question). Only such answers are replaced by an evidence string (issue 14: answers that answer)."""
    if _NON_ANSWER.search(answer or ""):
        return True
    words = [w for w in normalise(answer).split() if len(w) >= 4]
    asked = set(normalise(question).split())
    return bool(words) and sum(w in asked for w in words) >= 0.8 * len(words)


_COMMON = {"that", "this", "with", "there", "they", "their", "what", "which", "when", "where", "from", "have",
           "were", "will", "would", "about", "into", "your", "video", "frame", "frames", "text", "said", "says"}


# ----------------------------------------------------------------------------- intervals


def evidence_span(answer: list[float], runs: list[list[float]], *, gap_s: float = 1.0,
                  pad_s: float = 0.25) -> list[float] | None:
    """The whole event an interval answer points at: the evidence runs it overlaps (or touches within
    ``gap_s``), chained through runs that follow each other within ``gap_s``, padded by ``pad_s``
    (half the 2 fps sampling step: the event starts before its first sampled frame).

    Args:
        answer: ``[start_s, end_s]`` the model gave.
        runs: evidence ranges of the perceive tools (on-screen text runs, detections, transcript lines).

    Returns:
        ``[start_s, end_s]``, or None when no run is near the answer.
    """
    a0, a1 = sorted(answer)
    merged = merge_spans([[float(s), float(e)] for s, e in runs if e >= s], gap_s=gap_s)
    hit = [m for m in merged if m[0] <= a1 + gap_s and m[1] >= a0 - gap_s]
    if not hit:
        return None
    s, e = min(m[0] for m in hit), max(m[1] for m in hit)
    return [max(0.0, s - pad_s), e + pad_s]


# ----------------------------------------------------------------------------- what the tools cannot see


def _forms(word: str) -> set[str]:
    """A word and its forms without a plural ending: ``glasses`` → {glasses, glasse, glass}, ``cars`` → {cars,
    car}; two words are the same noun when their forms meet."""
    out = {word}
    for end in ("es", "s"):
        if len(word) > len(end) + 2 and word.endswith(end):
            out.add(word[: -len(end)])
    return out


def unseen_labels(question: str, unsupported: list[str], frame_analyzer_name: str) -> list[str]:
    """The labels object_detect reported it has no class for that the question itself names.

    The tool answers a label outside the profile's detector vocabulary with "no class for …" and lists it under
    ``unsupported`` (:func:`avi.tools.perceive.object_detect`); those reports are the profile's own word on what
    it cannot see, so no list of nouns is kept here. A label counts when each of its words is a word of the
    question (case and plural endings ignored), so a label the model made up does not make the question unseen.
    Only a profile whose frame analysis is a measurement (its name starts with ``perception``) can be blind; a
    VLM looks at the frames.

    Args:
        question: the question with its options.
        unsupported: the labels object_detect reported as unsupported during the run, in order.
        frame_analyzer_name: the frame analyser's ``name``.

    Returns:
        the labels, lower case, in the order reported, without repeats.
    """
    if not str(frame_analyzer_name).startswith("perception"):
        return []
    asked = {f for w in re.findall(r"[a-z]+", (question or "").lower()) for f in _forms(w)}
    out: list[str] = []
    for label in unsupported:
        words = re.findall(r"[a-z]+", str(label).lower())
        if words and all(_forms(w) & asked for w in words) and str(label).lower() not in out:
            out.append(str(label).lower())
    return out
