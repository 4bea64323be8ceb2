"""Benchmarks for ``avi eval``: loaders for the published annotation formats and the official scorers.

* one module per benchmark, holding its loader and its official answer cleaning: :mod:`avi.eval.lvbench`,
  :mod:`avi.eval.videomme`, :mod:`avi.eval.longvideobench`, :mod:`avi.eval.charades`; the annotation-file
  readers they share in :mod:`avi.eval.readers`; the registry (``BENCHMARKS``, :func:`load_benchmark`) in
  :mod:`avi.eval.loaders`.
* :mod:`avi.eval.scoring`: grading in the official mode (each benchmark's cleaning and denominator conventions)
  beside a strict mode, per-category tables (:func:`score`, :func:`grade`, :func:`format_report`); the shared
  statistics (95 % CIs clustered by video) in :mod:`avi.eval.stats`.
* :mod:`avi.eval.jsonl`: ``avi eval jsonl``, a benchmark written as JSON lines (``bench/README.md``): loader and
  per-type rules; its report in :mod:`avi.eval.jsonl_report`.
"""

from avi.eval.loaders import BENCHMARKS, Benchmark, load_benchmark
from avi.eval.scoring import EvalReport, format_report, grade, score

__all__ = ["BENCHMARKS", "Benchmark", "EvalReport", "format_report", "grade", "load_benchmark", "score"]
