"""'What fills most of the picture' answered from the colours measured in the part of the frame asked about
(avi/agent/measured_looks.py: area_region, implied_colours, area_choice; MeasuredChoices._measured_area_choice),
on two real sample videos whose frames were looked at (bench/REAL.md: tree.avi is a leafy tree seen through a
window for most of its 29.6 s; the lower half of vtest.avi is a mown green lawn in every frame)."""

from __future__ import annotations

from types import SimpleNamespace

from avi.agent.measured_choices import MeasuredChoices
from avi.agent.measured_looks import area_choice, area_region, implied_colours
from avi.agent.trace import Trace
from avi.config import Settings
from avi.tools.base import ToolContext
from avi.video.decode import VideoReader, probe
from conftest import sample_video


def test_area_questions_and_the_part_of_the_frame_they_ask_about():
    assert area_region("What fills most of the picture for most of the video?") == (0.0, 1.0, 0.0, 1.0)
    assert area_region("What covers most of the lower half of the picture?") == (0.5, 1.0, 0.0, 1.0)
    assert area_region("What takes up most of the left half of the frame?") == (0.0, 1.0, 0.0, 0.5)
    assert area_region("What colour is the van?") is None
    assert area_region("Who covers the most ground in the match?") is None


def test_options_imply_colours_by_their_colour_words_else_their_first_scene_word():
    assert implied_colours("a leafy green tree") == {"green"}
    assert implied_colours("a snowy field") == {"white"}  # the adjective, not the field
    assert implied_colours("a brick building") == {"red", "orange"}
    assert implied_colours("a man in a dark suit") == set()


def test_the_largest_colour_decides_only_when_one_option_shows_it_and_no_rival_is_close():
    implied = {"A": {"white"}, "B": {"red", "orange"}, "C": {"orange", "pink"}, "D": {"green"}}
    assert area_choice(implied, {"green": 0.35, "gray": 0.32, "white": 0.26})[0] == "D"
    assert area_choice(implied, {"green": 0.35, "white": 0.33}) is None  # a rival option's colour nearly as large
    assert area_choice(implied, {"orange": 0.5, "green": 0.2}) is None  # two options show orange
    assert area_choice(implied, {"gray": 0.6, "green": 0.3}) is None  # no option shows the largest colour
    assert area_choice({"A": {"white"}, "B": set()}, {"white": 0.9}) is None  # an option with no colour


def _choice(video: str, question: str, options: dict[str, str]):
    path = sample_video("vtest.avi").with_name(video)
    ctx = ToolContext(settings=Settings(frame_budget=0), index=SimpleNamespace(captions=[], path=None),
                      video=VideoReader(probe(path)), backends=None)
    st = SimpleNamespace(kind="choice", options=options, question=question, evidence=[], iteration=3,
                         phase="review")
    trace = Trace(question=question)
    return MeasuredChoices._measured_area_choice(SimpleNamespace(ctx=ctx, settings=Settings()), st, trace), trace


def test_what_fills_the_picture_is_measured_on_real_footage():
    got, trace = _choice("tree.avi", "What fills most of the picture for most of the video? A) a snowy field "
                         "B) a brick building C) a person's face D) a leafy green tree",
                         {"A": "a snowy field", "B": "a brick building", "C": "a person's face",
                          "D": "a leafy green tree"})
    assert got == ("D. a leafy green tree", "D"), trace.steps
    got, trace = _choice("vtest.avi", "What covers most of the lower half of the picture? (A) water "
                         "(B) green grass (C) snow (D) sand", {"A": "water", "B": "green grass", "C": "snow", "D": "sand"})
    assert got == ("B. green grass", "B") and trace.steps[-1].observation_data["region"] == [0.5, 1.0, 0.0, 1.0]
