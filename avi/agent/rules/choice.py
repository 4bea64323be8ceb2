"""Option scoring: multiple-choice answers without position bias (issue 14), the ``option_scores`` answer rule.

Small orchestrators favour a letter (the one a prompt showed, or the first or last) whatever the evidence
says. Two ways to take the choice that do not depend on where an option stands (:func:`scored_option`):

* :func:`permutation_scores` — option scores from the server's log-probabilities of the option letters,
  averaged over the cyclic permutations of the options, so every option is scored once at every position
  and a preference for a position cancels out (the debiasing of "Large Language Models Are Not Robust
  Multiple Choice Selectors", Zheng et al., ICLR 2024, §4: permutation-based debiasing);
* :func:`choice_by_text` — the model names the option's *text* under a schema whose only allowed values
  are the option texts, and the host maps the text back to its letter.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

from avi.agent.parse import extract_choice, find_answer
from avi.agent.rules.base import Delivered, RuleRun, named_ranges
from avi.backends.coco_detector import coco_classes_for
from avi.backends.llm import ContextOverflowError
from avi.replies import split_thought
from avi.tools.base import sample_times
from avi.trace import HOST_STEP
from avi.video.timecode import fmt_range


def permutation_scores(llm, messages: list[dict], tools: list[dict] | None, prompts, stem: str,
                       options: dict[str, str], seed: int | None = 0) -> tuple[dict[str, float], list[dict]]:
    """Probability of each option averaged over the cyclic permutations of the ``options``: for shift k the
    letter j shows option (j + k) mod n (``prompts/choice_score.md`` with the question's ``stem``, after
    ``messages``; ``tools`` kept for the prefix cache), the server's log-probabilities of the first token (``llm``:
    a :class:`~avi.backends.llm.ChatClient`) are normalised over the letters and credited to the options shown.

    Returns:
        ``({letter: mean probability}, [per permutation: shift, letters' log-probabilities, seconds, tokens])``;
        the dict is empty when no permutation gave letter probabilities (a server without logprobs).
    """
    letters = list(options)
    texts = [options[k] for k in letters]
    n = len(letters)
    totals = [0.0] * n
    used = 0
    calls: list[dict] = []
    for k in range(n):
        order = [(j + k) % n for j in range(n)]
        shown = "\n".join(f"{letters[j]}. {texts[order[j]]}" for j in range(n))
        prompt = prompts.render("choice_score", question=stem, options=shown)
        lps, res = llm.first_token_logprobs(messages + [{"role": "user", "content": prompt}], tools, seed=seed)
        raw = [lps.get(letters[j], lps.get(f"({letters[j]}", float("-inf"))) for j in range(n)]
        calls.append({"shift": k, "seconds": round(res.seconds, 3), "prompt_tokens": res.prompt_tokens,
                      "letters": {letters[j]: (None if math.isinf(raw[j]) else round(raw[j], 4)) for j in range(n)}})
        if all(math.isinf(x) for x in raw):
            continue
        top = max(raw)
        ps = [math.exp(x - top) if not math.isinf(x) else 0.0 for x in raw]
        z = sum(ps)
        for j in range(n):
            totals[order[j]] += ps[j] / z
        used += 1
    if not used:
        return {}, calls
    return {letters[i]: totals[i] / used for i in range(n)}, calls


def calibrated_scores(scores: dict[str, float], prior: dict[str, float]) -> dict[str, float]:
    """The option ``scores`` divided by their ``prior`` (the same scores without the evidence) and renormalised:
    contextual calibration (Zhao et al., "Calibrate Before Use", ICML 2021, §4) with the evidence as the content
    left out. ``scores`` unchanged when ``prior`` lacks a letter."""
    if not scores or any(prior.get(k, 0.0) <= 0.0 for k in scores):
        return dict(scores)
    q = {k: v / prior[k] for k, v in scores.items()}
    z = sum(q.values()) or 1.0
    return {k: v / z for k, v in q.items()}


def choice_by_text(llm, messages: list[dict], tools: list[dict] | None, prompts, stem: str,
                   options: dict[str, str], answer: str, max_tokens: int, seed: int | None = 0):
    """``(letter or None, chat result)``: the option whose text the model writes under a schema allowing only
    the option texts; no letter when the texts are not distinct or the reply names none."""
    texts = list(options.values())
    if len(set(texts)) != len(texts) or not all(t.strip() for t in texts):
        return None, None
    schema = {"type": "object", "properties": {"option": {"type": "string", "enum": texts}},
              "required": ["option"], "additionalProperties": False}
    shown = "\n".join(f"{k}. {v}" for k, v in options.items())
    prompt = prompts.render("final_choice", question=stem, options=shown, answer=answer)
    res = llm.chat(messages + [{"role": "user", "content": prompt}], tools, max_tokens=max_tokens, seed=seed,
                   temperature=0.0, json_schema=schema)
    try:
        text = json.loads(split_thought(res.content)[1].strip() or "null")["option"]
    except (ValueError, TypeError, KeyError):
        return None, res
    for letter, body in options.items():
        if body == text:
            return letter, res
    return None, res


def option_scores(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``option_scores`` rule: the letter :func:`scored_option` takes; the model's text stays when it names
    that letter, else the option is the text."""
    picked = scored_option(r)
    if picked is None:
        return None
    choice, method = picked
    keep = ans.text is not None and extract_choice(ans.text, r.q.options) == choice
    return replace(ans, choice=choice, method=method, note=None,
                   text=ans.text if keep else f"{choice}. {r.q.options[choice]}")


def scored_option(r: RuleRun) -> tuple[str, str] | None:
    """``(letter, method)`` without position bias, by the ``choice_scoring`` setting: ``permutation`` scores
    (optionally :func:`calibrated_scores`; :func:`absent_options` passed over), else, or without log-probabilities,
    ``text`` (:func:`choice_by_text`); None when neither gives one. The trace records the scores."""
    mode = getattr(r.settings, "choice_scoring", "permutation")
    if mode == "off":
        return None
    st, chat, seed = r.st, r.chat, r.settings.llm_seed
    history = st.history
    if history and history[-1]["role"] == "assistant" and find_answer(history[-1].get("content") or ""):
        history = history[:-1]  # the options are scored on the evidence, not on the letter just written
    messages = [{"role": "system", "content": chat.system()}] + history
    if mode == "permutation":
        try:
            scores, calls = permutation_scores(chat.llm, messages, chat.schemas, chat.prompts, r.q.stem, st.options,
                                               seed=seed)
        except ContextOverflowError:
            scores, calls = {}, []
        prior, prior_calls = {}, []
        if scores and getattr(r.settings, "choice_calibration", False):
            try:  # the same scores with no evidence: the system prompt and the question alone
                prior, prior_calls = permutation_scores(chat.llm, messages[:1], chat.schemas, chat.prompts, r.q.stem,
                                                        st.options, seed=seed)
            except ContextOverflowError:
                prior = {}
        final = calibrated_scores(scores, prior) if prior else scores
        if scores:
            absent = absent_options(r)
            best = max((k for k in final if k not in absent), key=lambda k: (final[k], -ord(k)))
            every = calls + prior_calls
            r.trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                        llm_seconds=round(sum(c["seconds"] for c in every), 3),
                        prompt_tokens=sum(c["prompt_tokens"] for c in every), completion_tokens=len(every),
                        notes=[f"choice {best} by option scores averaged over {len(calls)} cyclic permutations"
                               + (", divided by their scores without evidence" if prior else "") + ": "
                               + ", ".join(f"{k} {v:.2f}" for k, v in final.items())
                               + (f" (ruled out by the frames: {', '.join(sorted(absent))})" if absent else "")],
                        observation_data={"option_scores": final, "evidence_scores": scores, "prior_scores": prior,
                                          "permutations": calls, "prior_permutations": prior_calls})
            return best, "option-scores"
    try:
        letter, res = choice_by_text(chat.llm, messages, chat.schemas, chat.prompts, r.q.stem, st.options,
                                     st.answer or "", chat.max_tokens(), seed=seed)
    except ContextOverflowError:
        return None
    if res is not None:
        r.trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase, content=res.content,
                    llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                    completion_tokens=res.completion_tokens,
                    notes=[f"choice {letter} by the option text the model named" if letter
                           else "the option text could not be read; structured letter used"])
    return (letter, "option-text") if letter else None


