"""The pending LLM stages of an index, built when a question first needs one (issue 38).

``avi-run``, ``avi batch`` and ``avi tool`` put an index in place once its captions and embeddings exist, with
the entity graph and the summary listed as ``pending`` in its manifest (:func:`avi.index.build.pending_stages`).
Nothing builds them after an answer: the answering process pays only for what its question used. A tool that
reads one of them (graph_retrieve the graph, global_explore the summary) calls :func:`build_if_pending` first,
which builds that one stage into the index directory under the index's build lock
(:func:`avi.index.build.finish_index` with ``only``: written atomically, the manifest's ``pending`` shrinks),
and says how it went in a :class:`StageNote` that the tool puts in its observation (and so in the trace):

* built now: ``"built the entity graph now (N s)"``; the question waited for it, later ones do not;
* another process holds the build lock (it is building this index): the tool answers without the stage and
  says so; nothing waits or fails;
* the index cannot be written (a read-only index, queried from a private copy of its Chroma database): the
  stage is not built and cannot be built there; the tool answers without it;
* the stage's build fails (an LLM call): the tool answers without it, with the cause. An unreachable LLM or
  bad weights end the run as everywhere else.

Two questions of one process (``avi batch --concurrency``) needing the same stage: the second waits for the
first's build (a lock per index in this process), then uses it.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from avi.errors import AviError, LLMUnavailableError, WeightsError
from avi.index.locking import index_writable

STAGE_TITLES = {"graph": "entity graph", "summary": "summary"}
"""What an LLM stage is called in notes."""

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@dataclass
class StageNote:
    """What :func:`build_if_pending` did about one pending stage.

    Attributes:
        stage: ``"graph"`` or ``"summary"``.
        built: True when the stage can now be read (built by this call, or by another question of this process
            while this one waited); False when the tool must answer without it.
        seconds: how long this call spent on it (building, or waiting for another question's build).
        reason: ``built``, ``waited``, ``busy`` (another process holds the build lock), ``read_only`` or
            ``failed``.
        note: one line for the observation and the trace.
    """

    stage: str
    built: bool
    seconds: float
    reason: str
    note: str

    def to_dict(self) -> dict:
        return asdict(self)


def will_build(index: Any, stage: str) -> bool:
    """Whether ``stage`` of ``index`` is pending and can be built here, so that a tool needing it may be offered
    (the first call builds it). For a question over several videos (an index with ``indexes``): any of them."""
    many = getattr(index, "indexes", None)
    if isinstance(many, dict):
        return any(will_build(i, stage) for i in many.values())
    path = getattr(index, "path", None)
    return stage in (getattr(index, "pending", None) or []) and path is not None and index_writable(path)


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(Path(path).resolve()), threading.Lock())


def build_if_pending(index: Any, stage: str, settings: Any, backends: Any) -> StageNote | None:
    """Build ``stage`` of ``index`` now if it is pending (see the module docstring).

    ``index`` (a :class:`avi.index.store.VideoIndex`) is refreshed in place (:meth:`reload_manifest`), so the
    caller reads the stage from it right after.

    Returns:
        None when the stage is not pending (built already, or never an LLM stage of this index); else what was
        done, as a :class:`StageNote`.

    Raises:
        LLMUnavailableError: the orchestrator cannot be reached (the run ends, as for any LLM call).
        WeightsError: a model's weights are missing or damaged.
    """
    from avi.index.build import IndexBusy, finish_index

    if stage not in (getattr(index, "pending", None) or []):
        return None
    index.reload_manifest()  # another process may have built it since the index was opened
    if stage not in index.pending:
        return None
    title = STAGE_TITLES.get(stage, stage)
    if not index_writable(index.path):
        return StageNote(stage, False, 0.0, "read_only",
                         f"the {title} of this index is not built and cannot be built here (the index is "
                         f"read-only)")
    t0 = time.perf_counter()
    with _lock_for(index.path):  # another question of this process building it: wait for it
        index.reload_manifest()
        if stage not in index.pending:
            waited = round(time.perf_counter() - t0, 1)
            return StageNote(stage, True, waited, "waited",
                             f"waited {waited:g} s for the {title} another question was building")
        def announce() -> None:  # once the lock is ours: a busy lock is said by the note, not by this line
            if getattr(settings, "llm_progress_s", 0):  # not with --quiet
                print(f"avi: this question needs the {title} of {index.path.name}, not built yet: building it now "
                      f"(the question waits; `avi index` builds it ahead of questions)", file=sys.stderr, flush=True)

        try:
            finish_index(index, settings, backends, progress=False, only=[stage], on_locked=announce)
        except IndexBusy as exc:
            return StageNote(stage, False, round(time.perf_counter() - t0, 1), "busy",
                             f"the {title} of this index is not built yet and another avi process (pid {exc.pid}) "
                             f"is building it")
        except (LLMUnavailableError, WeightsError):
            raise
        except PermissionError:
            return StageNote(stage, False, round(time.perf_counter() - t0, 1), "read_only",
                             f"the {title} of this index is not built and cannot be built here (the index is "
                             f"read-only)")
        except (AviError, OSError) as exc:
            cause = " ".join(str(exc).split())[:160]
            return StageNote(stage, False, round(time.perf_counter() - t0, 1), "failed",
                             f"the {title} of this index could not be built now ({cause})")
        finally:
            index.reload_manifest()
        seconds = round(time.perf_counter() - t0, 1)
        return StageNote(stage, True, seconds, "built", f"built the {title} now ({seconds:g} s)")
