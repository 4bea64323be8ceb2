"""Unit tests for avi/video/timecode.py."""

from __future__ import annotations

import pytest

from avi.video.timecode import clock_times_in, fmt_range, fmt_time, parse_time


@pytest.mark.parametrize("value, seconds", [
    (12, 12.0),
    (12.5, 12.5),
    (0, 0.0),
    ("12", 12.0),
    ("12.5s", 12.5),
    (" 7 seconds ", 7.0),
    ("3 sec", 3.0),
    ("0:40", 40.0),
    ("1:05", 65.0),
    ("10:00", 600.0),
    ("0:07.5", 7.5),
    ("1:02:03", 3723.0),
    ("00:01:15.5", 75.5),
])
def test_parse_time_accepts(value, seconds):
    out = parse_time(value)
    assert isinstance(out, float)
    assert out == pytest.approx(seconds)


@pytest.mark.parametrize("value", [True, False, None, "", "abc", "12 minutes", "1:2:3:4", "1:234", [1], {"t": 1}])
def test_parse_time_rejects(value):
    with pytest.raises(ValueError, match="not a time"):
        parse_time(value)


def test_fmt_time_and_range():
    assert fmt_time(12.46) == "12.5s"
    assert fmt_range(40, 45) == "[40.0s–45.0s]"
    assert fmt_range(0.26, 1234.0) == "[0.3s–1234.0s]"


def test_clock_times_in_finds_clock_times():
    assert clock_times_in("What happens at 0:40 and 1:05?") == [("0:40", 40.0), ("1:05", 65.0)]


def test_clock_times_in_hours():
    assert clock_times_in("from 1:02:03 on") == [("1:02:03", 3723.0)]


def test_clock_times_in_ignores_decimals_and_malformed():
    assert clock_times_in("speed 3.5 and code 12:345 and ratio 1:2") == []


def test_clock_times_in_empty():
    assert clock_times_in("") == []
    assert clock_times_in(None) == []


def test_spans():
    from avi.video.spans import clip_span, coverage_iou, merge_spans, span_length, span_overlap, temporal_iou

    assert merge_spans([[4, 6], [0, 5], [6.0005, 8], [10, 12]]) == [[0.0, 8.0], [10.0, 12.0]]
    assert merge_spans([[0, 1], [1.5, 2]], gap_s=1.0) == [[0.0, 2.0]]
    assert span_length([3, 1]) == 0.0 and span_overlap([0, 4], [3, 9]) == 1.0 and span_overlap([0, 1], [2, 3]) == 0.0
    assert coverage_iou([[0, 2], [1, 4]], [[2, 6]]) == 2 / 6 and coverage_iou([], []) == 1.0
    assert temporal_iou([0, 4], [2, 6]) == 2 / 6 and temporal_iou([0, 1], [2, 3]) == 0.0
    assert clip_span([12, -1], 10.0) == [0.0, 10.0] and clip_span([3, 1], None) == [1.0, 3.0]