def absent_options(r: RuleRun, max_frames: int = 8, min_frames: int = 3) -> set[str]:
    """The options naming a thing the detector finds in none of ``min_frames``..``max_frames`` frames of the
    ranges the time words name ("a cyclist": a person), and those naming something written where OCR reads no word
    there; empty when the question names no range or every option would be ruled out."""
    q, ctx = r.q, r.ctx
    det = getattr(ctx.backends, "detector", None)
    if q.kind != "choice" or not q.options or not ctx.scope.focus_ranges or det is None:
        return set()
    written = set(q.written_options)
    checkable = {}
    for k, label in q.option_things.items():
        try:
            if det.supports(label):
                checkable[k] = label
        except Exception:  # noqa: BLE001 - a detector that cannot say rules nothing out
            continue
    if not checkable and not written:
        return set()
    ranges = named_ranges(ctx)
    try:
        frames = ctx.video.frames_at(sample_times(ranges, r.settings.fps, max_frames))
    except Exception:  # noqa: BLE001 - an undecodable range measures nothing
        return set()
    if len(frames) < min_frames:
        return set()
    # one detector run per kind of thing: a closed-set detector gives each box to one of the words naming its
    # class ("a cyclist" and "a man" are both COCO person), so words of one class are asked once
    kinds = {k: coco_classes_for(label) or (label,) for k, label in checkable.items()}
    asked = {kind: checkable[k] for k, kind in reversed(list(kinds.items()))}
    seen = {k: 0 for k in checkable}
    for f in frames:
        found = {kind for kind, label in asked.items() if det.detect(f, [label]).detections}
        for k in checkable:
            seen[k] += kinds[k] in found
    absent = {k for k, n in seen.items() if n == 0}
    why = [f"the detector found {' / '.join(checkable[k] for k in sorted(absent))} in none of {len(frames)} "
           f"frames"] if absent else []
    tool = r.tools.get("text_extract")
    if written - absent and tool is not None:  # a sign or a caption is text: no legible word rules it out
        obs = r.measure(tool, {"time_ranges": ranges},
                        "does any option naming something written show text in the named range?")
        legible = [line.get("text", "") for line in (obs.data.get("lines") or [])
                   if sum(ch.isascii() and ch.isalnum() for ch in line.get("text", "")) >= 2]
        if not obs.error and not legible:
            absent |= written
            why.append(f"OCR read no word in {len(obs.frames_s)} frames for "
                       f"{' / '.join(q.options[k] for k in sorted(written))}")
    if not absent or len(absent) == len(q.options):
        return set()
    r.trace.add(kind="final_answer", iteration=r.st.iteration, phase=r.st.phase, frames_s=[f.t_s for f in frames],
                observation_data={"checked": checkable, "frames_with": seen, "written": sorted(written)},
                notes=[HOST_STEP, f"option(s) {', '.join(sorted(absent))} ruled out in "
                                  f"{', '.join(fmt_range(a, b) for a, b in ranges)}: {'; '.join(why)}"])
    return absent
