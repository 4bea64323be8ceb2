"""Benchmarks for ``avi eval``: loaders for the published annotation formats and the official scorers.

* :mod:`avi.eval.loaders`: LVBench, Video-MME, LongVideoBench and Charades-STA annotation files
  as :class:`~avi.jobs.spec.JobQuestion` lists (``BENCHMARKS``, :func:`load_benchmark`).
* :mod:`avi.eval.scoring`: each benchmark's official metric (answer cleaning and denominator
  conventions reproduced) beside a strict mode, per-category tables and 95 % CIs clustered by video
  (:func:`score`, :func:`grade`, :func:`format_report`).
* :mod:`avi.eval.jsonl`: ``avi eval jsonl``, a benchmark written as JSON lines (``bench/README.md``): loader,
  per-type rules and report (:func:`~avi.eval.jsonl.load_jsonl`, :func:`~avi.eval.jsonl.score_jsonl`).
"""

from avi.eval.loaders import BENCHMARKS, Benchmark, load_benchmark
from avi.eval.scoring import EvalReport, format_report, grade, score

__all__ = ["BENCHMARKS", "Benchmark", "EvalReport", "format_report", "grade", "load_benchmark", "score"]
