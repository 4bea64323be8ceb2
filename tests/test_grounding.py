"""Evidence grounding and debiased choices (issue 14): time words, places to look, evidence strings,
interval spans, what the cpu profile cannot see, option scores over cyclic permutations."""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_helpers import rule_run, state, words

from avi.agent import question as questions
from avi.agent.grounding import Places, evidence_span, unseen_labels
from avi.agent.question import (
    about_speech,
    about_words,
    asks_count,
    asks_for_text,
    parse_question,
    question_stem,
)
from avi.agent.rules import measured, texts
from avi.agent.rules.choice import choice_by_text, permutation_scores
from avi.agent.rules.measured import count_at, usual_count
from avi.backends.llm import ChatResult
from avi.prompts import PromptLibrary
from avi.video.timecode import question_ranges

REPO = Path(__file__).resolve().parent.parent
PROMPTS = PromptLibrary(REPO / "prompts")


@pytest.mark.parametrize("question, duration, expected", [
    ("What is on screen around 3:20?", 600, [190.0, 210.0]),
    ("What is on screen around 0:20?", 60, [15.0, 25.0]),
    ("In the last minute, which word appears?", 600, [540.0, 600.0]),
    ("in the first ten seconds, what text is shown?", 600, [0.0, 10.0]),
    ("What happens shortly after the start?", 600, [0.0, 60.0]),
    ("What happens shortly after the start?", 50, [0.0, 10.0]),
    ("Halfway through the video, what colour is the background?", 600, [270.0, 330.0]),
    ("How many people at 0:40?", 79.5, [37.5, 42.5]),
    ("What is said between 1:00 and 1:30?", 600, [60.0, 90.0]),
    ("What changes from 12 s to 20 s?", 600, [12.0, 20.0]),
    ("What appears 2 minutes in?", 600, [110.0, 130.0]),
    ("What is shown near the end?", 600, [540.0, 600.0]),
    ("What is shown in the second half?", 600, [300.0, 600.0]),
    ("What is shown at 45 seconds?", 600, [42.5, 47.5]),
    ("What is shown in the last 5 seconds?", 30, [25.0, 30.0]),
    ("A little after the four-minute mark the background changes colour.", 615, [240.0, 270.0]),
    ("Who speaks after the 2-minute mark?", 600, [120.0, 180.0]),
    ("Around the 30 second mark, what is shown?", 600, [20.0, 40.0]),
])
def test_question_ranges_read_time_words(question, duration, expected):
    got = question_ranges(question, duration)
    assert len(got) == 1 and got[0][1] == expected


def test_question_ranges_several_and_none():
    got = question_ranges("What do the signs at 5 s and 13 s say?", 20)
    assert [span for _, span in got] == [[2.5, 7.5], [10.5, 15.5]]
    assert question_ranges("What number is on the EXIT sign?", 20) == []
    assert question_ranges("What is shown at 90 s?", 20) == []  # outside the video: dropped
    assert question_ranges("How long does the sign stay on screen, in seconds?", 20) == []


def test_places_rank_named_ranges_then_hits_and_question_unsupported_ranges():
    p = Places()
    assert p.unsupported([[50, 55]]) == []  # nothing known yet: nothing to question
    p.add_observation("clip_retrieve", {"query": "sign", "clips": [
        {"start_s": 0.0, "end_s": 5.0, "similarity": 0.2}, {"start_s": 40.0, "end_s": 45.0, "similarity": 0.7},
        {"start_s": 45.0, "end_s": 50.0, "similarity": 0.5}]}, [])
    assert [pl.span for pl in p.best(2)] == [[40.0, 45.0], [45.0, 50.0]]
    assert p.unsupported([[46, 47]]) == [] and p.unsupported([[20, 25]]) == [[20.0, 25.0]]
    assert p.unsupported([[30, 39]]) == []  # within the tolerance of a hit
    p.add_named([("in the first ten seconds", [0.0, 10.0])])
    assert p.best(1)[0].source == "question"
    assert p.unsupported([[40, 45]]) == [[40.0, 45.0]]  # the question names where to look
    assert "named in the question" in p.describe() and "similarity 0.70" in p.describe()
    # touching hits are one range to copy into a perceive call (issue 17: decoding five ranges took ~9 s)
    assert "[40.0s–50.0s]: clip_retrieve hits, similarity 0.70" in p.describe()


