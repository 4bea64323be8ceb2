"""The decoded query checked against the question's own words (issue 53): a schema constrains what a parse can say,
not whether the question said it. A 1.5B parser copies values from its examples ("TAXI" as the pattern of another
sign question, a colour the question never names, a region it never mentions) and leaves out some the question does
give; measured on the labelled pairs (``scripts/bench_parse.py``), each check below removed such errors.

:func:`check_query` returns the query with each field *grounded* in the question (kept only when the question's
words say it; a region, colour or comparison the question states in so many words filled in when the model left it
out) or None with the reason when the query cannot stand (speech the question does not ask about, text it names no
carrier of). The question's cuts are read by :func:`avi.agent.question.cut_question`, as every other part of avi
reads them.
"""

from __future__ import annotations

import re
from typing import Any

from avi.agent.memory_route import question_wants
from avi.agent.question import answer_form, asks_colour, colours_named, option_count
from avi.backends.coco_detector import coco_classes_for, phrase_head
from avi.memory.query import OTHER, SHAPES, Compare, MemoryQuery
from avi.memory.store import normalise

_REGION_WORDS = {
    "left": r"(?<!to the )\bleft\b(?!\s+(?:the|behind|alone|over)\b)",
    "right": r"(?<!to the )\bright\b(?!\s+(?:after|before|away|now|then|at|when|as|from|in\s+front)\b)",
    "top": r"\b(?:top|upper)\b", "bottom": r"\b(?:bottom|lower|foreground)\b",
    "centre": r"\b(?:middle|centre|center|central)\b",
}
#: a region word the question places in the picture (not "the top edge of the lid"): followed by a word for the
#: picture, a corner or a side, or the foreground
_IN_PICTURE = re.compile(r"\b(?:top|upper|bottom|lower|left|right|middle|centre|center)\b(?:[\s-]+\w+){0,3}?[\s-]+"
                         r"(?:of\s+the\s+)?(?:picture|screen|frame|image|view|video|corner|side|half)\b|\bforeground\b",
                         re.I)
_COMPARE = re.compile(r"\b(more than|over|at least|fewer than|less than|under|at most|exactly)\s+(\w+)\b", re.I)
_RELATION = {"more than": "more_than", "over": "more_than", "at least": "at_least", "fewer than": "fewer_than",
             "less than": "fewer_than", "under": "fewer_than", "at most": "at_most", "exactly": "exactly"}
_POSTURE = {"standing": r"\bstand(?:s|ing)?\b", "sitting": r"\b(?:sit(?:s|ting)?|seated)\b",
            "lying": r"\b(?:lie|lies|lying|laying)\b"}
_THERE_ARE = re.compile(r"\bthere\s+(?:are|were|is)\s+(\w+)\b|\b(?:are|were|is)\s+there\s+(\w+)\b", re.I)
_STOP = frozenset("the a an of and or what which who how when where is are was were does do did say says said "
                  "about according to lecturer speaker narrator host presenter".split())
_QUOTED = re.compile(r"[\"\u201c\u2018']([^\"\u201d\u2019']{2,60})[\"\u201d\u2019']")
_EXPRESSION = r"\b(?:smil\w*|happy|sad|angry|anger|surprise\w*|afraid|fear\w*|scared|disgust\w*|neutral|laugh\w*)\b"


#: a posture the question states of someone ("is anyone sitting", "someone standing behind"): the participle,
#: not the verb ("stand still" says nothing of a posture)
_POSTURE_STATED = {"standing": r"\bstanding\b", "sitting": r"\b(?:sitting|seated)\b", "lying": r"\b(?:lying|laying)\b"}
_EXPRESSION_STATED = {"happy": r"\b(?:smil\w*|laugh\w*|happy)\b", "sad": r"\b(?:sad|cry|cries|crying)\b",
                      "angry": r"\b(?:angry|anger)\b", "surprise": r"\bsurprise\w*\b",
                      "fear": r"\b(?:afraid|fear\w*|scared)\b", "disgust": r"\bdisgust\w*\b"}
