"""The results file of a job: one JSON line per question, appended as soon as it is answered.

Layout (both written next to each other):

* ``RESULTS`` (``.jsonl``): one JSON object per question, in the order answered. A
  question answered twice (``--retry-failed``) has two lines; the last one counts.
* ``RESULTS.job.json``: the job itself (kind, source, every question's ``qid`` and
  the fields needed to score or report it), written once, atomically, when the job
  starts. It lets ``avi eval report RESULTS`` count questions that have no line yet,
  and refuses to resume a results file with a different job.

Crash safety: every line is written with one ``write`` and ``fsync``; a kill can only
leave an unfinished last line without its newline. Opening the file moves such a tail
to ``RESULTS.partial`` (kept for inspection) and truncates it back to the last complete
line, so resuming never appends to a torn line and never drops a finished one.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from avi.errors import InputError
from avi.jobs.spec import JobQuestion

JOB_SUFFIX = ".job.json"


def job_path(results: Path) -> Path:
    """``RESULTS.job.json`` for ``RESULTS``."""
    return results.with_name(results.name + JOB_SUFFIX)


def write_job(results: Path, kind: str, source: dict, questions: list[JobQuestion]) -> None:
    """Write (or check) the job file of ``results``.

    A job file with the same qids but edited questions is rewritten (atomically) with the questions as they
    are now; their stale answers are found by their answer keys (:mod:`avi.jobs.keys`).

    Raises:
        InputError: a job file exists for a different set of questions (another job's results).
    """
    path = job_path(results)
    qids = [q.qid for q in questions]
    payload = {"kind": kind, "source": source, "questions": [q.model_dump(mode="json") for q in questions]}
    if path.exists():
        old = read_job(results)
        old_qids = [q["qid"] for q in old.get("questions", [])]
        if set(old_qids) != set(qids) or old.get("kind") != kind:
            raise InputError(f"{results} holds the results of another job ({old.get('kind')}, {len(old_qids)} "
                             f"questions; this one: {kind}, {len(qids)}): choose another --out")
        if old.get("questions") == payload["questions"]:
            return
        # the same qids with edited questions: the job file describes the questions as they are now
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(json.dumps(payload, ensure_ascii=False))
    os.replace(tmp, path)


def read_job(results: Path) -> dict:
    """The job file of ``results`` as a dict (``kind``, ``source``, ``questions``).

    Raises:
        InputError: missing or not JSON.
    """
    path = job_path(results)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"no job file next to {results} ({path.name}); was it written by avi batch / avi eval?") \
            from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None


def job_questions(results: Path) -> list[JobQuestion]:
    """The questions of the job that wrote ``results``."""
    return [JobQuestion.model_validate(q) for q in read_job(results).get("questions", [])]


class ResultsFile:
    """Append-only JSONL of per-question records; thread-safe appends; resume by ``qid``.

    Args:
        path: the ``.jsonl`` file (created with its folder if missing).

    Raises:
        InputError: an existing file has a complete line that is not a JSON object
            (the file is left untouched).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self.records: dict[str, dict] = {}
        self.dropped_partial = 0
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        data = self.path.read_bytes()
        cut = data.rfind(b"\n") + 1
        complete, tail = data[:cut], data[cut:]
        for n, line in enumerate(complete.decode("utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{self.path} line {n} is not JSON ({exc.msg}); not touching it") from None
            if not isinstance(rec, dict) or "qid" not in rec:
                raise InputError(f"{self.path} line {n} is not a results record (no qid); not touching it")
            self.records[str(rec["qid"])] = rec
        if tail:  # a line torn by a kill: keep it aside, cut it off
            with open(self.path.with_name(self.path.name + ".partial"), "ab") as f:
                f.write(tail + b"\n")
            with open(self.path, "r+b") as f:
                f.truncate(cut)
            self.dropped_partial = 1

    def finished(self, *, retry_failed: bool = False, keys: dict[str, str] | None = None,
                 questions: dict[str, str] | None = None) -> set[str]:
        """qids that need no more work: every recorded one, or only the ``ok`` ones with ``retry_failed``.

        Args:
            keys: ``{qid: answer key}`` of the job (:mod:`avi.jobs.keys`): a record whose ``key`` differs
                answered another question (edited text, options, answer type, video or settings) and does not
                count. None: records are not checked.
            questions: ``{qid: question text}``: a record written before answer keys (no ``key``) counts only
                when its ``question`` is the same text.
        """
        out = set()
        for q, r in self.records.items():
            if retry_failed and r.get("status") != "ok":
                continue
            if keys is not None and q in keys:
                if r.get("key") is not None:
                    if r["key"] != keys[q]:
                        continue
                elif questions is not None and r.get("question") != questions.get(q):
                    continue
            out.add(q)
        return out

    def append(self, record: dict) -> None:
        """Write ``record`` as one line and fsync it. Thread-safe."""
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self.records[str(record["qid"])] = record


def read_records(path: Path) -> dict[str, dict]:
    """The last record per qid of a results file (read-only: a torn last line is ignored, not cut)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"no results file {path}")
    records: dict[str, dict] = {}
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                continue  # torn last line of a run still going or killed
            raise InputError(f"{path} line {n} is not JSON") from None
        if isinstance(rec, dict) and "qid" in rec:
            records[str(rec["qid"])] = rec
    return records