def test_questions_about_words():
    assert asks_for_text("What is the secret word that is spoken?")
    assert asks_for_text("What does the sign say?")
    assert not asks_for_text("How many people are visible?")
    assert not asks_for_text("What colour is the background?")
    assert not asks_for_text("Is the word EXIT written on the sign?")  # a yes/no question
    assert about_words("Does the lecturer mention a dog?") and not about_words("Is there a dog?")
    assert not about_words("What shape is the small yellow sign?") and about_words("What does the sign say?")
    assert about_speech("What is the secret code word that is spoken in the video?")
    assert about_speech("According to the commentator, who scored?") and not about_speech("What does the sign show?")


@pytest.mark.parametrize("question", [
    "What does the sign say?", "According to the slides, in which year was the bridge built?",
    "Which city is on the number plate?", "Is the line 'Closed on Sundays' on screen?",
    "When is the word EXIT visible?", "Which item is at the top of the list?", "What brand is the bicycle?",
    "Who is named in the caption?", "Does the presenter mention rain?"])
def test_questions_that_text_may_answer(question):
    assert questions.about_text(question) and parse_question(question).about_text


@pytest.mark.parametrize("question", [
    "What colour is the van?", "How many people are visible at 0:20?", "Does the camera move?",
    "When does the man sit down?", "What is the person doing with the box? A. opening it B. throwing it",
    "Is anyone walking on the lawn?"])
def test_questions_that_text_does_not_answer(question):
    assert not questions.about_text(question) and not parse_question(question).about_text


def test_an_option_naming_something_written_makes_the_question_about_text():
    assert parse_question("What is shown first? (A) a cyclist (B) a taxi sign").about_text


def test_evidence_span_chains_runs_across_clips():
    runs = [[4.0, 4.5], [5.0, 9.5], [10.0, 13.0], [30.0, 31.0]]
    assert evidence_span([5.0, 10.0], runs) == [3.75, 13.25]
    assert evidence_span([20.0, 25.0], runs) is None
    assert evidence_span([29.0, 29.5], runs) == [29.75, 31.25]


def test_unseen_labels_are_the_detector_reports_the_question_names():
    q = "What is the man riding? (A) a bicycle (B) a horse"
    # object_detect said it has no class for these; only the ones the question names count
    assert unseen_labels(words(q), ["horse", "saddle"], "perception-frame-analyzer-v1") == ["horse"]
    assert unseen_labels(words(q), ["horse"], "qwen3-vl") == []  # a VLM looks at the frames
    assert unseen_labels(words(q), [], "perception-frame-analyzer-v1") == []  # the detector was never asked
    # plural endings and case are ignored; every word of a label must be in the question
    assert unseen_labels(words("Is anyone wearing glasses?"), ["Glass"], "perception-frame-analyzer-v2") == ["glass"]
    assert unseen_labels(words("Does he hold a red pen?"), ["red pen", "blue pen"], "perception-v2") == ["red pen"]


class _BiasedLLM:
    """Test double for the ChatClient's ``first_token_logprobs``: the model believes the option text
    ``truth`` a little, and prefers the letter A a lot (position bias)."""

    def __init__(self, truth: str, no_logprobs: bool = False):
        self.truth, self.no_logprobs, self.prompts = truth, no_logprobs, []

    def first_token_logprobs(self, messages, tools=None, *, top=20, seed=0):
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if self.no_logprobs:
            return {}, ChatResult(content="")
        out = {}
        for line in prompt.splitlines():
            if len(line) > 3 and line[1:3] == ". ":
                letter, text = line[0], line[3:]
                out[letter] = -1.0 + (3.0 if letter == "A" else 0.0) + (1.0 if text == self.truth else 0.0)
        return out, ChatResult(content="A", prompt_tokens=50, seconds=0.01)


def test_permutation_scores_cancel_a_letter_preference():
    options = {"A": "red", "B": "blue", "C": "green", "D": "yellow"}
    llm = _BiasedLLM("green")
    scores, calls = permutation_scores(llm, [{"role": "user", "content": "q"}], None, PROMPTS,
                                       question_stem("Which colour? A. red B. blue C. green D. yellow"), options)
    assert max(scores, key=scores.get) == "C"  # the letter A wins every single permutation
    assert len(calls) == 4 and abs(sum(scores.values()) - 1.0) < 1e-9
    shown = [[line[3:] for line in p.splitlines() if line[1:3] == ". "] for p in llm.prompts]
    assert shown[0] == ["red", "blue", "green", "yellow"] and shown[1] == ["blue", "green", "yellow", "red"]
    assert all("Which colour?" in p and "A. red B." not in p for p in llm.prompts)  # the stem, not the old options
    assert permutation_scores(_BiasedLLM("red", no_logprobs=True), [], None, PROMPTS, "q", options)[0] == {}


