"""One question of a batch or benchmark job: what to ask, about which video, and (for benchmarks) the truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

AnswerType = Literal["auto", "choice", "multi", "interval", "order", "text"]


class JobQuestion(BaseModel):
    """A question the runner answers.

    Attributes:
        qid: identifier, unique within the job (a benchmark's uid; the results file's resume key).
        video: path of the video file.
        question: the text the agent gets; multiple-choice options are inline, one per line, as ``A. …``.
        answer_type: the agent's answer type (``auto`` = inferred from the question).
        options: the option texts without their letters, in order (A, B, …), for reports; None if not choice.
        subtitles: a subtitle file (.srt/.vtt/.json) for the video, or None (the index finds a sidecar file).
        gt: ground truth for scoring: an option letter (``"B"``), a list of letters (multi), or
            ``[start_s, end_s]`` (interval, seconds); None when unknown (batch jobs).
        meta: fields the scorers and reports use (benchmark categories, duration group, the video's id, …).
        videos: for a question over several videos (issue 21), all of them in order (``video`` is the first);
            None for a question about one video.
    """

    model_config = ConfigDict(extra="forbid")

    qid: str = Field(min_length=1)
    video: Path
    question: str = Field(min_length=1)
    answer_type: AnswerType = "auto"
    options: list[str] | None = None
    subtitles: Path | None = None
    gt: Any = None
    meta: dict[str, Any] = Field(default_factory=dict)
    videos: list[Path] | None = None

    @field_validator("qid", mode="before")
    @classmethod
    def _qid_str(cls, v):
        return str(v) if isinstance(v, int) else v

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the question is empty")
        return v


def format_choice_question(question: str, options: list[str]) -> str:
    """``question`` followed by the options as ``A. …`` lines (the form the agent's choice parser expects)."""
    letters = "ABCDEFGHIJ"
    if len(options) > len(letters):
        raise ValueError(f"at most {len(letters)} options, got {len(options)}")
    lines = [question.strip()] + [f"{letters[i]}. {str(o).strip()}" for i, o in enumerate(options)]
    return "\n".join(lines)
