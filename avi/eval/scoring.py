"""Benchmark scores of a results file: each benchmark's official metric, a strict mode, per-category tables.

Two modes are always reported:

``official``
    The benchmark's own scorer, reproduced with its answer cleaning and its denominator, applied to the
    raw answer text (``record["answer"]``) of the *answered* questions (records with ``status == "ok"``;
    the submission file a benchmark's scorer would get). Failed and missing questions are not in it.

    * LVBench (THUDM/LVBench ``lvbench/metrics/compute_accuracy.py``): the text is cleaned by
      :func:`polish_answer` (``lvbench/utils/answer_util.py``) and compared exactly with the answer letter;
      accuracy = right / uids in the answer file, so unanswered uids leave the denominator. A question
      counts in each of its ``question_type`` categories.
    * Video-MME (BradyFU/Video-MME ``evaluation/eval_your_results.py``, commit 4e7566d): the letter is
      :func:`extract_characters_regex` (the *first* capital A–D after removing answer prefixes: "Based on …"
      reads as B); accuracy = correct / questions with a non-empty extraction.
    * LongVideoBench (lmms-eval ``lmms_eval/tasks/longvideobench/utils.py``): :func:`parse_multi_choice_response`;
      a response it cannot parse gets a *random* option ("same as the original LongVideoBench paper"),
      made reproducible here by ``random.Random(f"{seed}:{qid}")`` (``seed`` in the report, default 0);
      accuracy over the answered questions with ground truth.
    * Charades-STA (lmms-eval ``lmms_eval/tasks/charades_sta/utils.py``): the span is :func:`extract_time`
      of the text, IoU by :func:`temporal_iou`; an unparseable answer has IoU 0 and stays in the
      denominator; R@1 IoU≥0.3/0.5/0.7 and mIoU (×100) over the answered queries.

``strict``
    Every question of the annotation that has ground truth counts; avi's structured answer is used
    (``record["choice"]`` / ``record["interval"]``); a missing record, a failed question or an empty
    structured field is wrong (IoU 0).

For Charades-STA both modes clip ground truth and prediction to ``[0, duration]`` when the duration is
known (``question.meta["duration"]``, else ``record["duration_s"]``), as the dataset author advises for
labels past the end of the video (gsig/charades-algorithms #5); lmms-eval does not clip.

Intervals: 95 % confidence intervals use the clustered standard error of lmms-eval
(``lmms_eval/api/metrics.py:clustered_stderr``; Miller 2024, "Adding Error Bars to Evals", eq. 4) with the
video as the cluster (``question.meta["video_id"]``)::

    s̄ = mean(s_i),  SE² = Var(s)/n + (1/n²) Σ_c [ (Σ_{i∈c} (s_i − s̄))² − Σ_{i∈c} (s_i − s̄)² ]

(``Var`` with n − 1; the second term adds the within-video covariances). CI = value ± 1.96·SE, clipped
to [0, 100]; none when n < 2.

Input records are the results file's lines: dicts with ``qid``, ``status`` (``"ok"`` or ``"failed"``),
``answer`` (raw text or None), ``choice`` (letter or None), ``choices``, ``interval`` (``[s, e]`` seconds
or None), ``error``; a question without a record is *missing*.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from avi.eval.charades import extract_time
from avi.eval.longvideobench import lvb_parse
from avi.eval.lvbench import LVBENCH_ORDER, polish_answer
from avi.eval.stats import (
    CI_NOTE,
    Score,
    record_status,
    records_by_qid,
    score_values,
    text_grid,
)
from avi.eval.videomme import VIDEOMME_DOMAINS, VIDEOMME_TASKS, extract_characters_regex
from avi.jobs.spec import JobQuestion
from avi.video.spans import clip_span, temporal_iou

DEFAULT_SEED = 0
"""Seed of LongVideoBench's random choice for unparseable answers (stated in every report)."""

MODES = ("official", "strict")
IOU_THRESHOLDS = (0.3, 0.5, 0.7)
GROUNDING_METRICS = ("R@0.3", "R@0.5", "R@0.7", "mIoU")

