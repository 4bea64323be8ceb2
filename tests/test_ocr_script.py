"""Latin reads for Latin-script questions (issue 36, item 6): the question's script, the recogniser's character
mask, best-path decoding restricted to it, and the real rapidocr engine reading in the question's script."""

from __future__ import annotations

import numpy as np
import pytest

from avi.backends.ocr_script import LATIN, charset_mask, in_script, is_latin_text, question_script, restrict_preds


@pytest.mark.parametrize("question", [
    "What word is on the roof sign of the car?",
    "Which café name is written above the door?",  # accented Latin letters are Latin
    "Was steht auf dem Schild über der Tür?",
    "How many characters are printed on the box?",  # "characters" alone names no script
])
def test_latin_questions_read_in_latin(question):
    assert question_script(question) == LATIN


@pytest.mark.parametrize("question", [
    "看板には何と書いてありますか？",
    "What does the sign 東京駅 say?",  # quotes text in another script
    "What do the Chinese characters on the banner say?",  # asks for another script
    "Which Cyrillic word is on the truck?",
    "Что написано на вывеске?",
    "",
    "1 + 2 = ?",  # no letters: no script to go by
])
def test_other_questions_read_every_script(question):
    assert question_script(question) is None


def test_latin_set():
    assert is_latin_text("TAXI 24/7 — Café €5, Straße, Łódź, Ạ, EXIT →, 20 °C, BRAND™")
    for text in ("東", "、", "Ａ", "я", "α", "あ", "▲"):  # CJK, CJK punctuation, full-width A, Cyrillic, Greek,
        # kana, a geometric shape
        assert not is_latin_text(text), text
    with pytest.raises(ValueError, match="unknown OCR script"):
        in_script("A", "klingon")


def test_mask_keeps_the_blank_and_latin_classes():
    characters = ["blank", "A", "東", "1", "é", "、", " "]
    assert charset_mask(characters, LATIN).tolist() == [True, True, False, True, True, False, True]
    with pytest.raises(ValueError, match="unknown OCR script"):
        charset_mask(characters, "cjk")


def test_restricted_best_path_takes_the_best_allowed_class():
    characters = ["blank", "X", "東", "I"]
    preds = np.array([[[0.05, 0.30, 0.60, 0.05],   # a CJK glyph is the best class; X the best Latin one
                       [0.90, 0.04, 0.03, 0.03],   # blank
                       [0.10, 0.02, 0.08, 0.80]]], dtype=np.float32)
    out = restrict_preds(preds, charset_mask(characters, LATIN))
    assert out.shape == preds.shape and out.dtype == preds.dtype
    assert [characters[i] for i in out[0].argmax(axis=1)] == ["X", "blank", "I"]
    assert out[0, 0].max() == pytest.approx(0.30)  # not renormalised: the read's score falls
    assert preds[0, 0, 2] == pytest.approx(0.60)  # the input is left as it was
    with pytest.raises(ValueError, match="4 output classes but a mask of 3"):
        restrict_preds(preds, np.ones(3, dtype=bool))


# ----------------------------------------------------------------- the real engine


@pytest.fixture(scope="module")
def ocr(session_backends):
    from avi.backends.ocr import RapidOcrEngine

    engine = getattr(session_backends.ocr, "engine", session_backends.ocr)  # the engine inside frame reuse
    if not isinstance(engine, RapidOcrEngine):
        pytest.skip("the cpu profile's rapidocr engine is not configured")
    return engine


def test_latin_reads_replace_a_glyph_read_off_texture(ocr, tmp_path):
    """box.mp4 at 4.27 s: read in every script, the best path over the biscuit box's CAMPRODON is a CJK glyph
    (0.88) and the word is not read; read in Latin script, the same boxes give the word's Latin letters and no
    glyph. The frame is decoded from opencv-doc's box.mp4.gz at test time."""
    from avi.video.decode import VideoReader, probe
    from tests.test_ocr_passes import _box_video

    frame = VideoReader(probe(_box_video(tmp_path)), 1280).frames_at([4.27])[0]
    every = ocr.read(frame)
    assert any(not is_latin_text(ln.text) for ln in every), [ln.text for ln in every]
    assert not any("PRODON" in ln.text for ln in every)
    latin = ocr.read(frame, script=LATIN)
    assert latin and all(is_latin_text(ln.text) for ln in latin)
    assert any("PRODON" in ln.text for ln in latin), [ln.text for ln in latin]
    assert [ln.text for ln in ocr.read(frame)] == [ln.text for ln in every]  # the next read is in every script


def test_latin_reads_leave_latin_text_as_it_was(ocr):
    """A rendered sign in Latin letters reads the same with and without the script (the restriction only acts
    where the best character was not Latin)."""
    from PIL import Image, ImageDraw, ImageFont

    from avi.video.decode import Frame

    img = Image.new("RGB", (1280, 720), (0, 50, 70))
    ImageDraw.Draw(img).text((418, 100), "EXIT 42", fill=(200, 215, 225), font=ImageFont.load_default(size=40))
    frame = Frame(1.0, np.asarray(img))
    every, latin = ocr.read(frame), ocr.read(frame, script=LATIN)
    assert [(ln.text, ln.box) for ln in latin] == [(ln.text, ln.box) for ln in every] == [
        ("EXIT 42", every[0].box)]
    assert latin[0].score == pytest.approx(every[0].score)
    with pytest.raises(ValueError, match="unknown OCR script"):
        ocr.read(frame, script="klingon")
