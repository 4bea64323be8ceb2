"""The question, parsed once (issue 35): :func:`parse_question` reads the question text at the start of a run into
a :class:`ParsedQuestion`, and everything after reads that record, never the text (the text still goes to the
prompts and to the host's tree search as text).

The predicates are public so that tests and the record share one definition each. Times are seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from avi.video.analysis import COLOUR_SYNONYMS
from avi.video.timecode import clock_times_in, mentions_time, question_ranges

_OPTION_LINE = re.compile(r"(?:^|\n|\s)\(?([A-H])[\.\):]\s+(\S[^\n]*?)(?=\s+\(?[A-H][\.\):]\s|\n|$)")
_FIRST_OPTION = re.compile(r"(?:^|\n|\s)\(?A[\.\):]\s+")
_INTERVAL_QUESTION = re.compile(
    r"\bwhen\b|\bat what time\b|\bwhat time\b|\btime (?:span|range|interval|segment)\b|\binterval\b|"
    r"\bstart and end\b|\bfrom when\b|\bhow long\b.*\b(?:shown|visible|on screen)\b", re.I)
#: "what time does the clock show": a time read off a clock or a display, not a "when" in the video
_CLOCK_READING = re.compile(
    r"(?<!\bat )\bwhat time (?:does|do|did) (?:the |a |his |her |its )?(?:[\w-]+\s+){0,3}?"
    r"(?:clocks?|watch|display|timer|screen)(?:'s\s+display)?(?:\s+[\w-]+){0,3}?\s+"
    r"(?:show|read|say|display|indicate)\b|"
    r"(?<!\bat )\bwhat time is (?:it )?(?:shown |displayed |written )?on (?:the |a |his |her |its )?(?:[\w-]+\s+)?"
    r"(?:clock|watch|display|timer|screen)\b|"
    r"(?<!\bat )\bwhat time (?:is|was) (?:shown|displayed|written|indicated)\b", re.I)
_MULTI_QUESTION = re.compile(
    r"\b(?:select|choose|pick|mark|tick|name)\s+all\b|\ball (?:that|which) (?:apply|are (?:true|correct))\b|"
    r"\ball (?:the )?correct\b|\bmore than one\b|\bone or more\b|\bwhich (?:two|three|four) (?:of|options)\b", re.I)
_ORDER_QUESTION = re.compile(
    r"\bin (?:which|what) order\b|\bwhat order\b|\border (?:in which|of (?:appearance|events))\b|"
    r"\bchronological(?:ly)?\b|\b(?:arrange|sort|put|list|rank)\b[^.?]*\border\b|\bsequence of\b", re.I)
_SEQUENCE_MARK = re.compile(r",|;|->|→|=>|>|\bthen\b", re.I)


def parse_options(question: str) -> dict[str, str]:
    """Multiple-choice options in a question, ``{"A": "text", ...}``: ``A. text``, ``A) text`` or ``(A) text``, on
    their own lines or inline; at least two consecutive letters from A, else ``{}``."""
    opts: dict[str, str] = {}
    for letter, body in _OPTION_LINE.findall(question or ""):
        opts.setdefault(letter, body.strip())
    letters = sorted(opts)
    return opts if len(letters) >= 2 and letters == [chr(ord("A") + i) for i in range(len(letters))] else {}


def question_stem(question: str) -> str:
    """The question without its inline options (everything before option A)."""
    m = _FIRST_OPTION.search(question or "")
    return (question[:m.start()] if m else question).strip()


def answer_type(question: str, options: dict[str, str]) -> str:
    """The answer type a question asks for (issue 5): ``order`` (options, if any, are single items), ``multi``
    (options and "select all" wording), ``choice`` (options), ``interval`` (when / a time span) or ``text``."""
    q = question or ""
    if _ORDER_QUESTION.search(q) and not any(_SEQUENCE_MARK.search(b) for b in options.values()):
        return "order"  # options that are themselves sequences make it a plain choice
    if options:
        return "multi" if _MULTI_QUESTION.search(q) else "choice"
    return "interval" if _INTERVAL_QUESTION.search(q) and not _CLOCK_READING.search(q) else "text"


_AUXILIARY = r"(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should)\b"
_OPENS_YES_NO = re.compile(r"^\s*" + _AUXILIARY, re.I)
_YES_NO = re.compile(r"^\s*(?:(?!(?:what|which|who|whom|whose|where|when|why|how)\b)[^,?]{1,80},\s*)?" + _AUXILIARY,
                     re.I)  # the verb first, or after a leading phrase and a comma
_ALTERNATIVE = re.compile(r"\bor\b(?!\s+not\b)[^,;]*\?\s*$", re.I)
_WORDS_QUESTION = re.compile(
    r"\b(?:say|says|said|saying|spoken|speak|speaks|mention|mentions|mentioned|word|words|phrase|text|written|"
    r"write|writes|read|reads|title|caption|label|name|named|called|code|displayed|letters?)\b", re.I)
_SPEECH_QUESTION = re.compile(
    r"\b(?:say|says|said|saying|spoken|speak|speaks|speaker|mention|mentions|mentioned|narrator|narration|"
    r"voice|talks?|tells?|told|announces?|announced|according to the (?:lecturer|host|commentator|speaker))\b", re.I)
_TEXT_HOLDER = re.compile(r"\b(?:sign|number on|shown on)\b", re.I)
_TEXT_THING = re.compile(
    r"\b(?:signs?|signboards?|slides?|lists?|brands?|logos?|printed|print|posters?|banners?|billboards?|placards?|"
    r"plates?|scoreboards?|score|clocks?|jerseys?|headlines?|subtitles?|menus?|digits?|"
    r"(?:what|which) (?:number|year|date|price))\b", re.I)
_QUOTED = re.compile(r"[\"\u201c\u2018][^\"\u201d\u2019]{2,}[\"\u201d\u2019]|(?:^|\s)'[^']{2,}'(?=[\s?.,!]|$)")
_CAPITALS = re.compile(r"\b[A-Z]{2,}\b")


def is_yes_no(question: str, *, after_phrase: bool = True) -> bool:
    """Whether a question is a yes/no question: it opens with an auxiliary verb, or (``after_phrase``) does so after
    a leading phrase and a comma ("At 1:00, is anyone ..."), and does not end in alternatives ("... left or
    right?" asks which)."""
    pattern = _YES_NO if after_phrase else _OPENS_YES_NO
    return bool(pattern.match(question or "")) and not _ALTERNATIVE.search(question or "")


def about_speech(question: str) -> bool:
    """Whether a question asks what was said (the transcript is then the evidence to read first)."""
    return bool(_SPEECH_QUESTION.search(question or ""))


def about_words(question: str) -> bool:
    """Whether a question is about words shown or said (text, a title, a name, what somebody says): OCR and the
    transcript measure those on every profile."""
    return bool(_WORDS_QUESTION.search(question or ""))


def asks_for_text(question: str) -> bool:
    """Whether a free-text question asks for words (on-screen text, a name, something said) rather than a count,
    a yes/no or a description."""
    q = question or ""
    return (about_words(q) or bool(_TEXT_HOLDER.search(q))) and not re.search(r"\bhow (?:many|much|long)\b", q, re.I) \
        and not is_yes_no(q)


def about_text(question: str) -> bool:
    """Whether reading on-screen text may answer a question: it is about words shown or said
    (:func:`about_words`, :func:`about_speech`), names a thing that carries text (a sign, a slide, a list, a brand,
    a number plate, a clock), asks a clock's reading ("what time does the watch show"), quotes a phrase, or spells a
    word in capitals (a brand or a sign's word). A question
    about none of these (a colour, a count, a motion, a place) gets a smaller OCR frame budget (issue 38)."""
    q = question or ""
    return about_words(q) or about_speech(q) or bool(_TEXT_HOLDER.search(q) or _TEXT_THING.search(q)
                                                     or _QUOTED.search(q) or _CAPITALS.search(q)
                                                     or _CLOCK_READING.search(q))


COLOUR_WORDS = frozenset(
    "red orange yellow green cyan blue purple pink black white gray grey brown beige silver gold violet navy "
    "maroon turquoise teal magenta crimson scarlet".split())


_ANSWER_FORM = (
    ("date", re.compile(r"\b(?:what|which)\s+(?:\w+\s+)?date\b|\bdate\b[^?]{0,40}\b(?:written|shown|printed|"
                        r"displayed|on (?:the )?screen)\b", re.I)),
    ("year", re.compile(r"\b(?:what|which)\s+year\b", re.I)),
    ("time", _CLOCK_READING),
    ("number", re.compile(r"\b(?:what|which)\s+(?:\w+\s+){0,2}number\b|\bnumber\s+(?:on|of|written|shown)\b",
                          re.I)),
)


def answer_form(question: str) -> str | None:
    """The form of the words a question asks to be read: ``date`` ("what date is written ..."), ``year`` ("in which
    year ..."), ``number`` ("what number is on ..."), or None (any text): the expected answer type of a factoid
    question (Li & Roth, COLING 2002: question classes such as NUM:date), read from the question's own words; ``time``
    for a clock's reading ("what time does the clock show", which :func:`answer_type` reads as text, not "when")."""
    for form, rx in _ANSWER_FORM:
        if rx.search(question or ""):
            return form
    return None


def asks_colour(question: str) -> bool:
    """Whether a question asks for a colour ("what colour is ...", "which color are ...")."""
    return bool(re.search(r"\b(?:what|which)\s+colou?rs?\b|\bcolou?r\s+of\s+the\b", question or "", re.I))


def colours_named(text: str) -> set[str]:
    """The measured colour names a text names: "yellow-orange" -> {"yellow", "orange"}, "dark grey" -> {"gray"}."""
    found = re.findall(r"[a-z]+", (text or "").lower())
    return {COLOUR_SYNONYMS.get(w, w) for w in found if w in COLOUR_WORDS or w in COLOUR_SYNONYMS}


def colour_options(question: str, options: dict[str, str]) -> dict[str, set[str]] | None:
    """For a colour question whose every option names a colour, each option's measured colour names; else None."""
    if not asks_colour(question) or len(options) < 2:
        return None
    named = {k: colours_named(v) for k, v in options.items()}
    return named if all(named.values()) else None


_WRITTEN = re.compile(r"\b(?:signs?|signboards?|captions?|titles?|banners?|logos?|writing|text|words|posters?|"
                      r"billboards?|placards?|subtitles?|headlines?)\b", re.I)

_COUNT_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}
_COUNT_WORDS.update({"none": 0, "no": 0, "no cuts": 0, "no cut": 0, "a single": 1, "single": 1})
_MOST = re.compile(r"\b(?:largest|greatest|highest|biggest|maximum|max|most)\s+(?:number|count)\b|"
                   r"\bhow\s+many\b.*\b(?:at\s+(?:the\s+)?most|at\s+(?:the\s+)?same\s+time|at\s+once|"
                   r"simultaneously)\b", re.I)
