"""The agent's settings (part of :class:`avi.config.Settings`, whose fields these are), and the ``answer_rules``
selection: which host rules may change the delivered answer (:mod:`avi.agent.rules`, issue 35).

``answer_rules`` is ``default`` (the profile's: every rule on ``cpu``, only ``structured_answer`` on ``gpu``),
``all``, ``none``, or a comma-separated list read left to right: a name adds a rule, ``-name`` removes one, and a
list that starts with a removal starts from the default (``-option_scores,-cannot_tell``); ``all``, ``none``
and ``default`` may start a list too (``all,-cannot_tell``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

ANSWER_RULES = ("cuts", "colour_choice", "scale_choice", "direction", "option_scores", "structured_answer",
                "count_at_moment", "event_interval", "shot_edges", "cannot_tell")
"""Every answer rule, in the order the agent applies them (:data:`avi.agent.rules.RULES` describes each)."""

UNGROUNDED = ("option_scores", "structured_answer")
"""The rules that stay when ``grounded_answers`` is false."""

DEFAULT_RULES = {"cpu": ANSWER_RULES, "gpu": ("structured_answer",)}
"""The rules each profile runs by default: on gpu only those that type and parse the answer (the Qwen3-32B
orchestrator's Review answer is delivered as it is, read for its type); on cpu every rule."""


def answer_rule_names(value: str, profile: str = "cpu") -> tuple[str, ...]:
    """The rules ``value`` (the ``answer_rules`` setting, module docstring) selects on ``profile``, in order.

    Raises:
        ValueError: a name that is no rule (the message lists the valid ones).
    """
    items = [x.strip() for x in str(value).split(",") if x.strip()] or ["default"]
    chosen = set(DEFAULT_RULES[profile]) if items[0].startswith("-") else set()
    for item in items:
        name = item.lstrip("-").strip()
        if name in ("all", "none", "default") and not item.startswith("-"):
            chosen = set({"all": ANSWER_RULES, "none": (), "default": DEFAULT_RULES[profile]}[name])
        elif name not in ANSWER_RULES:
            raise ValueError(f"unknown answer rule {name!r}; valid: all, none, default, {', '.join(ANSWER_RULES)} "
                             "(comma-separated; -name removes one from the default)")
        elif item.startswith("-"):
            chosen.discard(name)
        else:
            chosen.add(name)
    return tuple(n for n in ANSWER_RULES if n in chosen)


class AgentSettings(BaseModel):
    """The agent's settings (a base of :class:`avi.config.Settings`)."""

    max_iterations: int = Field(default=10, ge=1, le=1000, description="agent iterations before a forced answer")
    max_retries: int = Field(default=2, ge=0, le=20, description="malformed tool calls re-asked per iteration")
    answer_rules: str = Field(default="default", description="host rules that may change the delivered answer "
                              "(avi/agent/rules): default (cpu: all; gpu: structured_answer), all, none, or names "
                              "separated by commas, -name removing one from the default; see avi config show")
    structured_answer: bool = Field(default=True, description="deliver choice / multi-select / interval / order "
                                                              "answers through one schema-constrained final call "
                                                              "(the regex read of the answer is the fallback)")
    choice_scoring: Literal["permutation", "text", "off"] = Field(
        default="permutation", description="how the option_scores rule takes a letter (issue 14): 'permutation' "
        "scores the options by the letters' log-probabilities averaged over cyclic permutations (else 'text'), "
        "'text' has the model name the option's text under a schema, 'off' reads the letter of the model's answer")
    choice_calibration: bool = Field(default=False, description="with 'permutation', divide each option's score by "
                                     "its score without evidence (Zhao et al. 2021); off: no gain with the 1.5B model")
    grounded_answers: bool = Field(default=True, description="the host's grounding for small orchestrators: "
                                   "ordinals and time words as places, Perceive first when the question names where "
                                   "to look, the host search; false also turns off every answer rule but "
                                   "option_scores and structured_answer (issue 14)")
    host_retrieve: bool = Field(default=True, description="the host runs clip_retrieve with the question before "
                                                         "the first model step and the agent opens in Perceive "
                                                         "with its hits (two model steps fewer; questions about "
                                                         "the whole video keep the model's Retrieve stage)")
    host_retrieve_max_chars: int = Field(default=800, ge=200, le=1000000,
                                         description="the host search's result shown to the model: its most "
                                                     "similar clips (their ranges are also the Perceive places)")
    memory_route: bool = Field(default=True, description="the model parses the question into a typed query over the "
                               "video's perception memory (memory.sqlite) and the host answers from it when the "
                               "memory covers the query; otherwise the agent runs with the query's result as an "
                               "observation (issue 53; avi/memory)")
    extract_pass: bool = Field(default=True, description="a reply that names a tool in words but holds no usable "
                                                         "call goes through a short constrained extraction request "
                                                         "before any retry (think, then extract)")
    retry_temperature: float = Field(default=0.7, ge=0.0, le=2.0, description="sampling temperature of re-asked replies")
    question_max_chars: int = Field(default=4000, ge=1, le=1000000, description="longest question accepted, in "
                                    "characters (options included); a longer one is refused before any work")
    answer_type: Literal["auto", "choice", "multi", "interval", "order", "text"] = Field(
        default="auto", description="answer type; auto = inferred from the question (options, 'select all', "
                                    "'in which order', 'when')")
    frame_analysis_last: bool = Field(default=True, description="in Perceive, allow frame_analysis only after "
                                                                "object_detect, text_extract, boundary_detect or "
                                                                "transcript_read worked (AVI Fig. 11)")

    @field_validator("answer_rules")
    @classmethod
    def _known_rules(cls, value: str) -> str:
        answer_rule_names(value)  # raises on an unknown name
        return ",".join(x.strip() for x in value.split(",") if x.strip()) or "default"
