"""What every macOS sandbox is given, and what none is: the fixed part of a profile.

Facts (Codex's, Chromium's, Nix's and sandbox-runtime's profiles, Apple's own daemon
profiles and its SBPL prelude; none was run on a Mac here, and [U] marks what no source
confirmed; docs/macos.md keeps the sources, tools/macos_probe.py the probes):
- How Seatbelt decides (Apple's SBPL v1 prelude, `sbpl1.scm`, whose `%action` keeps a
  rule list per operation; measured by microsoft/mxc and sandbox-runtime): an operation
  tries the rules with a filter that name it, the last written first; then its own
  unfiltered rule, which is the operation's default whatever its place in the text
  ("Replace the unconditional rule"); then, with neither, its parent operation the same
  way (file-write-unlink, file-write*, file*, default). So an unfiltered rule never
  overrides a filtered one, and a rule naming file-write-unlink beats a later one naming
  file-write*.
- `(deny default)` is the default of the operations that fall back to `default`. A few
  have a default of their own, allow: process-info*, nvram*, iokit-get-properties (and
  file-map-executable, which needs an open file first). Apple's profiles deny them
  right after `(deny default)`, and so does this one: another process's path, working
  folder and open files, the serial number and the NVRAM stay outside.
- Under `(deny default)` a process needs, besides its files: `process-fork`, signals and
  process information within its own sandbox (the xcrun stubs read their own), a few
  sysctls, the directory service's Mach names (getpwuid), and the devices a shell
  touches.
- A Mach lookup of securityd's or secd's services hands out the Keychain's items whatever
  the file rules say (nono: "blanket mach-lookup can permit Keychain retrieval via Mach
  IPC, bypassing file-level deny rules"), so none is ever allowed; the filtered denies
  at the end of every profile name them so a later edit that allows Mach lookups broadly
  cannot open them by accident.
- cfprefsd's per-user agent serves any domain of the person's preferences, whatever the
  file rules say; only the system daemon's domains are allowed [U: what a CLI tool
  loses without the agent].
- TLS trust is evaluated by trustd, outside the sandbox; it hands out no secret. DNS
  goes through mDNSResponder's socket and configd. Both are allowed only with a network.
- /etc, /tmp and /var are links into /private; Seatbelt matches resolved paths, so the
  profile names /private/... and lets the links themselves be read (metadata).
- /System/Volumes/Data is the Data volume's own mount, a second spelling of /Users and
  the rest through the firmlinks. /System is a system folder, so that spelling is hidden
  [U: whether Seatbelt ever sees it rather than /Users/...; hiding costs nothing either
  way].
"""

from __future__ import annotations

import re

from ..policy import MACOS_SYSTEM_FOLDERS

# Read, mapped executable and (without a program list) run: what programs and their
# libraries need, and nothing of a person's own. From the policy layer, so `grants.py`
# judges a program's visibility against the same list.
SYSTEM_FOLDERS = MACOS_SYSTEM_FOLDERS

# Links at the top whose metadata resolving a path through them needs.
ROOT_LINKS = ("/etc", "/tmp", "/var")

# Hidden inside the system folders, with the reason: (path, reason).
SYSTEM_HIDES = (
    ("/System/Volumes/Data", "the Data volume's own spelling of /Users and the rest"),
)

SYSCTL_NAMES = (
    "kern.argmax",
    "kern.hostname",
    "kern.maxfilesperproc",
    "kern.maxproc",
    "kern.ngroups",
    "kern.osproductversion",
    "kern.osrelease",
    "kern.ostype",
    "kern.osvariant_status",
    "kern.osversion",
    "kern.secure_kernel",
    "kern.usrstack64",
    "kern.version",
    "sysctl.proc_cputype",
    "vm.loadavg",
)
# kern.proc.pid.N, kern.proc.pgrp.N and kern.proc.all give kinfo_proc records (name, ids,
# flags): every process's name and pid, never its arguments or environment
# (kern.procargs2, which stays closed). ps, pgrep and the tree-kill of nodemon need
# them. net.routetable is getifaddrs (node's os.networkInterfaces, Go's net.Interfaces):
# the host's interfaces and addresses, in every network mode (Codex's base policy).
SYSCTL_PREFIXES = ("hw.", "machdep.cpu.", "kern.proc.pid.", "kern.proc.pgrp.",
                   "kern.proc.all", "net.routetable.")

