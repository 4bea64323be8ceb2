"""The report of an ``avi eval jsonl`` run: accuracy per type, source, split and tag with CIs clustered by
video, strict and lenient side by side (rules: :mod:`avi.eval.jsonl`), what answering "cannot tell" to every
question would score, answered vs true letters (and the right letters the answer flagged as guesses), interval
mIoU and R@0.3/0.5, seconds p50/p90, steps and frames; and its text form."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from avi.eval.jsonl import BENCHMARK, LETTERS, SCORING_NOTE, TIMING_NOTE, TYPES, grade_jsonl
from avi.eval.stats import CI_NOTE, Score, records_by_qid, score_values, text_grid
from avi.jobs.spec import JobQuestion

# ------------------------------------------------------------------------------------------------ report


def percentile(values: list[float], p: float) -> float | None:
    """The ``p``-th percentile (0–100) of ``values``, linearly interpolated between order statistics
    (numpy's default: position ``(n − 1)·p/100``); None when empty."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass
class JsonlReport:
    """Scores of one ``avi eval jsonl`` run (values in percent).

    Attributes:
        benchmark: ``"jsonl"``; ``title`` the display name (with the annotation file or folder name).
        annotations: the annotation file or folder, or None.
        subset: ``{"n": picked, "of": questions in the annotations}`` for a ``--subset`` run, else None.
        split: the ``--split`` the run was limited to (``tune`` / ``report``), else None.
        counts: ``total`` (questions of the run), ``scored``, ``not_scored`` (no type or answer), ``videos``,
            ``answered`` (status ok), ``failed``, ``missing`` (no record), ``extra_records`` (qids not in
            the run).
        overall: strict accuracy over the scored questions (:class:`~avi.eval.scoring.Score`, CI clustered by
            video).
        by_type: type → strict accuracy, in :data:`TYPES` order (types present only).
        by_source: source (``real`` / ``synthetic`` / …) → strict accuracy (questions with a source).
        by_split: split (``tune`` / ``report``) → strict accuracy (questions with a split).
        by_tag: tag → strict accuracy (a question counts under each of its tags), tags sorted.
        lenient: the same tables by the lenient rules: ``overall``, ``by_type``, ``by_source``, ``by_split``,
            ``by_tag`` and ``interval``.
        cannot_tell_floor: what answering "cannot tell" to every question scores: ``n`` (scored questions),
            ``cannot_tell`` (those of type cannot_tell, all right for such a system), ``overall`` (percent).
        hedged: ``answered`` (answered scored questions whose answer hedges) and ``choice_right_guessed``
            (right letters whose answer flags them as a guess or cannot tell), ``choice_right`` (right letters).
        choice_letters: over the scored choice questions: ``n``, ``letters`` (A… and ``none``),
            ``answered`` and ``truth`` (letter → percent of n; ``none`` = no letter delivered, failed or
            missing), ``answered_count`` and ``truth_count`` (letter → questions).
        interval: ``mIoU``, ``R@0.3``, ``R@0.5`` over the scored interval questions (Scores; mIoU in percent).
        per_question: over the answered questions: ``answered``; ``seconds`` (``p50``, ``p90``, ``mean``,
            ``n``; agent seconds); ``steps`` and ``frames`` (``median``, ``mean``, ``n``); None values when
            no record has the field.
        by_route: the perception-memory route each answer took (``host``, ``agent``, ``off``: a record's
            ``route``; ``off`` when it has none) -> strict accuracy; ``route_seconds``: route -> ``p50``, ``p90``,
            ``n`` of the answered questions' seconds.
        yesno_truth: the yes/no questions by their truth (``yes`` / ``no``) -> strict accuracy.
        notes: the conventions, one line each.
    """

    benchmark: str
    title: str
    annotations: str | None
    subset: dict | None
    counts: dict[str, int]
    overall: Score
    by_type: dict[str, Score] = field(default_factory=dict)
    by_source: dict[str, Score] = field(default_factory=dict)
    by_tag: dict[str, Score] = field(default_factory=dict)
    split: str | None = None
    by_split: dict[str, Score] = field(default_factory=dict)
    lenient: dict = field(default_factory=dict)
    cannot_tell_floor: dict = field(default_factory=dict)
    hedged: dict = field(default_factory=dict)
    choice_letters: dict = field(default_factory=dict)
    interval: dict[str, Score] = field(default_factory=dict)
    per_question: dict = field(default_factory=dict)
    by_route: dict[str, Score] = field(default_factory=dict)
    route_seconds: dict = field(default_factory=dict)
    yesno_truth: dict[str, Score] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The report as plain JSON-able data (same field names)."""
        return asdict(self)


def _cluster(q: JobQuestion) -> str:
    return str(q.meta.get("video_id") or q.video)


def _acc(graded: list[tuple[JobQuestion, dict]], key: str = "correct") -> Score:
    return score_values([1.0 if f[key] else 0.0 for _, f in graded], [_cluster(q) for q, _ in graded])


def _interval(spans: list[tuple[JobQuestion, dict]], key: str) -> dict[str, Score]:
    """mIoU, R@0.3 and R@0.5 of the interval questions by the IoU field ``key`` (``iou`` / ``lenient_iou``)."""
    if not spans:
        return {}
    clusters = [_cluster(q) for q, _ in spans]
    ious = [f[key] or 0.0 for _, f in spans]
    out = {"mIoU": score_values(ious, clusters)}
    for t in (0.3, 0.5):
        out[f"R@{t}"] = score_values([1.0 if v >= t else 0.0 for v in ious], clusters)
    return out


def _seconds(rec: dict) -> float | None:
    s = rec.get("seconds")
    if isinstance(s, dict):
        s = s.get("agent")
    return float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) else None


def _numbers(recs: list[dict], key: str) -> list[float]:
    return [float(r[key]) for r in recs if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]


def _center(values: list[float]) -> dict:
    return {"median": statistics.median(values) if values else None,
            "mean": sum(values) / len(values) if values else None, "n": len(values)}


def score_jsonl(questions: list[JobQuestion], records: Iterable[dict] | dict[str, dict], *,
                subset: dict | None = None, annotations: str | Path | None = None,
                split: str | None = None) -> JsonlReport:
    """Score a JSONL benchmark run.

    Args:
        questions: the run's questions (from :func:`load_jsonl`, or the job file).
        records: results records (a list, the last per ``qid`` counting, or ``{qid: record}``).
        subset: ``{"n": picked, "of": all}`` when the run was a ``--subset`` (stated in the report).
        annotations: the annotation file or folder (for the title).
        split: the ``--split`` the run was limited to (stated in the title).

    Returns:
        A :class:`JsonlReport` (``to_dict()`` for JSON, :func:`format_jsonl_report` for text).
    """
    by_qid = records_by_qid(records)
    graded = [(q, grade_jsonl(q, by_qid.get(q.qid))) for q in questions]
    scored = [(q, f) for q, f in graded if f["scored"]]

    groups: dict[str, dict[str, list]] = {"by_type": {}, "by_source": {}, "by_split": {}, "by_tag": {}}
    for t in TYPES:
        rows = [(q, f) for q, f in scored if f["type"] == t]
        if rows:
            groups["by_type"][t] = rows
    for q, f in scored:
        if q.meta.get("source"):
            groups["by_source"].setdefault(str(q.meta["source"]), []).append((q, f))
        if q.meta.get("split"):
            groups["by_split"].setdefault(str(q.meta["split"]), []).append((q, f))
        for tag in dict.fromkeys(q.meta.get("tags") or []):
            groups["by_tag"].setdefault(str(tag), []).append((q, f))
    for name in ("by_source", "by_split", "by_tag"):
        groups[name] = dict(sorted(groups[name].items()))

    choice = [(q, f) for q, f in scored if f["type"] == "choice"]
    answered_count: dict[str, int] = {}
    truth_count: dict[str, int] = {}
    width = 0
    for q, f in choice:
        truth_count[f["gt"]] = truth_count.get(f["gt"], 0) + 1
        got = f["pred"] if f["pred"] else "none"
        answered_count[got] = answered_count.get(got, 0) + 1
        width = max(width, len(q.options or []))
    letters = sorted({*truth_count, *answered_count, *LETTERS[:width]} - {"none"})
    letters.append("none")
    n_choice = len(choice)
    choice_letters = {
        "n": n_choice, "letters": letters if n_choice else [],
        "answered": {k: 100.0 * answered_count.get(k, 0) / n_choice for k in letters} if n_choice else {},
        "truth": {k: 100.0 * truth_count.get(k, 0) / n_choice for k in letters} if n_choice else {},
        "answered_count": {k: answered_count.get(k, 0) for k in letters} if n_choice else {},
        "truth_count": {k: truth_count.get(k, 0) for k in letters} if n_choice else {},
    }

    spans = [(q, f) for q, f in scored if f["type"] == "interval"]
    n_cannot = sum(f["type"] == "cannot_tell" for _, f in scored)
    floor = {"n": len(scored), "cannot_tell": n_cannot,
             "overall": 100.0 * n_cannot / len(scored) if scored else None}
    hedged = {"answered": sum(bool(f["hedged"]) for _, f in scored),
              "choice_right": sum(bool(f["correct"]) for _, f in choice),
              "choice_right_guessed": sum(bool(f["correct"] and f["hedged"]) for _, f in choice)}
    lenient = {"overall": _acc(scored, "lenient"), "interval": _interval(spans, "lenient_iou"),
               **{name: {k: _acc(v, "lenient") for k, v in rows.items()} for name, rows in groups.items()}}

    ok = [by_qid[q.qid] for q, f in graded if f["status"] == "ok"]
    secs = [s for s in (_seconds(r) for r in ok) if s is not None]
    per_question = {
        "answered": len(ok),
        "seconds": {"p50": percentile(secs, 50), "p90": percentile(secs, 90),
                    "mean": sum(secs) / len(secs) if secs else None, "n": len(secs)},
        "steps": _center(_numbers(ok, "iterations")),
        "frames": _center(_numbers(ok, "frames")),
    }

    routes: dict[str, list] = {}
    route_secs: dict[str, list[float]] = {}
    for q, f in scored:
        rec = by_qid.get(q.qid) or {}
        route = str(rec.get("route") or "off") if f["status"] == "ok" else "failed"
        routes.setdefault(route, []).append((q, f))
        sec = _seconds(rec) if f["status"] == "ok" else None
        if sec is not None:
            route_secs.setdefault(route, []).append(sec)
    route_seconds = {r: {"p50": percentile(v, 50), "p90": percentile(v, 90), "n": len(v)}
                     for r, v in route_secs.items()}
    yesno_truth = {t: _acc(rows) for t in ("yes", "no")
                   if (rows := [(q, f) for q, f in scored if f["type"] == "yesno" and f["gt"] == t])}

    qids = {q.qid for q in questions}
    counts = {
        "total": len(graded), "scored": len(scored), "not_scored": len(graded) - len(scored),
        "videos": len({_cluster(q) for q in questions}),
        "answered": sum(f["status"] == "ok" for _, f in graded),
        "failed": sum(f["status"] == "failed" for _, f in graded),
        "missing": sum(f["status"] == "missing" for _, f in graded),
        "extra_records": sum(k not in qids for k in by_qid),
    }
    name = Path(str(annotations)).name if annotations else ""
    title = f"JSONL benchmark ({name})" if name else "JSONL benchmark"
    if split:
        title += f", split {split}"
    notes = [SCORING_NOTE, CI_NOTE, TIMING_NOTE]
    if subset:
        notes.insert(0, f"SUBSET: {subset['n']} of {subset['of']} questions, round-robin over the types in file "
                        f"order (--subset): a quick look, not the benchmark's score")
    return JsonlReport(benchmark=BENCHMARK, title=title,
                       annotations=str(annotations) if annotations else None, subset=subset, counts=counts,
                       overall=_acc(scored), **{k: {n: _acc(v) for n, v in rows.items()} for k, rows in groups.items()},
                       split=split, lenient=lenient, cannot_tell_floor=floor, hedged=hedged,
                       choice_letters=choice_letters, interval=_interval(spans, "iou"), per_question=per_question,
                       by_route={k: _acc(v) for k, v in sorted(routes.items())}, route_seconds=route_seconds,
                       yesno_truth=yesno_truth, notes=notes)


# ------------------------------------------------------------------------------------------------ text


def _v(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _acc_rows(first: str, rows: list[tuple[str, Score, Score | None]]) -> list[str]:
    table = [[first, "strict", "95% CI", "right", "lenient", "right", "n", "videos"]]
    for label, s, lenient in rows:
        table.append([label, _v(s.value), "" if s.ci is None else f"[{s.ci[0]:.1f}, {s.ci[1]:.1f}]",
                      f"{s.total:g}", _v(lenient.value) if lenient else "-",
                      f"{lenient.total:g}" if lenient else "-", str(s.n), str(s.videos)])
    return text_grid(table, {1, 3, 4, 5, 6, 7})


def _with_lenient(report: JsonlReport, name: str) -> list[tuple[str, Score, Score | None]]:
    rows = getattr(report, name)
    other = (report.lenient or {}).get(name) or {}
    return [(k, s, other.get(k)) for k, s in rows.items()]


def format_jsonl_report(report: JsonlReport) -> str:
    """``report`` as plain text: counts, accuracy overall / by type / by source / by split / by tag (strict and
    lenient side by side), what "cannot tell" to everything scores, the choice-letter histogram, the interval
    metrics, per-question cost, the conventions."""
    c = report.counts
    head = f"{report.title}: {c.get('total', 0)} questions on {c.get('videos', 0)} videos ({c.get('scored', 0)} scored)"
    if report.subset:
        head += f"  [SUBSET: {report.subset['n']} of {report.subset['of']} questions]"
    lines = [head, f"answered {c.get('answered', 0)}, failed {c.get('failed', 0)}, missing {c.get('missing', 0)}; "
                   f"not scored (no type or answer) {c.get('not_scored', 0)}"]
    if c.get("extra_records"):
        lines.append(f"ignored: {c['extra_records']} record(s) of questions not in this run")
    lines.append("")
    lenient = report.lenient or {}
    lines += _acc_rows("accuracy (%)", [("overall", report.overall, lenient.get("overall"))]
                       + _with_lenient(report, "by_type"))
    for name in ("by_source", "by_split", "by_tag"):
        rows = _with_lenient(report, name)
        if rows:
            lines.append("")
            lines += _acc_rows(name.replace("_", " "), rows)
    if report.yesno_truth:
        lines.append("")
        lines.append("yesno by truth: " + "; ".join(f"truth {t}: {_v(sc.value)} % ({sc.total:g} of {sc.n})"
                                                    for t, sc in report.yesno_truth.items()))
    if report.by_route and set(report.by_route) != {"off"}:
        lines.append("")
        table = [["route", "strict", "right", "n", "seconds p50", "seconds p90"]]
        for r, sc in report.by_route.items():
            sec = report.route_seconds.get(r) or {}
            table.append([r, _v(sc.value), f"{sc.total:g}", str(sc.n), _v(sec.get("p50")), _v(sec.get("p90"))])
        lines += text_grid(table, {1, 2, 3, 4, 5})
    floor, hedged = report.cannot_tell_floor, report.hedged
    if floor.get("n"):
        lines.append("")
        lines.append(f"answering \"cannot tell\" to every question would score {_v(floor['overall'])} % "
                     f"({floor['cannot_tell']} of {floor['n']}: the cannot_tell questions)")
    if hedged:
        lines.append(f"hedged answers (cannot tell, a guess, not measured): {hedged.get('answered', 0)}; right "
                     f"letters flagged as guesses: {hedged.get('choice_right_guessed', 0)} of "
                     f"{hedged.get('choice_right', 0)}")
    cl = report.choice_letters
    if cl.get("n"):
        lines.append("")
        lines.append(f"choice letters (% of {cl['n']} choice questions; none = no letter, failed or missing)")
        table = [["letter", "answered", "truth"]]
        table += [[k, _v(cl["answered"][k]), _v(cl["truth"][k])] for k in cl["letters"]]
        lines += text_grid(table, {1, 2})
    if report.interval:
        m = report.interval
        ci = m["mIoU"].ci
        lines.append("")
        lines.append(f"interval ({m['mIoU'].n} questions): mIoU {_v(m['mIoU'].value)}"
                     + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else "")
                     + f", R@0.3 {_v(m['R@0.3'].value)}, R@0.5 {_v(m['R@0.5'].value)}")
        li = lenient.get("interval") or {}
        if li:
            lines[-1] += f" (lenient: mIoU {_v(li['mIoU'].value)}, R@0.5 {_v(li['R@0.5'].value)})"
    pq = report.per_question
    if pq.get("answered"):
        s, st, fr = pq["seconds"], pq["steps"], pq["frames"]
        lines.append("")
        lines.append(f"per answered question ({pq['answered']}): seconds p50 {_v(s['p50'])}, p90 {_v(s['p90'])}; "
                     f"steps median {_v(st['median'])}, mean {_v(st['mean'])}; "
                     f"frames median {_v(fr['median'])}, mean {_v(fr['mean'])}")
    lines.append("")
    lines += [f"- {n}" for n in report.notes]
    return "\n".join(lines)
