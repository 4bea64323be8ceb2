#!/usr/bin/env python3
"""Writes prompts/memory_examples.jsonl: the labelled question -> query pairs that are both the parser's example
bank (retrieved by similarity) and the labelled set its accuracy is measured on (leave-one-out:
scripts/bench_parse.py never shows a question its own pair). Every question is a `tune` question's stem (its
qid given) or an invented one (source "invented"); none comes from `report` (tests/test_memory_bank.py checks).

Conventions (what a right parse is):
- target: person for people (label person); face for faces; object for other things (label: the COCO class, or
  "other" when COCO has none: a pen, a traffic cone, a tripod, a hat); text for written words; speech for words
  said; cut for shot changes; shape for drawn flat shapes; frame for the whole picture's colour or darkness.
- op: exists for yes/no; count for "how many" (a moment or different ones); max_count for "the most / at the same
  time / at once"; span for "during which time / when is X on screen"; first/last for "when does X first/last";
  read for "what does it say / which word / what did the speaker say"; colour for "what colour"; unsupported for
  what no target measures (activities, places, materials, camera motion, appearance, a shape's kind);
  direction for "which way / to the left or to the right".
- "one continuous shot" is exists cut with compare exactly 0 (true when there is no cut).
- pattern: the question's words for the text or speech to look for, without question words.
"""
import json
from pathlib import Path

