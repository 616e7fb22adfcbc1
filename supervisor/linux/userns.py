"""Why bwrap could not set up its user namespace, and what to do: above all Ubuntu's
AppArmor restriction of unprivileged user namespaces.

Facts (Ubuntu 24.04's kernels; AppArmor 4's user-namespace mediation is an Ubuntu patch,
not upstream Linux; Codex#29908, Codex#17525):
- With `kernel.apparmor_restrict_unprivileged_userns = 1` (24.04's default) and AppArmor
  on, a process without CAP_SYS_ADMIN that no profile allows `userns` still makes a user
  namespace (unshare succeeds: probing unshare says yes) but holds no capability in it.
  bwrap then fails late: writing its uid map (`setting up uid map: Permission denied`),
  or with --unshare-net bringing up loopback (`loopback: Failed RTM_NEWADDR: Operation
  not permitted`), or, confined by a profile without `userns`, making the namespaces
  (`Creating new namespace failed: Permission denied`). It exits 1 before the sandbox
  exists, with no exit-code on its status fd.
- Root mode runs bwrap as a uid of its own with no capability (idmapped.py): the
  restriction covers it as it covers any user.
- The remedies that keep the restriction for every other program are AppArmor profiles:
  `bwrap-userns-restrict` lets /usr/bin/bwrap make namespaces and confines what runs in
  them (Ubuntu 25.04 ships it in /etc/apparmor.d; on 24.04 it is in apparmor-profiles'
  extra-profiles, copied and loaded by hand), or a profile allowing `userns` to the
  program itself, as Ubuntu's VS Code and Cursor packages ship for theirs. Turning the
  sysctl off reopens user namespaces to every program on the machine, which is what
  the restriction closes: it is never offered as the remedy.
- The sysctl exists only where AppArmor has Ubuntu's patch. Elsewhere the same words come
  from another refusal (another security module; a seccomp filter the starting process
  inherited) and AppArmor's remedies do not apply: the message then says only what bwrap
  said and that this is not that restriction.

The recognition is pure (`restricts`, `namespace_failure`, `explain`), tested against
bwrap's texts; `trial` runs bwrap as a launch runs it, to learn its words, since a
launch's bwrap writes them straight to the person's terminal.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from ..errors import LaunchError

SYSCTL = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
APPARMOR_ENABLED = "/sys/module/apparmor/parameters/enabled"
PROFILE = "bwrap-userns-restrict"
# The mode without namespaces (nonamespace.py) holds only the specs whose promises it can
# keep, and refuses the others: named as that, never as a sure way out. It needs no bwrap,
# so it runs where bwrap's namespace is refused, asked for with LNK_NAMESPACES=off (it is
# chosen by itself only where unshare fails, which the restriction lets succeed).
WITHOUT_NAMESPACES = ("or run without namespaces where the spec allows it: "
                      "`LNK_NAMESPACES=off lnk sandbox check --spec FILE` says what holds "
                      "and what it refuses; set LNK_NAMESPACES=off for the run")

# bwrap's own words where the kernel refused it its user namespace (bubblewrap.c), one
# line each on its stderr after "bwrap: ".
_FAILURES = re.compile(
    r"setting up [ug]id map: .*"
    r"|error writing to setgroups: .*"
    r"|(loopback: )?Failed RTM_NEWADDR.*"
    r"|Creating new namespace failed.*"
    r"|No permissions to creat(e|ing) new namespace.*")


@dataclass(frozen=True)
class Restriction:
    """The machine's AppArmor user-namespace setting, as read (None: not there)."""

    sysctl: str | None
    apparmor: str | None

    @property
    def restricting(self) -> bool:
        return restricts(self.sysctl, self.apparmor)

    def describe(self) -> str:
        """For `check`: the sysctl's state, or that there is none."""
        if self.sysctl is None:
            return "none (no kernel.apparmor_restrict_unprivileged_userns here)"
        state = "restricted" if self.restricting else "not restricted"
        off = "" if self.restricting or self.apparmor in ("Y", None) else ", AppArmor off"
        return f"{state} (kernel.apparmor_restrict_unprivileged_userns = {self.sysctl}{off})"


def restricts(sysctl: str | None, apparmor: str | None) -> bool:
    """Whether AppArmor restricts unprivileged user namespaces: the sysctl at 1, with
    AppArmor enabled (its module says Y; where the module's parameter cannot be read,
    the sysctl's presence is taken as AppArmor's, which makes it)."""
    return (sysctl or "").strip() == "1" and (apparmor or "Y").strip() == "Y"


def read_restriction() -> Restriction:
    return Restriction(_read(SYSCTL), _read(APPARMOR_ENABLED))


def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def namespace_failure(stderr: str) -> str | None:
    """bwrap's line saying the kernel refused it its user namespace, without "bwrap: "."""
    for line in stderr.splitlines():
        text = line.strip().removeprefix("bwrap: ")
        if _FAILURES.fullmatch(text):
            return text
    return None


