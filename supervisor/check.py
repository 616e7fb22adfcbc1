"""`lnk sandbox check`: what this machine enforces for a spec, and the stated gaps.

It probes afresh (a person asking wants today's answer) and keeps the passes for the
boot, as a start does. The report is plain data; the command line prints it as text or
JSON and exits 0 when the spec can launch here, 1 when not. This module holds what both
OSes report alike; each OS probes its own machine (`linux/check.py`, `macos/check.py`),
and `backends.py` asks the one this process runs on.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .grants import Snapshot

# Chromium (so Electron, and Playwright's browsers) sandbox each renderer with namespaces
# of its own (or a setuid helper): neither can be made inside lnk-sandbox, and the
# browser stops with "No usable sandbox!".
NESTED_BROWSERS = (
    "nested sandboxes: no user namespace can be made inside (the filter refuses unshare "
    "and clone with CLONE_NEWUSER, and bwrap's --disable-userns; no_new_privs voids a "
    "setuid helper), so Chromium's, Electron's and Playwright's own sandbox fails inside "
    "(\"No usable sandbox!\"). Run them with --no-sandbox (Electron: "
    "ELECTRON_DISABLE_SANDBOX=1; Playwright: chromium_sandbox off, its default): safe "
    "only because lnk-sandbox is then the sandbox. A page that takes over a renderer "
    "gets what the whole browser has, which is what this spec grants and no more: "
    "nothing outside its grants, but the profile, cookies and every page the browser has "
    "open. Give it a profile of its own (--user-data-dir in a written folder), and never "
    "use --no-sandbox outside lnk-sandbox")

GAP_LOADER = (
    "the dynamic loader runs any file it can read (`ld.so ./x`): Landlock's execute "
    "right must allow the loader for any listed program to start"
)
GAP_PRELOAD = (
    "a program can set LD_PRELOAD again for a child it runs: it is cleared only when "
    "the sandbox starts"
)
GAP_HOST_ABSTRACT = (
    "with the host's network and no Landlock scopes (ABI 6, Linux 6.12), the host's "
    "abstract unix sockets (D-Bus, X11 and others) can be connected to"
)
GAP_SOCKETS = (
    "a path socket a process outside makes inside a folder the spec grants after the "
    "launch, or one bound in another network namespace deeper than two folders into a "
    "grant, can be connected to (connect() needs no write right): the ones there at "
    "launch are hidden unless the spec names them ([network] unix, or a grant of the "
    "socket itself); closing the rest needs Landlock's RESOLVE_UNIX right (ABI 9, Linux "
    "7.1), which lnk-sandbox applies where the kernel has it"
)
GAP_HIDES_REPLACED = (
    "a hidden file the host replaces while the run lasts (a new file renamed over it, as "
    "git's credential-store and readline's histories write), or a hidden place missing "
    "at launch that the host makes then (`aws configure`), is read: a hide is a mount, "
    "which the kernel takes off a file renamed over; Landlock closes both under a read "
    "grant (the folders holding hidden paths are listed at launch, and what is new there "
    "is in no rule), and this machine has no Landlock (home's dot entries under a read "
    "grant of home are not among them: home is a folder of its own inside, holding "
    "nothing the host makes)"
)
GAP_HIDES_IN_WRITE_GRANTS = (
    "a protected or hidden path inside a folder the spec writes (a dot file, a socket, a "
    "`files.hide` entry) that the host replaces while the run lasts (git pull, an editor "
    "saving by renaming) loses its mount: the run is then ended at once (status 125, the "
    "path named), but a command writing or reading it in the moment between is not "
    "stopped (Landlock cannot close a written folder's new files without closing the "
    "sandbox's own)"
)
GAP_HARD_LINKS_LINUX = (
    "a hard link made before the run, in a folder the sandbox reads, to a file it hides "
    "(`~/backup/id_ed25519.bak` linking `~/.ssh/id_ed25519`) reads that file: a hide is "
    "a mount over a path, and a hard link is another path to the same file (the sandbox "
    "cannot make one to a hidden file: link(2) needs the file's path, and across mounts "
    "it fails with EXDEV)"
)
GAP_DISK = (
    "a write grant's file system can be filled (no quota is set: one for the sandbox's "
    "uid would be shared by every root run); the run's own /tmp and /dev/shm are sized"
)
GAP_SHARED_COUNTS = (
    "what the kernel counts per user or per machine rather than per run is shared with "
    "the person's (or, run by root, every root run's) other processes: inotify instances, "
    "pending signals, POSIX message queues, the machine's file table (each run is bounded "
    "by its processes times its open files, and by root by its memory)"
)
GAP_SOCKET_MEMORY = (
    "socket buffers are held in the run's memory limit only on cgroup v2; on v1 "
    "(this machine's memory controller) TCP buffers past it are held back under memory "
    "pressure, not stopped, within the machine's tcp_mem"
)


class MachineFacts(Protocol):
    """What an OS's probe found of its machine (`linux.check.Machine`,
    `macos.check.MacMachine`): a dataclass, so that the report turns to JSON whole."""

    os: str


@dataclass
class Report:
    machine: MachineFacts
    spec: str
    can_launch: bool
    layers: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    exposed: list[str] = field(default_factory=list)
    home: list[str] = field(default_factory=list)  # home's configuration hidden, and how
                                                   # to show a folder of it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def exposed_credentials(snapshot: Snapshot) -> list[str]:
    """The places where tools keep credentials (policy.credential_names) that are there
    and that the spec shows to the sandbox anyway, by naming them or a folder inside or
    holding them: each with the grant that shows it."""
    from .grants import is_within, seen_by
    from .policy import credential_names

    found = []
    for name in credential_names():
        path = os.path.normpath(snapshot.home + name[1:])
        if not os.path.lexists(path):
            continue
        grant = seen_by(path, snapshot.grants, snapshot.patterns)
        if grant is not None:
            how = "names it" if grant.target == path or is_within(grant.target or "", path) \
                else "holds it"
            found.append(f"{name}: {grant.key or grant.reason} ({grant.name}) {how}")
    # What the name rule would hide (secret_names), shown because a grant names it.
    from .secret_names import find

    home = os.path.realpath(snapshot.home)
    hidden = tuple(g.target for g in snapshot.grants if g.access == "hide" and g.target)
    for place in find(home, hidden):
        grant = next((g for g in snapshot.visible() if g.key and g.target
                      and is_within(g.target, place.path)), None)
        if grant is not None:
            shown = "~" + place.path[len(home):]
            found.append(f"{shown}: {grant.key} ({grant.name}) names it (hidden by its name "
                         "otherwise)")
    return found


def home_lines(snapshot: Snapshot) -> list[str]:
    """What of home's configuration a read grant of home hides (its dot entries, and
    the folders of programs' profiles without a dot), what it shows, and the key that
    shows a folder of it; nothing where no read grant shows home."""
    from .described import home_configuration
    from .policy import system_folders
    from .view import view_for

    home = home_configuration(view_for(snapshot, system_folders()))
    if home is None:
        return []
    return [f"hidden, whatever its name: home's dot entries and its folders of "
            f"programs' profiles ({len(home.hidden)} now: "
            + (", ".join(home.hidden) or "none") + ")",
            "shown of it: " + (", ".join(f"{i.name} ({i.why})" for i in home.shown)
                               or "nothing"),
            f"to show a folder of it, {home.how_to_show}"]


def network_layers(snapshot: Snapshot) -> list[str]:
    """What holds the network, as a person should read it."""
    mode = snapshot.settings.network_mode
    rules = snapshot.network
    layers = {
        "none": ["network: a namespace of its own with its own loopback only"],
        "host": ["network: the host's, shared"],
        "proxy": ["network: a namespace of its own; the only way out is the proxy, which "
                  "decides on each name before looking it up and refuses the loopback, "
                  "private, link-local and metadata addresses a name resolves to unless "
                  "[network] allow names them"],
    }[mode]
    if rules.deny:
        layers.append("network: refused even when allowed: " + ", ".join(rules.texts("deny")))
    if rules.forward:
        layers.append("network: the host's loopback ports " + ", ".join(
            map(str, rules.forward)) + " reachable inside at the same ports")
    if rules.expose:
        layers.append("network: the sandbox's ports " + ", ".join(map(str, rules.expose))
                      + " reachable at the host's loopback")
    if rules.unix is not None:
        named = [s.name for s in rules.sockets()]
        layers.append("network: path sockets " + (", ".join(named) if named else "none")
                      + " bound in ([network] unix)")
    return layers


def spec_lines(report: Report) -> list[str]:
    """What both OSes print of the spec after their machine's lines: whether it can
    launch, its layers, problems, the credentials it shows and the open gaps."""
    lines = [f"spec {report.spec}: " + ("can launch here" if report.can_launch else
                                         "cannot launch here")]
    lines += [f"  layer: {layer}" for layer in report.layers]
    for problem in report.problems:  # SandboxError.render's: message, then hint
        first, *rest = problem.split("\n")
        lines += [f"  problem: {first}", *rest]
    if report.home:
        lines.append("home's configuration (a read grant of home shows your files, not it):")
        lines += [f"  - {item}" for item in report.home]
    if report.exposed:
        lines.append("credentials the spec shows to the sandbox (hidden by default):")
        lines += [f"  - {item}" for item in report.exposed]
    if report.gaps:
        lines.append("open gaps (stated, not closed):")
        lines += [f"  - {gap}" for gap in report.gaps]
    return lines
