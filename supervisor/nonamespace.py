"""What holds of a spec where no namespace can be made, judged as plain data (pure).

Where no user namespace can be made (an unprivileged Docker container with its default
seccomp profile, root in it or not; a host that turned them off), bwrap cannot start,
and nothing can be mounted. Linux then runs the sandbox without namespaces ("direct
mode", linux/direct.py): the same spec, held by what the kernel still offers a process
for itself: Landlock for files (and, from ABI 4, TCP), the seccomp filter with its
listener, no_new_privs, every capability dropped, rlimits, and cgroups where they may
be made. It is chosen automatically when no user namespace can be made, said by
`check`, in the question asked and once at launch, and forced with LNK_NAMESPACES=off.

A promise this mode cannot keep refuses the launch (125, naming the key to change),
never silently weaker; where it keeps one narrower (fewer things work, nothing more is
reached) it says so. `PROMISES` is the table docs/design.md carries, each of the
README's promises against this mode, and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

from .errors import SandboxError

if TYPE_CHECKING:
    from .grants import Snapshot

ENV = "LNK_NAMESPACES"
# Landlock's ABI with RESOLVE_UNIX (Linux 7.1): below it no unix socket can be made here.
UNIX_SOCKETS_ABI = 9
SCOPES_ABI = 6  # signals and abstract unix sockets scoped to the sandbox

ANNOUNCEMENT = (
    "no user namespace can be made here, so this sandbox runs without namespaces: "
    "Landlock holds its files and the seccomp filter its network; other processes are "
    "seen in /proc and it has no /tmp of its own (TMPDIR names one); "
    "`lnk sandbox check` says what holds")
FORCED = f"{ENV}=off: this sandbox runs without namespaces, as where none can be made"


def forced_off(environ: Mapping[str, str]) -> bool:
    """Whether LNK_NAMESPACES asks for the mode without namespaces (`off`); unset or
    `auto` chooses by what the machine offers. Anything else is a SandboxError."""
    value = environ.get(ENV, "")
    if value in ("", "auto"):
        return False
    if value == "off":
        return True
    raise SandboxError(f"{ENV}={value!r} is not a choice lnk-sandbox knows",
                       hint=f"set {ENV}=off to run without namespaces, or leave it unset "
                       "(auto: without them only where none can be made)")


class Facts(NamedTuple):
    """What the machine offers that the judgement needs: the Landlock ABI, whether
    lnk-sandbox runs as root, whether a cgroup of the run's own holds its processes, and
    whether a seccomp listener can judge a file's metadata (direct_metadata.py)."""

    landlock_abi: int
    root: bool
    cgroup_pids: bool = False
    listener: bool = True  # a seccomp listener the supervisor can read callers through


class Refusal(NamedTuple):
    """A promise of the spec this mode cannot keep: what, the key to change, the fix."""

    what: str
    key: str
    hint: str


class Judgement(NamedTuple):
    """`refused`: what refuses the launch; `narrower`: what holds, but narrower than with
    namespaces, for this spec (each said once at launch); `lost`: what does not hold and
    is no promise of a spec (said by check and describe)."""

    refused: tuple[Refusal, ...]
    narrower: tuple[str, ...]
    lost: tuple[str, ...]

    def error(self, source: str) -> SandboxError | None:
        """The launch's refusal, naming every promise that cannot hold; None if none."""
        if not self.refused:
            return None
        first = self.refused[0]
        more = "".join(f"; and {r.key}: {r.what}" for r in self.refused[1:])
        return SandboxError(
            f"{source}: {first.key}: {first.what}, and this sandbox has no namespaces "
            f"(no user namespace can be made here){more}",
            hint=first.hint + "; `lnk sandbox check` says what holds here")