def asks_count(question: str) -> bool:
    """Whether the question asks for a number of things ("how many ...", "the largest number of ...")."""
    return bool(re.search(r"\bhow\s+many\b|\b(?:number|count)\s+of\b", question or "", re.I))


def asks_most(question: str) -> bool:
    """Whether a count question asks for the largest number seen at one time ("how many at most")."""
    return bool(_MOST.search(question or ""))


def option_count(text: str) -> int | None:
    """The number an option states ("3", "three", "none", "one cut"), or None when it states no single number."""
    t = (text or "").strip().lower().rstrip(".")
    nums = re.findall(r"\b\d+\b", t)
    if len(nums) == 1:
        return int(nums[0])
    if nums:
        return None
    found = [w for w in sorted(_COUNT_WORDS, key=len, reverse=True) if re.search(rf"\b{w}\b", t)]
    return _COUNT_WORDS[found[0]] if found else None


_CUT_NOUN = (r"(?:hard\s+|camera\s+)?(?:cuts?|shot\s+changes?|scene\s+changes?|changes?\s+of\s+(?:camera\s+)?"
             r"(?:shot|view|scene)s?)")
_CUT_COUNT = re.compile(rf"\bhow\s+many\s+{_CUT_NOUN}\b(?!\s+(?:to|back|away)\b)", re.I)
_CUT_ANY = re.compile(r"\bcuts?\s+to\s+(?:a\s+|an\s+)?(?:different|another|other|new)\b|\b(?:any|a)\s+(?:hard\s+)?"
                      r"(?:cuts?|shot\s+changes?|scene\s+changes?)\b|\bchanges?\s+(?:the\s+)?camera\s+(?:view|shot)\b",
                      re.I)
