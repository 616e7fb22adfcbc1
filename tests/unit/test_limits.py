"""`[limits]`: what a spec may write, what it means in bytes and seconds, and the
defaults a machine's memory gives."""

from __future__ import annotations

import pytest

from supervisor import limits
from supervisor.errors import SpecError
from supervisor.limits import GIB, MIB, Limits, RunLimits, defaults, resolve
from supervisor.spec import parse_spec


def parse(text: str) -> Limits:
    return parse_spec(text.encode(), "spec.toml").limits


def test_every_limit_parses_into_bytes_seconds_and_counts() -> None:
    assert parse('[limits]\npids = 128\nmemory = "2G"\ntmp = "512M"\nshm = "64MiB"\n'
                 'files = 1024\ncpu = "2m"\ntimeout = "1.5h"\n') == Limits(
        pids=128, memory=2 * GIB, tmp=512 * MIB, shm=64 * MIB, files=1024, cpu=120,
        timeout=5400.0)
    assert parse('[limits]\nmemory = 1073741824\ntimeout = 2.5\n') == Limits(
        memory=GIB, timeout=2.5)


def test_none_lifts_a_limit_and_absent_keeps_the_default() -> None:
    assert parse('[limits]\npids = "none"\nmemory = "none"\n') == Limits(pids=0, memory=0)
    lifted = resolve(Limits(pids=0, memory=0), memory=16 * GIB)
    assert (lifted.pids, lifted.memory, lifted.tmp) == (0, 0, GIB)
    assert lifted.written == ("pids", "memory")
    assert parse("") == Limits()


@pytest.mark.parametrize(
    ("machine", "memory", "tmp", "shm"),
    [
        (64 * GIB, 8 * GIB, GIB, 512 * MIB),  # half, at most 8 GiB
        (4 * GIB, 2 * GIB, GIB, 512 * MIB),
        (GIB, GIB, 512 * MIB, 512 * MIB),  # at least 1 GiB; tmpfs at most half of it
        (0, 4 * GIB, GIB, 512 * MIB),  # the OS does not say
    ],
)
def test_the_defaults_follow_the_machines_memory(machine: int, memory: int, tmp: int,
                                                 shm: int) -> None:
    assert defaults(machine) == RunLimits(pids=4096, memory=memory, tmp=tmp, shm=shm,
                                          files=65536, cpu=0, timeout=0.0)


