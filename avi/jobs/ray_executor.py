"""The Ray executor: index builds and questions as Ray tasks on a cluster (issue 9).

Ray is the distributed engine vLLM itself uses for multi-node serving; avi does not
ship its own. The driver (the ``avi batch`` / ``avi eval`` process) submits one task
per video index build and one per question, each with declared resources
(``num_cpus``, ``num_gpus`` for in-process CV models on GPU nodes), lets Ray retry
transient failures (:class:`~avi.jobs.work.TransientError`: model server unreachable
or timing out; a worker process that dies is retried by Ray as well), and writes every
record itself: one writer, whatever the number of workers.

Storage: the index directory (``index_root``), traces and weights must be on storage
every node sees at the same path (NFS, Lustre, …); a question task reopens the index its
video's build task wrote there. On one machine that is simply the local disk.

Models: the workers use the configured endpoints (vLLM servers, one set per node or
shared). With no endpoint (cpu profile) the driver starts the embedded llama.cpp server
and the workers on the same machine share it; a multi-node cluster then is refused,
because that server listens on the driver's 127.0.0.1 only.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from avi.backends import Backends
from avi.config import Settings
from avi.errors import AviError, InputError
from avi.jobs.work import TransientError, VideoJob, failed_record

# Telemetry and hub access off in every Ray process (the driver's environment is not enough for
# workers started by a cluster that was launched elsewhere).
WORKER_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
              "ANONYMIZED_TELEMETRY": "False", "DO_NOT_TRACK": "1"}

# Per worker process: the backends (models loaded once per process, reused by later tasks) and open indexes.
_WORKER: dict = {}


def _worker_backends(settings_json: str) -> tuple[Settings, Backends]:
    if _WORKER.get("settings_json") != settings_json:
        old = _WORKER.get("backends")
        if old is not None:
            old.close()
        settings = Settings.model_validate_json(settings_json)
        _WORKER.update(settings_json=settings_json, settings=settings, backends=Backends(settings), prepared={})
    return _WORKER["settings"], _WORKER["backends"]


def _index_task(job: VideoJob, settings_json: str, stages: str = "all") -> dict:
    from avi.jobs.work import index_video

    settings, backends = _worker_backends(settings_json)
    _, event = index_video(job, settings, backends, stages=stages)
    return event


def _question_task(q, index_dir: str, settings_json: str, traces_dir: str, stages: str = "all") -> dict:
    from avi.index.store import VideoIndex
    from avi.jobs.work import answer_job_question
    from avi.pipeline import PreparedVideo
    from avi.video.decode import probe

    settings, backends = _worker_backends(settings_json)
    cache = _WORKER["prepared"]
    if index_dir not in cache:
        t0 = time.perf_counter()
        info = probe(q.video)
        cache[index_dir] = PreparedVideo(info=info, index=VideoIndex(Path(index_dir)),
                                         seconds=time.perf_counter() - t0)
    rec = answer_job_question(q, cache[index_dir], settings, backends, Path(traces_dir), stages)
    rec["executor"] = "ray"
    rec["worker"] = f"{os.uname().nodename}:{os.getpid()}"
    return rec


class RayExecutor:
    """Run a job on a Ray cluster.

    Args:
        settings: the job's settings.
        address: ``auto`` (the cluster this machine belongs to, e.g. after ``ray start``), ``local``
            (start a Ray instance in this process, on 127.0.0.1), or ``HOST:PORT`` of a head node.
            If Ray is already initialised in this process, that instance is used.
        concurrency: question tasks in flight at once.
        num_cpus: Ray CPUs the local instance gets (``local`` only; default: all).
        index_resources / question_resources: Ray resources per task (``num_cpus``, ``num_gpus``).
        retries: Ray retries of a task that raised a transient error or whose worker died.
        stages: what an index build covers (as :class:`avi.jobs.local.LocalExecutor`); with ``"search"`` a
            question whose tool needs a pending stage while another worker builds it answers without it.
    """

    name = "ray"

    def __init__(self, settings: Settings, address: str = "auto", *, concurrency: int = 4,
                 num_cpus: int | None = None, index_resources: dict | None = None,
                 question_resources: dict | None = None, retries: int = 2, stages: str = "all"):
        self.settings = settings
        self.stages = stages
        self.address = address
        self.concurrency = max(1, concurrency)
        self.num_cpus = num_cpus
        self.index_resources = {"num_cpus": 1, **(index_resources or {})}
        self.question_resources = {"num_cpus": 1, **(question_resources or {})}
        self.retries = max(0, retries)
        self._started_ray = False

    def _init_ray(self):
        try:
            import ray
        except ImportError:
            raise InputError("--ray needs the ray package: pip install 'avi[ray]'") from None
        os.environ.update({k: v for k, v in WORKER_ENV.items() if k not in os.environ})
        if ray.is_initialized():
            return ray
        kwargs = dict(include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": WORKER_ENV})
        try:
            if self.address == "local":
                ray.init(num_cpus=self.num_cpus, _node_ip_address="127.0.0.1", **kwargs)
            else:
                ray.init(address=self.address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise AviError(f"cannot reach the Ray cluster at {self.address!r}: {' '.join(str(exc).split())[:200]}"
                           f" (start one with `ray start --head`, or use --ray local)") from None
        self._started_ray = True
        return ray

    def run(self, jobs: list[VideoJob], traces_dir: Path, emit: Callable[[dict], None],
            on_index: Callable[[dict], None]) -> None:
        """Same contract as :meth:`avi.jobs.local.LocalExecutor.run`."""
        ray = self._init_ray()
        backends = Backends(self.settings)  # the driver's: only for the embedded LLM server, if one is needed
        try:
            settings = self.settings
            if any(j.questions for j in jobs) and not settings.llm_base_url and not settings.llm_embedded_url:
                if len([n for n in ray.nodes() if n.get("Alive")]) > 1:
                    raise InputError("the embedded llama.cpp server listens on this machine only: a multi-node "
                                     "Ray batch needs orchestrator endpoints every node reaches (--llm-url)")
                settings = settings.model_copy(update={"llm_embedded_url": backends.llm.base_url})
            settings_json = settings.model_dump_json()
            traces = str(traces_dir)
            opts = dict(max_retries=self.retries, retry_exceptions=[TransientError])
            index_fn = ray.remote(_index_task).options(**opts, **self.index_resources)
            question_fn = ray.remote(_question_task).options(**opts, **self.question_resources)

            pending: dict = {}
            for job in jobs:
                pending[index_fn.remote(job, settings_json, self.stages)] = ("index", job)
            queued: list = []  # (question, index_dir) waiting for a question slot
            in_flight = 0
            while pending or queued:
                while queued and in_flight < self.concurrency:
                    q, index_dir = queued.pop(0)
                    pending[question_fn.remote(q, index_dir, settings_json, traces, self.stages)] = ("question", q)
                    in_flight += 1
                ready, _ = ray.wait(list(pending), num_returns=1)
                ref = ready[0]
                kind, item = pending.pop(ref)
                try:
                    out = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - retries exhausted or the task crashed
                    msg = " ".join(str(getattr(exc, "cause", None) or exc).split())[-400:]
                    out = None
                    err = f"ray task failed after {self.retries + 1} attempts: {msg}"
                if kind == "index":
                    event = out or {"video": str(item.video), "status": "failed", "error": err, "index_dir": None}
                    on_index(event)
                    for q in item.questions:
                        if event["status"] == "ok":
                            queued.append((q, event["index_dir"]))
                        else:
                            emit(failed_record(q, f"index: {event['error']}", "index"))
                else:
                    in_flight -= 1
                    if out is None:
                        out = failed_record(item, err, "question")
                        out["executor"] = "ray"
                    emit(out)
        finally:
            backends.close()
            if self._started_ray:
                ray.shutdown()