_ONE_SHOT = re.compile(r"\b(?:one|a\s+single|single)\s+(?:continuous\s+|uninterrupted\s+)?(?:shot|take)\b|"
                       r"\b(?:continuous|uninterrupted)\s+(?:shot|take)\b", re.I)


def cut_question(question: str) -> str | None:
    """What a question asks about the hard cuts, if that is all it asks: ``count`` ("how many cuts"; not "how many
    times does it cut to the crowd"), for yes/no questions ``any`` ("does it cut to a different scene?") or
    ``none`` ("is it one continuous shot?"); else None."""
    q = question or ""
    if _CUT_COUNT.search(q):
        return "count"
    if not is_yes_no(q):
        return None
    if _ONE_SHOT.search(q):
        return "none"
    return "any" if _CUT_ANY.search(q) else None


def about_shot(question: str) -> bool:
    """Whether a question names a shot, a close-up, a camera view or a scene (its interval is a run of shots)."""
    return bool(re.search(r"\b(?:shots?|close-?ups?|camera\s+views?|scenes?)\b", question or "", re.I))


_LEAD = re.compile(
    r"^\s*(?:during\s+which\s+time\s+span|at\s+what\s+time|in\s+which\s+part\s+of\s+the\s+video|what\s+time|"
    r"how\s+many|how\s+much|how\s+long|how\s+often|when|what|which|who|whom|whose|where|why|how)\b\s*"
    r"(?:is|are|was|were|does|do|did|can|could|has|have)?\s*", re.I)
