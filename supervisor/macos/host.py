"""What a launch finds on this Mac, outside the sandbox, before the profile is compiled.

The profile compiler is pure; these are the facts of the machine and the moment it is
given (profile.MacHost): the command's terminal, macOS's own hides, what listed stubs
run, the developer folder, whether this process is sandboxed already, and the boot
(start checks are kept per boot, passes only).

Facts (docs/macos.md has the sources; [U] what tools/macos_probe.py settles):
- A TCC-protected store (Mail, Messages, Safari, browsers' profiles and tokens under
  ~/Library) is read by the sandbox with the rights of the app that started it: TCC
  asks of the responsible process, the terminal. So on macOS ~/Library is hidden unless
  the spec names a path there, as the credentials are on both OSes. Container engines
  keep their sockets and their VMs' SSH keys under ~/.colima, ~/.orbstack, ~/.rd,
  ~/.lima, ~/.local/share/containers; Homebrew keeps services' data in var and tokens in
  etc/homebrew/brew.env.
- `sandbox_check(getpid(), NULL, 0)` says whether this process is sandboxed (Chromium's
  Seatbelt::IsSandboxed). Sandboxes do not nest: sandbox-exec run from inside one fails
  with `sandbox_apply: Operation not permitted`, exit 71 [U: the call's answer under
  another agent's sandbox].
- `kern.bootsessionuuid` names this boot.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping

from inner.syscalls import libc

from ..grants import Snapshot
from .profile import MacHost
from .programs import Toolchain, companions

ENGINES = "macOS default hide: a container engine's sockets and its VMs' keys"
HOME_HIDES = (
    ("Library", "macOS default hide: what applications keep (mail, messages, browser "
                "profiles, app tokens), read with the terminal's TCC rights"),
    (".colima", ENGINES),
    (".orbstack", ENGINES),
    (".rd", ENGINES),
    (".lima", ENGINES),
    (".local/share/containers", ENGINES),
)
HOMEBREW_HIDES = (
    ("/opt/homebrew/var", "macOS default hide: Homebrew services' data"),
    ("/opt/homebrew/etc/homebrew", "macOS default hide: Homebrew's settings (brew.env)"),
    ("/usr/local/var", "macOS default hide: Homebrew services' data"),
    ("/usr/local/etc/homebrew", "macOS default hide: Homebrew's settings (brew.env)"),
)


def macos_hides(home: str) -> tuple[tuple[str, str], ...]:
    """macOS's own hides, resolved: (path, reason). Missing ones too: one made during
    the run is hidden as well."""
    found = [(os.path.realpath(os.path.join(home, name)), why) for name, why in HOME_HIDES]
    found += [(os.path.realpath(path), why) for path, why in HOMEBREW_HIDES]
    return tuple(found)


def terminals() -> tuple[str, ...]:
    """The terminals on stdin, stdout and stderr, resolved, each once."""
    found: list[str] = []
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                path = os.path.realpath(os.ttyname(fd))
                if path not in found:
                    found.append(path)
        except OSError:
            continue
    return tuple(found)


def mac_host(snapshot: Snapshot, *, temp: str | None, env: Mapping[str, str],
             toolchain: Toolchain, with_terminals: bool = True) -> MacHost:
    """The facts of this launch, for the profile (the proxy's ports are not here: proxy
    mode has no proxy on macOS yet)."""
    home = os.path.realpath(snapshot.home)
    found = companions(snapshot.programs or (), toolchain, env)
    return MacHost(home=home, temp=temp, terminals=terminals() if with_terminals else (),
                   hides=macos_hides(home), companions=found,
                   developer_dir=toolchain.developer_dir(env))


def sandboxed() -> bool:
    """Whether this process runs inside a Seatbelt sandbox already (False off a Mac)."""
    if sys.platform != "darwin":
        return False
    check = libc().sandbox_check
    check.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    check.restype = ctypes.c_int
    return int(check(os.getpid(), None, 0)) > 0


def boot_session() -> str:
    """This boot's id on a Mac ("unknown" where it cannot be read)."""
    if sys.platform != "darwin":
        return "unknown"
    size = ctypes.c_size_t(64)
    buffer = ctypes.create_string_buffer(size.value)
    if libc().sysctlbyname(b"kern.bootsessionuuid", buffer, ctypes.byref(size), None, 0):
        return "unknown"
    return buffer.value.decode("ascii", "replace") or "unknown"