def test_the_defaults_read_this_machines_memory() -> None:
    # The unit tests' machine is fixed (conftest.py); the real probe is asked here.
    import os

    real = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert real > 0
    assert resolve(Limits(), memory=real) == defaults(real)
    assert limits.machine_memory() == 16 * GIB


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ('[limits]\nmemory = "lots"\n', "limits.memory", "'lots' is not a size"),
        ('[limits]\nmemory = "4X"\n', "limits.memory", "'4X' is not a size"),
        ('[limits]\ntmp = true\n', "limits.tmp", "must be a size, not a boolean"),
        ('[limits]\nshm = "100k"\n', "limits.shm",
         "'100k' is below the least that still lets a program start (1048576)"),
        ('[limits]\npids = 2\n', "limits.pids",
         "2 is below the least that still lets a program start (8)"),
        ('[limits]\npids = "64"\n', "limits.pids", "'64' is not a count"),
        ('[limits]\nfiles = 1.5\n', "limits.files", "must be a count, not a fraction"),
        ('[limits]\ncpu = "soon"\n', "limits.cpu", "'soon' is not a time"),
        ('[limits]\ntimeout = []\n', "limits.timeout", "must be a time, not a list"),
        ('[limits]\nthreads = 5\n', "limits.threads", "unknown key 'threads'"),
        ('[limits]\nmemory = inf\n', "limits.memory", "inf is not a size"),
        ('[limits]\ntimeout = nan\n', "limits.timeout", "nan is not a time"),
        ('[limits]\ncpu = 1e30\n', "limits.cpu",
         "1e+30 is above the most the kernel holds (2147483648)"),
        ('[limits]\nmemory = "16777216T"\n', "limits.memory",
         "'16777216T' is above the most the kernel holds (1125899906842624)"),
        ('[limits]\npids = 4194305\n', "limits.pids",
         "4194305 is above the most the kernel holds (4194304)"),
        ('[limits]\nmemory = "1M"\n', "limits.memory",
         "'1M' is below the least that still lets a program start (67108864)"),
        ('limits = 5\n', "limits", "must be a table, not a number"),
    ],
)
def test_a_bad_limit_names_its_key_and_line(text: str, key: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse(text)
    error = caught.value
    assert (error.key, error.message) == (key, message)
    assert error.line == text.count("\n", 0, text.index(key.rsplit(".", maxsplit=1)[-1])) + 1
    assert error.hint or message.startswith("must be a table")


def test_describe_says_each_limit_as_a_person_reads_it() -> None:
    assert limits.describe(RunLimits(pids=64, memory=3 * GIB // 2, tmp=0, shm=64 * MIB,
                                     files=1024, cpu=90, timeout=0.5)) == [
        "processes: 64", "memory: 1.5 GiB", "/tmp: no limit", "/dev/shm: 64 MiB",
        "open files per process: 1024", "CPU time per process: 90 s",
        "wall-clock time of the run: 0.5 s"]


def test_tmp_and_shm_follow_a_memory_limit_the_spec_sets() -> None:
    run = resolve(Limits(memory=256 * MIB), memory=16 * GIB)
    assert (run.memory, run.tmp, run.shm) == (256 * MIB, 128 * MIB, 128 * MIB)
    written = resolve(parse('[limits]\nmemory = "256M"\ntmp = "100M"\n'), memory=16 * GIB)
    assert written.tmp == 100 * MIB  # what the spec writes is what it gets


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        # The README's bound: /tmp and /dev/shm are held in the run's memory, each at most
        # half of it (the unit tests' machine has 16 GiB: a run's default memory 8 GiB).
        ('[limits]\ntmp = "100T"\n', "limits.tmp", "'100T' is above the most it may be: "
         "half of the run's memory by default here (8 GiB), 4 GiB"),
        ('[limits]\nmemory = "256M"\ntmp = "512M"\n', "limits.tmp", "'512M' is above the "
         "most it may be: half of limits.memory (256 MiB), 128 MiB"),
        ('[limits]\nshm = "129M"\nmemory = "256M"\n', "limits.shm", "'129M' is above the "
         "most it may be: half of limits.memory (256 MiB), 128 MiB"),
        ('[limits]\nmemory = "none"\nshm = "9G"\n', "limits.shm", "'9G' is above the most "
         "it may be: half of this machine's memory, the run's being lifted (16 GiB), 8 GiB"),
        # 0 is no way to say "none": a count of 0 files, a 0-byte /tmp, read literally,
        # would stop every program, and read as "none" would lift what the person meant
        # to hold. Each refused at its least, with "none" said.
        ('[limits]\nfiles = 0\n', "limits.files",
         "0 is below the least that still lets a program start (16)"),
        ('[limits]\nmemory = 0\n', "limits.memory",
         "0 is below the least that still lets a program start (67108864)"),
        ('[limits]\ntmp = "0"\n', "limits.tmp",
         "'0' is below the least that still lets a program start (1048576)"),
        ('[limits]\ntimeout = 0.0\n', "limits.timeout",
         "0.0 is below the least that still lets a program start (1)"),
    ],
)
def test_a_limit_past_the_readmes_bounds_is_refused_naming_the_bound(
        text: str, key: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse(text)
    assert (caught.value.key, caught.value.message) == (key, message)
    assert caught.value.line == text.splitlines().index(
        next(line for line in text.splitlines() if line.startswith(key.split(".")[1]))) + 1
    assert caught.value.hint


def test_tmp_and_shm_at_half_the_memory_are_allowed() -> None:
    assert parse('[limits]\nmemory = "256M"\ntmp = "128M"\nshm = "128M"\n').tmp == 128 * MIB
    assert parse('[limits]\ntmp = "4G"\n').tmp == 4 * GIB  # half the default 8 GiB
    assert parse('[limits]\ntmp = "none"\nmemory = "64M"\n').tmp == 0


def test_the_readme_states_each_limits_bounds() -> None:
    """The bounds the validator holds are the ones the README gives a person."""
    from pathlib import Path

    from supervisor.spec import _LIMIT_RANGE

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert _LIMIT_RANGE == {"pids": (8, 1 << 22), "files": (16, 1 << 30),
                            "memory": (64 * MIB, 1 << 50), "tmp": (MIB, 1 << 50),
                            "shm": (MIB, 1 << 50), "cpu": (1, 1 << 31),
                            "timeout": (1, 1 << 31)}
    for row in ("| `pids` | 8 | 4194304 ", "| `files` | 16 | 1073741824 ",
                "| `memory` | 64 MiB | 1 PiB ", "| `tmp`, `shm` | 1 MiB | half the run's memory",
                "| `cpu`, `timeout` | 1 second | 2147483648 seconds "):
        assert row in readme, row


def test_open_files_are_at_most_the_hard_limit_lnk_was_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "file_ceiling", lambda: 20000)
    assert resolve(Limits(), memory=16 * GIB).files == 20000
    assert resolve(Limits(files=1024), memory=16 * GIB).files == 1024
    assert resolve(Limits(files=0), memory=16 * GIB).files == 20000  # "none": all there is


# -- what a CPU limit's kill says (linux/prepare.cpu_limit_note) ---------------------------

COUNTED = ("the run reached its CPU time limit ([limits] cpu = 2 s of CPU time per "
           "process; `lnk sandbox describe` shows the limits)")


@pytest.mark.parametrize(("limit", "status", "used", "said"), [
    (2, 137, 1.9, COUNTED),          # the rlimit's SIGKILL, the cgroup's count a bit short
    (2, 152, 5.0, COUNTED),          # SIGXCPU, where a limit was lowered to a soft one
    (2, 137, 0.9, None),             # killed otherwise, having used under half the limit
    (2, 1, 9.0, None),               # a status no CPU limit gives
    (2, 0, 9.0, None),
    (0, 137, 9.0, None),             # no CPU limit: nothing of one
    (2, 137, None, "the command was killed (signal 9) with [limits] cpu = 2 s of CPU time "
                   "per process set, which is how that limit ends a process (this machine "
                   "gives lnk-sandbox no count of the run's CPU time to be sure)"),
])
def test_a_cpu_kill_is_said_only_as_sure_as_the_count(limit: int, status: int,
                                                      used: float | None,
                                                      said: str | None) -> None:
    from supervisor.linux.prepare import cpu_limit_note

    assert cpu_limit_note(limit, status, used) == said