P = "person"
PAIRS = [
    # ---- tune questions (stems)
    ("real-vtest-01", "How many people are visible in the very first frame (0:00)?", dict(target="person", noun="people", label=P, op="count")),
    ("real-vtest-02", "What kind of place is the camera looking at?", dict(target="frame", noun="kind of place", op="unsupported")),
    ("real-vtest-03", "Which best describes the camera during the video?", dict(target="frame", noun="camera", op="unsupported")),
    ("real-vtest-04", "What kind of sign is fixed to the lamp post in the middle of the picture?", dict(target="text", noun="sign on the lamp post", op="read", region="centre")),
    ("real-vtest-05", "What covers most of the lower half of the picture?", dict(target="frame", noun="lower half of the picture", op="colour", region="bottom")),
    ("real-vtest-06", "How many people are fully visible in the frame at exactly 0:20?", dict(target="person", noun="people", label=P, op="count")),
    ("real-vtest-07", "Around 0:44, how many people can be seen in the picture?", dict(target="person", noun="people", label=P, op="count")),
    ("real-vtest-08", "How many people are visible in the frame at 0:30 (exactly 30 seconds in)?", dict(target="person", noun="people", label=P, op="count")),
    ("real-vtest-09", "Does the video ever cut to a different camera view?", dict(target="cut", noun="cut to a different camera view", op="exists")),
    ("real-vtest-10", "In the first 40 seconds, does anyone walk onto the big lawn in the foreground?", dict(target="person", noun="anyone on the lawn", label=P, op="exists", region="bottom")),
    ("real-vtest-11", "At 1:00, is anyone walking on the lawn in the foreground?", dict(target="person", noun="anyone on the lawn", label=P, op="exists", region="bottom")),
    ("real-vtest-12", "During which time span is the woman with curly blonde hair and a long black coat walking on the big lawn in the foreground?", dict(target="person", noun="woman in a long black coat", label=P, op="span", colour="black", region="bottom")),
    ("real-vtest-13", "During which time span does the man dressed all in black stand still on the paving just to the right of the tripod?", dict(target="person", noun="man dressed in black", label=P, op="span", colour="black")),
    ("real-vtest-14", "During which time span is the rear hatch of the light-blue car parked at the top right open?", dict(target="object", noun="rear hatch of the car", label="other", op="unsupported")),
    ("real-vtest-15", "What colour is the van parked at the top right of the picture?", dict(target="object", noun="van", label="truck", op="colour", region="top_right")),
    ("real-vtest-16", "Around 0:44, what colour is the jacket of the woman walking on the right side of the paved area?", dict(target="person", noun="woman on the right", label=P, op="colour", region="right")),
    ("real-vtest-17", "What colour are the traffic cones standing along the barrier tape?", dict(target="object", noun="traffic cones", label="other", op="colour")),
    ("real-vtest-18", "In the last five seconds, what does the man at the light-blue car in the top right corner do?", dict(target="person", noun="man at the car", label=P, op="unsupported", region="top_right")),
    ("real-vtest-19", "What stands on the lawn just to the right of the lamp post for the whole video?", dict(target="object", noun="thing on the lawn", label="other", op="unsupported")),
    ("real-vtest-20", "Around 1:00, what is the man in the red-and-navy padded jacket, who walks past the tripod, holding in his hand?", dict(target="person", noun="man in the padded jacket", label=P, op="unsupported")),
    ("real-vtest-21", "How many orange traffic cones stand on the ground in the first frame?", dict(target="object", noun="orange traffic cones", label="other", op="count", colour="orange")),
    ("real-bikes-01", "What is shown in the first second, before the first cut?", dict(target="frame", noun="what is shown", op="unsupported")),
    ("real-bikes-02", "Right after the first cut (about 1.2 s in), who is shown?", dict(target="person", noun="who is shown", label=P, op="unsupported")),
    ("real-bikes-03", "Where was this footage filmed?", dict(target="frame", noun="place of filming", op="unsupported")),
    ("real-bikes-04", "How many hard cuts (instant changes from one shot to another) are there in this clip?", dict(target="cut", noun="hard cuts", op="count")),
    ("real-bikes-05", "Is the whole clip one continuous shot?", dict(target="cut", noun="one continuous shot", op="exists", compare=dict(relation="exactly", value=0))),
    ("real-bikes-06", "During which time span is the shot of the cyclist in a helmet, waiting behind a grey van, on screen?", dict(target="person", noun="cyclist in a helmet", label=P, op="span")),
    ("real-bikes-07", "During which time span is the shot of the old bicycle leaning against a building wall, with a bollard in front of it, shown?", dict(target="object", noun="old bicycle", label="bicycle", op="span")),
    ("real-bikes-08", "During which time span is a car roof sign with the word TAXI visible?", dict(target="text", noun="roof sign with the word TAXI", op="span", pattern="TAXI")),
    ("real-bikes-09", "What word is written on the illuminated sign on the car roof that appears around 0:02-0:03?", dict(target="text", noun="sign on the car roof", op="read")),
    ("real-bikes-10", "What is the cyclist wearing on his head?", dict(target="person", noun="cyclist's head", label=P, op="unsupported")),
    ("real-box-01", "What is the person doing with the box?", dict(target="person", noun="person with the box", label=P, op="unsupported")),
    ("real-box-02", "What colour is the box?", dict(target="object", noun="box", label="other", op="colour")),
    ("real-box-03", "What word is printed in large capital letters on the lid of the box, below the picture?", dict(target="text", noun="word on the lid of the box", op="read")),
    ("real-box-04", "Apart from CAMPRODON, what brand name is printed on the box (along the top edge of the lid and on its short side)?", dict(target="text", noun="brand name on the box", op="read")),
    ("real-box-05", "Is there a pen lying on the table?", dict(target="object", noun="pen", label="other", op="exists")),
    ("real-box-06", "Does the box stay closed the whole time?", dict(target="object", noun="box", label="other", op="unsupported")),
    ("syn-lecture-01", "Which day did the lecturer say the quiz has been moved to?", dict(target="speech", noun="quiz day", op="read", pattern="quiz moved")),
    ("syn-lecture-02", "According to the lecturer, what was the mirror of the Pharos made of?", dict(target="speech", noun="mirror of the Pharos", op="read", pattern="mirror Pharos")),
    ("syn-lecture-03", "In the last minute, where does the lecturer say the class will go next week?", dict(target="speech", noun="where the class goes", op="read", pattern="next week")),
    ("syn-lecture-04", "There is a line of small print at the bottom of the title card. Which room is the lecture in?", dict(target="text", noun="room", op="read", pattern="room", region="bottom")),
    ("syn-lecture-05", "According to the slides, in which year was the Fresnel lens invented?", dict(target="text", noun="year the Fresnel lens was invented", op="read", pattern="Fresnel lens")),
    ("syn-lecture-06", "How many times does the background colour change during the video?", dict(target="cut", noun="background colour changes", op="count")),
    ("syn-lecture-07", "Which slide title is on screen halfway through the video?", dict(target="text", noun="slide title", op="read")),
    ("syn-lecture-08", "What is the background colour of the slide about the Fresnel lens?", dict(target="frame", noun="background of the slide", op="colour")),
    ("syn-lecture-09", "How old was Fresnel when he died, according to the lecturer?", dict(target="speech", noun="Fresnel's age at death", op="read", pattern="Fresnel died")),
    ("syn-lecture-10", "At 6:25, which lighthouse is at the bottom of the list on screen?", dict(target="text", noun="lighthouse at the bottom of the list", op="read", region="bottom")),
    ("syn-lecture-11", "Does the lecturer mention a dog?", dict(target="speech", noun="dog", op="exists", pattern="dog")),
    ("syn-lecture-12", "Is the line 'About 100 metres tall' on screen in the first minute?", dict(target="text", noun="line About 100 metres tall", op="exists", pattern="About 100 metres tall")),
    ("syn-lecture-13", "When is the small caption about how much a first-order lens weighs on screen?", dict(target="text", noun="caption about the lens weight", op="span", pattern="first-order lens weighs")),
    ("syn-lecture-14", "When does the screen go completely black between the Automation slide and the list of famous lighthouses?", dict(target="frame", noun="black screen", op="span", colour="black")),
    ("syn-lecture-15", "What shape is the small yellow sign in the top right corner of the keepers slide?", dict(target="shape", noun="small yellow sign", op="unsupported", colour="yellow", region="top_right")),
    ("syn-shapes-01", "How many squares are on screen around 3:20?", dict(target="shape", noun="squares", label="square", op="count")),
    ("syn-shapes-02", "What is the largest number of circles on screen at the same time?", dict(target="shape", noun="circles", label="circle", op="max_count")),
    ("syn-shapes-03", "The yellow triangles appear one after another. How many are there once they have all appeared?", dict(target="shape", noun="yellow triangles", label="triangle", op="max_count", colour="yellow")),
    ("syn-shapes-04", "What colour is the square that appears beside the red circle near the start?", dict(target="shape", noun="square", label="square", op="colour")),
    ("syn-shapes-05", "In the last minute of the video, what colour are the two large shapes?", dict(target="shape", noun="large shapes", op="colour")),
    ("syn-shapes-06", "What is today's prize, according to the host?", dict(target="speech", noun="today's prize", op="read", pattern="prize")),
    ("syn-shapes-07", "A little after the four-minute mark the background changes colour. What colour does it change to?", dict(target="frame", noun="background", op="colour")),
    ("syn-shapes-08", "After the yellow triangles disappear, does the screen stay empty for at least half a minute?", dict(target="shape", noun="empty screen", op="unsupported")),
    ("syn-shapes-09", "Halfway through the video, are there more than two shapes on screen?", dict(target="shape", noun="shapes", op="exists", compare=dict(relation="more_than", value=2))),
    ("syn-shapes-10", "When are there five circles on screen at the same time?", dict(target="shape", noun="five circles", label="circle", op="span", compare=dict(relation="exactly", value=5))),
    ("syn-shapes-11", "When does the small red square move along the bottom of the screen?", dict(target="shape", noun="small red square", label="square", op="span", colour="red", region="bottom")),
    ("syn-shapes-12", "What shape is the big yellow object that slowly crosses the dark blue screen?", dict(target="shape", noun="big yellow object", op="unsupported", colour="yellow")),
    ("syn-shapes-13", "Does the small red square at the bottom move to the left or to the right?", dict(target="shape", noun="small red square", label="square", op="direction", colour="red", region="bottom")),
    ("syn-shapes-14", "How many shapes are on screen at 1:35?", dict(target="shape", noun="shapes", op="count")),
    ("syn-shapes-15", "Between 7:40 and 8:40, what colour is the large triangle in the middle of the screen?", dict(target="shape", noun="large triangle", label="triangle", op="colour", region="centre")),
    ("real-obama-01", "How many people are visible in the picture?", dict(target="person", noun="people", label=P, op="count")),
    ("real-obama-02", "What is written in large white capital letters on the blue banner at the bottom of the picture?", dict(target="text", noun="words on the blue banner", op="read", region="bottom")),
    ("real-obama-03", "During which time span is the blue banner at the bottom of the picture on screen?", dict(target="text", noun="blue banner", op="span", region="bottom")),
    ("real-obama-04", "Does the video cut to a different camera view?", dict(target="cut", noun="cut to a different camera view", op="exists")),
    ("real-obama-05", "Where is the man speaking?", dict(target="frame", noun="place of the speech", op="unsupported")),
    ("real-obama-06", "Are there more than two people in the picture at 0:05?", dict(target="person", noun="people", label=P, op="exists", compare=dict(relation="more_than", value=2))),
    ("real-obama-07", "What date is written under the title on the banner?", dict(target="text", noun="date under the title", op="read")),
    ("real-obama-08", "Is there a flag in the picture?", dict(target="object", noun="flag", label="other", op="exists")),
    ("real-obama-09", "Is someone standing behind the man at the podium?", dict(target="person", noun="someone behind the man", label=P, op="exists", posture="standing")),
    ("real-clockcat-01", "How many hard cuts are there in this clip?", dict(target="cut", noun="hard cuts", op="count")),
    ("real-clockcat-02", "What time does the clock's display show?", dict(target="text", noun="time on the clock's display", op="read")),
    ("real-clockcat-03", "Is there a cat in the video?", dict(target="object", noun="cat", label="cat", op="exists")),
    ("real-clockcat-04", "During which time span is the cat on screen?", dict(target="object", noun="cat", label="cat", op="span")),
    ("real-clockcat-05", "Is there a dog in the video?", dict(target="object", noun="dog", label="dog", op="exists")),
    ("real-clockcat-06", "What is shown in the first second?", dict(target="frame", noun="what is shown", op="unsupported")),
    ("real-clockcat-07", "Is there a person anywhere in the video?", dict(target="person", noun="person", label=P, op="exists")),
    ("real-fish-01", "How many fish are in the tank at 0:05?", dict(target="object", noun="fish", label="other", op="count")),
    ("real-fish-02", "Is there a person in the video?", dict(target="person", noun="person", label=P, op="exists")),
    ("real-fish-03", "Does the video cut to a different view?", dict(target="cut", noun="cut to a different view", op="exists")),
    ("real-fish-04", "What kind of animals are in the video?", dict(target="object", noun="kind of animals", label="other", op="unsupported")),
    ("real-fish-05", "Is the tank filmed from directly above?", dict(target="frame", noun="camera view", op="unsupported")),
    ("real-lego-02", "What colour is the part at the very top of the model?", dict(target="object", noun="part at the top of the model", label="other", op="colour", region="top")),
    ("real-lego-03", "What is shown in the video?", dict(target="frame", noun="what is shown", op="unsupported")),
    ("real-lego-04", "How many different shots does the video have?", dict(target="cut", noun="different shots", op="count")),
    # ---- invented (no video; written for the bank and the labelled set)
    ("invented", "Is there a dog anywhere in the video?", dict(target="object", noun="dog", label="dog", op="exists")),
    ("invented", "How many cars are parked on the left side of the street at 0:15?", dict(target="object", noun="cars", label="car", op="count", region="left")),
    ("invented", "When does the first bus appear?", dict(target="object", noun="bus", label="bus", op="first")),
    ("invented", "When is the last time a bicycle is seen?", dict(target="object", noun="bicycle", label="bicycle", op="last")),
    ("invented", "What is the largest number of people in the picture at once?", dict(target="person", noun="people", label=P, op="max_count")),
    ("invented", "How many different people appear in the video?", dict(target="person", noun="different people", label=P, op="count")),
    ("invented", "Does anyone raise their arms?", dict(target="person", noun="anyone raising arms", label=P, op="exists", arms_raised=True)),
    ("invented", "Is anybody sitting in the first half of the video?", dict(target="person", noun="anybody sitting", label=P, op="exists", posture="sitting")),
    ("invented", "During which time span is someone holding a cup?", dict(target="person", noun="someone holding a cup", label=P, op="span", holding="cup")),
    ("invented", "Does the woman smile at any point?", dict(target="person", noun="woman smiling", label=P, op="exists", expression="happy")),
    ("invented", "How many faces can be seen at 2:10?", dict(target="face", noun="faces", label="face", op="count")),
    ("invented", "What does the sign above the door say?", dict(target="text", noun="sign above the door", op="read")),
    ("invented", "Is the word EXIT written anywhere?", dict(target="text", noun="word EXIT", op="exists", pattern="EXIT")),
    ("invented", "When does the title 'Chapter Two' appear on screen?", dict(target="text", noun="title Chapter Two", op="first", pattern="Chapter Two")),
    ("invented", "What did the narrator say about the weather?", dict(target="speech", noun="the weather", op="read", pattern="weather")),
    ("invented", "When does the speaker first mention the budget?", dict(target="speech", noun="budget", op="first", pattern="budget")),
    ("invented", "How many times does the presenter say 'thank you'?", dict(target="speech", noun="thank you", op="count", pattern="thank you")),
    ("invented", "Does anyone say the word 'tomorrow'?", dict(target="speech", noun="tomorrow", op="exists", pattern="tomorrow")),
    ("invented", "How many scene changes are there in the first minute?", dict(target="cut", noun="scene changes", op="count")),
    ("invented", "Are there more than three cuts in the video?", dict(target="cut", noun="cuts", op="exists", compare=dict(relation="more_than", value=3))),
    ("invented", "Does the screen ever go black?", dict(target="frame", noun="black screen", op="exists", colour="black")),
    ("invented", "What colour is the background at the end of the video?", dict(target="frame", noun="background", op="colour")),
    ("invented", "When is the picture mostly green?", dict(target="frame", noun="green picture", op="span", colour="green")),
    ("invented", "How many triangles are on screen at 2:00?", dict(target="shape", noun="triangles", label="triangle", op="count")),
    ("invented", "Is there a blue circle in the top left corner?", dict(target="shape", noun="blue circle", label="circle", op="exists", colour="blue", region="top_left")),
    ("invented", "During which time span is the white truck visible?", dict(target="object", noun="white truck", label="truck", op="span", colour="white")),
    ("invented", "What colour is the umbrella the man carries?", dict(target="object", noun="umbrella", label="umbrella", op="colour")),
    ("invented", "Are there at least two laptops on the table at 0:50?", dict(target="object", noun="laptops", label="laptop", op="exists", compare=dict(relation="at_least", value=2))),
    ("invented", "Is there a cat in the bottom right of the picture?", dict(target="object", noun="cat", label="cat", op="exists", region="bottom_right")),
    ("invented", "What is the man cooking?", dict(target="person", noun="what the man cooks", label=P, op="unsupported")),
    ("invented", "Is the weather sunny?", dict(target="frame", noun="weather", op="unsupported")),
    ("invented", "What material is the bridge made of?", dict(target="object", noun="bridge", label="other", op="unsupported")),
    ("invented", "How many birds fly past in the last ten seconds?", dict(target="object", noun="birds", label="bird", op="count")),
    ("invented", "Does a red car drive by after the 1:00 mark?", dict(target="object", noun="red car", label="car", op="exists", colour="red")),
    ("invented", "Which person appears first on the right side?", dict(target="person", noun="person on the right", label=P, op="first", region="right")),
    ("invented", "Is anyone standing at the centre of the picture at 0:05?", dict(target="person", noun="anyone standing", label=P, op="exists", posture="standing", region="centre")),
    ("invented", "How many chairs are in the room?", dict(target="object", noun="chairs", label="chair", op="count")),
    ("invented", "Does the clip contain a hard cut?", dict(target="cut", noun="hard cut", op="exists")),
    ("invented", "Is the picture ever completely white?", dict(target="frame", noun="white picture", op="exists", colour="white")),
    ("invented", "What is the number on the player's shirt?", dict(target="text", noun="number on the shirt", op="read")),
    ("invented", "Does the word 'SALE' appear on a poster?", dict(target="text", noun="word SALE on a poster", op="exists", pattern="SALE")),
    ("invented", "Are fewer than five people on screen at 3:00?", dict(target="person", noun="people", label=P, op="exists", compare=dict(relation="fewer_than", value=5))),
    ("invented", "Which way does the bus drive, left or right?", dict(target="object", noun="bus", label="bus", op="direction")),
    ("invented", "In which direction does the woman in the red coat walk?", dict(target="person", noun="woman in the red coat", label=P, op="direction", colour="red")),
    ("invented", "What colour is the shirt of the person on the left?", dict(target="person", noun="person on the left", label=P, op="colour", region="left")),
    ("invented", "During which time span is the phone number on screen?", dict(target="text", noun="phone number", op="span", pattern="phone")),
]


def main() -> None:
    repo = Path(__file__).resolve().parents[2]
    out = repo / "prompts" / "memory_examples.jsonl"
    texts = {}  # qid -> the whole question (options included): the answer type bench_parse checks against
    for path in sorted((repo / "bench" / "questions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            texts[rec["qid"]] = rec
    seen = set()
    with open(out, "w", encoding="utf-8") as f:
        for source, question, query in PAIRS:
            assert question not in seen, question
            seen.add(question)
            rec = {"question": question, "query": query, "source": source}
            if source != "invented":
                assert texts[source]["split"] == "tune", source
                assert texts[source]["question"].startswith(question.rstrip("?")[:20]), source
                rec["text"] = texts[source]["question"]
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {len(PAIRS)} pairs to {out}")


if __name__ == "__main__":
    main()
