"""Many questions over many videos: job specs, the resumable results file, the runner and its executors.

Shared by ``avi batch`` (issue 9) and ``avi eval`` (issue 6): a job is a list of
:class:`~avi.jobs.spec.JobQuestion`; the runner indexes each video once, answers its
questions and appends one JSON line per question to a results file that survives a kill.
"""

from avi.jobs.spec import JobQuestion

__all__ = ["JobQuestion"]