def explain(failure: str, restriction: Restriction, *, bwrap: str,
            root_mode: bool) -> LaunchError:
    """What a person reads when bwrap's user namespace was refused: the cause, and the
    remedies that keep the restriction for every other program."""
    refused = ("refused it one" if failure.startswith(("Creating", "No permissions"))
               else "let it make one but refused it the rights to use it")
    said = f"bubblewrap could not set up the sandbox's user namespace ({failure})"
    root = ("; run by root, the sandbox's bwrap runs as a uid of its own without "
            "capabilities" if root_mode else "")
    if not restriction.restricting:
        where = ("this machine has no kernel.apparmor_restrict_unprivileged_userns"
                 if restriction.sysctl is None else
                 f"kernel.apparmor_restrict_unprivileged_userns is {restriction.sysctl}"
                 + (" but AppArmor is off" if restriction.sysctl == "1" else ""))
        return LaunchError(
            f"{said}: the kernel {refused}{root}. It is not Ubuntu's AppArmor restriction "
            f"({where}): something else refuses it, such as a container's seccomp "
            "profile, another security module or user.max_user_namespaces",
            hint="`lnk sandbox check` says what this machine offers; " + WITHOUT_NAMESPACES)
    return LaunchError(
        f"{said}: this machine restricts unprivileged user namespaces with AppArmor "
        "(kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 24.04's default), so "
        f"the kernel {refused}{root}" + (", which the restriction covers too" if root_mode
                                         else ""),
        hint=remedies(bwrap))


def remedies(bwrap: str) -> str:
    """The ways out, the restriction kept for every other program; as `check` and the
    README give them."""
    lines = [
        f"let bwrap make user namespaces by AppArmor's profile for it ({PROFILE}), which "
        "keeps the restriction for every other program:",
        "  Ubuntu 25.04 and later ship it; if it is not loaded: "
        f"sudo apparmor_parser -r /etc/apparmor.d/{PROFILE}",
        "  Ubuntu 24.04: sudo apt install apparmor-profiles apparmor-utils",
        f"    sudo cp /usr/share/apparmor/extra-profiles/{PROFILE} /etc/apparmor.d/",
        f"    sudo apparmor_parser -r /etc/apparmor.d/{PROFILE}",
    ]
    if bwrap != "/usr/bin/bwrap":
        # A profile for the program itself, as VS Code's and Cursor's packages ship for
        # theirs: `userns` allowed, nothing else confined (the sandbox's own filter and
        # --disable-userns keep what runs inside from making namespaces).
        lines += [
            f"  that profile is for /usr/bin/bwrap; this bwrap is {bwrap}: give it one of "
            "its own:",
            "    printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile lnk-bwrap "
            f"{bwrap} flags=(unconfined) {{\\n  userns,\\n}}\\n' "
            "| sudo tee /etc/apparmor.d/lnk-bwrap",
            "    sudo apparmor_parser -r /etc/apparmor.d/lnk-bwrap",
        ]
    lines += [WITHOUT_NAMESPACES,
              "turning kernel.apparmor_restrict_unprivileged_userns off is not needed: it "
              "would reopen user namespaces to every program on the machine"]
    return "\n    ".join(lines)


def trial_argv(bwrap: str, *, root_mode: bool, share_net: bool) -> list[str]:
    """bwrap with a launch's namespaces and credentials and nothing else to do but run
    `true`: it fails where the launch's failed, if its namespace was the cause."""
    args = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not share_net:
        args.append("--unshare-net")
    args += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--", "true"]
    if root_mode:
        from .idmapped import SANDBOX_GID, SANDBOX_UID
        from .launch import _setpriv

        args[1:1] = ["--uid", "0", "--gid", "0"]
        args = [_setpriv(), f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}",
                "--clear-groups", "--", *args]
    return args


def trial(bwrap: str, *, root_mode: bool, share_net: bool) -> str | None:
    """Run bwrap as a launch does; its line saying its namespace was refused, if any."""
    try:
        done = subprocess.run(trial_argv(bwrap, root_mode=root_mode, share_net=share_net),
                              capture_output=True, text=True, timeout=20, check=False,
                              env={"PATH": "/usr/bin:/bin"}, cwd="/")
    except (OSError, subprocess.TimeoutExpired, LaunchError):
        return None
    return None if done.returncode == 0 else namespace_failure(done.stderr)


def diagnose(bwrap: str, *, root_mode: bool, share_net: bool) -> LaunchError | None:
    """After bwrap failed to set up a sandbox: the explanation, when its namespace was
    the cause."""
    failure = trial(bwrap, root_mode=root_mode, share_net=share_net)
    if failure is None:
        return None
    return explain(failure, read_restriction(), bwrap=bwrap, root_mode=root_mode)
