"""Answer rules that refine a text or number answer (issue 14): the evidence string that answers, the reading the
frames agree on, the count at the moment asked about, the measured colour, a count comparison, a quoted line's
presence, "cannot tell". Each takes a :class:`~avi.agent.rules.base.RuleRun` and the answer text, and returns the
text to deliver, noting in the trace why it replaced the model's."""

from __future__ import annotations

import json
import re

from avi.agent.grounding import answers_nothing, evidence_strings, grounded_in, unseen_labels
from avi.agent.measured import compare_count, most_count, usual_count
from avi.agent.measured_looks import measured_colour, names_colour
from avi.agent.option_evidence import quoted_in
from avi.agent.question import colours_named, normalise
from avi.agent.readings import agreed_reading
from avi.agent.rules.base import (
    RuleRun,
    moment_count,
    named_ranges,
    ocr_rows,
    range_colours,
    texts_about_question,
    where,
    whole_video_counts,
)
from avi.agent.rules.decide import confirm_count_spike
from avi.backends.llm import ContextOverflowError
from avi.replies import split_thought
from avi.video.spans import merge_spans


def extractive_answer(r: RuleRun, answer: str) -> str:
    """A free-text answer about words that gives nothing of its own (it denies, doubts or restates the question:
    :func:`answers_nothing`) and holds none of the evidence strings is replaced by the evidence string one
    constrained call picks, in the evidence's spelling (a yes/no question keeps its answer)."""
    strings = evidence_strings(r.st.perceive_data())
    if not strings or grounded_in(answer, strings) or not answers_nothing(answer, r.q.terms):
        return answer  # an answer of its own (it may rest on captions or speech the tools returned) is kept
    schema = {"type": "object", "properties": {"evidence": {"type": "string", "enum": strings + ["none"]}},
              "required": ["evidence"], "additionalProperties": False}
    prompt = r.chat.prompts.render("final_evidence", question=r.q.text, answer=answer,
                                   evidence="\n".join(f"- {x}" for x in strings))
    try:
        res = r.chat.ask_json(r.st.history, prompt, schema)
        picked = json.loads(split_thought(res.content)[1].strip() or "null")["evidence"]
    except (ContextOverflowError, ValueError, TypeError, KeyError):
        return answer
    ok = picked in strings
    r.trace.add(kind="final_answer", iteration=r.st.iteration, phase=r.st.phase, content=res.content,
                llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                completion_tokens=res.completion_tokens,
                notes=[f"answer {answer[:80]!r} holds no evidence string; "
                       + (f"taken from the evidence: {picked!r}" if ok else "no evidence string fits; kept")])
    return picked if ok else answer


def agreed_answer_reading(r: RuleRun, answer: str) -> str:
    """A free-text answer that is one OCR read of a word, replaced by the read of that word the frames agree on
    (:func:`avi.agent.readings.agreed_reading`) over every read of the range asked about (else the video)."""
    ranges = named_ranges(r.ctx)
    reads: dict[tuple[str, float], float] = {}  # one per text and frame, whichever source read it
    for row in ocr_rows(r.st, r.ctx):
        t = float(row.get("t_s", -1.0))
        if any(s - 1.0 <= t <= e + 1.0 for s, e in ranges) and str(row.get("text", "")).strip():
            key = (str(row["text"]).strip(), round(t, 1))
            reads[key] = max(reads.get(key, 0.0), float(row.get("score", 0.0)))
    got = agreed_reading(answer, [(text, score) for (text, _), score in reads.items()])
    if got is None:
        return answer
    r.note(f"answer {answer[:60]!r} is one read of a word the frames read as {got[0]!r} more often (support "
           f"{got[1]} against {got[2]} over {len(reads)} reads in {where(ranges)})")
    return got[0]


def count_at_moment(r: RuleRun, answer: str) -> str:
    """"How many ... at 0:44": the count object_detect (else the index) measured at that moment (:func:`count_at`);
    "the largest number at the same time": the largest believed count (:func:`most_count`); with no moment, a
    count never measured becomes the usual count (:func:`usual_count`). Kept when nothing was measured."""
    q, st = r.q, r.st
    written = re.fullmatch(r"[\s*]*(\d+)[\s*.]*", answer or "")  # a bare number, maybe in bold
    if len(q.clock_times) != 1 and q.asks_most:
        confirm_count_spike(r, q.words)
        steps = list(st.perceive_data())
        if not getattr(r.ctx, "focus_ranges", None):  # the whole video: every clip's counts as well
            steps += whole_video_counts(r.ctx)
        most = most_count(steps, q.words)
        if most is None or (written is not None and int(written.group(1)) == most[1]):
            return answer
        r.note(f"the question asks for the largest count: {most[0]} {most[1]} was the largest count measured in "
               f"more than one frame (the model wrote {answer[:60]!r})")
        return str(most[1])
    if len(q.clock_times) != 1:  # no single moment named: keep any count that was measured, else the usual one
        usual = usual_count(st.perceive_data(), q.words)
        if usual is None or written is None or int(written.group(1)) in usual[2]:
            return answer
        r.note(f"count {written.group(1)} was never measured; the usual count of {usual[0]} was {usual[1]} "
               f"(measured: {', '.join(map(str, sorted(usual[2])))})")
        return str(usual[1])
    found, source = moment_count(r, q.clock_times[0][1], q.words)
    if found is None:
        return answer
    label, n, (a, b) = found
    if written is not None and int(written.group(1)) == n:
        return answer
    at = f"at {a:.1f}s" if a == b else f"at {a:.1f}-{b:.1f}s"
    r.note(f"count read at the moment the question names{source}: {label} {n} {at} (the model wrote "
           f"{answer[:60]!r})")
    return str(n)


