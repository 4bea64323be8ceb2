"""The host's search query for a question and the questions that keep the model's Retrieve stage
(avi/agent/question.py; used by avi/agent/search.py, setting host_retrieve)."""

from __future__ import annotations

import pytest

from avi.agent.question import search_query, whole_video_question


@pytest.mark.parametrize("question, query", [
    ("During which time span is the woman in a black coat walking on the lawn?",
     "the woman in a black coat walking on the lawn"),
    ("Who scored the first goal, according to the commentator?", "scored the first goal, according to the commentator"),
    ("What is the person doing with the box?\nA. opening it\nB. throwing it", "the person doing with the box"),
    ("Is there a pen lying on the table?", "Is there a pen lying on the table"),
    ("How many people can be seen at 0:44?", "people can be seen at 0:44"),
])
def test_the_query_is_the_question_without_its_options_and_leading_question_words(question, query):
    assert search_query(question) == query


def test_questions_about_the_whole_video_keep_the_models_retrieve_stage():
    assert whole_video_question("What fills most of the picture for most of the video? A) grass B) snow")
    assert whole_video_question("In what order do the shapes appear?")
    assert whole_video_question("How many times does the man wave?")
    assert not whole_video_question("What colour is the van? (A) the whole thing is red (B) white")  # options
    assert not whole_video_question("Who scored the first goal?")
