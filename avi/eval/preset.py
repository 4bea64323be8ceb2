"""``avi eval --preset paper``: the AVI paper's evaluation settings per benchmark (AVI §4.1, Table 1).

What the paper fixes (AVI §4.1 "Implementation details"): at most 10 iterations per question, 5 s clips, frames
at 2 fps, ``top-k = 16`` in clip_retrieve, ``max_frames = 64`` in frame_analysis; no frame budget is mentioned,
so none is set. Table 1 reports Video-MME "Long (w/o sub.)", so Video-MME runs without subtitles and without
speech recognition; LVBench and Charades-STA have no subtitle setting, so they run without a transcript too.
LongVideoBench's own setting interleaves the subtitles with the frames (the paper does not say otherwise), so it
gets its subtitle files and no speech recognition. The clip length and fps are this project's defaults already
and are part of the index key, so the preset only checks them (changing them would rebuild every index). The
paper's agent delivers its Review answer: ``answer_rules = none`` (no host rule changes it; the answer is still
read for its type), and every host step that is not in Algorithm 1 is off (:data:`avi.config_agent.HOST_STEPS`:
the memory route, the host search, Perceive first, places from time words, the gates, the extraction pass, the OCR
frame cap and script choice); the job records which (``host_steps_off``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from avi.config_agent import paper_agent_overrides
from avi.errors import InputError

PAPER_MAX_ITERATIONS = 10
"""AVI §4.1: "a maximum of 10 iterations per question"."""


@dataclass(frozen=True)
class PaperPreset:
    """The paper's setting for one benchmark.

    Attributes:
        transcript: the ``transcript`` setting (``off``: no speech at all; ``subtitles``: subtitle files only).
        with_subtitles: the loader's subtitle option (None: the benchmark has none).
        frame_budget: frames per question (0 = no budget).
        max_iterations: agent iterations before a forced answer.
        reported: what AVI's Table 1 (and Table 2) report for this benchmark.
    """

    transcript: str
    with_subtitles: bool | None
    frame_budget: int
    max_iterations: int
    reported: str


PAPER_PRESETS: dict[str, PaperPreset] = {
    "lvbench": PaperPreset("off", None, 0, PAPER_MAX_ITERATIONS,
                           "LVBench overall accuracy 61.4 % (Table 1); per category ER 62.7, EU 57.3, KIR 71.3, "
                           "TG 59.7, Rea 56.2, Sum 66.0 (Table 2); 1,549 questions, 103 videos"),
    "videomme": PaperPreset("off", False, 0, PAPER_MAX_ITERATIONS,
                            "Video-MME Long without subtitles: 59.8 % (Table 1); 900 questions, 300 videos"),
    "longvideobench": PaperPreset("subtitles", True, 0, PAPER_MAX_ITERATIONS,
                                  "LongVideoBench validation overall 68.4 %, long subset (duration group 3600) "
                                  "62.8 % (Table 1); 1,337 questions overall, 566 in the long subset"),
    "charades": PaperPreset("off", None, 0, PAPER_MAX_ITERATIONS,
                            "Charades-STA mIoU 60.0 (Table 1); 3,720 queries, 1,336 videos"),
}
"""Benchmark (``avi eval`` subcommand) -> the paper's setting."""


def apply_paper_preset(bench: str, settings, options: dict, explicit: dict) -> tuple[object, dict, dict]:
    """The settings and loader options of ``bench`` under the paper's preset.

    Args:
        bench: ``lvbench``, ``videomme``, ``longvideobench`` or ``charades``.
        settings: the :class:`avi.config.Settings` from the flags.
        options: the loader options from the flags (``with_subtitles`` is replaced where the benchmark has it).
        explicit: settings given on the command line (``transcript``, ``max_iterations``, ``answer_rules``) that
            the preset must not silently override.

    Returns:
        ``(settings, options, record)``: a copy of the settings with ``transcript``, ``frame_budget``,
        ``max_iterations`` and ``answer_rules`` (``none``) set, the options, and the preset as stored in the job
        (``name``, the values, ``reported``, ``source``).

    Raises:
        InputError: the benchmark has no paper setting (``jsonl``), a flag contradicts the preset (e.g.
            ``--transcript asr``, ``--with-subtitles`` for Video-MME, ``--answer-rules all``), or the clip
            length or fps differ from the paper's 5 s and 2 fps.
    """
    preset = PAPER_PRESETS.get(bench)
    if preset is None:
        raise InputError(f"--preset paper: the AVI paper has no setting for '{bench}' (only "
                         f"{', '.join(PAPER_PRESETS)})")
    want = {"transcript": preset.transcript, "max_iterations": preset.max_iterations, "answer_rules": "none"}
    for key, value in explicit.items():
        if value is not None and key in want and value != want[key]:
            raise InputError(f"--preset paper sets {key} = {want[key]!r} for {bench}; drop the flag giving {value!r}")
    if preset.with_subtitles is not None:
        given = options.get("with_subtitles")
        if bench == "videomme" and given:
            raise InputError("--preset paper runs Video-MME without subtitles (the paper's 'Long (w/o sub.)'); "
                             "drop --with-subtitles")
        if bench == "longvideobench" and given is False:
            raise InputError("--preset paper gives LongVideoBench its subtitles (the benchmark's setting); "
                             "drop --no-subtitles")
        options = {**options, "with_subtitles": preset.with_subtitles}
    if float(settings.clip_seconds) != 5.0 or float(settings.fps) != 2.0:
        raise InputError(f"--preset paper needs 5 s clips at 2 fps (AVI §4.1); these settings have "
                         f"clip_seconds = {settings.clip_seconds:g}, fps = {settings.fps:g}")
    off = paper_agent_overrides()
    settings = settings.model_copy(update={"transcript": preset.transcript, "frame_budget": preset.frame_budget,
                                           "max_iterations": preset.max_iterations, **off})
    record = {"name": "paper", **asdict(preset), "clip_seconds": 5.0, "fps": 2.0, "answer_rules": "none",
              "host_steps_off": off,
              "source": "AVI arXiv 2511.14446 §4.1 and Table 1 (avi/eval/preset.py)"}
    return settings, options, record


def preset_banner(bench: str, record: dict) -> str:
    """The lines printed at the start of a ``--preset paper`` run."""
    return (f"avi eval {bench} --preset paper (AVI §4.1, Table 1): transcript = {record['transcript']}, "
            f"frame_budget = {record['frame_budget']} (no budget), max_iterations = {record['max_iterations']}, "
            f"clips {record['clip_seconds']:g} s at {record['fps']:g} fps, answer_rules = "
            f"{record.get('answer_rules', 'none')} (the Review answer is delivered), host steps off: "
            f"{', '.join(record.get('host_steps_off') or {})}"
            + ("" if record["with_subtitles"] is None else f", subtitles {'on' if record['with_subtitles'] else 'off'}")
            + f".\nThe paper reports: {record['reported']}.")