def colour_answer(r: RuleRun, answer: str) -> str:
    """"What colour is the <thing>": a background question gets the frames' dominant colour (behind the text it
    quotes, when text_extract found it); an answer naming no colour gets the colour object_detect measured on the
    thing's best box (:func:`measured_colour`)."""
    q = r.q
    if q.about_background:
        shares, ranges = range_colours(r, background_ranges(r))
        top = next(iter(shares.items()), None)
        if top is not None and top[1] >= 0.35 and top[0] not in colours_named(answer):
            r.note(f"background colour measured in {where(ranges)}: {top[0]} covers {round(100 * top[1])}% of the "
                   f"frames (the model wrote {answer[:60]!r})",
                   observation_data={"colour_shares": shares, "ranges": ranges})
            return top[0]
    if names_colour(answer):
        return answer
    found = measured_colour(r.st.perceive_data(), q.words)
    if found is None:
        return answer
    label, colour, t_s = found
    r.note(f"answer {answer[:60]!r} names no colour; the measured colour of the {label} at {t_s:.1f}s is {colour}")
    return colour


def background_ranges(r: RuleRun) -> list[list[float]] | None:
    """Where a background colour question looks: the time on screen of the text it quotes in capitals (else of
    the texts sharing its words), from text_extract's runs; None (the range asked about) when there is none."""
    texts = [t for n, _, d in r.st.perceive_calls if n == "text_extract" for t in d.get("texts", [])]
    named = [t for t in texts if any(p and p in normalise(t.get("text", "")) for p in r.q.caps_phrases)]
    about = named or texts_about_question(r.st)
    return merge_spans([[float(t["first_s"]), float(t["last_s"])] for t in about]) or None


def count_yes_no(r: RuleRun, answer: str) -> str:
    """"Is there more than one person ...": yes or no from the measured counts (:func:`compare_count`; over the
    whole video the index's counts when the question names no range), replacing the model's word."""
    q = r.q
    found = compare_count(q.count_comparison, q.words, r.st.perceive_data())
    if found is None and not r.ctx.focus_ranges:
        found = compare_count(q.count_comparison, q.words, whole_video_counts(r.ctx))
    if found is None:
        return answer
    word, measured = found
    if re.match(rf"[\s*]*{word}\b", answer or "", re.I):
        return answer
    r.note(f"count comparison measured: {measured}; answer {word} (the model wrote {answer[:60]!r})")
    return word


def quoted_yes_no(r: RuleRun, answer: str) -> str:
    """A yes/no question about a quoted line ("Is the line 'About 100 metres tall' on screen in the first
    minute?"): "Yes" when an OCR read or transcript line of the range named holds it (:func:`quoted_in`)."""
    if re.match(r"[\s*]*yes\b", answer or "", re.I):
        return answer
    q, ranges = r.q, named_ranges(r.ctx)

    def inside(a: float, b: float | None = None) -> bool:
        return any(s <= a and (b if b is not None else a) <= e for s, e in ranges)

    shown = [str(row.get("text", "")) for row in ocr_rows(r.st, r.ctx)
             if float(row.get("t_s", -1.0)) >= 0.0 and str(row.get("text", "")).strip()
             and inside(float(row.get("t_s", -1.0)))]
    said = [seg.text for seg in r.ctx.index.transcript if inside(seg.start_s, seg.end_s)]
    got = quoted_in(q.quote, q.quote_shown, q.quote_said, list(dict.fromkeys(shown)), said)
    if got is None:
        return answer
    r.note(f"the quote {got[0]!r} is in the reads of {where(ranges)}: {got[1][:100]!r}; answer yes (the model "
           f"wrote {(answer or '')[:60]!r})")
    return "Yes"


def cannot_tell(r: RuleRun, answer: str | None, choice: str | None) -> str | None:
    """The answer when the question names something object_detect reported it has no class for
    (:func:`unseen_labels`) and asks for no words (OCR and speech measure those): it says so, keeping the
    model's answer (or letter) as a marked guess; None otherwise."""
    unseen = unseen_labels(r.q.words, r.st.unsupported,
                           getattr(getattr(r.ctx.backends, "frame_analyzer", None), "name", ""))
    if not unseen:
        return None
    if choice and r.q.options:
        guess = f"; the option best supported is {choice}. {r.q.options.get(choice, '')} (a guess)"
    else:
        guess = f"; best guess: {answer} (not measured)" if answer else ""
    r.note(f"cannot tell: object_detect has no class for {', '.join(unseen)}, which the question names, and no "
           f"text or speech evidence answers it")
    return f"Cannot tell on this profile: its detector ({r.ctx.backends.detector.name}) has no class for " \
           f"{', '.join(unseen)}{guess}"