def judge(snapshot: Snapshot, facts: Facts) -> Judgement:
    """What holds of `snapshot` without namespaces on a machine with `facts`."""
    refused: list[Refusal] = []
    narrower: list[str] = []
    if facts.landlock_abi < 1:
        refused.append(Refusal(
            "without namespaces only Landlock holds the file grants, and this kernel has "
            "no Landlock", "files",
            "run where user namespaces can be made (a container with --security-opt "
            "seccomp=... allowing unshare, or on the host), or on a kernel with Landlock "
            "(Linux 5.13+, landlock in lsm=)"))
    if snapshot.caches:
        refused.append(Refusal(
            "a private cache is a folder shown at another path, which needs a mount",
            "files.caches", "grant a folder of your own with files.write and point the "
            "tool at it (npm_config_cache, PIP_CACHE_DIR), or remove files.caches"))
    committed = [g.name for g in snapshot.grants if g.commit and not g.dot_files_writable]
    if committed:
        refused.append(Refusal(
            "committing makes files at the top of .git (index.lock, COMMIT_EDITMSG), and "
            "without mounts the files held read-only there keep anything from being made "
            "at its top", "files.commit",
            f'list the folder in files.write_dot_files (.git then is the sandbox\'s to '
            f'write whole: {", ".join(committed)}), or remove files.commit'))
    settings = snapshot.settings
    network = snapshot.network
    if settings.network_mode == "proxy":
        refused.append(Refusal(
            "proxy mode needs a network namespace whose only way out is the proxy "
            "(Landlock's TCP rules choose ports, not addresses)", "network.mode",
            'use mode = "none", or "host" if the sandbox may reach the network'))
    for key, ports in (("network.forward", network.forward),
                       ("network.expose", network.expose)):
        if ports:
            refused.append(Refusal(
                "ports carried between the host's loopback and the sandbox's own need a "
                "network namespace with a loopback of its own", key, f"remove {key}"))
    if network.unix is not None and network.unix and facts.landlock_abi < UNIX_SOCKETS_ABI:
        refused.append(Refusal(
            "no unix socket can be made without namespaces below Landlock ABI "
            f"{UNIX_SOCKETS_ABI} (Linux 7.1, RESOLVE_UNIX), since nothing else keeps a "
            "path socket elsewhere on the machine from being connected to; this kernel "
            f"has ABI {facts.landlock_abi}", "network.unix", "remove network.unix"))
    limits = snapshot.run_limits()
    if "tmp" in limits.written and limits.tmp:
        refused.append(Refusal(
            "/tmp is a folder on disk without namespaces (TMPDIR names it), which has no "
            "size of its own", "limits.tmp", "remove limits.tmp"))
    if facts.root and not facts.cgroup_pids and "pids" in limits.written \
            and limits.pids:
        refused.append(Refusal(
            "run by root without a user namespace, RLIMIT_NPROC does not count root's "
            "processes, and no cgroup may be made here to count them", "limits.pids",
            "remove limits.pids, or run where a cgroup may be made"))
    for grant in snapshot.grants:
        if grant.access == "write" and grant.target and grant.is_dir \
                and not grant.dot_files_writable:
            narrower.append(
                f"nothing new can be made at the top of {grant.name} in this mode, nor "
                "removed or renamed there: its dot files are held without mounts; "
                f'files.write_dot_files = ["{grant.name}"] opens it')
    if facts.landlock_abi < UNIX_SOCKETS_ABI:
        narrower.append(
            f"no unix socket can be made (Landlock ABI {facts.landlock_abi} < "
            f"{UNIX_SOCKETS_ABI}): a path socket anywhere on the machine would be "
            "reachable otherwise; connected socket pairs still work")
    narrower.append("ipc isolation: no System V IPC, POSIX message queue or /dev/shm at "
                    "all (refused rather than shared with the machine)")
    if not facts.listener:
        narrower.append(
            "no seccomp listener the supervisor can read callers through here: chmod, "
            "chown, utimensat and inotify watches are refused (EPERM) even in the written "
            "folders, since Landlock cannot hold them to the grants")
    if settings.network_mode == "none":
        narrower.append("network none: no socket but unix ones can be made (no loopback "
                        "of the sandbox's own without a network namespace)")
    return Judgement(tuple(refused), tuple(narrower), tuple(lost(facts)))


def lost(facts: Facts) -> list[str]:
    """What does not hold without namespaces, for any spec."""
    found = [
        "pid isolation: other processes are seen in /proc (their command lines, names "
        "and users; not their memory, environment or files: Landlock refuses ptrace "
        "access outside the sandbox)" + (
            "; signals reach only the sandbox's own processes (Landlock's scope)"
            if facts.landlock_abi >= SCOPES_ABI else
            f"; signals reach every process of this user (Landlock ABI "
            f"{facts.landlock_abi} has no signal scope, which ABI {SCOPES_ABI} adds)"),
    ]
    if facts.landlock_abi < SCOPES_ABI:
        found.append(
            "a process the sandbox moved out of its process group that outlives a killed "
            "lnk-sandbox is not ended, unless a cgroup of the run's own could be made "
            f"(from Landlock ABI {SCOPES_ABI} the reaper left in the sandbox ends it)")
    if facts.root:
        found.append(
            "run by root: the sandbox is uid 0 without capabilities; /etc's files only "
            "root may read are hidden (walked at launch), the other system folders' are "
            "not walked and stay readable to it")
    return found