TITLES = {"lvbench": "LVBench", "videomme": "Video-MME", "longvideobench": "LongVideoBench",
          "charades": "Charades-STA"}

NOTES = {
    "lvbench": "official = THUDM/LVBench compute_accuracy.py: polish_answer(answer text) == answer letter, over the "
               "answered uids only (failed and missing questions leave the denominator); a question counts in each "
               "of its question types",
    "videomme": "official = Video-MME eval_your_results.py (BradyFU, 4e7566d): extract_characters_regex(answer text) "
                "(first capital A-D after the answer prefixes) == answer, over the answered questions whose "
                "extraction is not empty",
    "longvideobench": "official = lmms-eval longvideobench parse_multi_choice_response(answer text) == answer over the "
                      "answered questions; an unparseable answer gets a random option (seed {seed}: "
                      "random.Random(f'{{seed}}:{{qid}}'))",
    "charades": "official = lmms-eval charades_sta extract_time(answer text), IoU = overlap / span; unparseable = "
                "IoU 0, kept in the denominator (answered queries); R@1 at IoU>=0.3/0.5/0.7 and mIoU in percent",
}
STRICT_NOTE = ("strict = every question with ground truth counts, read from avi's structured answer (choice / "
               "interval); missing, failed or unparseable = wrong (IoU 0)")
CLIP_NOTE = "spans (ground truth and prediction) clipped to [0, duration] when the video's duration is known"


# ---------------------------------------------------------------------------------------------- grading


def _benchmark(q: JobQuestion) -> str:
    return str(q.meta.get("benchmark") or ("charades" if q.answer_type == "interval" else "choice"))


def _duration(q: JobQuestion, record: dict | None) -> float | None:
    for v in (q.meta.get("duration"), (record or {}).get("duration_s")):
        try:
            if v is not None and float(v) > 0:
                return float(v)
        except (TypeError, ValueError):
            pass
    return None


def _span(v: Any) -> list[float] | None:
    try:
        if v is not None and len(v) == 2:
            return [float(v[0]), float(v[1])]
    except (TypeError, ValueError):
        pass
    return None


def _letters(q: JobQuestion) -> list[str]:
    return [chr(ord("A") + i) for i in range(len(q.options or []))] or list("ABCD")


@dataclass
class _Graded:
    """One question scored in both modes; ``values[mode]`` is None when it is not in that mode's denominator."""

    q: JobQuestion
    status: str
    values: dict[str, dict[str, float] | None]
    fields: dict[str, Any]


def _values_choice(correct: bool) -> dict[str, float]:
    return {"acc": 1.0 if correct else 0.0}


def _values_span(iou: float) -> dict[str, float]:
    out = {f"R@{t}": 1.0 if iou >= t else 0.0 for t in IOU_THRESHOLDS}
    out["mIoU"] = iou
    return out