#: what a person wears: its colour is read from the person's box (the bank's convention)
CLOTHES = frozenset("shirt shirts t-shirt jacket jackets coat coats dress dresses sweater jumper hoodie top trousers "
                    "pants jeans skirt shorts uniform vest scarf".split())
_COLOUR_OF = re.compile(r"\b(?:what|which)\s+colou?rs?\s+(?:is|are|was|were)\s+(?:the|a|an|his|her|their|its)\s+"
                        r"([a-z]+)(?:\s+([a-z]+))?", re.I)
_HOLDING = re.compile(r"\b(?:someone|somebody|anyone|anybody|person|man|woman|boy|girl|child|people|he|she)\s+"
                      r"(?:is\s+|are\s+)?(?:holding|holds|carrying|carries)\s+(?:a|an|the|his|her|their)\s+([a-z]+)",
                      re.I)


def noun_classes(noun: str) -> tuple[str, ...]:
    """The COCO classes a parsed noun names: the phrase's (:func:`coco_classes_for`), else the first word before
    its preposition that names one ("van parked at the top right" -> car, truck; "rear hatch of the car" -> none)."""
    found = coco_classes_for(noun)
    if found:
        return found
    for w in re.findall(r"[a-z]+", phrase_head(noun)):  # "rear hatch of the car" names no class: a hatch
        if found := coco_classes_for(w):
            return found
    return ()


def _qualifies(text: str, colour: str, d: dict) -> bool:
    """Whether the colour word ``colour`` qualifies the query's target in the question: the parsed noun holds it, or
    one of the (up to) three words after it in the question is a word of the noun or label, or for a person a
    thing worn ("a red car" for a car, "a long black coat" for a woman; not "behind a grey van" for a cyclist)."""
    tokens = re.findall(r"[a-z]+", text.lower())
    target = set(re.findall(r"[a-z]+", f"{d['noun'] or ''} {d['label'] or ''}".lower()))
    if colours_named(" ".join(target)) & {colour}:  # the parse's noun holds it ("man dressed in black")
        return True
    target |= {w[:-1] for w in target if w.endswith("s")}
    for i, w in enumerate(tokens):
        if colours_named(w) == {colour}:
            after = tokens[i + 1:i + 4]
            if any(a in target or a.rstrip("s") in target or (d["target"] == "person" and a in CLOTHES)
                   for a in after):  # a person's colour is the colour of what they wear
                return True
    return False


def _what_is_measured(d: dict, text: str, labels: set[str], notes: list[str]) -> None:
    """The thing the query measures, from the question's own words, where a parse names another: the thing whose
    colour is asked ("what colour is the umbrella the man carries": the umbrella; "the shirt of the person": the
    person, whose box's colour it is); an object labelled with the person class is a person; "someone holding a
    cup" is a person holding one."""
    m = _COLOUR_OF.search(text) if d["op"] == "colour" and d["target"] in ("object", "person") else None
    if m:
        head = m.group(1).lower()
        pair = f"{head} {m.group(2).lower()}" if m.group(2) else ""
        classes = [c for c in coco_classes_for(pair) if " " in c] if pair else []  # "cell phone", "wine glass"
        classes = classes or list(coco_classes_for(head))
        if classes and classes != ["person"] and d["target"] == "person":
            d.update(target="object", label=classes[0], noun=pair if " " in "".join(classes) else head)
            notes.append(f"the colour asked is the {head}'s: target object {classes[0]}")
        elif head in CLOTHES and d["target"] == "object" and "person" in labels:
            d.update(target="person", label="person")
            notes.append(f"a {head} is worn: its colour is the person's")
    if d["target"] == "object" and (d["label"] or "").lower() == "person":
        d["target"] = "person"
        notes.append("an object of the person class is a person")
    held = _HOLDING.search(text)
    if held and d["target"] == "object" and d["op"] not in ("colour", "unsupported"):
        d.update(target="person", label="person", holding=held.group(1).lower())
        notes.append(f"someone holding a {d['holding']}: a person holding one")


