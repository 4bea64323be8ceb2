"""The facts of the machine a benchmark runs on, read from the machine (for the header of every figure)."""

from __future__ import annotations

import os
import platform


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_facts() -> dict:
    """CPU count (all, and usable by this process), CPU model, memory, OS and Python of this machine.

    Returns:
        ``cpus`` (``os.cpu_count()``), ``usable_cpus`` (the scheduler affinity, which a container may limit),
        ``cpu_model``, ``memory_gib`` (physical memory, GiB, one decimal), ``platform`` and ``python``.
    """
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    try:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, ValueError, OSError):
        memory = None
    return {"cpus": os.cpu_count(), "usable_cpus": usable, "cpu_model": _cpu_model(), "memory_gib": memory,
            "platform": platform.platform(), "python": platform.python_version()}


def machine_line() -> str:
    """:func:`machine_facts` in one line, e.g. ``2 CPUs usable of 2 (AMD EPYC …), 23.4 GiB, Linux-…, Python 3.11.7``."""
    m = machine_facts()
    memory = f"{m['memory_gib']} GiB" if m["memory_gib"] is not None else "memory unknown"
    return (f"{m['usable_cpus']} CPUs usable of {m['cpus']} ({m['cpu_model']}), {memory}, {m['platform']}, "
            f"Python {m['python']}")
