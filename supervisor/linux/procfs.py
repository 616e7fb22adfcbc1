"""The fresh /proc's global files: read-only in every sandbox.

Facts (Linux 6.18; fs/proc/proc_sysctl.c, kernel/sysctl.c, fs/proc/root.c):
- A fresh procfs (bwrap's --proc) shows the sandbox's own processes, and beside them the
  kernel's global files, the same for every pid namespace: /proc/sys, /proc/sysrq-trigger,
  /proc/irq, /proc/bus, /proc/fs, /proc/mtrr and so on.
- A sysctl's permission check is its mode bits against the *global* root uid
  (proc_sys_permission -> test_perm): no capability is asked. A sandbox whose processes
  are the host's uid 0 could write every 0644 sysctl: kernel.core_pattern (a `|program`
  there is run by the kernel as the host's root, in the host's namespaces, at the next
  crash), kernel.modprobe, vm.*, the host network's own net.* in host mode.
- bubblewrap covers /proc/sys, /proc/sysrq-trigger, /proc/irq and /proc/bus read-only only
  where `access(W_OK)` says it can write them. For the folder /proc/sys the kernel always
  answers EACCES to that question (a sysctl folder is never writable), so bwrap never
  covers it, whoever runs it: the files inside stay as writable as their mode says.
- Other global files decide by uid alone too: /proc/sysrq-trigger (0200, writing `b`
  reboots), /proc/irq/*/smp_affinity, /proc/acpi/wakeup on real hardware. Their owner
  may also chmod them, which the kernel keeps for every /proc of the machine: no
  sandbox is their owner (root mode runs as another uid, idmapped.py).
- Everything under a process's own /proc/PID is that process's (comm, oom_score_adj,
  attr, mem...): writing it changes that process alone, and the kernel asks a
  capability where a write would reach further (lowering oom_score_adj, loginuid,
  uid_map). Those stay as the kernel has them.

So every global folder and every global file with a write bit is bound read-only over
itself, in every mode, from the host's own /proc (a global file shows the same there, and /proc/sys
answers for the namespaces of the process that reads it). Root mode runs the sandbox as
another uid besides (idmapped.py), so no owner's right applies either.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from typing import NamedTuple

# The entries of /proc that are a process's own: pid folders and the links to them.
OWN_ENTRIES = frozenset({"self", "thread-self"})


class ProcEntry(NamedTuple):
    """A top-level entry of the host's /proc: its name and lstat mode."""

    name: str
    mode: int


def is_global(name: str) -> bool:
    return not name.isdigit() and name not in OWN_ENTRIES


def read_only(listing: Iterable[ProcEntry]) -> tuple[str, ...]:
    """The global entries of /proc to bind read-only over themselves: every folder (a
    module loaded later may add writable files in it) and every file with a write bit;
    not the links to a process's own (`mounts`, `net`)."""
    return tuple(f"/proc/{entry.name}" for entry in sorted(listing)
                 if is_global(entry.name) and (stat.S_ISDIR(entry.mode)
                                               or (stat.S_ISREG(entry.mode)
                                                   and entry.mode & 0o222)))