def _grade(q: JobQuestion, record: dict | None, seed: int) -> _Graded:
    bench, status = _benchmark(q), record_status(record)
    record = record or {}
    text = record.get("answer") if status == "ok" and isinstance(record.get("answer"), str) else ""
    gt = q.gt
    f: dict[str, Any] = {"status": status, "gt": gt}
    values: dict[str, dict[str, float] | None] = {"official": None, "strict": None}
    if q.answer_type == "interval" or bench == "charades":
        dur = _duration(q, record)
        gt_span = clip_span(gt, dur) if _span(gt) else None
        pred = _span(record.get("interval")) if status == "ok" else None
        pred = clip_span(pred, dur) if pred else None
        found = extract_time(text) if status == "ok" else []
        off_pred = clip_span(found[0], dur) if len(found) == 1 else None
        f.update(pred=pred, correct=None, unparseable=status == "ok" and pred is None,
                 official_pred=off_pred, official_unparsed=status == "ok" and off_pred is None,
                 official_counted=gt_span is not None and status == "ok", duration_s=dur,
                 iou=None, official_iou=None, official_correct=None)
        if gt_span is not None:
            f["iou"] = temporal_iou(gt_span, pred) if pred else 0.0
            values["strict"] = _values_span(f["iou"])
            if status == "ok":
                f["official_iou"] = temporal_iou(gt_span, off_pred) if off_pred else 0.0
                values["official"] = _values_span(f["official_iou"])
        return _Graded(q, status, values, f)

    choice = record.get("choice") if status == "ok" else None
    pred = str(choice).strip().upper() if choice not in (None, "") else None
    f.update(pred=pred, unparseable=status == "ok" and pred is None, iou=None, official_iou=None)
    if bench == "lvbench":
        off = polish_answer(text) if status == "ok" else None
        counted, unparsed = status == "ok", status == "ok" and off not in _letters(q)
    elif bench == "videomme":
        off = extract_characters_regex(text) if status == "ok" else None
        counted, unparsed = status == "ok" and off != "", status == "ok" and off == ""
    elif bench == "longvideobench":
        off = lvb_parse(text) if status == "ok" else None
        unparsed = status == "ok" and off is None
        if unparsed:
            off = random.Random(f"{seed}:{q.qid}").choice(_letters(q))
        counted = status == "ok"
    else:  # a choice question of no known benchmark: exact letter, answered questions
        off = pred
        counted, unparsed = status == "ok", status == "ok" and pred is None
    f.update(official_pred=off, official_unparsed=unparsed, official_counted=counted and gt is not None)
    f["correct"] = None if gt is None else pred == gt
    f["official_correct"] = (off == gt) if counted and gt is not None else None
    if bench == "longvideobench":
        f["official_random"] = bool(unparsed)
    if gt is not None:
        values["strict"] = _values_choice(bool(f["correct"]))
        if counted:
            values["official"] = _values_choice(bool(f["official_correct"]))
    return _Graded(q, status, values, f)


def grade(question: JobQuestion, record: dict | None, *, seed: int = DEFAULT_SEED) -> dict:
    """The per-question score fields the runner writes into the question's results line.

    Args:
        question: a question from :func:`avi.eval.loaders.load_benchmark` (``meta["benchmark"]`` picks the rules).
        record: its results record (``qid``, ``status``, ``answer``, ``choice``, ``interval``, …), or None (missing).
        seed: LongVideoBench's random-choice seed.

    Returns:
        ``status`` (ok / failed / missing), ``gt``, and
        strict: ``pred`` (letter, or ``[start_s, end_s]`` clipped), ``correct`` (bool; None for spans or without
        ground truth), ``iou`` (spans; None otherwise or without ground truth), ``unparseable`` (answered but the
        structured field is empty);
        official: ``official_pred`` (the official cleaning's letter / span; ``""`` when Video-MME extracts
        nothing), ``official_correct``, ``official_iou``, ``official_counted`` (in the official denominator),
        ``official_unparsed``, and for LongVideoBench ``official_random`` (the letter was drawn at random);
        spans also ``duration_s`` (the clip bound, or None).
        A ``jsonl`` question (``meta["benchmark"] == "jsonl"``) gets :func:`avi.eval.jsonl.grade_jsonl`'s fields.
    """
    if question.meta.get("benchmark") == "jsonl":
        from avi.eval.jsonl import grade_jsonl

        return grade_jsonl(question, record)
    return _grade(question, record, seed).fields


# ---------------------------------------------------------------------------------------------- the report


@dataclass
class Table:
    """A per-category table.

    Attributes:
        name: what the rows are (``question type``, ``domain``, ``duration group`` …).
        note: how questions fall into rows.
        rows: row label → mode (``official``/``strict``) → metric → :class:`Score`.
    """

    name: str
    note: str
    rows: dict[str, dict[str, dict[str, Score]]]