def test_question_stem_drops_inline_options():
    assert question_stem("Which colour? (A) red (B) blue") == "Which colour?"
    assert question_stem("Which colour?\nA. red\nB. blue") == "Which colour?"
    assert question_stem("No options here") == "No options here"


class _SchemaLLM:
    def __init__(self, content):
        self.content, self.schema = content, None

    def chat(self, messages, tools=None, *, max_tokens, temperature, seed, json_schema=None, **_):
        self.schema = json_schema
        return ChatResult(content=self.content)


def test_choice_by_text_maps_the_option_text_to_its_letter():
    options = {"A": "red", "B": "blue"}
    llm = _SchemaLLM('{"option": "blue"}')
    letter, _ = choice_by_text(llm, [], None, PROMPTS, "Which?", options, "B. blue", 64)
    assert letter == "B" and llm.schema["properties"]["option"]["enum"] == ["red", "blue"]
    assert choice_by_text(_SchemaLLM('{"option": "pink"}'), [], None, PROMPTS, "q", options, "", 64)[0] is None
    assert choice_by_text(_SchemaLLM("x"), [], None, PROMPTS, "q", {"A": "x", "B": "x"}, "", 64) == (None, None)


def test_no_prompt_shows_an_example_answer():
    """Small models copy example values: no prompt may show a letter, number or range after **Answer:**."""
    import re

    for path in (REPO / "prompts").glob("*.md"):
        text = path.read_text()
        for m in re.finditer(r"\*\*Answer:\*\*\s*(\S+)", text):
            value = m.group(1)
            assert not re.fullmatch(r"\(?[A-H][.):,]?|\d+(?:\.\d+)?s?|\[\d.*", value), (path.name, value)
        assert "for example **Answer:**" not in text, path.name


def _counts(label: str, per_frame: list[list[float]]) -> tuple[str, dict]:
    return "object_detect", {"summary": {label: {"per_frame": per_frame}}}


def test_count_at_reads_the_named_moment_not_the_maximum():
    steps = [_counts("person", [[43.0, 3], [43.5, 3], [44.0, 3], [44.5, 3], [45.0, 3], [46.5, 4], [47.0, 4]])]
    assert count_at(steps, 44.0, words("Around 0:44, how many people can be seen?")) == ("person", 3, [43.0, 45.0])
    # nothing within a second: the nearest frame, if within reach
    steps = [_counts("person", [[40.0, 2], [48.0, 5]])]
    assert count_at(steps, 46.0, words("how many people at 0:46?")) == ("person", 5, [48.0, 48.0])
    assert count_at(steps, 44.0, words("how many people at 0:44?")) is None  # 4 s from any measured frame
    assert count_at([("text_extract", {"texts": []})], 44.0, words("how many?")) is None


def test_count_at_picks_the_label_the_question_names():
    steps = [_counts("person", [[10.0, 2]]), _counts("car", [[10.0, 1]])]
    assert count_at(steps, 10.0, words("How many cars are parked at 0:10?")) == ("car", 1, [10.0, 10.0])
    assert count_at(steps, 10.0, words("How many cars or persons at 0:10?")) is None  # both named: ambiguous
    assert count_at(steps, 10.0, words("How many things at 0:10?")) is None
    assert asks_count("How many people?") and not asks_count("Is there a person?")


def _count(question: str, steps: list, answer: str, trace=None) -> str:
    """The count_at_moment rule over ``steps`` (no tools, no index: only the counts measured in frames decide)."""
    return texts.measured_count(rule_run(state(question, steps), trace=trace), answer)


def test_agent_replaces_a_count_with_the_one_measured_at_the_named_moment():
    from avi.trace import Trace

    steps = [_counts("person", [[43.0, 3], [44.0, 3], [45.0, 3], [46.5, 4]])]
    q = "Around 0:44, how many people can be seen?"
    trace = Trace(question=q)
    assert _count(q, steps, "4", trace) == "3"
    assert "count read at the moment the question names: person 3 at 43.0-45.0s" in trace.steps[-1].notes[0]
    assert _count(q, steps, "**3**") == "**3**"  # already right
    q = "How many people walk past in the whole video?"  # no moment named: a believed count stays
    assert _count(q, steps, "4") == "3"  # 4 in one frame of four: a spike, not believed
    steps.append(_counts("person", [[47.0, 4]]))  # seen in two frames: the model's answer stays
    assert _count(q, steps, "4") == "4"