def _number(word: str) -> int | None:
    return option_count(word) if word.lower() not in ("no", "none", "single") else None


def question_regions(text: str, in_picture: bool = False) -> set[str]:
    """The regions a question's words name: sides, top/bottom (the foreground is the bottom of a fixed view), the
    middle, and a corner when a vertical and a horizontal word are both there; ``in_picture``: only the words placed
    in the picture ("at the top right of the picture", "on the left side", "in the foreground")."""
    low = " ".join(m.group(0) for m in _IN_PICTURE.finditer(text)).lower() if in_picture else text.lower()
    found = {r for r, rx in _REGION_WORDS.items() if re.search(rx, low)}
    corners = {f"{v}_{h}" for v in ("top", "bottom") for h in ("left", "right") if {v, h} <= found}
    return found | corners


def question_labels(q: Any) -> set[str]:
    """The detector classes the question's words name (single words and pairs: "traffic light", "cell phone")."""
    tokens = list(q.stem_tokens) or re.findall(r"[a-z]+", q.text.lower())
    out: set[str] = set()
    for i, w in enumerate(tokens):
        out.update(coco_classes_for(w))
        if i + 1 < len(tokens):
            out.update(c for c in coco_classes_for(f"{w} {tokens[i + 1]}") if " " in c)
    return out