@dataclass
class EvalReport:
    """Scores of one benchmark run.

    Attributes:
        benchmark: registry name (``lvbench`` …); ``title`` its display name.
        metrics: metric names (``["acc"]``, or ``R@0.3``, ``R@0.5``, ``R@0.7``, ``mIoU`` for Charades-STA).
        overall: mode → metric → :class:`Score` (values in percent).
        tables: per-category tables (empty for Charades-STA).
        counts: ``total`` (questions), ``with_gt``, ``no_gt``, ``videos``, ``answered`` (status ok), ``failed``,
            ``missing`` (no record), ``unparseable`` (answered, structured field empty), ``official_unparsed``
            (answered, the official cleaning found nothing; LongVideoBench: drew at random), ``official_counted``
            (in the official denominator), ``extra_records`` (records of qids not in the questions).
        seed: LongVideoBench random-choice seed.
        notes: the conventions, one line each.
    """

    benchmark: str
    title: str
    metrics: list[str]
    overall: dict[str, dict[str, Score]]
    tables: list[Table] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seed: int = DEFAULT_SEED
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The report as plain JSON-able data (same field names)."""
        return asdict(self)


def _category_rows(bench: str, graded: list[_Graded]) -> list[tuple[str, str, list[tuple[str, list[_Graded]]]]]:
    """``[(table name, note, [(row label, questions)])]`` for the benchmark's category tables."""

    def group(key_fn, order: Iterable[str] = (), sort_key=str) -> list[tuple[str, list[_Graded]]]:
        rows: dict[str, list[_Graded]] = {}
        for g in graded:
            for label in key_fn(g.q):
                rows.setdefault(str(label), []).append(g)
        ordered = [k for k in order if k in rows]
        ordered += sorted((k for k in rows if k not in ordered), key=sort_key)
        return [(k, rows[k]) for k in ordered]

    meta = lambda key: (lambda q: [q.meta[key]] if q.meta.get(key) not in (None, "") else [])  # noqa: E731
    numeric = lambda k: (0, float(k)) if re.fullmatch(r"-?\d+(\.\d+)?", k) else (1, k)  # noqa: E731
    if bench == "lvbench":
        return [("question type", "a question counts in each of its types",
                 group(lambda q: q.meta.get("categories") or [], LVBENCH_ORDER))]
    if bench == "videomme":
        tables = [("domain", "", group(meta("domain"), VIDEOMME_DOMAINS)),
                  ("task type", "", group(meta("task_type"), VIDEOMME_TASKS))]
        durations = group(meta("duration_group"), ("short", "medium", "long"))
        if len(durations) > 1:
            tables.append(("duration", "", durations))
        return tables
    if bench == "longvideobench":
        return [("duration group", "seconds", group(meta("duration_group"), sort_key=numeric)),
                ("question category", "", group(meta("question_category")))]
    return []


def _mode_scores(graded: list[_Graded], metrics: list[str]) -> dict[str, dict[str, Score]]:
    out: dict[str, dict[str, Score]] = {}
    for mode in MODES:
        rows = [g for g in graded if g.values[mode] is not None]
        clusters = [str(g.q.meta.get("video_id") or g.q.video) for g in rows]
        out[mode] = {m: score_values([g.values[mode][m] for g in rows], clusters) for m in metrics}
    return out