_WHOLE = re.compile(
    r"\b(?:whole|entire)\s+video\b|\bthroughout\b|\bwhat\s+is\s+(?:the|this)\s+video\s+about\b|\bsummar|"
    r"\bin\s+what\s+order\b|\border\s+(?:of|in\s+which)\b|\bsequence\b|\bhow\s+often\b|\bhow\s+many\s+times\b|"
    r"\bmost\s+of\s+the\s+video\b|\boverall\b", re.I)
_ORDINAL = re.compile(r"\b(?P<before>after|before|since|until|following|preceding)?\s*\bthe\s+"
                      r"(?P<which>first|last|final|opening|closing)\s+(?P<noun>[a-z]+)\b", re.I)
NOT_EVENTS = frozenset(
    "second seconds minute minutes hour hours frame frames moment moments half part parts quarter third scene "
    "scenes shot shots cut cuts clip clips time times few couple video segment segments section sections word "
    "words letter letters line lines sentence sentences thing things one ones few".split())


def search_query(question: str, max_chars: int = 200) -> str:
    """The words worth searching the captions with: the stem without options, leading question words and question
    mark ("During which time span is the woman on the lawn?" -> "the woman on the lawn"), ``max_chars`` at most."""
    stem = _LEAD.sub("", " ".join(question_stem(question or "").split()), count=1).strip().rstrip("?").strip()
    return stem[:max_chars].strip()


def whole_video_question(question: str) -> bool:
    """Whether a question is about the whole video (what it is about, the order of events, how often)."""
    return bool(_WHOLE.search(question_stem(question or "")))


def ordinal_phrases(question: str) -> tuple[tuple[str, str, str, str], ...]:
    """``(phrase, which, noun, side)`` of each ordinal naming an event ("after the first goal" -> ("after the first
    goal", "first", "goal", "after")); nouns in :data:`NOT_EVENTS` are left out; all lower case but the phrase."""
    return tuple((m.group(0).strip(), m.group("which").lower(), m.group("noun").lower(),
                  (m.group("before") or "").lower()) for m in _ORDINAL.finditer(question or "")
                 if m.group("noun").lower() not in NOT_EVENTS)


def normalise(text: str) -> str:
    """Lower case, punctuation removed, single spaces (for comparing answers with evidence)."""
    return " ".join(re.sub(r"[^\w\s]", " ", str(text).lower()).split())