def test_a_count_never_measured_becomes_the_usual_count():
    from avi.trace import Trace

    steps = [_counts("person", [[0.0, 1], [0.5, 1], [1.0, 2], [1.5, 1]])]
    # 2 in one frame of four is not believed (carphone_distorted: a one-frame false positive answered 2, truth 1)
    q = "How many people appear in the video?"
    assert usual_count(steps, words(q)) == ("person", 1, {1})
    trace = Trace(question=q)
    assert _count(q, steps, "3", trace) == "1"
    assert "count 3 was never measured" in trace.steps[-1].notes[0]
    assert _count(q, steps, "2") == "1"
    steps.append(_counts("person", [[2.0, 2]]))  # seen twice: believed, the model's reading stays
    assert _count(q, steps, "2") == "2"
    three = [_counts("person", [[0.0, 1], [0.5, 2], [1.0, 1]])]  # too few frames to call one a spike
    assert usual_count(three, words("How many people?")) == ("person", 1, {1, 2})
    assert usual_count([], words("How many?")) is None


# ---------------------------------------------------------------- hard cuts


@pytest.mark.parametrize("question, kind", [
    ("How many cuts (changes of camera shot) are there in this clip? A. none B. one C. three D. five", "count"),
    ("How many hard cuts (instant changes from one shot to another) are there in this clip?", "count"),
    ("How many shot changes are there in the first minute?", "count"),
    ("Does the video ever cut to a different camera view?", "any"),
    ("Is there a cut to a different scene anywhere in the video?", "any"),
    ("Does the clip cut to a different scene?", "any"),
    ("Is the whole clip one continuous shot?", "none"),
    ("Was it filmed in a single uninterrupted take?", "none"),
    ("How many times does the broadcast cut to the crowd? A) 2 B) 1 C) 3 D) 4", None),
    ("How many times does the background colour change during the video?", None),  # a colour, not a cut list
    ("How many times does the screen change to red?", None),
    ("How many people are there?", None),
    ("What is shown right after the first cut?", None),
    ("Which shot comes after the cut to the crowd?", None),
])
def test_cut_questions(question, kind):
    assert questions.cut_question(question) == kind


@pytest.mark.parametrize("text, n", [("3", 3), ("three", 3), ("none", 0), ("one", 1), ("five cuts", 5),
                                     ("between 2 and 4", None), ("a wide view", None)])
def test_option_count(text, n):
    assert questions.option_count(text) == n


def _cut_answer(kind, cuts, question):
    q = parse_question(question)
    return measured.cut_answer(kind, cuts, q.options, q.option_numbers, q.option_yes_no)


def test_cut_answers():
    opts = "How many cuts? A. none B. one C. three D. five"
    assert _cut_answer("count", [4.1, 6.5, 8.4], opts) == ("C. three", "C")
    assert _cut_answer("count", [4.1, 6.5], opts) is None  # no option says two: the model's answer stands
    assert _cut_answer("count", [1.2, 3.0], "How many cuts?") == ("2", None)
    assert _cut_answer("any", [], "Any cut?") == ("No", None)
    assert _cut_answer("none", [], "One shot?") == ("Yes", None)
    assert _cut_answer("any", [3.0], "Any cut? A. Yes B. No") == ("A. Yes", "A")


def test_about_shot():
    assert questions.about_shot("During which time span is the close-up of the man shown?")
    assert questions.about_shot("When is the shot of the cyclist on screen?")
    assert not questions.about_shot("When is the HALF TIME card on screen?")


# ---------------------------------------------------------------- colours and shot scale


def test_colour_questions():
    assert questions.asks_colour("What colour is the van parked at the top right?")
    assert questions.asks_colour("Which color are the cones?")
    assert not questions.asks_colour("What is the man holding?")


def test_colour_options():
    q = "What colour is the box? A. yellow-orange B. blue C. dark red D. green"
    opts = {"A": "yellow-orange", "B": "blue", "C": "dark red", "D": "green"}
    named = questions.colour_options(q, opts)
    assert named == {"A": {"yellow", "orange"}, "B": {"blue"}, "C": {"red"}, "D": {"green"}}
    assert named == parse_question(q).colour_options
    assert questions.colour_options("How is the cup held? A) upright B) red", {"A": "upright", "B": "red"}) is None
    assert questions.colour_options(q, {"A": "upright", "B": "blue"}) is None  # an option names no colour
    assert questions.colours_named("dark grey or navy") == {"gray", "blue"}


