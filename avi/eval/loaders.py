"""Benchmark annotation files in their published formats, as :class:`~avi.jobs.spec.JobQuestion` lists.

One loader per benchmark (formats as documented in ``research/anchors.md`` §3 and the cited files):

========================  =====================================================================================
``lvbench``               THUDM/LVBench ``video_info.meta.jsonl``: one JSON object per video per line
                          (``key``, ``video_info``, ``qa`` = [{``uid``, ``question`` with the options inline as
                          ``(A) …`` lines, ``answer``, ``question_type`` (a list), ``time_reference``}]).
``videomme``              Video-MME, either the flat rows of the HF copy read by lmms-eval
                          (``lmms_eval/tasks/videomme/utils.py``: ``video_id, duration, domain, sub_category, url,
                          videoID, question_id, task_type, question, options ["A. …"], answer``) as a JSON list
                          or JSONL, or the nested per-video form of BradyFU/Video-MME
                          ``evaluation/output_test_template.json`` (not valid JSON: trailing commas are accepted).
``longvideobench``        longvideobench/LongVideoBench ``lvb_val.json`` / ``lvb_test_wo_gt.json``
                          (``longvideobench/longvideobench_dataset.py``): a JSON list of ``id, video_path,
                          subtitle_path, question, candidates, correct_choice, duration, duration_group,
                          question_category, starting_timestamp_for_subtitles``; test rows have no ground truth.
``charades``              Charades-STA ``charades_sta_test.txt`` (jiyanggao/TALL: ``VID start end##sentence``),
                          the lmms-eval JSON rows (``lmms_eval/tasks/charades_sta``: ``video``, ``caption``,
                          ``timestamp``) or the dict-of-videos JSON of MCG-NJU/MMN
                          (``mmn/data/datasets/charades.py``: ``{vid: {duration, timestamps, sentences}}``).
========================  =====================================================================================

Every question's ``meta`` has ``benchmark`` and ``video_id`` (the benchmark's id of the video: the
cluster key of the confidence intervals) plus the fields the scorers and reports use. A bad file
(missing, not the format, a line that is not JSON, a record without a needed field) raises
:class:`~avi.errors.InputError` naming the file and the line; a missing *video* file is not an error
here (the runner records such questions as failed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avi.errors import InputError
from avi.eval.charades import load_charades
from avi.eval.longvideobench import load_longvideobench
from avi.eval.lvbench import load_lvbench
from avi.eval.videomme import load_videomme
from avi.jobs.spec import JobQuestion


@dataclass(frozen=True)
class Benchmark:
    """A benchmark ``avi eval`` knows.

    Attributes:
        name: registry key (``lvbench``, ``videomme``, ``longvideobench``, ``charades``).
        title: display name.
        loader: ``loader(annotations, videos_dir, **options) -> list[JobQuestion]``.
        answer_type: ``"choice"`` or ``"interval"``.
        options: keyword options the loader accepts.
        annotation_file: the published annotation file the loader reads.
    """

    name: str
    title: str
    loader: Callable[..., list[JobQuestion]]
    answer_type: str
    options: tuple[str, ...]
    annotation_file: str


BENCHMARKS: dict[str, Benchmark] = {
    "lvbench": Benchmark("lvbench", "LVBench", load_lvbench, "choice", (), "video_info.meta.jsonl"),
    "videomme": Benchmark("videomme", "Video-MME", load_videomme, "choice",
                          ("duration", "with_subtitles", "subtitles_dir"), "videomme.json / output_test_template.json"),
    "longvideobench": Benchmark("longvideobench", "LongVideoBench", load_longvideobench, "choice",
                                ("duration_groups", "with_subtitles", "subtitles_dir"), "lvb_val.json"),
    "charades": Benchmark("charades", "Charades-STA", load_charades, "interval", ("durations",),
                          "charades_sta_test.txt"),
}


def load_benchmark(name: str, annotations: Path, videos_dir: Path, **options: Any) -> list[JobQuestion]:
    """The questions of benchmark ``name`` (a key of :data:`BENCHMARKS`) from its annotation file.

    Args:
        name: ``lvbench``, ``videomme``, ``longvideobench`` or ``charades``.
        annotations: the annotation file in the benchmark's published format.
        videos_dir: the folder of the benchmark's videos (files need not exist yet).
        **options: the benchmark's loader options (``Benchmark.options``); None values are left out.

    Raises:
        InputError: unknown benchmark or option; a bad annotation file.
    """
    bench = BENCHMARKS.get(str(name).strip().lower())
    if bench is None:
        raise InputError(f"unknown benchmark {name!r} (choose from {', '.join(BENCHMARKS)})")
    options = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(options) - set(bench.options))
    if unknown:
        accepted = ", ".join(bench.options) or "none"
        raise InputError(f"{bench.title} has no option {', '.join(unknown)} (options: {accepted})")
    return bench.loader(Path(annotations), Path(videos_dir), **options)
