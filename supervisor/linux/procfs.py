"""The fresh /proc's global entries: which a sandbox sees read-only, which not at all.

Facts (Linux 6.18; fs/proc/proc_sysctl.c, kernel/sysctl.c, fs/proc/root.c):
- A fresh procfs (bwrap's --proc) shows the sandbox's own processes, and beside them the
  kernel's global files, the same for every pid namespace: /proc/sys, /proc/sysrq-trigger,
  /proc/irq, /proc/bus, /proc/fs, /proc/mtrr and so on.
- A sysctl's permission check is its mode bits against the *global* root uid
  (proc_sys_permission -> test_perm): no capability is asked. A sandbox run by root keeps
  uid 0 in its own user namespace, so every 0644 sysctl is writable to it:
  kernel.core_pattern (a `|program` there is run by the kernel as the host's root, in the
  host's namespaces, at the next crash), kernel.modprobe, vm.*, the host network's own
  net.* in host mode.
- bubblewrap covers /proc/sys, /proc/sysrq-trigger, /proc/irq and /proc/bus read-only only
  where `access(W_OK)` says it can write them. For the folder /proc/sys the kernel always
  answers EACCES to that question (a sysctl folder is never writable), so bwrap never
  covers it, whoever runs it: the files inside stay as writable as their mode says.
- Other global files decide by uid alone too: /proc/sysrq-trigger (0200, writing `b`
  reboots), /proc/irq/*/smp_affinity, /proc/acpi/wakeup on real hardware; and some are
  readable by their owner only (/proc/kmsg, /proc/slabinfo, /proc/timer_list...), or
  filter what they show by the reader's uid (/proc/keys, /proc/key-users list the keys
  uid 0 may view: root's own keyrings).
- Everything under a process's own /proc/PID is that process's (comm, oom_score_adj,
  attr, mem...): writing it changes that process alone, and the kernel asks a
  capability where a write would reach further (lowering oom_score_adj, loginuid,
  uid_map). Those stay as the kernel has them.

So every global folder and every global file with a write bit is bound read-only over
itself, in every mode, from the host's own /proc (a global file shows the same there, and
/proc/sys answers for the namespaces of the process that reads it); run by root, what
others could not read or what filters by uid is masked: a mode-0000 file or folder,
which uid 0 without capabilities cannot open, as another user could not.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from typing import NamedTuple

# The entries of /proc that are a process's own: pid folders and the links to them.
OWN_ENTRIES = frozenset({"self", "thread-self"})
# Global files whose content depends on the reader's uid: root's keys, for uid 0.
UID_FILTERED = frozenset({"keys", "key-users"})


class ProcEntry(NamedTuple):
    """A top-level entry of the host's /proc: its name and lstat mode."""

    name: str
    mode: int


class ProcCover(NamedTuple):
    """What the plan does with /proc's global entries: paths bound read-only over
    themselves, and (root mode) paths masked, each with whether it is a folder."""

    read_only: tuple[str, ...]
    masked: tuple[tuple[str, bool], ...]


def is_global(name: str) -> bool:
    return not name.isdigit() and name not in OWN_ENTRIES


def others_cannot_use(mode: int) -> bool:
    """Whether a user who is neither owner nor in the group could not use the entry:
    read a file, list and enter a folder, or connect to a socket or open a pipe."""
    if stat.S_ISDIR(mode):
        return mode & 0o005 != 0o005
    if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
        return mode & 0o006 != 0o006
    return not mode & 0o004


def cover(listing: Iterable[ProcEntry], *, root_mode: bool,
          private_below: Iterable[tuple[str, bool]] = ()) -> ProcCover:
    """Which of /proc's top-level entries to bind read-only and which to mask.

    `private_below` lists entries deeper in the global folders that others could not
    use, each with whether it is a folder (found by `private_files`, kept per boot);
    they are masked run by root.
    """
    read_only: list[str] = []
    masked: list[tuple[str, bool]] = []
    for entry in sorted(listing):
        if not is_global(entry.name) or stat.S_ISLNK(entry.mode):
            continue
        path = f"/proc/{entry.name}"
        folder = stat.S_ISDIR(entry.mode)
        if root_mode and (others_cannot_use(entry.mode) or entry.name in UID_FILTERED):
            masked.append((path, folder))
        elif folder or entry.mode & 0o222:
            read_only.append(path)
    if root_mode:
        masked.extend((path, folder) for path, folder in sorted(private_below)
                      if not any(path == m or path.startswith(m + "/") for m, _ in masked))
    return ProcCover(tuple(read_only), tuple(masked))