def check_query(query: MemoryQuery, q: Any, vocabulary: list[str] | None) -> tuple[MemoryQuery | None, list[str]]:
    """Ground ``query`` in the question ``q`` (an :class:`avi.agent.question.ParsedQuestion`).

    Returns:
        ``(query, notes)``: the grounded query, or None when it cannot stand; one note per change or the reason.
    """
    notes: list[str] = []
    d = query.model_dump()
    text = q.stem or q.text
    words = set(normalise(text).split())
    # what the question's cut predicate reads is not left to the parser
    if q.cut is not None and d["target"] in ("cut", "frame", "shape", "object"):
        want = {"count": ("count", None), "any": ("exists", None),
                "none": ("exists", {"relation": "exactly", "value": 0})}[q.cut]
        if (d["target"], d["op"], d["compare"]) != ("cut", *want):
            notes.append(f"a question about the cuts ({q.cut}): target cut, op {want[0]}")
            d.update(target="cut", op=want[0], compare=want[1], label=None, colour=None)
    labels = question_labels(q)
    _what_is_measured(d, text, labels, notes)
    if d["target"] == "speech" and not q.about_speech:
        if not labels:
            return None, ["the query reads speech, but the question asks about nothing said"]
        d.update(target="person" if labels == {"person"} else "object", label=None, pattern=None)
        notes.append("the question asks about nothing said: a thing it names is seen")
    shape_words = {"shape", "shapes", *SHAPES, *(w + "s" for w in SHAPES)}
    if d["target"] == "shape" and not words & shape_words and labels - {"person"}:
        d.update(target="object", label=None)
        notes.append("the question names no shape but a detector class: an object")
    if d["target"] in ("person", "face") and "person" not in labels and labels and not q.about_speech \
            and not re.search(r"\b(?:faces?|smil\w*|someone|somebody|anyone|anybody|everyone|nobody)\b", text, re.I):
        d.update(target="object", label=None)
        notes.append("the question names no person but a detector class: an object")
    if d["target"] == "person":
        d["label"] = "person"
    if d["op"] == "read" and d["target"] not in ("text", "speech") and (q.about_speech or q.about_text):
        # only text and speech are read: the target is the one the question's words name
        d.update(target="speech" if q.about_speech else "text", label=None, colour=None)
        notes.append(f"a read of {d['noun'] or 'the thing'} is a read of {d['target']}: the question names it")
    if d["target"] == "text" and not q.about_text:
        return None, ["the query reads on-screen text, but the question names nothing written"]
    # the op yields what the question asks for (its answer type, read by avi.agent.question)
    wants = question_wants(q)
    if d["op"] != "unsupported":
        if wants == "interval" and d["op"] not in ("span", "first", "last"):
            notes.append(f"op {d['op']} -> span: the question asks when")
            d["op"] = "span"
        elif wants == "yesno" and d["op"] != "exists":
            notes.append(f"op {d['op']} -> exists: a yes/no question")
            d["op"] = "exists"
        elif wants == "number" and d["op"] not in ("count", "max_count"):
            notes.append(f"op {d['op']} -> count: the question asks how many")
            d["op"] = "max_count" if q.asks_most else "count"
        elif wants in ("text", "choice") and asks_colour(q.text) and d["target"] not in ("text", "speech") \
                and d["op"] != "colour":
            notes.append(f"op {d['op']} -> colour: the question asks what colour")
            d["op"] = "colour"
        elif wants in ("text", "choice") and d["target"] in ("text", "speech") and \
                d["op"] in ("exists", "span", "first", "last"):
            notes.append(f"op {d['op']} -> read: the question asks what is written or said")
            d["op"] = "read"
    if d["op"] == "colour" and d["target"] == "cut":  # a cut has no colour: the picture's, after it
        d.update(target="frame", label=None)
        notes.append("a colour is the picture's, not a cut's: target frame")
    # the form of a read's answer: the question's own words ("what date", "which year", "what number")
    d["form"] = answer_form(text) if d["op"] == "read" and d["target"] in ("text", "speech") else None
    if d["form"]:
        notes.append(f"form {d['form']}: the question asks for one")
    # the pattern: only the question's own words
    if d["pattern"]:
        kept = [w for w in normalise(d["pattern"]).split()
                if w in words or any(t.startswith(w) or w.startswith(t) for t in words if min(len(t), len(w)) >= 4)]
        if len(kept) != len(normalise(d["pattern"]).split()):
            notes.append(f"pattern words the question does not hold dropped ({d['pattern']!r} -> {' '.join(kept)!r})")
        d["pattern"] = " ".join(kept) or None
    if d["target"] not in ("text", "speech"):
        d["pattern"] = None
    elif not d["pattern"] and d["op"] != "unsupported" and _QUOTED.search(text):
        d["pattern"] = _QUOTED.search(text).group(1)
        notes.append(f"pattern {d['pattern']!r}: the words the question quotes")
    elif d["target"] == "speech" and not d["pattern"] and d["op"] != "unsupported":
        said = [w for w in normalise(d["noun"] or "").split() if w in words and w not in _STOP]
        if said:  # what is said about: the noun's words (on-screen text names its carrier instead)
            d["pattern"] = " ".join(said)
            notes.append(f"pattern {d['pattern']!r} from the noun")
    # the colour: a condition only when the question names it, and the asked colour is no condition
    named = colours_named(text)
    if d["colour"] and d["target"] in ("text", "speech", "cut"):
        notes.append(f"colour {d['colour']} dropped (the memory holds no colour of {d['target']})")
        d["colour"] = None
    elif d["colour"] and (d["colour"] not in named or d["op"] == "colour"):
        notes.append(f"colour {d['colour']} dropped (the question names {', '.join(sorted(named)) or 'none'})")
        d["colour"] = None
    elif (not d["colour"] and len(named) == 1 and d["op"] not in ("colour", "read", "unsupported")
          and d["target"] in ("object", "person", "shape", "frame")
          and (d["target"] == "frame" or _qualifies(text, next(iter(named)), d))):
        d["colour"] = next(iter(named))
        notes.append(f"colour {d['colour']} from the question")
    # the region: only the question's own
    regions = question_regions(text)
    if d["region"] != "any" and d["region"] not in regions:
        notes.append(f"region {d['region']} dropped (the question names {', '.join(sorted(regions)) or 'none'})")
        d["region"] = "any"
    placed = question_regions(text, in_picture=True)
    corner = [r for r in placed if "_" in r and d["region"] in r.split("_")]
    if d["region"] in ("top", "bottom", "left", "right") and len(corner) == 1:
        d["region"] = corner[0]
        notes.append(f"region {d['region']}: the corner the question names")
    if d["region"] == "any" and d["target"] not in ("speech", "cut") and placed:
        regions = placed
        corners = [r for r in regions if "_" in r]
        pick = corners if corners else [r for r in regions if r not in ("left", "right")] if \
            {"left", "right"} <= regions else sorted(regions)
        if len(pick) == 1:
            d["region"] = pick[0]
            notes.append(f"region {d['region']} from the question")
    # the comparison: its number must be the question's
    m = _COMPARE.search(text)
    stated = (_RELATION[m.group(1).lower()], _number(m.group(2))) if m and _number(m.group(2)) is not None else None
    if d["compare"] and (stated is None or (d["compare"]["relation"], d["compare"]["value"]) != stated) \
            and not (d["target"] == "cut" and q.cut == "none"):
        if stated and d["op"] == "exists":
            d["compare"] = {"relation": stated[0], "value": stated[1]}
            notes.append(f"comparison as the question states it: {stated[0]} {stated[1]}")
        else:
            notes.append("a comparison the question does not state dropped")
            d["compare"] = None
    elif not d["compare"] and stated and d["op"] == "exists":
        d["compare"] = {"relation": stated[0], "value": stated[1]}
        notes.append(f"comparison from the question: {stated[0]} {stated[1]}")
    if not d["compare"] and d["op"] in ("span", "first", "last", "exists") and d["target"] not in ("text", "speech"):
        many = _THERE_ARE.search(text)
        n = _number(many.group(1) or many.group(2)) if many else None
        if n is not None and n > 1:  # "when are there five circles": a count that holds, not any circle
            d["compare"] = {"relation": "exactly", "value": n}
            notes.append(f"comparison from the question: exactly {n}")
    # person attributes: only said of a person, in the question's words
    if d["target"] not in ("person", "face"):
        for k in ("posture", "arms_raised", "expression", "holding"):
            if d[k] is not None:
                notes.append(f"{k} dropped: the target is not a person")
                d[k] = None
    if d["posture"] and not re.search(_POSTURE[d["posture"]], text, re.I):
        d["posture"] = None
    if d["expression"] and not re.search(_EXPRESSION, text, re.I):
        d["expression"] = None
    if d["target"] == "person" and d["op"] != "unsupported":
        stated = [k for k, rx in _POSTURE_STATED.items() if re.search(rx, text, re.I)]
        if d["posture"] is None and len(stated) == 1:
            d["posture"] = stated[0]
            notes.append(f"posture {d['posture']} from the question")
        felt = {k for k, rx in _EXPRESSION_STATED.items() if re.search(rx, text, re.I)}
        if d["expression"] is None and len(felt) == 1:
            d["expression"] = felt.pop()
            notes.append(f"expression {d['expression']} from the question")
    # the label: a class the question's words name (the noun's class first), else other
    if d["target"] == "object" and vocabulary:
        label = d["label"]
        if label not in labels:  # a class the question's words name
            from_noun = [c for c in noun_classes(d["noun"] or "") if c in vocabulary]
            new = from_noun[0] if from_noun else OTHER
            if new != label:
                notes.append(f"label {label} is no class the question names: {new}")
            d["label"] = new
    if d["target"] == "shape" and d["label"] and d["label"] not in SHAPES:
        d["label"] = None
    if d["target"] == "shape" and not d["label"]:
        kinds = [k for k in SHAPES if re.search(rf"\b{k}s?\b", d["noun"] or "", re.I)]
        if len(kinds) == 1:
            d["label"] = kinds[0]
            notes.append(f"label {d['label']} from the noun")
    if d["compare"]:
        d["compare"] = Compare(**d["compare"])
    return MemoryQuery(**d), notes