MACH_SERVICES = (
    "com.apple.bsd.dirhelper",
    "com.apple.cfprefsd.daemon",
    "com.apple.logd",
    "com.apple.system.DirectoryService.libinfo_v1",
    "com.apple.system.logger",
    "com.apple.system.notification_center",
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.opendirectoryd.membership",
)
TRUST_SERVICES = ("com.apple.trustd", "com.apple.trustd.agent", "com.apple.ocspd")
DNS_SERVICES = (
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.SystemConfiguration.configd",
    "com.apple.dnssd.service",
    "com.apple.networkd",
)
MDNSRESPONDER = "/private/var/run/mDNSResponder"
# /etc/resolv.conf is a link to it: resolvers that read the file (Go's, hickory,
# dnspython, c-ares) find their servers there (Nix's network profile allows it).
RESOLV_CONF = "/private/var/run/resolv.conf"
# Recent libinfo reads user records in-process from here [U: which macOS started]; the
# same records the directory service's Mach names above already answer.
RECORD_STORE = "/private/var/db/DarwinDirectory/local/recordStore.data"

# securityd's and secd's Mach names (Security/OSX/libsecurityd/lib/sscommon.h,
# sec/ipc/securityd_client.h, sec/ipc/com.apple.secd.plist) and those nono denies.
KEYCHAIN_SERVICES = (
    "com.apple.SecurityServer",
    "com.apple.secd",
    "com.apple.security.agent",
    "com.apple.security.keychaind",
    "com.apple.security.octagon",
    "com.apple.securityd",
    "com.apple.securityd.aps",
    "com.apple.securityd.ckks",
    "com.apple.securityd.general",
    "com.apple.securityd.sos",
    "com.apple.securityd.system.xpc",
    "com.apple.securityd.xpc",
)

# The person's keychains, below their resolved home.
KEYCHAINS = "Library/Keychains"

# Operations whose own default is allow, which `(deny default)` does not reach.
OWN_DEFAULT_ALLOW = ("process-info*", "nvram*", "iokit-get-properties")

_PLAIN = re.compile(r"^[A-Za-z0-9_./*-]+$")


def quoted(text: str) -> str:
    """A constant of this module as an SBPL string. Only plain constants are written into
    a profile's text (every path from a spec or the machine is a parameter), so nothing
    here needs escaping; anything else is a programming error."""
    if not _PLAIN.match(text):
        raise ValueError(f"not a plain constant: {text!r}")
    return f'"{text}"'


def _listed(head: str, items: list[str]) -> list[str]:
    """`head` then one filter per line, the rule closed after the last."""
    return [head, *items[:-1], items[-1] + ")"]


def defaults() -> list[str]:
    """Right after `(deny default)`: the operations' own defaults, each an unfiltered
    rule (it takes part in no ordering: it is what the operation does when no filtered
    rule matches, wherever it is written)."""
    return [
        ";; Defaults of the operations (deny default) does not reach, and of those no",
        ";; filtered rule may open: setuid and setgid bits (a sandbox run by root would make",
        ";; root's programs), hard links (a link to a protected file is that file under a",
        ";; name no rule closes), POSIX shared memory (host-wide names: another program's",
        ";; memory).",
        f"(deny {' '.join(OWN_DEFAULT_ALLOW)})",
        "(deny file-write-setugid)",
        "(deny file-link)",
        "(deny ipc-posix-shm)",
        "(deny ipc-posix-sem)",
    ]


def fixed_rules() -> list[str]:
    """The process's own needs, written once for every profile."""
    return [
        ";; The process itself: its children, its own signals and information; semaphores",
        ";; its own processes made (Python's multiprocessing), never another program's.",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow process-info* (target same-sandbox))",
        "(allow ipc-posix-sem (semaphore-owner same-sandbox))",
        *_listed("(allow sysctl-read",
                 [f"    (sysctl-name {quoted(n)})" for n in SYSCTL_NAMES]
                 + [f"    (sysctl-name-prefix {quoted(p)})" for p in SYSCTL_PREFIXES]),
        *_listed("(allow mach-lookup", [f"    (global-name {quoted(s)})" for s in MACH_SERVICES]),
        "(allow system-socket (socket-domain AF_UNIX))",
        "(allow pseudo-tty)",
    ]