def score(questions: list[JobQuestion], records: Iterable[dict] | dict[str, dict], *, benchmark: str | None = None,
          seed: int = DEFAULT_SEED) -> EvalReport:
    """Score a benchmark run in both modes, with per-category tables and clustered 95 % CIs.

    Args:
        questions: the benchmark's questions (from :func:`avi.eval.loaders.load_benchmark`).
        records: the results records (list of dicts, the last per ``qid`` counting, or ``{qid: record}``).
        benchmark: registry name; default ``questions[0].meta["benchmark"]``.
        seed: LongVideoBench's random-choice seed (reported).

    Returns:
        An :class:`EvalReport` (percent values; ``to_dict()`` for JSON, :func:`format_report` for text); for
        ``jsonl`` a :class:`avi.eval.jsonl.JsonlReport` (:func:`avi.eval.jsonl.score_jsonl`, no subset note).
    """
    bench = benchmark or (questions[0].meta.get("benchmark") if questions else None) or "unknown"
    if bench == "jsonl":
        from avi.eval.jsonl_report import score_jsonl

        return score_jsonl(questions, records)
    by_qid = records_by_qid(records)
    graded = [_grade(q, by_qid.get(q.qid), seed) for q in questions]
    spans = bench == "charades" or any(q.answer_type == "interval" for q in questions)
    metrics = list(GROUNDING_METRICS) if spans else ["acc"]
    tables = []
    for name, note, rows in _category_rows(bench, graded):
        tables.append(Table(name, note, {label: _mode_scores(gs, metrics) for label, gs in rows}))
    qids = {q.qid for q in questions}
    counts = {
        "total": len(graded),
        "with_gt": sum(g.values["strict"] is not None for g in graded),
        "no_gt": sum(g.values["strict"] is None for g in graded),
        "videos": len({str(g.q.meta.get("video_id") or g.q.video) for g in graded}),
        "answered": sum(g.status == "ok" for g in graded),
        "failed": sum(g.status == "failed" for g in graded),
        "missing": sum(g.status == "missing" for g in graded),
        "unparseable": sum(bool(g.fields.get("unparseable")) for g in graded),
        "official_unparsed": sum(bool(g.fields.get("official_unparsed")) for g in graded),
        "official_counted": sum(g.values["official"] is not None for g in graded),
        "extra_records": sum(q not in qids for q in by_qid),
    }
    notes = [NOTES.get(bench, "official = exact letter match over the answered questions").format(seed=seed),
             STRICT_NOTE]
    if spans:
        notes.append(CLIP_NOTE)
    notes.append(CI_NOTE)
    return EvalReport(benchmark=bench, title=TITLES.get(bench, bench), metrics=metrics,
                      overall=_mode_scores(graded, metrics), tables=tables, counts=counts, seed=seed, notes=notes)


# ------------------------------------------------------------------------------------------------ text output


def _fmt_value(s: Score) -> str:
    return "-" if s.value is None else f"{s.value:.1f}"


def _fmt_ci(s: Score) -> str:
    return "" if s.ci is None else f"[{s.ci[0]:.1f}, {s.ci[1]:.1f}]"


def _mode_table(first: str, labelled: list[tuple[str, dict[str, Score]]]) -> list[str]:
    """Rows ``label | official value, CI, n | strict value, CI, n``; ``labelled`` = [(label, {mode: Score})]."""
    rows = [[first, "official", "95% CI", "n", "strict", "95% CI", "n"]]
    for label, by_mode in labelled:
        row = [label]
        for mode in MODES:
            s = by_mode[mode]
            row += [_fmt_value(s), _fmt_ci(s), str(s.n)]
        rows.append(row)
    return text_grid(rows, {1, 3, 4, 6})


def format_report(report: EvalReport) -> str:
    """``report`` as plain-text tables: counts, overall scores in both modes, per-category tables, the conventions
    (a :class:`avi.eval.jsonl.JsonlReport` is written by :func:`avi.eval.jsonl.format_jsonl_report`)."""
    if not isinstance(report, EvalReport):
        from avi.eval.jsonl_report import format_jsonl_report

        return format_jsonl_report(report)
    c = report.counts
    lines = [f"{report.title}: {c.get('total', 0)} questions on {c.get('videos', 0)} videos "
             f"({c.get('with_gt', 0)} with ground truth)",
             f"answered {c.get('answered', 0)}, failed {c.get('failed', 0)}, missing {c.get('missing', 0)}; "
             f"unparseable {c.get('unparseable', 0)} (strict), {c.get('official_unparsed', 0)} (official); "
             f"official denominator {c.get('official_counted', 0)}"]
    if c.get("extra_records"):
        lines.append(f"ignored: {c['extra_records']} record(s) of questions not in this benchmark")
    lines.append("")
    overall = [(m, {mode: report.overall[mode][m] for mode in MODES}) for m in report.metrics]
    lines += _mode_table("overall (%)", overall)
    primary = report.metrics[0] if report.metrics == ["acc"] else "mIoU"
    for table in report.tables:
        lines.append("")
        lines.append(f"{primary} (%) by {table.name}" + (f" ({table.note})" if table.note else ""))
        rows = [(label, {mode: by_mode[mode][primary] for mode in MODES}) for label, by_mode in table.rows.items()]
        lines += _mode_table(table.name, rows)
    lines.append("")
    lines += [f"- {n}" for n in report.notes]
    return "\n".join(lines)
