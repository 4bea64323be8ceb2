"""Opening a complete index: an index that opens is an index that works (issues 39 and 55).

:func:`open_checked` is what ``avi index``, every question and ``avi tool`` run before they use an index
(:func:`avi.index.build.ensure_index`): every stage file a question reads passes its check
(:func:`avi.index.stage_files.check_index_files`: shape and types, the Chroma database answering with the counts
of the captions and transcript). One that fails is a :class:`BrokenIndex` naming each failing file and its cause;
the build then takes over every stage that passed and builds the failing ones again (:func:`report_broken` says so
in one warning line; the manifest keeps the cause).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from avi.errors import AviError
from avi.index.stage_files import STAGE_FILES, check_index_files, describe, stages_to_rebuild
from avi.index.store import VideoIndex

log = logging.getLogger("avi.index.build")

STAGE_WORDS = {"manifest": "its manifest", "transcript": "the transcript", "captions": "the captions",
               "tracks": "the object tracks", "subjects": "the subject registry", "embeddings": "the embeddings",
               "graph": "the entity graph", "summary": "the summary"}
"""How the warning names a stage built again."""


class BrokenIndex(AviError):
    """A complete index that cannot be used (:func:`open_checked`).

    Attributes:
        cause: why, as one line (``"graph.json: nodes: Input should be a valid list"``).
        problems: ``{file: cause}`` of the failing files (:data:`avi.index.stage_files.STAGE_FILES` names).
        salvage: True: the stages whose files passed are taken over by the rebuild
            (:func:`avi.index.reuse.salvage_work`).
    """

    def __init__(self, problems: dict[str, str]):
        self.problems = dict(problems)
        self.cause = describe(self.problems)
        self.salvage = True
        super().__init__(self.cause)


def _pending(final: Path) -> list[str]:
    try:
        pending = json.loads((final / "manifest.json").read_text()).get("pending") or []
        return [p for p in pending if isinstance(p, str)] if isinstance(pending, list) else []
    except (OSError, ValueError, AttributeError):
        return []


def open_checked(final: Path) -> VideoIndex:
    """Open the complete index at ``final`` after checking every stage file questions read (module docstring).

    Raises:
        BrokenIndex: a file fails its check (with each file's cause).
        DiskFullError: the file system filled up while Chroma's database was checked (nothing is rebuilt).
    """
    final = Path(final)
    files = [n for n, row in STAGE_FILES.items() if row.read_by_questions and n != "chroma"]
    problems = check_index_files(final, names=files, pending=_pending(final))
    if problems:
        raise BrokenIndex(problems)
    try:
        index = VideoIndex(final)
    except AviError as exc:  # passed every check: only a race with another writer gets here
        raise BrokenIndex({"manifest.json": str(exc)}) from None
    problems = check_index_files(final, names=["chroma"], chroma_dir=index.chroma_dir())
    if problems:
        raise BrokenIndex(problems)
    return index


def rebuilt_words(problems: dict[str, str]) -> str:
    """What a rebuild of an index with the failing files ``problems`` does again, in words
    (``"the entity graph again, the rest taken over"``)."""
    stages = [s for s in STAGE_WORDS if s in stages_to_rebuild(problems) and s != "manifest"]
    if not stages:
        return "its files taken over, its manifest written again"
    names = [STAGE_WORDS[s] for s in stages]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{listed} again, the rest taken over"


def report_broken(final: Path, exc: BrokenIndex) -> str:
    """Log, as one warning, why the index at ``final`` cannot be used and what its rebuild redoes; returns the
    cause as text (kept in the new manifest as ``rebuilt_from_broken``)."""
    log.warning("the index %s cannot be used (%s); rebuilding it: %s (the cause is kept in the new manifest as "
                "'rebuilt_from_broken')", final, exc.cause, rebuilt_words(exc.problems))
    return exc.cause
