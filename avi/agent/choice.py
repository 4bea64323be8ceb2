"""Multiple-choice answers without position bias (issue 14).

Small orchestrators favour a letter (the one a prompt showed, or the first or last) whatever the evidence
says. Two ways to take the choice that do not depend on where an option stands:

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
import re

from avi.replies import split_thought

_FIRST_OPTION = re.compile(r"(?:^|\n|\s)\(?A[\.\):]\s+")


def question_stem(question: str) -> str:
    """The question without its inline options (everything before option A)."""
    m = _FIRST_OPTION.search(question or "")
    return (question[:m.start()] if m else question).strip()


def permutation_scores(llm, messages: list[dict], tools: list[dict] | None, prompts, question: str,
                       options: dict[str, str], seed: int | None = 0) -> tuple[dict[str, float], list[dict]]:
    """Probability of each option, averaged over the cyclic permutations of the options.

    For shift k = 0..n-1 the options are shown with letter j holding option (j + k) mod n
    (``prompts/choice_score.md`` after ``messages``), the server returns the log-probabilities of the
    reply's first token, the letters' probabilities are normalised over the n letters and credited to the
    options they showed. Permutations in which no letter is among the returned tokens are left out.

    Args:
        llm: a :class:`~avi.backends.llm.ChatClient` (``first_token_logprobs``).
        messages: the conversation so far (system prompt first).
        tools: the conversation's tool list (kept for the server's prefix cache).
        prompts: the :class:`~avi.prompts.PromptLibrary`.
        question: the question with its options.
        options: ``{"A": text, …}`` in order.

    Returns:
        ``({letter: mean probability}, [per permutation: shift, letters' probabilities, seconds, tokens]);``
        the dict is empty when no permutation gave letter probabilities (server without logprobs).
    """
    letters = list(options)
    texts = [options[k] for k in letters]
    n = len(letters)
    stem = question_stem(question)
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
    """Option scores with the model's preference that no evidence supports divided out.

    ``scores`` are the option scores after the evidence, ``prior`` the same scores with the system prompt and
    the question alone (no tool result): an option the model favours whatever the video shows (the first one
    it thought of, the most plausible-sounding one) has a high prior and loses that much. Each score is divided
    by its prior and the quotients renormalised to sum to one ("Calibrate Before Use: Improving Few-Shot
    Performance of Language Models", Zhao et al., ICML 2021, §4: contextual calibration with a content-free
    input; here the content left out is the evidence).

    Returns:
        ``{letter: calibrated probability}``; ``scores`` unchanged when ``prior`` lacks a letter.
    """
    if not scores or any(prior.get(k, 0.0) <= 0.0 for k in scores):
        return dict(scores)
    q = {k: v / prior[k] for k, v in scores.items()}
    z = sum(q.values()) or 1.0
    return {k: v / z for k, v in q.items()}


def choice_by_text(llm, messages: list[dict], tools: list[dict] | None, prompts, question: str,
                   options: dict[str, str], answer: str, max_tokens: int, seed: int | None = 0):
    """The letter of the option whose text the model writes under a schema allowing only the option texts.

    Returns:
        ``(letter or None, chat result)``; None when the option texts are not distinct or the reply does
        not name one.
    """
    texts = list(options.values())
    if len(set(texts)) != len(texts) or not all(t.strip() for t in texts):
        return None, None
    schema = {"type": "object", "properties": {"option": {"type": "string", "enum": texts}},
              "required": ["option"], "additionalProperties": False}
    shown = "\n".join(f"{k}. {v}" for k, v in options.items())
    prompt = prompts.render("final_choice", question=question_stem(question), options=shown, answer=answer)
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
