"""What every macOS sandbox is given, and what none is: the fixed part of a profile.

Facts (read from Codex's, Chromium's and sandbox-runtime's profiles and Apple's Security
sources, as collected in the project's Seatbelt reference; none was run on a Mac here,
and [U] marks what no source confirmed):
- Under `(deny default)` a process needs, besides its files: `process-fork`, signals and
  process information within its own sandbox, a few sysctls (CPU and OS facts), the
  directory service's Mach name (getpwuid), and the devices a shell touches.
- A Mach lookup of securityd's or secd's services hands out the Keychain's items whatever
  the file rules say (nono: "blanket mach-lookup can permit Keychain retrieval via Mach
  IPC, bypassing file-level deny rules"), so none is ever allowed, and the denies at the
  end of every profile name them so a later edit that allows Mach lookups broadly cannot
  open them by accident.
- cfprefsd's per-user agent serves any domain of the person's preferences, whatever the
  file rules say; only the system daemon's domains are allowed, which are readable files
  under /Library anyway [U: what a CLI tool loses without the agent].
- TLS trust is evaluated by trustd, outside the sandbox; it hands out no secret. DNS
  goes through mDNSResponder's socket and configd. Both are allowed only with a network.
- /etc, /tmp and /var are links into /private; Seatbelt matches resolved paths, so the
  profile names /private/... and lets the links themselves be read (metadata).
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
# kern.proc.pid.N is a process's kinfo_proc (name, ids, flags), never its arguments or
# environment (kern.procargs2, which stays closed: it shows other processes' secrets).
SYSCTL_PREFIXES = ("hw.", "machdep.cpu.", "kern.proc.pid.")

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

_PLAIN = re.compile(r"^[A-Za-z0-9_./-]+$")


def quoted(text: str) -> str:
    """A constant of this module as an SBPL string. Only plain constants are written into
    a profile's text (every path from a spec or the machine is a parameter), so nothing
    here needs escaping; anything else is a programming error."""
    if not _PLAIN.match(text):
        raise ValueError(f"not a plain constant: {text!r}")
    return f'"{text}"'


def fixed_rules() -> list[str]:
    """The process's own needs, written once for every profile."""
    lines = [
        ";; The process itself: its children, its own signals and information.",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow process-info* (target same-sandbox))",
        "(allow sysctl-read",
        *[f"    (sysctl-name {quoted(n)})" for n in SYSCTL_NAMES],
        *[f"    (sysctl-name-prefix {quoted(p)})" for p in SYSCTL_PREFIXES[:-1]],
        f"    (sysctl-name-prefix {quoted(SYSCTL_PREFIXES[-1])}))",
        "(allow mach-lookup",
        *[f"    (global-name {quoted(s)})" for s in MACH_SERVICES[:-1]],
        f"    (global-name {quoted(MACH_SERVICES[-1])}))",
        "(allow system-socket (socket-domain AF_UNIX))",
        "(allow pseudo-tty)",
    ]
    return lines


def system_file_rules(*, run: bool, report: bool) -> list[str]:
    """System folders and devices. `run`: without a program list, what the system holds
    may run (`report`: each run reported to the log, for learn)."""
    ops = "file-read* file-test-existence file-map-executable"
    folders = [f"    (subpath {quoted(f)})" for f in SYSTEM_FOLDERS]
    folders[-1] += ")"
    programs: list[str] = []
    if run:
        programs = ["(allow process-exec*", *folders[:-1],
                    folders[-1][:-1] + (" (with report))" if report else ")")]
    return [
        ";; System folders: read, and their libraries mapped (DESIGN: system folders are",
        ";; always readable). Devices a shell needs; the terminal it was given.",
        f"(allow {ops}",
        *folders,
        *programs,
        '(allow file-read* file-test-existence (literal "/"))',
        "(allow file-read-metadata file-test-existence",
        *[f"    (literal {quoted(link)})" for link in ROOT_LINKS[:-1]],
        f"    (literal {quoted(ROOT_LINKS[-1])}))",
        '(allow file-read-metadata (subpath "/dev"))',
        '(allow file-read* file-write-data (literal "/dev/null") (literal "/dev/zero"))',
        '(allow file-read* (literal "/dev/random") (literal "/dev/urandom"))',
        '(allow file-read-data file-write-data (subpath "/dev/fd"))',
        '(allow file-read* file-write-data file-ioctl (literal "/dev/dtracehelper"))',
        "(allow file-read* file-write-data file-ioctl",
        '    (literal "/dev/tty") (literal "/dev/ptmx") (regex #"^/dev/ttys[0-9]+$"))',
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
            ";; Network: host. Any address; DNS through mDNSResponder; TLS trust.",
            "(allow system-socket)",
            '(allow network-outbound (remote ip "*:*"))',
            '(allow network-inbound (local ip "*:*"))',
            '(allow network-bind (local ip "*:*"))',
            f"(allow network-outbound (literal {quoted(MDNSRESPONDER)}))",
            "(allow mach-lookup",
            *[f"    (global-name {quoted(s)})" for s in (*DNS_SERVICES, *TRUST_SERVICES)[:-1]],
            f"    (global-name {quoted(TRUST_SERVICES[-1])}))",
            '(allow sysctl-read (sysctl-name-prefix "net.routetable"))',
        ]
    lines: list[str] = []
    if mode == "proxy" and proxy_ports:
        ports = [f'    (remote ip "localhost:{int(port)}")' for port in proxy_ports]
        ports[-1] += ")"
        lines = [
            ";; Network: proxy. Only the supervisor's proxy on localhost; names go to it",
            ";; unresolved, so no DNS. TLS trust for what the proxy tunnels.",
            "(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6))",
            "(allow network-outbound",
            *ports,
            "(allow mach-lookup",
            *[f"    (global-name {quoted(s)})" for s in TRUST_SERVICES[:-1]],
            f"    (global-name {quoted(TRUST_SERVICES[-1])}))",
        ]
    elif mode == "proxy":
        lines = [";; Network: proxy, but no proxy runs for this launch: no network at all."]
    else:
        lines = [";; Network: none. No address at all; path sockets only where files rules "
                 "reach."]
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
        lines += ["(allow network-outbound",
                  *[f'    (literal (param "{name}"))' for name in params]]
        lines[-1] += ")"
    return lines


def always_closed(keychains_param: str, *, exec_ops: bool) -> list[str]:
    """Last, so that nothing before can reopen them: the Keychain (its services and the
    person's keychain files) and POSIX named IPC, whose names are host-wide."""
    ops = ("file-read* file-test-existence file-map-executable network-outbound file-write* "
           "network-bind")
    if exec_ops:
        ops += " process-exec*"
    names = [f"    (global-name {quoted(s)})" for s in KEYCHAIN_SERVICES]
    names[-1] += ")"
    return [
        ";; Always closed: the Keychain (a stored item reads as nothing) and named IPC",
        ";; (POSIX shared memory and semaphores have host-wide names, not paths).",
        "(deny mach-lookup",
        *names,
        f"(deny {ops}",
        f'    (subpath (param "{keychains_param}")))  ; ~/{KEYCHAINS}',
        "(deny ipc-posix-shm)",
        "(deny ipc-posix-sem)",
    ]
