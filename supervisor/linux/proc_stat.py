"""A process's start time, from /proc/PID/stat: with the pid, what names one process
for as long as the boot lasts (a pid alone is reused), for the runs list, the legacy
cgroup tokens and the placeholders' holders."""

from __future__ import annotations


def process_start(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (the start time, in clock ticks since boot), or None
    for a process gone or a zombie. The command's name (field 2) may hold spaces and
    parentheses: the fields are counted from the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()  # field 3 is fields[0]: field 22 is fields[19]
