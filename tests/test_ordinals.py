"""Ranges named by the order of an event ("the first goal") found in the words the index read
(avi/agent/ordinals.py): the clips' OCR reads and the transcript lines, with their times."""

from __future__ import annotations

from types import SimpleNamespace

from avi.agent.ordinals import ordinal_ranges as ranges_of
from avi.agent.question import ordinal_phrases


def ordinal_ranges(question, index, duration_s=None):
    return ranges_of(ordinal_phrases(question), index, duration_s)


def _index():
    """A match's index as the cpu profile builds it: a "GOAL!" caption read in two clips, a scoreboard, speech
    (the ASR dropped the word "goal" from the line after the first one)."""
    def clip(s, *texts):
        return SimpleNamespace(start_s=s, end_s=s + 5.0, data={"ocr": [{"text": t} for t in texts]})

    def said(s, e, text):
        return SimpleNamespace(start_s=s, end_s=e, text=text)

    return SimpleNamespace(
        captions=[clip(60.0, "RIVERS 0 - 0 HARBOUR"), clip(70.0, "RIVERS 1 - 0 HARBOUR", "GOAL!"),
                  clip(75.0, "RIVERS 1 - 0 HARBOUR"), clip(200.0, "GOAL!"), clip(300.0, "RIVERS 1 - 1 HARBOUR")],
        transcript=[said(74.1, 77.0, "A wonderful header from the captain, Morgan."),
                    said(250.0, 253.0, "What a goal that was, and the crowd loves it.")])


def test_the_first_and_last_event_are_where_the_index_first_and_last_shows_or_says_its_word():
    idx = _index()
    assert ordinal_ranges("Who scored the first goal, according to the commentator?", idx, 400.0) == \
        [("the first goal", [70.0, 80.0])]  # the clip of the first "GOAL!" and the line said after it
    assert ordinal_ranges("Who scored the last goal?", idx, 400.0) == [("the last goal", [250.0, 260.0])]
    assert ordinal_ranges("What does the final goal look like?", idx, 252.0) == [("the final goal", [250.0, 252.0])]


def test_after_and_before_an_event_name_the_rest_of_the_video_and_the_part_up_to_it():
    idx = _index()
    assert ordinal_ranges("Is the score ever level after the first goal?", idx, 400.0) == \
        [("after the first goal", [70.0, 400.0])]
    assert ordinal_ranges("What was the score before the last goal?", idx, 400.0) == \
        [("before the last goal", [0.0, 260.0])]


def test_units_and_unseen_words_name_no_range():
    idx = _index()
    assert ordinal_ranges("Is the score ever level after the first goal?", idx) == []  # no length: no "rest"
    assert ordinal_ranges("What happens in the first minute?", idx) == []  # a time word (timecode's job)
    assert ordinal_ranges("What colour is the first car?", idx) == []  # no read holds the word
    assert ordinal_ranges("Who scored the first goal?", SimpleNamespace()) == []  # an index without reads
    assert ordinal_ranges("Who scored the first goal?", None) == []