def system_file_rules(*, run: bool, report: bool) -> list[str]:
    """System folders and devices. `run`: without a program list, what the system holds
    may run (`report`: each run reported to the log, for learn)."""
    ops = "file-read* file-test-existence file-map-executable"
    folders = [f"    (subpath {quoted(f)})" for f in SYSTEM_FOLDERS]
    programs: list[str] = []
    if run:
        programs = _listed("(allow process-exec*", [
            *folders[:-1], folders[-1] + (" (with report)" if report else "")])
    return [
        ";; System folders: read, and their libraries mapped (DESIGN: system folders are",
        ";; always readable). Devices a shell needs. Terminals: a pty made inside (it carries",
        ";; the pty extension), and below, by parameter, the one the command was given;",
        ";; no other terminal of the person's.",
        *_listed(f"(allow {ops}", folders),
        *programs,
        '(allow file-read* file-test-existence (literal "/"))',
        *_listed("(allow file-read-metadata file-test-existence",
                 [f"    (literal {quoted(link)})" for link in ROOT_LINKS]),
        f"(allow file-read* (literal {quoted(RECORD_STORE)}))",
        '(allow file-read-metadata (subpath "/dev"))',
        '(allow file-read* file-write-data (literal "/dev/null") (literal "/dev/zero"))',
        '(allow file-read* (literal "/dev/random") (literal "/dev/urandom"))',
        '(allow file-read-data file-write-data (subpath "/dev/fd"))',
        '(allow file-read* file-write-data file-ioctl (literal "/dev/dtracehelper"))',
        '(allow file-read* file-write-data file-ioctl (literal "/dev/tty") (literal "/dev/ptmx"))',
        "(allow file-read* file-write-data file-ioctl",
        '    (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))',
    ]


def network_rules(mode: str, proxy_ports: tuple[int, ...], *, forward: tuple[int, ...] = (),
                  expose: tuple[int, ...] = ()) -> list[str]:
    """none: no network at all (there is no loopback of the sandbox's own on macOS);
    proxy: the supervisor's proxy on localhost, and nothing else; host: open, but path
    sockets only where the files rules reach (as a mount would on Linux). `forward`:
    ports of the host's loopback the sandbox may connect to; `expose`: ports it may
    listen on there (none and proxy modes): the host's loopback is the sandbox's own."""
    if mode == "host":
        return [
            ";; Network: host. Any address; DNS through mDNSResponder (and resolv.conf for",
            ";; resolvers that read it); TLS trust.",
            "(allow system-socket)",
            '(allow network-outbound (remote ip "*:*"))',
            '(allow network-inbound (local ip "*:*"))',
            '(allow network-bind (local ip "*:*"))',
            f"(allow network-outbound (literal {quoted(MDNSRESPONDER)}))",
            f"(allow file-read* (literal {quoted(RESOLV_CONF)}))",
            *_listed("(allow mach-lookup", [
                f"    (global-name {quoted(s)})" for s in (*DNS_SERVICES, *TRUST_SERVICES)]),
        ]
    lines: list[str] = []
    if mode == "proxy" and proxy_ports:
        lines = [
            ";; Network: proxy. Only the supervisor's proxy on localhost; names go to it",
            ";; unresolved, so no DNS. TLS trust for what the proxy tunnels.",
            "(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6))",
            *_listed("(allow network-outbound",
                     [f'    (remote ip "localhost:{int(port)}")' for port in proxy_ports]),
            *_listed("(allow mach-lookup",
                     [f"    (global-name {quoted(s)})" for s in TRUST_SERVICES]),
        ]
    elif mode == "proxy":
        lines = [";; Network: proxy, but no proxy runs for this launch: no network at all."]
    else:
        lines = [";; Network: none. No address at all; path sockets only in write grants."]
    if forward or expose:
        lines += [";; [network] forward and expose: single ports of the host's loopback.",
                  "(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6))"]
        lines += [f'(allow network-outbound (remote ip "localhost:{int(port)}"))'
                  for port in forward]
        for port in expose:
            lines += [f'(allow network-bind (local ip "localhost:{int(port)}"))',
                      f'(allow network-inbound (local ip "localhost:{int(port)}"))']
    return lines


def unix_socket_rules(params: list[str]) -> list[str]:
    """`[network] unix` present: path sockets only where named (each a parameter). After
    the files rules, whose folders carry their sockets, so that it narrows them [U: a
    path filter on network-outbound, as the files rules give it, matches only path
    sockets, never an address]."""
    lines = [";; [network] unix: no path socket but the named ones.",
             '(deny network-outbound (subpath "/"))']
    if params:
        lines += _listed("(allow network-outbound",
                         [f'    (literal (param "{name}"))' for name in params])
    return lines


def always_closed(keychains_rule: list[str]) -> list[str]:
    """Last: the Keychain, by its services and the person's keychain files. Both denies
    carry a filter, so they take part in last-match-wins and nothing before reopens
    them. (Named IPC is closed by the defaults at the top: unfiltered rules do not take
    part in the ordering, so their place in the text changes nothing.)"""
    return [
        ";; Always closed: the Keychain (a stored item reads as nothing).",
        *_listed("(deny mach-lookup",
                 [f"    (global-name {quoted(s)})" for s in KEYCHAIN_SERVICES]),
        *keychains_rule,
    ]
