"""The readiness probe: sandbox-exec run once with this launch's own profile, before the
command, on /usr/bin/true.

What it settles, before anything of the person's runs:
- the profile is one this macOS accepts (an operation it does not know, a string too
  long), and sandbox-exec can apply it here: inside another sandbox it cannot (they do
  not nest: `sandbox_apply: Operation not permitted`, exit 71). Either failure is
  lnk-sandbox's own (125, the reason said), never passed off as the command's status;
- with `report`, that `log stream` is attached: the probe's exec is allowed `(with
  report)`, and the run waits for that report (rookery's canary; the stream's banner is
  no proof).

The probe gets the same environment as the command (the stand-in sandbox-exec of the
tests reads its folder from it). Its profile is the launch's, plus one last rule: it
carries a filter, so it is the last match for /usr/bin/true and for nothing else.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..errors import LaunchError
from .profile import Profile, sandbox_exec_argv

PROBE_PROGRAM = "/usr/bin/true"
NESTED_STATUS = 71
_MAX_ERRORS = 8192


def probe_profile(profile: Profile, *, report: bool) -> Profile:
    """The launch's profile with /usr/bin/true allowed to run last (reported: `report`)."""
    modifier = " (with report)" if report else ""
    rule = (";; lnk-sandbox's readiness probe: this profile, and /usr/bin/true may run.\n"
            f'(allow process-exec* (literal "{PROBE_PROGRAM}"){modifier})\n')
    return replace(profile, text=profile.text + rule)


@dataclass(frozen=True)
class ProbeResult:
    """How the probe ended: its pid, its exit status, what sandbox-exec said."""

    pid: int
    status: int
    errors: str

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def nested(self) -> bool:
        return "sandbox_apply" in self.errors

    def problem(self, sandbox_exec: str) -> LaunchError:
        said = " ".join(self.errors.split())[-600:] or "nothing"
        if self.nested:
            return LaunchError(
                "lnk-sandbox runs inside a Seatbelt sandbox already, and sandboxes do not "
                f"nest: {sandbox_exec} cannot apply a profile here ({said})",
                hint="run lnk-sandbox outside the other sandbox (an agent that sandboxes "
                "its own commands must run this one unsandboxed: lnk-sandbox is the "
                "sandbox)")
        return LaunchError(
            f"{sandbox_exec} refused this launch's profile (exit {self.status}): {said}",
            hint="nothing of yours ran; please report this with the output of "
            "`lnk sandbox plan --os macos -- COMMAND` and of tools/macos_probe.py")


def start_probe(sandbox_exec: str, profile: Profile, env: Mapping[str, str], *,
                report: bool) -> subprocess.Popen[bytes]:
    """Start the probe; OSError when sandbox-exec cannot be started."""
    argv = sandbox_exec_argv(probe_profile(profile, report=report), [PROBE_PROGRAM],
                             sandbox_exec=sandbox_exec)
    return subprocess.Popen(argv, env=dict(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            close_fds=True)


def finish_probe(probe: subprocess.Popen[bytes], timeout: float) -> ProbeResult:
    """Wait for the probe (killed after `timeout`) and say how it ended."""
    try:
        _, errors = probe.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        probe.kill()
        _, errors = probe.communicate()
        errors += b"\n(the probe did not end in time and was killed)"
    return ProbeResult(probe.pid, probe.returncode,
                       errors[-_MAX_ERRORS:].decode("utf-8", "replace"))


def run_probe(sandbox_exec: str, profile: Profile, env: Mapping[str, str], *,
              report: bool = False, timeout: float = 20.0) -> ProbeResult:
    """Run the probe to its end. LaunchError when sandbox-exec cannot be started."""
    try:
        probe = start_probe(sandbox_exec, profile, env, report=report)
    except OSError as err:
        raise LaunchError(f"cannot start {sandbox_exec}: {err.strerror}", errno=err.errno,
                          hint="sandbox-exec ships with macOS at /usr/bin/sandbox-exec"
                          ) from None
    return finish_probe(probe, timeout)


def digest(profile: Profile) -> str:
    """What a passed probe is kept under for the boot: the profile's text (its
    parameters are paths, which sandbox-exec takes as they come)."""
    from ..digests import sha256

    return sha256(profile.text.encode()).hexdigest()[:32]
