"""``avi eval --preset paper`` (issue 19, item 4): the AVI paper's settings per benchmark (AVI §4.1, Table 1)."""

from __future__ import annotations

import pytest

from avi.config import Settings
from avi.errors import InputError
from avi.eval.preset import PAPER_PRESETS, apply_paper_preset, preset_banner


@pytest.mark.parametrize("bench, transcript, subtitles", [
    ("lvbench", "off", None), ("videomme", "off", False), ("longvideobench", "subtitles", True),
    ("charades", "off", None)])
def test_paper_preset_per_benchmark(bench, transcript, subtitles):
    base = Settings()
    assert (base.transcript, base.frame_budget) == ("auto", "auto")  # the defaults the preset must change
    options = {"with_subtitles": True} if bench == "longvideobench" else {}
    s, opts, rec = apply_paper_preset(bench, base, options, {})
    assert (s.transcript, s.frame_budget, s.max_iterations) == (transcript, 0, 10)
    assert opts.get("with_subtitles") == subtitles
    assert rec["name"] == "paper" and rec["transcript"] == transcript and "Table 1" in rec["source"]
    text = preset_banner(bench, rec)
    assert f"transcript = {transcript}" in text and "frame_budget = 0" in text and "max_iterations = 10" in text
    assert "The paper reports:" in text


def test_paper_numbers_are_the_papers():
    assert "61.4" in PAPER_PRESETS["lvbench"].reported and "59.8" in PAPER_PRESETS["videomme"].reported
    assert "68.4" in PAPER_PRESETS["longvideobench"].reported and "62.8" in PAPER_PRESETS["longvideobench"].reported
    assert "60.0" in PAPER_PRESETS["charades"].reported


def test_paper_preset_refuses_contradictions():
    with pytest.raises(InputError, match="no setting for 'jsonl'"):
        apply_paper_preset("jsonl", Settings(), {}, {})
    with pytest.raises(InputError, match="transcript"):
        apply_paper_preset("lvbench", Settings(), {}, {"transcript": "asr"})
    with pytest.raises(InputError, match="max_iterations"):
        apply_paper_preset("lvbench", Settings(), {}, {"max_iterations": 20})
    with pytest.raises(InputError, match="without subtitles"):
        apply_paper_preset("videomme", Settings(), {"with_subtitles": True}, {})
    with pytest.raises(InputError, match="5 s clips at 2 fps"):
        apply_paper_preset("lvbench", Settings(fps=1.0), {}, {})