Holds = Literal["holds", "holds narrower", "refused", "does not hold"]


class Promise(NamedTuple):
    promise: str
    holds: Holds
    why: str


# The README's promises against the mode without namespaces: docs/design.md's table
# (tests/unit/test_nonamespace.py holds the two the same).
PROMISES: tuple[Promise, ...] = (
    Promise("file grants (read, write), system folders read-only", "holds",
            "Landlock rules on the host's paths; nothing else is readable"),
    Promise("hides inside read grants (home's dot entries, files.hide, secrets by name, "
            "$LNK_HOME)", "holds narrower",
            "the folder holding a hidden path gets no READ_DIR (it would be inherited) and "
            "each other entry a rule of its own: that folder cannot be listed, and what "
            "is made there during the run cannot be read; a hidden path's existence, "
            "size, times and link target are seen by stat and readlink, given its name "
            "(Landlock has no hook for them)"),
    Promise("a file's mode, owner, times and extended attributes, and watches, outside "
            "the grants", "holds narrower",
            "Landlock has no right for them: chmod, chown, utimensat and "
            "inotify_add_watch go to the listener, which does them only on a file the "
            "rules write, never a device node (a watch: read; run by root, as root "
            "without capabilities may), else EPERM (all of them without a listener); "
            "extended attributes are refused (EOPNOTSUPP; read by path too), and a "
            "file's flags (chattr, file_setattr), in written folders too; below Landlock "
            "ABI 3 truncate() and an open for reading that truncates are refused"),
    Promise("dot files at the top of written folders (and what runs as you below it)",
            "holds narrower",
            "the written folder keeps read rights, each other entry the grant's: nothing "
            "can be made, removed or renamed at its top; files.write_dot_files opens it"),
    Promise("committing (files.commit)", "refused",
            "git makes files at the top of .git, where held paths forbid making any; "
            "files.write_dot_files opens .git whole"),
    Promise("a fresh /tmp", "holds narrower",
            "TMPDIR names a private folder of the run's; /tmp itself is closed"),
    Promise("private caches (files.caches)", "refused",
            "a folder shown at another path needs a mount"),
    Promise('network "none"', "holds narrower",
            "the filter refuses every socket but unix ones, and Landlock (ABI 4) every "
            "TCP bind and connect: no loopback of the sandbox's own either"),
    Promise('network "host"', "holds", "the host's network, as with namespaces"),
    Promise('network "proxy", forward, expose', "refused",
            "they need a network namespace; Landlock's TCP rules choose ports, not "
            "addresses"),
    Promise("named unix sockets (network.unix)", "refused",
            "below Landlock ABI 9 no unix socket can be made (a path socket anywhere on "
            "the machine would be reachable); from ABI 9 they hold, by RESOLVE_UNIX"),
    Promise("pid isolation", "does not hold",
            "other processes are seen in /proc; ptrace access outside is refused by "
            "Landlock, signals by its scope (ABI 6), another process's limits and "
            "scheduling (prlimit, setpriority, sched_set*, ioprio_set) by the filter"),
    Promise("ipc isolation", "holds narrower",
            "System V IPC and POSIX message queues refused (ENOSYS), no /dev/shm"),
    Promise("root mode's uid-0 doors", "holds narrower",
            "every capability dropped (bounding set, securebits locked); Landlock holds "
            "files, /proc/sys and /dev; /etc's root-only files hidden; root-only files "
            "of other system folders are not"),
    Promise("limits", "holds narrower",
            "rlimits as ever; memory and processes by a cgroup where one may be made (a "
            "written limit that cannot hold refuses); limits.tmp refused"),
    Promise("program lists and the exec watch", "holds",
            "Landlock's EXECUTE and the seccomp listener need no namespace"),
    Promise("nothing outlives the run", "holds narrower",
            "the supervisor reaps its sandbox as a subreaper; after a SIGKILL of "
            "lnk-sandbox its keeper kills the sandbox's process group, and the reaper "
            "left in the sandbox's Landlock domain (ABI 6) every process of it, one "
            "that left the group included; below ABI 6 not those"),
)
