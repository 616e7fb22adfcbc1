"""A run's limits: the spec's `[limits]` with the defaults filled in (plain data).

The defaults are what a careful person would give one tool call of an agent: enough for
a build or a test suite (make -j, a worker pool, a browser), not enough for a fork bomb,
a memory hog or a /tmp filled in a loop to take the machine. Time is left open by
default: a harness keeps its own clock, and a build may take an hour; `timeout` and
`cpu` set one. 0 means no limit, where a spec writes "none".

How each is held is each OS's business (linux/cgroups.py, the inner's rlimits, tmpfs
sizes): `check` and `describe` say which holds where.
"""

from __future__ import annotations

import os
from typing import NamedTuple

GIB = 1 << 30
MIB = 1 << 20


class Limits(NamedTuple):
    """`[limits]`, as written (spec.py validates it): each None (absent) takes its
    default (`defaults`), and 0 ("none") lifts it. Sizes in bytes, times in seconds.

    `pids`: processes and threads at once; `memory`: what the sandbox's processes and
    its tmpfs hold; `tmp` and `shm`: the size of its own /tmp and /dev/shm; `files`:
    open files per process; `cpu`: CPU seconds per process; `timeout`: wall-clock
    seconds for the whole run, after which every process of it is killed (124)."""

    pids: int | None = None
    memory: int | None = None
    tmp: int | None = None
    shm: int | None = None
    files: int | None = None
    cpu: int | None = None
    timeout: float | None = None


class RunLimits(NamedTuple):
    """Every limit of a run, resolved: bytes, seconds, counts; 0 for none."""

    pids: int
    memory: int
    tmp: int
    shm: int
    files: int
    cpu: int
    timeout: float
    written: tuple[str, ...] = ()  # the ones the spec set: what cannot be held refuses



def machine_memory() -> int:
    """The machine's RAM in bytes (0 when the OS does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def defaults(memory: int) -> RunLimits:
    """The defaults on a machine with `memory` bytes of RAM: half of it for the run's
    memory, within 1 and 8 GiB; /tmp 1 GiB and /dev/shm 512 MiB, each at most half the
    run's memory (both are held in memory, and counted in it)."""
    run_memory = min(8 * GIB, max(GIB, memory // 2)) if memory else 4 * GIB
    return RunLimits(pids=4096, memory=run_memory, tmp=min(GIB, run_memory // 2),
                     shm=min(512 * MIB, run_memory // 2), files=65536, cpu=0, timeout=0.0)


def file_ceiling() -> int:
    """The most open files a process here may be given: the hard limit lnk-sandbox was
    started with (raising it needs CAP_SYS_RESOURCE); 0 when there is none."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return 0 if hard == resource.RLIM_INFINITY else hard


def resolve(limits: Limits, memory: int | None = None) -> RunLimits:
    """The spec's limits over the defaults for this machine, as they will hold: /tmp
    and /dev/shm at most half a memory limit the spec sets (they are held in it), open
    files at most the hard limit this process has."""
    base = defaults(machine_memory() if memory is None else memory)
    written = {name: value for name, value in limits._asdict().items() if value is not None}
    run = base._replace(**written, written=tuple(written))
    if run.memory and "memory" in written:
        for name in ("tmp", "shm"):
            if name not in written:
                run = run._replace(**{name: min(getattr(base, name), run.memory // 2)})
    ceiling = file_ceiling()
    if ceiling and (not run.files or run.files > ceiling):
        run = run._replace(files=ceiling)
    return run


def size_text(value: int) -> str:
    """A size as a person reads it: "1.5 GiB", "64 MiB", "no limit" for 0."""
    if not value:
        return "no limit"
    for unit, name in ((GIB, "GiB"), (MIB, "MiB")):
        if value >= unit:
            return f"{value / unit:g} {name}"
    return f"{value} bytes"


def describe(limits: RunLimits) -> list[str]:
    """One line per limit, as a person reads it."""
    size = size_text

    def seconds(value: float) -> str:
        return f"{value:g} s" if value else "no limit"

    return [
        f"processes: {limits.pids or 'no limit'}",
        f"memory: {size(limits.memory)}",
        f"/tmp: {size(limits.tmp)}",
        f"/dev/shm: {size(limits.shm)}",
        f"open files per process: {limits.files or 'no limit'}",
        f"CPU time per process: {seconds(limits.cpu)}",
        f"wall-clock time of the run: {seconds(limits.timeout)}",
    ]