@pytest.mark.parametrize("question, expected", [
    ("What is the largest number of circles on screen at the same time?", True),
    ("How many people are there at most?", True),
    ("How many cars can be seen at once?", True),
    ("What is the maximum number of squares?", True),
    ("How many people appear in the video?", False),
    ("How many squares are on screen around 3:20?", False),
])
def test_asks_most_reads_the_largest_count_questions(question, expected):
    assert questions.asks_most(question) is expected


def test_the_largest_count_is_the_largest_count_seen_in_more_than_one_frame():
    from avi.trace import Trace

    steps = [_counts("circles", [[0.0, 1], [0.5, 3], [1.0, 5], [1.5, 5], [2.0, 2], [2.5, 6]])]  # 6: one frame
    q = "What is the largest number of circles on screen at the same time?"
    trace = Trace(question=q)
    assert _count(q, steps, "2", trace) == "5"
    assert "largest count" in trace.steps[-1].notes[0]
    assert _count(q, steps, "**5**") == "**5**"


def test_yes_no_questions_after_a_leading_phrase_and_alternatives():
    from avi.agent.question import is_yes_no

    assert is_yes_no("Is it raining?") and is_yes_no("At 1:00, is anyone walking on the lawn?")
    assert is_yes_no("In the second half of the video, does the commentator mention a red card?")
    assert not is_yes_no("At 1:00, is anyone walking on the lawn?", after_phrase=False)  # the format line's test
    assert not is_yes_no("In the first minute, what is written?") and not is_yes_no("What is it, is it red?")
    assert not is_yes_no("At 0:50, is the ball rolling to the left or to the right?")  # asks which, not whether
    assert not is_yes_no("Does the small red square move to the left or to the right?")
    assert is_yes_no("Is there a cat or not?")


def test_index_counts_hold_the_flat_shapes_of_every_clip():
    """syn-shapes-02: "What is the largest number of circles on screen at the same time?" -- the agent counted
    one clip (2 circles); the index's clips hold the fullest frame of each clip, five circles in two of them."""
    from types import SimpleNamespace

    from avi.agent.rules.measured import index_counts, most_count

    def clip(s, n, kind="circle"):
        return SimpleNamespace(start_s=s, end_s=s + 5.0, data={
            "people_per_frame": [[s, 0]], "objects_per_frame": {"frisbee": [[s, 1]]},
            "shapes": [{"kind": kind, "colour": "white", "box": [0, 0, 9, 9], "t_s": s + 2.0}] * n})

    caps = [clip(365.0, 3), clip(375.0, 5), clip(380.0, 5), clip(390.0, 4), clip(400.0, 2, "square"), clip(500.0, 7)]
    steps = index_counts(caps)
    per_frame = steps[0][1]["summary"]["circle"]["per_frame"]
    assert per_frame[:2] == [(367.0, 3), (377.0, 5)] and steps[0][1]["summary"]["square"]["per_frame"] == [(402.0, 2)]
    agent = [("object_detect", {"summary": {"circle": {"per_frame": [[415.0, 2], [415.5, 2], [416.0, 1]]}}})]
    q = words("What is the largest number of circles on screen at the same time?")
    assert most_count(agent, q) == ("circle", 2)
    assert most_count(agent + steps, q) == ("circle", 5)  # 7 in one clip only is not believed


def test_index_counts_give_the_count_at_a_moment_the_agent_did_not_measure():
    """syn-shapes-14: "How many shapes are on screen at 1:35?" -- the agent only read text; the index's OCR
    frames counted three shapes at 93.6-98.6 s (label ``shape``: every flat shape of any kind)."""
    from types import SimpleNamespace

    from avi.agent.rules.measured import count_at, index_counts

    caps = [SimpleNamespace(start_s=s, end_s=s + 5.0, data={"shapes_per_frame": rows}) for s, rows in
            ((90.0, [[90.6, 2], [92.0, 2], [93.6, 3]]), (95.0, [[95.6, 3], [97.0, 3], [98.6, 3]]))]
    assert count_at(index_counts(caps), 95.0, words("How many shapes are on screen at 1:35?")) == \
        ("shape", 3, [95.6, 95.6])
