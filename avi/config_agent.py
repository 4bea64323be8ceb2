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

ANSWER_RULES = ("video_length", "cuts", "option_scores", "structured_answer", "count_at_moment",
                "event_interval", "cannot_tell")
"""Every answer rule, in the order the agent applies them (:data:`avi.agent.rules.RULES` describes each)."""

UNGROUNDED = ("video_length", "option_scores", "structured_answer")
"""The rules that stay when ``grounded_answers`` is false (the agent over several videos sets it: the others read
one video's frames)."""

HOST_STEPS: dict[str, tuple[object, str]] = {
    "memory_route": (False, "the model parses the question, the host answers from the perception memory"),
    "host_retrieve": (False, "the host searches the captions with the question before the first model step"),
    "perceive_first": (False, "open in Perceive when the question's time words name where to look"),
    "time_places": (False, "the question's time words and ordinals as the first places to look"),
    "grounded_answers": (False, "ordinals as events, and every answer rule but the typing ones"),
    "places_gate": (False, "a perceive call on a range nothing pointed to is questioned once"),
    "speech_gate": (False, "a question about speech reads the transcript first"),
    "extract_pass": (False, "a tool named in prose is extracted by a constrained request before a retry"),
    "text_extract_frames_no_text": (1024, "fewer OCR frames when the question asks about no text"),
    "ocr_question_script": (False, "OCR decodes in the question's script"),
    "answer_rules": ("none", "the host's answer rules (avi config show lists them)"),
}
"""Every host step that is not in AVI's Algorithm 1: setting -> (the value that turns it off, what it does).
``--preset paper`` sets them all to those values (:func:`paper_agent_overrides`); ``avi config show`` lists them."""


def paper_agent_overrides() -> dict[str, object]:
    """The settings that turn every host step of :data:`HOST_STEPS` off: the paper's agent, Algorithm 1 alone."""
    return {name: off for name, (off, _) in HOST_STEPS.items()}


DEFAULT_RULES = {"cpu": ANSWER_RULES, "gpu": ("video_length", "structured_answer")}
"""The rules each profile runs by default: on gpu those that type and parse the answer (the Qwen3-32B
orchestrator's Review answer is delivered as it is, read for its type) and, over several videos, the one that
answers from the videos' durations; on cpu every rule."""


SUBSUMED = ("cuts", "count_at_moment", "event_interval")
"""The rules whose questions the perception memory's evaluator answers (issue 53, item 5: cuts, counts at a moment,
intervals from evidence runs). They stay in the default: a question the host
answers runs no rule, and on a question it leaves to the agent the rule is what is left, so the agent route is the
agent without the route and the route's effect is measured on the host's questions alone. A rule leaves the
registry once the host route answers every one of its ``tune`` questions, measured with the parse's examples left
one out."""


def answer_rule_names(value: str, profile: str = "cpu") -> tuple[str, ...]:
    """The rules ``value`` (the ``answer_rules`` setting, module docstring) selects on ``profile``, in order (the
    memory route changes none: :data:`SUBSUMED`).

    Raises:
        ValueError: a name that is no rule (the message lists the valid ones).
    """
    default = tuple(DEFAULT_RULES[profile])
    items = [x.strip() for x in str(value).split(",") if x.strip()] or ["default"]
    chosen = set(default) if items[0].startswith("-") else set()
    for item in items:
        name = item.lstrip("-").strip()
        if name in ("all", "none", "default") and not item.startswith("-"):
            chosen = set({"all": ANSWER_RULES, "none": (), "default": default}[name])
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
                              "(avi/agent/rules): default (cpu: all; gpu: video_length, "
                              "structured_answer), all, none, or names separated by commas, -name removing one from "
                              "the default; see avi config show")
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
    perceive_first: bool = Field(default=True, description="open in Perceive when the question's time words name "
                                 "where to look (a Retrieve step would only hand over; 'when' questions still search)")
    time_places: bool = Field(default=True, description="the question's time words (and, with grounded_answers, its "
                              "ordinals: 'the first goal') become the first places to look, named in the messages")
    places_gate: bool = Field(default=True, description="a perceive call on a range no tool returned and the "
                              "question does not name is questioned once (sent again, it runs as asked)")
    speech_gate: bool = Field(default=True, description="a question about what was said reads the transcript "
                              "(transcript_read) before any other perceive tool")
    memory_route: bool = Field(default=False, description="the model parses the question into a typed query over the "
                               "video's perception memory (memory.sqlite) and the host answers from it when the "
                               "memory covers the query; otherwise the agent runs as without it (issue 53; "
                               "avi/memory). Off by default: on the report split, with it 38 of 90 against 42 without "
                               "(bench/results/memory/composite_report_e9e6888.json, latency_report_off_2f8aaa5.json)")
    memory_observation: bool = Field(default=False, description="with memory_route, a question the host does not "
                                     "answer gets the memory query's result in the agent's first message (an "
                                     "observation) where something was measured; off: the agent runs exactly as "
                                     "without the route. Off by default: on tune's 12 agent-route questions with a "
                                     "result, 0 right with it against 2 without (bench/results/memory/"
                                     "latency_tune_agent12_*_ea583d8.json)")
    memory_cannot_tell: bool = Field(default=False, description="with memory_route, 'Cannot tell on this profile' "
                                     "is decided from the parsed query (op unsupported, or an object the detector "
                                     "has no class for) instead of object_detect's labels; off: the 1.5B parse "
                                     "marked 19 of the 67 tune questions unsupported (examples left one out), 11 of "
                                     "them answered right without the route (bench/results/memory)")
    parse_leave_one_out: bool = Field(default=False, description="with memory_route, the parse's examples leave out a "
                                      "bank pair whose question is the one asked: a measurement switch for the "
                                      "questions the bank was written from (scripts/bench_latency.py sets it)")
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