@dataclass(frozen=True)
class ParsedQuestion:
    """One question, read once (:func:`parse_question`); each field is the predicate or reader of the same name
    in this module (``cut``: :func:`cut_question`, ``whole_video``:
    :func:`whole_video_question`, ``ordinals``: :func:`ordinal_phrases`) or:

    * ``text``, ``stem`` (without the options), ``options`` ``{letter: text}``, ``options_text`` (the
      ``Options: A. …`` line), ``kind`` (the ``answer_type`` setting, or :func:`answer_type`);
    * ``opens_with_verb``: :func:`is_yes_no` at the very start;
    * word sets, lower case: ``words`` / ``stem_words`` (``[a-z]+``; ``stem_tokens`` in order), ``terms`` /
      ``stem_terms`` (:func:`normalise`);
    * ``clock_times`` ``(written, seconds)``, ``named_ranges`` ``(phrase, [start_s, end_s])`` of
      its time words (given the video's length), ``mentions_time``;
    * per option: ``option_numbers`` (:func:`option_count`), ``option_yes_no``, ``option_things`` (no article,
      lower case), ``colour_options`` (each option's colour names, for a colour question whose every option names
      one), ``written_options`` (those naming something written: a sign, a caption);
    * ``about_text``: :func:`about_text` of the question, or an option names something written.
    """

    text: str
    stem: str = ""
    options: dict = field(default_factory=dict)
    options_text: str = ""
    kind: str = "text"
    opens_with_verb: bool = False
    words: frozenset = frozenset()
    stem_words: frozenset = frozenset()
    stem_tokens: tuple = ()
    terms: frozenset = frozenset()
    stem_terms: frozenset = frozenset()
    clock_times: tuple = ()
    named_ranges: tuple = ()
    mentions_time: bool = False
    about_words: bool = False
    about_speech: bool = False
    asks_for_text: bool = False
    about_text: bool = False
    colour_options: dict | None = None
    asks_count: bool = False
    asks_most: bool = False
    cut: str | None = None
    about_shot: bool = False
    whole_video: bool = False
    search_query: str = ""
    ordinals: tuple = ()
    option_numbers: dict = field(default_factory=dict)
    option_yes_no: dict = field(default_factory=dict)
    option_things: dict = field(default_factory=dict)
    written_options: frozenset = frozenset()


def parse_question(text: str, duration_s: float | None = None, answer_kind: str = "auto") -> ParsedQuestion:
    """Read ``text`` (the question with its options) once into a :class:`ParsedQuestion`; ``duration_s``: the
    video's length (None: no time-word ranges); ``answer_kind``: the ``answer_type`` setting (``auto``: inferred)."""
    text = text or ""
    options = parse_options(text)
    stem = question_stem(text)
    yes_no = [re.match(r"\s*(yes|no)\b", v, re.I) for v in options.values()]
    written = frozenset(k for k, v in options.items() if _WRITTEN.search(v))
    return ParsedQuestion(
        text=text, stem=stem, options=options,
        options_text=("Options: " + "; ".join(f"{k}. {v}" for k, v in options.items())) if options else "",
        kind=answer_type(text, options) if answer_kind == "auto" else answer_kind,
        opens_with_verb=is_yes_no(text, after_phrase=False),
        words=frozenset(re.findall(r"[a-z]+", text.lower())), stem_words=frozenset(re.findall(r"[a-z]+", stem.lower())),
        stem_tokens=tuple(re.findall(r"[a-z]+", stem.lower())), terms=frozenset(normalise(text).split()),
        stem_terms=frozenset(normalise(stem).split()),
        clock_times=tuple(clock_times_in(text)),
        named_ranges=tuple(question_ranges(text, duration_s)) if duration_s is not None else (),
        mentions_time=mentions_time(text), about_words=about_words(text), about_speech=about_speech(text),
        asks_for_text=asks_for_text(text), about_text=about_text(text) or bool(written),
        colour_options=colour_options(text, options),
        asks_count=asks_count(text),
        asks_most=asks_most(text),
        cut=cut_question(text), about_shot=about_shot(text),
        whole_video=whole_video_question(text), search_query=search_query(text),
        ordinals=ordinal_phrases(text),
        option_numbers={k: option_count(v) for k, v in options.items()},
        option_yes_no={k: m.group(1).lower() if m else None for k, m in zip(options, yes_no)},
        option_things={k: re.sub(r"^(?:an?|the)\s+", "", v.strip().lower()).rstrip(".") for k, v in options.items()},
        written_options=written)
